/* SPDX-License-Identifier: Apache-2.0 */
/* drv_cluster.c: a thread-block cluster launch (cuLaunchKernelEx with
 * CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION); every block reports its rank in the
 * cluster, the cluster size and a value read from the first block's shared
 * memory (distributed shared memory). */
#include "common.h"

int main(int argc, char **argv)
{
    int blocks = 16, csize = argc > 1 ? atoi(argv[1]) : 4;
    init_ctx();
    CUmodule m = load_kernels(argv[0]);
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "cluster_info"));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 3 * blocks * sizeof(int)));
    CK(cuMemsetD32(d, 0xffffffffu, 3 * blocks));
    CUlaunchAttribute at;
    memset(&at, 0, sizeof at);
    at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at.value.clusterDim.x = (unsigned)csize;
    at.value.clusterDim.y = 1;
    at.value.clusterDim.z = 1;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = (unsigned)blocks;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 64;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    void *args[] = {&d};
    CK(cuLaunchKernelEx(&cfg, f, args, NULL));
    int h[3 * 16];
    CK(cuMemcpyDtoH(h, d, sizeof h));
    int bad = 0;
    for (int b = 0; b < blocks; b++) {
        printf("block %2d rank %d of %d first-block token %d\n", b, h[3 * b], h[3 * b + 1], h[3 * b + 2]);
        bad += h[3 * b] != b % csize || h[3 * b + 1] != csize || h[3 * b + 2] != 1000 + b - b % csize;
    }
    printf("cluster %d: %s\n", csize, bad ? "WRONG" : "right");
    return bad != 0;
}
