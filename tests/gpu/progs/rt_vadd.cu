/* SPDX-License-Identifier: Apache-2.0 */
// rt_vadd.cu: vector add with the CUDA runtime, as most CUDA programs are
// written (cudaMalloc, cudaMemcpy, <<<>>>, streams, events), built with plain
// nvcc (static cudart).
#include <cstdio>
#include <vector>

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s failed: %s (%s)\n", #x, cudaGetErrorName(e_), cudaGetErrorString(e_));               \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main()
{
    const int n = 1 << 22;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f;
        b[i] = (float)(i % 777) * 0.25f;
    }
    float *da, *db, *dc;
    CK(cudaMalloc(&da, n * sizeof(float)));
    CK(cudaMalloc(&db, n * sizeof(float)));
    CK(cudaMalloc(&dc, n * sizeof(float)));
    cudaStream_t s;
    cudaEvent_t e0, e1;
    CK(cudaStreamCreate(&s));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpyAsync(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(e0, s));
    vadd<<<(n + 255) / 256, 256, 0, s>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1, s));
    CK(cudaMemcpyAsync(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += c[i] != a[i] + b[i];
    printf("rt_vadd n=%d mismatches=%d c[n-1]=%g\n", n, bad, c[n - 1]);
    return bad != 0;
}
