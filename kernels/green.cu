/* SPDX-License-Identifier: Apache-2.0 */
// green.cu: the green-context probe (issue 13). Launched with enough dynamic
// shared memory that one block fills an SM, optionally with thread-block clusters.
// Block b records its SM in smids[b]; thread 0 of every block then announces its
// arrival on *arrived and waits until all `total` blocks of the launch have
// arrived or timeout_ns passed; coresident[b] = 1 if all arrived. With one block
// per SM, all blocks arrive only if the launch fits on the SMs at once, so a
// launch of C clusters of K proves (or refutes) that C clusters fit together.
// Blocks then hold their SM for hold_ns (spreading later blocks over all SMs of
// the green context when identifying a group).
#include "gos_ptx.cuh"

extern "C" __global__ void gos_green_probe(int *smids, int *coresident, unsigned *arrived, unsigned total,
                                           unsigned long long timeout_ns, unsigned long long hold_ns)
{
    extern __shared__ unsigned char smem[];
    if (threadIdx.x != 0)
        return;
    smem[0] = 1;
    smids[blockIdx.x] = (int)gos_smid();
    unsigned long long t0 = gos_globaltimer();
    atomicAdd(arrived, 1u);
    int all = 0;
    while (gos_globaltimer() - t0 < timeout_ns) {
        if (atomicAdd(arrived, 0u) >= total) {
            all = 1;
            break;
        }
    }
    coresident[blockIdx.x] = all;
    while (gos_globaltimer() - t0 < hold_ns) {
    }
}
