/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_exec.c: pillar 3 execution on a real GPU (exec_ops.h), in whichever
 * process opens the device: the daemon (isolation = none) or an executor.
 *
 * Everything runs in the device's primary context (made current on every call,
 * since the daemon calls from several threads). Streams are non-blocking; events
 * keep timing enabled (GPU time accounting, paper 002 section 5.1); event_sync
 * polls cuEventQuery with sched_yield so that a completed task is noticed within
 * microseconds (a blocking wait costs tens of microseconds per dispatch).
 * Kernel parameters arrive packed and go to the driver as one buffer
 * (CU_LAUNCH_PARAM_BUFFER_POINTER), so the daemon needs no knowledge of a
 * kernel's signature. The built-in module GOS_EXEC_BUILTIN ("builtin"; its
 * image name "exec" is accepted too) is kernels/exec.cu. */
#include "device/cuda/cuda_internal.h"
#include "device/exec_builtin.h"
#include "device/exec_ops.h"
#include "device/modimage.h"

#include "common/status.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cx_mod {
    int builtin; /* functions come from the embedded image "exec" */
    CUmodule mod;
};

/* The hot path (every dispatched task) calls the driver through pointers resolved
 * once, and makes the context current only when the thread's is another one:
 * a by-name lookup and a context switch per call cost microseconds per launch. */
static struct {
    __typeof__(&cuCtxSetCurrent) setcur;
    __typeof__(&cuEventRecord) record;
    __typeof__(&cuEventQuery) query;
    __typeof__(&cuEventElapsedTime) elapsed;
    __typeof__(&cuMemcpyHtoDAsync) htod;
    __typeof__(&cuMemcpyDtoHAsync) dtoh;
    __typeof__(&cuLaunchKernelEx) launch;
    __typeof__(&cuStreamWriteValue32) write32; /* NULL: none (or refused once) */
} P;
static CUfunction fill_fn; /* the built-in fill, once handed out (ex_launch's one-word writes) */
static _Thread_local gos_device *cur_dev;
static int abandoned; /* atomic: shutdown gave up on running work (ex_abandon) */

/* The functions of the built-in module handed out so far, by kernel name, so
 * that launch_ranges knows their signatures (exec_builtin.c). The embedded
 * module lives as long as the context: its CUfunctions never change. */
static struct {
    CUfunction f;
    char name[16];
} builtin_fns[16];
static int n_builtin_fns;
static pthread_mutex_t builtin_lock = PTHREAD_MUTEX_INITIALIZER;

static int fast_enter(gos_device *d)
{
    if (cur_dev == d)
        return GOS_OK;
    int rc = gos_cuda_enter(d);
    if (!rc)
        cur_dev = d;
    return rc;
}

static int ex_init(gos_device *d)
{
    P.setcur = GOS_CU(cuCtxSetCurrent);
    P.record = GOS_CU(cuEventRecord);
    P.query = GOS_CU(cuEventQuery);
    P.elapsed = GOS_CU(cuEventElapsedTime);
    P.htod = GOS_CU(cuMemcpyHtoDAsync);
    P.dtoh = GOS_CU(cuMemcpyDtoHAsync);
    P.launch = GOS_CU(cuLaunchKernelEx);
    P.write32 = GOS_CU(cuStreamWriteValue32);
    if (!P.setcur || !P.record || !P.query || !P.elapsed || !P.htod || !P.dtoh || !P.launch)
        return gos_fail(GOS_EUNSUPPORTED, "the CUDA driver lacks an entry point the daemon needs "
                                          "(cuEventRecord, cuLaunchKernelEx, ...)");
    return fast_enter(d);
}

static int ex_mem_alloc(gos_device *d, uint64_t bytes, uint64_t *dptr)
{
    CUdeviceptr p = 0;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuMemAlloc, &p, (size_t)bytes);
    if (!rc)
        *dptr = (uint64_t)p;
    return rc;
}

static int ex_mem_free(gos_device *d, uint64_t dptr)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemFree, (CUdeviceptr)dptr);
}

static int ex_mem_info(gos_device *d, uint64_t *free_b, uint64_t *total_b)
{
    size_t f = 0, t = 0;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuMemGetInfo, &f, &t);
    *free_b = f;
    *total_b = t;
    return rc;
}

static int ex_host_register(gos_device *d, void *p, size_t bytes)
{
    int rc = gos_cuda_enter(d);
    /* mapped too: a region a client asked at its own address is reached by
     * kernels there (exec_mem.c, xe_region_add) */
    return rc ? rc : CU_CALL(cuMemHostRegister, p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
}

static int ex_host_device_ptr(gos_device *d, void *p, uint64_t *dptr)
{
    CUdeviceptr dp = 0;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuMemHostGetDevicePointer, &dp, p, 0);
    *dptr = rc ? 0 : (uint64_t)dp;
    return rc;
}

static int ex_host_unregister(gos_device *d, void *p)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemHostUnregister, p);
}

static int ex_host_alloc(gos_device *d, size_t bytes, void **p)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemHostAlloc, p, bytes, CU_MEMHOSTALLOC_PORTABLE);
}

static int ex_host_free(gos_device *d, void *p)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemFreeHost, p);
}

static int ex_stream_create(gos_device *d, void **s)
{
    CUstream st = NULL;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuStreamCreate, &st, CU_STREAM_NON_BLOCKING);
    *s = st;
    return rc;
}

static int ex_stream_create_prio(gos_device *d, int prio, void **s)
{
    CUstream st = NULL;
    int least = 0, greatest = 0;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuCtxGetStreamPriorityRange, &least, &greatest);
    if (!rc)
        rc = CU_CALL(cuStreamCreateWithPriority, &st, CU_STREAM_NON_BLOCKING, prio > 0 ? greatest : least);
    *s = st;
    return rc;
}

static int ex_stream_destroy(gos_device *d, void *s)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuStreamDestroy, (CUstream)s);
}

static int ex_stream_sync(gos_device *d, void *s)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuStreamSynchronize, (CUstream)s);
}

static int ex_htod(gos_device *d, uint64_t dst, const void *src, size_t n, void *s)
{
    int rc = fast_enter(d);
    return rc ? rc : gos_cu_check(P.htod((CUdeviceptr)dst, src, n, (CUstream)s), "cuMemcpyHtoDAsync");
}

static int ex_dtoh(gos_device *d, void *dst, uint64_t src, size_t n, void *s)
{
    int rc = fast_enter(d);
    return rc ? rc : gos_cu_check(P.dtoh(dst, (CUdeviceptr)src, n, (CUstream)s), "cuMemcpyDtoHAsync");
}

static int ex_dtod(gos_device *d, uint64_t dst, uint64_t src, size_t n, void *s)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemcpyDtoDAsync, (CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)s);
}

static int ex_htod_sync(gos_device *d, uint64_t dst, const void *src, size_t n)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemcpyHtoD, (CUdeviceptr)dst, src, n);
}

static int ex_dtoh_sync(gos_device *d, void *dst, uint64_t src, size_t n)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemcpyDtoH, dst, (CUdeviceptr)src, n);
}

static int ex_module_load(gos_device *d, const void *image, size_t bytes, const char *name, void **out)
{
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    struct cx_mod *m = calloc(1, sizeof *m);
    if (!m)
        return gos_fail(GOS_ENOMEM, "out of memory");
    if (!image) {
        if (!name || (strcmp(name, GOS_EXEC_BUILTIN) && strcmp(name, "exec"))) {
            free(m);
            return gos_fail(GOS_EINVAL, "the GPU has no built-in module \"%s\" (try %s)", name ? name : "",
                            GOS_EXEC_BUILTIN);
        }
        m->builtin = 1;
        *out = m;
        return GOS_OK;
    }
    /* PTX must be NUL-terminated; fatbins and cubins do not mind the extra byte. */
    char *copy = malloc(bytes + 1);
    if (!copy) {
        free(m);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    memcpy(copy, image, bytes);
    copy[bytes] = 0;
    rc = CU_CALL(cuModuleLoadData, &m->mod, copy);
    free(copy);
    if (rc) {
        free(m);
        return rc;
    }
    *out = m;
    return GOS_OK;
}

/* Issue 44.2: the globals and constant banks of the code the driver will take
 * for this GPU (device/modimage.h). */
static int ex_module_bytes(gos_device *d, const void *image, size_t bytes, uint64_t *need)
{
    return gos_img_device_bytes(image, bytes, d->info.cc_major * 10 + d->info.cc_minor, need);
}

static int ex_module_unload(gos_device *d, void *mod)
{
    struct cx_mod *m = mod;
    int rc = GOS_OK;
    if (!m->builtin && !(rc = gos_cuda_enter(d)))
        rc = CU_CALL(cuModuleUnload, m->mod);
    free(m);
    return rc;
}

static int ex_module_global(gos_device *d, void *mod, const char *name, uint64_t *dptr, uint64_t *bytes)
{
    const struct cx_mod *m = mod;
    if (m->builtin)
        return gos_fail(GOS_EINVAL, "the built-in module has no global \"%s\"", name);
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    CUdeviceptr p = 0;
    size_t n = 0;
    if ((rc = CU_CALL(cuModuleGetGlobal, &p, &n, m->mod, name)))
        return rc;
    *dptr = (uint64_t)p;
    *bytes = (uint64_t)n;
    return GOS_OK;
}

static int ex_function(gos_device *d, void *mod, const char *name, void **fn)
{
    struct cx_mod *m = mod;
    CUfunction f = NULL;
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    if (m->builtin) {
        rc = gos_cuda_function(d, "exec", name, &f);
        if (!rc && (!gos_exec_builtin_known(name) || strlen(name) >= sizeof builtin_fns[0].name))
            rc = gos_fail(GOS_EINVAL, "kernel %s of the built-in module has no known signature", name);
        if (!rc) {
            pthread_mutex_lock(&builtin_lock);
            int i = 0;
            while (i < n_builtin_fns && builtin_fns[i].f != f)
                i++;
            if (i == n_builtin_fns && i < 16) {
                builtin_fns[i].f = f;
                snprintf(builtin_fns[i].name, sizeof builtin_fns[i].name, "%s", name);
                n_builtin_fns++;
                if (!strcmp(name, "fill"))
                    __atomic_store_n(&fill_fn, f, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&builtin_lock);
        }
    }
    else if ((rc = CU_CALL(cuModuleGetFunction, &f, m->mod, name))) {
        char why[256];
        snprintf(why, sizeof why, "%s", gos_last_error());
        rc = gos_fail(rc, "kernel %s: %s", name, why);
    }
    *fn = f;
    return rc;
}

/* A fill of one word by one block (the completion marks of gpuos's libcuda:
 * every event record and host function has one) is a stream memory write,
 * not a kernel: a one-thread kernel between two others costs the GPU a few
 * microseconds, the write ordered behind them (with its memory barrier) much
 * less. The word is device memory or mapped host memory the kernel would
 * write at the same address. 1: written, 0: launch the kernel instead (the
 * write refused turns the path off for good). */
static int fill_as_write(CUfunction f, const struct gos_launch_cfg *c, void *stream)
{
    struct {
        uint64_t p;
        uint32_t value, pad;
        uint64_t count;
    } prm;
    if (!P.write32 || f != __atomic_load_n(&fill_fn, __ATOMIC_ACQUIRE) || c->param_bytes != sizeof prm ||
        c->grid[0] * c->grid[1] * c->grid[2] != 1)
        return 0;
    memcpy(&prm, c->params, sizeof prm);
    if (prm.count != 1 || !prm.p || prm.p % 4)
        return 0;
    if (P.write32(stream, (CUdeviceptr)prm.p, prm.value, 0) == CUDA_SUCCESS)
        return 1;
    P.write32 = NULL; /* (this driver or memory refuses stream writes: kernels from here on) */
    return 0;
}

static int ex_launch(gos_device *d, void *fn, const struct gos_launch_cfg *c, void *stream)
{
    CUfunction f = fn;
    int rc = fast_enter(d);
    if (rc)
        return rc;
    if (fill_as_write(f, c, stream))
        return GOS_OK;
    if (c->smem > 48 * 1024 &&
        (rc = CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)c->smem)))
        return rc;
    unsigned cl = c->cluster[0] * c->cluster[1] * c->cluster[2];
    if (cl > 8 && (rc = CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)))
        return rc;
    CUlaunchAttribute attr[1];
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = c->grid[0];
    cfg.gridDimY = c->grid[1];
    cfg.gridDimZ = c->grid[2];
    cfg.blockDimX = c->block[0];
    cfg.blockDimY = c->block[1];
    cfg.blockDimZ = c->block[2];
    cfg.sharedMemBytes = c->smem;
    cfg.hStream = stream;
    if (cl > 1) {
        memset(attr, 0, sizeof attr);
        attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr[0].value.clusterDim.x = c->cluster[0];
        attr[0].value.clusterDim.y = c->cluster[1];
        attr[0].value.clusterDim.z = c->cluster[2];
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    size_t size = c->param_bytes;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)c->params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    return gos_cu_check(P.launch(&cfg, f, NULL, size ? extra : NULL), "cuLaunchKernelEx");
}

/* The device ranges of a built-in kernel's launch (exec_builtin.c); a function
 * of a client's own module: unknown (-1). */
static int ex_launch_ranges(gos_device *d, void *fn, const struct gos_launch_cfg *c, struct gos_dev_range *r, int *n)
{
    char name[16] = "";
    pthread_mutex_lock(&builtin_lock);
    for (int i = 0; i < n_builtin_fns; i++)
        if (builtin_fns[i].f == fn)
            memcpy(name, builtin_fns[i].name, sizeof name);
    pthread_mutex_unlock(&builtin_lock);
    *n = -1;
    return name[0] ? gos_exec_builtin_ranges(name, c, r, n) : GOS_OK;
}

static void ex_abandon(gos_device *d)
{
    __atomic_store_n(&abandoned, 1, __ATOMIC_RELAXED);
}

static int ex_event_create(gos_device *d, void **ev)
{
    CUevent e = NULL;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuEventCreate, &e, CU_EVENT_DEFAULT);
    *ev = e;
    return rc;
}

static int ex_event_destroy(gos_device *d, void *ev)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuEventDestroy, (CUevent)ev);
}

static int ex_event_record(gos_device *d, void *ev, void *s)
{
    int rc = fast_enter(d);
    return rc ? rc : gos_cu_check(P.record((CUevent)ev, (CUstream)s), "cuEventRecord");
}

static int ex_event_sync(gos_device *d, void *ev)
{
    int rc = fast_enter(d);
    if (rc)
        return rc;
    for (;;) {
        CUresult r = P.query((CUevent)ev);
        if (r == CUDA_SUCCESS)
            return GOS_OK;
        if (r != CUDA_ERROR_NOT_READY)
            return gos_cu_check(r, "cuEventQuery");
        if (__atomic_load_n(&abandoned, __ATOMIC_RELAXED))
            return gos_fail(GOS_EIO, "GPU work abandoned: the daemon is shutting down (the context ends with it)");
        sched_yield();
    }
}

static int ex_event_elapsed(gos_device *d, void *a, void *b, uint64_t *ns)
{
    float ms = 0;
    int rc = fast_enter(d);
    if (!rc)
        rc = gos_cu_check(P.elapsed(&ms, (CUevent)a, (CUevent)b), "cuEventElapsedTime");
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
    return rc;
}

/* Every attribute the driver answers (those it does not know, or refuses, stay
 * invalid: not an error). */
static int ex_device_attributes(gos_device *d, int32_t *value, uint8_t *valid, int n)
{
    struct gos_cuda *c = d->priv;
    CUresult (*get)(int *, CUdevice_attribute, CUdevice) = GOS_CU(cuDeviceGetAttribute);
    if (!get)
        return gos_fail(GOS_EUNSUPPORTED, "the CUDA driver lacks cuDeviceGetAttribute");
    for (int a = 1; a < n && a < GOS_ATTR_CLUSTERS; a++) {
        int v = 0;
        valid[a] = get(&v, (CUdevice_attribute)a, c->dev) == CUDA_SUCCESS;
        value[a] = valid[a] ? v : 0;
    }
    /* the GPCs' shape: clusters of each size at one block per SM (the built-in
     * empty kernel asking for all of a block's opt-in shared memory) */
    CUfunction f;
    CUresult (*occ)(int *, CUfunction, const CUlaunchConfig *) = GOS_CU(cuOccupancyMaxActiveClusters);
    int smem = valid[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]
                   ? value[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]
                   : 0;
    if (n < GOS_ATTR_CLUSTERS + GOS_ATTR_CLUSTERS_MAX || !occ || smem <= 0 || gos_cuda_enter(d) ||
        gos_cuda_function(d, "exec", "empty", &f))
        return GOS_OK; /* not known: the shim estimates */
    int set = !CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem) &&
              !CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    for (int cs = 1; set && cs <= GOS_ATTR_CLUSTERS_MAX; cs++) {
        CUlaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at.value.clusterDim.x = (unsigned)cs;
        at.value.clusterDim.y = at.value.clusterDim.z = 1;
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = (unsigned)cs;
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 32;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.sharedMemBytes = (unsigned)smem;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        int k = 0;
        int i = GOS_ATTR_CLUSTERS + cs - 1;
        valid[i] = occ(&k, f, &cfg) == CUDA_SUCCESS;
        value[i] = valid[i] ? k : 0;
    }
    CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0);
    return GOS_OK;
}

const struct gos_exec_ops gos_cuda_exec_ops = {
    .close = NULL,
    .init = ex_init,
    .mem_alloc = ex_mem_alloc,
    .mem_free = ex_mem_free,
    .mem_info = ex_mem_info,
    .host_register = ex_host_register,
    .host_device_ptr = ex_host_device_ptr,
    .host_unregister = ex_host_unregister,
    .host_alloc = ex_host_alloc,
    .host_free = ex_host_free,
    .stream_create = ex_stream_create,
    .stream_create_prio = ex_stream_create_prio,
    .stream_destroy = ex_stream_destroy,
    .stream_sync = ex_stream_sync,
    .copy_htod = ex_htod,
    .copy_dtoh = ex_dtoh,
    .copy_dtod = ex_dtod,
    .copy_htod_sync = ex_htod_sync,
    .copy_dtoh_sync = ex_dtoh_sync,
    .module_load = ex_module_load,
    .module_bytes = ex_module_bytes,
    .module_unload = ex_module_unload,
    .function = ex_function,
    .module_global = ex_module_global,
    .launch = ex_launch,
    .launch_ranges = ex_launch_ranges,
    .abandon = ex_abandon,
    .event_create = ex_event_create,
    .event_destroy = ex_event_destroy,
    .event_record = ex_event_record,
    .event_sync = ex_event_sync,
    .event_elapsed_ns = ex_event_elapsed,
    .device_attributes = ex_device_attributes,
    .tmap_encode = gos_cuda_tmap_encode,
};
