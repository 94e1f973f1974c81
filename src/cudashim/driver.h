/* SPDX-License-Identifier: Apache-2.0 */
/* driver.h: what the Driver API files of gpuos's libcuda.so.1 share (runs in the
 * CUDA program's process; docs/readme-cudashim.md).
 *
 * The entry points live in one file per concern:
 *   init.c     diagnostics, the process's state, cuInit, the library's own
 *              built-in kernels (fill, stamp)
 *   devices.c  devices and their attributes
 *   context.c  contexts (emulated: every context is the process's one client)
 *   memory.c   device and host allocations, pointer attributes
 *   vmm.c      virtual memory management (cuMemCreate, cuMemMap, ...)
 *   pool.c     stream-ordered allocation, memory pools
 *   copy.c     copies (1D, 2D, 3D without arrays), memset (1D, 2D)
 *   module.c   modules, libraries, kernels, function attributes
 *   launch.c   launches (cuLaunchKernel[Ex], the CUDA 4 execution control API),
 *              occupancy
 *   stream.c   streams, events, host functions
 *   graph.c    stream capture and CUDA graphs (a graph is the list captured)
 *   entry.c    cuGetProcAddress, cuGetExportTable (exports.c), profiler
 * Every entry point is written once, as a plain function under the symbol
 * cuda.h maps its base name to; the other names of the same function (legacy
 * unversioned names, _ptds / _ptsz per-thread-default-stream variants) are
 * rows of aliases.txt, which the link turns into symbols at the same address.
 * cuda.h is included for its types only; nothing here loads NVIDIA's driver. */
#ifndef GOS_CUDASHIM_DRIVER_H
#define GOS_CUDASHIM_DRIVER_H

#include <cuda.h>
/* The library implements deprecated entry points too (cuCtxAttach, the CUDA 4
 * execution control API): their declarations are not warnings here. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* The legacy (unversioned) entry points defined under their own names (their
 * signatures differ from the versioned ones'): cuda.h maps the base names. */
#undef cuGetProcAddress
#undef cuStreamGetCaptureInfo
#undef cuMemcpyBatchAsync
#undef cuStreamBeginCapture


#include "cudashim/daemon_ext.h"
#include "cudashim/shim.h"
#include "gpuos/gpuos.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define E SHIM_EXPORT
#define DRIVER_VERSION 13000
#define BUILTIN_ESCAPE "gpuos-builtin"
#define GOS_PARAM_BUF 4096 /* gpuos_params, GOS_PARAM_MAX */

enum { MAGIC_CTX = 0x63747831, MAGIC_MOD = 0x6d6f6431, MAGIC_FN = 0x666e6331, MAGIC_STREAM = 0x73747231,
       MAGIC_EVENT = 0x65767431, MAGIC_POOL = 0x706f6f31, MAGIC_DEAD = 0xdeadbeef };

struct CUctx_st {
    uint32_t magic;
    int primary, refs;
    unsigned flags;
    unsigned long long id; /* cuCtxGetId: unique in the process, never reused (the primary's is 1) */
};
struct CUmod_st {
    uint32_t magic;
    gpuos_module h;
    int builtin;
    int nocode; /* a library without code for this GPU: never loaded by the daemon (module.c) */
    int loaded;   /* the daemon holds it (h); a lazy library is loaded at its first kernel's use */
    int borrowed; /* image points into a loaded object's read-only fatbin section: not copied */
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
    int nonportable; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: clusters up to 16 blocks, not 8 */
    int traced; /* its first launch was logged (GPUOS_CUDASHIM_TRACE) */
    /* the CUDA 4 execution control API (launch.c): block shape, dynamic
     * shared memory and the parameter buffer set before cuLaunch[Grid] */
    int block[3];
    unsigned shared;
    unsigned char params[GOS_PARAM_BUF];
    size_t param_size;
};
struct CUstream_st {
    uint32_t magic;
    unsigned flags;
    int priority;
};
struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    int recorded; /* 1: host clock in t; 2: GPU timestamp in the pool's slot; 3: no timing (queued) */
    int slot;     /* its 8 bytes in the event pool, -1 none */
    struct timespec t;
    uint64_t seq; /* the number its last record writes into the pool's host word (0: none) */
    uint64_t at;  /* when (gos_now_ns) */
};

struct range {
    uint64_t p, n;
    unsigned flags; /* host memory: CU_MEMHOSTALLOC_* / CU_MEMHOSTREGISTER_* and HOST_REGISTERED */
};
#define HOST_REGISTERED 0x80000000u /* cuMemHostRegister: the program's own memory, not shared */
#define RANGE_VMM 0x40000000u       /* device memory: a VMM mapping (vmm.c), not cuMemFree's */

/* The process's state (init.c). */
struct shim_state {
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
    struct range *hosts;
    int n_hosts, cap_hosts;
};
extern struct shim_state shim_proc; /* the process's one state, under shim_proc.m */
extern __thread struct CUctx_st *cur_ctx;

/* A libgpuos status as a CUresult; `what` names the call in the trace. */
CUresult map_rc(int rc, const char *what);
/* Wait for the client's queue (every stream); queued_one counts an
 * asynchronous request and waits every QUEUE_MAX of them (init.c). */
int shim_sync(void);
int queued_one(int rc);

/* Set while a host function runs (stream.c): CUDA calls from it are refused, as
 * CUDA refuses them (CUDA_ERROR_NOT_PERMITTED), instead of waiting on their own
 * host function's gate. */
extern _Thread_local int shim_in_host_fn;
/* Every call after cuInit: the client, or the error cuInit ended with. */
#define NEED_INIT()                                                                                                    \
    do {                                                                                                               \
        if (!shim_proc.inited)                                                                                         \
            return CUDA_ERROR_NOT_INITIALIZED;                                                                         \
        if (shim_in_host_fn)                                                                                           \
            return CUDA_ERROR_NOT_PERMITTED;                                                                           \
        if (shim_proc.init_rc)                                                                                         \
            return shim_proc.init_rc;                                                                                  \
    } while (0)
#define CHECK_DEV(d)                                                                                                   \
    do {                                                                                                               \
        NEED_INIT();                                                                                                   \
        if ((d) != 0)                                                                                                  \
            return CUDA_ERROR_INVALID_DEVICE;                                                                          \
    } while (0)
#define NEED_CTX()                                                                                                     \
    do {                                                                                                               \
        NEED_INIT();                                                                                                   \
        if (!cur_ctx)                                                                                                  \
            return CUDA_ERROR_INVALID_CONTEXT;                                                                         \
    } while (0)

int ctx_ok(CUcontext c);                          /* context.c */
int stream_ok(CUstream s);                        /* stream.c: NULL, the two special streams, or ours;
                                                   * also this thread's stream of the next operation */
/* Before an operation is queued (stream.c): the gate of a host function on
 * another stream is queued first when the operation must wait for it, i.e.
 * unless it is asynchronous (async) on an explicitly created stream other
 * than the host function's (that of this thread's last stream_ok). */
void shim_hf_before(int async);
int mod_ok(const struct CUmod_st *m);             /* module.c */
int func_ok(const struct CUfunc_st *f);           /* module.c */
void ranges_add(uint64_t p, uint64_t n);          /* memory.c: the device allocations */
void ranges_add_flags(uint64_t p, uint64_t n, unsigned flags); /* ... with RANGE_VMM */
int ranges_find(uint64_t p, struct range *out);   /* the allocation holding p; 0 if none */
int ranges_del(uint64_t p);
int host_find(const void *p, struct range *out);  /* memory.c: host memory allocated or registered */

/* The daemon's built-in kernels the library uses itself (init.c). */
enum { BI_FILL, BI_STAMP, BI_N };
gpuos_function builtin_fn(int which);

/* copy.c: one copy or memset in queue order (async: not waited for). */
CUresult shim_htod(CUdeviceptr dst, const void *src, size_t n, int async);
CUresult shim_dtoh(void *dst, CUdeviceptr src, size_t n, int async);
CUresult shim_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, int async);
CUresult shim_memset(CUdeviceptr d, unsigned v, size_t elem, size_t count, int async);

/* graph.c: stream capture. shim_capturing(s): s is the capturing stream, and
 * what it is given goes into the graph (shim_capture_*) instead of the queue;
 * copy direction 0 HtoD, 1 DtoH, 2 DtoD. */
int shim_capturing(CUstream s);
CUresult shim_capture_kernel(gpuos_function fn, const gpuos_launch_config *c, const void *params, size_t len);
CUresult shim_capture_copy(int dir, uint64_t dst, uint64_t src, size_t n);
CUresult shim_capture_memset(CUdeviceptr d, unsigned v, int elem, size_t count);
CUresult shim_capture_host(CUhostFn fn, void *data);
CUresult shim_capture_event(CUevent e);

/* module.c: a module load; lazy = 1 for the runtime's registrations, which
 * may hold no code for this GPU (loaded lazily as the driver does). */
CUresult shim_module_load(CUmodule *m, const void *image, int lazy);

/* module.c: the daemon's handle of f, loading its lazy library first (at the
 * kernel's first use, as CUDA_MODULE_LOADING=LAZY does). */
CUresult shim_func_resolve(struct CUfunc_st *f);

/* launch.c: a launch with the kernel's parameter layout (params) or a packed
 * buffer (extra); cluster may be NULL. */
CUresult shim_launch(CUfunction f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                     unsigned smem, CUstream s, void **params, void **extra);

/* real.c: NVIDIA's own libcuda.so.1 in this process, under GPUOS_CUDASHIM_LT=real
 * only (opened by path, cuInit, no context): one of its functions (NULL without it); its primary context
 * pushed on this thread for an answer that wants one (1: pushed); popped; a
 * private table of its (NULL: none, or refused). */
void *shim_real_fn(const char *name);
int shim_real_ctx_push(void);
void shim_real_ctx_pop(void);
const void *shim_real_export_table(const unsigned char id[16]);

/* Entry points with versioned names cuda.h no longer declares (their callers:
 * cuGetProcAddress for programs built against an older CUDA). */
CUresult cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d);
CUresult cuCtxCreate_v3(CUcontext *c, CUexecAffinityParam *p, int n, unsigned int flags, CUdevice d);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
CUresult cuGraphInstantiate_v2(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t log_len);
CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
                            size_t *attr_idx, size_t n_attrs, size_t *fail, CUstream s);
/* aliases (aliases.txt) named by cuGetProcAddress for older callers */
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                 CUmemcpyAttributes *attrs, size_t *attr_idx, size_t n_attrs, size_t *fail, CUstream s);
CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id);
CUresult cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id);
CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                   const CUgraphNode **deps, size_t *n);
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                        const CUgraphNode **deps, size_t *n);

#endif
