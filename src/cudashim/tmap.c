/* SPDX-License-Identifier: Apache-2.0 */
/* tmap.c: tensor map (TMA descriptor) encoding of gpuos's libcuda.so.1 (in the
 * CUDA program's process; cuBLASLt's, Triton's and XLA's Hopper kernels take
 * them).
 *
 * A tensor map is 128 bytes the driver computes from its arguments alone (the
 * global address is the device address, the same in the executor's context);
 * the format is the driver's own. So the daemon's device encodes them (issue
 * 43: TMAP_ENCODE, serve/tmap_cl.c; on the client's executor under isolation =
 * process), and this process needs neither NVIDIA's libcuda nor the device
 * nodes. Here only what CUDA's header says of the arguments is checked (a map
 * and its arrays given, rank within 1..5); the daemon checks every value. The
 * last 64 maps are kept by their arguments and answered again from here. */
#include "cudashim/driver.h"

#include <pthread.h>
#include <string.h>

/* The last maps answered, by their arguments: an encoding is a function of its
 * arguments alone, and Triton encodes the same descriptors again at every
 * launch (a round trip to the daemon, and to the executor, each time). */
#define TMAP_CACHE 64
static struct {
    gpuos_tmap_args a;
    unsigned char map[GPUOS_TMAP_BYTES];
    int used;
} cache[TMAP_CACHE];
static unsigned cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cache_find(const gpuos_tmap_args *a, void *map)
{
    int hit = 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < TMAP_CACHE && !hit; i++)
        if (cache[i].used && !memcmp(&cache[i].a, a, sizeof *a)) {
            memcpy(map, cache[i].map, GPUOS_TMAP_BYTES);
            hit = 1;
        }
    pthread_mutex_unlock(&cache_lock);
    return hit;
}

static void cache_put(const gpuos_tmap_args *a, const void *map)
{
    pthread_mutex_lock(&cache_lock);
    unsigned i = cache_next++ % TMAP_CACHE;
    cache[i].a = *a;
    memcpy(cache[i].map, map, GPUOS_TMAP_BYTES);
    cache[i].used = 1;
    pthread_mutex_unlock(&cache_lock);
}

/* The daemon's answer for a's arguments into m (a was zeroed first: no stray
 * bytes in the key). */
static CUresult tmap_call(CUtensorMap *m, gpuos_tmap_args *a, const char *what)
{
    NEED_INIT();
    unsigned char map[GPUOS_TMAP_BYTES];
    if (cache_find(a, map)) {
        memcpy(m, map, sizeof map);
        return CUDA_SUCCESS;
    }
    CUresult r = map_rc(gpuos_tmap_encode(shim_proc.g, a, map), what);
    if (r == CUDA_SUCCESS) {
        cache_put(a, map);
        memcpy(m, map, sizeof map);
    }
    return r;
}

/* The arguments every encoder shares, copied into a; CUDA_ERROR_INVALID_VALUE
 * for a missing map or array, or a rank no array can hold. */
static CUresult tmap_common(gpuos_tmap_args *a, uint32_t kind, const CUtensorMap *m, CUtensorMapDataType t,
                            cuuint32_t rank, void *addr, const cuuint64_t *dim, const cuuint64_t *strides,
                            const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                            CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    memset(a, 0, sizeof *a);
    if (!m || !dim || !estrides || rank < 1 || rank > GPUOS_TMAP_RANK_MAX || (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    *a = (gpuos_tmap_args){.kind = kind, .dtype = (uint32_t)t, .rank = rank, .interleave = (uint32_t)il,
                           .swizzle = (uint32_t)sw, .l2promotion = (uint32_t)l2, .oobfill = (uint32_t)oob,
                           .addr = (uint64_t)(uintptr_t)addr};
    memcpy(a->dim, dim, rank * sizeof *dim);
    if (rank > 1)
        memcpy(a->stride, strides, (rank - 1) * sizeof *strides);
    memcpy(a->estride, estrides, rank * sizeof *estrides);
    return CUDA_SUCCESS;
}

E CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                  const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *box,
                                  const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    gpuos_tmap_args a;
    CUresult r = tmap_common(&a, GPUOS_TMAP_TILED, m, t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
    if (r || !box)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    memcpy(a.box, box, rank * sizeof *box);
    return tmap_call(m, &a, "cuTensorMapEncodeTiled");
}

E CUresult cuTensorMapEncodeIm2col(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                   const cuuint64_t *dim, const cuuint64_t *strides, const int *lower,
                                   const int *upper, cuuint32_t channels, cuuint32_t pixels,
                                   const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    gpuos_tmap_args a;
    CUresult r = tmap_common(&a, GPUOS_TMAP_IM2COL, m, t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
    if (r || rank < 3 || !lower || !upper)
        return r ? r : CUDA_ERROR_INVALID_VALUE;
    memcpy(a.lower, lower, (rank - 2) * sizeof *lower);
    memcpy(a.upper, upper, (rank - 2) * sizeof *upper);
    a.channels = channels;
    a.pixels = pixels;
    return tmap_call(m, &a, "cuTensorMapEncodeIm2col");
}

E CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                       const cuuint64_t *dim, const cuuint64_t *strides, int lower, int upper,
                                       cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *estrides,
                                       CUtensorMapInterleave il, CUtensorMapIm2ColWideMode mode,
                                       CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    gpuos_tmap_args a;
    CUresult r = tmap_common(&a, GPUOS_TMAP_IM2COL_WIDE, m, t, rank, addr, dim, strides, estrides, il, sw, l2, oob);
    if (r)
        return r;
    a.lower[0] = lower;
    a.upper[0] = upper;
    a.channels = channels;
    a.pixels = pixels;
    a.wide_mode = (uint32_t)mode;
    return tmap_call(m, &a, "cuTensorMapEncodeIm2colWide");
}

E CUresult cuTensorMapReplaceAddress(CUtensorMap *m, void *addr)
{
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    gpuos_tmap_args a;
    memset(&a, 0, sizeof a);
    a.kind = GPUOS_TMAP_REPLACE;
    a.addr = (uint64_t)(uintptr_t)addr;
    memcpy(a.map, m, sizeof a.map);
    return tmap_call(m, &a, "cuTensorMapReplaceAddress");
}
