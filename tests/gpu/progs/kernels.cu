/* SPDX-License-Identifier: Apache-2.0 */
// kernels.cu: the kernels of the Driver API test programs (tests/gpu/progs/),
// built with plain nvcc into a fatbin that the programs load with
// cuModuleLoadData, as Driver API users do.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

#define TILE 32
// C = A * B, n x n, row-major, shared-memory tiles.
extern "C" __global__ void matmul(const float *A, const float *B, float *C, int n)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = row < n && t + threadIdx.x < n ? A[row * n + t + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = col < n && t + threadIdx.y < n ? B[(t + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n)
        C[row * n + col] = acc;
}

// y = a * x + y, then a few dependent steps: work for the stream test.
extern "C" __global__ void saxpy_iter(float a, const float *x, float *y, int n, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = y[i];
    for (int k = 0; k < iters; k++)
        v = a * x[i] + v * 0.5f;
    y[i] = v;
}

// Each block writes its rank in the cluster, the cluster's id and a value read
// from the distributed shared memory of the cluster's first block.
extern "C" __global__ void cluster_info(int *out)
{
    __shared__ int token;
    cg::cluster_group cl = cg::this_cluster();
    if (threadIdx.x == 0)
        token = 1000 + (int)blockIdx.x;
    cl.sync();
    int *first = cl.map_shared_rank(&token, 0);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x + 0] = (int)cl.block_rank();
        out[3 * blockIdx.x + 1] = (int)cl.num_blocks();
        out[3 * blockIdx.x + 2] = *first;
    }
    cl.sync();
}
