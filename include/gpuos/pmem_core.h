/* SPDX-License-Identifier: Apache-2.0 */
/* pmem_core.h: what host code and device code share about partition-local memory
 * (paper 001 section 7.1, "indirect allocation"): the view descriptor with its
 * O(1) remap, and the scheduling logic of the partition-aware persistent runtime.
 * Plain C, usable from C11 and from CUDA (functions are __host__ __device__ under
 * nvcc), so the simulated device runs exactly the logic the GPU runs.
 * Paper 001: Fan et al., "Dissecting How Die Scaling Breaks GPU Fine-grained
 * Scheduling", arXiv:2609.24270 (https://arxiv.org/abs/2609.24270).
 *
 * Placement rule. The chart gives the in-page XOR-hash bits (H200: 12 13 15 17 19)
 * and one measured parity per 2 MB page stands for the physical bits above. The
 * lowest hash bit g is the interleave granularity G = 2^g (4 KB on the H200): in
 * every aligned pair of G-byte units of a 2 MB page the two units differ only in
 * bit g, which is in the hash, so exactly one of them lives in each partition.
 * Logical unit j of the view of partition P is physical unit 2j or 2j + 1 of the
 * allocation: 2j + (P xor partition(2j)). A view therefore holds half the
 * allocation, all of it in partition P (as far as the measured parity is right).
 *
 * Remap cost: one byte load from the parity table (one byte per 2 MB page, stays
 * in L1/L2), a popcount and a few integer operations.
 *
 * N = 2^k partitions (gpuos.chip/2, k hash parities): k in-page bits whose
 * columns of the parities' masks are independent select, in every group of 2^k
 * units that differ only in them, one unit per partition; logical unit j of
 * view P is the unit of group j (j's bits with zeros inserted at the selector
 * bits) whose selector value inv[P ^ code(group)] puts it in P. The parity
 * table then holds each 2 MB page's k-bit code. Views of a two-partition chart
 * keep n_parities 0 or 1 and the pair rule above, bit for bit. */
#ifndef GOS_PMEM_CORE_H
#define GOS_PMEM_CORE_H

#include <stdint.h>

#if defined(__CUDACC__)
#define GOS_HD static __host__ __device__ __forceinline__
#else
#define GOS_HD static inline
#endif

#define GOS_PMEM_PAGE_2M (2ull << 20)
/* view.part of a view that is not remapped: logical offset = physical offset
 * (ordinary interleaved memory, the baseline "without placement"). */
#define GOS_PMEM_LINEAR 0xffffffffu

#define GOS_PMEM_MAX_PARITIES 5 /* up to 32 partitions */

/* N partitions' selector tables, GOS_PMEM_EXT_BYTES in front of a view's
 * parity table (read only by views of n_parities >= 2). Kept out of the view
 * itself: a view is passed by value to kernels and selected at run time
 * (p ? v1 : v0), and a view with these arrays in it was copied to local memory
 * at every remap (decode attention's remap-only time 337 -> 586 us on an H200,
 * results/GPU-.../stop29c-d7b031b). */
typedef struct gos_pmem_ext {
    uint32_t masks[GOS_PMEM_MAX_PARITIES];   /* in-page bits of parity j */
    uint8_t sel[GOS_PMEM_MAX_PARITIES];      /* selector bits, ascending */
    uint8_t inv[1 << GOS_PMEM_MAX_PARITIES]; /* code -> selector value */
    uint8_t pad_[7];
} gos_pmem_ext;
#define GOS_PMEM_EXT_BYTES 64u

/* One partition's view of an allocation. Passed by value to kernels (40 bytes).
 * `parity` is the address of the parity table: a device address in the views
 * that gos_pmem_get_view() returns, a host pointer in host-side copies of it;
 * for N partitions its gos_pmem_ext lies GOS_PMEM_EXT_BYTES before it. */
typedef struct gos_pmem_view {
    uint64_t base;   /* the allocation's device address, 2 MB aligned */
    uint64_t bytes;  /* logical bytes of the view */
    uint64_t parity; /* uint8_t[pages of 2 MB]: partition (code) of in-page offset 0 */
    uint32_t mask;   /* in-page hash bits (bits 7..20); N partitions: all parities' */
    uint32_t shift;  /* log2 granularity = lowest bit of mask */
    uint32_t part;   /* 0 / 1 (0 .. N-1), or GOS_PMEM_LINEAR */
    uint32_t n_parities; /* N = 2^k partitions: k >= 2 (0 or 1: the pair rule) */
} gos_pmem_view;

GOS_HD const gos_pmem_ext *gos_pmem_ext_of(const gos_pmem_view *v)
{
    return (const gos_pmem_ext *)(uintptr_t)(v->parity - GOS_PMEM_EXT_BYTES);
}

GOS_HD uint32_t gos_pmem_parity32(uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return (uint32_t)__popc(x) & 1u;
#else
    return (uint32_t)__builtin_parity(x);
#endif
}

/* The in-page code of an offset (bit j: parity j), N partitions. */
GOS_HD uint32_t gos_pmem_code_in_page(const gos_pmem_view *v, uint64_t off)
{
    uint32_t c = 0, o = (uint32_t)off & 0x1fffffu;
    const gos_pmem_ext *e = gos_pmem_ext_of(v);
    for (uint32_t j = 0; j < v->n_parities && j < GOS_PMEM_MAX_PARITIES; j++)
        c |= gos_pmem_parity32(o & e->masks[j]) << j;
    return c;
}

/* Partition (0/1; 0 .. N-1) of the byte at `off` from the allocation's base. */
GOS_HD uint32_t gos_pmem_home(const gos_pmem_view *v, uint64_t off)
{
    const uint8_t *par = (const uint8_t *)(uintptr_t)v->parity;
#if defined(__CUDA_ARCH__)
    uint32_t page = (uint32_t)__ldg(par + (off >> 21)); /* read-only path: stays in L1 */
#else
    uint32_t page = par[off >> 21];
#endif
    if (v->n_parities > 1)
        return page ^ gos_pmem_code_in_page(v, off);
    return page ^ gos_pmem_parity32((uint32_t)off & v->mask & 0x1fffffu);
}

/* N partitions: logical byte `off` of view v->part. O(k). */
GOS_HD uint64_t gos_pmem_addr_n(const gos_pmem_view *v, uint64_t off)
{
    uint64_t lo = off & ((1ull << v->shift) - 1), x = (off >> v->shift) << v->shift;
    const gos_pmem_ext *e = gos_pmem_ext_of(v);
    for (uint32_t i = 0; i < v->n_parities && i < GOS_PMEM_MAX_PARITIES; i++) { /* a zero at each selector */
        uint32_t b = e->sel[i];
        x = ((x >> b) << (b + 1)) | (x & ((1ull << b) - 1));
    }
    uint32_t t = e->inv[(gos_pmem_home(v, x) ^ v->part) & ((1u << GOS_PMEM_MAX_PARITIES) - 1)];
    for (uint32_t i = 0; i < v->n_parities && i < GOS_PMEM_MAX_PARITIES; i++)
        x |= (uint64_t)(t >> i & 1) << e->sel[i];
    return v->base + x + lo;
}

/* Device address of logical byte `off` of the view. O(1). */
GOS_HD uint64_t gos_pmem_addr(const gos_pmem_view *v, uint64_t off)
{
    if (v->part == GOS_PMEM_LINEAR)
        return v->base + off;
    if (v->n_parities > 1)
        return gos_pmem_addr_n(v, off);
    uint64_t lo = off & ((1ull << v->shift) - 1);
    uint64_t pair = (off >> v->shift) << (v->shift + 1); /* offset of unit 2j */
    uint64_t pick = (uint64_t)(gos_pmem_home(v, pair) ^ v->part);
    return v->base + pair + (pick << v->shift) + lo;
}

/* ---- the partition-aware persistent runtime ------------------------------------
 *
 * One persistent block per SM. Each block reads its SM (%smid) and looks up its
 * partition in the table (-1: the SM stays idle). Tasks 0..n_tasks-1 are split
 * into one contiguous queue per partition; a block takes tickets from its
 * partition's counter (one atomic per task) until the queue is empty. There is
 * no stealing: a task's data sits in its partition's view, and stealing would
 * make it remote. */
#define GOS_PRT_MAX_SMS 512
#define GOS_PRT_MAX_PARTS 32
#define GOS_PRT_NONE 0xffffffffu

typedef struct gos_prt_table {
    uint32_t n_tasks;
    uint32_t first[GOS_PRT_MAX_PARTS], count[GOS_PRT_MAX_PARTS]; /* partition p's queue: first[p] .. first[p] + count[p] */
    int8_t part_of_sm[GOS_PRT_MAX_SMS]; /* 0 / 1 (0 .. N-1); -1: no work on this SM */
} gos_prt_table;

/* Working SMs of each of the np partitions into n[0..np). */
GOS_HD void gos_prt_sm_counts_n(const gos_prt_table *t, uint32_t *n, int np)
{
    for (int p = 0; p < np; p++)
        n[p] = 0;
    for (int s = 0; s < GOS_PRT_MAX_SMS; s++)
        if (t->part_of_sm[s] >= 0 && t->part_of_sm[s] < np)
            n[t->part_of_sm[s]]++;
}

/* Splits n_tasks into np queues in proportion to w[0..np): queue p ends at the
 * rounded share of the weights up to p (halves round up the earlier queue), so
 * two queues split exactly as gos_prt_split does. */
GOS_HD void gos_prt_split_n(gos_prt_table *t, uint32_t n_tasks, const uint32_t *w, int np)
{
    uint64_t tot = 0, cum = 0;
    for (int p = 0; p < np; p++)
        tot += w[p];
    uint32_t start = 0;
    t->n_tasks = n_tasks;
    for (int p = 0; p < GOS_PRT_MAX_PARTS; p++)
        t->first[p] = t->count[p] = 0;
    for (int p = 0; p < np; p++) {
        cum += w[p];
        uint32_t end = p == np - 1 ? n_tasks : tot ? (uint32_t)(((uint64_t)n_tasks * cum + tot / 2) / tot)
                                               : (p == 0 ? n_tasks : start);
        t->first[p] = start;
        t->count[p] = end - start;
        start = end;
    }
}

/* Working SMs per partition. */
GOS_HD void gos_prt_sm_counts(const gos_prt_table *t, uint32_t n[2])
{
    n[0] = n[1] = 0;
    for (int s = 0; s < GOS_PRT_MAX_SMS; s++)
        if (t->part_of_sm[s] == 0 || t->part_of_sm[s] == 1)
            n[t->part_of_sm[s]]++;
}

/* Splits n_tasks into the two queues in proportion to w[0] : w[1], rounded to
 * the nearest task (halves to partition 0). A partition of weight 0 gets no
 * task; both 0 puts everything in queue 0. */
GOS_HD void gos_prt_split(gos_prt_table *t, uint32_t n_tasks, const uint32_t w[2])
{
    uint64_t tot = (uint64_t)w[0] + w[1];
    uint32_t c0 = tot ? (uint32_t)(((uint64_t)n_tasks * w[0] + tot / 2) / tot) : n_tasks;
    t->n_tasks = n_tasks;
    t->first[0] = 0;
    t->count[0] = c0;
    t->first[1] = c0;
    t->count[1] = n_tasks - c0;
}

/* The rest of a table once part_of_sm[0..n) holds the chart's partitions:
 * the idle SMs idle[0..n_idle) take no work, and n_tasks are split by the
 * partitions' working SM counts (equal: one share per partition with SMs).
 * Returns 0; i + 1 when idle[i] is not an SM in 0..n-1; -1 when every SM is
 * idle. The host's table builders (gos_pmem_runtime, gpuos_pmem_runtime). */
GOS_HD int gos_prt_finish(gos_prt_table *t, int n, const int *idle, int n_idle, uint32_t n_tasks, int equal)
{
    for (int i = 0; i < n_idle; i++) {
        if (idle[i] < 0 || idle[i] >= n)
            return i + 1;
        t->part_of_sm[idle[i]] = -1;
    }
    int np = 2; /* the partitions: 2, or as many as the SMs name */
    for (int s = 0; s < GOS_PRT_MAX_SMS; s++)
        if (t->part_of_sm[s] >= np && t->part_of_sm[s] < GOS_PRT_MAX_PARTS)
            np = t->part_of_sm[s] + 1;
    uint32_t w[GOS_PRT_MAX_PARTS], any = 0;
    gos_prt_sm_counts_n(t, w, np);
    for (int p = 0; p < np; p++)
        any |= w[p];
    if (!any)
        return -1;
    if (equal)
        for (int p = 0; p < np; p++)
            w[p] = w[p] ? 1 : 0;
    gos_prt_split_n(t, n_tasks, w, np);
    return 0;
}

/* The task behind ticket `ticket` of partition p's queue, or GOS_PRT_NONE. */
GOS_HD uint32_t gos_prt_task(const gos_prt_table *t, uint32_t p, uint32_t ticket)
{
    return p < GOS_PRT_MAX_PARTS && ticket < t->count[p] ? t->first[p] + ticket : GOS_PRT_NONE;
}

/* The partition-local index of task `task` (its position in its queue), which is
 * where its data sits in the partition's view. */
GOS_HD uint32_t gos_prt_local_index(const gos_prt_table *t, uint32_t p, uint32_t task)
{
    return task - t->first[p];
}

/* ---- patterns of gpuos's own jobs (kernels/place.cu, the simulated device, the
 * bench's reference) ---------------------------------------------------------- */

/* W[row][col] of GEMV jobs: small integers times 2^-10, so sums are exact. */
GOS_HD float gos_pmem_pattern_w(uint64_t row, uint64_t col)
{
    uint64_t h = (row * 0x9E3779B97F4A7C15ull) ^ (col * 0xBF58476D1CE4E5B9ull);
    h ^= h >> 31;
    return (float)((int)(h % 17u) - 8) * (1.0f / 1024.0f);
}

/* Pointer-chase successor of node i among n (a power of two): an LCG with
 * a = 1 mod 4 and odd c has one cycle through all n nodes. */
GOS_HD uint64_t gos_pmem_chase_next(uint64_t i, uint64_t n)
{
    return (i * 0x5851F42D4C957F2Dull + 0x14057B7EF767814Full) & (n - 1);
}

#endif
