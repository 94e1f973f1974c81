/* memory.c: device and host allocations of gpuos's libcuda.so.1 (in the CUDA
 * program's process): device memory is the vGPU's (charged to its share, out
 * of memory at the share); host memory from cuMemHostAlloc is shared with the
 * daemon (its zero-copy path). The library keeps both tables to classify
 * unified pointers (cuMemcpy, cuPointerGetAttribute). */
#include "cudashim/driver.h"
#include "common/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ranges_add(uint64_t p, uint64_t n)
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
int ranges_find(uint64_t p, struct range *out)
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

int ranges_del(uint64_t p)
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

int host_find(const void *p, struct range *out)
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
