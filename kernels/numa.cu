/* SPDX-License-Identifier: Apache-2.0 */
// numa.cu: pillar-1b kernels (paper 001 section 6, appendix C): latency probes of
// single lines from chosen SMs, the page-classification sweep over every SM, and
// the read-bandwidth kernel over a list of 4 KB pages. Launched by
// src/device/cuda_mem.c; one block per SM (dynamic shared memory sized so), the
// block decides from %smid whether and what it works on.
#include "gos_ptx.cuh"
#include "numa_probe.cuh"

// Operations of gos_numa_probe (cuda_mem.c uses the same numbers).
enum { OP_TOUCH = 0, OP_DISCARD = 1, OP_HIT = 2, OP_HBM = 3 };

// One thread of the block on SM s with slot k = slot_of_sm[s] >= 0 walks
// addrs[k * per_sm .. (k + 1) * per_sm) doing `op`; timed ops write cycles to
// out[] at the same index. done[k] records that slot k ran (a second block that
// lands on the same SM does nothing).
extern "C" __global__ void gos_numa_probe(const unsigned long long *addrs, int per_sm,
                                          const int *slot_of_sm, int op, unsigned *out, int *done,
                                          unsigned zero)
{
    extern __shared__ unsigned smem[];
    if (threadIdx.x != 0)
        return;
    unsigned s = gos_smid();
    int k = s < 256 ? slot_of_sm[s] : -1;
    if (k < 0 || atomicExch(&done[k], 1) != 0)
        return;
    const unsigned long long *a = addrs + (size_t)k * per_sm;
    unsigned *o = out + (size_t)k * per_sm;
#pragma unroll 1
    for (int i = 0; i < per_sm; i++) {
        unsigned long long p = a[i];
        switch (op) {
        case OP_TOUCH:
            numa_touch(p, smem);
            break;
        case OP_DISCARD:
            numa_discard(p);
            break;
        case OP_HIT:
            o[i] = (unsigned)numa_time_hit(p, smem);
            break;
        default:
            o[i] = (unsigned)numa_time_hbm(p, smem, zero);
            break;
        }
    }
}

// The classification sweep: units i in [0, n) handed out in chunks of 64 to
// whichever SM of `mask` asks (one prober per SM; blocks elsewhere exit); each
// unit's line (numa_sweep_offset,
// the same function as gos_sweep_offset in mem_ops.h) is probed `samples` times
// in HBM mode and the minimum kept: out[i] = min(cycles, 0xffff) | smid << 16.
extern "C" __global__ void gos_numa_sweep(unsigned long long base, unsigned long long n,
                                          unsigned long long stride, int samples, unsigned *out,
                                          unsigned long long *next, gos_sm_mask mask, unsigned zero)
{
    extern __shared__ unsigned smem[];
    if (threadIdx.x != 0)
        return;
    unsigned s = gos_smid();
    if (!gos_sm_in(mask, s))
        return;
    for (;;) {
        unsigned long long first = atomicAdd(next, 64ull);
        if (first >= n)
            return;
        unsigned long long last = first + 64 < n ? first + 64 : n;
#pragma unroll 1
        for (unsigned long long i = first; i < last; i++) {
            unsigned long long p = base + numa_sweep_offset(i, stride);
            unsigned long long best = ~0ull;
#pragma unroll 1
            for (int k = 0; k < samples; k++) {
                unsigned long long c = numa_time_hbm(p, smem, zero);
                best = c < best ? c : best;
            }
            out[i] = (unsigned)(best > 0xffff ? 0xffff : best) | (s << 16);
        }
    }
}

// Read bandwidth: blocks on SMs in `mask` take a rank among the active blocks;
// their warps share out pages[] (4 KB each, from base), each lane issuing eight
// independent 16-byte ld.global.cg per page (H200-NOTES: one load in flight
// per thread does not saturate an SM). `passes` sweeps over the list; pass k
// starts k * skew pages further on (modulo the list), so with skew != 0 a
// page's reader changes from pass to pass (every SM reads the whole set), with
// skew == 0 each page always has the same reader.
extern "C" __global__ void gos_numa_read_bw(unsigned long long base, const unsigned *pages,
                                            int n_pages, int passes, gos_sm_mask mask,
                                            int n_active, unsigned *rank_ctr, uint4 *sink, int skew)
{
    __shared__ unsigned rank;
    unsigned s = gos_smid();
    if (!gos_sm_in(mask, s))
        return;
    if (threadIdx.x == 0)
        rank = atomicAdd(rank_ctr, 1u);
    __syncthreads();
    if (rank >= (unsigned)n_active) // a second block on the same SM: stay idle
        return;
    unsigned warps = blockDim.x / 32, lane = threadIdx.x & 31;
    unsigned gw = rank * warps + threadIdx.x / 32, stride = (unsigned)n_active * warps;
    uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll 1
    for (int pass = 0; pass < passes; pass++) {
        unsigned off = (unsigned)(((unsigned long long)pass * (unsigned)skew) % (unsigned)n_pages);
#pragma unroll 1
        for (unsigned i = gw; i < (unsigned)n_pages; i += stride) {
            unsigned p = i + off < (unsigned)n_pages ? i + off : i + off - (unsigned)n_pages;
            const uint4 *q = (const uint4 *)(base + (unsigned long long)pages[p] * 4096ull) + lane;
            uint4 v[8];
            numa_ld8_cg(q, v);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                acc.x ^= v[j].x;
                acc.y ^= v[j].y;
                acc.z ^= v[j].z;
                acc.w ^= v[j].w;
            }
        }
    }
    if ((acc.x & acc.y & acc.z & acc.w) == 0x9e3779b9u) // practically never: keeps the loads
        sink[0] = acc;
}
