/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.c: CUDA's virtual memory management (cuMemAddressReserve, cuMemCreate,
 * cuMemMap, cuMemSetAccess, ...) of gpuos's libcuda.so.1, on the vGPU's device
 * through the daemon (gpuos_vmm_*, serve/vmm_cl.c): what JAX requires and
 * PyTorch's expandable segments use. The daemon owns the truth (ownership,
 * charges to the vGPU's share, what copies may reach); this file keeps what
 * the Driver API answers without asking: the properties a handle was made
 * with, its reference count (cuMemRetainAllocationHandle), and every mapping
 * with its access (cuMemGetAccess), which memory.c's pointer table also lists
 * (RANGE_VMM) so that copies, cuMemGetAddressRange and cuPointerGetAttribute
 * see device memory there.
 *
 * A handle's reference count is this library's: cuMemRelease that drops the
 * last reference of a mapped handle tells the daemon only at its last unmap
 * (the memory lives on meanwhile, as in CUDA), so that a retained handle stays
 * a handle the daemon knows. Handles and ranges this library does not know are
 * still sent: the daemon refuses what is not this client's (another tenant's
 * handle is CUDA_ERROR_INVALID_VALUE), and says why.
 * Granularity 2 MiB for sizes and addresses (cuMemGetAllocationGranularity,
 * memory.c); a size or address that is not a multiple is
 * CUDA_ERROR_INVALID_VALUE, as from the driver. */
#include "cudashim/driver.h"

#include "common/grow.h"

#include <string.h>

#define GRANULE ((size_t)GPUOS_VMM_GRANULE)

struct vhandle {
    CUmemGenericAllocationHandle h;
    size_t bytes;
    int refs, maps;
    CUmemAllocationProp prop;
};
struct vmap {
    CUdeviceptr va;
    size_t bytes;
    CUmemGenericAllocationHandle h;
    unsigned long long access; /* CU_MEM_ACCESS_FLAGS_PROT_* (the protocol's numbers) */
};

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static struct vhandle *hs;
static int n_hs, cap_hs;
static struct vmap *ms;
static int n_ms, cap_ms;

_Static_assert((int)CU_MEM_ACCESS_FLAGS_PROT_NONE == (int)GPUOS_VMM_NONE && (int)CU_MEM_ACCESS_FLAGS_PROT_READ == (int)GPUOS_VMM_READ &&
                   (int)CU_MEM_ACCESS_FLAGS_PROT_READWRITE == (int)GPUOS_VMM_READWRITE,
               "CUDA's access flags are the protocol's");

static struct vhandle *handle_of(CUmemGenericAllocationHandle h)
{
    for (int i = 0; i < n_hs; i++)
        if (hs[i].h == h)
            return &hs[i];
    return NULL;
}

/* The mapping holding address p, or NULL (lock held). */
static struct vmap *map_holding(CUdeviceptr p)
{
    for (int i = 0; i < n_ms; i++)
        if (p >= ms[i].va && p - ms[i].va < ms[i].bytes)
            return &ms[i];
    return NULL;
}

/* Drops handle v once nothing refers to it (lk held): the daemon releases it. */
static CUresult maybe_release(struct vhandle *v)
{
    if (v->refs > 0 || v->maps > 0)
        return CUDA_SUCCESS;
    CUresult r = map_rc(gpuos_vmm_release(shim_proc.g, v->h), "cuMemRelease");
    *v = hs[--n_hs];
    return r;
}

E CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                               unsigned long long flags)
{
    if (!ptr || !size || size % GRANULE || flags || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    gpuos_dptr va; /* the hint addr is not honoured: the driver may ignore it too */
    CUresult r = map_rc(gpuos_vmm_reserve(shim_proc.g, size, alignment, &va), "cuMemAddressReserve");
    if (!r)
        *ptr = (CUdeviceptr)va;
    return r;
}

E CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    NEED_INIT();
    if (!ptr || !size || size % GRANULE || ptr % GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    return map_rc(gpuos_vmm_unreserve(shim_proc.g, ptr, size), "cuMemAddressFree");
}

E CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                       unsigned long long flags)
{
    if (!handle || !prop || flags || !size || size % GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_CTX();
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return shim_unsupported("cuMemCreate (allocation types other than CU_MEM_ALLOCATION_TYPE_PINNED)");
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return shim_unsupported("cuMemCreate (host or NUMA memory: the vGPU's memory is its device's)");
    if (prop->location.id != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return shim_unsupported("cuMemCreate (handle types other than none and POSIX file descriptors)");
    if (prop->allocFlags.compressionType)
        return shim_unsupported("cuMemCreate (compressible memory)");
    uint64_t h;
    CUresult r = map_rc(gpuos_vmm_create(shim_proc.g, size, &h), "cuMemCreate");
    if (r)
        return r;
    pthread_mutex_lock(&lk);
    if (gos_grow((void **)&hs, &cap_hs, n_hs, sizeof *hs, 16)) {
        gpuos_vmm_release(shim_proc.g, h);
        pthread_mutex_unlock(&lk);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    hs[n_hs++] = (struct vhandle){.h = h, .bytes = size, .refs = 1, .prop = *prop};
    pthread_mutex_unlock(&lk);
    *handle = h;
    return CUDA_SUCCESS;
}

E CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    NEED_INIT();
    pthread_mutex_lock(&lk);
    struct vhandle *v = handle_of(handle);
    CUresult r;
    if (!v || v->refs <= 0)
        r = v ? CUDA_ERROR_INVALID_VALUE : map_rc(gpuos_vmm_release(shim_proc.g, handle), "cuMemRelease");
    else {
        v->refs--;
        r = maybe_release(v);
    }
    pthread_mutex_unlock(&lk);
    return r;
}

E CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                    unsigned long long flags)
{
    NEED_CTX();
    if (!ptr || !size || size % GRANULE || ptr % GRANULE || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (offset)
        return shim_unsupported("cuMemMap (an offset into the allocation: map it from its start)");
    pthread_mutex_lock(&lk);
    CUresult r = map_rc(gpuos_vmm_map(shim_proc.g, ptr, size, handle), "cuMemMap");
    struct vhandle *v = handle_of(handle);
    if (!r && (!v || gos_grow((void **)&ms, &cap_ms, n_ms, sizeof *ms, 16))) {
        gpuos_vmm_unmap(shim_proc.g, ptr, size); /* (a handle the daemon maps is one made here) */
        r = v ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    }
    if (!r) {
        ms[n_ms++] = (struct vmap){ptr, size, handle, CU_MEM_ACCESS_FLAGS_PROT_NONE};
        v->maps++;
        ranges_add_flags(ptr, size, RANGE_VMM);
    }
    pthread_mutex_unlock(&lk);
    return r;
}

/* Every mapping inside [ptr, ptr + size) forgotten after the daemon unmapped
 * them (it took whole mappings only); handles left without references go. */
E CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    NEED_INIT();
    if (!ptr || !size || size % GRANULE || ptr % GRANULE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lk);
    CUresult r = map_rc(gpuos_vmm_unmap(shim_proc.g, ptr, size), "cuMemUnmap");
    for (int i = 0; !r && i < n_ms;) {
        if (ms[i].va < ptr || ms[i].va - ptr >= size) {
            i++;
            continue;
        }
        struct vmap m = ms[i];
        ms[i] = ms[--n_ms];
        ranges_del(m.va);
        struct vhandle *v = handle_of(m.h);
        if (v) {
            v->maps--;
            r = maybe_release(v);
        }
    }
    pthread_mutex_unlock(&lk);
    return r;
}

/* CUDA takes a list of (location, flags); here the one location is device 0,
 * and the last entry for it wins. PROT_NONE makes the range unreachable. */
E CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    NEED_INIT();
    if (!ptr || !size || size % GRANULE || ptr % GRANULE || !desc || !count)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long acc = 0;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return shim_unsupported("cuMemSetAccess (access from the host or a NUMA node)");
        if (desc[i].location.id != 0)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        acc = desc[i].flags;
    }
    pthread_mutex_lock(&lk);
    CUresult r = map_rc(gpuos_vmm_set_access(shim_proc.g, ptr, size, (int)acc), "cuMemSetAccess");
    for (int i = 0; !r && i < n_ms; i++)
        if (ms[i].va >= ptr && ms[i].va - ptr < size)
            ms[i].access = acc;
    pthread_mutex_unlock(&lk);
    return r;
}

E CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    NEED_INIT();
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || location->id != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lk);
    struct vmap *m = map_holding(ptr);
    if (m)
        *flags = m->access;
    pthread_mutex_unlock(&lk);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

E CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    NEED_INIT();
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lk);
    struct vhandle *v = handle_of(handle);
    if (v && v->refs > 0)
        *prop = v->prop;
    pthread_mutex_unlock(&lk);
    return v && v->refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The handle mapped at addr, with one more reference (released by cuMemRelease). */
E CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    NEED_INIT();
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lk);
    struct vmap *m = map_holding((CUdeviceptr)(uintptr_t)addr);
    struct vhandle *v = m ? handle_of(m->h) : NULL;
    if (v) {
        v->refs++;
        *handle = v->h;
    }
    pthread_mutex_unlock(&lk);
    return v ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A descriptor would name memory in the daemon's executor, which another process
 * cannot map into its own vGPU through CUDA; gpuos's shared segments
 * (gpuos_shm_*) are the way between tenants. */
E CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle handle,
                                        CUmemAllocationHandleType type, unsigned long long flags)
{
    return shim_unsupported("cuMemExportToShareableHandle (VMM memory is not shared between processes here)");
}

E CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *os_handle,
                                          CUmemAllocationHandleType type)
{
    return shim_unsupported("cuMemImportFromShareableHandle (VMM memory is not shared between processes here)");
}
