/* SPDX-License-Identifier: Apache-2.0 */
/* drv_answers.c: the driver's answers to the queries libraries make before
 * their first kernel (issue 21: cuBLAS probes cluster occupancy for every
 * cluster shape and reads context limits), one "key ... rc R value V" line
 * each, so a run natively and one under `gpuos run` compare line by line
 * (tests/gpu/cutrace.sh): context limits 0..9, every device attribute, every
 * function attribute of a cluster kernel, cuOccupancyMaxActiveClusters for
 * cluster shapes of 0 to 32 blocks, with and without the non-portable size
 * allowed, and cuOccupancyMaxPotentialClusterSize. */
#include "common.h"

static void clusters(CUfunction f, int np, unsigned x, unsigned y, unsigned z, unsigned threads, int with_attr)
{
    CUlaunchAttribute at;
    memset(&at, 0, sizeof at);
    at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at.value.clusterDim.x = x;
    at.value.clusterDim.y = y;
    at.value.clusterDim.z = z;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = 132 * x;
    cfg.gridDimY = y;
    cfg.gridDimZ = z;
    cfg.blockDimX = threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.attrs = with_attr ? &at : NULL;
    cfg.numAttrs = with_attr ? 1 : 0;
    int n = -1;
    CUresult r = cuOccupancyMaxActiveClusters(&n, f, &cfg);
    if (with_attr)
        printf("clusters np %d shape %ux%ux%u threads %u rc %d value %d\n", np, x, y, z, threads, (int)r, r ? -1 : n);
    else
        printf("clusters np %d shape none threads %u rc %d value %d\n", np, threads, (int)r, r ? -1 : n);
    n = -1;
    r = cuOccupancyMaxPotentialClusterSize(&n, f, &cfg);
    if (!with_attr || (x == 1 && y == 1 && z == 1))
        printf("potential np %d threads %u attr %d rc %d value %d\n", np, threads, with_attr, (int)r, r ? -1 : n);
}

int main(int argc, char **argv)
{
    (void)argc;
    init_ctx();
    for (int l = 0; l <= 9; l++) {
        size_t v = 0;
        CUresult r = cuCtxGetLimit(&v, (CUlimit)l);
        printf("limit %d rc %d value %zu\n", l, (int)r, r ? 0 : v);
    }
    CUdevice d;
    CK(cuCtxGetDevice(&d));
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX + 4; a++) {
        int v = 0;
        CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, d);
        printf("attr %d rc %d value %d\n", a, (int)r, r ? 0 : v);
    }
    CUmodule m = load_kernels(argv[0]);
    CUfunction f, g;
    CK(cuModuleGetFunction(&g, m, "matmul"));
    CK(cuModuleGetFunction(&f, m, "cluster_info"));
    for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX + 2; a++) {
        int v = 0, w = 0;
        CUresult r = cuFuncGetAttribute(&v, (CUfunction_attribute)a, f);
        printf("fattr cluster_info %d rc %d value %d\n", a, (int)r, r ? 0 : v);
        r = cuFuncGetAttribute(&w, (CUfunction_attribute)a, g);
        printf("fattr matmul %d rc %d value %d\n", a, (int)r, r ? 0 : w);
    }
    static const unsigned shapes[][3] = {{0, 1, 1}, {1, 1, 1}, {2, 1, 1},  {3, 1, 1},  {4, 1, 1},  {5, 1, 1},
                                         {6, 1, 1}, {7, 1, 1}, {8, 1, 1},  {9, 1, 1},  {10, 1, 1}, {12, 1, 1},
                                         {15, 1, 1}, {16, 1, 1}, {17, 1, 1}, {20, 1, 1}, {24, 1, 1}, {32, 1, 1},
                                         {2, 2, 1}, {4, 2, 1}, {2, 4, 1},  {4, 4, 1},  {8, 2, 1},  {2, 2, 2},
                                         {1, 8, 1}, {1, 16, 1}, {8, 4, 1}};
    for (int np = 0; np <= 1; np++) {
        CUresult r = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, np);
        printf("set_nonportable %d rc %d\n", np, (int)r);
        for (unsigned t = 64; t <= 1024; t *= 4) {
            clusters(f, np, 1, 1, 1, t, 0);
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                clusters(f, np, shapes[s][0], shapes[s][1], shapes[s][2], t, 1);
        }
    }
    return 0;
}
