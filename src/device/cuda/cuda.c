/* SPDX-License-Identifier: Apache-2.0 */
/* cuda.c: the real-GPU backend's core: loading libcuda with dlopen, entry points
 * by exact symbol (cuda_internal.h), device discovery and facts, the primary context, the
 * embedded kernel modules and the launch helper. The pillars' primitives are in
 * cuda_topo.c, cuda_mem.c, cuda_dvfs.c, cuda_exec.c. */
#define GOS_CUDA_MAX_SMS 256
#include "device/cuda/cuda_internal.h"
#include "device/dvfs_ops.h"
#include "device/exec_ops.h"
#include "device/mem_ops.h"
#include "device/topo_ops.h"

#include "chip/chip.h"
#include "common/status.h"
#include "device/kernels.h"
#include "device/cuda/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct gos_topo_ops gos_cuda_topo_ops;
extern const struct gos_mem_ops gos_cuda_mem_ops;
extern const struct gos_dvfs_ops gos_cuda_dvfs_ops;
extern const struct gos_exec_ops gos_cuda_exec_ops;
extern const struct gos_place_ops gos_cuda_place_ops;
extern const struct gos_p2p_ops gos_cuda_p2p_ops;
extern const struct gos_green_ops gos_cuda_green_ops;
extern const struct gos_vmm_ops gos_cuda_vmm_ops;

static pthread_mutex_t cu_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cu_lib;
static int cu_load_rc = 1; /* 1: not tried yet */
static char cu_load_msg[256];

#define PROC_CACHE 256
static struct {
    const char *name;
    void *fn;
} proc_cache[PROC_CACHE];
static int n_proc_cache;

void *gos_cu_proc(const char *name)
{
    if (!cu_lib)
        return NULL;
    pthread_mutex_lock(&cu_lock);
    for (int i = 0; i < n_proc_cache; i++)
        if (proc_cache[i].name == name || !strcmp(proc_cache[i].name, name)) {
            void *f = proc_cache[i].fn;
            pthread_mutex_unlock(&cu_lock);
            return f;
        }
    void *fn = dlsym(cu_lib, name);
    if (n_proc_cache < PROC_CACHE) {
        proc_cache[n_proc_cache].name = name;
        proc_cache[n_proc_cache].fn = fn;
        n_proc_cache++;
    }
    pthread_mutex_unlock(&cu_lock);
    return fn;
}

int gos_cu_check(CUresult r, const char *call)
{
    if (r == CUDA_SUCCESS)
        return GOS_OK;
    const char *name = NULL, *desc = NULL;
    __typeof__(&cuGetErrorName) en = GOS_CU(cuGetErrorName);
    __typeof__(&cuGetErrorString) es = GOS_CU(cuGetErrorString);
    if (en)
        en(r, &name);
    if (es)
        es(r, &desc);
    int code = GOS_EDEVICE;
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        code = GOS_ENOMEM;
    else if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE)
        code = GOS_ENODEV;
    else if (r == CUDA_ERROR_NOT_PERMITTED || r == CUDA_ERROR_NOT_SUPPORTED)
        code = r == CUDA_ERROR_NOT_PERMITTED ? GOS_EPERM : GOS_EUNSUPPORTED;
    return gos_fail(code, "%s: %s (%s)", call, name ? name : "CUDA error", desc ? desc : "?");
}

int gos_cu_missing(const char *call)
{
    return gos_fail(GOS_EUNSUPPORTED, "the CUDA driver lacks %s", call);
}

int gos_cu_load(void)
{
    pthread_mutex_lock(&cu_lock);
    if (cu_load_rc != 1) {
        int rc = cu_load_rc;
        pthread_mutex_unlock(&cu_lock);
        return rc ? gos_fail(rc, "%s", cu_load_msg) : GOS_OK;
    }
    cu_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu_lib) {
        cu_load_rc = GOS_ENODEV;
        snprintf(cu_load_msg, sizeof cu_load_msg, "no GPU: no NVIDIA driver (libcuda.so.1 not found)");
        pthread_mutex_unlock(&cu_lock);
        return gos_fail(cu_load_rc, "%s", cu_load_msg);
    }
    pthread_mutex_unlock(&cu_lock);
    __typeof__(&cuInit) init = GOS_CU(cuInit);
    int rc = init ? gos_cu_check(init(0), "cuInit") : gos_cu_missing("cuInit");
    pthread_mutex_lock(&cu_lock);
    cu_load_rc = rc;
    if (rc)
        snprintf(cu_load_msg, sizeof cu_load_msg, "%s", gos_last_error());
    pthread_mutex_unlock(&cu_lock);
    if (rc == GOS_EDEVICE || rc == GOS_ENODEV)
        return gos_fail(GOS_ENODEV, "no usable GPU: %s", cu_load_msg);
    return rc;
}

int gos_cuda_device_count(void)
{
    if (gos_cu_load())
        return 0;
    int n = 0;
    if (CU_CALL(cuDeviceGetCount, &n))
        return 0;
    return n;
}

int gos_cuda_enter(gos_device *d)
{
    struct gos_cuda *c = d->priv;
    return CU_CALL(cuCtxSetCurrent, c->ctx);
}

int gos_cuda_pillar_state(gos_device *d, void **priv, size_t size, int *fresh)
{
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    *fresh = !*priv;
    if (*fresh && !(*priv = calloc(1, size)))
        return gos_fail(GOS_ENOMEM, "out of memory");
    return GOS_OK;
}

void gos_cuda_free_ptrs(const CUdeviceptr *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ptrs[i])
            CU_CALL(cuMemFree, ptrs[i]);
}

int gos_cuda_function(gos_device *d, const char *image, const char *fn, CUfunction *out)
{
    struct gos_cuda *c = d->priv;
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    CUmodule mod = NULL;
    for (int i = 0; i < c->n_modules; i++)
        if (!strcmp(c->modules[i].name, image))
            mod = c->modules[i].mod;
    if (!mod) {
        const struct gos_kernel_image *k = gos_kernel_images;
        while (k->name && strcmp(k->name, image))
            k++;
        if (!k->name)
            return gos_fail(GOS_EUNSUPPORTED, "this gpuos was built without kernels (no nvcc): "
                                              "kernel image \"%s\" is missing", image);
        if (c->n_modules == GOS_CUDA_MAX_MODULES)
            return gos_fail(GOS_ENOMEM, "too many kernel modules loaded");
        if ((rc = CU_CALL(cuModuleLoadData, &mod, k->begin)))
            return rc;
        c->modules[c->n_modules].name = k->name;
        c->modules[c->n_modules].mod = mod;
        c->n_modules++;
    }
    rc = CU_CALL(cuModuleGetFunction, out, mod, fn);
    if (rc)
        return gos_fail(rc, "kernel %s in image %s: %s", fn, image, gos_last_error());
    return GOS_OK;
}

int gos_cuda_launch(CUfunction f, unsigned grid, unsigned block, unsigned cluster, unsigned smem,
                    CUstream stream, void **params)
{
    int rc;
    if (smem > 48 * 1024 &&
        (rc = CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem)))
        return rc;
    if (cluster > 8 &&
        (rc = CU_CALL(cuFuncSetAttribute, f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)))
        return rc;
    CUlaunchAttribute attr[1];
    CUlaunchConfig cfg = {0};
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = block;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = smem;
    cfg.hStream = stream;
    if (cluster > 1) {
        memset(attr, 0, sizeof attr);
        attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr[0].value.clusterDim.x = cluster;
        attr[0].value.clusterDim.y = 1;
        attr[0].value.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    return CU_CALL(cuLaunchKernelEx, &cfg, f, params, NULL);
}

static void cuda_close(gos_device *d)
{
    struct gos_cuda *c = d->priv;
    if (c && c->ctx) {
        gos_cuda_enter(d);
        gos_device_close_pillars(d);
        for (int i = 0; i < c->n_modules; i++)
            CU_CALL(cuModuleUnload, c->modules[i].mod);
        CU_CALL(cuDevicePrimaryCtxRelease, c->dev);
    }
    free(c);
    free(d);
}

static int cuda_refresh(gos_device *d)
{
    gos_nvml_fill_info(&d->info);
    return GOS_OK;
}

static const struct gos_device_ops cuda_ops = {
    .name = "cuda",
    .close = cuda_close,
    .refresh = cuda_refresh,
    .topo = &gos_cuda_topo_ops,
    .mem = &gos_cuda_mem_ops,
    .dvfs = &gos_cuda_dvfs_ops,
    .exec = &gos_cuda_exec_ops,
    .place = &gos_cuda_place_ops,
    .p2p = &gos_cuda_p2p_ops,
    .green = &gos_cuda_green_ops,
    .vmm = &gos_cuda_vmm_ops,
};

static int attr(CUdevice dev, CUdevice_attribute a, int *v) { return CU_CALL(cuDeviceGetAttribute, v, a, dev); }

int gos_cuda_open(int ordinal, gos_device **out)
{
    int rc = gos_cu_load();
    if (rc)
        return rc;
    int n = 0;
    if ((rc = CU_CALL(cuDeviceGetCount, &n)))
        return rc;
    if (n == 0)
        return gos_fail(GOS_ENODEV, "no GPU: the CUDA driver reports 0 devices");
    if (ordinal < 0 || ordinal >= n)
        return gos_fail(GOS_ENODEV, "no GPU %d: this machine has %d (0..%d)", ordinal, n, n - 1);
    gos_device *d = calloc(1, sizeof *d);
    struct gos_cuda *c = calloc(1, sizeof *c);
    if (!d || !c) {
        free(d);
        free(c);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    d->ops = &cuda_ops;
    d->priv = c;
    gos_device_info *I = &d->info;
    snprintf(I->backend, sizeof I->backend, "cuda");
    I->ordinal = ordinal;
    I->caps = GOS_CAP_SYSTEM_CLOCKS;
    if ((rc = CU_CALL(cuDeviceGet, &c->dev, ordinal)) ||
        (rc = CU_CALL(cuDeviceGetName, I->name, (int)sizeof I->name, c->dev)))
        goto fail;
    CUuuid u;
    if ((rc = CU_CALL(cuDeviceGetUuid, &u, c->dev)))
        goto fail;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(I->uuid, sizeof I->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    CU_CALL(cuDeviceGetPCIBusId, I->pci_bus_id, (int)sizeof I->pci_bus_id, c->dev);
    int l2 = 0, smem = 0;
    size_t mem = 0;
    if ((rc = attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &I->cc_major)) ||
        (rc = attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &I->cc_minor)) ||
        (rc = attr(c->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &I->sm_count)) ||
        (rc = attr(c->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l2)) ||
        (rc = attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &smem)) ||
        (rc = attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &I->max_threads_per_sm)) ||
        (rc = CU_CALL(cuDeviceTotalMem, &mem, c->dev)))
        goto fail;
    I->l2_bytes = (uint64_t)l2;
    I->mem_bytes = mem;
    I->max_smem_per_block_optin = smem;
    CU_CALL(cuDriverGetVersion, &I->driver_cuda_version);
    /* The chart holds GOS_MAX_SMS (512, simulated chips); the embedded kernels'
     * per-SM tables (the .cu kernels, cuda_mem.c, cuda_topo.c, cuda_dvfs.c) 256. */
    if (I->sm_count > GOS_MAX_SMS || I->sm_count > GOS_CUDA_MAX_SMS) {
        rc = gos_fail(GOS_EUNSUPPORTED, "%s has %d SMs; gpuos supports up to %d on a GPU", I->name,
                      I->sm_count, GOS_CUDA_MAX_SMS);
        goto fail;
    }
    if ((rc = CU_CALL(cuDevicePrimaryCtxRetain, &c->ctx, c->dev))) {
        c->ctx = NULL;
        goto fail;
    }
    if ((rc = gos_cuda_enter(d)))
        goto fail;
    gos_nvml_fill_info(I);
    *out = d;
    return GOS_OK;
fail:
    cuda_close(d);
    return rc;
}
