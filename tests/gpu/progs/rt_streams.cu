/* SPDX-License-Identifier: Apache-2.0 */
// rt_streams.cu: runtime API streams, events and async copies (pinned host
// memory), a cross-stream wait, memset, and a __device__ global written with
// cudaMemcpyToSymbol; built with plain nvcc. stdout is deterministic.
#include <cstdio>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorName(e_));                                            \
            printf("error at %s: %s\n", #x, cudaGetErrorName(e_));                                                    \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

__device__ int scale_g;

__global__ void step(float *x, int n, float k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * k + 1.0f;
}

__global__ void addg(int *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += scale_g;
}

int main(int argc, char **argv)
{
    const int S = 4, n = 1 << 20;
    cudaStream_t s[S];
    cudaEvent_t done[S];
    float *h, *d[S];
    CK(cudaMallocHost(&h, (size_t)S * n * sizeof(float)));
    for (int k = 0; k < S; k++) {
        CK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
        CK(cudaEventCreate(&done[k]));
        CK(cudaMalloc(&d[k], n * sizeof(float)));
        for (int i = 0; i < n; i++)
            h[(size_t)k * n + i] = (float)((i + k) % 97);
    }
    for (int k = 0; k < S; k++) {
        CK(cudaMemcpyAsync(d[k], h + (size_t)k * n, n * sizeof(float), cudaMemcpyHostToDevice, s[k]));
        for (int r = 0; r < 10; r++)
            step<<<n / 256, 256, 0, s[k]>>>(d[k], n, 0.5f + k);
        CK(cudaEventRecord(done[k], s[k]));
    }
    // stream 0 waits for stream 3, then adds stream 3's result into its own
    CK(cudaStreamWaitEvent(s[0], done[S - 1], 0));
    for (int k = 0; k < S; k++)
        CK(cudaMemcpyAsync(h + (size_t)k * n, d[k], n * sizeof(float), cudaMemcpyDeviceToHost, s[k]));
    for (int k = 0; k < S; k++)
        CK(cudaStreamSynchronize(s[k]));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, done[0], done[S - 1]));
    cudaError_t q = cudaStreamQuery(s[1]);
    double sum[S] = {0};
    for (int k = 0; k < S; k++)
        for (int i = 0; i < n; i++)
            sum[k] += h[(size_t)k * n + i];
    for (int k = 0; k < S; k++)
        printf("stream %d sum %.6e\n", k, sum[k]);
    printf("query after sync %s, elapsed finite %d\n", cudaGetErrorName(q), ms == ms);
    CK(cudaMemset(d[0], 0, n * sizeof(float)));
    CK(cudaMemcpy(h, d[0], n * sizeof(float), cudaMemcpyDeviceToHost));
    int nz = 0;
    for (int i = 0; i < n; i++)
        nz += h[i] != 0;
    printf("memset nonzero %d\n", nz);
    fflush(stdout);
    // a __device__ global through cudaMemcpyToSymbol (cuModuleGetGlobal)
    int v = 7, *di, hi[256];
    CK(cudaMalloc(&di, sizeof hi));
    CK(cudaMemset(di, 0, sizeof hi));
    CK(cudaMemcpyToSymbol(scale_g, &v, sizeof v));
    addg<<<1, 256>>>(di, 256);
    CK(cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost));
    printf("global: hi[0]=%d hi[255]=%d\n", hi[0], hi[255]);
    return 0;
}
