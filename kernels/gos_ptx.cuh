/* SPDX-License-Identifier: Apache-2.0 */
// gos_ptx.cuh: PTX special registers and cache-controlled loads shared by kernels.
#pragma once
#include <stdint.h>

__device__ __forceinline__ unsigned gos_smid()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}

// %globaltimer: nanoseconds, GPU-wide; 32 ns steps on the H200 (H200-NOTES).
__device__ __forceinline__ unsigned long long gos_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// 16-byte load cached in L2 only (bypasses L1), as an opaque asm so the compiler
// keeps every load.
__device__ __forceinline__ uint4 gos_ld_cg_v4(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

struct gos_sm_mask {
    unsigned w[8]; // bit s set: SM s takes part (SM ids < 256)
};

__device__ __forceinline__ bool gos_sm_in(const gos_sm_mask &m, unsigned s)
{
    return s < 256 && ((m.w[s >> 5] >> (s & 31)) & 1u);
}
