/* SPDX-License-Identifier: Apache-2.0 */
// place.cu: pillar-2 kernels (paper 001 section 7.1) on the partition-aware
// persistent runtime of include/gpuos/pmem_dev.cuh. Launched by
// src/device/cuda_place.c with one block per SM; each block works on its SM's
// partition's queue and reads that partition's data through its view.
//
// Every job kernel comes twice: _map remaps each access through the view
// (gos_pmem_addr), _lin addresses linearly (ordinary memory, "without
// placement"). Task bookkeeping (owner, runs) is what the tests check: every
// task exactly once, on an SM of its partition.
#include "gos_ptx.cuh"
#include "gpuos/pmem_dev.cuh"

#define GOS_PJOB_BATCH_MAX 8 // GOS_PJOB_MAX_BATCH of src/device/place_ops.h

template <bool LIN>
__device__ __forceinline__ unsigned long long addr_of(const gos_pmem_view &v, unsigned long long off)
{
    return LIN ? v.base + off : gos_pmem_addr(&v, off);
}

__device__ __forceinline__ void record(unsigned task, unsigned *owner, unsigned *runs, int last_pass)
{
    if (threadIdx.x == 0 && last_pass) {
        owner[task] = gos_prt_smid();
        atomicAdd(&runs[task], 1u);
    }
}

extern "C" __global__ void gos_place_tasks(gos_prt_table t, unsigned *ctr, unsigned *owner, unsigned *runs)
{
    int p = gos_prt_block_part(t);
    if (p < 0)
        return;
    for (unsigned task; (task = gos_prt_next(t, ctr, p)) != GOS_PRT_NONE;)
        record(task, owner, runs, 1);
}

// READ: pass k uses counters ctr[2k], ctr[2k+1]. Each warp reads whole 4 KB
// units of the task: 8 independent 16-byte ld.global.cg per lane.
template <bool LIN>
__device__ void read_job(const gos_prt_table &t, const gos_pmem_view &v0, const gos_pmem_view &v1,
                         unsigned long long task_bytes, int passes, unsigned *ctr, unsigned *owner,
                         unsigned *runs, uint4 *sink)
{
    int p = gos_prt_block_part(t);
    if (p < 0)
        return;
    const gos_pmem_view &v = p ? v1 : v0;
    unsigned warps = blockDim.x / 32, w = threadIdx.x / 32, lane = threadIdx.x & 31;
    uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll 1
    for (int pass = 0; pass < passes; pass++) {
#pragma unroll 1
        for (unsigned task; (task = gos_prt_next(t, ctr + 2 * pass, p)) != GOS_PRT_NONE;) {
            unsigned long long first = (unsigned long long)gos_prt_local_index(&t, p, task) * task_bytes;
#pragma unroll 1
            for (unsigned long long u = w * 4096ull; u < task_bytes; u += warps * 4096ull) {
                uint4 x[8];
                if (LIN || v.shift >= 12) { // the 4 KB unit is contiguous: remap once
                    const uint4 *q = (const uint4 *)addr_of<LIN>(v, first + u) + lane;
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        x[j] = gos_ld_cg_v4(q + j * 32);
                } else {
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        x[j] = gos_ld_cg_v4((const uint4 *)addr_of<LIN>(v, first + u + j * 512 + lane * 16));
                }
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    acc.x ^= x[j].x;
                    acc.y ^= x[j].y;
                    acc.z ^= x[j].z;
                    acc.w ^= x[j].w;
                }
            }
            record(task, owner, runs, pass == passes - 1);
        }
    }
    if ((acc.x & acc.y & acc.z & acc.w) == 0x9e3779b9u) // practically never: keeps the loads
        sink[0] = acc;
}

#define READ_ARGS                                                                                  \
    gos_prt_table t, gos_pmem_view v0, gos_pmem_view v1, unsigned long long task_bytes, int passes,   \
        unsigned *ctr, unsigned *owner, unsigned *runs, uint4 *sink
extern "C" __global__ void gos_place_read_map(READ_ARGS)
{
    read_job<false>(t, v0, v1, task_bytes, passes, ctr, owner, runs, sink);
}
extern "C" __global__ void gos_place_read_lin(READ_ARGS)
{
    read_job<true>(t, v0, v1, task_bytes, passes, ctr, owner, runs, sink);
}

// GEMV: y[b][row] = sum_k W[row][k] x[b][k], x staged in shared memory. A warp
// computes one row at a time: lanes stride over the row in float4.
template <bool LIN>
__device__ void gemv_job(const gos_prt_table &t, const gos_pmem_view &v0, const gos_pmem_view &v1,
                         int cols, int batch, int rows_per_task, const float *x, float *y,
                         unsigned *ctr, unsigned *owner, unsigned *runs)
{
    extern __shared__ float4 xs[];
    int p = gos_prt_block_part(t);
    if (p < 0)
        return;
    const gos_pmem_view &v = p ? v1 : v0;
    for (int i = threadIdx.x; i < batch * cols / 4; i += blockDim.x)
        xs[i] = ((const float4 *)x)[i];
    __syncthreads();
    unsigned warps = blockDim.x / 32, w = threadIdx.x / 32, lane = threadIdx.x & 31;
    unsigned long long row_bytes = 4ull * cols, total_rows = (unsigned long long)t.n_tasks * rows_per_task;
    int c4 = cols / 4;
#pragma unroll 1
    for (unsigned task; (task = gos_prt_next(t, ctr, p)) != GOS_PRT_NONE;) {
        unsigned long long lrow0 = (unsigned long long)gos_prt_local_index(&t, p, task) * rows_per_task;
#pragma unroll 1
        for (int r = w; r < rows_per_task; r += warps) {
            float acc[GOS_PJOB_BATCH_MAX];
#pragma unroll
            for (int b = 0; b < GOS_PJOB_BATCH_MAX; b++)
                acc[b] = 0.f;
            unsigned long long ro = (lrow0 + r) * row_bytes;
            // 4 KB chunks of the row (cols is a multiple of 128 floats = 512 B;
            // a chunk is contiguous in the view when the granularity is >= 4 KB):
            // one remap per chunk, 8 independent float4 loads per lane.
#pragma unroll 1
            for (int c0 = 0; c0 < c4; c0 += 256) {
                int nk = c4 - c0 < 256 ? (c4 - c0) / 32 : 8;
                const float4 *q = (const float4 *)addr_of<LIN>(v, ro + 16ull * c0);
                bool whole = LIN || v.shift >= 12;
                float4 wv[8];
#pragma unroll
                for (int i = 0; i < 8; i++)
                    if (i < nk)
                        wv[i] = whole ? q[i * 32 + lane]
                                      : *(const float4 *)addr_of<LIN>(v, ro + 16ull * (c0 + i * 32 + lane));
#pragma unroll
                for (int i = 0; i < 8; i++)
                    if (i < nk) {
                        int k = c0 + i * 32 + lane;
#pragma unroll
                        for (int b = 0; b < GOS_PJOB_BATCH_MAX; b++)
                            if (b < batch) {
                                float4 xv = xs[b * c4 + k];
                                acc[b] += wv[i].x * xv.x + wv[i].y * xv.y + wv[i].z * xv.z + wv[i].w * xv.w;
                            }
                    }
            }
#pragma unroll
            for (int b = 0; b < GOS_PJOB_BATCH_MAX; b++) {
                float a = acc[b];
                for (int o = 16; o > 0; o >>= 1)
                    a += __shfl_xor_sync(0xffffffffu, a, o);
                if (lane == 0 && b < batch)
                    y[b * total_rows + (unsigned long long)task * rows_per_task + r] = a;
            }
        }
        record(task, owner, runs, 1);
    }
}

#define GEMV_ARGS                                                                                  \
    gos_prt_table t, gos_pmem_view v0, gos_pmem_view v1, int cols, int batch, int rows_per_task,      \
        const float *x, float *y, unsigned *ctr, unsigned *owner, unsigned *runs
extern "C" __global__ void gos_place_gemv_map(GEMV_ARGS)
{
    gemv_job<false>(t, v0, v1, cols, batch, rows_per_task, x, y, ctr, owner, runs);
}
extern "C" __global__ void gos_place_gemv_lin(GEMV_ARGS)
{
    gemv_job<true>(t, v0, v1, cols, batch, rows_per_task, x, y, ctr, owner, runs);
}

// Fills W of partition p's tasks with gos_pmem_pattern_w (any grid).
template <bool LIN>
__device__ void gemv_fill(gos_prt_table t, gos_pmem_view v, int p, int cols, int rows_per_task)
{
    unsigned long long n = (unsigned long long)t.count[p] * rows_per_task * cols;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long lrow = i / cols, k = i % cols;
        unsigned long long row = (unsigned long long)t.first[p] * rows_per_task + lrow;
        *(float *)addr_of<LIN>(v, 4 * i) = gos_pmem_pattern_w(row, k);
    }
}
extern "C" __global__ void gos_place_gemv_fill_map(gos_prt_table t, gos_pmem_view v, int p, int cols, int rpt)
{
    gemv_fill<false>(t, v, p, cols, rpt);
}
extern "C" __global__ void gos_place_gemv_fill_lin(gos_prt_table t, gos_pmem_view v, int p, int cols, int rpt)
{
    gemv_fill<true>(t, v, p, cols, rpt);
}

// CHASE: node i is the 128-byte line at logical offset 128 i; it holds its
// successor's index.
template <bool LIN>
__device__ void chase_fill(gos_pmem_view v, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        *(unsigned long long *)addr_of<LIN>(v, 128 * i) = gos_pmem_chase_next(i, n);
}
extern "C" __global__ void gos_place_chase_fill_map(gos_pmem_view v, unsigned long long n) { chase_fill<false>(v, n); }
extern "C" __global__ void gos_place_chase_fill_lin(gos_pmem_view v, unsigned long long n) { chase_fill<true>(v, n); }

__device__ __forceinline__ unsigned long long ld_cg_u64(unsigned long long a)
{
    unsigned long long r;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(r) : "l"(a));
    return r;
}

template <bool LIN>
__device__ void chase_job(const gos_prt_table &t, const gos_pmem_view &v0, const gos_pmem_view &v1,
                          unsigned long long n, unsigned long long steps, unsigned long long seed,
                          unsigned long long *sink)
{
    int p = gos_prt_block_part(t);
    if (p < 0 || threadIdx.x != 0)
        return;
    const gos_pmem_view &v = p ? v1 : v0;
    // a different start every launch: a launch walks lines the previous ones did not
    unsigned long long i = ((gos_prt_smid() + 1ull) * 0x9E3779B97F4A7C15ull + seed * 0x632BE59BD9B4E019ull) & (n - 1);
#pragma unroll 1
    for (unsigned long long k = 0; k < steps; k++)
        i = ld_cg_u64(addr_of<LIN>(v, 128 * i));
    sink[gos_prt_smid()] = i;
}
#define CHASE_ARGS                                                                                 \
    gos_prt_table t, gos_pmem_view v0, gos_pmem_view v1, unsigned long long n, unsigned long long steps, \
        unsigned long long seed, unsigned long long *sink
extern "C" __global__ void gos_place_chase_map(CHASE_ARGS) { chase_job<false>(t, v0, v1, n, steps, seed, sink); }
extern "C" __global__ void gos_place_chase_lin(CHASE_ARGS) { chase_job<true>(t, v0, v1, n, steps, seed, sink); }

// Scattered copies: unit i of the contiguous staging buffer <-> address addr[i].
extern "C" __global__ void gos_place_scatter(const unsigned long long *addr, unsigned long long n,
                                             unsigned unit, uint4 *stage, int to_device)
{
    unsigned per = unit / 16;
    for (unsigned long long i = blockIdx.x; i < n; i += gridDim.x) {
        uint4 *dev = (uint4 *)addr[i], *st = stage + i * per;
        for (unsigned k = threadIdx.x; k < per; k += blockDim.x) {
            if (to_device)
                dev[k] = st[k];
            else
                st[k] = dev[k];
        }
    }
}
