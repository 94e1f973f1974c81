/* SPDX-License-Identifier: Apache-2.0 */
// legacy.cu: kernels of drv_legacy.c (the CUDA 4 era execution control API),
// built by nvcc into a cubin FILE that the program loads by path (cuModuleLoad).
// The parameters are plain scalars and pointers laid out as the CUDA 4 API
// programs lay them out by hand (cuParamSetv / Seti / Setf at explicit offsets).
extern "C" __global__ void scale_add(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + blockIdx.y * gridDim.x * blockDim.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// Block sums through dynamic shared memory (cuFuncSetSharedSize).
extern "C" __global__ void block_sum(const float *x, float *out, int n)
{
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (!threadIdx.x)
        out[blockIdx.x] = s[0];
}
