/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_api.c: CUDA's virtual memory management in libgpuos (gpuos.h,
 * gpuos_vmm_*; the daemon's serve/vmm_cl.c). Mapped memory with access is
 * recorded as known device memory (copies.c) so that copies inside one mapping
 * need no question; one across mappings asks the daemon.
 * Process: a client program (libgpuos; the shim too). */
#include "client/client_internal.h"

#include "common/status.h"

_Static_assert(GPUOS_VMM_GRANULE == GOS_VMM_GRANULE && (int)GPUOS_VMM_READWRITE == (int)GOS_VMM_ACCESS_RW &&
                   (int)GPUOS_VMM_READ == (int)GOS_VMM_ACCESS_READ && (int)GPUOS_VMM_NONE == (int)GOS_VMM_ACCESS_NONE,
               "the public VMM constants are the protocol's");

static int vmm_value(gpuos_vgpu *g, uint16_t type, const void *m, size_t n, uint64_t *out, const char *what)
{
    if (!out)
        return gos_fail(GOS_EINVAL, "%s: no result to fill", what);
    struct gos_rep_vmm r;
    int rc = gcl_call(g, type, m, n, -1, &r, sizeof r);
    if (!rc)
        *out = r.value;
    return rc;
}

int gpuos_vmm_reserve(gpuos_vgpu *g, size_t bytes, size_t align, gpuos_dptr *va)
{
    struct gos_msg_vmm_reserve m = {.bytes = bytes, .align = align};
    LOCKED(g, vmm_value(g, GOS_MSG_VMM_RESERVE, &m, sizeof m, va, "gpuos_vmm_reserve"));
}

int gpuos_vmm_create(gpuos_vgpu *g, size_t bytes, uint64_t *handle)
{
    struct gos_msg_vmm_create m = {.bytes = bytes};
    LOCKED(g, vmm_value(g, GOS_MSG_VMM_CREATE, &m, sizeof m, handle, "gpuos_vmm_create"));
}

int gpuos_vmm_unreserve(gpuos_vgpu *g, gpuos_dptr va, size_t bytes)
{
    struct gos_msg_vmm_range m = {.va = va, .bytes = bytes};
    LOCKED(g, gcl_call(g, GOS_MSG_VMM_UNRESERVE, &m, sizeof m, -1, NULL, 0));
}

int gpuos_vmm_release(gpuos_vgpu *g, uint64_t handle)
{
    struct gos_msg_vmm_release m = {.handle = handle};
    LOCKED(g, gcl_call(g, GOS_MSG_VMM_RELEASE, &m, sizeof m, -1, NULL, 0));
}

int gpuos_vmm_map(gpuos_vgpu *g, gpuos_dptr va, size_t bytes, uint64_t handle)
{
    struct gos_msg_vmm_map m = {.va = va, .bytes = bytes, .handle = handle};
    LOCKED(g, gcl_call(g, GOS_MSG_VMM_MAP, &m, sizeof m, -1, NULL, 0));
}

/* Known ranges are forgotten before the request whatever its answer: at worst
 * a later copy asks the daemon. */
static int vmm_unmap(gpuos_vgpu *g, gpuos_dptr va, size_t bytes)
{
    struct gos_msg_vmm_range m = {.va = va, .bytes = bytes};
    gcl_known_del_within(g, va, bytes);
    return gcl_call(g, GOS_MSG_VMM_UNMAP, &m, sizeof m, -1, NULL, 0);
}
int gpuos_vmm_unmap(gpuos_vgpu *g, gpuos_dptr va, size_t bytes) { LOCKED(g, vmm_unmap(g, va, bytes)); }

static int vmm_access(gpuos_vgpu *g, gpuos_dptr va, size_t bytes, int access)
{
    if (access != GPUOS_VMM_NONE && access != GPUOS_VMM_READ && access != GPUOS_VMM_READWRITE)
        return gos_fail(GOS_EINVAL, "gpuos_vmm_set_access: access %d (none 0, read 1, read-write 3)", access);
    struct gos_msg_vmm_access m = {.va = va, .bytes = bytes, .access = (uint32_t)access};
    gcl_known_del_within(g, va, bytes);
    int rc = gcl_call(g, GOS_MSG_VMM_ACCESS, &m, sizeof m, -1, NULL, 0);
    if (!rc && access == GPUOS_VMM_READWRITE)
        gcl_known_add(g, va, bytes); /* read-only ones are left to the daemon, which refuses writes */
    return rc;
}
int gpuos_vmm_set_access(gpuos_vgpu *g, gpuos_dptr va, size_t bytes, int access)
{
    LOCKED(g, vmm_access(g, va, bytes, access));
}
