/* SPDX-License-Identifier: Apache-2.0 */
/* drv_streams.c: several streams, each: async copy in from pinned memory, a
 * kernel, async copy out, events between; then per-stream checks and the
 * elapsed times between the events (stderr). */
#include "common.h"

#define NS 4

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1 << 22;
    init_ctx();
    CUmodule m = load_kernels(argv[0]);
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "saxpy_iter"));
    size_t bytes = (size_t)n * sizeof(float);
    CUstream s[NS];
    CUevent start[NS], stop[NS];
    float *hx[NS], *hy[NS];
    CUdeviceptr dx[NS], dy[NS];
    for (int k = 0; k < NS; k++) {
        CK(cuStreamCreate(&s[k], CU_STREAM_NON_BLOCKING));
        CK(cuEventCreate(&start[k], 0));
        CK(cuEventCreate(&stop[k], 0));
        CK(cuMemAllocHost((void **)&hx[k], bytes));
        CK(cuMemAllocHost((void **)&hy[k], bytes));
        CK(cuMemAlloc(&dx[k], bytes));
        CK(cuMemAlloc(&dy[k], bytes));
        for (int i = 0; i < n; i++) {
            hx[k][i] = (float)((i + k) % 64);
            hy[k][i] = (float)(k + 1);
        }
    }
    int iters = 64;
    for (int k = 0; k < NS; k++) {
        float a = 0.5f * (float)(k + 1);
        void *args[] = {&a, &dx[k], &dy[k], &n, &iters};
        CK(cuEventRecord(start[k], s[k]));
        CK(cuMemcpyHtoDAsync(dx[k], hx[k], bytes, s[k]));
        CK(cuMemcpyHtoDAsync(dy[k], hy[k], bytes, s[k]));
        CK(cuLaunchKernel(f, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, s[k], args, NULL));
        CK(cuMemcpyDtoHAsync(hy[k], dy[k], bytes, s[k]));
        CK(cuEventRecord(stop[k], s[k]));
    }
    /* a stream waits for another's event, then copies device to device */
    CK(cuStreamWaitEvent(s[0], stop[1], 0));
    CK(cuMemcpyDtoDAsync(dx[0], dy[1], bytes, s[0]));
    for (int k = 0; k < NS; k++)
        CK(cuStreamSynchronize(s[k]));
    float *chk = malloc(bytes);
    CK(cuMemcpyDtoH(chk, dx[0], bytes));
    int same = !memcmp(chk, hy[1], bytes);
    for (int k = 0; k < NS; k++) {
        float ms = 0;
        CK(cuEventElapsedTime(&ms, start[k], stop[k]));
        printf("stream %d hash %016llx y[0]=%g y[n-1]=%g\n", k, fnv(hy[k], bytes), hy[k][0], hy[k][n - 1]);
        fprintf(stderr, "stream %d elapsed_ms %.3f\n", k, ms);
    }
    printf("cross-stream dtod after event: %s\n", same ? "same" : "DIFFERENT");
    return !same;
}
