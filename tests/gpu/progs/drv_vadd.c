/* SPDX-License-Identifier: Apache-2.0 */
/* drv_vadd.c: vector add through the Driver API (cuMemAlloc, cuMemcpyHtoD,
 * cuLaunchKernel, cuMemcpyDtoH), verified on the host. */
#include "common.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1 << 24;
    init_ctx();
    CUmodule m = load_kernels(argv[0]);
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "vadd"));
    size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f;
        b[i] = (float)(i % 777) * 0.25f;
    }
    CUdeviceptr da, db, dc;
    CK(cuMemAlloc(&da, bytes));
    CK(cuMemAlloc(&db, bytes));
    CK(cuMemAlloc(&dc, bytes));
    CK(cuMemcpyHtoD(da, a, bytes));
    CK(cuMemcpyHtoD(db, b, bytes));
    void *args[] = {&da, &db, &dc, &n};
    CK(cuLaunchKernel(f, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(c, dc, bytes));
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += c[i] != a[i] + b[i];
    printf("vadd n=%d mismatches=%d c[1]=%g c[n-1]=%g hash=%016llx\n", n, bad, c[1], c[n - 1], fnv(c, bytes));
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    return bad != 0;
}
