/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_vmm.c: device virtual memory on a real GPU (vmm_ops.h), CUDA's VMM API in
 * the device's primary context:
 *   create      cuMemCreate, pinned device memory on this GPU, exportable as a
 *               POSIX file descriptor (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
 *   export      cuMemExportToShareableHandle (a new descriptor);
 *   import      cuMemImportFromShareableHandle;
 *   reserve     cuMemAddressReserve, 2 MB aligned;
 *   map         cuMemMap + cuMemSetAccess (read-write for this GPU);
 *   unmap       cuMemUnmap; release cuMemRelease; unreserve cuMemAddressFree;
 *   copies      cuMemcpyDtoH / cuMemcpyHtoD (synchronous).
 * The H200 reports 2 MB granularity for such memory (../shared/H200-NOTES.md);
 * a device whose granularity does not divide GOS_VMM_PAGE is refused once.
 * A small table remembers the size of every handle so that usage() can answer
 * leak checks. */
#include "device/cuda/cuda_internal.h"
#include "device/vmm_ops.h"

#include "common/grow.h"
#include "common/status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cv_handle {
    CUmemGenericAllocationHandle h;
    uint64_t bytes;
    int imported;
};

struct cuda_vmm {
    int checked; /* granularity verified */
    struct cv_handle *t;
    int n, cap;
    int maps;
};

static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;

static void cv_close(gos_device *d)
{
    struct cuda_vmm *v = d->vmm_priv;
    if (!v)
        return;
    free(v->t);
    free(v);
    d->vmm_priv = NULL;
}

static void prop_of(gos_device *d, CUmemAllocationProp *prop)
{
    struct gos_cuda *c = d->priv;
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = (int)c->dev;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

/* The pillar's state with the context current; the granularity checked once. */
static int cv_state(gos_device *d, struct cuda_vmm **out)
{
    int fresh, rc = gos_cuda_pillar_state(d, &d->vmm_priv, sizeof(struct cuda_vmm), &fresh);
    struct cuda_vmm *v = d->vmm_priv;
    if (rc)
        return rc;
    if (!v->checked) {
        CUmemAllocationProp prop;
        size_t gran = 0;
        prop_of(d, &prop);
        if ((rc = CU_CALL(cuMemGetAllocationGranularity, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
            return rc;
        if (!gran || GOS_VMM_PAGE % gran)
            return gos_fail(GOS_EUNSUPPORTED, "VMM granularity %zu does not divide 2 MB", gran);
        v->checked = 1;
    }
    *out = v;
    return GOS_OK;
}

static int remember(struct cuda_vmm *v, CUmemGenericAllocationHandle h, uint64_t bytes, int imported)
{
    pthread_mutex_lock(&cv_lock);
    int rc = gos_grow((void **)&v->t, &v->cap, v->n, sizeof *v->t, 32);
    if (rc) {
        pthread_mutex_unlock(&cv_lock);
        return rc;
    }
    v->t[v->n++] = (struct cv_handle){h, bytes, imported};
    pthread_mutex_unlock(&cv_lock);
    return GOS_OK;
}

static int cv_create(gos_device *d, uint64_t bytes, uint64_t *out)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    CUmemAllocationProp prop;
    prop_of(d, &prop);
    CUmemGenericAllocationHandle h = 0;
    if ((rc = CU_CALL(cuMemCreate, &h, (size_t)bytes, &prop, 0)))
        return rc;
    if ((rc = remember(v, h, bytes, 0))) {
        CU_CALL(cuMemRelease, h);
        return rc;
    }
    *out = (uint64_t)h;
    return GOS_OK;
}

static int cv_release(gos_device *d, uint64_t h)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    if ((rc = CU_CALL(cuMemRelease, (CUmemGenericAllocationHandle)h)))
        return rc;
    pthread_mutex_lock(&cv_lock);
    for (int i = 0; i < v->n; i++)
        if (v->t[i].h == (CUmemGenericAllocationHandle)h) {
            v->t[i] = v->t[--v->n];
            break;
        }
    pthread_mutex_unlock(&cv_lock);
    return GOS_OK;
}

static int cv_export(gos_device *d, uint64_t h, int *fd)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    int f = -1;
    if ((rc = CU_CALL(cuMemExportToShareableHandle, &f, (CUmemGenericAllocationHandle)h,
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)))
        return rc;
    *fd = f;
    return GOS_OK;
}

static int cv_import(gos_device *d, int fd, uint64_t *out)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    CUmemGenericAllocationHandle h = 0;
    if ((rc = CU_CALL(cuMemImportFromShareableHandle, &h, (void *)(uintptr_t)fd,
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)))
        return rc;
    if ((rc = remember(v, h, 0, 1))) {
        CU_CALL(cuMemRelease, h);
        return rc;
    }
    *out = (uint64_t)h;
    return GOS_OK;
}

static int cv_reserve(gos_device *d, uint64_t bytes, uint64_t *va)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    CUdeviceptr p = 0;
    if ((rc = CU_CALL(cuMemAddressReserve, &p, (size_t)bytes, (size_t)GOS_VMM_PAGE, 0, 0)))
        return rc;
    *va = (uint64_t)p;
    return GOS_OK;
}

static int cv_unreserve(gos_device *d, uint64_t va, uint64_t bytes)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    return rc ? rc : CU_CALL(cuMemAddressFree, (CUdeviceptr)va, (size_t)bytes);
}

/* One access descriptor for this device over [va, va + bytes). */
static int access_set(struct gos_cuda *c, uint64_t va, uint64_t bytes, CUmemAccess_flags flags)
{
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = (int)c->dev;
    acc.flags = flags;
    return CU_CALL(cuMemSetAccess, (CUdeviceptr)va, (size_t)bytes, &acc, 1);
}

static int cv_map(gos_device *d, uint64_t va, uint64_t bytes, uint64_t h)
{
    struct cuda_vmm *v;
    struct gos_cuda *c = d->priv;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    if ((rc = CU_CALL(cuMemMap, (CUdeviceptr)va, (size_t)bytes, 0, (CUmemGenericAllocationHandle)h, 0)))
        return rc;
    if ((rc = access_set(c, va, bytes, CU_MEM_ACCESS_FLAGS_PROT_READWRITE))) {
        CU_CALL(cuMemUnmap, (CUdeviceptr)va, (size_t)bytes);
        return rc;
    }
    pthread_mutex_lock(&cv_lock);
    v->maps++;
    pthread_mutex_unlock(&cv_lock);
    return GOS_OK;
}

/* cuMemSetAccess again over the whole mapping: PROT_READ makes a kernel's
 * write fault (a sticky error of this context only). */
static int cv_set_access(gos_device *d, uint64_t va, uint64_t bytes, int read_only)
{
    struct cuda_vmm *v;
    struct gos_cuda *c = d->priv;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    return access_set(c, va, bytes, read_only ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

static int cv_unmap(gos_device *d, uint64_t va, uint64_t bytes)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (!rc)
        rc = CU_CALL(cuMemUnmap, (CUdeviceptr)va, (size_t)bytes);
    if (!rc) {
        pthread_mutex_lock(&cv_lock);
        v->maps--;
        pthread_mutex_unlock(&cv_lock);
    }
    return rc;
}

static int cv_to_host(gos_device *d, void *dst, uint64_t va, uint64_t n)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemcpyDtoH, dst, (CUdeviceptr)va, (size_t)n);
}

static int cv_to_device(gos_device *d, uint64_t va, const void *src, uint64_t n)
{
    int rc = gos_cuda_enter(d);
    return rc ? rc : CU_CALL(cuMemcpyHtoD, (CUdeviceptr)va, src, (size_t)n);
}

static int cv_usage(gos_device *d, uint64_t *bytes, int *handles, int *mappings)
{
    struct cuda_vmm *v;
    int rc = cv_state(d, &v);
    if (rc)
        return rc;
    pthread_mutex_lock(&cv_lock);
    *bytes = 0;
    for (int i = 0; i < v->n; i++)
        *bytes += v->t[i].bytes;
    *handles = v->n;
    *mappings = v->maps;
    pthread_mutex_unlock(&cv_lock);
    return GOS_OK;
}

const struct gos_vmm_ops gos_cuda_vmm_ops = {
    .close = cv_close,
    .create = cv_create,
    .release = cv_release,
    .export_fd = cv_export,
    .import_fd = cv_import,
    .reserve = cv_reserve,
    .unreserve = cv_unreserve,
    .map = cv_map,
    .unmap = cv_unmap,
    .copy_to_host = cv_to_host,
    .copy_to_device = cv_to_device,
    .usage = cv_usage,
    .set_access = cv_set_access,
};
