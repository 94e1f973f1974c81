/* SPDX-License-Identifier: Apache-2.0 */
/* tmap.c: tensor map (TMA descriptor) encoding of gpuos's libcuda.so.1 (in the
 * CUDA program's process; cuBLASLt's and Triton's Hopper kernels take them).
 *
 * A tensor map is 128 bytes the driver computes from its arguments alone (the
 * global address is the device address, which is the same in the daemon's
 * context); the format is the driver's own. So the encoders are NVIDIA's
 * (real.c: its libcuda.so.1 opened by path, no context unless an encoder
 * refuses without one). Without the real library the encoders are refused,
 * named once. */
#include "cudashim/driver.h"

/* r = NVIDIA's encoder's answer to `call` (an expression using f), called
 * again inside its context when it wants one. */
#define ENCODE(r, call)                                                                                                \
    CUresult r = (call);                                                                                               \
    if (r == CUDA_ERROR_INVALID_CONTEXT && shim_real_ctx_push()) {                                                     \
        r = (call);                                                                                                    \
        shim_real_ctx_pop();                                                                                           \
    }

E CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                  const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *box,
                                  const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    CUresult (*f)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                  const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = (void *)shim_real_fn("cuTensorMapEncodeTiled");
    if (!f)
        return shim_unsupported("cuTensorMapEncodeTiled (no NVIDIA libcuda.so.1 to encode tensor maps)");
    ENCODE(r, f(m, t, rank, addr, dim, strides, box, estrides, il, sw, l2, oob));
    return r;
}

E CUresult cuTensorMapEncodeIm2col(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                   const cuuint64_t *dim, const cuuint64_t *strides, const int *lower,
                                   const int *upper, cuuint32_t channels, cuuint32_t pixels,
                                   const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    CUresult (*f)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                  const int *, const int *, cuuint32_t, cuuint32_t, const cuuint32_t *, CUtensorMapInterleave,
                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) =
        (void *)shim_real_fn("cuTensorMapEncodeIm2col");
    if (!f)
        return shim_unsupported("cuTensorMapEncodeIm2col (no NVIDIA libcuda.so.1 to encode tensor maps)");
    ENCODE(r, f(m, t, rank, addr, dim, strides, lower, upper, channels, pixels, estrides, il, sw, l2, oob));
    return r;
}

E CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                       const cuuint64_t *dim, const cuuint64_t *strides, int lower, int upper,
                                       cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *estrides,
                                       CUtensorMapInterleave il, CUtensorMapIm2ColWideMode mode,
                                       CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    CUresult (*f)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                  int, int, cuuint32_t, cuuint32_t, const cuuint32_t *, CUtensorMapInterleave,
                  CUtensorMapIm2ColWideMode, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) =
        (void *)shim_real_fn("cuTensorMapEncodeIm2colWide");
    if (!f)
        return shim_unsupported("cuTensorMapEncodeIm2colWide (no NVIDIA libcuda.so.1 to encode tensor maps)");
    ENCODE(r, f(m, t, rank, addr, dim, strides, lower, upper, channels, pixels, estrides, il, mode, sw, l2, oob));
    return r;
}

E CUresult cuTensorMapReplaceAddress(CUtensorMap *m, void *addr)
{
    CUresult (*f)(CUtensorMap *, void *) = (void *)shim_real_fn("cuTensorMapReplaceAddress");
    if (!f)
        return shim_unsupported("cuTensorMapReplaceAddress (no NVIDIA libcuda.so.1 to encode tensor maps)");
    ENCODE(r, f(m, addr));
    return r;
}
