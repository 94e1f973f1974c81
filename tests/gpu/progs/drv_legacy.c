/* SPDX-License-Identifier: Apache-2.0 */
/* drv_legacy.c: a program of the CUDA 4 era (Gdev's generation) on the Driver
 * API: a cubin loaded from a file by path, cuFuncSetBlockShape,
 * cuFuncSetSharedSize, cuParamSetv/Seti/Setf/SetSize, cuLaunchGrid and
 * cuLaunchGridAsync, a pitched allocation with cuMemsetD2D32 and cuMemcpy2D.
 * Prints results (sums and hashes) that native and gpuos runs must share.
 *   drv_legacy CUBIN_PATH */
#include "common.h"

#define ALIGN_UP(off, a) (((off) + (a)-1) & ~((a)-1))

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: drv_legacy CUBIN\n");
        return 2;
    }
    CUdevice d;
    CUcontext c;
    CK(cuInit(0));
    CK(cuDeviceGet(&d, 0));
    CK(cuCtxCreate(&c, NULL, 0, d));
    CUmodule m;
    CK(cuModuleLoad(&m, argv[1]));
    CUfunction f, g;
    CK(cuModuleGetFunction(&f, m, "scale_add"));
    CK(cuModuleGetFunction(&g, m, "block_sum"));
    int n = 1 << 20;
    size_t bytes = (size_t)n * 4;
    float *x = malloc(bytes), *y = malloc(bytes);
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 97) * 0.25f;
        y[i] = (float)(i % 13);
    }
    CUdeviceptr dx, dy, ds;
    CK(cuMemAlloc(&dx, bytes));
    CK(cuMemAlloc(&dy, bytes));
    CK(cuMemAlloc(&ds, (size_t)(n / 256) * 4));
    CK(cuMemcpyHtoD(dx, x, bytes));
    CK(cuMemcpyHtoD(dy, y, bytes));
    /* y = 1.5 x + y, grid 2D (w x h blocks) */
    int off = 0;
    CK(cuFuncSetBlockShape(f, 256, 1, 1));
    CK(cuParamSetv(f, off, &dy, sizeof dy));
    off += sizeof dy;
    CK(cuParamSetv(f, off, &dx, sizeof dx));
    off += sizeof dx;
    CK(cuParamSetf(f, off, 1.5f));
    off += 4;
    CK(cuParamSeti(f, off, (unsigned)n));
    off += 4;
    CK(cuParamSetSize(f, (unsigned)off));
    CK(cuLaunchGrid(f, n / 256 / 4, 4));
    CK(cuCtxSynchronize());
    /* block sums with dynamic shared memory, asynchronously on a stream */
    CUstream s;
    CK(cuStreamCreate(&s, 0));
    off = 0;
    CK(cuFuncSetBlockShape(g, 256, 1, 1));
    CK(cuFuncSetSharedSize(g, 256 * 4));
    CK(cuParamSetv(g, off, &dy, sizeof dy));
    off += sizeof dy;
    CK(cuParamSetv(g, off, &ds, sizeof ds));
    off += sizeof ds;
    CK(cuParamSeti(g, off, (unsigned)n));
    off += 4;
    CK(cuParamSetSize(g, (unsigned)off));
    CK(cuLaunchGridAsync(g, n / 256, 1, s));
    CK(cuStreamSynchronize(s));
    float *sums = malloc((size_t)(n / 256) * 4);
    CK(cuMemcpyDtoH(y, dy, bytes));
    CK(cuMemcpyDtoH(sums, ds, (size_t)(n / 256) * 4));
    int bad = 0;
    double total = 0;
    for (int i = 0; i < n; i++)
        bad += y[i] != 1.5f * ((float)(i % 97) * 0.25f) + (float)(i % 13);
    for (int b = 0; b < n / 256; b++)
        total += sums[b];
    printf("scale_add mismatches=%d hash=%016llx\n", bad, fnv(y, bytes));
    printf("block_sum total=%.3f hash=%016llx\n", total, fnv(sums, (size_t)(n / 256) * 4));
    /* pitched memory: 2D memset and copy */
    CUdeviceptr p;
    size_t pitch;
    CK(cuMemAllocPitch(&p, &pitch, 1000, 64, 4));
    CK(cuMemsetD2D32(p, pitch, 0x01020304u, 1000 / 4, 64));
    unsigned char *h = calloc(1000, 64);
    CUDA_MEMCPY2D cp = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = p, .srcPitch = pitch,
                        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = h, .dstPitch = 1000,
                        .WidthInBytes = 1000, .Height = 64};
    CK(cuMemcpy2D(&cp));
    printf("memset2d hash=%016llx\n", fnv(h, 64000));
    CK(cuModuleUnload(m));
    CK(cuCtxDestroy(c));
    return bad != 0;
}
