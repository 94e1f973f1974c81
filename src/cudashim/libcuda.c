/* libcuda.c: the Driver API of gpuos's libcuda.so.1 (docs/readme-cudashim.md).
 *
 * One process = one client of `gpuos serve` ($GPUOS_SOCKET) on the vGPU
 * $GPUOS_VGPU (default "default"), opened by cuInit. Device 0 is the vGPU's
 * device; its memory total is the vGPU's memory share. Contexts are emulated
 * (all share the one client); streams all map onto the client's one ordered
 * queue (stronger ordering than CUDA promises, so correct programs stay
 * correct); an event record is the built-in "stamp" kernel in queue order (GPU
 * timestamps; the host clock where the daemon has no such kernel). Symbols carry the exact
 * versioned names cuda.h maps to (cuMemAlloc_v2, ...); _ptds/_ptsz variants are
 * the same functions. Entry points not here are generated stubs that return
 * CUDA_ERROR_NOT_SUPPORTED and name themselves once. This file includes cuda.h
 * for its types only; nothing here loads NVIDIA's driver.
 *
 * Escape for the daemon's built-in kernels (CI on the simulated device): an
 * image that starts with "gpuos-builtin" loads the built-in module "builtin"
 * (kernels loop, madd, mmul, fill, empty, sleep_ns with their known layouts). */
#include <cuda.h>
/* The legacy (unversioned) entry points are defined here under their own
 * names, next to the versioned ones cuda.h maps the base names to. */
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags
#undef cuDevicePrimaryCtxReset
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuGetProcAddress
#undef cuStreamIsCapturing
#undef cuStreamGetCaptureInfo

#include "common/env.h"
#include "cudashim/daemon_ext.h"
#include "common/grow.h"
#include "cudashim/shim.h"
#include "gpuos/gpuos.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define E SHIM_EXPORT
#define DRIVER_VERSION 13000
#define BUILTIN_ESCAPE "gpuos-builtin"
#define GOS_PARAM_BUF 4096 /* gpuos_params, GOS_PARAM_MAX */

/* ------------------------------------------------------------------ */
/* diagnostics */

static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;
static struct named {
    struct named *next;
    char name[];
} *named;

int shim_trace(void)
{
    static int t = -1;
    if (t < 0) {
        const char *v = getenv(GOS_ENV_CUDASHIM_TRACE);
        t = v && *v && strcmp(v, "0");
    }
    return t;
}

void shim_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpuos libcuda: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int shim_unsupported(const char *name)
{
    pthread_mutex_lock(&named_lock);
    struct named *n;
    for (n = named; n && strcmp(n->name, name); n = n->next)
        ;
    if (!n && (n = malloc(sizeof *n + strlen(name) + 1))) {
        strcpy(n->name, name);
        n->next = named;
        named = n;
        fprintf(stderr, "gpuos libcuda: %s is not supported\n", name);
    }
    pthread_mutex_unlock(&named_lock);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------------ */
/* state */

enum { MAGIC_CTX = 0x63747831, MAGIC_MOD = 0x6d6f6431, MAGIC_FN = 0x666e6331, MAGIC_STREAM = 0x73747231,
       MAGIC_EVENT = 0x65767431, MAGIC_DEAD = 0xdeadbeef };

struct CUctx_st {
    uint32_t magic;
    int primary, refs;
    unsigned flags;
};
struct CUmod_st {
    uint32_t magic;
    gpuos_module h;
    int builtin;
    void *image;
    size_t bytes;
};
struct CUfunc_st {
    uint32_t magic;
    gpuos_function h;
    struct CUmod_st *mod;
    char name[4096]; /* C++ mangled names (cuFuncGetName) */
    struct shim_kinfo k;
    char why[160];
    int max_dyn_smem;
};
struct CUstream_st {
    uint32_t magic;
    unsigned flags;
    int priority;
};
struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    int recorded;     /* 1: host clock in t; 2: GPU timestamp in the pool's slot; 3: no timing (queued) */
    int slot;         /* its 8 bytes in the event pool, -1 none */
    struct timespec t;
};

struct range {
    uint64_t p, n;
};

static struct {
    pthread_mutex_t m;
    int inited;
    CUresult init_rc;
    gpuos_vgpu *g;
    gpuos_device_facts dev;
    uint64_t quota;
    int cc;
    struct CUctx_st primary;
    struct range *allocs;
    int n_allocs, cap_allocs;
    struct range hosts[64];
    int n_hosts;
} S = {.m = PTHREAD_MUTEX_INITIALIZER, .primary = {MAGIC_CTX, 1, 0, 0}};

static __thread struct CUctx_st *cur_ctx;

static CUresult map_rc(int rc, const char *what)
{
    if (rc && shim_trace())
        shim_log("%s: %s", what, gpuos_error());
    switch (rc) {
    case GPUOS_OK:
        return CUDA_SUCCESS;
    case GPUOS_EINVAL:
        return CUDA_ERROR_INVALID_VALUE;
    case GPUOS_ENODEV:
        return CUDA_ERROR_NO_DEVICE;
    case GPUOS_EUNSUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED;
    case GPUOS_ENOMEM:
    case GPUOS_EBUSY:
    case GPUOS_ELIMIT: /* a daemon limit (allocations, queued work): resources exhausted */
        return CUDA_ERROR_OUT_OF_MEMORY;
    case GPUOS_EPERM:
        return CUDA_ERROR_NOT_PERMITTED;
    case GPUOS_EDEVICE:
        return CUDA_ERROR_LAUNCH_FAILED;
    case GPUOS_ETIMEDOUT:
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

/* Queued work since the last synchronise. The daemon refuses a client more than
 * max_queued_requests (default 4096) outstanding requests, and an asynchronous
 * request's refusal would surface only at the next synchronise; the CUDA driver
 * instead blocks a submitter whose queue is full. So does this library: every
 * QUEUE_MAX asynchronous requests it waits for the queue (errors of queued work
 * are then reported by this call, as CUDA may report them at any later call). */
#ifndef QUEUE_MAX
#define QUEUE_MAX 1024
#endif
static int queued;

static int shim_sync(void)
{
    __atomic_store_n(&queued, 0, __ATOMIC_RELAXED);
    return gpuos_synchronize(S.g);
}

static int queued_one(int rc)
{
    if (!rc && __atomic_add_fetch(&queued, 1, __ATOMIC_RELAXED) >= QUEUE_MAX)
        rc = shim_sync();
    return rc;
}

/* Every call after cuInit: the client, or the error cuInit ended with. */
#define NEED_INIT()                                                                                                    \
    do {                                                                                                               \
        if (!S.inited)                                                                                                 \
            return CUDA_ERROR_NOT_INITIALIZED;                                                                         \
        if (S.init_rc)                                                                                                 \
            return S.init_rc;                                                                                          \
    } while (0)

E CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&S.m);
    if (!S.inited) {
        const char *v = getenv(GOS_ENV_VGPU);
        int rc = gpuos_open(NULL, v && *v ? v : "default", &S.g);
        if (!rc)
            rc = gpuos_device_info(S.g, &S.dev);
        if (!rc)
            rc = gpuos_mem_info(S.g, NULL, &S.quota, NULL);
        if (rc) {
            fprintf(stderr, "gpuos libcuda: cuInit: %s\n", gpuos_error());
            S.init_rc = rc == GPUOS_EIO || rc == GPUOS_ENODEV || rc == GPUOS_ETIMEDOUT ? CUDA_ERROR_NO_DEVICE
                                                                                         : map_rc(rc, "cuInit");
        }
        S.cc = S.dev.cc_major * 10 + S.dev.cc_minor;
        S.inited = 1;
    }
    CUresult r = S.init_rc;
    pthread_mutex_unlock(&S.m);
    return r;
}

E CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* devices */

E CUresult cuDeviceGetCount(int *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *n = 1;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

#define CHECK_DEV(d)                                                                                                   \
    do {                                                                                                               \
        NEED_INIT();                                                                                                   \
        if ((d) != 0)                                                                                                  \
            return CUDA_ERROR_INVALID_DEVICE;                                                                          \
    } while (0)

E CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    snprintf(name, (size_t)len, "%s", S.dev.name);
    return CUDA_SUCCESS;
}

static void parse_uuid(const char *s, unsigned char out[16])
{
    memset(out, 0, 16);
    if (!strncmp(s, "GPU-", 4))
        s += 4;
    for (int i = 0; i < 16 && *s;) {
        if (*s == '-') {
            s++;
            continue;
        }
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[i++] = (unsigned char)v;
        s += 2;
    }
}

E CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    if (!u)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    parse_uuid(S.dev.uuid, (unsigned char *)u->bytes);
    return CUDA_SUCCESS;
}
E CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) { return cuDeviceGetUuid_v2(u, d); }

E CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *bytes = S.quota;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice d)
{
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *major = S.dev.cc_major;
    *minor = S.dev.cc_minor;
    return CUDA_SUCCESS;
}

/* Attributes: those libgpuos reports (compute capability, SMs), the rest the
 * documented values of compute capability 9.x (Hopper; H100/H200 SXM). The real
 * device's values need a daemon message (daemon_ext.c: shim_ext_attribute). */
static int attr_value(CUdevice_attribute a, int *v)
{
    int smem_optin = 232448, smem_sm = 233472;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = S.dev.sm_count; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 6144; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 3; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = S.dev.cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = S.dev.cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = smem_sm; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: *v = 2; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = smem_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *v = 82444288; break;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *v = 134213632; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = S.dev.cc_major >= 9; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: *v = 4; break;
    default:
        *v = 0;
        return 0;
    }
    return 1;
}

E CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    if ((int)a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (!shim_ext_attribute(S.g, (int)a, v))
        return CUDA_SUCCESS;
    attr_value(a, v);
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetProperties(CUdevprop *p, CUdevice d)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    memset(p, 0, sizeof *p);
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->sharedMemPerBlock = 49152;
    p->totalConstantMemory = 65536;
    p->SIMDWidth = 32;
    p->memPitch = 2147483647;
    p->regsPerBlock = 65536;
    p->clockRate = 1980000;
    p->textureAlign = 512;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d)
{
    if (!bus || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    snprintf(bus, (size_t)len, "0000:00:00.0");
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *bus)
{
    if (!d || !bus)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *d = 0;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* contexts (emulated: every context is this process's one client) */

static int ctx_ok(CUcontext c) { return c && (c == &S.primary || c->magic == MAGIC_CTX); }

E CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    pthread_mutex_lock(&S.m);
    S.primary.refs++;
    pthread_mutex_unlock(&S.m);
    *c = &S.primary;
    return CUDA_SUCCESS;
}

E CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    CHECK_DEV(d);
    pthread_mutex_lock(&S.m);
    if (S.primary.refs > 0)
        S.primary.refs--;
    pthread_mutex_unlock(&S.m);
    return CUDA_SUCCESS;
}
E CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return cuDevicePrimaryCtxRelease_v2(d); }

E CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *flags = S.primary.flags;
    *active = S.primary.refs > 0;
    return CUDA_SUCCESS;
}

E CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags)
{
    CHECK_DEV(d);
    S.primary.flags = flags;
    return CUDA_SUCCESS;
}
E CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned int flags) { return cuDevicePrimaryCtxSetFlags_v2(d, flags); }

E CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
    CHECK_DEV(d);
    return map_rc(shim_sync(), "cuDevicePrimaryCtxReset");
}
E CUresult cuDevicePrimaryCtxReset(CUdevice d) { return cuDevicePrimaryCtxReset_v2(d); }

static CUresult ctx_new(CUcontext *c, unsigned flags, CUdevice d)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    struct CUctx_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_CTX;
    x->flags = flags;
    x->refs = 1;
    cur_ctx = x;
    *c = x;
    return CUDA_SUCCESS;
}
E CUresult cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d) { return ctx_new(c, flags, d); }
E CUresult cuCtxCreate(CUcontext *c, unsigned int flags, CUdevice d) { return ctx_new(c, flags, d); }
E CUresult cuCtxCreate_v3(CUcontext *c, CUexecAffinityParam *p, int n, unsigned int flags, CUdevice d)
{
    if (n > 0)
        return shim_unsupported("cuCtxCreate_v3 (execution affinity)");
    return ctx_new(c, flags, d);
}
E CUresult cuCtxCreate_v4(CUcontext *c, CUctxCreateParams *p, unsigned int flags, CUdevice d)
{
    if (p && (p->numExecAffinityParams > 0 || p->cigParams))
        return shim_unsupported("cuCtxCreate_v4 (execution affinity, CIG)");
    return ctx_new(c, flags, d);
}

E CUresult cuCtxDestroy_v2(CUcontext c)
{
    NEED_INIT();
    if (!ctx_ok(c) || c == &S.primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    shim_sync();
    if (cur_ctx == c)
        cur_ctx = NULL;
    c->magic = MAGIC_DEAD;
    return CUDA_SUCCESS;
}
E CUresult cuCtxDestroy(CUcontext c) { return cuCtxDestroy_v2(c); }

E CUresult cuCtxSetCurrent(CUcontext c)
{
    NEED_INIT();
    if (c && !ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    cur_ctx = c;
    return CUDA_SUCCESS;
}

E CUresult cuCtxGetCurrent(CUcontext *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *c = cur_ctx;
    return CUDA_SUCCESS;
}

/* The context stack of this thread below the current one. */
#define CTX_STACK 16
static __thread struct CUctx_st *ctx_stack[CTX_STACK];
static __thread int ctx_depth;

E CUresult cuCtxPushCurrent_v2(CUcontext c)
{
    NEED_INIT();
    if (!ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == CTX_STACK)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = cur_ctx;
    cur_ctx = c;
    return CUDA_SUCCESS;
}
E CUresult cuCtxPushCurrent(CUcontext c) { return cuCtxPushCurrent_v2(c); }

E CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
    NEED_INIT();
    if (!cur_ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (c)
        *c = cur_ctx;
    cur_ctx = ctx_depth ? ctx_stack[--ctx_depth] : NULL;
    return CUDA_SUCCESS;
}
E CUresult cuCtxPopCurrent(CUcontext *c) { return cuCtxPopCurrent_v2(c); }

#define NEED_CTX()                                                                                                     \
    do {                                                                                                               \
        NEED_INIT();                                                                                                   \
        if (!cur_ctx)                                                                                                  \
            return CUDA_ERROR_INVALID_CONTEXT;                                                                         \
    } while (0)

E CUresult cuCtxGetDevice(CUdevice *d)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    *d = 0;
    return CUDA_SUCCESS;
}
E CUresult cuCtxGetDevice_v2(CUdevice *d, CUcontext c)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (c && !ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = 0;
    return CUDA_SUCCESS;
}

E CUresult cuCtxGetFlags(unsigned int *flags)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    *flags = cur_ctx->flags;
    return CUDA_SUCCESS;
}
E CUresult cuCtxSetFlags(unsigned int flags)
{
    NEED_CTX();
    cur_ctx->flags = flags;
    return CUDA_SUCCESS;
}

E CUresult cuCtxGetApiVersion(CUcontext c, unsigned int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *v = 3020;
    return CUDA_SUCCESS;
}

E CUresult cuCtxGetId(CUcontext c, unsigned long long *id)
{
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!c)
        c = cur_ctx;
    if (!ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    *id = (unsigned long long)(uintptr_t)c;
    return CUDA_SUCCESS;
}

E CUresult cuCtxSynchronize(void)
{
    NEED_CTX();
    return map_rc(shim_sync(), "cuCtxSynchronize");
}
E CUresult cuCtxSynchronize_v2(CUcontext c)
{
    NEED_INIT();
    return map_rc(shim_sync(), "cuCtxSynchronize");
}

E CUresult cuCtxGetLimit(size_t *v, CUlimit l)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    switch (l) {
    case CU_LIMIT_STACK_SIZE: *v = 1024; break;
    case CU_LIMIT_PRINTF_FIFO_SIZE: *v = 1 << 20; break;
    case CU_LIMIT_MALLOC_HEAP_SIZE: *v = 8 << 20; break;
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: *v = 2048; break;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY: *v = 64; break;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
    }
    return CUDA_SUCCESS;
}
E CUresult cuCtxSetLimit(CUlimit l, size_t v)
{
    NEED_INIT();
    size_t cur;
    CUresult r = cuCtxGetLimit(&cur, l);
    if (r)
        return r;
    return v == cur ? CUDA_SUCCESS : shim_unsupported("cuCtxSetLimit (other than the current value)");
}

E CUresult cuCtxGetCacheConfig(CUfunc_cache *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *c = CU_FUNC_CACHE_PREFER_NONE;
    return CUDA_SUCCESS;
}
E CUresult cuCtxSetCacheConfig(CUfunc_cache c)
{
    NEED_INIT();
    return CUDA_SUCCESS; /* a hint; the driver may ignore it too */
}

E CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    NEED_INIT();
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* memory */

static void ranges_add(uint64_t p, uint64_t n)
{
    pthread_mutex_lock(&S.m);
    if (gos_grow((void **)&S.allocs, &S.cap_allocs, S.n_allocs, sizeof *S.allocs, 64)) {
        pthread_mutex_unlock(&S.m);
        return;
    }
    S.allocs[S.n_allocs++] = (struct range){p, n};
    pthread_mutex_unlock(&S.m);
}

/* The allocation holding p (its base and size); 0 if none. */
static int ranges_find(uint64_t p, struct range *out)
{
    int found = 0;
    pthread_mutex_lock(&S.m);
    for (int i = 0; i < S.n_allocs && !found; i++)
        if (p >= S.allocs[i].p && p < S.allocs[i].p + S.allocs[i].n) {
            if (out)
                *out = S.allocs[i];
            found = 1;
        }
    pthread_mutex_unlock(&S.m);
    return found;
}

static int ranges_del(uint64_t p)
{
    int found = 0;
    pthread_mutex_lock(&S.m);
    for (int i = 0; i < S.n_allocs; i++)
        if (S.allocs[i].p == p) {
            S.allocs[i] = S.allocs[--S.n_allocs];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&S.m);
    return found;
}

E CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    gpuos_dptr d;
    CUresult r = map_rc(gpuos_mem_alloc(S.g, bytes, &d), "cuMemAlloc");
    if (r)
        return r;
    ranges_add(d, bytes);
    *p = (CUdeviceptr)d;
    return CUDA_SUCCESS;
}

E CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height, unsigned int elem)
{
    if (!p || !pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pt = (width + 511) & ~(size_t)511;
    CUresult r = cuMemAlloc_v2(p, pt * height);
    if (!r)
        *pitch = pt;
    return r;
}

E CUresult cuMemFree_v2(CUdeviceptr p)
{
    NEED_INIT();
    if (!p)
        return CUDA_SUCCESS;
    if (!ranges_del(p))
        return CUDA_ERROR_INVALID_VALUE;
    return map_rc(gpuos_mem_free(S.g, p), "cuMemFree");
}

E CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s) { return cuMemAlloc_v2(p, bytes); }
E CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    NEED_INIT();
    shim_sync(); /* the queued work that uses it first */
    return cuMemFree_v2(p);
}

E CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    NEED_CTX();
    uint64_t used = 0, quota = 0;
    CUresult r = map_rc(gpuos_mem_info(S.g, &used, &quota, NULL), "cuMemGetInfo");
    if (r)
        return r;
    if (free_b)
        *free_b = quota > used ? quota - used : 0;
    if (total)
        *total = quota;
    return CUDA_SUCCESS;
}

E CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    NEED_INIT();
    struct range r;
    if (!ranges_find(p, &r))
        return CUDA_ERROR_NOT_FOUND;
    if (base)
        *base = r.p;
    if (size)
        *size = r.n;
    return CUDA_SUCCESS;
}

static int host_find(const void *p, struct range *out)
{
    int found = 0;
    pthread_mutex_lock(&S.m);
    for (int i = 0; i < S.n_hosts && !found; i++)
        if ((uint64_t)(uintptr_t)p >= S.hosts[i].p && (uint64_t)(uintptr_t)p < S.hosts[i].p + S.hosts[i].n) {
            if (out)
                *out = S.hosts[i];
            found = 1;
        }
    pthread_mutex_unlock(&S.m);
    return found;
}

E CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    if (!p || !bytes)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
        return shim_unsupported("cuMemHostAlloc (CU_MEMHOSTALLOC_DEVICEMAP)");
    pthread_mutex_lock(&S.m);
    int full = S.n_hosts == (int)(sizeof S.hosts / sizeof S.hosts[0]);
    pthread_mutex_unlock(&S.m);
    if (full)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = map_rc(gpuos_host_alloc(S.g, bytes, p), "cuMemHostAlloc");
    if (r)
        return r;
    pthread_mutex_lock(&S.m);
    S.hosts[S.n_hosts++] = (struct range){(uint64_t)(uintptr_t)*p, bytes};
    pthread_mutex_unlock(&S.m);
    return CUDA_SUCCESS;
}
E CUresult cuMemAllocHost_v2(void **p, size_t bytes) { return cuMemHostAlloc(p, bytes, 0); }

E CUresult cuMemFreeHost(void *p)
{
    NEED_INIT();
    int found = 0;
    pthread_mutex_lock(&S.m);
    for (int i = 0; i < S.n_hosts; i++)
        if (S.hosts[i].p == (uint64_t)(uintptr_t)p) {
            S.hosts[i] = S.hosts[--S.n_hosts];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&S.m);
    if (!found)
        return CUDA_ERROR_INVALID_VALUE;
    shim_sync();
    return map_rc(gpuos_host_free(S.g, p), "cuMemFreeHost");
}

E CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    NEED_INIT();
    if (!flags || !host_find(p, NULL))
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    return CUDA_SUCCESS;
}

E CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    struct range r;
    int dev = ranges_find(p, &r), host = !dev && host_find((void *)(uintptr_t)p, &r);
    if (!dev && !host)
        return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = &S.primary;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        if (!dev)
            return CUDA_ERROR_INVALID_VALUE;
        *(CUdeviceptr *)data = p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (dev)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = r.p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = r.n;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        return CUDA_SUCCESS;
    default:
        return shim_unsupported("cuPointerGetAttribute (this attribute)");
    }
}

/* ------------------------------------------------------------------ */
/* copies: every stream is the client's one queue */

static int stream_ok(CUstream s)
{
    return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic == MAGIC_STREAM;
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, int async)
{
    NEED_CTX();
    if (!n)
        return CUDA_SUCCESS;
    if (!src || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    int rc = async ? queued_one(gpuos_memcpy_htod_async(S.g, dst, src, n)) : gpuos_memcpy_htod(S.g, dst, src, n);
    return map_rc(rc, "cuMemcpyHtoD");
}
static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, int async)
{
    NEED_CTX();
    if (!n)
        return CUDA_SUCCESS;
    if (!src || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    int rc = async ? queued_one(gpuos_memcpy_dtoh_async(S.g, dst, src, n)) : gpuos_memcpy_dtoh(S.g, dst, src, n);
    return map_rc(rc, "cuMemcpyDtoH");
}
static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, int async)
{
    NEED_CTX();
    if (!n)
        return CUDA_SUCCESS;
    if (!src || !dst)
        return CUDA_ERROR_INVALID_VALUE;
    int rc = async ? queued_one(gpuos_memcpy_dtod_async(S.g, dst, src, n)) : gpuos_memcpy_dtod(S.g, dst, src, n);
    return map_rc(rc, "cuMemcpyDtoD");
}
static CUresult htoh(void *dst, const void *src, size_t n)
{
    NEED_CTX();
    shim_sync(); /* stream order: earlier copies into src first */
    memmove(dst, src, n);
    return CUDA_SUCCESS;
}

/* Unified addressing: which side each pointer is on, from the allocations. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, int async)
{
    int dd = ranges_find(dst, NULL), sd = ranges_find(src, NULL);
    if (dd && sd)
        return dtod(dst, src, n, async);
    if (dd)
        return htod(dst, (const void *)(uintptr_t)src, n, async);
    if (sd)
        return dtoh((void *)(uintptr_t)dst, src, n, async);
    return htoh((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
}

#define SYNC_COPIES(sfx)                                                                                               \
    E CUresult cuMemcpyHtoD_v2##sfx(CUdeviceptr d, const void *s, size_t n) { return htod(d, s, n, 0); }               \
    E CUresult cuMemcpyDtoH_v2##sfx(void *d, CUdeviceptr s, size_t n) { return dtoh(d, s, n, 0); }                     \
    E CUresult cuMemcpyDtoD_v2##sfx(CUdeviceptr d, CUdeviceptr s, size_t n) { return dtod(d, s, n, 0); }               \
    E CUresult cuMemcpy##sfx(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_any(d, s, n, 0); }
SYNC_COPIES()
SYNC_COPIES(_ptds)
#define ASYNC_COPIES(sfx)                                                                                              \
    E CUresult cuMemcpyHtoDAsync_v2##sfx(CUdeviceptr d, const void *s, size_t n, CUstream st)                          \
    {                                                                                                                  \
        return stream_ok(st) ? htod(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                           \
    }                                                                                                                  \
    E CUresult cuMemcpyDtoHAsync_v2##sfx(void *d, CUdeviceptr s, size_t n, CUstream st)                                \
    {                                                                                                                  \
        return stream_ok(st) ? dtoh(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                           \
    }                                                                                                                  \
    E CUresult cuMemcpyDtoDAsync_v2##sfx(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)                          \
    {                                                                                                                  \
        return stream_ok(st) ? dtod(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                           \
    }                                                                                                                  \
    E CUresult cuMemcpyAsync##sfx(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)                                 \
    {                                                                                                                  \
        return stream_ok(st) ? copy_any(d, s, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                       \
    }
ASYNC_COPIES()
ASYNC_COPIES(_ptsz)

/* 2D copies: one copy when both sides are contiguous rows, else row by row (in
 * queue order; arrays are not supported). Unified pointers are classified by the
 * allocation table. */
static CUresult copy2d(const CUDA_MEMCPY2D *c, int async)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    CUmemorytype st = c->srcMemoryType, dt = c->dstMemoryType;
    if (st == CU_MEMORYTYPE_ARRAY || dt == CU_MEMORYTYPE_ARRAY)
        return shim_unsupported("cuMemcpy2D (CUDA arrays)");
    uint64_t sp = st == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)c->srcHost : c->srcDevice;
    uint64_t dp = dt == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)c->dstHost : c->dstDevice;
    if (st == CU_MEMORYTYPE_UNIFIED)
        st = ranges_find(sp, NULL) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (dt == CU_MEMORYTYPE_UNIFIED)
        dt = ranges_find(dp, NULL) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    size_t spitch = c->srcPitch ? c->srcPitch : c->WidthInBytes, dpitch = c->dstPitch ? c->dstPitch : c->WidthInBytes;
    if (spitch < c->WidthInBytes || dpitch < c->WidthInBytes || !sp || !dp)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c->Height || !c->WidthInBytes)
        return CUDA_SUCCESS;
    /* both sides' first byte and whole extent without wrapping (issue 23.5) */
    uint64_t so, dO, sx, dx;
    if (!shim_span(c->srcXInBytes, c->srcY, spitch, &so) || !shim_span(c->dstXInBytes, c->dstY, dpitch, &dO) ||
        so + c->srcXInBytes > UINT64_MAX - sp || dO + c->dstXInBytes > UINT64_MAX - dp)
        return CUDA_ERROR_INVALID_VALUE;
    sp += so + c->srcXInBytes;
    dp += dO + c->dstXInBytes;
    if (!shim_span(sp, c->Height - 1, spitch, &sx) || !shim_span(dp, c->Height - 1, dpitch, &dx) ||
        c->WidthInBytes > UINT64_MAX - sp - sx || c->WidthInBytes > UINT64_MAX - dp - dx)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rows = c->Height, w = c->WidthInBytes;
    if (spitch == w && dpitch == w) {
        w *= rows;
        rows = 1;
    }
    CUresult r = CUDA_SUCCESS;
    for (size_t y = 0; y < rows && !r; y++) {
        uint64_t s1 = sp + y * spitch, d1 = dp + y * dpitch;
        if (st == CU_MEMORYTYPE_DEVICE && dt == CU_MEMORYTYPE_DEVICE)
            r = dtod(d1, s1, w, async);
        else if (dt == CU_MEMORYTYPE_DEVICE)
            r = htod(d1, (const void *)(uintptr_t)s1, w, async);
        else if (st == CU_MEMORYTYPE_DEVICE)
            r = dtoh((void *)(uintptr_t)d1, s1, w, async);
        else
            r = htoh((void *)(uintptr_t)d1, (const void *)(uintptr_t)s1, w);
    }
    return r;
}
E CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) { return copy2d(c, 0); }
E CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c) { return copy2d(c, 0); }
E CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c) { return copy2d(c, 0); }
E CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *c) { return copy2d(c, 0); }
E CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
    return stream_ok(s) ? copy2d(c, 1) : CUDA_ERROR_INVALID_HANDLE;
}
E CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c, CUstream s)
{
    return stream_ok(s) ? copy2d(c, 1) : CUDA_ERROR_INVALID_HANDLE;
}

/* The daemon's built-in kernels the library uses itself (kernels/exec.cu):
 * "fill" (memset: count 32-bit words of a value, grid-stride) and "stamp"
 * (events: the GPU's clock into 8 bytes), loaded on first use; 0 when there is
 * none. */
enum { BI_FILL, BI_STAMP, BI_N };
static gpuos_function builtin_fn(int which)
{
    static const char *const names[BI_N] = {"fill", "stamp"};
    static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
    static int loaded, tried[BI_N];
    static gpuos_module m;
    static gpuos_function f[BI_N];
    pthread_mutex_lock(&l);
    if (!tried[which]) {
        tried[which] = 1;
        if (!loaded && !gpuos_module_load_builtin(S.g, "builtin", &m))
            loaded = 1;
        if (!loaded || gpuos_module_function(S.g, m, names[which], &f[which]))
            f[which] = 0;
        if (shim_trace())
            shim_log("%s: %s", which == BI_FILL ? "memset" : "events",
                     f[which] ? (which == BI_FILL ? "the built-in fill kernel" : "GPU timestamps (built-in stamp kernel)")
                              : (which == BI_FILL ? "host copies only (no built-in fill kernel)"
                                                  : "host clock after a synchronise (no built-in stamp kernel)"));
    }
    pthread_mutex_unlock(&l);
    return f[which];
}
static gpuos_function fill_fn(void) { return builtin_fn(BI_FILL); }

#define FILL_MIN (64u << 10) /* below this a host copy is as quick as a launch */

/* Memset: the 4-byte-aligned middle by the built-in fill kernel on the device
 * (asynchronous, in queue order), the rest (and everything when there is no
 * fill kernel) as a pattern written on the host and copied. */
static int host_pattern(CUdeviceptr d, unsigned v, size_t elem, size_t bytes, int async)
{
    size_t chunk = bytes < (8u << 20) ? bytes : (8u << 20);
    unsigned char *b = malloc(chunk);
    if (!b)
        return GPUOS_ENOMEM;
    for (size_t i = 0; i < chunk; i += elem)
        memcpy(b + i, &v, elem); /* little-endian: the low bytes of v */
    int rc = 0;
    for (size_t off = 0; off < bytes && !rc; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        rc = async ? queued_one(gpuos_memcpy_htod_async(S.g, d + off, b, n)) : gpuos_memcpy_htod(S.g, d + off, b, n);
    }
    free(b);
    return rc;
}

static CUresult memset_n(CUdeviceptr d, unsigned v, size_t elem, size_t count, int async)
{
    NEED_CTX();
    if (!count)
        return CUDA_SUCCESS;
    uint64_t span;
    if (!d || (d % elem) || !shim_span(d, count, elem, &span) || span > SIZE_MAX)
        return CUDA_ERROR_INVALID_VALUE; /* a count whose bytes wrap set nothing, never "success" */
    int rc = shim_ext_memset(S.g, d, v, (int)elem, count, async);
    if (rc != GPUOS_EUNSUPPORTED)
        return map_rc(rc, "cuMemset");
    size_t bytes = (size_t)span;
    uint64_t a = (d + 3) & ~(uint64_t)3, e = (d + bytes) & ~(uint64_t)3;
    gpuos_function f = a < e && e - a >= FILL_MIN ? fill_fn() : 0;
    if (!f)
        return map_rc(host_pattern(d, v, elem, bytes, async), "cuMemset");
    uint32_t word = elem == 1 ? (v & 0xffu) * 0x01010101u : elem == 2 ? (v & 0xffffu) * 0x00010001u : v;
    rc = a > d ? host_pattern(d, v, elem, (size_t)(a - d), 1) : 0;
    if (!rc) {
        struct {
            uint64_t p;
            uint32_t value, pad;
            uint64_t count;
        } prm = {a, word, 0, (e - a) / 4};
        uint64_t blocks = (prm.count + 255) / 256;
        gpuos_launch_config c = {.grid = {(unsigned)(blocks < 1056 ? blocks : 1056), 1, 1}, .block = {256, 1, 1}};
        rc = queued_one(gpuos_launch(S.g, f, &c, &prm, sizeof prm));
    }
    if (!rc && d + bytes > e)
        rc = host_pattern(e, v, elem, (size_t)(d + bytes - e), 1);
    if (!rc && !async)
        rc = shim_sync();
    return map_rc(rc, "cuMemset");
}

#define MEMSETS(sfx, asfx)                                                                                             \
    E CUresult cuMemsetD8_v2##sfx(CUdeviceptr d, unsigned char v, size_t n) { return memset_n(d, v, 1, n, 0); }        \
    E CUresult cuMemsetD16_v2##sfx(CUdeviceptr d, unsigned short v, size_t n) { return memset_n(d, v, 2, n, 0); }      \
    E CUresult cuMemsetD32_v2##sfx(CUdeviceptr d, unsigned int v, size_t n) { return memset_n(d, v, 4, n, 0); }        \
    E CUresult cuMemsetD8Async##asfx(CUdeviceptr d, unsigned char v, size_t n, CUstream s)                             \
    {                                                                                                                  \
        return stream_ok(s) ? memset_n(d, v, 1, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                     \
    }                                                                                                                  \
    E CUresult cuMemsetD16Async##asfx(CUdeviceptr d, unsigned short v, size_t n, CUstream s)                           \
    {                                                                                                                  \
        return stream_ok(s) ? memset_n(d, v, 2, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                     \
    }                                                                                                                  \
    E CUresult cuMemsetD32Async##asfx(CUdeviceptr d, unsigned int v, size_t n, CUstream s)                             \
    {                                                                                                                  \
        return stream_ok(s) ? memset_n(d, v, 4, n, 1) : CUDA_ERROR_INVALID_HANDLE;                                     \
    }
MEMSETS(, )
MEMSETS(_ptds, _ptsz)

/* ------------------------------------------------------------------ */
/* modules, libraries, kernels */

static CUresult mod_load_in(struct CUmod_st **out, const void *image, int need_ctx)
{
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (need_ctx)
        NEED_CTX();
    else
        NEED_INIT();
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MAGIC_MOD;
    int rc;
    if (!strncmp(image, BUILTIN_ESCAPE, strlen(BUILTIN_ESCAPE))) {
        m->builtin = 1;
        rc = gpuos_module_load_builtin(S.g, "builtin", &m->h);
    } else {
        m->bytes = shim_image_size(image);
        m->image = m->bytes ? malloc(m->bytes) : NULL;
        if (!m->image) {
            CUresult r = m->bytes ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
            free(m);
            return r;
        }
        /* the wrapper cudart hands over points at the container itself */
        memcpy(m->image, shim_image_unwrap(image), m->bytes);
        rc = gpuos_module_load(S.g, m->image, m->bytes, &m->h);
    }
    if (rc) {
        /* the driver refused the image; the device cannot run it (simulated) */
        CUresult r = rc == GPUOS_EINVAL || rc == GPUOS_EDEVICE ? CUDA_ERROR_INVALID_IMAGE
                     : rc == GPUOS_EUNSUPPORTED                ? CUDA_ERROR_NO_BINARY_FOR_GPU
                                                               : map_rc(rc, "cuModuleLoadData");
        if (shim_trace())
            shim_log("module load: %s", gpuos_error());
        else if (rc == GPUOS_EUNSUPPORTED) { /* e.g. a simulated device and a real image: say so once */
            static int said;
            if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
                shim_log("module load: %s", gpuos_error());
        }
        free(m->image);
        free(m);
        return r;
    }
    *out = m;
    return CUDA_SUCCESS;
}

static CUresult mod_load(struct CUmod_st **out, const void *image) { return mod_load_in(out, image, 1); }

E CUresult cuModuleLoadData(CUmodule *m, const void *image) { return mod_load((struct CUmod_st **)m, image); }
E CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v)
{
    return mod_load((struct CUmod_st **)m, image);
}
E CUresult cuModuleLoadFatBinary(CUmodule *m, const void *image) { return mod_load((struct CUmod_st **)m, image); }

E CUresult cuModuleLoad(CUmodule *m, const char *path)
{
    if (!m || !path)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    CUresult r = CUDA_ERROR_INVALID_IMAGE;
    char *img = NULL;
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (n > 0 && !fseek(f, 0, SEEK_SET) && (img = calloc(1, (size_t)n + 1)) && fread(img, 1, (size_t)n, f) == (size_t)n)
        r = mod_load((struct CUmod_st **)m, img); /* text images end in the NUL calloc left */
    fclose(f);
    free(img);
    return r;
}

static int mod_ok(const struct CUmod_st *m) { return m && m->magic == MAGIC_MOD; }

E CUresult cuModuleUnload(CUmodule m)
{
    NEED_INIT();
    if (!mod_ok(m))
        return CUDA_ERROR_INVALID_HANDLE;
    shim_sync();
    CUresult r = map_rc(gpuos_module_unload(S.g, m->h), "cuModuleUnload");
    m->magic = MAGIC_DEAD;
    free(m->image);
    return r;
}

/* The built-in kernels' parameter layouts (kernels/exec.cu). */
static void builtin_layout(const char *name, struct shim_kinfo *k)
{
    static const struct {
        const char *name;
        int n;
        uint16_t off[4], size[4];
    } t[] = {{"sleep_ns", 1, {0}, {8}},
             {"loop", 1, {0}, {8}},
             {"madd", 4, {0, 8, 16, 24}, {8, 8, 8, 4}},
             {"mmul", 4, {0, 8, 16, 24}, {8, 8, 8, 4}},
             {"fill", 4, {0, 8, 12, 16}, {8, 4, 4, 8}},
             {"stamp", 1, {0}, {8}},
             {"empty", 0, {0}, {0}}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].name, name)) {
            k->found = 1;
            k->nparams = t[i].n;
            for (int j = 0; j < t[i].n; j++) {
                k->off[j] = t[i].off[j];
                k->size[j] = t[i].size[j];
            }
            k->param_bytes = t[i].n ? t[i].off[t[i].n - 1] + t[i].size[t[i].n - 1] : 0;
            k->max_threads = 1024;
            k->regs = 32;
        }
}

static CUresult func_get(struct CUfunc_st **out, struct CUmod_st *m, const char *name)
{
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!mod_ok(m))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    int rc = gpuos_module_function(S.g, m->h, name, &f->h);
    if (rc) {
        free(f);
        if (shim_trace())
            shim_log("%s: %s", name, gpuos_error());
        /* no such kernel: the simulated device says EINVAL, the GPU's driver
         * CUDA_ERROR_NOT_FOUND (EDEVICE through the daemon) */
        return rc == GPUOS_EINVAL || rc == GPUOS_EDEVICE ? CUDA_ERROR_NOT_FOUND : map_rc(rc, "cuModuleGetFunction");
    }
    f->magic = MAGIC_FN;
    f->mod = m;
    snprintf(f->name, sizeof f->name, "%s", name);
    if (m->builtin)
        builtin_layout(name, &f->k);
    else
        shim_image_kernel(m->image, m->bytes, S.cc, name, &f->k, f->why, sizeof f->why);
    f->max_dyn_smem = 49152 - f->k.shared_bytes;
    *out = f;
    return CUDA_SUCCESS;
}

E CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    return func_get((struct CUfunc_st **)f, m, name);
}

E CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name)
{
    NEED_INIT();
    if (!mod_ok(m))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t size = 0;
    if (m->builtin || shim_image_global(m->image, m->bytes, S.cc, name, &size))
        return CUDA_ERROR_NOT_FOUND;
    uint64_t addr = 0;
    int rc = shim_ext_global(S.g, m->h, name, &addr);
    if (rc == GPUOS_EUNSUPPORTED)
        return (CUresult)shim_unsupported("cuModuleGetGlobal (device address of a global)");
    if (rc)
        return map_rc(rc, "cuModuleGetGlobal");
    if (p)
        *p = addr;
    if (bytes)
        *bytes = size;
    return CUDA_SUCCESS;
}

E CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

/* Libraries are modules; kernels are functions (one handle serves as both). */
E CUresult cuLibraryLoadData(CUlibrary *l, const void *code, CUjit_option *jo, void **jv, unsigned int nj,
                             CUlibraryOption *lo, void **lv, unsigned int nl)
{
    /* libraries belong to no context (the runtime loads its own before any) */
    return mod_load_in((struct CUmod_st **)l, code, 0);
}
E CUresult cuLibraryUnload(CUlibrary l) { return cuModuleUnload((CUmodule)l); }
E CUresult cuLibraryGetModule(CUmodule *m, CUlibrary l)
{
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mod_ok((struct CUmod_st *)l))
        return CUDA_ERROR_INVALID_HANDLE;
    *m = (CUmodule)l;
    return CUDA_SUCCESS;
}
E CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name)
{
    return func_get((struct CUfunc_st **)k, (struct CUmod_st *)l, name);
}
E CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    if (!f)
        return CUDA_ERROR_INVALID_VALUE;
    if (!k || ((struct CUfunc_st *)k)->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *f = (CUfunction)k;
    return CUDA_SUCCESS;
}
E CUresult cuKernelGetLibrary(CUlibrary *l, CUkernel k)
{
    if (!l)
        return CUDA_ERROR_INVALID_VALUE;
    if (!k || ((struct CUfunc_st *)k)->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *l = (CUlibrary)((struct CUfunc_st *)k)->mod;
    return CUDA_SUCCESS;
}
E CUresult cuLibraryGetGlobal(CUdeviceptr *p, size_t *bytes, CUlibrary l, const char *name)
{
    return cuModuleGetGlobal_v2(p, bytes, (CUmodule)l, name);
}
E CUresult cuFuncGetModule(CUmodule *m, CUfunction f)
{
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *m = (CUmodule)f->mod;
    return CUDA_SUCCESS;
}
E CUresult cuFuncGetName(const char **name, CUfunction f)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}
E CUresult cuFuncIsLoaded(CUfunctionLoadingState *st, CUfunction f)
{
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    *st = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}
E CUresult cuFuncLoad(CUfunction f) { return CUDA_SUCCESS; }

E CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *off, size_t *size)
{
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!f->k.found)
        return shim_unsupported("cuFuncGetParamInfo (kernel without a cubin layout)");
    if (index >= (size_t)f->k.nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (off)
        *off = f->k.off[index];
    if (size)
        *size = f->k.size[index];
    return CUDA_SUCCESS;
}

E CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = f->k.max_threads ? f->k.max_threads : 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = f->k.shared_bytes; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = f->k.const_bytes; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = f->k.local_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = f->k.regs; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = S.cc; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = S.cc; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn_smem; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *v = -1; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *v = 1; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *v = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

E CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || v + f->k.shared_bytes > 232448)
            return CUDA_ERROR_INVALID_VALUE;
        f->max_dyn_smem = v;
        return CUDA_SUCCESS;
    }
    if (a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT ||
        a == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
        return CUDA_SUCCESS; /* hints */
    return shim_unsupported("cuFuncSetAttribute (this attribute)");
}
E CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c)
{
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}
E CUresult cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel k, CUdevice d)
{
    return cuFuncGetAttribute(v, a, (CUfunction)k);
}
E CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d)
{
    return cuFuncSetAttribute((CUfunction)k, a, v);
}
E CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache c, CUdevice d)
{
    return cuFuncSetCacheConfig((CUfunction)k, c);
}
E CUresult cuKernelGetName(const char **name, CUkernel k) { return cuFuncGetName(name, (CUfunction)k); }
E CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    return cuFuncGetParamInfo((CUfunction)k, i, off, size);
}

/* Occupancy from the kernel's registers and shared memory (cc 9.x limits). */
static int occupancy(const struct CUfunc_st *f, int threads, size_t dyn)
{
    if (threads <= 0)
        return 0;
    int warps = (threads + 31) / 32, by_threads = 2048 / (warps * 32), by_blocks = 32;
    int regs = f->k.regs ? f->k.regs : 32;
    int regs_per_warp = ((regs * 32) + 255) & ~255;
    int by_regs = 65536 / (regs_per_warp * warps);
    size_t smem = (size_t)f->k.shared_bytes + dyn + 1024;
    int by_smem = (int)(233472 / smem);
    int n = by_threads < by_blocks ? by_threads : by_blocks;
    n = by_regs < n ? by_regs : n;
    return by_smem < n ? by_smem : n;
}

E CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t dyn)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *n = occupancy(f, threads, dyn);
    return CUDA_SUCCESS;
}
E CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f, int threads, size_t dyn,
                                                                 unsigned int flags)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, dyn);
}
E CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, CUfunction f, CUoccupancyB2DSize fn, size_t dyn,
                                            int limit)
{
    if (!grid || !block)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    int best = 0, best_b = 32;
    int maxb = limit > 0 && limit < 1024 ? limit : 1024;
    for (int b = 32; b <= maxb; b += 32) {
        size_t d = fn ? fn(b) : dyn;
        int occ = occupancy(f, b, d) * b;
        if (occ > best) {
            best = occ;
            best_b = b;
        }
    }
    *block = best_b;
    *grid = occupancy(f, best_b, fn ? fn(best_b) : dyn) * S.dev.sm_count;
    return CUDA_SUCCESS;
}
E CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *grid, int *block, CUfunction f, CUoccupancyB2DSize fn,
                                                     size_t dyn, int limit, unsigned int flags)
{
    return cuOccupancyMaxPotentialBlockSize(grid, block, f, fn, dyn, limit);
}
E CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dyn, CUfunction f, int blocks, int threads)
{
    if (!dyn || blocks <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    size_t per = 233472 / (size_t)blocks;
    *dyn = per > (size_t)f->k.shared_bytes + 1024 ? per - (size_t)f->k.shared_bytes - 1024 : 0;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* launches */

static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                       unsigned smem, CUstream s, void **params, void **extra)
{
    NEED_CTX();
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned long long)block[0] * block[1] * block[2] > 1024 || !grid[0] || !grid[1] || !grid[2] || !block[0] ||
        !block[1] || !block[2])
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char buf[GOS_PARAM_BUF];
    size_t len = 0;
    if (extra) {
        void *ptr = NULL;
        size_t n = 0;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                ptr = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                n = *(size_t *)extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (n > sizeof buf || (n && !ptr))
            return CUDA_ERROR_INVALID_VALUE;
        if (n)
            memcpy(buf, ptr, n);
        len = n;
    } else if (f->k.nparams > 0) {
        if (!f->k.found) {
            shim_log("%s: parameter layout unknown: %s", f->name, f->why);
            return shim_unsupported("cuLaunchKernel (kernel parameters without a cubin layout)");
        }
        if (!params)
            return CUDA_ERROR_INVALID_VALUE;
        for (int i = 0; i < f->k.nparams; i++) {
            size_t end = (size_t)f->k.off[i] + f->k.size[i];
            if (end > sizeof buf)
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(buf + f->k.off[i], params[i], f->k.size[i]);
            if (end > len)
                len = end;
        }
    } else if (!f->k.found && f->k.nparams == 0 && !f->mod->builtin && f->why[0] && params) {
        shim_log("%s: parameter layout unknown: %s", f->name, f->why);
        return shim_unsupported("cuLaunchKernel (kernel parameters without a cubin layout)");
    }
    gpuos_launch_config c = {.shared_mem = smem};
    for (int i = 0; i < 3; i++) {
        c.grid[i] = grid[i];
        c.block[i] = block[i];
        c.cluster[i] = cluster ? cluster[i] : 0;
    }
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        c.priority = -s->priority; /* CUDA: lower number = higher priority */
    return map_rc(queued_one(gpuos_launch(S.g, f->h, &c, buf, len)), "cuLaunchKernel");
}

#define LAUNCHES(sfx)                                                                                                  \
    E CUresult cuLaunchKernel##sfx(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,      \
                                   unsigned bz, unsigned smem, CUstream s, void **params, void **extra)                \
    {                                                                                                                  \
        const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};                                                       \
        return launch(f, g, b, NULL, smem, s, params, extra);                                                          \
    }                                                                                                                  \
    E CUresult cuLaunchKernelEx##sfx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)             \
    {                                                                                                                  \
        if (!cfg)                                                                                                      \
            return CUDA_ERROR_INVALID_VALUE;                                                                           \
        unsigned g[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};                                                 \
        unsigned b[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ}, cl[3] = {0, 0, 0};                           \
        for (unsigned i = 0; i < cfg->numAttrs; i++) {                                                                 \
            const CUlaunchAttribute *a = &cfg->attrs[i];                                                               \
            if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {                                                      \
                cl[0] = a->value.clusterDim.x;                                                                         \
                cl[1] = a->value.clusterDim.y;                                                                         \
                cl[2] = a->value.clusterDim.z;                                                                         \
            } else if (a->id != CU_LAUNCH_ATTRIBUTE_PRIORITY && a->id != CU_LAUNCH_ATTRIBUTE_IGNORE &&                 \
                       a->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {                            \
                return shim_unsupported("cuLaunchKernelEx (a launch attribute other than clusters, priority)");        \
            }                                                                                                          \
        }                                                                                                              \
        return launch(f, g, b, cl, cfg->sharedMemBytes, cfg->hStream, params, extra);                                  \
    }
LAUNCHES()
LAUNCHES(_ptsz)

/* ------------------------------------------------------------------ */
/* streams and events */

static CUresult stream_new(CUstream *s, unsigned flags, int priority)
{
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    struct CUstream_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_STREAM;
    x->flags = flags;
    x->priority = priority;
    *s = x;
    return CUDA_SUCCESS;
}
E CUresult cuStreamCreate(CUstream *s, unsigned int flags) { return stream_new(s, flags, 0); }
E CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int priority)
{
    return stream_new(s, flags, priority);
}

E CUresult cuStreamDestroy_v2(CUstream s)
{
    NEED_INIT();
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic != MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    s->magic = MAGIC_DEAD; /* the handle memory is kept: late uses stay detectable */
    return CUDA_SUCCESS;
}
E CUresult cuStreamDestroy(CUstream s) { return cuStreamDestroy_v2(s); }

/* Events. With the built-in "stamp" kernel, a record is a one-thread launch in
 * queue order that writes the GPU's global timer (ns) into the event's 8 bytes
 * of a small device pool, so elapsed times are GPU times between the work
 * before each record, as CUDA's own events measure. Without it (or when the
 * pool is full), a record waits for the queue and takes the host clock. */
#define EV_SLOTS 4096
static struct {
    pthread_mutex_t lock;
    uint64_t base; /* EV_SLOTS x 8 bytes of device memory, allocated on first use */
    int tried;
    unsigned char used[EV_SLOTS];
} EV = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}};

static int event_slot(void)
{
    int slot = -1;
    pthread_mutex_lock(&EV.lock);
    if (!EV.tried) {
        EV.tried = 1;
        if (gpuos_mem_alloc(S.g, EV_SLOTS * 8, &EV.base))
            EV.base = 0;
    }
    for (int i = 0; EV.base && i < EV_SLOTS && slot < 0; i++)
        if (!EV.used[i]) {
            EV.used[i] = 1;
            slot = i;
        }
    pthread_mutex_unlock(&EV.lock);
    return slot;
}

static void event_slot_free(int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&EV.lock);
    EV.used[slot] = 0;
    pthread_mutex_unlock(&EV.lock);
}

static int event_record(struct CUevent_st *e)
{
    gpuos_function f = e->flags & CU_EVENT_DISABLE_TIMING ? 0 : builtin_fn(BI_STAMP);
    if (f && e->slot < 0)
        e->slot = event_slot();
    if (f && e->slot >= 0) {
        uint64_t p = EV.base + (uint64_t)e->slot * 8;
        gpuos_launch_config c = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
        int rc = queued_one(gpuos_launch(S.g, f, &c, &p, sizeof p));
        e->recorded = rc ? 0 : 2;
        return rc;
    }
    if (e->flags & CU_EVENT_DISABLE_TIMING) { /* queued work to wait for, no time */
        e->recorded = 3;
        return GPUOS_OK;
    }
    int rc = shim_sync();
    clock_gettime(CLOCK_MONOTONIC, &e->t);
    e->recorded = 1;
    return rc;
}

/* The event's time in ns on its clock (after the queue has drained). */
static int event_ns(const struct CUevent_st *e, uint64_t *ns)
{
    if (e->recorded == 2)
        return gpuos_memcpy_dtoh(S.g, ns, EV.base + (uint64_t)e->slot * 8, 8);
    *ns = (uint64_t)e->t.tv_sec * 1000000000ull + (uint64_t)e->t.tv_nsec;
    return GPUOS_OK;
}

/* Stream capture queries: gpuos offers no capture (CUDA graphs), so every
 * stream answers "not capturing" with no graph and no dependencies (PyTorch
 * asks before its first kernel). */
static CUresult capture_none(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *n)
{
    NEED_INIT();
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (id)
        *id = 0;
    if (g)
        *g = NULL;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (n)
        *n = 0;
    return CUDA_SUCCESS;
}

#define STREAMS(sfx)                                                                                                   \
    E CUresult cuStreamSynchronize##sfx(CUstream s)                                                                    \
    {                                                                                                                  \
        NEED_INIT();                                                                                                   \
        if (!stream_ok(s))                                                                                             \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        return map_rc(shim_sync(), "cuStreamSynchronize");                                                  \
    }                                                                                                                  \
    E CUresult cuStreamQuery##sfx(CUstream s)                                                                          \
    {                                                                                                                  \
        NEED_INIT();                                                                                                   \
        if (!stream_ok(s))                                                                                             \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        return map_rc(shim_sync(), "cuStreamQuery");                                                        \
    }                                                                                                                  \
    E CUresult cuStreamWaitEvent##sfx(CUstream s, CUevent e, unsigned int flags)                                       \
    {                                                                                                                  \
        NEED_INIT();                                                                                                   \
        if (!stream_ok(s) || !e || e->magic != MAGIC_EVENT)                                                            \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        return CUDA_SUCCESS; /* one queue: everything recorded before is ordered before */                           \
    }                                                                                                                  \
    E CUresult cuStreamGetPriority##sfx(CUstream s, int *p)                                                            \
    {                                                                                                                  \
        if (!p)                                                                                                        \
            return CUDA_ERROR_INVALID_VALUE;                                                                           \
        if (!stream_ok(s))                                                                                             \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        *p = s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? s->priority : 0;                                \
        return CUDA_SUCCESS;                                                                                           \
    }                                                                                                                  \
    E CUresult cuStreamGetFlags##sfx(CUstream s, unsigned int *f)                                                      \
    {                                                                                                                  \
        if (!f)                                                                                                        \
            return CUDA_ERROR_INVALID_VALUE;                                                                           \
        if (!stream_ok(s))                                                                                             \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        *f = s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? s->flags : 0;                                   \
        return CUDA_SUCCESS;                                                                                           \
    }                                                                                                                  \
    E CUresult cuStreamGetCtx##sfx(CUstream s, CUcontext *c)                                                           \
    {                                                                                                                  \
        if (!c)                                                                                                        \
            return CUDA_ERROR_INVALID_VALUE;                                                                           \
        if (!stream_ok(s))                                                                                             \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        *c = cur_ctx ? cur_ctx : &S.primary;                                                                           \
        return CUDA_SUCCESS;                                                                                           \
    }                                                                                                                  \
    E CUresult cuEventRecord##sfx(CUevent e, CUstream s)                                                               \
    {                                                                                                                  \
        NEED_INIT();                                                                                                   \
        if (!e || e->magic != MAGIC_EVENT || !stream_ok(s))                                                            \
            return CUDA_ERROR_INVALID_HANDLE;                                                                          \
        return map_rc(event_record(e), "cuEventRecord");                                                               \
    }                                                                                                                  \
    E CUresult cuEventRecordWithFlags##sfx(CUevent e, CUstream s, unsigned int flags)                                  \
    {                                                                                                                  \
        return cuEventRecord##sfx(e, s);                                                                               \
    }                                                                                                                  \
    /* stream capture (CUDA graphs) is not offered: no stream is ever capturing */                                    \
    E CUresult cuStreamIsCapturing##sfx(CUstream s, CUstreamCaptureStatus *st)                                         \
    {                                                                                                                  \
        return capture_none(s, st, NULL, NULL, NULL, NULL, NULL);                                                      \
    }                                                                                                                  \
    E CUresult cuStreamGetCaptureInfo_v2##sfx(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,       \
                                              const CUgraphNode **deps, size_t *n)                                     \
    {                                                                                                                  \
        return capture_none(s, st, id, g, deps, NULL, n);                                                              \
    }                                                                                                                  \
    E CUresult cuStreamGetCaptureInfo_v3##sfx(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,       \
                                              const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)      \
    {                                                                                                                  \
        return capture_none(s, st, id, g, deps, edges, n);                                                             \
    }
STREAMS()
STREAMS(_ptsz)
/* the first form of the query (id only) */
E CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    return capture_none(s, st, id, NULL, NULL, NULL, NULL);
}
E CUresult cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    return capture_none(s, st, id, NULL, NULL, NULL, NULL);
}

/* Host functions run once everything queued before them has completed: with
 * one queue, after a synchronise, in the caller's thread. */
static CUresult host_func(CUstream s, CUhostFn fn, void *data)
{
    NEED_INIT();
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = map_rc(shim_sync(), "cuLaunchHostFunc");
    if (!r)
        fn(data);
    return r;
}
E CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) { return host_func(s, fn, data); }
E CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data) { return host_func(s, fn, data); }

static CUresult stream_callback(CUstream s, CUstreamCallback cb, void *data, unsigned flags)
{
    NEED_INIT();
    if (!cb || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = map_rc(shim_sync(), "cuStreamAddCallback");
    cb(s, r, data);
    return CUDA_SUCCESS;
}
E CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data, unsigned int flags)
{
    return stream_callback(s, cb, data, flags);
}
E CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *data, unsigned int flags)
{
    return stream_callback(s, cb, data, flags);
}

E CUresult cuStreamGetId(CUstream s, unsigned long long *id)
{
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    *id = (unsigned long long)(uintptr_t)s;
    return CUDA_SUCCESS;
}
E CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id) { return cuStreamGetId(s, id); }

E CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    struct CUevent_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_EVENT;
    x->flags = flags;
    x->slot = -1;
    *e = x;
    return CUDA_SUCCESS;
}

E CUresult cuEventDestroy_v2(CUevent e)
{
    NEED_INIT();
    if (!e || e->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    e->magic = MAGIC_DEAD;
    event_slot_free(e->slot); /* a record still queued writes bytes no one reads */
    return CUDA_SUCCESS;
}
E CUresult cuEventDestroy(CUevent e) { return cuEventDestroy_v2(e); }

E CUresult cuEventQuery(CUevent e)
{
    NEED_INIT();
    if (!e || e->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    /* one queue: the event is complete once the queue has drained to it; no
     * partial query, so a query waits (never answers NOT_READY wrongly) */
    return e->recorded >= 2 ? map_rc(shim_sync(), "cuEventQuery") : CUDA_SUCCESS;
}
E CUresult cuEventSynchronize(CUevent e) { return cuEventQuery(e); }

E CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!a || a->magic != MAGIC_EVENT || !b || b->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded || a->recorded != b->recorded)
        return CUDA_ERROR_INVALID_HANDLE; /* not recorded, or on different clocks */
    uint64_t ta = 0, tb = 0;
    int rc = a->recorded == 2 ? shim_sync() : GPUOS_OK;
    if (!rc)
        rc = event_ns(a, &ta);
    if (!rc)
        rc = event_ns(b, &tb);
    if (rc)
        return map_rc(rc, "cuEventElapsedTime");
    *ms = (float)(((double)tb - (double)ta) / 1e6);
    return CUDA_SUCCESS;
}
E CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime_v2(ms, a, b); }

/* ------------------------------------------------------------------ */
/* entry points and export tables */

E CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
E CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    void *p = shim_proc_lookup(symbol, ptds);
    /* The table holds the newest version of each name; where an older one has
     * another signature, a caller built for an older CUDA gets the older one. */
    if (!strcmp(symbol, "cuCtxCreate") && version < 12050)
        p = version < 11040 ? (void *)cuCtxCreate_v2 : (void *)cuCtxCreate_v3;
    else if (!strcmp(symbol, "cuGetProcAddress") && version < 12000)
        p = (void *)cuGetProcAddress;
    if (shim_trace())
        shim_log("cuGetProcAddress %s version %d flags %llu -> %s", symbol, version, (unsigned long long)flags,
                 p ? "found" : "not found");
    *pfn = p;
    if (status)
        *status = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
E CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
E CUresult cuGetProcAddress_v2_ptsz(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, status);
}

E CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    return shim_export_table(table, (const unsigned char *)id->bytes);
}

E CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget t, CUflushGPUDirectRDMAWritesScope s)
{
    return CUDA_SUCCESS;
}

E CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
E CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }
