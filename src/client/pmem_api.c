/* SPDX-License-Identifier: Apache-2.0 */
/* pmem_api.c: partition-local memory in libgpuos (issue 12; gpuos.h,
 * docs/readme-placement.md). The daemon's side is src/serve/pmem_cl.c; the
 * device work is src/place/pmem.c in the client's executor. Host data moves
 * through a bounce region of this allocation's own (never the copy pipeline's
 * staging slots, which queued asynchronous copies may still use), or straight
 * from memory of gpuos_host_alloc().
 * Process: a client program (libgpuos; the shim too). */
#include "client/client_internal.h"

#define PMEM_BOUNCE (8u << 20)

struct gpuos_pmem {
    gpuos_vgpu *g;
    struct gos_rep_pmem_alloc a;
    void *bounce;
    size_t bounce_bytes;
    uint32_t region;
};

static int pmem_alloc(gpuos_vgpu *g, size_t bytes, gpuos_pmem **out)
{
    if (!out)
        return gos_fail(GOS_EINVAL, "gpuos_pmem_alloc needs a handle to fill");
    gpuos_pmem *m = calloc(1, sizeof *m);
    if (!m)
        return gos_fail(GOS_ENOMEM, "out of memory");
    m->g = g;
    struct gos_msg_pmem_alloc q = {.bytes = bytes};
    int rc = gcl_call(g, GOS_MSG_PMEM_ALLOC, &q, sizeof q, -1, &m->a, sizeof m->a);
    if (rc) {
        free(m);
        return rc;
    }
    m->bounce_bytes = bytes < PMEM_BOUNCE ? bytes : PMEM_BOUNCE;
    if ((rc = gcl_region_new(g, m->bounce_bytes, &m->bounce, &m->region))) {
        char why[GOS_MSG_TEXT_MAX];
        snprintf(why, sizeof why, "%s", gos_last_error());
        struct gos_msg_pmem_free f = {.base = m->a.base};
        gcl_call(g, GOS_MSG_PMEM_FREE, &f, sizeof f, -1, NULL, 0);
        free(m);
        return gos_fail(rc, "%s", why);
    }
    *out = m;
    return GOS_OK;
}
int gpuos_pmem_alloc(gpuos_vgpu *g, size_t bytes_per_view, gpuos_pmem **out)
{
    LOCKED(g, pmem_alloc(g, bytes_per_view, out));
}

static int pmem_free(gpuos_pmem *m)
{
    struct gos_msg_pmem_free f = {.base = m->a.base};
    int rc = gcl_call(m->g, GOS_MSG_PMEM_FREE, &f, sizeof f, -1, NULL, 0);
    int r2 = gcl_region_del(m->g, m->region);
    munmap(m->bounce, m->bounce_bytes);
    free(m);
    return rc ? rc : r2;
}
int gpuos_pmem_free(gpuos_pmem *m)
{
    if (!m)
        return gos_fail(GOS_EINVAL, "NULL gpuos_pmem");
    gpuos_vgpu *g = m->g;
    LOCKED(g, pmem_free(m));
}

int gpuos_pmem_get_view(const gpuos_pmem *m, int part, gpuos_pmem_view *out)
{
    if (!m || !out || part < 0 || part > 1)
        return gos_fail(GOS_EINVAL, "gpuos_pmem_get_view: no handle, no view to fill, or partition %d (0 or 1)",
                        part);
    *out = (gpuos_pmem_view){.base = m->a.base, .bytes = m->a.view_bytes, .parity = m->a.parity,
                             .mask = m->a.mask, .shift = m->a.shift, .part = (uint32_t)part};
    return GOS_OK;
}

int gpuos_pmem_extent(const gpuos_pmem *m, gpuos_dptr *base, size_t *bytes, size_t *charged)
{
    if (!m)
        return gos_fail(GOS_EINVAL, "NULL gpuos_pmem");
    if (base)
        *base = m->a.base;
    if (bytes)
        *bytes = m->a.bytes;
    if (charged)
        *charged = m->a.charged;
    return GOS_OK;
}

/* The region of memory from gpuos_host_alloc() holding [p, p + n), or -1. */
static int hostbuf_of(gpuos_vgpu *g, const void *p, size_t n, uint64_t *off)
{
    for (int i = 0; i < MAX_HOSTBUFS; i++) {
        const char *b = g->hb[i].ptr;
        if (b && (const char *)p >= b && n <= g->hb[i].bytes && (size_t)((const char *)p - b) <= g->hb[i].bytes - n) {
            *off = (uint64_t)((const char *)p - b);
            return (int)g->hb[i].region;
        }
    }
    return -1;
}

static int pmem_copy(gpuos_pmem *m, int dir, int part, uint64_t off, char *h, size_t n)
{
    if (part < 0 || part > 1)
        return gos_fail(GOS_EINVAL, "no view of partition %d (0 or 1)", part);
    if (off > m->a.view_bytes || n > m->a.view_bytes - off)
        return gos_fail(GOS_EINVAL, "bytes %llu..%llu are outside the view (%llu bytes)", (unsigned long long)off,
                        (unsigned long long)(off + n), (unsigned long long)m->a.view_bytes);
    if (n && !h)
        return gos_fail(GOS_EINVAL, "no host buffer");
    struct gos_msg_pmem_copy q = {.base = m->a.base, .dir = (uint32_t)dir, .part = (uint32_t)part};
    uint64_t hoff;
    int hr = n ? hostbuf_of(m->g, h, n, &hoff) : -1;
    if (hr >= 0) { /* zero-copy: the executor reads the caller's shared memory */
        q.offset = off;
        q.bytes = n;
        q.region = (uint32_t)hr;
        q.region_off = hoff;
        return gcl_call(m->g, GOS_MSG_PMEM_COPY, &q, sizeof q, -1, NULL, 0);
    }
    while (n) {
        size_t k = n < m->bounce_bytes ? n : m->bounce_bytes;
        if (dir == GOS_OP_HTOD)
            memcpy(m->bounce, h, k);
        q.offset = off;
        q.bytes = k;
        q.region = m->region;
        q.region_off = 0;
        int rc = gcl_call(m->g, GOS_MSG_PMEM_COPY, &q, sizeof q, -1, NULL, 0);
        if (rc)
            return rc;
        if (dir == GOS_OP_DTOH)
            memcpy(h, m->bounce, k);
        off += k;
        h += k;
        n -= k;
    }
    return GOS_OK;
}
int gpuos_pmem_write(gpuos_pmem *m, int part, uint64_t off, const void *src, size_t n)
{
    if (!m)
        return gos_fail(GOS_EINVAL, "NULL gpuos_pmem");
    LOCKED(m->g, pmem_copy(m, GOS_OP_HTOD, part, off, (char *)(uintptr_t)src, n));
}
int gpuos_pmem_read(gpuos_pmem *m, int part, uint64_t off, void *dst, size_t n)
{
    if (!m)
        return gos_fail(GOS_EINVAL, "NULL gpuos_pmem");
    LOCKED(m->g, pmem_copy(m, GOS_OP_DTOH, part, off, dst, n));
}

static int pmem_check(gpuos_pmem *m, int samples, gpuos_pmem_check_result *r)
{
    if (!r)
        return gos_fail(GOS_EINVAL, "gpuos_pmem_check needs a result to fill");
    if (samples < 1 || samples > 8)
        return gos_fail(GOS_EINVAL, "gpuos_pmem_check: %d samples per unit (1..8)", samples);
    struct gos_msg_pmem_check q = {.base = m->a.base, .samples = (uint32_t)samples};
    struct gos_rep_pmem_check a;
    int rc = gcl_call(m->g, GOS_MSG_PMEM_CHECK, &q, sizeof q, -1, &a, sizeof a);
    if (rc)
        return rc;
    memset(r, 0, sizeof *r);
    for (int p = 0; p < 2; p++) {
        r->units[p] = a.units[p];
        r->local[p] = a.in_target[p];
        r->truth_local[p] = a.truth_in[p];
    }
    r->truth = a.truth_rc == 0;
    r->unit_bytes = a.unit_bytes;
    r->check_s = a.check_s;
    r->parity_s = m->a.parity_s;
    return GOS_OK;
}
int gpuos_pmem_check(gpuos_pmem *m, int samples, gpuos_pmem_check_result *r)
{
    if (!m)
        return gos_fail(GOS_EINVAL, "NULL gpuos_pmem");
    LOCKED(m->g, pmem_check(m, samples, r));
}

int gpuos_pmem_runtime(const gpuos_pmem *m, const int *idle, int n_idle, uint32_t n_tasks, int split,
                       gos_prt_table *t)
{
    if (!m || !t || (split != 0 && split != 1) || n_idle < 0 || (n_idle && !idle))
        return gos_fail(GOS_EINVAL, "gpuos_pmem_runtime: bad arguments");
    int n = (int)m->a.sm_count;
    if (n > GOS_PRT_MAX_SMS || n > (int)sizeof m->a.part_of_sm)
        return gos_fail(GOS_EUNSUPPORTED, "more than %d SMs", (int)sizeof m->a.part_of_sm);
    memset(t, 0, sizeof *t);
    for (int s = 0; s < GOS_PRT_MAX_SMS; s++)
        t->part_of_sm[s] = s < n ? m->a.part_of_sm[s] : -1;
    int r = gos_prt_finish(t, n, idle, n_idle, n_tasks, split == 1);
    if (r > 0)
        return gos_fail(GOS_EINVAL, "idle SM %d out of range 0..%d", idle[r - 1], n - 1);
    if (r < 0)
        return gos_fail(GOS_EINVAL, "gpuos_pmem_runtime: every SM is idle");
    return GOS_OK;
}
