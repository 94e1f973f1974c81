/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_ops.c: the checked wrappers of device/vmm_ops.h and the swappable buffer built
 * on them (gos_vmm_buf_*). Arguments are checked here once, so the backends can
 * trust page alignment and non-zero sizes. */
#include "device/vmm_ops.h"

#include "common/status.h"

#include <stdint.h>
#include <string.h>

#define VMM(d) ((d)->ops->vmm)
#define MISSING(d, what) gos_dev_missing(d, what)
#define ALIGNED(x) ((x) % GOS_VMM_PAGE == 0)

uint64_t gos_vmm_round(uint64_t bytes)
{
    if (!bytes || bytes > UINT64_MAX - GOS_VMM_PAGE)
        return 0;
    return (bytes + GOS_VMM_PAGE - 1) / GOS_VMM_PAGE * GOS_VMM_PAGE;
}

int gos_vmm_supported(const gos_device *d) { return VMM(d) && VMM(d)->create && VMM(d)->map; }

static int check_size(uint64_t bytes, const char *what)
{
    if (!bytes || !ALIGNED(bytes))
        return gos_fail(GOS_EINVAL, "%s: %llu bytes is not a positive multiple of 2 MB", what,
                        (unsigned long long)bytes);
    return GOS_OK;
}

int gos_vmm_create(gos_device *d, uint64_t bytes, uint64_t *h)
{
    if (!VMM(d) || !VMM(d)->create)
        return MISSING(d, "virtual memory management (physical allocations)");
    int rc = check_size(bytes, "device memory");
    if (rc)
        return rc;
    if (!h)
        return gos_fail(GOS_EINVAL, "device memory: no handle to fill");
    return VMM(d)->create(d, bytes, h);
}

int gos_vmm_release(gos_device *d, uint64_t h)
{
    if (!VMM(d) || !VMM(d)->release)
        return MISSING(d, "virtual memory management (release)");
    if (!h)
        return gos_fail(GOS_EINVAL, "release: handle 0");
    return VMM(d)->release(d, h);
}

int gos_vmm_export_fd(gos_device *d, uint64_t h, int *fd)
{
    if (!VMM(d) || !VMM(d)->export_fd)
        return MISSING(d, "exporting device memory as a file descriptor");
    if (!h || !fd)
        return gos_fail(GOS_EINVAL, "export: handle 0 or no descriptor to fill");
    return VMM(d)->export_fd(d, h, fd);
}

int gos_vmm_import_fd(gos_device *d, int fd, uint64_t *h)
{
    if (!VMM(d) || !VMM(d)->import_fd)
        return MISSING(d, "importing device memory from a file descriptor");
    if (fd < 0 || !h)
        return gos_fail(GOS_EINVAL, "import: descriptor %d or no handle to fill", fd);
    return VMM(d)->import_fd(d, fd, h);
}

int gos_vmm_reserve(gos_device *d, uint64_t bytes, uint64_t *va)
{
    if (!VMM(d) || !VMM(d)->reserve)
        return MISSING(d, "reserving device addresses");
    int rc = check_size(bytes, "address reservation");
    if (rc)
        return rc;
    if (!va)
        return gos_fail(GOS_EINVAL, "address reservation: no address to fill");
    return VMM(d)->reserve(d, bytes, va);
}

int gos_vmm_unreserve(gos_device *d, uint64_t va, uint64_t bytes)
{
    if (!VMM(d) || !VMM(d)->unreserve)
        return MISSING(d, "freeing device addresses");
    if (!va || !ALIGNED(va))
        return gos_fail(GOS_EINVAL, "unreserve: address 0x%llx is not 2 MB aligned", (unsigned long long)va);
    int rc = check_size(bytes, "unreserve");
    return rc ? rc : VMM(d)->unreserve(d, va, bytes);
}

int gos_vmm_map(gos_device *d, uint64_t va, uint64_t bytes, uint64_t h)
{
    if (!VMM(d) || !VMM(d)->map)
        return MISSING(d, "mapping device memory");
    if (!va || !ALIGNED(va) || !h)
        return gos_fail(GOS_EINVAL, "map: address 0x%llx not 2 MB aligned or handle 0", (unsigned long long)va);
    int rc = check_size(bytes, "map");
    return rc ? rc : VMM(d)->map(d, va, bytes, h);
}

int gos_vmm_unmap(gos_device *d, uint64_t va, uint64_t bytes)
{
    if (!VMM(d) || !VMM(d)->unmap)
        return MISSING(d, "unmapping device memory");
    if (!va || !ALIGNED(va))
        return gos_fail(GOS_EINVAL, "unmap: address 0x%llx is not 2 MB aligned", (unsigned long long)va);
    int rc = check_size(bytes, "unmap");
    return rc ? rc : VMM(d)->unmap(d, va, bytes);
}

int gos_vmm_set_access(gos_device *d, uint64_t va, uint64_t bytes, int read_only)
{
    if (!VMM(d) || !VMM(d)->set_access)
        return MISSING(d, "setting the access of mapped device memory");
    if (!va || !ALIGNED(va))
        return gos_fail(GOS_EINVAL, "set access: address 0x%llx is not 2 MB aligned", (unsigned long long)va);
    int rc = check_size(bytes, "set access");
    return rc ? rc : VMM(d)->set_access(d, va, bytes, read_only ? 1 : 0);
}

int gos_vmm_copy_to_host(gos_device *d, void *dst, uint64_t va, uint64_t n)
{
    if (!VMM(d) || !VMM(d)->copy_to_host)
        return MISSING(d, "copies from mapped device memory");
    if (!n)
        return GOS_OK;
    if (!dst || !va || va > UINT64_MAX - n)
        return gos_fail(GOS_EINVAL, "copy to host: no buffer or a range that wraps");
    return VMM(d)->copy_to_host(d, dst, va, n);
}

int gos_vmm_copy_to_device(gos_device *d, uint64_t va, const void *src, uint64_t n)
{
    if (!VMM(d) || !VMM(d)->copy_to_device)
        return MISSING(d, "copies to mapped device memory");
    if (!n)
        return GOS_OK;
    if (!src || !va || va > UINT64_MAX - n)
        return gos_fail(GOS_EINVAL, "copy to device: no buffer or a range that wraps");
    return VMM(d)->copy_to_device(d, va, src, n);
}

int gos_vmm_usage(gos_device *d, uint64_t *phys_bytes, int *handles, int *mappings)
{
    if (!VMM(d) || !VMM(d)->usage)
        return MISSING(d, "virtual memory usage");
    uint64_t b = 0;
    int h = 0, m = 0;
    int rc = VMM(d)->usage(d, &b, &h, &m);
    if (phys_bytes)
        *phys_bytes = b;
    if (handles)
        *handles = h;
    if (mappings)
        *mappings = m;
    return rc;
}

/* ---- swappable buffers ---- */

/* Maps physical memory b->h at a fresh reservation of sz bytes; on failure
 * releases b->h and clears b. */
static int buf_map_new(gos_device *d, gos_vmm_buf *b, uint64_t sz)
{
    int rc;
    if ((rc = gos_vmm_reserve(d, sz, &b->va)))
        goto fail_release;
    if ((rc = gos_vmm_map(d, b->va, sz, b->h)))
        goto fail_unreserve;
    b->bytes = sz;
    b->resident = 1;
    return GOS_OK;
fail_unreserve:
    gos_vmm_unreserve(d, b->va, sz);
fail_release:
    gos_vmm_release(d, b->h);
    memset(b, 0, sizeof *b);
    return rc;
}

int gos_vmm_buf_alloc(gos_device *d, uint64_t bytes, gos_vmm_buf *b)
{
    memset(b, 0, sizeof *b);
    uint64_t sz = gos_vmm_round(bytes);
    if (!sz)
        return gos_fail(GOS_EINVAL, "device buffer: %llu bytes", (unsigned long long)bytes);
    int rc = gos_vmm_create(d, sz, &b->h);
    return rc ? rc : buf_map_new(d, b, sz);
}

int gos_vmm_buf_export(gos_device *d, const gos_vmm_buf *b, int *fd)
{
    if (!b->resident)
        return gos_fail(GOS_EINVAL, "export: the buffer at 0x%llx is evicted", (unsigned long long)b->va);
    return gos_vmm_export_fd(d, b->h, fd);
}

int gos_vmm_buf_attach(gos_device *d, int fd, uint64_t bytes, gos_vmm_buf *b)
{
    memset(b, 0, sizeof *b);
    uint64_t sz = gos_vmm_round(bytes);
    if (!sz)
        return gos_fail(GOS_EINVAL, "attach: %llu bytes", (unsigned long long)bytes);
    int rc = gos_vmm_import_fd(d, fd, &b->h);
    if (!rc && !(rc = buf_map_new(d, b, sz)))
        b->imported = 1;
    return rc;
}

/* Copies n bytes between host and va in pieces: the first of `first` bytes,
 * then of `piece` (0: one copy). */
static int copy_pieces(gos_device *d, int out, void *host, uint64_t va, uint64_t n, uint64_t first, uint64_t piece)
{
    uint64_t done = 0, len = first && first < n ? first : n;
    while (done < n) {
        if (len > n - done)
            len = n - done;
        int rc = out ? gos_vmm_copy_to_host(d, (char *)host + done, va + done, len)
                     : gos_vmm_copy_to_device(d, va + done, (const char *)host + done, len);
        if (rc)
            return rc;
        done += len;
        len = piece ? piece : n - done;
    }
    return GOS_OK;
}

int gos_vmm_buf_evict(gos_device *d, gos_vmm_buf *b, void *host)
{
    return gos_vmm_buf_evict_pieces(d, b, host, 0, 0);
}

int gos_vmm_buf_restore(gos_device *d, gos_vmm_buf *b, const void *host)
{
    return gos_vmm_buf_restore_pieces(d, b, host, 0, 0);
}

int gos_vmm_buf_evict_pieces(gos_device *d, gos_vmm_buf *b, void *host, uint64_t first, uint64_t piece)
{
    if (!b->resident)
        return gos_fail(GOS_EINVAL, "evict: the buffer at 0x%llx is already evicted", (unsigned long long)b->va);
    if (b->imported)
        return gos_fail(GOS_EINVAL, "evict: 0x%llx is another process's shared memory", (unsigned long long)b->va);
    int rc = gos_vmm_buf_copy_pieces(d, b, host, 1, first, piece);
    return rc ? rc /* nothing changed: still resident */ : gos_vmm_buf_drop(d, b);
}

int gos_vmm_buf_drop(gos_device *d, gos_vmm_buf *b)
{
    if (!b->resident)
        return gos_fail(GOS_EINVAL, "evict: the buffer at 0x%llx is already evicted", (unsigned long long)b->va);
    if (b->imported)
        return gos_fail(GOS_EINVAL, "evict: 0x%llx is another process's shared memory", (unsigned long long)b->va);
    int rc = gos_vmm_unmap(d, b->va, b->bytes);
    if (rc)
        return rc; /* still mapped and resident; the host copy is extra */
    /* Unmapped: the host copy is now the data. A failing release leaks the
     * physical memory but loses nothing. */
    rc = gos_vmm_release(d, b->h);
    b->h = 0;
    b->resident = 0;
    return rc;
}

int gos_vmm_buf_remap(gos_device *d, gos_vmm_buf *b)
{
    if (b->resident)
        return gos_fail(GOS_EINVAL, "restore: the buffer at 0x%llx is resident", (unsigned long long)b->va);
    uint64_t h;
    int rc = gos_vmm_create(d, b->bytes, &h);
    if (rc)
        return rc;
    if ((rc = gos_vmm_map(d, b->va, b->bytes, h))) {
        gos_vmm_release(d, h);
        return rc;
    }
    b->h = h;
    b->resident = 1;
    return GOS_OK;
}

int gos_vmm_buf_copy_pieces(gos_device *d, const gos_vmm_buf *b, void *host, int out, uint64_t first,
                            uint64_t piece)
{
    if (!b->resident)
        return gos_fail(GOS_EINVAL, "copy: the buffer at 0x%llx is not mapped", (unsigned long long)b->va);
    if (!host)
        return gos_fail(GOS_EINVAL, "copy: no host buffer");
    return copy_pieces(d, out, host, b->va, b->bytes, first, piece);
}

int gos_vmm_buf_restore_pieces(gos_device *d, gos_vmm_buf *b, const void *host, uint64_t first, uint64_t piece)
{
    if (!host)
        return gos_fail(GOS_EINVAL, "restore: no host copy");
    int rc = gos_vmm_buf_remap(d, b);
    if (rc)
        return rc;
    if ((rc = gos_vmm_buf_copy_pieces(d, b, (void *)(uintptr_t)host, 0, first, piece))) {
        gos_vmm_unmap(d, b->va, b->bytes); /* still evicted: host keeps the only copy */
        gos_vmm_release(d, b->h);
        b->h = 0;
        b->resident = 0;
    }
    return rc;
}

void gos_vmm_buf_free(gos_device *d, gos_vmm_buf *b)
{
    if (!b->va)
        return;
    if (b->resident) {
        gos_vmm_unmap(d, b->va, b->bytes);
        gos_vmm_release(d, b->h);
    }
    gos_vmm_unreserve(d, b->va, b->bytes);
    memset(b, 0, sizeof *b);
}
