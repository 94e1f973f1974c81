/* SPDX-License-Identifier: Apache-2.0 */
/* pool.c: stream-ordered allocation and memory pools of gpuos's libcuda.so.1
 * (in the CUDA program's process). Every stream is the client's one queue, so
 * a stream-ordered allocation is an ordinary one (cuMemAlloc: charged to the
 * vGPU's share at once) and a stream-ordered free waits for the queue. A pool
 * is bookkeeping: its attributes as set, and the bytes allocated from it
 * (USED = RESERVED: the library keeps no cache of its own). */
#include "cudashim/driver.h"
#include "common/grow.h"

#include <stdlib.h>
#include <string.h>

struct CUmemPoolHandle_st {
    uint32_t magic;
    CUmemPoolProps props;
    cuuint64_t threshold, used, high;
    int reuse[3]; /* REUSE_FOLLOW_EVENT_DEPENDENCIES, _ALLOW_OPPORTUNISTIC, _ALLOW_INTERNAL_DEPENDENCIES */
};

static struct CUmemPoolHandle_st default_pool = {
    .magic = MAGIC_POOL,
    .props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}},
    .reuse = {1, 1, 1}};
static struct CUmemPoolHandle_st *current_pool = &default_pool;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* Which pool each allocation came from (for its free): a short list. */
static struct from_pool {
    uint64_t p, n;
    struct CUmemPoolHandle_st *pool;
} *froms;
static int n_froms, cap_froms;

static int pool_ok(const struct CUmemPoolHandle_st *p) { return p && p->magic == MAGIC_POOL; }

static CUresult pool_alloc(CUdeviceptr *p, size_t bytes, struct CUmemPoolHandle_st *pool, CUstream s)
{
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!pool_ok(pool))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuMemAlloc_v2(p, bytes);
    if (r)
        return r;
    pthread_mutex_lock(&pool_lock);
    if (!gos_grow((void **)&froms, &cap_froms, n_froms, sizeof *froms, 64))
        froms[n_froms++] = (struct from_pool){*p, bytes, pool};
    pool->used += bytes;
    if (pool->used > pool->high)
        pool->high = pool->used;
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

E CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s)
{
    return pool_alloc(p, bytes, current_pool, s);
}
E CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t bytes, CUmemoryPool pool, CUstream s)
{
    return pool_alloc(p, bytes, pool, s);
}

E CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    NEED_INIT();
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    shim_sync(); /* the queued work that uses it first */
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < n_froms; i++)
        if (froms[i].p == p) {
            froms[i].pool->used -= froms[i].n;
            froms[i] = froms[--n_froms];
            break;
        }
    pthread_mutex_unlock(&pool_lock);
    return cuMemFree_v2(p);
}

E CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *pool = &default_pool;
    return CUDA_SUCCESS;
}
E CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice d)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *pool = current_pool;
    return CUDA_SUCCESS;
}
E CUresult cuDeviceSetMemPool(CUdevice d, CUmemoryPool pool)
{
    CHECK_DEV(d);
    if (!pool_ok(pool))
        return CUDA_ERROR_INVALID_VALUE;
    current_pool = pool;
    return CUDA_SUCCESS;
}

E CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        props->location.id != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return shim_unsupported("cuMemPoolCreate (exportable pools: no IPC between vGPU processes)");
    struct CUmemPoolHandle_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = MAGIC_POOL;
    x->props = *props;
    x->reuse[0] = x->reuse[1] = x->reuse[2] = 1;
    *pool = x;
    return CUDA_SUCCESS;
}

E CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    NEED_INIT();
    if (!pool_ok(pool) || pool == &default_pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (current_pool == pool)
        current_pool = &default_pool;
    pool->magic = MAGIC_DEAD; /* kept: its allocations' frees still find it */
    return CUDA_SUCCESS;
}

E CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    NEED_INIT();
    return pool_ok(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; /* nothing cached */
}

/* One attribute read (set = 0) or written; the high-water marks may only be
 * reset (to 0), the current figures only read. */
static CUresult pool_attribute(CUmemoryPool pool, CUmemPool_attribute a, void *v, int set)
{
    NEED_INIT();
    if (!pool_ok(pool) || !v)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    CUresult r = CUDA_SUCCESS;
    switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
        int *x = &pool->reuse[a - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        if (set)
            *x = *(int *)v;
        else
            *(int *)v = *x;
        break;
    }
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        if (set)
            pool->threshold = *(cuuint64_t *)v;
        else
            *(cuuint64_t *)v = pool->threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        if (set)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            *(cuuint64_t *)v = pool->used;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (!set)
            *(cuuint64_t *)v = pool->high;
        else if (*(cuuint64_t *)v)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            pool->high = pool->used;
        break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&pool_lock);
    return r;
}

E CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void *v)
{
    return pool_attribute(pool, a, v, 1);
}
E CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void *v)
{
    return pool_attribute(pool, a, v, 0);
}

E CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t n)
{
    NEED_INIT();
    if (!pool_ok(pool) || (n && !map))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id != 0)
            return CUDA_ERROR_INVALID_DEVICE; /* one device */
    return CUDA_SUCCESS;
}

E CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool, CUmemLocation *loc)
{
    NEED_INIT();
    if (!flags || !loc || !pool_ok(pool))
        return CUDA_ERROR_INVALID_VALUE;
    *flags = loc->type == CU_MEM_LOCATION_TYPE_DEVICE && loc->id == 0 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                                      : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

/* The pools by location (CUDA 13): device 0's pinned pools only. */
static int location_ok(const CUmemLocation *loc, CUmemAllocationType type)
{
    return loc && loc->type == CU_MEM_LOCATION_TYPE_DEVICE && loc->id == 0 && type == CU_MEM_ALLOCATION_TYPE_PINNED;
}
E CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    if (!pool || !location_ok(loc, type))
        return CUDA_ERROR_INVALID_VALUE;
    return cuDeviceGetDefaultMemPool(pool, 0);
}
E CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    if (!pool || !location_ok(loc, type))
        return CUDA_ERROR_INVALID_VALUE;
    return cuDeviceGetMemPool(pool, 0);
}
E CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    if (!location_ok(loc, type))
        return CUDA_ERROR_INVALID_VALUE;
    return cuDeviceSetMemPool(0, pool);
}
