/* SPDX-License-Identifier: Apache-2.0 */
/* drv_paraminfo.c CUBIN KERNEL: what the real driver says of one kernel of a
 * cubin (issue 21, Triton's launches): each parameter's offset and size
 * (cuFuncGetParamInfo), the function's attributes, then whether a launch of one
 * block of the kernel's maximum threads is accepted with its parameters packed
 * in one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER, as gpuos's executor launches)
 * of the exact size, and through cuLaunchKernelEx without attributes. Every
 * parameter is zero except the first three pointers, which point at 1 MB of
 * device memory each (so a vector kernel with n = 0 touches nothing).
 * Prints "param I OFF SIZE", "attr NAME VALUE", "launch HOW rc N" lines; built
 * and run by tests/gpu/frameworks.sh (FW_PROBE_TRITON=1) against the real libcuda. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: drv_paraminfo CUBIN KERNEL\n");
        return 2;
    }
    FILE *fp = fopen(argv[1], "rb");
    if (!fp) {
        perror(argv[1]);
        return 1;
    }
    static unsigned char img[16 << 20];
    size_t n = fread(img, 1, sizeof img, fp);
    fclose(fp);
    (void)n;
    CUmodule mod;
    CUfunction f;
    primary_context();
    CK(cuModuleLoadData(&mod, img));
    CK(cuModuleGetFunction(&f, mod, argv[2]));
    size_t total = 0;
    int np = 0;
    for (size_t i = 0; i < 256; i++) {
        size_t off = 0, sz = 0;
        if (cuFuncGetParamInfo(f, i, &off, &sz))
            break;
        printf("param %zu %zu %zu\n", i, off, sz);
        if (off + sz > total)
            total = off + sz;
        np++;
    }
    printf("params %d bytes %zu\n", np, total);
    static const struct {
        CUfunction_attribute a;
        const char *name;
    } at[] = {
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max_threads"},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static_smem"},
        {CU_FUNC_ATTRIBUTE_NUM_REGS, "regs"},
        {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "max_dynamic_smem"},
        {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, "cluster_x"},
        {CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, "cluster_must_be_set"},
        {CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, "non_portable_cluster"},
        {CU_FUNC_ATTRIBUTE_PTX_VERSION, "ptx"},
        {CU_FUNC_ATTRIBUTE_BINARY_VERSION, "binary"},
    };
    int maxt = 32;
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        int v = -1;
        CUresult r = cuFuncGetAttribute(&v, at[i].a, f);
        printf("attr %s %d%s\n", at[i].name, v, r ? " (error)" : "");
        if (at[i].a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK && !r && v > 0)
            maxt = v;
    }
    unsigned char *buf = calloc(1, total + 64);
    void **ptrs = calloc((size_t)np + 1, sizeof *ptrs);
    CUdeviceptr d[3];
    for (int i = 0; i < 3; i++)
        CK(cuMemAlloc(&d[i], 1 << 20));
    for (int i = 0; i < np; i++) {
        size_t off = 0, sz = 0;
        cuFuncGetParamInfo(f, (size_t)i, &off, &sz);
        if (i < 3 && sz == 8)
            memcpy(buf + off, &d[i], 8);
        ptrs[i] = buf + off;
    }
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)maxt;
    cfg.blockDimY = cfg.blockDimZ = 1;
    size_t sizes[] = {total, total + 8, total ? total - 4 : 0};
    const char *how[] = {"buffer_exact", "buffer_plus8", "buffer_minus4"};
    for (int k = 0; k < 3; k++) {
        size_t s = sizes[k];
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &s, CU_LAUNCH_PARAM_END};
        CUresult r = cuLaunchKernelEx(&cfg, f, NULL, extra);
        CUresult s2 = r ? r : cuCtxSynchronize();
        printf("launch %s(%zu) rc %d sync %d\n", how[k], s, (int)r, (int)s2);
    }
    CUresult r = cuLaunchKernelEx(&cfg, f, ptrs, NULL);
    printf("launch params rc %d sync %d\n", (int)r, (int)(r ? r : cuCtxSynchronize()));
    return 0;
}
