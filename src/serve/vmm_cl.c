/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_cl.c: CUDA's virtual memory management for vGPU clients (cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess; proto.h GOS_MSG_VMM_*;
 * docs/readme-cudashim.md). The daemon checks and charges; the device work is
 * exec/exec_vmm.c on the client's executor (isolation = process / mps) or on
 * the daemon's own device (none), the same code either way.
 *
 * c->vmm is the daemon's record of what the client holds, by the daemon's
 * handles (unique across clients, never reused): every handle and range a
 * request names must be in it, so a tenant can neither map another's memory
 * nor unmap or free another's addresses, whatever numbers it sends. Physical
 * memory is charged to the vGPU's memory share from CREATE until it is both
 * released and unmapped. Mapped memory with access is listed in c->allocs as
 * runs of adjacent mappings (so a copy across two handles mapped side by side
 * passes, as on a GPU), for copies, built-in kernels' range checks and the
 * ring's (the executor keeps the same runs); MEM_FREE refuses them. A client
 * that goes, or whose executor dies, gives everything back.
 * Not on a device that swaps (its memory could not be evicted).
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/vmm_cl.h"
#include "serve/vgpu.h"
#include "common/log.h"
#include "serve/executor.h"

#include "common/status.h"
#include "exec/exec_vmm.h"

#include <stdio.h>
#include <stdlib.h>

#define ULL(x) ((unsigned long long)(x))

static struct srv_dev *dev_of(struct srv_client *c) { return &c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device]; }

/* Operation op on the client's device, the daemon's lock dropped meanwhile:
 * its executor, or the daemon's device with the client's table there (made at
 * first use). GOS_EDEVICE when the executor was lost meanwhile: what it held
 * went with it, and c->vmm was emptied (srv_client_exec_check). */
static int on_device(struct srv_client *c, uint32_t op, const struct x_vmm *m, uint64_t *out)
{
    struct srv *s = c->srv;
    struct srv_exec *x = c->x;
    gos_device *dev = dev_of(c)->dev;
    if (!x && !c->vmm_dev && !(c->vmm_dev = calloc(1, sizeof *c->vmm_dev)))
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    gos_vmm_tab *t = c->vmm_dev;
    *out = 0;
    pthread_mutex_unlock(&s->lock);
    int rc = x ? srv_exec_call(x, op, m, sizeof *m, -1, out, 8) : gos_vmmx_op(dev, t, op, m, out);
    pthread_mutex_lock(&s->lock);
    if (!rc && c->x && (c->x->dead || c->exec_lost))
        rc = gos_fail(GOS_EDEVICE, "vGPU %s: this client's executor is gone (%s)", s->vgpus[c->vgpu].cfg.name,
                      c->x->why);
    return rc;
}

/* Takes back what on_device did when the daemon cannot record it (out of host
 * memory): best effort, the client's end releases the rest. */
static void undo(struct srv_client *c, uint32_t op, const struct x_vmm *m)
{
    uint64_t out;
    on_device(c, op, m, &out);
}

static void drop_runs(struct srv_client *c)
{
    for (int i = 0; i < c->n_allocs;)
        if (c->allocs[i].vmm)
            c->allocs[i] = c->allocs[--c->n_allocs];
        else
            i++;
}

static int add_run(void *ctx, uint64_t va, uint64_t bytes, int ro)
{
    struct srv_client *c = ctx;
    if (srv_alloc_room(c))
        return GOS_ENOMEM;
    c->allocs[c->n_allocs++] = (struct srv_alloc){.dptr = va, .bytes = bytes, .vmm = 1, .ro = ro};
    return GOS_OK;
}

/* The reachable mappings in c->allocs again. Out of host memory, some stay
 * unlisted (copies to them are refused; nothing is reached wrongly). */
static void sync_runs(struct srv_client *c)
{
    drop_runs(c);
    if (gos_vmmtab_runs(&c->vmm, add_run, c))
        gos_log(LOG_WARNING, "client %u: VMM mappings not all reachable: %s", c->id, gos_last_error());
}

int srv_vmm_reserve(struct srv_client *c, const struct gos_msg_vmm_reserve *m, struct gos_rep_vmm *r)
{
    if (c->vmm.n_r >= GOS_VMM_MAX_RESERVATIONS)
        return gos_fail(GOS_ELIMIT, "client has %d address reservations, the maximum", c->vmm.n_r);
    struct x_vmm xm = {.bytes = m->bytes, .align = m->align};
    uint64_t va;
    int rc = on_device(c, X_VMM_RESERVE, &xm, &va);
    if (rc)
        return rc;
    if ((rc = gos_vmmtab_resv_add(&c->vmm, va, m->bytes, va, m->bytes))) {
        xm.va = va;
        undo(c, X_VMM_UNRESERVE, &xm);
        return rc;
    }
    r->value = va;
    return GOS_OK;
}

int srv_vmm_unreserve(struct srv_client *c, const struct gos_msg_vmm_range *m)
{
    if (gos_vmmtab_resv_find(&c->vmm, m->va, m->bytes) < 0)
        return GOS_EINVAL;
    struct x_vmm xm = {.va = m->va, .bytes = m->bytes};
    uint64_t out;
    int rc = on_device(c, X_VMM_UNRESERVE, &xm, &out), i;
    if (!rc && (i = gos_vmmtab_resv_find(&c->vmm, m->va, m->bytes)) >= 0)
        gos_vmmtab_resv_del(&c->vmm, i);
    return rc;
}

int srv_vmm_create(struct srv_client *c, const struct gos_msg_vmm_create *m, struct gos_rep_vmm *r)
{
    struct srv *s = c->srv;
    struct srv_vgpu *v = &s->vgpus[c->vgpu];
    if (dev_of(c)->sw)
        return gos_fail(GOS_EUNSUPPORTED, "device %s swaps (swap = ...): VMM memory is not swappable there",
                        s->cfg.devs[v->cfg.device].label);
    if (c->n_allocs + c->vmm.n_h >= s->cfg.max_allocations)
        return gos_fail(GOS_ELIMIT, "client has %d allocations and VMM handles, the maximum (max_allocations)",
                        c->n_allocs + c->vmm.n_h);
    char what[64];
    snprintf(what, sizeof what, "a VMM allocation of %llu bytes", ULL(m->bytes));
    int rc = srv_share_room(c, m->bytes, what);
    if (rc)
        return rc;
    struct x_vmm xm = {.bytes = m->bytes};
    uint64_t dev_h;
    v->mem_used += m->bytes; /* reserved while the lock is dropped */
    rc = on_device(c, X_VMM_CREATE, &xm, &dev_h);
    v->mem_used -= m->bytes;
    if (rc)
        return rc;
    uint64_t id = ++s->next_vmm_handle;
    if ((rc = gos_vmmtab_handle_add(&c->vmm, id, dev_h, m->bytes))) {
        xm.handle = dev_h;
        undo(c, X_VMM_RELEASE, &xm);
        return rc;
    }
    v->mem_used += m->bytes;
    r->value = id;
    return GOS_OK;
}

/* Returns freed bytes (memory that is now gone) to the vGPU's share. */
static void uncharge(struct srv_client *c, uint64_t freed)
{
    struct srv_vgpu *v = &c->srv->vgpus[c->vgpu];
    v->mem_used -= freed < v->mem_used ? freed : v->mem_used;
}

int srv_vmm_release(struct srv_client *c, const struct gos_msg_vmm_release *m)
{
    gos_vmmt_handle *h = gos_vmmtab_live(&c->vmm, m->handle);
    if (!h)
        return GOS_EINVAL;
    struct x_vmm xm = {.handle = h->dev_h};
    uint64_t out, freed = 0;
    int rc = on_device(c, X_VMM_RELEASE, &xm, &out);
    if (!rc && !gos_vmmtab_release(&c->vmm, m->handle, &freed))
        uncharge(c, freed);
    return rc;
}

int srv_vmm_map(struct srv_client *c, const struct gos_msg_vmm_map *m)
{
    if (c->vmm.n_m >= c->srv->cfg.max_allocations)
        return gos_fail(GOS_ELIMIT, "client has %d VMM mappings, the maximum (max_allocations)", c->vmm.n_m);
    int rc = gos_vmmtab_check_map(&c->vmm, m->va, m->bytes, m->handle);
    if (rc)
        return rc;
    struct x_vmm xm = {.va = m->va, .bytes = m->bytes, .handle = gos_vmmtab_live(&c->vmm, m->handle)->dev_h};
    uint64_t out;
    if ((rc = on_device(c, X_VMM_MAP, &xm, &out)))
        return rc;
    if ((rc = gos_vmmtab_map_add(&c->vmm, m->va, m->bytes, m->handle)))
        undo(c, X_VMM_UNMAP, &xm);
    return rc; /* not reachable before its access is set, as in CUDA */
}

int srv_vmm_unmap(struct srv_client *c, const struct gos_msg_vmm_range *m)
{
    int rc = gos_vmmtab_cover(&c->vmm, m->va, m->bytes);
    if (rc)
        return rc;
    struct x_vmm xm = {.va = m->va, .bytes = m->bytes};
    uint64_t out, freed;
    if ((rc = on_device(c, X_VMM_UNMAP, &xm, &out))) {
        /* the device may have unmapped part of it: nothing of it is reached
         * any more (kept in the record, the client's end releases it) */
        gos_vmmtab_access(&c->vmm, m->va, m->bytes, GOS_VMM_ACCESS_NONE);
        sync_runs(c);
        return rc;
    }
    for (uint64_t at = m->va, end = m->va + m->bytes; at < end;) {
        int i = gos_vmmtab_map_at(&c->vmm, at);
        if (i < 0)
            break;
        at += c->vmm.m[i].bytes;
        gos_vmmtab_map_del(&c->vmm, i, &freed);
        uncharge(c, freed);
    }
    sync_runs(c);
    return GOS_OK;
}

int srv_vmm_access(struct srv_client *c, const struct gos_msg_vmm_access *m)
{
    int rc = gos_vmmtab_cover(&c->vmm, m->va, m->bytes);
    if (rc)
        return rc;
    struct x_vmm xm = {.va = m->va, .bytes = m->bytes, .access = m->access};
    uint64_t out;
    if ((rc = on_device(c, X_VMM_ACCESS, &xm, &out)))
        return rc;
    gos_vmmtab_access(&c->vmm, m->va, m->bytes, (int)m->access);
    sync_runs(c);
    return GOS_OK;
}

void srv_vmm_client_gone(struct srv_client *c)
{
    if (c->vgpu < 0)
        return;
    uncharge(c, gos_vmmtab_bytes(&c->vmm));
    drop_runs(c);
    gos_vmmtab_free(&c->vmm);
    if (c->vmm_dev) { /* isolation = none: the daemon's device holds it */
        gos_vmmx_release_all(dev_of(c)->dev, c->vmm_dev);
        free(c->vmm_dev);
        c->vmm_dev = NULL;
    }
}

/* Its messages (client.c's msg_table: every VMM_* row). An unmap or an
 * access change waits for the client's queued work, which may still use the
 * range (their rows drain it first); an executor found dead by the request
 * is accounted for at once (MF_EXEC_LOSS). */
int srv_msg_vmm(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_vmm r = {0};
    int rc;
    switch (h->type) {
    case GOS_MSG_VMM_RESERVE: rc = srv_vmm_reserve(c, p, &r); break;
    case GOS_MSG_VMM_UNRESERVE: rc = srv_vmm_unreserve(c, p); break;
    case GOS_MSG_VMM_CREATE: rc = srv_vmm_create(c, p, &r); break;
    case GOS_MSG_VMM_RELEASE: rc = srv_vmm_release(c, p); break;
    case GOS_MSG_VMM_MAP: rc = srv_vmm_map(c, p); break;
    default: rc = h->type == GOS_MSG_VMM_UNMAP ? srv_vmm_unmap(c, p) : srv_vmm_access(c, p);
    }
    return srv_answer(c, h, rc, &r, (size_t)gos_proto_reply_body(h->type));
}
