/* SPDX-License-Identifier: Apache-2.0 */
/* drv_matmul.c: tiled matrix multiply (Driver API), n x n floats.
 *   drv_matmul N REPS        REPS launches; prints a hash of C (deterministic)
 *                            and, on stderr, the GPU time per launch (events)
 *                            and the wall time
 *   drv_matmul N 0 SECONDS   launches for SECONDS of wall time, then prints the
 *                            number of launches completed (the share test) */
#include "common.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2048, reps = argc > 2 ? atoi(argv[2]) : 20;
    double secs = argc > 3 ? atof(argv[3]) : 0;
    init_ctx();
    CUmodule m = load_kernels(argv[0]);
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "matmul"));
    size_t bytes = (size_t)n * n * sizeof(float);
    float *A = malloc(bytes), *Bm = malloc(bytes), *C = malloc(bytes);
    for (size_t i = 0; i < (size_t)n * n; i++) {
        A[i] = (float)((i * 7) % 13) - 6.f;
        Bm[i] = (float)((i * 3) % 11) - 5.f;
    }
    CUdeviceptr dA, dB, dC;
    CK(cuMemAlloc(&dA, bytes));
    CK(cuMemAlloc(&dB, bytes));
    CK(cuMemAlloc(&dC, bytes));
    CK(cuMemcpyHtoD(dA, A, bytes));
    CK(cuMemcpyHtoD(dB, Bm, bytes));
    void *args[] = {&dA, &dB, &dC, &n};
    unsigned g = (unsigned)(n + 31) / 32;
    CK(cuLaunchKernel(f, g, g, 1, 32, 32, 1, 0, NULL, args, NULL)); /* warm-up */
    CK(cuCtxSynchronize());
    if (secs > 0) {
        long done = 0;
        double t0 = now_s();
        while (now_s() - t0 < secs) {
            for (int i = 0; i < 4; i++)
                CK(cuLaunchKernel(f, g, g, 1, 32, 32, 1, 0, NULL, args, NULL));
            CK(cuCtxSynchronize());
            done += 4;
        }
        double t = now_s() - t0;
        printf("launches %ld seconds %.3f per_s %.2f\n", done, t, done / t);
        return 0;
    }
    CUevent e0, e1;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    double t0 = now_s();
    CK(cuEventRecord(e0, NULL));
    for (int i = 0; i < reps; i++)
        CK(cuLaunchKernel(f, g, g, 1, 32, 32, 1, 0, NULL, args, NULL));
    CK(cuEventRecord(e1, NULL));
    CK(cuEventSynchronize(e1));
    double wall = now_s() - t0;
    float ms = 0;
    CK(cuEventElapsedTime(&ms, e0, e1));
    CK(cuMemcpyDtoH(C, dC, bytes));
    /* exact check of a few entries (small integers: exact in fp32) */
    int bad = 0;
    for (int t = 0; t < 16; t++) {
        int r = (t * 131) % n, c = (t * 71) % n;
        double s = 0;
        for (int k = 0; k < n; k++)
            s += (double)A[(size_t)r * n + k] * Bm[(size_t)k * n + c];
        bad += (double)C[(size_t)r * n + c] != s;
    }
    printf("matmul n=%d reps=%d mismatches=%d hash=%016llx\n", n, reps, bad, fnv(C, bytes));
    fprintf(stderr, "time_ms_per_launch_events %.4f wall_s %.4f gflops %.1f\n", ms / reps, wall,
            2.0 * n * n * (double)n * reps / wall / 1e9);
    return bad != 0;
}
