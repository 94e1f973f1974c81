/* SPDX-License-Identifier: Apache-2.0 */
/* exec_pmem.c: partition-local memory for vGPU clients (issue 12; exec_pmem.h).
 * Nothing here but bookkeeping around gos_pmem (src/place/pmem.c): the
 * allocation, its parity probes, its scattered copies and the placement check
 * are the very code a CUDA program gets from include/gpuos/pmem.h.
 * Process: the executor (gpuos executor); the daemon under isolation = none. */
#include "exec/exec_pmem.h"

#include "common/clock.h"
#include "common/status.h"
#include "place/place.h"

#include <string.h>

uint64_t srv_pmem_charge_max(uint64_t bytes)
{
    /* both views, each rounded up to a unit of at most 1 MB (hash bits <= 20),
     * rounded up to 2 MB pages, and the parity table's page */
    uint64_t two = 2 * (bytes + (1ull << 20));
    return (two + GOS_PMEM_PAGE_2M - 1) / GOS_PMEM_PAGE_2M * GOS_PMEM_PAGE_2M + GOS_PMEM_PAGE_2M;
}

static gos_pmem **find(struct srv_pmem_set *s, uint64_t base)
{
    for (int i = 0; i < GOS_PMEM_MAX; i++)
        if (s->pm[i] && gos_pmem_buffer(s->pm[i])->base == base)
            return &s->pm[i];
    gos_fail(GOS_EINVAL, "0x%llx is not a partition-local allocation of this client", (unsigned long long)base);
    return NULL;
}

int srv_pmem_alloc(gos_device *d, struct srv_pmem_set *s, const gos_chip *chart, uint64_t bytes,
                   struct gos_rep_pmem_alloc *r)
{
    int slot = -1;
    for (int i = 0; i < GOS_PMEM_MAX && slot < 0; i++)
        if (!s->pm[i])
            slot = i;
    if (slot < 0)
        return gos_fail(GOS_ELIMIT, "a client may hold %d partition-local allocations", GOS_PMEM_MAX);
    gos_pmem *pm;
    int rc = gos_pmem_create(d, chart, bytes, &pm);
    if (rc)
        return rc;
    gos_pmem_view v;
    if (gos_pmem_n_parts(pm) != 2) { /* the protocol's views are the two-partition pair */
        gos_pmem_close(pm);
        return gos_fail(GOS_EUNSUPPORTED, "partition-local memory for vGPU clients: two partitions only "
                                          "(this chart has %d)", chart->n_parts);
    }
    if ((rc = gos_pmem_get_view(pm, 0, &v))) {
        gos_pmem_close(pm);
        return rc;
    }
    double t_alloc, t_par;
    gos_pmem_times(pm, &t_alloc, &t_par);
    memset(r, 0, sizeof *r);
    r->base = v.base;
    r->bytes = gos_pmem_buffer(pm)->bytes;
    r->parity = v.parity;
    r->view_bytes = v.bytes;
    r->charged = r->bytes + GOS_PMEM_PAGE_2M;
    r->mask = v.mask;
    r->shift = v.shift;
    r->parity_s = t_par;
    const gos_numa_model *md = gos_pmem_model(pm);
    r->sm_count = (uint32_t)md->sm_count;
    for (int i = 0; i < 256; i++)
        r->part_of_sm[i] = (int8_t)(i < md->sm_count && i < GOS_MAX_SMS ? md->part_of[i] : -1);
    s->pm[slot] = pm;
    return GOS_OK;
}

int srv_pmem_free(struct srv_pmem_set *s, uint64_t base)
{
    gos_pmem **p = find(s, base);
    if (!p)
        return GOS_EINVAL;
    gos_pmem_close(*p);
    *p = NULL;
    return GOS_OK;
}

int srv_pmem_copy(struct srv_pmem_set *s, const struct gos_msg_pmem_copy *m, void *host)
{
    gos_pmem **p = find(s, m->base);
    if (!p)
        return GOS_EINVAL;
    return m->dir == GOS_OP_HTOD ? gos_pmem_write(*p, (int)m->part, m->offset, host, m->bytes)
                                   : gos_pmem_read(*p, (int)m->part, m->offset, host, m->bytes);
}

int srv_pmem_check(struct srv_pmem_set *s, const struct gos_msg_pmem_check *m, struct gos_rep_pmem_check *r)
{
    gos_pmem **p = find(s, m->base);
    if (!p)
        return GOS_EINVAL;
    memset(r, 0, sizeof *r);
    double t0 = gos_now_s();
    gos_pmem_check_result c;
    int rc = gos_pmem_check(*p, (int)m->samples, &c);
    if (rc)
        return rc;
    r->check_s = gos_now_s() - t0;
    r->unit_bytes = (uint32_t)c.unit_bytes;
    for (int i = 0; i < 2; i++) {
        r->units[i] = c.units[i];
        r->in_target[i] = c.in_target[i];
    }
    uint64_t tu[2];
    r->truth_rc = gos_pmem_truth(*p, tu, r->truth_in);
    if (r->truth_rc)
        memset(r->truth_in, 0, sizeof r->truth_in);
    return GOS_OK;
}

void srv_pmem_release_all(struct srv_pmem_set *s)
{
    for (int i = 0; i < GOS_PMEM_MAX; i++)
        if (s->pm[i]) {
            gos_pmem_close(s->pm[i]);
            s->pm[i] = NULL;
        }
}
