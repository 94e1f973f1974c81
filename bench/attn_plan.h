/* SPDX-License-Identifier: Apache-2.0 */
/* attn_plan.h: the decode-attention benchmark's plan (bench/attn_decode.cu), plain C
 * shared by the CUDA program, its CPU test (tests/test_attn_plan.c) and, for the
 * data generator, mirrored by bench/attn_decode_ref.py.
 *
 * The problem: one query token per sequence, `batch` sequences of `ctx` tokens,
 * `kv_heads` KV heads of 128 dims, ATTN_G = 4 query heads per KV head (GQA, as
 * Llama-3-8B: 32 / 8), bf16. The KV cache is paged: a page holds 16 tokens of
 * one KV head, its K block (16 x 128 bf16 = 4 KB, one interleave unit of the
 * H200) then its V block, in an 8 KB slot of a page pool; a page table maps
 * (sequence, head, page) to a slot.
 *
 * Split-K (flash-decoding): the pages of each (sequence, KV head) are cut into
 * `splits` splits of `pps` pages; a task is one (sequence, KV head, split), task
 * id ((b * kv_heads) + h) * splits + s. The partition-aware runtime splits the
 * task ids into two contiguous queues (gos_prt_split: tasks [0, c0) go to
 * partition 0); the pages of a task are taken from its partition's pool, so a
 * partition's SMs only read pages placed in that partition. Pool 0 is slots
 * [0, n0), pool 1 slots [n0, n); within each pool slots are handed out in a
 * shuffled order, as a paged-KV allocator does.
 *
 * The data: every element is a hash of its logical position, an integer m in
 * -127..127 times 2^-7 (K, V) or 2^-5 (Q), exact in bf16, so the Python side
 * regenerates the same tensors bit for bit (attn_hash below). */
#ifndef GOS_ATTN_PLAN_H
#define GOS_ATTN_PLAN_H

#include <stdint.h>
#include <stdlib.h>

#if defined(__CUDACC__)
#define ATTN_HD static __host__ __device__ __forceinline__
#else
#define ATTN_HD static inline
#endif

#define ATTN_D 128            /* head dimension */
#define ATTN_PAGE 16          /* tokens per page */
#define ATTN_G 4              /* query heads per KV head */
#define ATTN_WARPS 4          /* warps per block; pps is a multiple */
#define ATTN_BLOCKS_PER_SM 2  /* blocks resident per SM (one's task start hides behind the other) */
#define ATTN_UNIT 4096        /* bytes of a page's K (or V) block */
#define ATTN_SLOT 8192        /* bytes of a page slot: K block, then V block */
#define ATTN_MAX_PPS 128      /* at most 16 pages per warp and task */
#define ATTN_MAX_SPLITS 256   /* per (sequence, KV head): the combine stages them in shared memory */
#define ATTN_MAXCTX (1u << 20) /* token stride of the generator's index */

#define ATTN_SALT_Q 0x1b873593u
#define ATTN_SALT_K 0xcc9e2d51u
#define ATTN_SALT_V 0xe6546b64u

typedef struct {
    uint32_t batch, kv_heads, ctx;
    uint32_t pages;  /* per (sequence, KV head): ceil(ctx / 16) */
    uint32_t pps;    /* pages per split */
    uint32_t splits; /* per (sequence, KV head) */
    uint32_t n_kv;   /* batch * kv_heads */
    uint32_t n_tasks;
} attn_plan;

/* The split size's cost model, in ns (H200-shaped; only the choice depends on it):
 * a task costs a fixed start and end (ticket or block launch, page-table and
 * first-page latency, merge, partial write) plus its pages at the share of HBM
 * bandwidth that the busy block slots each get, at most what one block's loads in
 * flight can pull. Tasks run in rounds of `slots` (ATTN_BLOCKS_PER_SM per SM). */
#define ATTN_COST_TASK_NS 3000.0
#define ATTN_COST_HBM_BPS 4.3e12
#define ATTN_COST_BLOCK_BPS 64e9

ATTN_HD double attn_plan_cost(uint64_t n_kv, uint32_t pages, uint32_t pps, uint32_t slots)
{
    uint64_t tasks = n_kv * ((pages + pps - 1) / pps);
    uint64_t rounds = (tasks + slots - 1) / slots, busy = tasks < slots ? tasks : slots;
    double per_block = ATTN_COST_HBM_BPS / (double)busy;
    if (per_block > ATTN_COST_BLOCK_BPS)
        per_block = ATTN_COST_BLOCK_BPS;
    return (double)rounds * (ATTN_COST_TASK_NS + 1e9 * pps * (double)ATTN_SLOT / per_block);
}

/* Pages per split: a power of two times ATTN_WARPS (every warp of a block gets the
 * same number of pages) up to ATTN_MAX_PPS, the cheapest by attn_plan_cost (the
 * smaller on a tie) among those giving at most ATTN_MAX_SPLITS splits per head.
 * Returns 0, or -1 for a shape it cannot plan (zero sizes, ctx > ATTN_MAXCTX or
 * more than ATTN_MAX_SPLITS splits of ATTN_MAX_PPS pages, slot ids past 31 bits). */
ATTN_HD int attn_plan_make(attn_plan *p, uint32_t batch, uint32_t kv_heads, uint32_t ctx, uint32_t sms)
{
    if (!batch || !kv_heads || !ctx || !sms || ctx > ATTN_MAXCTX || (uint64_t)batch * kv_heads > (1u << 20))
        return -1;
    p->batch = batch;
    p->kv_heads = kv_heads;
    p->ctx = ctx;
    p->pages = (ctx + ATTN_PAGE - 1) / ATTN_PAGE;
    p->n_kv = batch * kv_heads;
    if ((uint64_t)p->n_kv * p->pages >= (1ull << 31))
        return -1;
    const uint32_t slots = sms * ATTN_BLOCKS_PER_SM;
    double best = 0;
    p->pps = 0;
    for (uint32_t pps = ATTN_WARPS; pps <= ATTN_MAX_PPS; pps *= 2) {
        if ((p->pages + pps - 1) / pps > ATTN_MAX_SPLITS)
            continue;
        double c = attn_plan_cost(p->n_kv, p->pages, pps, slots);
        if (!p->pps || c < best) {
            best = c;
            p->pps = pps;
        }
    }
    if (!p->pps)
        return -1;
    p->splits = (p->pages + p->pps - 1) / p->pps;
    p->n_tasks = p->n_kv * p->splits;
    return 0;
}

/* Task `task` -> its (sequence, KV head) index bh = b * kv_heads + h and its
 * pages [*pg0, *pg1) of that head. */
ATTN_HD uint32_t attn_task_pages(const attn_plan *p, uint32_t task, uint32_t *pg0, uint32_t *pg1)
{
    uint32_t bh = task / p->splits, s = task - bh * p->splits;
    *pg0 = s * p->pps;
    *pg1 = *pg0 + p->pps < p->pages ? *pg0 + p->pps : p->pages;
    return bh;
}

/* ---- the data generator (bit-exact in bench/attn_decode_ref.py) ---------------- */
ATTN_HD uint32_t attn_mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x5bd1e995u;
    x ^= x >> 16;
    return x;
}

/* m in -127..127 for logical element `idx` of the tensor salted `salt`. */
ATTN_HD int attn_hash(uint64_t idx, uint32_t salt)
{
    uint32_t lo = (uint32_t)idx, hi = (uint32_t)(idx >> 32);
    return (int)((attn_mix32(lo ^ (hi * 0x9E3779B1u) ^ salt) >> 9) % 255u) - 127;
}

ATTN_HD uint64_t attn_q_index(uint32_t b, uint32_t hq, uint32_t d, uint32_t q_heads)
{
    return ((uint64_t)b * q_heads + hq) * ATTN_D + d;
}

ATTN_HD uint64_t attn_kv_index(uint32_t b, uint32_t h, uint32_t t, uint32_t d, uint32_t kv_heads)
{
    return (((uint64_t)b * kv_heads + h) * ATTN_MAXCTX + t) * ATTN_D + d;
}

/* bf16 bits of m * 2^-shift (exact: |m| < 2^8). */
ATTN_HD uint16_t attn_bf16_bits(int m, int shift)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.f = (float)m / (float)(1 << shift);
    return (uint16_t)(v.u >> 16);
}

/* The value of bf16 bits x (the outputs' checks). */
ATTN_HD float attn_bf16_value(uint16_t x)
{
    union {
        uint32_t u;
        float f;
    } v;
    v.u = (uint32_t)x << 16;
    return v.f;
}

/* ---- page assignment (host) ------------------------------------------------------ */

/* Pages of the tasks [0, c0) (partition 0's queue). */
static inline uint32_t attn_pool0_pages(const attn_plan *p, uint32_t c0)
{
    uint64_t n = 0;
    for (uint32_t t = 0; t < c0 && t < p->n_tasks; t++) {
        uint32_t a, b;
        attn_task_pages(p, t, &a, &b);
        n += b - a;
    }
    return (uint32_t)n;
}

static inline uint64_t attn_rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fills pt[n_kv * pages] (entry bh * pages + page = the page's slot): the pages of
 * partition 0's tasks get the slots 0..n0-1 and partition 1's the slots
 * n0..n-1, each pool in a shuffled order (seed). Returns n0, or -1 on no memory. */
static inline int64_t attn_assign_pages(const attn_plan *p, uint32_t c0, uint64_t seed, uint32_t *pt)
{
    uint32_t n = p->n_kv * p->pages, n0 = attn_pool0_pages(p, c0);
    uint32_t *perm = (uint32_t *)malloc(sizeof *perm * (n ? n : 1));
    if (!perm)
        return -1;
    uint64_t s = seed | 1;
    for (uint32_t pool = 0; pool < 2; pool++) { /* Fisher-Yates within each pool */
        uint32_t lo = pool ? n0 : 0, hi = pool ? n : n0;
        for (uint32_t i = lo; i < hi; i++)
            perm[i] = i;
        for (uint32_t i = hi; i > lo + 1; i--) {
            uint32_t j = lo + (uint32_t)(attn_rng(&s) % (i - lo));
            uint32_t x = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = x;
        }
    }
    uint32_t next[2] = {0, n0};
    for (uint32_t t = 0; t < p->n_tasks; t++) {
        uint32_t a, b, bh = attn_task_pages(p, t, &a, &b), pool = t >= c0;
        for (uint32_t pg = a; pg < b; pg++)
            pt[(uint64_t)bh * p->pages + pg] = perm[next[pool]++];
    }
    free(perm);
    return n0;
}

/* The pages of `layers` layers in one pool of layers x n slots (n = n_kv * pages),
 * as bench/pd_multiplex keeps its KV cache: pt[l * n + i] = the slot of page i of
 * layer l; the pool-0 slots of every layer first (layer l's are [l n0, (l + 1) n0)),
 * then the pool-1 slots, so that slot g lives in view 0 when g < the returned
 * count (layers x n0; attn_args.n0) and in view 1 otherwise. -1 on no memory. */
static inline int64_t attn_assign_layers(const attn_plan *p, uint32_t c0, uint32_t layers, uint64_t seed, uint32_t *pt)
{
    const uint32_t n = p->n_kv * p->pages;
    int64_t n0 = 0;
    for (uint32_t l = 0; l < layers; l++) {
        uint32_t *q = pt + (uint64_t)l * n;
        if ((n0 = attn_assign_pages(p, c0, seed + l, q)) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            q[i] = q[i] < (uint32_t)n0 ? l * (uint32_t)n0 + q[i]
                                       : layers * (uint32_t)n0 + l * (n - (uint32_t)n0) + (q[i] - (uint32_t)n0);
    }
    return (int64_t)layers * n0;
}

#endif
