/* SPDX-License-Identifier: Apache-2.0 */
/* real.c: NVIDIA's own libcuda.so.1 inside the CUDA program's process, only
 * when the operator opts in with GPUOS_CUDASHIM_LT=real: for the private table
 * cuBLASLt consults before choosing a kernel (exports.c). By default nothing
 * calls here (issue 43: cuInit opens /dev/nvidiactl and the GPU's node, which a
 * locked-down node closes to tenants; tensor maps are the daemon's, tmap.c).
 * Nothing here runs on the GPU or holds a program's memory: the program's work
 * goes through the daemon as everywhere else.
 *
 * The library is opened by path ($GPUOS_REAL_LIBCUDA, else the usual driver
 * folders), never by name (that would find gpuos's own), and initialised with
 * cuInit, which opens the device without a context or memory. A context is made
 * only when one of its answers refuses without one (shim_real_ctx_push). Without
 * the real library every caller refuses by name, as before. */
#include "common/env.h"
#include "cudashim/driver.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t real_lock = PTHREAD_MUTEX_INITIALIZER;

void *shim_real_fn(const char *name)
{
    static void *h;
    static int tried, inited;
    pthread_mutex_lock(&real_lock);
    if (!tried) {
        tried = 1;
        const char *env = gos_env(GOS_ENV_REAL_LIBCUDA);
        const char *paths[] = {env && *env ? env : NULL, "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                               "/usr/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1",
                               "/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"};
        /* $GPUOS_REAL_LIBCUDA set to a path that does not open: no real library at all */
        for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !h && !(i && env && *env); i++)
            if (paths[i])
                h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (shim_trace())
            shim_log("NVIDIA's libcuda.so.1: %s", h ? "opened (no context)" : "not found");
    }
    void *f = h ? dlsym(h, name) : NULL;
    if (f && !inited) { /* its answers may want the driver initialised: no context is made */
        CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
        inited = 1;
        if (init && init(0) && shim_trace())
            shim_log("NVIDIA's cuInit failed; what is asked of it may fail");
    }
    pthread_mutex_unlock(&real_lock);
    return f;
}

/* NVIDIA's primary context of its first device, made current on this thread
 * (1) when an answer refuses without a context (CUDA_ERROR_INVALID_CONTEXT:
 * XLA's tensor maps did, on driver 580). It is the one context gpuos makes in a
 * program's process, only then: it runs nothing and holds nothing of the
 * program's, but the driver's own memory for a context (a few hundred MB) is
 * not charged to the vGPU. */
int shim_real_ctx_push(void)
{
    static CUcontext ctx;
    static int tried;
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))shim_real_fn("cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))shim_real_fn("cuDevicePrimaryCtxRetain");
    CUresult (*push)(CUcontext) = (CUresult(*)(CUcontext))shim_real_fn("cuCtxPushCurrent_v2");
    pthread_mutex_lock(&real_lock);
    if (!tried) {
        tried = 1;
        CUdevice dev;
        if (!get || !retain || get(&dev, 0) || retain(&ctx, dev))
            ctx = NULL;
        if (shim_trace())
            shim_log("NVIDIA's driver wants a context: %s",
                     ctx ? "its primary context, retained in this process" : "none could be made");
    }
    CUcontext c = ctx;
    pthread_mutex_unlock(&real_lock);
    return c && push && !push(c);
}

void shim_real_ctx_pop(void)
{
    CUresult (*pop)(CUcontext *) = (CUresult(*)(CUcontext *))shim_real_fn("cuCtxPopCurrent_v2");
    CUcontext c;
    if (pop)
        pop(&c);
}

/* NVIDIA's private table of that id (NULL: no real library, or it refuses). */
const void *shim_real_export_table(const unsigned char id[16])
{
    CUresult (*get)(const void **, const CUuuid *) =
        (CUresult(*)(const void **, const CUuuid *))shim_real_fn("cuGetExportTable");
    CUuuid u;
    memcpy(u.bytes, id, 16);
    const void *t = NULL;
    if (!get || get(&t, &u) != CUDA_SUCCESS)
        return NULL;
    return t;
}
