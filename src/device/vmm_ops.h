/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_ops.h: device virtual memory (issue 10; paper 002 sections 4.2 and 4.3):
 * physical device memory apart from the addresses it is mapped at, as CUDA's
 * VMM gives it (cuMemCreate, cuMemAddressReserve, cuMemMap, POSIX file
 * descriptor export), so that
 *   - one physical allocation is exported as a file descriptor and mapped into
 *     several processes' address spaces (shared device memory, Gdev's shmget /
 *     shmat), each seeing the others' writes;
 *   - an allocation is evicted (copied out to host memory, unmapped, its
 *     physical memory released) and later restored: new physical memory mapped at
 *     the SAME address and the bytes copied back, so the owner keeps its pointers
 *     (Gdev's data swapping).
 * Granularity: GOS_VMM_PAGE (2 MB, what the H200 reports for POSIX-fd
 * exportable memory); every size and address here is a multiple of it.
 *
 * Backends:
 *   cuda_vmm.c: cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
 *               cuMemExportToShareableHandle / cuMemImportFromShareableHandle,
 *               cuMemAddressReserve, cuMemMap + cuMemSetAccess, cuMemUnmap,
 *               cuMemRelease; synchronous cuMemcpy for the copies;
 *   sim_vmm.c : physical memory is a sealed memfd, a reservation a PROT_NONE
 *               mapping of host addresses, a mapping MAP_SHARED|MAP_FIXED of the
 *               memfd over it, so two simulated devices in two processes really
 *               share the bytes; unmapping puts PROT_NONE back (the addresses stay
 *               reserved, a stray access faults as on a GPU). Physical memory is
 *               counted against the simulated device's memory (info.mem_bytes).
 *
 * Handles are opaque uint64_t (never 0). Semantics follow CUDA's: a released
 * handle's memory lives on while it is mapped; an imported handle names the same
 * physical memory as the exporter's (it is not counted again); unmap and
 * unreserve take exactly a range that was mapped / reserved. */
#ifndef GOS_VMM_OPS_H
#define GOS_VMM_OPS_H

#include "device/device.h"

#include <stddef.h>
#include <stdint.h>

#define GOS_VMM_PAGE (2ull << 20)

struct gos_vmm_ops {
    gos_pillar_close_fn close;

    /* Physical memory of `bytes` (a multiple of GOS_VMM_PAGE), exportable.
     * GOS_ENOMEM when the device has no room. */
    int (*create)(gos_device *d, uint64_t bytes, uint64_t *h);
    int (*release)(gos_device *d, uint64_t h);
    /* A new file descriptor for h (the caller owns and closes it). */
    int (*export_fd)(gos_device *d, uint64_t h, int *fd);
    /* A handle of the physical memory behind fd (exported by this or another
     * process); fd stays the caller's. */
    int (*import_fd)(gos_device *d, int fd, uint64_t *h);
    int (*reserve)(gos_device *d, uint64_t bytes, uint64_t *va);
    int (*unreserve)(gos_device *d, uint64_t va, uint64_t bytes);
    /* Maps the first `bytes` of h at va (inside one reservation, nothing mapped
     * there yet), readable and writable by this device's kernels and copies. */
    int (*map)(gos_device *d, uint64_t va, uint64_t bytes, uint64_t h);
    int (*unmap)(gos_device *d, uint64_t va, uint64_t bytes);
    /* Synchronous copies between host memory and a mapped range (pinned host
     * memory from gos_exec_host_alloc copies at the DMA engines' rate). */
    int (*copy_to_host)(gos_device *d, void *dst, uint64_t va, uint64_t n);
    int (*copy_to_device)(gos_device *d, uint64_t va, const void *src, uint64_t n);
    /* What this device object holds now (leak checks): physical bytes it
     * created that are still alive, handles not released, live mappings. */
    int (*usage)(gos_device *d, uint64_t *phys_bytes, int *handles, int *mappings);
    /* Access to the mapping at va (exactly a mapped range): read-only or
     * read-write for this device's kernels and copies (read-only shared
     * segments, SHM_RDONLY). A kernel's write to a read-only range faults on a
     * GPU; the simulated device refuses it. */
    int (*set_access)(gos_device *d, uint64_t va, uint64_t bytes, int read_only);
};

/* Checked wrappers (vmm_ops.c): GOS_EUNSUPPORTED when the backend lacks VMM,
 * GOS_EINVAL for sizes or addresses that are not multiples of GOS_VMM_PAGE, 0
 * bytes, a missing result pointer. */
int gos_vmm_create(gos_device *d, uint64_t bytes, uint64_t *h);
int gos_vmm_release(gos_device *d, uint64_t h);
int gos_vmm_export_fd(gos_device *d, uint64_t h, int *fd);
int gos_vmm_import_fd(gos_device *d, int fd, uint64_t *h);
int gos_vmm_reserve(gos_device *d, uint64_t bytes, uint64_t *va);
int gos_vmm_unreserve(gos_device *d, uint64_t va, uint64_t bytes);
int gos_vmm_map(gos_device *d, uint64_t va, uint64_t bytes, uint64_t h);
int gos_vmm_unmap(gos_device *d, uint64_t va, uint64_t bytes);
int gos_vmm_copy_to_host(gos_device *d, void *dst, uint64_t va, uint64_t n);
int gos_vmm_copy_to_device(gos_device *d, uint64_t va, const void *src, uint64_t n);
int gos_vmm_usage(gos_device *d, uint64_t *phys_bytes, int *handles, int *mappings);
int gos_vmm_set_access(gos_device *d, uint64_t va, uint64_t bytes, int read_only);
/* Whether the backend has VMM at all (no message). */
int gos_vmm_supported(const gos_device *d);

/* bytes rounded up to GOS_VMM_PAGE; 0 for 0 or on overflow. */
uint64_t gos_vmm_round(uint64_t bytes);

/* One swappable or shareable buffer, built from the primitives above: its
 * addresses stay reserved for its whole life; its physical memory comes and goes
 * (evict / restore). */
typedef struct {
    uint64_t va, bytes; /* bytes: a multiple of GOS_VMM_PAGE */
    uint64_t h;         /* physical handle while resident (0: evicted) */
    int resident;
    int imported;       /* attached to another process's memory: never evicted here */
} gos_vmm_buf;

/* create + reserve + map (bytes rounded up to GOS_VMM_PAGE). */
int gos_vmm_buf_alloc(gos_device *d, uint64_t bytes, gos_vmm_buf *b);
/* A new file descriptor of b's physical memory (b must be resident). */
int gos_vmm_buf_export(gos_device *d, const gos_vmm_buf *b, int *fd);
/* import + reserve + map: b's bytes are the exporter's (bytes of its segment). */
int gos_vmm_buf_attach(gos_device *d, int fd, uint64_t bytes, gos_vmm_buf *b);
/* Copies all of b to host (b->bytes there), then unmaps and releases its
 * physical memory; the addresses stay reserved. If the copy fails nothing
 * changed; b stays resident. */
int gos_vmm_buf_evict(gos_device *d, gos_vmm_buf *b, void *host);
/* New physical memory mapped at b->va, the bytes copied back from host. If any
 * step fails b stays evicted and host keeps the only copy. */
int gos_vmm_buf_restore(gos_device *d, gos_vmm_buf *b, const void *host);
/* As evict / restore, copying in pieces: the first of `first` bytes, then of
 * `piece` bytes (0: all at once). Host memory page-locked in separate pieces
 * (the daemon's swap pool, registered chunk by chunk) copies at the pinned rate
 * only when no copy crosses from one registration into the next. */
int gos_vmm_buf_evict_pieces(gos_device *d, gos_vmm_buf *b, void *host, uint64_t first, uint64_t piece);
int gos_vmm_buf_restore_pieces(gos_device *d, gos_vmm_buf *b, const void *host, uint64_t first, uint64_t piece);
/* The two halves of evict / restore, for a copy made by another process (the
 * daemon's swap helper, which attaches b's memory through an exported fd and
 * copies it into the host pool it keeps page-locked, issue 42.2): drop unmaps
 * and releases b's physical memory, keeping its addresses (the bytes must be
 * elsewhere already); remap maps new physical memory there (its contents
 * undefined until copied in). */
int gos_vmm_buf_drop(gos_device *d, gos_vmm_buf *b);
int gos_vmm_buf_remap(gos_device *d, gos_vmm_buf *b);
/* Copies all of a mapped b to host (out) or from it, in pieces as above. */
int gos_vmm_buf_copy_pieces(gos_device *d, const gos_vmm_buf *b, void *host, int out, uint64_t first,
                            uint64_t piece);
/* Unmaps, releases and unreserves (whatever of that applies). */
void gos_vmm_buf_free(gos_device *d, gos_vmm_buf *b);

#endif
