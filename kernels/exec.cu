/* SPDX-License-Identifier: Apache-2.0 */
// exec.cu: kernels of pillar 3 (paper 002): the built-in module "builtin" that the
// daemon offers its clients (gpuos_module_load_builtin(g, "builtin", ...)) and the
// benchmark uses for Gdev's table-1 workloads. Pointer parameters are passed as
// 64-bit integers so that the packed-parameter layout is the same on every
// backend (the simulated device's built-in module has the same names and
// signatures and models each kernel's work as a duration).
#include "gos_ptx.cuh"

// Does nothing: the launch overhead alone.
extern "C" __global__ void empty() {}

// The GPU's clock (%globaltimer, ns) into *p when it runs, in queue order: the
// GPU timestamps of gpuos's libcuda events (cuEventRecord). One thread.
extern "C" __global__ void stamp(unsigned long long p)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *(unsigned long long *)p = gos_globaltimer();
}

// Every block spins for ns nanoseconds of %globaltimer: a kernel of a given
// duration (fairness experiments, Gdev's bursty non-preemptive work).
extern "C" __global__ void sleep_ns(unsigned long long ns)
{
    unsigned long long t0 = gos_globaltimer();
    while (gos_globaltimer() - t0 < ns) {
    }
}

// Gdev's LOOP: long-loop compute without data. The result is stored only if it
// hits an impossible value, so the loop cannot be optimised away.
extern "C" __global__ void loop(unsigned long long iters)
{
    float x = threadIdx.x * 1e-3f, y = 1.0f;
    for (unsigned long long i = 0; i < iters; i++) {
        y = fmaf(y, 0.999999f, x);
        x = fmaf(x, 1.000001f, -1e-7f);
    }
    if (y == -12345.0f)
        *(volatile float *)0 = y;
}

// Gdev's MADD: c = a + b for n x n floats.
extern "C" __global__ void madd(unsigned long long a, unsigned long long b, unsigned long long c, unsigned n)
{
    const float *A = (const float *)a, *B = (const float *)b;
    float *C = (float *)c;
    size_t total = (size_t)n * n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        C[i] = A[i] + B[i];
}

// Gdev's MMUL: c = a x b for n x n floats (16x16 shared-memory tiles; n a
// multiple of 16; launch grid (n/16, n/16), block (16, 16)).
extern "C" __global__ void mmul(unsigned long long a, unsigned long long b, unsigned long long c, unsigned n)
{
    __shared__ float ta[16][16], tb[16][16];
    const float *A = (const float *)a, *B = (const float *)b;
    float *C = (float *)c;
    unsigned row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0;
    for (unsigned k = 0; k < n; k += 16) {
        ta[threadIdx.y][threadIdx.x] = A[(size_t)row * n + k + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = B[(size_t)(k + threadIdx.y) * n + col];
        __syncthreads();
        for (int j = 0; j < 16; j++)
            acc += ta[threadIdx.y][j] * tb[j][threadIdx.x];
        __syncthreads();
    }
    C[(size_t)row * n + col] = acc;
}

// Writes count 32-bit words of value at p (the simulated "fill").
extern "C" __global__ void fill(unsigned long long p, unsigned value, unsigned pad, unsigned long long count)
{
    unsigned *P = (unsigned *)p;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x)
        P[i] = value;
}

// Reads the unmapped address 0x10: CUDA_ERROR_ILLEGAL_ADDRESS, sticky for the
// context (the fault-containment tests of issue 9; the simulated "fault").
extern "C" __global__ void fault()
{
    volatile unsigned *p = (volatile unsigned *)0x10;
    if (threadIdx.x == 0 && blockIdx.x == 0)
        p[0] = p[0] + 1;
}

// Copies count words src -> dst by raw address, unchecked: what a tenant's own
// kernel can do (the isolation probes of issue 9).
extern "C" __global__ void xcopy(unsigned long long dst, unsigned long long src, unsigned long long count)
{
    unsigned *D = (unsigned *)dst;
    const unsigned *S = (const unsigned *)src;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x)
        D[i] = S[i];
}

// Writes (check = 0) or checks (check = 1) count 32-bit words at p against the
// pattern (i * 2654435761) ^ seed; a check adds its mismatches to the 64-bit
// counter at out (the byte-exact swap turns of issue 10: every word of every
// buffer written and verified on the device).
extern "C" __global__ void pattern(unsigned long long p, unsigned seed, unsigned check, unsigned long long count,
                                   unsigned long long out)
{
    unsigned *P = (unsigned *)p;
    unsigned long long bad = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned w = (unsigned)(i * 2654435761ull) ^ seed;
        if (check)
            bad += P[i] != w;
        else
            P[i] = w;
    }
    if (check && bad)
        atomicAdd((unsigned long long *)out, bad);
}
