/* SPDX-License-Identifier: Apache-2.0 */
// pd_kernels.cuh: the small kernels of bench/pd_multiplex.cu (issue 45) beside
// the GEMMs (cuBLAS) and decode attention (attn_kernel.cuh): the data generator,
// prefill's causal softmax, the MLP's SiLU gate, decode's KV append and the
// %globaltimer stamps both phases are timed by. Device code only.
#ifndef GOS_PD_KERNELS_CUH
#define GOS_PD_KERNELS_CUH

#include "attn_kernel.cuh"

#include <cuda_bf16.h>
#include <stdint.h>

// n bf16 values in [-scale, scale] from attn_plan.h's hash of (i, salt).
__global__ void pd_fill(__nv_bfloat16 *p, unsigned long long n, uint32_t salt, float scale)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16_rn(scale * (float)attn_hash(i, salt) / 127.f);
}

// The current %globaltimer (ns) into t[i]: one thread, after the stream's previous work.
__global__ void pd_stamp(unsigned long long *t, int i)
{
    unsigned long long g;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    t[i] = g;
}

#define PD_SOFTMAX_THREADS 256

// Causal softmax of one prefill sequence's scores, in place: s holds `heads`
// matrices of n x n (keys x queries, column-major: column q is query q's n
// scores, contiguous). Block = one (head, query) column; keys after q get 0.
__global__ void __launch_bounds__(PD_SOFTMAX_THREADS) pd_softmax_causal(__nv_bfloat16 *s, int n, float scale_log2)
{
    const unsigned long long col = blockIdx.x;
    const int q = (int)(col % (unsigned)n);
    __nv_bfloat16 *c = s + col * (unsigned long long)n;
    __shared__ float red[PD_SOFTMAX_THREADS / 32];
    __shared__ float bcast;
    float m = -1e30f;
    for (int k = threadIdx.x; k <= q; k += PD_SOFTMAX_THREADS)
        m = fmaxf(m, __bfloat162float(c[k]) * scale_log2);
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        float x = red[0];
        for (int w = 1; w < PD_SOFTMAX_THREADS / 32; w++)
            x = fmaxf(x, red[w]);
        bcast = x;
    }
    __syncthreads();
    m = bcast;
    float sum = 0.f;
    for (int k = threadIdx.x; k <= q; k += PD_SOFTMAX_THREADS)
        sum += exp2f(__bfloat162float(c[k]) * scale_log2 - m);
    for (int o = 16; o; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        float x = 0.f;
        for (int w = 0; w < PD_SOFTMAX_THREADS / 32; w++)
            x += red[w];
        bcast = 1.f / x;
    }
    __syncthreads();
    const float inv = bcast;
    for (int k = threadIdx.x; k < n; k += PD_SOFTMAX_THREADS)
        c[k] = __float2bfloat16_rn(k <= q ? exp2f(__bfloat162float(c[k]) * scale_log2 - m) * inv : 0.f);
}

// act[t][i] = silu(gu[t][i]) * gu[t][ffn + i] (gate and up projections side by side).
__global__ void pd_silu_mul(const __nv_bfloat16 *gu, __nv_bfloat16 *act, unsigned long long tokens, int ffn)
{
    const unsigned long long n = tokens * (unsigned long long)ffn;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long t = i / (unsigned)ffn, j = i % (unsigned)ffn;
        const float g = __bfloat162float(gu[t * 2 * ffn + j]), u = __bfloat162float(gu[t * 2 * ffn + ffn + j]);
        act[i] = __float2bfloat16_rn(g / (1.f + __expf(-g)) * u);
    }
}

// Decode writes its new token's K and V (kv: [batch][K 1024 | V 1024], bf16) into
// the last page of each (sequence, KV head), token (ctx - 1) % 16 of it: the
// pages this phase owns (attn_kernel.cuh's slot addressing). One thread per 16 bytes.
template <bool LIN>
__global__ void pd_kv_append(const uint32_t *pt, attn_plan P, uint32_t n0, gos_pmem_view v0, gos_pmem_view v1,
                             const __nv_bfloat16 *kv)
{
    const uint32_t n = P.n_kv * 2 * (ATTN_D / 8), i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t c = i % (ATTN_D / 8), k_or_v = (i / (ATTN_D / 8)) & 1, bh = i / (2 * (ATTN_D / 8));
    const uint32_t b = bh / P.kv_heads, h = bh % P.kv_heads, tk = (P.ctx - 1) % ATTN_PAGE;
    const uint32_t slot = pt[(unsigned long long)bh * P.pages + P.pages - 1];
    const uint4 src = *((const uint4 *)(kv + (size_t)b * 2 * P.kv_heads * ATTN_D + k_or_v * P.kv_heads * ATTN_D +
                                        h * ATTN_D) + c);
    *((uint4 *)(slot_addr<LIN>(v0, v1, n0, slot, k_or_v) + tk * ATTN_D * 2) + c) = src;
}

#endif
