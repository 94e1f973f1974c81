/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_tmap.c: tensor maps (TMA descriptors) by the driver's own encoders, the
 * real half of exec_ops.h's tmap_encode (issue 43). They run where the device
 * layer runs (the client's executor, or the daemon under isolation = none),
 * inside the device's primary context (XLA's maps were refused without one,
 * driver 580), so that a tenant's process needs neither NVIDIA's libcuda nor
 * the device nodes. The arguments were checked (proto.c, exec_ops.c's
 * wrapper): rank and arrays are in bounds. The driver's refusal of its
 * arguments is GOS_EINVAL, named with the call and its error. */
#include "device/cuda/cuda_internal.h"
#include "device/exec_ops.h"

#include "common/status.h"

#include <string.h>

static int encode(const gpuos_tmap_args *a, CUtensorMap *m, const char **call)
{
    const cuuint64_t *dim = a->dim, *stride = a->stride;
    const cuuint32_t *box = a->box, *es = a->estride;
    CUtensorMapDataType t = (CUtensorMapDataType)a->dtype;
    CUtensorMapInterleave il = (CUtensorMapInterleave)a->interleave;
    CUtensorMapSwizzle sw = (CUtensorMapSwizzle)a->swizzle;
    CUtensorMapL2promotion l2 = (CUtensorMapL2promotion)a->l2promotion;
    CUtensorMapFloatOOBfill oob = (CUtensorMapFloatOOBfill)a->oobfill;
    void *addr = (void *)(uintptr_t)a->addr;
    switch (a->kind) {
    case GPUOS_TMAP_TILED:
        *call = "cuTensorMapEncodeTiled";
        return GOS_CU(cuTensorMapEncodeTiled)
                   ? (int)GOS_CU(cuTensorMapEncodeTiled)(m, t, a->rank, addr, dim, stride, box, es, il, sw, l2, oob)
                   : -1;
    case GPUOS_TMAP_IM2COL:
        *call = "cuTensorMapEncodeIm2col";
        return GOS_CU(cuTensorMapEncodeIm2col)
                   ? (int)GOS_CU(cuTensorMapEncodeIm2col)(m, t, a->rank, addr, dim, stride, a->lower, a->upper,
                                                     a->channels, a->pixels, es, il, sw, l2, oob)
                   : -1;
    case GPUOS_TMAP_IM2COL_WIDE:
        *call = "cuTensorMapEncodeIm2colWide";
        return GOS_CU(cuTensorMapEncodeIm2colWide)
                   ? (int)GOS_CU(cuTensorMapEncodeIm2colWide)(m, t, a->rank, addr, dim, stride, a->lower[0], a->upper[0],
                                                         a->channels, a->pixels, es, il,
                                                         (CUtensorMapIm2ColWideMode)a->wide_mode, sw, l2, oob)
                   : -1;
    default:
        *call = "cuTensorMapReplaceAddress";
        memcpy(m, a->map, sizeof *m);
        return GOS_CU(cuTensorMapReplaceAddress) ? (int)GOS_CU(cuTensorMapReplaceAddress)(m, addr) : -1;
    }
}

int gos_cuda_tmap_encode(gos_device *d, const gpuos_tmap_args *a, void *map)
{
    _Static_assert(sizeof(CUtensorMap) == GPUOS_TMAP_BYTES, "a tensor map is 128 bytes");
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    CUtensorMap m;
    const char *call = "";
    int r = encode(a, &m, &call);
    if (r < 0)
        return gos_cu_missing(call);
    if ((rc = gos_cu_check((CUresult)r, call)))
        return r == CUDA_ERROR_INVALID_VALUE ? GOS_EINVAL : rc;
    memcpy(map, &m, sizeof m);
    return GOS_OK;
}
