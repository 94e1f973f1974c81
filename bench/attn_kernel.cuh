/* SPDX-License-Identifier: Apache-2.0 */
// attn_kernel.cuh: issue 26's decode attention over a paged KV cache, the
// kernels alone (bench/attn_plan.h has the layout), shared by bench/attn_decode.cu
// (the kernel's benchmark and checks) and bench/pd_multiplex.cu (decode beside
// prefill, issue 45). Device code and its argument block; the programs own the host side.
//
// A block of 4 warps (two blocks per SM, so that one block's task start hides
// behind the other's loads) takes one task (sequence, KV head, split); warp w
// reads pages w, w + 4, ... of the split, each page as 16 coalesced 16-byte
// loads per lane (K then V block, 4 KB each, one remap per block), an L2 bulk
// prefetch two pages ahead, fp32 scores and an online softmax per warp; the warps
// merge in shared memory, and the split that finishes last for its (sequence,
// head) combines all splits' partials (an arrival counter, no second launch).
//   attn_plain      ordinary grid, one block per task (LIN addressing)
//   attn_rt<LIN>    the partition-aware persistent runtime (gpuos/pmem_dev.cuh):
//                   LIN = true: slot g at v0.base + g * 8 KB (interleaved pool);
//                   false: slot g < n0 in view v0, else slot g - n0 in view v1
//   attn_fill<LIN>  fills the pool with the generator's K and V (attn_plan.h)
//   attn_fill_q     the query tokens
#ifndef GOS_ATTN_KERNEL_CUH
#define GOS_ATTN_KERNEL_CUH

#include "gpuos/pmem_dev.cuh"

#include "attn_plan.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// Every CUDA runtime call checked, with the program's name (ATTN_PROG) on the error line.
#ifndef ATTN_PROG
#error "define ATTN_PROG (the program's name for error lines) before including attn_kernel.cuh"
#endif
#define CK(call)                                                                                    \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, ATTN_PROG ": %s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                    cudaGetErrorString(e_));                                                        \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)


#define THREADS (ATTN_WARPS * 32)
#define AHEAD 2                        // pages prefetched into L2 ahead of each warp
#define NEG_BIG (-1e30f)               // finite "minus infinity": no inf - inf
#define RT_SMEM (80 << 10)             // dynamic shared memory of the runtime kernel: two blocks per SM, never three

struct attn_args {
    const __nv_bfloat16 *q; // [batch][q_heads][128]
    const uint32_t *pt;     // [n_kv][pages]: slot of each page
    __nv_bfloat16 *out;     // [batch][q_heads][128]
    float *part_o;          // [n_tasks][G][128]: unnormalised split outputs
    float *part_ml;         // [n_tasks][G][2]: split max (log2 domain) and sum
    unsigned *arrive;       // [n_kv]: splits finished, never reset (mod splits)
    unsigned *owner, *runs; // [n_tasks] or NULL: SM and run count of each task
    attn_plan plan;
    uint32_t n0;            // slots of pool 0 (views); 0xffffffff: one linear pool
    float qscale;           // softmax scale * log2(e)
};

struct __align__(16) attn_smem { // 16: ps rows are read as float4
    float ps[ATTN_WARPS][2][ATTN_PAGE][ATTN_G]; // probabilities of a warp's page (double-buffered)
    float wm[ATTN_WARPS][ATTN_G], wl[ATTN_WARPS][ATTN_G];
    float wacc[ATTN_WARPS][ATTN_G][ATTN_D]; // also the combine's [splits][G] maxima/weights and sums
    float csum[ATTN_G];
    unsigned last;
};

// The address of block `kv` (0: K, 1: V) of slot `g`. Views: slot g < n0 is slot
// g of view v0, else slot g - n0 of view v1; LIN: v0.base + g * 8 KB.
template <bool LIN>
__device__ __forceinline__ unsigned long long slot_addr(const gos_pmem_view &v0, const gos_pmem_view &v1,
                                                        uint32_t n0, uint32_t g, uint32_t kv)
{
    if (LIN)
        return v0.base + (unsigned long long)g * ATTN_SLOT + kv * ATTN_UNIT;
    uint32_t pp = g >= n0;
    gos_pmem_view v = pp ? v1 : v0;
    unsigned long long off = (unsigned long long)(g - (pp ? n0 : 0u)) * ATTN_SLOT + kv * ATTN_UNIT;
    return gos_pmem_addr(&v, off);
}

__device__ __forceinline__ void prefetch_l2(unsigned long long a, unsigned bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bf16x8(const uint4 &u, float f[8])
{
    f[0] = __uint_as_float(u.x << 16);
    f[1] = __uint_as_float(u.x & 0xffff0000u);
    f[2] = __uint_as_float(u.y << 16);
    f[3] = __uint_as_float(u.y & 0xffff0000u);
    f[4] = __uint_as_float(u.z << 16);
    f[5] = __uint_as_float(u.z & 0xffff0000u);
    f[6] = __uint_as_float(u.w << 16);
    f[7] = __uint_as_float(u.w & 0xffff0000u);
}

#define FULL 0xffffffffu
static_assert(2 * ATTN_MAX_SPLITS * ATTN_G <= ATTN_WARPS * ATTN_G * ATTN_D, "the combine's stage fits in wacc");

// One step of the recursive-halving sum over lanes: of sc[0..N), the lane keeps
// the half its lane bit O selects, summed with the partner's (lane ^ O) copy of
// it, in sc[0..N/2). Compile-time O and N: sc stays in registers.
template <int O, int N>
__device__ __forceinline__ void halve(float *sc, int lane)
{
    const bool up = lane & O;
#pragma unroll
    for (int e = 0; e < N / 2; e++) {
        float send = up ? sc[e] : sc[e + N / 2];
        float keep = up ? sc[e + N / 2] : sc[e];
        sc[e] = keep + __shfl_xor_sync(FULL, send, O);
    }
}

// One task (every thread of the block calls it).
template <bool LIN>
__device__ void attn_task(const attn_args &a, const gos_pmem_view &v0, const gos_pmem_view &v1, uint32_t task,
                          attn_smem &sm)
{
    const attn_plan &P = a.plan;
    uint32_t pg0, pg1;
    const uint32_t bh = attn_task_pages(&P, task, &pg0, &pg1);
    const uint32_t b = bh / P.kv_heads, h = bh - b * P.kv_heads, q_heads = P.kv_heads * ATTN_G;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, dl = lane & 15, half = lane >> 4;
    const bool odd = lane & 1;

    // the lane's 8 dims (8 dl ..) of the G query heads, pre-scaled
    float q[ATTN_G][8];
#pragma unroll
    for (int g = 0; g < ATTN_G; g++) {
        uint4 u = __ldg((const uint4 *)(a.q + ((size_t)b * q_heads + h * ATTN_G + g) * ATTN_D) + dl);
        bf16x8(u, q[g]);
#pragma unroll
        for (int i = 0; i < 8; i++)
            q[g][i] *= a.qscale;
    }
    float m[ATTN_G], l[ATTN_G], acc[ATTN_G][8];
#pragma unroll
    for (int g = 0; g < ATTN_G; g++) {
        m[g] = NEG_BIG;
        l[g] = 0.f;
#pragma unroll
        for (int i = 0; i < 8; i++)
            acc[g][i] = 0.f;
    }

    // this warp's pages: pg0 + warp + 4 i, i < npw (<= 32); lane i holds the i-th slot
    const uint32_t npw = pg0 + warp < pg1 ? (pg1 - pg0 - warp + ATTN_WARPS - 1) / ATTN_WARPS : 0;
    const uint32_t *ptb = a.pt + (size_t)bh * P.pages;
    const uint32_t myslot = (uint32_t)lane < npw ? __ldg(ptb + pg0 + warp + lane * ATTN_WARPS) : 0;
#pragma unroll
    for (int i = 0; i < AHEAD; i++) {
        uint32_t sl = __shfl_sync(FULL, myslot, i);
        if ((uint32_t)i < npw && lane < 2)
            prefetch_l2(slot_addr<LIN>(v0, v1, a.n0, sl, lane), ATTN_UNIT);
    }

#pragma unroll 1
    for (uint32_t i = 0; i < npw; i++) {
        const uint32_t pg = pg0 + warp + i * ATTN_WARPS;
        const uint32_t slot = __shfl_sync(FULL, myslot, i);
        if (i + AHEAD < npw) {
            uint32_t gn = __shfl_sync(FULL, myslot, i + AHEAD);
            if (lane < 2)
                prefetch_l2(slot_addr<LIN>(v0, v1, a.n0, gn, lane), ATTN_UNIT);
        }
        // chunk k of a block: tokens 2k + half, dims 8 dl .. 8 dl + 7
        const uint4 *kp = (const uint4 *)slot_addr<LIN>(v0, v1, a.n0, slot, 0) + lane;
        const uint4 *vp = (const uint4 *)slot_addr<LIN>(v0, v1, a.n0, slot, 1) + lane;
        uint4 kr[8], vr[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            kr[k] = __ldg(kp + 32 * k);
#pragma unroll
        for (int k = 0; k < 8; k++)
            vr[k] = __ldg(vp + 32 * k);

        // scores: sc[4 k + g], partial over the lane's 8 dims
        float sc[8 * ATTN_G];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float kf[8];
            bf16x8(kr[k], kf);
#pragma unroll
            for (int g = 0; g < ATTN_G; g++) {
                float d = 0.f;
#pragma unroll
                for (int e = 0; e < 8; e++)
                    d = fmaf(q[g][e], kf[e], d);
                sc[4 * k + g] = d;
            }
        }
        // sum over the 16 lanes of the half by recursive halving: afterwards the
        // lane holds sc[0], sc[1] = entries 2 dl and 2 dl + 1, i.e. token
        // 2 (dl >> 1) + half, heads 2 (dl & 1) and 2 (dl & 1) + 1
        halve<8, 32>(sc, lane);
        halve<4, 16>(sc, lane);
        halve<2, 8>(sc, lane);
        halve<1, 4>(sc, lane);
        const int tk = 2 * (dl >> 1) + half;
        if (pg * ATTN_PAGE + tk >= P.ctx)
            sc[0] = sc[1] = NEG_BIG;
        // page max per head: lanes of equal parity hold the same two heads
        float x0 = sc[0], x1 = sc[1];
#pragma unroll
        for (int o = 2; o <= 16; o <<= 1) {
            x0 = fmaxf(x0, __shfl_xor_sync(FULL, x0, o));
            x1 = fmaxf(x1, __shfl_xor_sync(FULL, x1, o));
        }
        float y0 = __shfl_xor_sync(FULL, x0, 1), y1 = __shfl_xor_sync(FULL, x1, 1);
        const float pm[4] = {odd ? y0 : x0, odd ? y1 : x1, odd ? x0 : y0, odd ? x1 : y1};
        float al[ATTN_G];
#pragma unroll
        for (int g = 0; g < ATTN_G; g++) {
            float mn = fmaxf(m[g], pm[g]);
            al[g] = exp2f(m[g] - mn);
            m[g] = mn;
        }
        const float p0 = exp2f(sc[0] - (odd ? m[2] : m[0]));
        const float p1 = exp2f(sc[1] - (odd ? m[3] : m[1]));
        float s0 = p0, s1 = p1;
#pragma unroll
        for (int o = 2; o <= 16; o <<= 1) {
            s0 += __shfl_xor_sync(FULL, s0, o);
            s1 += __shfl_xor_sync(FULL, s1, o);
        }
        float t0 = __shfl_xor_sync(FULL, s0, 1), t1 = __shfl_xor_sync(FULL, s1, 1);
        const float psum[4] = {odd ? t0 : s0, odd ? t1 : s1, odd ? s0 : t0, odd ? s1 : t1};
#pragma unroll
        for (int g = 0; g < ATTN_G; g++) {
            l[g] = fmaf(l[g], al[g], psum[g]); // explicit: every variant rounds alike
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[g][e] *= al[g];
        }
        float *pw = &sm.ps[warp][i & 1][0][0];
        pw[tk * ATTN_G + (odd ? 2 : 0)] = p0;
        pw[tk * ATTN_G + (odd ? 3 : 1)] = p1;
        __syncwarp();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float vf[8];
            bf16x8(vr[k], vf);
            const float4 pk = *(const float4 *)&pw[(2 * k + half) * ATTN_G];
#pragma unroll
            for (int e = 0; e < 8; e++) {
                acc[0][e] = fmaf(pk.x, vf[e], acc[0][e]);
                acc[1][e] = fmaf(pk.y, vf[e], acc[1][e]);
                acc[2][e] = fmaf(pk.z, vf[e], acc[2][e]);
                acc[3][e] = fmaf(pk.w, vf[e], acc[3][e]);
            }
        }
    }
    // the two halves held different tokens of the same dims
#pragma unroll
    for (int g = 0; g < ATTN_G; g++)
#pragma unroll
        for (int e = 0; e < 8; e++)
            acc[g][e] += __shfl_xor_sync(FULL, acc[g][e], 16);
    if (half == 0)
#pragma unroll
        for (int g = 0; g < ATTN_G; g++)
#pragma unroll
            for (int e = 0; e < 8; e++)
                sm.wacc[warp][g][8 * dl + e] = acc[g][e];
    if (lane == 0)
#pragma unroll
        for (int g = 0; g < ATTN_G; g++) {
            sm.wm[warp][g] = m[g];
            sm.wl[warp][g] = l[g];
        }
    __syncthreads();

    // merge the warps (a warp without pages has m = NEG_BIG, l = 0: weight 0)
    const uint32_t S = P.splits;
    for (int e = threadIdx.x; e < ATTN_G * ATTN_D; e += THREADS) {
        const int g = e / ATTN_D, d = e % ATTN_D;
        float M = NEG_BIG, L = 0.f, O = 0.f;
#pragma unroll
        for (int w = 0; w < ATTN_WARPS; w++)
            M = fmaxf(M, sm.wm[w][g]);
#pragma unroll
        for (int w = 0; w < ATTN_WARPS; w++) {
            float f = exp2f(sm.wm[w][g] - M);
            L = fmaf(sm.wl[w][g], f, L);
            O = fmaf(sm.wacc[w][g][d], f, O);
        }
        if (S == 1) {
            a.out[((size_t)b * q_heads + h * ATTN_G + g) * ATTN_D + d] = __float2bfloat16_rn(O / L);
        } else {
            a.part_o[((size_t)task * ATTN_G + g) * ATTN_D + d] = O;
            if (d == 0) {
                a.part_ml[((size_t)task * ATTN_G + g) * 2] = M;
                a.part_ml[((size_t)task * ATTN_G + g) * 2 + 1] = L;
            }
        }
    }
    if (a.runs && threadIdx.x == 0) {
        a.owner[task] = gos_prt_smid();
        atomicAdd(&a.runs[task], 1u);
    }
    if (S > 1) {
        // the last split of (b, h) to finish combines them (threadFenceReduction)
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
            sm.last = (atomicAdd(&a.arrive[bh], 1u) % S) == S - 1;
        __syncthreads();
        if (sm.last) {
            __threadfence();
            const size_t t0 = (size_t)bh * S;
            // the splits' maxima and sums into shared memory (wacc is free now),
            // then one warp per head: the overall max, each split's weight, the sum
            float *cm = &sm.wacc[0][0][0], *cl = cm + ATTN_MAX_SPLITS * ATTN_G; // [s][g]
            for (uint32_t e = threadIdx.x; e < S * ATTN_G; e += THREADS) {
                cm[e] = __ldcg(&a.part_ml[(t0 * ATTN_G + e) * 2]);
                cl[e] = __ldcg(&a.part_ml[(t0 * ATTN_G + e) * 2 + 1]);
            }
            __syncthreads();
            if (warp < ATTN_G) {
                const int g = warp;
                float M = NEG_BIG, L = 0.f;
                for (uint32_t s = lane; s < S; s += 32)
                    M = fmaxf(M, cm[s * ATTN_G + g]);
#pragma unroll
                for (int o = 16; o >= 1; o >>= 1)
                    M = fmaxf(M, __shfl_xor_sync(FULL, M, o));
                for (uint32_t s = lane; s < S; s += 32) {
                    float f = exp2f(cm[s * ATTN_G + g] - M);
                    cm[s * ATTN_G + g] = f;
                    L = fmaf(cl[s * ATTN_G + g], f, L);
                }
#pragma unroll
                for (int o = 16; o >= 1; o >>= 1)
                    L += __shfl_xor_sync(FULL, L, o);
                if (lane == 0)
                    sm.csum[g] = L;
            }
            __syncthreads();
            for (int e = threadIdx.x; e < ATTN_G * ATTN_D; e += THREADS) {
                const int g = e / ATTN_D, d = e % ATTN_D;
                float O = 0.f;
#pragma unroll 4
                for (uint32_t s = 0; s < S; s++)
                    O = fmaf(__ldcg(&a.part_o[((t0 + s) * ATTN_G + g) * ATTN_D + d]), cm[s * ATTN_G + g], O);
                a.out[((size_t)b * q_heads + h * ATTN_G + g) * ATTN_D + d] = __float2bfloat16_rn(O / sm.csum[g]);
            }
        }
    }
    __syncthreads(); // shared memory is reused by the block's next task
}

// Ordinary grid: block i does task i.
__global__ void __launch_bounds__(THREADS, ATTN_BLOCKS_PER_SM) attn_plain(attn_args a, gos_pmem_view v0, gos_pmem_view v1)
{
    __shared__ attn_smem sm;
    attn_task<true>(a, v0, v1, blockIdx.x, sm);
}

// The partition-aware runtime: ATTN_BLOCKS_PER_SM persistent blocks per SM (the
// dynamic shared memory admits no more), each taking tasks from its SM's
// partition's queue.
template <bool LIN>
__global__ void __launch_bounds__(THREADS, ATTN_BLOCKS_PER_SM)
    attn_rt(attn_args a, gos_pmem_view v0, gos_pmem_view v1, gos_prt_table t, unsigned *ctr)
{
    __shared__ attn_smem sm;
    int p = gos_prt_block_part(t);
    if (p < 0)
        return;
    for (unsigned task; (task = gos_prt_next(t, ctr, p)) != GOS_PRT_NONE;)
        attn_task<LIN>(a, v0, v1, task, sm);
}

// Fills the page pool: one thread per 16 bytes of a block (same slot mapping).
template <bool LIN>
__global__ void attn_fill(const uint32_t *pt, attn_plan P, uint32_t n0, gos_pmem_view v0, gos_pmem_view v1)
{
    const unsigned long long n = (unsigned long long)P.n_kv * P.pages * 2 * (ATTN_UNIT / 16);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const uint32_t c = (uint32_t)(i & 255), kv = (uint32_t)((i >> 8) & 1);
        const unsigned long long pgi = i >> 9; // bh * pages + page
        const uint32_t bh = (uint32_t)(pgi / P.pages), page = (uint32_t)(pgi % P.pages);
        const uint32_t b = bh / P.kv_heads, h = bh % P.kv_heads;
        const uint32_t t = page * ATTN_PAGE + (c >> 4), d0 = (c & 15) * 8;
        const uint32_t salt = kv ? ATTN_SALT_V : ATTN_SALT_K;
        uint32_t w[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            uint32_t lo = attn_bf16_bits(attn_hash(attn_kv_index(b, h, t, d0 + 2 * e, P.kv_heads), salt), 7);
            uint32_t hi = attn_bf16_bits(attn_hash(attn_kv_index(b, h, t, d0 + 2 * e + 1, P.kv_heads), salt), 7);
            w[e] = lo | hi << 16;
        }
        *((uint4 *)slot_addr<LIN>(v0, v1, n0, pt[pgi], kv) + c) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

__global__ void attn_fill_q(__nv_bfloat16 *q, uint32_t batch, uint32_t q_heads)
{
    const uint32_t n = batch * q_heads * ATTN_D;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint32_t d = i % ATTN_D, hq = (i / ATTN_D) % q_heads, b = i / (ATTN_D * q_heads);
        q[i] = __ushort_as_bfloat16(attn_bf16_bits(attn_hash(attn_q_index(b, hq, d, q_heads), ATTN_SALT_Q), 5));
    }
}

#endif
