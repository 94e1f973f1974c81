/* SPDX-License-Identifier: Apache-2.0 */
/* pmem_cl.c: partition-local memory for vGPU clients (issue 12;
 * docs/readme-placement.md). The daemon checks and charges; the device work
 * (allocation, parity probes, scattered copies, placement check) is
 * serve/pmem_srv.c on the client's executor (isolation = process / mps) or on
 * the daemon's own device (none), i.e. src/place/pmem.c either way.
 *
 * The chart is the device's `chip = FILE` (gpuos probe numa --json writes one
 * with the hash); a device without one refuses with GOS_EUNSUPPORTED. An
 * allocation is charged to the vGPU's memory share (both views and the parity
 * table's 2 MB page); it is listed with the client's allocations (so copies,
 * built-in kernels' range checks and the accounting at the session's end and at
 * an executor's loss treat it like one) but gpuos_mem_free refuses it. Not
 * swappable: a device with swap refuses it.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/region.h"
#include "serve/pmem_cl.h"
#include "serve/vgpu.h"
#include "serve/executor.h"

#include "common/status.h"
#include "exec/exec_pmem.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Under isolation = none every client's partition-local work runs on the
 * daemon's one device from the client's own thread, with the daemon's lock
 * dropped: the device layer's placement state (allocations being charted,
 * latency probes) is not for two threads at once, so they take turns here.
 * Taken after s->lock where both are held, never the other way round. */
static pthread_mutex_t none_lock = PTHREAD_MUTEX_INITIALIZER;
static void none_turn(int take) { take ? pthread_mutex_lock(&none_lock) : pthread_mutex_unlock(&none_lock); }

static int dev_index(struct srv_client *c) { return c->srv->vgpus[c->vgpu].cfg.device; }

static struct srv_alloc *find_pmem(struct srv_client *c, uint64_t base)
{
    for (int i = 0; i < c->n_allocs; i++)
        if (c->allocs[i].pmem && c->allocs[i].dptr == base)
            return &c->allocs[i];
    gos_fail(GOS_EINVAL, "0x%llx is not a partition-local allocation of this client", (unsigned long long)base);
    return NULL;
}

int srv_pmem_do_alloc(struct srv_client *c, const struct gos_msg_pmem_alloc *m, struct gos_rep_pmem_alloc *r)
{
    struct srv *s = c->srv;
    struct srv_vgpu *v = &s->vgpus[c->vgpu];
    int di = dev_index(c);
    struct srv_dev *d = &s->devs[di];
    const struct gos_serve_devcfg *dc = &s->cfg.devs[di];
    if (!dc->chip[0])
        return gos_fail(GOS_EUNSUPPORTED, "device %s has no chart: partition-local memory needs `chip = FILE` "
                                          "in its [device] section (`gpuos probe numa --json FILE` writes it)",
                        dc->label);
    if (d->sw)
        return gos_fail(GOS_EUNSUPPORTED, "device %s swaps (swap = ...): partition-local memory is not "
                                          "swappable there", dc->label);
    int n = 0;
    for (int i = 0; i < c->n_allocs; i++)
        n += c->allocs[i].pmem;
    if (n >= GOS_PMEM_MAX)
        return gos_fail(GOS_ELIMIT, "a client may hold %d partition-local allocations", GOS_PMEM_MAX);
    if (c->n_allocs >= s->cfg.max_allocations)
        return gos_fail(GOS_ELIMIT, "client has %d allocations, the maximum (max_allocations)", c->n_allocs);
    uint64_t est = srv_pmem_charge_max(m->bytes);
    if (v->mem_used >= v->mem_quota || est > v->mem_quota - v->mem_used)
        return gos_fail(GOS_EBUSY, "vGPU %s: partition-local memory of %llu bytes per view takes up to %llu "
                                   "bytes and would exceed its memory share (%llu of %llu bytes used)",
                        v->cfg.name, (unsigned long long)m->bytes, (unsigned long long)est,
                        (unsigned long long)v->mem_used, (unsigned long long)v->mem_quota);
    if (srv_alloc_room(c))
        return GOS_ENOMEM;
    if (!c->x && !c->pmem_set && !(c->pmem_set = calloc(1, sizeof *c->pmem_set)))
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    v->mem_used += est; /* reserved while the lock is dropped */
    struct x_pmem_alloc xa = {.bytes = m->bytes};
    snprintf(xa.chart, sizeof xa.chart, "%s", dc->chip);
    struct srv_exec *x = c->x;
    pthread_mutex_unlock(&s->lock);
    int rc;
    if (x) {
        rc = srv_exec_call(x, X_PMEM_ALLOC, &xa, sizeof xa, -1, r, sizeof *r);
    } else {
        none_turn(1);
        rc = srv_pmem_alloc(d->dev, c->pmem_set, s->chips[di], m->bytes, r);
        none_turn(0);
    }
    pthread_mutex_lock(&s->lock);
    v->mem_used -= est;
    if (rc)
        return rc;
    if (c->x && c->x->dead) /* lost meanwhile: its memory went with it */
        return gos_fail(GOS_EDEVICE, "vGPU %s: this client's executor is gone (%s)", v->cfg.name, c->x->why);
    v->mem_used += r->charged;
    c->allocs[c->n_allocs++] = (struct srv_alloc){.dptr = r->base, .bytes = r->bytes, .pmem = 1,
                                                  .extra = r->charged - r->bytes};
    return GOS_OK;
}

int srv_pmem_do_free(struct srv_client *c, uint64_t base)
{
    struct srv_alloc *a = find_pmem(c, base);
    if (!a)
        return GOS_EINVAL;
    int rc;
    if (c->x) {
        rc = srv_exec_call(c->x, X_PMEM_FREE, &base, 8, -1, NULL, 0);
    } else {
        none_turn(1);
        rc = srv_pmem_free(c->pmem_set, base);
        none_turn(0);
    }
    c->srv->vgpus[c->vgpu].mem_used -= a->bytes + a->extra;
    *a = c->allocs[--c->n_allocs];
    return rc;
}

int srv_pmem_do_copy(struct srv_client *c, const struct gos_msg_pmem_copy *m)
{
    struct srv_alloc *a = find_pmem(c, m->base);
    if (!a)
        return GOS_EINVAL;
    struct srv_region *g = srv_region_find(c, m->region, m->region_off, m->bytes);
    if (!g)
        return GOS_EINVAL;
    struct srv *s = c->srv;
    struct srv_exec *x = c->x;
    void *host = (char *)g->ptr + m->region_off;
    g->refs++; /* in use while the lock is dropped */
    pthread_mutex_unlock(&s->lock);
    int rc;
    if (x) {
        rc = srv_exec_call(x, X_PMEM_COPY, m, sizeof *m, -1, NULL, 0);
    } else {
        none_turn(1);
        rc = srv_pmem_copy(c->pmem_set, m, host);
        none_turn(0);
    }
    pthread_mutex_lock(&s->lock);
    g->refs--;
    return rc;
}

int srv_pmem_do_check(struct srv_client *c, const struct gos_msg_pmem_check *m, struct gos_rep_pmem_check *r)
{
    if (!find_pmem(c, m->base))
        return GOS_EINVAL;
    struct srv *s = c->srv;
    struct srv_exec *x = c->x;
    pthread_mutex_unlock(&s->lock);
    int rc;
    if (x) {
        rc = srv_exec_call(x, X_PMEM_CHECK, m, sizeof *m, -1, r, sizeof *r);
    } else {
        none_turn(1);
        rc = srv_pmem_check(c->pmem_set, m, r);
        none_turn(0);
    }
    pthread_mutex_lock(&s->lock);
    return rc;
}

void srv_pmem_client_gone(struct srv_client *c)
{
    if (!c->pmem_set)
        return;
    none_turn(1);
    srv_pmem_release_all(c->pmem_set);
    none_turn(0);
    free(c->pmem_set);
    c->pmem_set = NULL;
}

/* Its messages (client.c's msg_table): FREE, COPY and CHECK rows drain the
 * client's work first; an executor found dead by the request is accounted
 * for at once (MF_EXEC_LOSS). */
int srv_msg_pmem_alloc(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_pmem_alloc r = {0};
    int rc = srv_pmem_do_alloc(c, p, &r);
    return srv_answer(c, h, rc, &r, sizeof r);
}

int srv_msg_pmem_free(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    return srv_answer(c, h, srv_pmem_do_free(c, ((const struct gos_msg_pmem_free *)p)->base), NULL, 0);
}

int srv_msg_pmem_copy(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    return srv_answer(c, h, srv_pmem_do_copy(c, p), NULL, 0);
}

int srv_msg_pmem_check(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_pmem_check r = {0};
    int rc = srv_pmem_do_check(c, p, &r);
    return srv_answer(c, h, rc, &r, sizeof r);
}
