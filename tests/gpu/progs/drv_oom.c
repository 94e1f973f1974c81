/* SPDX-License-Identifier: Apache-2.0 */
/* drv_oom.c: allocates blocks of MB megabytes (default 256) until the driver
 * refuses; prints the error and how much it got. Exit 0 when the refusal is
 * CUDA_ERROR_OUT_OF_MEMORY. */
#include "common.h"

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 256;
    init_ctx();
    size_t fr = 0, tot = 0;
    CK(cuMemGetInfo(&fr, &tot));
    CUdeviceptr p;
    CUresult r;
    unsigned long long got = 0;
    while ((r = cuMemAlloc(&p, mb << 20)) == CUDA_SUCCESS)
        got += mb << 20;
    const char *n = "?";
    cuGetErrorName(r, &n);
    printf("total %zu free_before %zu allocated %llu then %s\n", tot, fr, got, n);
    return r != CUDA_ERROR_OUT_OF_MEMORY;
}
