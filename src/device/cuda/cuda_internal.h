/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_internal.h: what the cuda backend's files share (never included above the
 * device layer). libcuda is opened with dlopen and every entry point is fetched
 * with dlsym by the exact symbol that cuda.h's macros give its name (cuMemAlloc
 * is cuMemAlloc_v2 at the toolkit's CUDA_VERSION), so the function types that
 * cuda.h declares are exactly the ABI we call:
 *
 *     int rc = CU_CALL(cuMemAlloc, &ptr, bytes);   // GOS_OK or GOS_EDEVICE + message
 *
 * CU_CALL reports failures with the call's name and the driver's error name. */
#ifndef GOS_CUDA_INTERNAL_H
#define GOS_CUDA_INTERNAL_H

#include "device/device.h"
#include "gpuos/gpuos.h" /* gpuos_tmap_args */

#include <cuda.h>

/* Loads libcuda.so.1 and runs cuInit once; GOS_ENODEV with a reason otherwise. */
int gos_cu_load(void);
/* Entry point by exact exported symbol ("cuMemAlloc_v2"), NULL if absent. */
void *gos_cu_proc(const char *name);
/* GOS_OK for CUDA_SUCCESS, else GOS_EDEVICE (GOS_ENOMEM for out-of-memory) with
 * "call: CUDA_ERROR_X (description)". */
int gos_cu_check(CUresult r, const char *call);
int gos_cu_missing(const char *call);

#define GOS_CU_XSTR(x) #x
#define GOS_CU_SYM(fn) GOS_CU_XSTR(fn) /* the symbol after cuda.h's macros */
#define GOS_CU(fn) ((__typeof__(&fn))gos_cu_proc(GOS_CU_SYM(fn)))
#define CU_CALL(fn, ...)                                                                         \
    (gos_cu_proc(GOS_CU_SYM(fn)) ? gos_cu_check(GOS_CU(fn)(__VA_ARGS__), #fn)                    \
                                 : gos_cu_missing(#fn))

/* Backend state (d->priv). */
#define GOS_CUDA_MAX_MODULES 16
struct gos_cuda {
    CUdevice dev;
    CUcontext ctx; /* the device's primary context, retained */
    struct {
        const char *name;
        CUmodule mod;
    } modules[GOS_CUDA_MAX_MODULES];
    int n_modules;
};

/* Makes the device's primary context current in the calling thread. */
int gos_cuda_enter(gos_device *d);

/* A pillar's lazily created state *priv (&d->mem_priv, ...), with the device's
 * context made current: *fresh = 0 when it exists; otherwise *priv becomes a
 * zeroed block of `size` bytes and *fresh = 1, for the caller to set up (and to
 * release with its pillar's close if that fails). */
int gos_cuda_pillar_state(gos_device *d, void **priv, size_t size, int *fresh);

/* cuMemFree of every non-zero pointer of ptrs[0..n) (the pillars' close). */
void gos_cuda_free_ptrs(const CUdeviceptr *ptrs, size_t n);

/* Looks up kernel `fn` in the embedded image `image` (kernels/IMAGE.cu), loading
 * the module on first use. GOS_EUNSUPPORTED when built without kernels. */
int gos_cuda_function(gos_device *d, const char *image, const char *fn, CUfunction *out);

/* Launch helper: grid/block in x only, optional cluster size (>1), dynamic shared
 * memory, on stream (NULL: default). Sets the non-portable cluster attribute and
 * the dynamic shared memory limit on the function as needed. */
int gos_cuda_launch(CUfunction f, unsigned grid, unsigned block, unsigned cluster, unsigned smem,
                    CUstream stream, void **params);

/* Tensor maps by the driver's encoders (cuda_tmap.c; exec_ops.h tmap_encode). */
int gos_cuda_tmap_encode(gos_device *d, const gpuos_tmap_args *a, void *map);

#endif
