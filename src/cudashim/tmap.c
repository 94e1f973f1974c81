/* tmap.c: tensor map (TMA descriptor) encoding of gpuos's libcuda.so.1 (in the
 * CUDA program's process; cuBLASLt's and Triton's Hopper kernels take them).
 *
 * A tensor map is 128 bytes the driver computes from its arguments alone (the
 * global address is the device address, which is the same in the daemon's
 * context); the format is the driver's own. So this is the one place the
 * library asks NVIDIA's driver for anything: it opens the real libcuda.so.1 by
 * its path ($GPUOS_REAL_LIBCUDA, else the usual system locations), takes the
 * encoders only, and creates no context there unless an encoder refuses
 * without one (real_ctx_push; the driver may need its cuInit, which opens the
 * device without a context or memory). Without the real library the encoders
 * are refused, named once. */
#include "common/env.h"
#include "cudashim/driver.h"

#include <dlfcn.h>
#include <stdlib.h>

static void *real_fn(const char *name)
{
    static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
    static void *h;
    static int tried, inited;
    pthread_mutex_lock(&l);
    if (!tried) {
        tried = 1;
        const char *env = getenv(GOS_ENV_REAL_LIBCUDA);
        const char *paths[] = {env && *env ? env : NULL, "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                               "/usr/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
                               "/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"};
        for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !h; i++)
            if (paths[i])
                h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (shim_trace())
            shim_log("tensor maps: %s", h ? "encoded by NVIDIA's libcuda.so.1 (no context)" : "no NVIDIA libcuda.so.1 found");
    }
    void *f = h ? dlsym(h, name) : NULL;
    if (f && !inited) { /* the encoders may want the driver initialised: no context is made */
        CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
        inited = 1;
        if (init && init(0) && shim_trace())
            shim_log("tensor maps: NVIDIA's cuInit failed; encoding may fail");
    }
    pthread_mutex_unlock(&l);
    return f;
}

/* NVIDIA's encoder may refuse without a current context
 * (CUDA_ERROR_INVALID_CONTEXT: XLA's calls were, on driver 580): then the real
 * driver's primary context of its first device is made current around the
 * call. It is the one context gpuos makes in a program's process, only then:
 * it runs nothing and holds nothing of the program's, but the driver's own
 * memory for a context (a few hundred MB) is not charged to the vGPU. */
static int real_ctx_push(void)
{
    static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
    static CUcontext ctx;
    static int tried;
    pthread_mutex_lock(&l);
    if (!tried) {
        tried = 1;
        CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))real_fn("cuDeviceGet");
        CUresult (*retain)(CUcontext *, CUdevice) =
            (CUresult(*)(CUcontext *, CUdevice))real_fn("cuDevicePrimaryCtxRetain");
        CUdevice dev;
        if (!get || !retain || get(&dev, 0) || retain(&ctx, dev))
            ctx = NULL;
        if (shim_trace())
            shim_log("tensor maps: NVIDIA's encoder wants a context: %s",
                     ctx ? "its primary context, retained in this process" : "none could be made");
    }
    CUcontext c = ctx;
    pthread_mutex_unlock(&l);
    CUresult (*push)(CUcontext) = (CUresult(*)(CUcontext))real_fn("cuCtxPushCurrent_v2");
    return c && push && !push(c);
}

static void real_ctx_pop(void)
{
    CUresult (*pop)(CUcontext *) = (CUresult(*)(CUcontext *))real_fn("cuCtxPopCurrent_v2");
    CUcontext c;
    if (pop)
        pop(&c);
}

/* r = NVIDIA's encoder's answer to `call` (an expression using f), called
 * again inside its context when it wants one. */
#define ENCODE(r, call)                                                                                                \
    CUresult r = (call);                                                                                               \
    if (r == CUDA_ERROR_INVALID_CONTEXT && real_ctx_push()) {                                                          \
        r = (call);                                                                                                    \
        real_ctx_pop();                                                                                                \
    }

E CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                  const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *box,
                                  const cuuint32_t *estrides, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                  CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    CUresult (*f)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                  const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = (void *)real_fn("cuTensorMapEncodeTiled");
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
        (void *)real_fn("cuTensorMapEncodeIm2col");
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
        (void *)real_fn("cuTensorMapEncodeIm2colWide");
    if (!f)
        return shim_unsupported("cuTensorMapEncodeIm2colWide (no NVIDIA libcuda.so.1 to encode tensor maps)");
    ENCODE(r, f(m, t, rank, addr, dim, strides, lower, upper, channels, pixels, estrides, il, mode, sw, l2, oob));
    return r;
}

E CUresult cuTensorMapReplaceAddress(CUtensorMap *m, void *addr)
{
    CUresult (*f)(CUtensorMap *, void *) = (void *)real_fn("cuTensorMapReplaceAddress");
    if (!f)
        return shim_unsupported("cuTensorMapReplaceAddress (no NVIDIA libcuda.so.1 to encode tensor maps)");
    ENCODE(r, f(m, addr));
    return r;
}
