/* SPDX-License-Identifier: Apache-2.0 */
// topology.cu: kernels of pillar 1a (paper 001, section 5.1).
#include "gos_ptx.cuh"

// Cluster probing (phase 1). Launched with thread-block clusters and enough
// dynamic shared memory that one block fills an SM. Each block records its SM and
// then holds the SM for spin_ns plus a per-block, per-launch pseudo-random extra,
// so that all clusters of a wave are co-resident and later waves land on SMs in
// an order that changes from launch to launch.
extern "C" __global__ void gos_cluster_probe(int *smids, unsigned long long spin_ns, unsigned seed)
{
    extern __shared__ unsigned char smem[];
    if (threadIdx.x == 0) {
        smids[blockIdx.x] = (int)gos_smid();
        smem[0] = (unsigned char)seed;
        unsigned h = (blockIdx.x + 1) * 2654435761u ^ seed * 0x9e3779b9u;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        unsigned long long t0 = gos_globaltimer(), dur = spin_ns + h % (spin_ns + 1);
        while (gos_globaltimer() - t0 < dur) {
        }
    }
}

// L2 bandwidth (phase 2). One block per SM (large dynamic shared memory); blocks
// on SMs outside `mask` exit at once. All chosen SMs read during one common
// window: the first block to arrive sets the start lead_ns ahead (atomicCAS on
// *t_start, zeroed by the host), every block spins until then and reads until
// start + window_ns, counting its bytes. Each thread keeps eight independent
// 16-byte ld.global.cg in flight (H200-NOTES: one in flight does not saturate an
// SM). The buffer (n_chunks chunks of 8 x blockDim vectors) is larger than L1 and
// smaller than L2; each SM starts at its own chunk so that no two SMs request the
// same lines at the same time (identical lines in lock-step cap the whole chip
// near 1.3 TB/s on the H200, which hides the per-GPC ports). bytes[sm] receives
// the bytes SM sm read inside the window.
extern "C" __global__ void __launch_bounds__(1024, 1)
    gos_l2_bandwidth(const uint4 *buf, unsigned n_chunks, gos_sm_mask mask,
                     unsigned long long lead_ns, unsigned long long window_ns,
                     unsigned long long *t_start, unsigned long long *bytes, unsigned *sink)
{
    extern __shared__ unsigned char smem[];
    __shared__ unsigned long long start;
    __shared__ unsigned long long total;
    unsigned s = gos_smid();
    if (!gos_sm_in(mask, s))
        return;
    if (threadIdx.x == 0) {
        unsigned long long now = gos_globaltimer();
        unsigned long long prev = atomicCAS(t_start, 0ULL, now + lead_ns);
        start = prev ? prev : now + lead_ns;
        total = 0;
        smem[0] = 1;
    }
    __syncthreads();
    const unsigned long long t0 = start, t1 = start + window_ns;
    const unsigned chunk_vecs = blockDim.x * 8;
    unsigned chunk = (s * 37u) % n_chunks;
    unsigned acc = 0;
    unsigned long long iters = 0;
    while (gos_globaltimer() < t0) {
    }
#pragma unroll 1
    while (gos_globaltimer() < t1) {
        const uint4 *p = buf + (size_t)chunk * chunk_vecs + threadIdx.x;
        uint4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            v[k] = gos_ld_cg_v4(p + k * blockDim.x);
#pragma unroll
        for (int k = 0; k < 8; k++)
            acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
        chunk = chunk + 1 == n_chunks ? 0 : chunk + 1;
        iters++;
    }
    atomicAdd(&total, iters * 8ull * 16ull);
    __syncthreads();
    if (threadIdx.x == 0)
        bytes[s] = total;
    if (acc == 0x9e3779b9u) // never true for our data; keeps the loads alive
        sink[0] = acc;
}
