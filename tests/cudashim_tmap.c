/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_tmap.c: tensor maps through gpuos's libcuda.so.1 (issue 43;
 * tests/t_cudashim_tmap.sh), run through `gpuos run` on the simulated device.
 * Checks:
 *  - cuTensorMapEncodeTiled, ...Im2col, ...Im2colWide answer the daemon's
 *    device's encoding: the simulated packing of src/device/sim/sim_tmap.c,
 *    recomputed here word by word, with its seal (FNV-1a of words 0..14);
 *  - a second tensor's map is its own, the first one's asked again the same
 *    (the shim keeps the last maps by their arguments);
 *  - cuTensorMapReplaceAddress changes the address only (and the seal), and a
 *    map the device did not make is CUDA_ERROR_INVALID_VALUE;
 *  - bad arguments are CUDA_ERROR_INVALID_VALUE, not a crash: a NULL map,
 *    NULL arrays, rank 0 and 6, im2col of rank 2 (here), and what only the
 *    daemon checks: a misaligned address or stride, box 0 or 257, an unknown
 *    data type or swizzle, 0 channels;
 *  - no NVIDIA libcuda in this process: /proc/self/maps holds one
 *    libcuda.so.1, gpuos's, the same file cuInit came from.
 * Prints "ok" when all hold; each failure names itself. */
#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cudashim_check.h"

#define MAGIC 0x0050414d544d4953ull

static uint64_t seal(const uint64_t *m)
{
    const unsigned char *b = (const unsigned char *)m;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 15 * 8; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Every mapping of a file named libcuda.so*: one path, ours. */
static int libcuda_maps(char *path, size_t cap)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int paths = 0;
    path[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (!p || !strstr(p, "libcuda.so"))
            continue;
        p[strcspn(p, "\n")] = 0;
        if (strcmp(p, path)) {
            paths++;
            snprintf(path, cap, "%s", p);
        }
    }
    if (f)
        fclose(f);
    return paths;
}

static void tiled(CUdeviceptr base)
{
    CUtensorMap m;
    cuuint64_t dim[2] = {1024, 16}, stride[1] = {2048};
    cuuint32_t box[2] = {64, 16}, es[2] = {1, 2};
    void *addr = (void *)(uintptr_t)base;
    EXPECT(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, addr, dim, stride, box, es,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
           CUDA_SUCCESS);
    const uint64_t *w = (const uint64_t *)&m;
    TRUE(w[0] == MAGIC && w[1] == base);
    TRUE(w[2] == (1 | (uint64_t)CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 << 8 | 2ull << 16 |
                  (uint64_t)CU_TENSOR_MAP_SWIZZLE_128B << 32 | (uint64_t)CU_TENSOR_MAP_L2_PROMOTION_L2_128B << 40));
    TRUE(w[3] == 1024 && w[4] == 16 && w[5] == 0 && w[8] == 2048 && w[9] == 0);
    TRUE(w[12] == (64 | 16ull << 16) && w[13] == (1ull << 16 | 2ull << 20) && w[14] == 0);
    TRUE(w[15] == seal(w));

    /* the shim keeps the last maps by their arguments: another tensor's map is
     * its own, the first one's asked again is the same */
    CUtensorMap m2, m3;
    cuuint64_t dim2[2] = {2048, 16};
    EXPECT(cuTensorMapEncodeTiled(&m2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, addr, dim2, stride, box, es,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
           CUDA_SUCCESS);
    EXPECT(cuTensorMapEncodeTiled(&m3, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, addr, dim, stride, box, es,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
           CUDA_SUCCESS);
    TRUE(((const uint64_t *)&m2)[3] == 2048 && ((const uint64_t *)&m2)[15] == seal((const uint64_t *)&m2));
    TRUE(!memcmp(&m3, &m, sizeof m));

    /* the address replaced: that word and the seal change, nothing else */
    CUtensorMap r = m;
    EXPECT(cuTensorMapReplaceAddress(&r, (void *)(uintptr_t)(base + 4096)), CUDA_SUCCESS);
    const uint64_t *v = (const uint64_t *)&r;
    TRUE(v[1] == base + 4096 && v[15] == seal(v) && !memcmp(v + 2, w + 2, 13 * 8) && v[0] == w[0]);
    CUtensorMap junk;
    memset(&junk, 0x5a, sizeof junk);
    EXPECT(cuTensorMapReplaceAddress(&junk, addr), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTensorMapReplaceAddress(NULL, addr), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTensorMapReplaceAddress(&r, (void *)(uintptr_t)(base + 8)), CUDA_ERROR_INVALID_VALUE);

    /* refused here, before any message (a NULL map or array, rank 0 and 6),
     * then by the daemon (a misaligned address or stride, box 0 or 257, an
     * unknown data type or swizzle) */
    static cuuint32_t box0[2] = {0, 16}, box257[2] = {257, 16};
    static cuuint64_t odd[1] = {2040};
    struct {
        int null_map, rank, dtype, swizzle;
        void *addr;
        const cuuint64_t *dim, *stride;
        const cuuint32_t *box;
    } bad[] = {
        {1, 2, 9, 0, addr, dim, stride, box},  {0, 2, 9, 0, addr, NULL, stride, box},
        {0, 2, 9, 0, addr, dim, NULL, box},    {0, 2, 9, 0, addr, dim, stride, NULL},
        {0, 0, 9, 0, addr, dim, stride, box},  {0, 6, 9, 0, addr, dim, stride, box},
        {0, 2, 9, 0, (char *)addr + 8, dim, stride, box}, {0, 2, 9, 0, addr, dim, odd, box},
        {0, 2, 9, 0, addr, dim, stride, box0}, {0, 2, 9, 0, addr, dim, stride, box257},
        {0, 2, 99, 0, addr, dim, stride, box}, {0, 2, 9, 77, addr, dim, stride, box},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CUresult rc = cuTensorMapEncodeTiled(bad[i].null_map ? NULL : &m, (CUtensorMapDataType)bad[i].dtype,
                                             (cuuint32_t)bad[i].rank, bad[i].addr, bad[i].dim, bad[i].stride,
                                             bad[i].box, es, 0, (CUtensorMapSwizzle)bad[i].swizzle, 0, 0);
        if (rc != CUDA_ERROR_INVALID_VALUE) {
            fprintf(stderr, "FAIL bad tiled case %zu: %d, expected CUDA_ERROR_INVALID_VALUE\n", i, (int)rc);
            fails++;
        }
    }
    /* rank 1: no strides needed */
    EXPECT(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, addr, dim, NULL, box, es, 0, 0, 0, 0),
           CUDA_SUCCESS);
    TRUE(w[2] >> 16 == 1 && w[3] == 1024 && w[4] == 0 && w[8] == 0);
}

static void im2col(CUdeviceptr base)
{
    CUtensorMap m;
    const uint64_t *w = (const uint64_t *)&m;
    void *addr = (void *)(uintptr_t)base;
    cuuint64_t dim[4] = {64, 8, 8, 2}, stride[3] = {128, 1024, 8192};
    cuuint32_t es[4] = {1, 1, 1, 1};
    int lower[2] = {-1, -2}, upper[2] = {1, 2};
    EXPECT(cuTensorMapEncodeIm2col(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, addr, dim, stride, lower, upper, 64, 32,
                                   es, 0, 0, 0, 0),
           CUDA_SUCCESS);
    /* corners of 8 bits each (rank 4: n = 2): lower 0xff 0xfe, upper 0x01 0x02 */
    TRUE(w[0] == MAGIC && w[2] == (2 | (uint64_t)CU_TENSOR_MAP_DATA_TYPE_FLOAT16 << 8 | 4ull << 16));
    TRUE(w[14] == (64 | 32ull << 9 | 0x0201feffull << 20) && w[15] == seal(w));
    EXPECT(cuTensorMapEncodeIm2col(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, addr, dim, stride, lower, upper, 64, 32,
                                   es, 0, 0, 0, 0),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTensorMapEncodeIm2col(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, addr, dim, stride, NULL, upper, 64, 32, es,
                                   0, 0, 0, 0),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTensorMapEncodeIm2col(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, addr, dim, stride, lower, upper, 0, 32, es,
                                   0, 0, 0, 0),
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTensorMapEncodeIm2colWide(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, addr, dim, stride, -3, 3, 16, 128, es,
                                       0, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128, 0, 0, 0),
           CUDA_SUCCESS);
    TRUE(w[2] == (3 | (uint64_t)CU_TENSOR_MAP_DATA_TYPE_FLOAT16 << 8 | 3ull << 16 |
                  (uint64_t)CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128 << 56));
    TRUE(w[14] == (16 | 128ull << 9 | 0x0003fffdull << 20) && w[15] == seal(w));
}

int main(void)
{
    check_primary_context();
    CUdeviceptr base;
    CHECK(cuMemAlloc(&base, 1 << 20));
    tiled(base);
    im2col(base);
    /* one libcuda in this process: gpuos's (the one cuInit is in) */
    char path[4096];
    Dl_info self;
    int n = libcuda_maps(path, sizeof path);
    TRUE(dladdr((void *)cuInit, &self) && self.dli_fname);
    char real_self[4096] = "", real_map[4096] = "";
    if (self.dli_fname && !realpath(self.dli_fname, real_self))
        real_self[0] = 0;
    if (!realpath(path, real_map))
        real_map[0] = 0;
    if (n != 1 || strcmp(real_self, real_map)) {
        fprintf(stderr, "FAIL libcuda files mapped: %d, the last %s, ours %s\n", n, path, real_self);
        fails++;
    }
    CHECK(cuMemFree(base));
    if (fails)
        return 1;
    puts("ok");
    return 0;
}
