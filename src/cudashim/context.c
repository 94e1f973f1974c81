/* SPDX-License-Identifier: Apache-2.0 */
/* context.c: contexts of gpuos's libcuda.so.1 (in the CUDA program's process).
 * Emulated: every context of a process is the same client of the daemon (Gdev's
 * "one context per client"); a context is its flags and a place in this
 * thread's stack. */
#include "cudashim/driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ctx_ok(CUcontext c) { return c && (c == &shim_proc.primary || c->magic == MAGIC_CTX); }

E CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    pthread_mutex_lock(&shim_proc.m);
    shim_proc.primary.refs++;
    pthread_mutex_unlock(&shim_proc.m);
    *c = &shim_proc.primary;
    return CUDA_SUCCESS;
}

E CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    CHECK_DEV(d);
    pthread_mutex_lock(&shim_proc.m);
    if (shim_proc.primary.refs > 0)
        shim_proc.primary.refs--;
    pthread_mutex_unlock(&shim_proc.m);
    return CUDA_SUCCESS;
}

E CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *flags = shim_proc.primary.flags;
    *active = shim_proc.primary.refs > 0;
    return CUDA_SUCCESS;
}

E CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags)
{
    CHECK_DEV(d);
    shim_proc.primary.flags = flags;
    return CUDA_SUCCESS;
}

E CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
    CHECK_DEV(d);
    return map_rc(shim_sync(), "cuDevicePrimaryCtxReset");
}

static CUresult ctx_new(CUcontext *c, unsigned flags, CUdevice d)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    struct CUctx_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    static unsigned long long next_id = 1; /* the primary context is 1 */
    x->magic = MAGIC_CTX;
    x->flags = flags;
    x->refs = 1;
    x->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
    cur_ctx = x;
    *c = x;
    return CUDA_SUCCESS;
}
E CUresult cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d) { return ctx_new(c, flags, d); }
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
    if (!ctx_ok(c) || c == &shim_proc.primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    shim_sync();
    if (cur_ctx == c)
        cur_ctx = NULL;
    c->magic = MAGIC_DEAD;
    return CUDA_SUCCESS;
}

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
    if (c ? !ctx_ok(c) : !cur_ctx)
        return CUDA_ERROR_INVALID_CONTEXT; /* none given and none current, as the driver: the runtime then makes one */
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
    *id = c == &shim_proc.primary ? 1 : c->id; /* a destroyed context's address may come back; its id does not */
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
    case CU_LIMIT_PRINTF_FIFO_SIZE: *v = 8650752; break; /* driver 580's, not the 1 MiB cuda.h's comment says */
    case CU_LIMIT_MALLOC_HEAP_SIZE: *v = 8 << 20; break;
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: *v = 2048; break;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY: *v = 64; break;
    /* no L2 set aside for persisting lines on a vGPU (the driver's own context
     * answers 30 % of CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE) */
    case CU_LIMIT_PERSISTING_L2_CACHE_SIZE: *v = 0; break;
    case CU_LIMIT_SHMEM_SIZE: *v = 232448; break; /* a plain context's: CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case CU_LIMIT_CIG_ENABLED: *v = 0; break;     /* cuBLAS asks before its first GEMM */
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
    }
    if (shim_trace() >= 2)
        shim_log("cuCtxGetLimit %d = %zu", (int)l, *v);
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

/* The CUDA 2 era attach / detach: a reference on the current context. */
E CUresult cuCtxAttach(CUcontext *c, unsigned int flags)
{
    if (!c || flags)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    pthread_mutex_lock(&shim_proc.m);
    cur_ctx->refs++;
    pthread_mutex_unlock(&shim_proc.m);
    *c = cur_ctx;
    return CUDA_SUCCESS;
}

E CUresult cuCtxDetach(CUcontext c)
{
    NEED_INIT();
    if (!ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&shim_proc.m);
    int last = --c->refs <= 0 && c != &shim_proc.primary;
    pthread_mutex_unlock(&shim_proc.m);
    return last ? cuCtxDestroy_v2(c) : CUDA_SUCCESS;
}

/* Hints the driver may ignore too (shared memory banks, the persisting L2). */
E CUresult cuCtxGetSharedMemConfig(CUsharedconfig *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *c = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return CUDA_SUCCESS;
}
E CUresult cuCtxSetSharedMemConfig(CUsharedconfig c)
{
    NEED_INIT();
    return (unsigned)c <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
E CUresult cuCtxResetPersistingL2Cache(void)
{
    NEED_CTX();
    return CUDA_SUCCESS;
}

/* One device per vGPU: there is no peer. */
E CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    NEED_CTX();
    if (!ctx_ok(peer) || flags)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}
E CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    NEED_CTX();
    return ctx_ok(peer) ? CUDA_ERROR_PEER_ACCESS_NOT_ENABLED : CUDA_ERROR_INVALID_CONTEXT;
}
E CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    if (!can)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    if (peer != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *can = 0;
    return CUDA_SUCCESS;
}
E CUresult cuDeviceGetP2PAttribute(int *v, CUdevice_P2PAttribute a, CUdevice src, CUdevice dst)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(src);
    return CUDA_ERROR_INVALID_DEVICE; /* the only other device would be itself, which is no peer */
}

E CUresult cuDeviceGetExecAffinitySupport(int *v, CUexecAffinityType t, CUdevice d)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *v = 0; /* SM partitions of a vGPU are the daemon's (green contexts), not the program's */
    return CUDA_SUCCESS;
}

/* An event recorded on every stream of the context: with one queue, an
 * ordinary record. */

E CUresult cuCtxRecordEvent(CUcontext c, CUevent e)
{
    NEED_INIT();
    if (c && !ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    return cuEventRecord(e, NULL);
}
E CUresult cuCtxWaitEvent(CUcontext c, CUevent e)
{
    NEED_INIT();
    if (c && !ctx_ok(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    return cuStreamWaitEvent(NULL, e, 0); /* one queue: already satisfied */
}

E CUresult cuCtxGetExecAffinity(CUexecAffinityParam *p, CUexecAffinityType t)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (t != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
        return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    p->type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
    p->param.smCount.val = (unsigned)shim_proc.dev.sm_count; /* what the context may use: the device's SMs */
    return CUDA_SUCCESS;
}
