/* SPDX-License-Identifier: Apache-2.0 */
// dvfs.cu: kernels of pillar 1c (paper 000, section V).
#include "gos_ptx.cuh"

// The timing workload: launched with one block per SM (large dynamic shared
// memory keeps a second block off every SM), 4 warps per block so that each of
// the SM's four schedulers has a dependent FMA chain to run. Every iteration is
// `work` dependent FMAs per thread between two %globaltimer reads: the first
// and the last instruction of the iteration (paper 000 section V). Predicated
// asm ties the timer reads to the chain by data dependences (below), so neither
// nvcc nor ptxas can move FMAs across the reads. Lane
// 0 of warp 0 stores the pair; slot_of_sm[%smid] says where (-1: not recorded).
// A block that finds its SM already claimed (should not happen) only loads.
extern "C" __global__ void __launch_bounds__(128, 1)
    gos_dvfs_workload(unsigned long long *start, unsigned long long *end, const int *slot_of_sm,
                      int *claimed, int iters, int work, float *sink)
{
    extern __shared__ unsigned char smem[];
    unsigned s = gos_smid();
    __shared__ int slot;
    if (threadIdx.x == 0) {
        int sl = s < 256 ? slot_of_sm[s] : -1;
        if (sl >= 0 && atomicExch(&claimed[sl], 1) != 0)
            sl = -1;
        slot = sl;
        smem[0] = 0;
    }
    __syncthreads();
    const bool rec = slot >= 0 && threadIdx.x == 0;
    unsigned long long *st = start + (size_t)(slot < 0 ? 0 : slot) * iters;
    unsigned long long *en = end + (size_t)(slot < 0 ? 0 : slot) * iters;
    float a = 1.0f + threadIdx.x * 1e-7f, b = 0.999999f, c = 1e-7f;
#pragma unroll 1
    for (int it = 0; it < iters; it++) {
        unsigned long long t0, t1;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        // the chain depends on t0 (never taken: the timer is never 0) ...
        asm volatile("{ .reg .pred p; setp.eq.u64 p, %1, 0; @p add.f32 %0, %0, 0f3F800000; }"
                     : "+f"(a)
                     : "l"(t0));
#pragma unroll 1
        for (int k = 0; k < work; k += 8) {
#pragma unroll
            for (int u = 0; u < 8; u++)
                asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(a) : "f"(b), "f"(c));
        }
        // ... and the second read depends on the chain's last result (a is
        // never NaN), so neither can move across the other even in SASS.
        asm volatile("{ .reg .pred p; setp.nan.f32 p, %1, %1; @p mov.u64 %0, 0; @!p mov.u64 %0, %%globaltimer; }"
                     : "=l"(t1)
                     : "f"(a));
        if (rec) {
            st[it] = t0;
            en[it] = t1;
        }
    }
    if (a == 12345.0f)
        sink[0] = a; // never true; keeps the chain alive
}

// CPU-GPU timer exchange (IEEE 1588 style): for i = 0..n-1 the host writes
// cmd = i + 1 into mapped host memory; the kernel, polling it, reads
// %globaltimer and writes it to reply[i] (mapped as well), then fences so the
// host sees it at once. The host brackets each exchange with its own clock.
// Gives up after timeout_ns of waiting so a lost host cannot hang the GPU.
extern "C" __global__ void gos_dvfs_timesync(volatile unsigned *cmd, volatile unsigned long long *reply,
                                             int n, unsigned long long timeout_ns)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    unsigned long long t_wait = gos_globaltimer();
    for (int i = 0; i < n; i++) {
        while (cmd[0] != (unsigned)(i + 1)) {
            if (gos_globaltimer() - t_wait > timeout_ns)
                return;
        }
        unsigned long long t = gos_globaltimer();
        reply[i] = t;
        __threadfence_system();
        t_wait = t;
    }
}
