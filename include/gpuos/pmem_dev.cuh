/* SPDX-License-Identifier: Apache-2.0 */
// pmem_dev.cuh: the device side of gpuos partition-local memory (paper 001
// section 7.1), for any .cu file: the view remap and the partition-aware
// persistent runtime. Host side: gpuos/pmem.h. Paper 001: "Dissecting How Die
// Scaling Breaks GPU Fine-grained Scheduling", Fan et al., arXiv:2609.24270,
// https://arxiv.org/abs/2609.24270.
//
//   __global__ void k(gos_prt_table t, gos_pmem_view v0, gos_pmem_view v1, unsigned *ctr)
//   {
//       int p = gos_prt_block_part(t);           // this SM's partition, -1: idle
//       if (p < 0) return;
//       const gos_pmem_view &v = p ? v1 : v0;    // the partition's own data
//       for (unsigned task; (task = gos_prt_next(t, ctr, p)) != GOS_PRT_NONE;) {
//           unsigned long long off = gos_prt_local_index(&t, p, task) * TASK_BYTES;
//           const float4 *w = (const float4 *)gos_pmem_addr(&v, off + 16 * threadIdx.x);
//           ...
//       }
//   }
//
// Launch one block per SM (gridDim = SM count, dynamic shared memory large
// enough that two blocks never share an SM); ctr[0..1] zeroed before each launch.
// A 4 KB unit (the chart's granularity) is contiguous in a view, so a kernel may
// remap once per unit and index inside it.
#pragma once
#include "gpuos/pmem_core.h"

__device__ __forceinline__ unsigned gos_prt_smid()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}

// The partition of the SM this block runs on, or -1 when the SM has no work.
__device__ __forceinline__ int gos_prt_block_part(const gos_prt_table &t)
{
    unsigned s = gos_prt_smid();
    return s < GOS_PRT_MAX_SMS ? t.part_of_sm[s] : -1;
}

// Block-wide (every thread of the block calls it): the block's next task from
// partition p's queue, or GOS_PRT_NONE when the queue is empty. One atomic per
// task, taken by thread 0 and broadcast through shared memory.
__device__ __forceinline__ unsigned gos_prt_next(const gos_prt_table &t, unsigned *ctr, int p)
{
    __shared__ unsigned task;
    __syncthreads(); // everyone has read the previous task
    if (threadIdx.x == 0)
        task = gos_prt_task(&t, (uint32_t)p, atomicAdd(&ctr[p], 1u));
    __syncthreads();
    return task;
}
