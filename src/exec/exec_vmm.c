/* SPDX-License-Identifier: Apache-2.0 */
/* exec_vmm.c: VMM operations of one client on a device (exec_vmm.h). The
 * device layer does the work (cuMemCreate / cuMemMap / ... on a GPU, memfds
 * and mmap on the simulated device); this file keeps the client's table in
 * step with it.
 * Process: the executor, and the daemon under isolation = none. */
#include "exec/exec_vmm.h"

#include "common/status.h"
#include "device/vmm_ops.h"

_Static_assert(GOS_VMM_GRANULE == GOS_VMM_PAGE, "the protocol's granule is the device layer's page");

static int reserve(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m, uint64_t *out)
{
    uint64_t align = m->align > GOS_VMM_PAGE ? m->align : GOS_VMM_PAGE, full = m->bytes + (align - GOS_VMM_PAGE);
    uint64_t base;
    if (full < m->bytes)
        return gos_fail(GOS_EINVAL, "address reservation of %llu bytes aligned to %llu wraps",
                        (unsigned long long)m->bytes, (unsigned long long)align);
    int rc = gos_vmm_reserve(d, full, &base);
    if (rc)
        return rc;
    uint64_t va = (base + align - 1) / align * align; /* inside [base, base + full) by construction */
    if ((rc = gos_vmmtab_resv_add(t, va, m->bytes, base, full))) {
        gos_vmm_unreserve(d, base, full);
        return rc;
    }
    *out = va;
    return GOS_OK;
}

static int unreserve(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m)
{
    int i = gos_vmmtab_resv_find(t, m->va, m->bytes);
    if (i < 0)
        return GOS_EINVAL;
    int rc = gos_vmm_unreserve(d, t->r[i].base, t->r[i].full);
    if (!rc)
        gos_vmmtab_resv_del(t, i);
    return rc;
}

static int create(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m, uint64_t *out)
{
    uint64_t h;
    int rc = gos_vmm_create(d, m->bytes, &h);
    if (rc)
        return rc;
    if ((rc = gos_vmmtab_handle_add(t, h, h, m->bytes))) {
        gos_vmm_release(d, h);
        return rc;
    }
    *out = h;
    return GOS_OK;
}

/* The device keeps a released handle's memory while it is mapped (CUDA's
 * semantics, vmm_ops.h): released there at once. */
static int release(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m)
{
    uint64_t freed;
    if (!gos_vmmtab_live(t, m->handle))
        return GOS_EINVAL;
    int rc = gos_vmm_release(d, m->handle);
    return rc ? rc : gos_vmmtab_release(t, m->handle, &freed);
}

static int map(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m)
{
    int rc = gos_vmmtab_check_map(t, m->va, m->bytes, m->handle);
    if (!rc && !(rc = gos_vmm_map(d, m->va, m->bytes, m->handle)) && (rc = gos_vmmtab_map_add(t, m->va, m->bytes, m->handle)))
        gos_vmm_unmap(d, m->va, m->bytes);
    return rc;
}

/* Mapping by mapping: one the device refuses stops there, what came before
 * is unmapped (and recorded so). */
static int unmap(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m)
{
    int rc = gos_vmmtab_cover(t, m->va, m->bytes);
    for (uint64_t at = m->va; !rc && at < m->va + m->bytes;) {
        int i = gos_vmmtab_map_at(t, at);
        uint64_t n = t->m[i].bytes, freed;
        if (!(rc = gos_vmm_unmap(d, at, n)))
            gos_vmmtab_map_del(t, i, &freed);
        at += n;
    }
    return rc;
}

/* The device has read-only and read-write; no access at all is the tables'
 * (nothing reaches such a mapping through the daemon or the ring). */
static int set_access(gos_device *d, gos_vmm_tab *t, const struct x_vmm *m)
{
    int rc = gos_vmmtab_cover(t, m->va, m->bytes);
    for (uint64_t at = m->va; !rc && m->access != GOS_VMM_ACCESS_NONE && at < m->va + m->bytes;) {
        int i = gos_vmmtab_map_at(t, at);
        rc = gos_vmm_set_access(d, at, t->m[i].bytes, m->access == GOS_VMM_ACCESS_READ);
        at += t->m[i].bytes;
    }
    if (!rc)
        gos_vmmtab_access(t, m->va, m->bytes, (int)m->access);
    return rc;
}

int gos_vmmx_op(gos_device *d, gos_vmm_tab *t, uint32_t op, const struct x_vmm *m, uint64_t *out)
{
    *out = 0;
    switch (op) {
    case X_VMM_RESERVE: return reserve(d, t, m, out);
    case X_VMM_UNRESERVE: return unreserve(d, t, m);
    case X_VMM_CREATE: return create(d, t, m, out);
    case X_VMM_RELEASE: return release(d, t, m);
    case X_VMM_MAP: return map(d, t, m);
    case X_VMM_UNMAP: return unmap(d, t, m);
    case X_VMM_ACCESS: return set_access(d, t, m);
    default: return gos_fail(GOS_EPROTO, "VMM operation %u unknown", (unsigned)op);
    }
}

void gos_vmmx_release_all(gos_device *d, gos_vmm_tab *t)
{
    for (int i = 0; i < t->n_m; i++)
        gos_vmm_unmap(d, t->m[i].va, t->m[i].bytes);
    for (int i = 0; i < t->n_h; i++)
        if (!t->h[i].released)
            gos_vmm_release(d, t->h[i].dev_h);
    for (int i = 0; i < t->n_r; i++)
        gos_vmm_unreserve(d, t->r[i].base, t->r[i].full);
    gos_vmmtab_free(t);
}
