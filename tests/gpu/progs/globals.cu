/* SPDX-License-Identifier: Apache-2.0 */
// globals.cu: a module with 1 GiB of __device__ arrays (issue 44.2; the
// device-machine check tests/gpu/module_globals.sh loads it on vGPUs through
// gpuos's libcuda, via tests/gpu/progs/drv_globals.c). Build:
//   nvcc -cubin -arch=sm_90 -o globals.cubin globals.cu   (or -fatbin, -ptx)
#define BIG (1ull << 30)
__device__ unsigned char big[BIG];
__device__ unsigned long long bad;

__device__ __forceinline__ unsigned char want(unsigned long long i, unsigned seed)
{
    return (unsigned char)((i * 2654435761ull + seed) >> 13);
}

extern "C" __global__ void fill(unsigned seed)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < BIG;
         i += (unsigned long long)gridDim.x * blockDim.x)
        big[i] = want(i, seed);
}

extern "C" __global__ void check(unsigned seed)
{
    unsigned long long n = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < BIG;
         i += (unsigned long long)gridDim.x * blockDim.x)
        n += big[i] != want(i, seed);
    if (n)
        atomicAdd(&bad, n);
}
