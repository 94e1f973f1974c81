/* SPDX-License-Identifier: Apache-2.0 */
/* drv_globals.c: loads a module with 1 GiB of __device__ globals
 * (tests/gpu/progs/globals.cu as a cubin, fatbin or PTX file) and, with "run",
 * writes every byte of them by a kernel, reads them back by another kernel and
 * in samples by copies from cuModuleGetGlobal's address. Prints
 *   load ERR                                   (refuse: the load's answer)
 *   charged BYTES size BYTES mismatches N samples_ok 0|1   (run, native)
 * where charged is what cuMemGetInfo's free fell by at the load. Usage:
 * drv_globals FILE refuse|run|native. Exit 0 when the load is refused with
 * CUDA_ERROR_OUT_OF_MEMORY (refuse), or when it loads and every byte reads back
 * (native: NVIDIA's driver, which may place globals lazily), charged 1 GiB at
 * least (run: on a vGPU). tests/gpu/module_globals.sh. */
#include "common.h"

#define BIG (1ull << 30)

static unsigned char want(unsigned long long i, unsigned seed)
{
    return (unsigned char)((i * 2654435761ull + seed) >> 13);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "refuse") && strcmp(argv[2], "run") && strcmp(argv[2], "native"))) {
        fprintf(stderr, "usage: drv_globals FILE refuse|run|native\n");
        return 2;
    }
    init_ctx();
    size_t free0 = 0, free1 = 0, total = 0;
    CK(cuMemGetInfo(&free0, &total));
    CUmodule m;
    CUresult r = cuModuleLoad(&m, argv[1]);
    if (!strcmp(argv[2], "refuse")) {
        const char *n = "?";
        cuGetErrorName(r, &n);
        printf("load %s\n", n);
        return r != CUDA_ERROR_OUT_OF_MEMORY;
    }
    CK(r);
    CK(cuMemGetInfo(&free1, &total));
    CUdeviceptr g, gbad;
    size_t gb = 0, bb = 0;
    CK(cuModuleGetGlobal(&g, &gb, m, "big"));
    CK(cuModuleGetGlobal(&gbad, &bb, m, "bad"));
    CUfunction fill, check;
    CK(cuModuleGetFunction(&fill, m, "fill"));
    CK(cuModuleGetFunction(&check, m, "check"));
    unsigned seed = 0x5EED;
    void *args[] = {&seed};
    CK(cuLaunchKernel(fill, 1024, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    unsigned long long zero = 0, mism = 1;
    CK(cuMemcpyHtoD(gbad, &zero, sizeof zero));
    CK(cuLaunchKernel(check, 1024, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(&mism, gbad, sizeof mism));
    static unsigned char buf[4096];
    int samples_ok = 1;
    const unsigned long long at[] = {0, BIG / 2 + 12345, BIG - sizeof buf};
    for (int s = 0; s < 3; s++) {
        CK(cuMemcpyDtoH(buf, g + at[s], sizeof buf));
        for (size_t i = 0; i < sizeof buf; i++)
            samples_ok &= buf[i] == want(at[s] + i, seed);
    }
    long long charged = (long long)free0 - (long long)free1;
    printf("charged %lld size %zu mismatches %llu samples_ok %d\n", charged, gb, mism, samples_ok);
    CK(cuModuleUnload(m));
    int native = !strcmp(argv[2], "native");
    return !(gb == BIG && (native || charged >= (long long)BIG) && mism == 0 && samples_ok);
}
