/* SPDX-License-Identifier: Apache-2.0 */
// numa_probe.cuh: single-line latency probes (paper 001 appendix C; H200-NOTES).
//
// Each probe is one asm volatile block so the compiler cannot move the second
// clock read above the timed load: the loaded value is stored to shared memory
// before the clock is read again, and the store cannot issue before the load's
// data has arrived. Check with `cuobjdump -sass build/kernels/numa.fatbin`:
// between the two CS2R ...SR_CLOCK reads there must be an LDG.E.STRONG.GPU (the
// .cg load) followed by its STS.
//
// ptxas schedules inside an asm block too: on the H200 it issued the discard
// (CCTL.E.RML2) while the warm-up load was still in flight, so the line could be
// refilled after the discard and the "HBM" sample became an L2 hit. The discard's
// address is therefore made to depend on the warm-up value (p + (w & zero), with
// `zero` a kernel argument that is always 0, which ptxas cannot fold), and a
// GPU-scope fence separates the discard from the timed load.
#pragma once
#include <stdint.h>

// Same function as gos_sweep_offset() in src/device/mem_ops.h: keep in sync.
__device__ __forceinline__ unsigned long long numa_sweep_offset(unsigned long long i,
                                                                unsigned long long stride)
{
    unsigned long long lines = stride / 128ull;
    if (lines <= 1)
        return i * stride;
    unsigned long long x = i * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return i * stride + (x % lines) * 128ull;
}

__device__ __forceinline__ unsigned numa_smem_addr(unsigned *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// Loads the line (ld.global.cg: cached in L2, not L1) and consumes the value.
__device__ __forceinline__ void numa_touch(unsigned long long p, unsigned *smem)
{
    asm volatile("{\n\t.reg .u32 w;\n\t"
                 "ld.global.cg.u32 w, [%0];\n\t"
                 "st.shared.u32 [%1], w;\n\t}"
                 :
                 : "l"(p), "r"(numa_smem_addr(smem))
                 : "memory");
}

// Drops the 128-byte line from L2 without writing it back.
__device__ __forceinline__ void numa_discard(unsigned long long p)
{
    asm volatile("discard.global.L2 [%0], 128;\n\tmembar.gl;" : : "l"(p) : "memory");
}

// HBM round trip (appendix C.1): warm (line and TLB entry), discard from L2,
// then time a second ld.global.cg that must go to HBM.
__device__ __forceinline__ unsigned long long numa_time_hbm(unsigned long long p, unsigned *smem,
                                                            unsigned zero)
{
    unsigned long long dt;
    asm volatile("{\n\t.reg .u32 w, z;\n\t.reg .u64 t0, t1, zz, q;\n\t"
                 "ld.global.cg.u32 w, [%1];\n\t"
                 "st.shared.u32 [%2], w;\n\t"
                 "and.b32 z, w, %3;\n\t"
                 "cvt.u64.u32 zz, z;\n\t"
                 "add.u64 q, %1, zz;\n\t"
                 "discard.global.L2 [q], 128;\n\t"
                 "membar.gl;\n\t"
                 "mov.u64 t0, %%clock64;\n\t"
                 "ld.global.cg.u32 w, [%1];\n\t"
                 "st.shared.u32 [%2], w;\n\t"
                 "mov.u64 t1, %%clock64;\n\t"
                 "sub.u64 %0, t1, t0;\n\t}"
                 : "=l"(dt)
                 : "l"(p), "r"(numa_smem_addr(smem)), "r"(zero)
                 : "memory");
    return dt;
}

// L2-hit round trip (appendix C.2): one timed ld.global.cg of a line already in L2.
__device__ __forceinline__ unsigned long long numa_time_hit(unsigned long long p, unsigned *smem)
{
    unsigned long long dt;
    asm volatile("{\n\t.reg .u32 w;\n\t.reg .u64 t0, t1;\n\t"
                 "membar.gl;\n\t"
                 "mov.u64 t0, %%clock64;\n\t"
                 "ld.global.cg.u32 w, [%1];\n\t"
                 "st.shared.u32 [%2], w;\n\t"
                 "mov.u64 t1, %%clock64;\n\t"
                 "sub.u64 %0, t1, t0;\n\t}"
                 : "=l"(dt)
                 : "l"(p), "r"(numa_smem_addr(smem))
                 : "memory");
    return dt;
}

// Eight independent 16-byte ld.global.cg at q, q + 32, ..., q + 224 (uint4 units)
// in one asm statement, so all eight are in flight before any result is used.
__device__ __forceinline__ void numa_ld8_cg(const uint4 *q, uint4 *v)
{
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%32];\n\t"
                 "ld.global.cg.v4.u32 {%4,%5,%6,%7}, [%32+512];\n\t"
                 "ld.global.cg.v4.u32 {%8,%9,%10,%11}, [%32+1024];\n\t"
                 "ld.global.cg.v4.u32 {%12,%13,%14,%15}, [%32+1536];\n\t"
                 "ld.global.cg.v4.u32 {%16,%17,%18,%19}, [%32+2048];\n\t"
                 "ld.global.cg.v4.u32 {%20,%21,%22,%23}, [%32+2560];\n\t"
                 "ld.global.cg.v4.u32 {%24,%25,%26,%27}, [%32+3072];\n\t"
                 "ld.global.cg.v4.u32 {%28,%29,%30,%31}, [%32+3584];"
                 : "=r"(v[0].x), "=r"(v[0].y), "=r"(v[0].z), "=r"(v[0].w),
                   "=r"(v[1].x), "=r"(v[1].y), "=r"(v[1].z), "=r"(v[1].w),
                   "=r"(v[2].x), "=r"(v[2].y), "=r"(v[2].z), "=r"(v[2].w),
                   "=r"(v[3].x), "=r"(v[3].y), "=r"(v[3].z), "=r"(v[3].w),
                   "=r"(v[4].x), "=r"(v[4].y), "=r"(v[4].z), "=r"(v[4].w),
                   "=r"(v[5].x), "=r"(v[5].y), "=r"(v[5].z), "=r"(v[5].w),
                   "=r"(v[6].x), "=r"(v[6].y), "=r"(v[6].z), "=r"(v[6].w),
                   "=r"(v[7].x), "=r"(v[7].y), "=r"(v[7].z), "=r"(v[7].w)
                 : "l"(q));
}
