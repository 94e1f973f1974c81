/* SPDX-License-Identifier: Apache-2.0 */
// rt_gdev.cu: our own equivalents of Gdev's standalone benchmarks (seed 002:
// madd, mmul, loop, memcpy), written as ordinary CUDA runtime programs and
// built with plain nvcc. `rt_gdev TEST N [REPS]`: stdout is deterministic (a
// checksum of the result, compared native vs gpuos run); the wall time of the
// timed part goes to stderr as "wall_s X".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorName(e_));                                            \
            printf("error %s\n", cudaGetErrorName(e_));                                                               \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

__global__ void madd(const unsigned *a, const unsigned *b, unsigned *c, int n)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n)
        c[i * n + j] = a[i * n + j] + b[i * n + j];
}

__global__ void mmul(const unsigned *a, const unsigned *b, unsigned *c, int n)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || j >= n)
        return;
    unsigned s = 0;
    for (int k = 0; k < n; k++)
        s += a[i * n + k] * b[k * n + j];
    c[i * n + j] = s;
}

__global__ void loop(unsigned *out, unsigned iters)
{
    unsigned x = threadIdx.x + blockIdx.x * blockDim.x, acc = x;
    for (unsigned k = 0; k < iters; k++)
        acc = acc * 1664525u + 1013904223u;
    out[x] = acc;
}

static unsigned long long hash(const unsigned *p, size_t n)
{
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rt_gdev madd|mmul|loop|memcpy N [REPS]\n");
        return 2;
    }
    const char *t = argv[1];
    int n = atoi(argv[2]), reps = argc > 3 ? atoi(argv[3]) : 1;
    if (n <= 0 || reps <= 0) {
        fprintf(stderr, "rt_gdev: N and REPS must be positive\n");
        return 2;
    }
    auto t0 = std::chrono::steady_clock::now();
    if (!strcmp(t, "madd") || !strcmp(t, "mmul")) {
        size_t e = (size_t)n * n;
        std::vector<unsigned> a(e), b(e), c(e);
        for (size_t i = 0; i < e; i++) {
            a[i] = (unsigned)(i * 2654435761u);
            b[i] = (unsigned)(i * 40503u + 7);
        }
        unsigned *da, *db, *dc;
        CK(cudaMalloc(&da, e * 4));
        CK(cudaMalloc(&db, e * 4));
        CK(cudaMalloc(&dc, e * 4));
        CK(cudaMemcpy(da, a.data(), e * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, b.data(), e * 4, cudaMemcpyHostToDevice));
        dim3 blk(16, 16), grd((n + 15) / 16, (n + 15) / 16);
        t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; r++) {
            if (t[1] == 'a')
                madd<<<grd, blk>>>(da, db, dc, n);
            else
                mmul<<<grd, blk>>>(da, db, dc, n);
        }
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        auto t1 = std::chrono::steady_clock::now();
        CK(cudaMemcpy(c.data(), dc, e * 4, cudaMemcpyDeviceToHost));
        size_t bad = 0;
        for (int k = 0; k < 64; k++) { // spot check against the host
            size_t i = (size_t)(k * 7919) % n, j = (size_t)(k * 104729) % n;
            unsigned want = 0;
            if (t[1] == 'a')
                want = a[i * n + j] + b[i * n + j];
            else
                for (int q = 0; q < n; q++)
                    want += a[i * n + q] * b[(size_t)q * n + j];
            bad += c[i * n + j] != want;
        }
        printf("%s n=%d spot_mismatches=%zu hash=%016llx\n", t, n, bad, hash(c.data(), e));
        fprintf(stderr, "wall_s %.6f\n", std::chrono::duration<double>(t1 - t0).count());
        return bad != 0;
    }
    if (!strcmp(t, "loop")) {
        unsigned *d;
        const int threads = 1 << 16;
        CK(cudaMalloc(&d, threads * 4));
        t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; r++)
            loop<<<threads / 256, 256>>>(d, (unsigned)n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        auto t1 = std::chrono::steady_clock::now();
        std::vector<unsigned> h(threads);
        CK(cudaMemcpy(h.data(), d, threads * 4, cudaMemcpyDeviceToHost));
        printf("loop iters=%d hash=%016llx\n", n, hash(h.data(), threads));
        fprintf(stderr, "wall_s %.6f\n", std::chrono::duration<double>(t1 - t0).count());
        return 0;
    }
    if (!strcmp(t, "memcpy")) { // N MB, host -> device -> device -> host
        size_t bytes = (size_t)n << 20;
        std::vector<unsigned> h(bytes / 4), back(bytes / 4);
        for (size_t i = 0; i < h.size(); i++)
            h[i] = (unsigned)(i * 2246822519u);
        unsigned *d1, *d2;
        CK(cudaMalloc(&d1, bytes));
        CK(cudaMalloc(&d2, bytes));
        t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; r++) {
            CK(cudaMemcpy(d1, h.data(), bytes, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d2, d1, bytes, cudaMemcpyDeviceToDevice));
            CK(cudaMemcpy(back.data(), d2, bytes, cudaMemcpyDeviceToHost));
        }
        auto t1 = std::chrono::steady_clock::now();
        printf("memcpy mb=%d equal=%d hash=%016llx\n", n, h == back, hash(back.data(), back.size()));
        fprintf(stderr, "wall_s %.6f\n", std::chrono::duration<double>(t1 - t0).count());
        return h != back;
    }
    fprintf(stderr, "rt_gdev: unknown test %s\n", t);
    return 2;
}
