/* SPDX-License-Identifier: Apache-2.0 */
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

void ranges_add_flags(uint64_t p, uint64_t n, unsigned flags)
{
    pthread_mutex_lock(&shim_proc.m);
    if (gos_grow((void **)&shim_proc.allocs, &shim_proc.cap_allocs, shim_proc.n_allocs, sizeof *shim_proc.allocs, 64)) {
        pthread_mutex_unlock(&shim_proc.m);
        return;
    }
    shim_proc.allocs[shim_proc.n_allocs++] = (struct range){p, n, flags};
    pthread_mutex_unlock(&shim_proc.m);
}

void ranges_add(uint64_t p, uint64_t n) { ranges_add_flags(p, n, 0); }

/* The allocation holding p (its base and size); 0 if none. */
int ranges_find(uint64_t p, struct range *out)
{
    int found = 0;
    pthread_mutex_lock(&shim_proc.m);
    for (int i = 0; i < shim_proc.n_allocs && !found; i++)
        if (p >= shim_proc.allocs[i].p && p < shim_proc.allocs[i].p + shim_proc.allocs[i].n) {
            if (out)
                *out = shim_proc.allocs[i];
            found = 1;
        }
    pthread_mutex_unlock(&shim_proc.m);
    return found;
}

int ranges_del(uint64_t p)
{
    int found = 0;
    pthread_mutex_lock(&shim_proc.m);
    for (int i = 0; i < shim_proc.n_allocs; i++)
        if (shim_proc.allocs[i].p == p) {
            shim_proc.allocs[i] = shim_proc.allocs[--shim_proc.n_allocs];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&shim_proc.m);
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
    CUresult r = map_rc(gpuos_mem_alloc(shim_proc.g, bytes, &d), "cuMemAlloc");
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
    struct range r;
    if (ranges_find(p, &r) && (r.flags & RANGE_VMM))
        return CUDA_ERROR_INVALID_VALUE; /* a VMM mapping: cuMemUnmap, cuMemRelease (vmm.c) */
    if (!ranges_del(p))
        return CUDA_ERROR_INVALID_VALUE;
    return map_rc(gpuos_mem_free(shim_proc.g, p), "cuMemFree");
}

E CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    NEED_CTX();
    uint64_t used = 0, quota = 0;
    CUresult r = map_rc(gpuos_mem_info(shim_proc.g, &used, &quota, NULL), "cuMemGetInfo");
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
    pthread_mutex_lock(&shim_proc.m);
    for (int i = 0; i < shim_proc.n_hosts && !found; i++)
        if ((uint64_t)(uintptr_t)p >= shim_proc.hosts[i].p &&
            (uint64_t)(uintptr_t)p < shim_proc.hosts[i].p + shim_proc.hosts[i].n) {
            if (out)
                *out = shim_proc.hosts[i];
            found = 1;
        }
    pthread_mutex_unlock(&shim_proc.m);
    return found;
}

static int host_add(const void *p, size_t bytes, unsigned flags)
{
    pthread_mutex_lock(&shim_proc.m);
    int rc = gos_grow((void **)&shim_proc.hosts, &shim_proc.cap_hosts, shim_proc.n_hosts, sizeof *shim_proc.hosts, 16);
    if (!rc)
        shim_proc.hosts[shim_proc.n_hosts++] = (struct range){(uint64_t)(uintptr_t)p, bytes, flags};
    pthread_mutex_unlock(&shim_proc.m);
    return rc;
}

/* Removes the entry starting at p; its flags, or -1 when there is none. */
static long long host_del(const void *p)
{
    long long flags = -1;
    pthread_mutex_lock(&shim_proc.m);
    for (int i = 0; i < shim_proc.n_hosts; i++)
        if (shim_proc.hosts[i].p == (uint64_t)(uintptr_t)p) {
            flags = shim_proc.hosts[i].flags;
            shim_proc.hosts[i] = shim_proc.hosts[--shim_proc.n_hosts];
            break;
        }
    pthread_mutex_unlock(&shim_proc.m);
    return flags;
}

/* Host memory shared with the daemon (its zero-copy path). CU_MEMHOSTALLOC_DEVICEMAP
 * (what the runtime asks for under unified addressing) is accepted: the memory
 * is pinned and copies from it are the daemon's fastest. Kernels on the vGPU run
 * in the executor's process: they reach it where the executor could map it at
 * this process's own address (unified addressing, as CUDA's: the device address
 * is the host's; host_dptr), else no device address is given. */
E CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    if (!p || !bytes)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = map_rc(gpuos_host_alloc(shim_proc.g, bytes, p), "cuMemHostAlloc");
    if (r)
        return r;
    if (host_add(*p, bytes, flags)) {
        gpuos_host_free(shim_proc.g, *p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}
E CUresult cuMemAllocHost_v2(void **p, size_t bytes) { return cuMemHostAlloc(p, bytes, 0); }

E CUresult cuMemFreeHost(void *p)
{
    NEED_INIT();
    struct range r;
    if (!host_find(p, &r) || r.p != (uint64_t)(uintptr_t)p || (r.flags & HOST_REGISTERED))
        return CUDA_ERROR_INVALID_VALUE;
    host_del(p);
    shim_sync();
    return map_rc(gpuos_host_free(shim_proc.g, p), "cuMemFreeHost");
}

/* Registered memory stays the program's own (not shared with the daemon):
 * copies from it take the ordinary path; the registration is bookkeeping for
 * cuMemHostGetFlags and pointer attributes. */
E CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)
{
    NEED_CTX();
    if (!p || !bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & (CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY))
        return shim_unsupported("cuMemHostRegister (I/O or read-only memory)");
    if (host_find(p, NULL))
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return host_add(p, bytes, flags | HOST_REGISTERED) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

E CUresult cuMemHostUnregister(void *p)
{
    NEED_INIT();
    struct range r;
    if (!host_find(p, &r) || r.p != (uint64_t)(uintptr_t)p || !(r.flags & HOST_REGISTERED))
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    shim_sync(); /* queued copies from it first */
    host_del(p);
    return CUDA_SUCCESS;
}

E CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    NEED_INIT();
    struct range r;
    if (!flags || !host_find(p, &r) || (r.flags & HOST_REGISTERED))
        return CUDA_ERROR_INVALID_VALUE;
    *flags = r.flags;
    return CUDA_SUCCESS;
}

/* The device address of host memory from cuMemHostAlloc: p itself where the
 * executor maps it at p (XLA's kernels spin on such a semaphore and write such
 * a flag); registered memory is the program's own, never the executor's. */
static CUresult host_dptr(const struct range *r, void *p, CUdeviceptr *d)
{
    gpuos_dptr dp;
    if ((r->flags & HOST_REGISTERED) || gpuos_host_device_pointer(shim_proc.g, p, &dp))
        return shim_unsupported("cuMemHostGetDevicePointer (kernels on the vGPU cannot reach this memory: "
                                "registered, or its executor could not map it at this address)");
    *d = (CUdeviceptr)dp;
    return CUDA_SUCCESS;
}

E CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
    NEED_CTX();
    struct range r;
    if (!d || flags || !host_find(p, &r))
        return CUDA_ERROR_INVALID_VALUE;
    return host_dptr(&r, p, d);
}

/* Managed (unified) memory would be this process's pages migrating to a device
 * that another process drives. */
E CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned int flags)
{
    return shim_unsupported("cuMemAllocManaged (managed memory: the vGPU's device is driven by another process)");
}

/* The granularity of device allocations: 2 MiB, the driver's answer for device
 * memory on this GPU generation (minimum and recommended), and what vmm.c's
 * cuMemCreate / cuMemMap / cuMemAddressReserve require (GOS_VMM_GRANULE). */
E CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags o)
{
    if (!g || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        prop->location.id != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *g = 2u << 20;
    return CUDA_SUCCESS;
}

/* One attribute of p. `known` = 0: p is neither device memory of this process
 * nor host memory allocated or registered here (cuPointerGetAttribute refuses
 * such a pointer; cuPointerGetAttributes answers what CUDA answers for it). */
static CUresult ptr_attr(void *data, CUpointer_attribute a, CUdeviceptr p, int dev, int known, const struct range *r)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = known ? &shim_proc.primary : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = !known ? 0 : dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        if (!dev)
            return known ? host_dptr(r, (void *)(uintptr_t)p, (CUdeviceptr *)data) : CUDA_ERROR_INVALID_VALUE;
        *(CUdeviceptr *)data = p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (dev || !known)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)p;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int *)data = 1; /* one ordered queue: every memory operation is synchronous to it */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = known ? r->p : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = known ? 0 : -2; /* -2: CU_DEVICE_INVALID */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = known ? r->p : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = known ? r->n : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = known;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = CU_MEM_HANDLE_TYPE_NONE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned *)data = known ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = NULL;
        return CUDA_SUCCESS;
    default:
        return shim_unsupported("cuPointerGetAttribute (this attribute)");
    }
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
    return ptr_attr(data, a, p, dev, 1, &r);
}

E CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *a, void **data, CUdeviceptr p)
{
    if (!a || !data)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    struct range r = {0, 0, 0};
    int dev = ranges_find(p, &r), known = dev || host_find((void *)(uintptr_t)p, &r);
    for (unsigned i = 0; i < n; i++) {
        CUresult x = ptr_attr(data[i], a[i], p, dev, known, &r);
        if (x && x != CUDA_ERROR_INVALID_VALUE)
            return x; /* INVALID_VALUE: an attribute that does not apply to p is left as it was */
    }
    return CUDA_SUCCESS;
}

E CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute a, CUdeviceptr p)
{
    NEED_INIT();
    if (!value || !ranges_find(p, NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (a != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS; /* already so: one ordered queue */
}
