/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_mem.c: the pillar-1b primitives on a real GPU (mem_ops.h), running the
 * kernels of kernels/numa.cu.
 *
 *   alloc      VMM: cuMemAddressReserve + cuMemCreate (1 GB chunks) + cuMemMap +
 *              cuMemSetAccess, 2 MB granularity; GOS_MEM_ALL takes all free memory
 *              but a reserve, stopping cleanly at the first chunk the driver refuses;
 *   latency    gos_numa_probe launches (one block per SM, the target SM's block
 *              works; a launch where it never ran is retried);
 *   sweep      gos_numa_sweep, one prober per SM, work handed out by an atomic;
 *   read_bw    gos_numa_read_bw timed with events after one untimed warm-up pass.
 *
 * Scratch buffers (addresses, results, page lists) are allocated once, before the
 * first large allocation, so that "all free memory" leaves them room. */
#include "device/cuda/cuda_internal.h"
#include "device/mem_ops.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#define ADDR_CAP (1u << 20) /* addresses per launch (8 MB) */
#define OUT_CAP (1u << 22)  /* sweep units per launch (16 MB of results) */
#define PAGE_CAP (1u << 21) /* pages per bandwidth launch (8 GB of data) */
#define CHUNK (1ull << 30)  /* physical allocation unit of alloc() */
#define RESERVE (768ull << 20)
#define ONE_BLOCK_SMEM(d) ((unsigned)((d)->info.max_smem_per_block_optin > 0 ? (d)->info.max_smem_per_block_optin - 1024 : 200 * 1024))

enum { OP_TOUCH = 0, OP_DISCARD = 1, OP_HIT = 2, OP_HBM = 3 }; /* kernels/numa.cu */

struct cuda_mem {
    CUfunction probe, sweep, bw;
    CUdeviceptr addrs, out, slots, done, ctr, sink, pages;
    CUevent e0, e1;
};

struct cuda_buf {
    gos_mem_buf pub;
    CUmemGenericAllocationHandle *h;
    uint64_t *h_bytes;
    int n_h;
    uint64_t reserved;
};

static void mem_close(gos_device *d)
{
    struct cuda_mem *m = d->mem_priv;
    if (!m)
        return;
    CUdeviceptr ptrs[] = {m->addrs, m->out, m->slots, m->done, m->ctr, m->sink, m->pages};
    gos_cuda_free_ptrs(ptrs, sizeof ptrs / sizeof ptrs[0]);
    if (m->e0)
        CU_CALL(cuEventDestroy, m->e0);
    if (m->e1)
        CU_CALL(cuEventDestroy, m->e1);
    free(m);
    d->mem_priv = NULL;
}

static int mem_state(gos_device *d, struct cuda_mem **out)
{
    int fresh, rc = gos_cuda_pillar_state(d, &d->mem_priv, sizeof(struct cuda_mem), &fresh);
    struct cuda_mem *m = d->mem_priv;
    if (rc || !fresh) {
        *out = m;
        return rc;
    }
    if ((rc = gos_cuda_function(d, "numa", "gos_numa_probe", &m->probe)) ||
        (rc = gos_cuda_function(d, "numa", "gos_numa_sweep", &m->sweep)) ||
        (rc = gos_cuda_function(d, "numa", "gos_numa_read_bw", &m->bw)) ||
        (rc = CU_CALL(cuMemAlloc, &m->addrs, (size_t)ADDR_CAP * 8)) ||
        (rc = CU_CALL(cuMemAlloc, &m->out, (size_t)OUT_CAP * 4)) ||
        (rc = CU_CALL(cuMemAlloc, &m->slots, 256 * sizeof(int))) ||
        (rc = CU_CALL(cuMemAlloc, &m->done, 256 * sizeof(int))) ||
        (rc = CU_CALL(cuMemAlloc, &m->ctr, 64)) ||
        (rc = CU_CALL(cuMemAlloc, &m->sink, 64)) ||
        (rc = CU_CALL(cuMemAlloc, &m->pages, (size_t)PAGE_CAP * 4)) ||
        (rc = CU_CALL(cuEventCreate, &m->e0, CU_EVENT_DEFAULT)) ||
        (rc = CU_CALL(cuEventCreate, &m->e1, CU_EVENT_DEFAULT))) {
        mem_close(d);
        return rc;
    }
    unsigned smem = ONE_BLOCK_SMEM(d);
    CUfunction fs[] = {m->probe, m->sweep, m->bw};
    for (int i = 0; i < 3; i++)
        if ((rc = CU_CALL(cuFuncSetAttribute, fs[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          (int)smem))) {
            mem_close(d);
            return rc;
        }
    *out = m;
    return GOS_OK;
}

static void buf_release(struct cuda_buf *b)
{
    uint64_t off = 0;
    for (int i = 0; i < b->n_h; i++) {
        CU_CALL(cuMemUnmap, b->pub.base + off, b->h_bytes[i]);
        CU_CALL(cuMemRelease, b->h[i]);
        off += b->h_bytes[i];
    }
    if (b->reserved)
        CU_CALL(cuMemAddressFree, b->pub.base, b->reserved);
    free(b->h);
    free(b->h_bytes);
    free(b);
}

static int cuda_alloc(gos_device *d, uint64_t bytes, gos_mem_buf **out)
{
    struct cuda_mem *m;
    struct gos_cuda *c = d->priv;
    int rc = mem_state(d, &m); /* scratch first: GOS_MEM_ALL leaves it room */
    if (rc)
        return rc;
    int all = bytes == GOS_MEM_ALL;
    if (all) {
        size_t fr = 0, tot = 0;
        if ((rc = CU_CALL(cuMemGetInfo, &fr, &tot)))
            return rc;
        if (fr <= RESERVE + GOS_PAGE_2M)
            return gos_fail(GOS_ENOMEM, "only %zu MB of device memory free", fr >> 20);
        bytes = fr - RESERVE;
    }
    bytes = all ? bytes / GOS_PAGE_2M * GOS_PAGE_2M
                : (bytes + GOS_PAGE_2M - 1) / GOS_PAGE_2M * GOS_PAGE_2M;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)c->dev;
    size_t gran = 0;
    if ((rc = CU_CALL(cuMemGetAllocationGranularity, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
        return rc;
    if (gran == 0 || GOS_PAGE_2M % gran)
        return gos_fail(GOS_EUNSUPPORTED, "VMM granularity %zu does not divide 2 MB", gran);
    struct cuda_buf *b = calloc(1, sizeof *b);
    int max_h = (int)(bytes / GOS_PAGE_2M) + 1; /* enough even when chunks shrink to 2 MB */
    if (!b || !(b->h = calloc(max_h, sizeof *b->h)) || !(b->h_bytes = calloc(max_h, sizeof *b->h_bytes))) {
        if (b) {
            free(b->h);
            free(b);
        }
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    CUdeviceptr va = 0;
    if ((rc = CU_CALL(cuMemAddressReserve, &va, bytes, GOS_PAGE_2M, 0, 0))) {
        buf_release(b);
        return rc;
    }
    b->pub.base = va;
    b->reserved = bytes;
    uint64_t off = 0, lim = CHUNK;
    while (off < bytes) {
        uint64_t sz = bytes - off < lim ? bytes - off : lim;
        CUmemGenericAllocationHandle h;
        rc = CU_CALL(cuMemCreate, &h, sz, &prop, 0);
        if (rc && all && sz > GOS_PAGE_2M) {
            /* The free figure was optimistic: take what the driver still gives. */
            lim = sz / 2 / GOS_PAGE_2M * GOS_PAGE_2M;
            if (lim < GOS_PAGE_2M)
                lim = GOS_PAGE_2M;
            continue;
        }
        if (rc && all && off > 0)
            break;
        if (rc) {
            buf_release(b);
            return rc;
        }
        if ((rc = CU_CALL(cuMemMap, va + off, sz, 0, h, 0))) {
            CU_CALL(cuMemRelease, h);
            buf_release(b);
            return rc;
        }
        b->h[b->n_h] = h;
        b->h_bytes[b->n_h++] = sz;
        off += sz;
    }
    b->pub.bytes = off;
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if ((rc = CU_CALL(cuMemSetAccess, va, off, &acc, 1)) ||
        (rc = CU_CALL(cuMemsetD32, va, 0x5a5a5a5a, off / 4)) || (rc = CU_CALL(cuCtxSynchronize))) {
        buf_release(b);
        return rc;
    }
    b->pub.impl = b;
    *out = &b->pub;
    return GOS_OK;
}

static void cuda_free(gos_device *d, gos_mem_buf *pub)
{
    if (!pub || gos_cuda_enter(d))
        return;
    buf_release(pub->impl);
}

/* One gos_numa_probe launch per op; slots maps SM -> slot. Retries launches in
 * which some slot's SM got no block. */
static int probe_launch(gos_device *d, struct cuda_mem *m, const int *sms, int n_sms, int per_sm,
                        int op)
{
    int slots[256];
    for (int i = 0; i < 256; i++)
        slots[i] = -1;
    for (int k = 0; k < n_sms; k++)
        slots[sms[k]] = k;
    int rc = CU_CALL(cuMemcpyHtoD, m->slots, slots, sizeof slots);
    if (rc)
        return rc;
    for (int attempt = 0; attempt < 8; attempt++) {
        int done[256];
        unsigned zero = 0; /* opaque to ptxas: orders the discard after the warm-up load */
        void *params[] = {&m->addrs, &per_sm, &m->slots, &op, &m->out, &m->done, &zero};
        if ((rc = CU_CALL(cuMemsetD32, m->done, 0, 256)) ||
            (rc = gos_cuda_launch(m->probe, (unsigned)d->info.sm_count, 32, 0, ONE_BLOCK_SMEM(d), NULL,
                                  params)) ||
            (rc = CU_CALL(cuCtxSynchronize)) ||
            (rc = CU_CALL(cuMemcpyDtoH, done, m->done, sizeof done)))
            return rc;
        int all = 1;
        for (int k = 0; k < n_sms; k++)
            all &= done[k] == 1;
        if (all) /* else rerun: every op is safe to repeat */
            return GOS_OK;
    }
    return gos_fail(GOS_EDEVICE, "latency probe: some SM never ran its block in 8 launches");
}

static int cuda_latency(gos_device *d, int mode, int sm, int other, const uint64_t *addrs, int n,
                        uint32_t *cycles)
{
    struct cuda_mem *m;
    int rc = mem_state(d, &m);
    if (rc)
        return rc;
    for (int first = 0; first < n; first += ADDR_CAP) {
        int cnt = n - first < (int)ADDR_CAP ? n - first : (int)ADDR_CAP;
        if ((rc = CU_CALL(cuMemcpyHtoD, m->addrs, addrs + first, (size_t)cnt * 8)))
            return rc;
        /* HBM: one op; L2: `other` loads, `sm` times hits; REPLICA: `sm` loads,
         * `other` discards, `sm` times the reload (section 6.2.2). */
        int seq[3][3] = {{OP_HBM, -1, -1}, {OP_TOUCH, OP_HIT, -1}, {OP_TOUCH, OP_DISCARD, OP_HIT}};
        int who[3][3] = {{sm, 0, 0}, {other, sm, 0}, {sm, other, sm}};
        for (int st = 0; st < 3 && seq[mode][st] >= 0; st++)
            if ((rc = probe_launch(d, m, &who[mode][st], 1, cnt, seq[mode][st])))
                return rc;
        if ((rc = CU_CALL(cuMemcpyDtoH, cycles + first, m->out, (size_t)cnt * 4)))
            return rc;
    }
    return GOS_OK;
}

static int cuda_latency_multi(gos_device *d, const int *sms, int n_sms, const uint64_t *addrs,
                              int per_sm, uint32_t *cycles)
{
    struct cuda_mem *m;
    int rc = mem_state(d, &m);
    if (rc)
        return rc;
    size_t n = (size_t)n_sms * per_sm;
    if (n > ADDR_CAP || n_sms > 256)
        return gos_fail(GOS_EINVAL, "multi-SM probe of %zu addresses: at most %u", n, ADDR_CAP);
    if ((rc = CU_CALL(cuMemcpyHtoD, m->addrs, addrs, n * 8)) ||
        (rc = probe_launch(d, m, sms, n_sms, per_sm, OP_HBM)) ||
        (rc = CU_CALL(cuMemcpyDtoH, cycles, m->out, n * 4)))
        return rc;
    return GOS_OK;
}

/* gos_sm_mask of kernels/gos_ptx.cuh, passed by value. */
struct sm_mask {
    unsigned w[8];
};

static int mask_of(const int *sms, int n_sms, struct sm_mask *mask)
{
    int n = 0;
    memset(mask, 0, sizeof *mask);
    for (int k = 0; k < n_sms; k++)
        if (!(mask->w[sms[k] >> 5] >> (sms[k] & 31) & 1)) {
            mask->w[sms[k] >> 5] |= 1u << (sms[k] & 31);
            n++;
        }
    return n;
}

static int cuda_sweep(gos_device *d, const int *sms, int n_sms, uint64_t base, uint64_t n,
                      uint64_t stride, int samples, uint32_t *out)
{
    struct cuda_mem *m;
    int rc = mem_state(d, &m);
    if (rc)
        return rc;
    struct sm_mask mask;
    mask_of(sms, n_sms, &mask);
    unsigned zero = 0;
    for (uint64_t first = 0; first < n; first += OUT_CAP) {
        unsigned long long cnt = n - first < OUT_CAP ? n - first : OUT_CAP;
        /* Unit first + i of the caller is unit i of a sweep based at first * stride. */
        unsigned long long b = base + first * stride, st = stride;
        void *params[] = {&b, &cnt, &st, &samples, &m->out, &m->ctr, &mask, &zero};
        if ((rc = CU_CALL(cuMemsetD32, m->ctr, 0, 2)) ||
            (rc = gos_cuda_launch(m->sweep, (unsigned)d->info.sm_count, 32, 0, ONE_BLOCK_SMEM(d), NULL,
                                  params)) ||
            (rc = CU_CALL(cuCtxSynchronize)) ||
            (rc = CU_CALL(cuMemcpyDtoH, out + first, m->out, (size_t)cnt * 4)))
            return rc;
    }
    return GOS_OK;
}

static int cuda_read_bw(gos_device *d, const int *sms, int n_sms, const gos_mem_buf *b,
                        const uint32_t *pages, int n_pages, int passes, int shared, double *gbps)
{
    struct cuda_mem *m;
    int rc = mem_state(d, &m);
    if (rc)
        return rc;
    if (n_pages > (int)PAGE_CAP)
        return gos_fail(GOS_EINVAL, "bandwidth probe of %d pages: at most %u", n_pages, PAGE_CAP);
    struct sm_mask mask;
    int n_active = mask_of(sms, n_sms, &mask);
    for (int i = 0; i < n_pages; i++)
        if ((uint64_t)pages[i] * 4096 >= b->bytes)
            return gos_fail(GOS_EINVAL, "page %u beyond the buffer", pages[i]);
    if ((rc = CU_CALL(cuMemcpyHtoD, m->pages, pages, (size_t)n_pages * 4)))
        return rc;
    unsigned long long base = b->base;
    float ms = 0;
    /* shared: pass k starts the page list k * 997 further on, so a page's reader
     * (warp, hence SM) changes from pass to pass; 0 keeps the reader fixed. */
    int skew = shared ? 997 % n_pages : 0;
    for (int timed = 0; timed < 2; timed++) {
        int ps = timed ? passes : 1;
        void *params[] = {&base, &m->pages, &n_pages, &ps, &mask, &n_active, &m->ctr, &m->sink, &skew};
        if ((rc = CU_CALL(cuMemsetD32, m->ctr, 0, 1)) ||
            (timed && (rc = CU_CALL(cuEventRecord, m->e0, NULL))) ||
            (rc = gos_cuda_launch(m->bw, (unsigned)d->info.sm_count, 1024, 0, ONE_BLOCK_SMEM(d), NULL,
                                  params)) ||
            (timed && (rc = CU_CALL(cuEventRecord, m->e1, NULL))) ||
            (rc = CU_CALL(cuCtxSynchronize)))
            return rc;
    }
    if ((rc = CU_CALL(cuEventElapsedTime, &ms, m->e0, m->e1)))
        return rc;
    if (ms <= 0)
        return gos_fail(GOS_EDEVICE, "bandwidth kernel took no measurable time");
    *gbps = 4096.0 * n_pages * passes / (ms * 1e-3) / 1e9;
    return GOS_OK;
}

const struct gos_mem_ops gos_cuda_mem_ops = {
    .close = mem_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .latency = cuda_latency,
    .latency_multi = cuda_latency_multi,
    .sweep = cuda_sweep,
    .read_bw = cuda_read_bw,
};
