/* SPDX-License-Identifier: Apache-2.0 */
/* exec_mem.c: an executor's memory for its client (executor process only;
 * exec_internal.h): the device ranges its ring's requests are checked against
 * (the one range check of common/range.h), the client's shared regions mapped
 * here, attached shared segments (issue 10), swappable allocations and their
 * eviction into the daemon's swap memfd or pool (issue 10.2); in the daemon's
 * swap helper (an executor with no client), the copies between other
 * executors' exported allocations and the pool it keeps locked (issue 42.2).
 * Process: the executor (gpuos executor). */
#include "exec/exec_internal.h"

#include "common/clock.h"
#include "common/grow.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct xe_alloc *xe_al_add(struct xe *x, uint64_t dptr, uint64_t bytes)
{
    if (gos_grow((void **)&x->al, &x->cap_al, x->n_al, sizeof *x->al, 64))
        return NULL; /* not in the table: the ring refuses it, the socket path still works */
    x->al[x->n_al] = (struct xe_alloc){.dptr = dptr, .bytes = bytes};
    return &x->al[x->n_al++];
}

struct xe_alloc *xe_al_find(struct xe *x, uint64_t dptr)
{
    for (int i = 0; i < x->n_al; i++)
        if (x->al[i].dptr == dptr)
            return &x->al[i];
    return NULL;
}

void xe_al_del(struct xe *x, uint64_t dptr)
{
    struct xe_alloc *a = xe_al_find(x, dptr);
    if (a) {
        x->n_evicted -= a->evicted;
        *a = x->al[--x->n_al];
    }
}

int xe_quiesce(struct xe *x)
{
    int rc = GOS_OK;
    for (int e = 0; e < XE_ENGINES && !rc; e++)
        if (x->streams[e])
            rc = gos_exec_stream_sync(x->dev, x->streams[e]);
    return rc;
}

void xe_al_evicted(struct xe *x, uint64_t dptr, int evicted)
{
    struct xe_alloc *a = xe_al_find(x, dptr);
    if (a && a->evicted != evicted) {
        a->evicted = evicted; /* the ring never runs on evicted memory */
        x->n_evicted += evicted ? 1 : -1;
    }
}

/* Forgets the ranges of module slot + 1 (module > 0) or the VMM runs (module 0). */
static void al_drop(struct xe *x, int module)
{
    for (int i = 0; i < x->n_al;)
        if (module ? x->al[i].module == module : x->al[i].vmm)
            x->al[i] = x->al[--x->n_al];
        else
            i++;
}

/* Forgets the globals of module slot s (its unload): the ring may not reach them. */
void xe_al_drop_module(struct xe *x, uint32_t s) { al_drop(x, (int)s + 1); }

static int al_run(void *ctx, uint64_t va, uint64_t bytes, int ro)
{
    struct xe_alloc *a = xe_al_add(ctx, va, bytes);
    if (!a)
        return gos_fail(GOS_ENOMEM, "executor out of host memory");
    a->vmm = 1;
    a->ro = ro;
    return GOS_OK;
}

int xe_al_vmm_sync(struct xe *x)
{
    al_drop(x, 0);
    return gos_vmmtab_runs(&x->vmm, al_run, x);
}

unsigned xe_al_look(void *ctx, uint64_t p, uint64_t n)
{
    struct xe *x = ctx;
    int i = gos_range_find(x->al, x->n_al, sizeof *x->al, p, n);
    return i < 0 ? 0
                 : GOS_RANGE_IN | (x->al[i].ro ? GOS_RANGE_RO : 0u) | (x->al[i].evicted ? GOS_RANGE_SWAPPED : 0u);
}

int xe_al_check(struct xe *x, uint64_t p, uint64_t n, int write, const char *what)
{
    /* the daemon's rule (common/range.h); a swapped-out range goes over the socket */
    return gos_range_verdict(xe_al_look(x, p, n), write, p, n, what, GOS_RING_REVOKED);
}

/* Shared device memory (issue 10): NEW creates exportable physical memory and
 * hands its descriptor to the daemon (which keeps the segment alive with it; the
 * handle here is released at once), MAP imports a descriptor and maps it in this
 * context, UNMAP undoes that. */
int xe_shm_new(struct xe *x, uint64_t bytes, int *fd)
{
    uint64_t h;
    int rc = gos_vmm_create(x->dev, bytes, &h);
    if (rc)
        return rc;
    rc = gos_vmm_export_fd(x->dev, h, fd);
    gos_vmm_release(x->dev, h);
    return rc;
}

int xe_shm_map(struct xe *x, uint64_t bytes, int fd, int ro, uint64_t *dptr)
{
    int slot = -1;
    for (int i = 0; i < GOS_XE_SHM_MAX && slot < 0; i++)
        if (!x->shm[i].va)
            slot = i;
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "SHM_MAP without a descriptor");
    if (slot < 0)
        return gos_fail(GOS_ELIMIT, "executor: more than %d shared segments attached", GOS_XE_SHM_MAX);
    int rc = gos_vmm_buf_attach(x->dev, fd, bytes, &x->shm[slot]);
    if (!rc && ro && (rc = gos_vmm_set_access(x->dev, x->shm[slot].va, x->shm[slot].bytes, 1)))
        gos_vmm_buf_free(x->dev, &x->shm[slot]);
    if (!rc)
        *dptr = x->shm[slot].va;
    return rc;
}

int xe_shm_unmap(struct xe *x, uint64_t dptr)
{
    for (int i = 0; i < GOS_XE_SHM_MAX; i++)
        if (x->shm[i].va && x->shm[i].va == dptr) {
            gos_vmm_buf_free(x->dev, &x->shm[i]);
            return GOS_OK;
        }
    return gos_fail(GOS_EINVAL, "executor: 0x%llx is not an attached segment", (unsigned long long)dptr);
}

static gos_vmm_buf *vb_find(struct xe *x, uint64_t dptr)
{
    for (int i = 0; i < x->n_vb; i++)
        if (x->vb[i].va == dptr)
            return &x->vb[i];
    return NULL;
}

/* Frees an allocation (X_ALLOC or X_VALLOC) at dptr. */
int xe_mem_free(struct xe *x, uint64_t dptr)
{
    gos_vmm_buf *b = vb_find(x, dptr);
    if (!b)
        return gos_exec_mem_free(x->dev, dptr);
    gos_vmm_buf_free(x->dev, b);
    *b = x->vb[--x->n_vb];
    return GOS_OK;
}

int xe_valloc(struct xe *x, uint64_t bytes, uint64_t *dptr)
{
    int rc = gos_grow((void **)&x->vb, &x->cap_vb, x->n_vb, sizeof *x->vb, 64);
    if (rc)
        return rc;
    rc = gos_vmm_buf_alloc(x->dev, bytes, &x->vb[x->n_vb]);
    if (!rc)
        *dptr = x->vb[x->n_vb++].va;
    return rc;
}

/* Evicts into / restores from the daemon's host swap memfd (pinned here for the
 * copy's duration). */
int xe_swap_io(struct xe *x, uint64_t dptr, int fd, int out)
{
    gos_vmm_buf *b = vb_find(x, dptr);
    if (!b)
        return gos_fail(GOS_EINVAL, "executor: 0x%llx is not a swappable allocation", (unsigned long long)dptr);
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "swap without a descriptor");
    void *h = mmap(NULL, b->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "executor: mapping %llu bytes of swap", (unsigned long long)b->bytes);
    int pinned = gos_exec_host_register(x->dev, h, b->bytes) == GOS_OK;
    int rc = out ? gos_vmm_buf_evict(x->dev, b, h) : gos_vmm_buf_restore(x->dev, b, h);
    if (pinned)
        gos_exec_host_unregister(x->dev, h);
    munmap(h, b->bytes);
    return rc;
}

/* Maps the daemon's pool (once: the same file again is kept). */
static int pool_map(struct xe *x, int fd, uint64_t bytes)
{
    struct stat st;
    if (fstat(fd, &st))
        return gos_fail(GOS_EPROTO, "executor: swap pool descriptor");
    if (x->pool && st.st_dev == x->pool_dev && st.st_ino == x->pool_ino && bytes == x->pool_bytes)
        return GOS_OK;
    if (x->pool)
        return gos_fail(GOS_EPROTO, "executor: a second swap pool");
    if (!bytes || (uint64_t)st.st_size < bytes)
        return gos_fail(GOS_EPROTO, "executor: swap pool of %llu bytes in a file of %llu", (unsigned long long)bytes,
                        (unsigned long long)st.st_size);
    uint64_t nch = (bytes + X_POOL_CHUNK - 1) / X_POOL_CHUNK;
    unsigned char *pin = calloc(nch, 1);
    void *p = pin ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        free(pin);
        return gos_fail(GOS_ENOMEM, "executor: mapping the swap pool of %llu bytes", (unsigned long long)bytes);
    }
    x->pool = p;
    x->pool_bytes = bytes;
    x->pool_dev = st.st_dev;
    x->pool_ino = st.st_ino;
    x->pool_pinned = pin;
    return GOS_OK;
}

/* Page-locks chunk c of the pool once: 1 locked, 2 refused (copied pageable). */
static int pin_chunk(struct xe *x, uint64_t c)
{
    if (x->pool_pinned[c] == 0 || x->pool_pinned[c] == 3) {
        if (x->pool_pinned[c] == 3)
            x->pin_want--;
        uint64_t len = x->pool_bytes - c * X_POOL_CHUNK;
        if (len > X_POOL_CHUNK)
            len = X_POOL_CHUNK;
        x->pool_pinned[c] = gos_exec_host_register(x->dev, x->pool + c * X_POOL_CHUNK, len) == GOS_OK ? 1 : 2;
    }
    return x->pool_pinned[c];
}

/* Page-locks the chunks [off, off + bytes) of the pool touches (bytes > 0):
 * 1 when all are locked. */
static uint32_t pin_span(struct xe *x, uint64_t off, uint64_t bytes)
{
    uint32_t all = 1;
    for (uint64_t c = off / X_POOL_CHUNK; c <= (off + bytes - 1) / X_POOL_CHUNK; c++)
        all &= pin_chunk(x, c) == 1;
    return all;
}

/* The daemon names the chunks its vGPU's evictions go to (its window of the
 * pool, faulted in already: swap.c), whole chunks, so that locking one
 * faults in no page the host did not give; several calls add up. */
int xe_pool_pin(struct xe *x, const struct x_swap_io *m, int fd)
{
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "POOL_PIN without a descriptor");
    int rc = pool_map(x, fd, m->pool_bytes);
    if (rc)
        return rc;
    uint64_t end = m->off < x->pool_bytes ? m->off : x->pool_bytes;
    for (uint64_t c = m->dptr / X_POOL_CHUNK; c * X_POOL_CHUNK < end; c++)
        if (!x->pool_pinned[c]) {
            x->pool_pinned[c] = 3;
            x->pin_want++;
        }
    x->pin_next = 0;
    return GOS_OK;
}

/* Runs on the channel's thread, which makes every other pool registration,
 * without the client's lock: the ring goes on meanwhile. */
int xe_pool_pin_next(struct xe *x)
{
    if (!x->pool || !x->pin_want)
        return 0;
    for (uint64_t c = x->pin_next; c * X_POOL_CHUNK < x->pool_bytes; c++)
        if (x->pool_pinned[c] == 3) {
            pin_chunk(x, c);
            x->pin_next = c + 1;
            return 1;
        }
    x->pin_want = 0; /* (none left: the count was off) */
    return 0;
}

int xe_pool_locked(const struct xe *x, uint64_t b0, uint64_t b1)
{
    for (uint64_t c = b0 / X_POOL_CHUNK; x->pool && c * X_POOL_CHUNK < b1 && c * X_POOL_CHUNK < x->pool_bytes; c++)
        if (x->pool_pinned[c] != 1)
            return 0;
    return x->pool != NULL;
}

/* Evicts into / restores from the pool at off: the chunks it touches are
 * page-locked first (once for the executor's life), the copy cut at chunk
 * boundaries so that every piece lies in one registration. A chunk the driver
 * refuses to lock is copied from pageable memory (slower, still exact). */
int xe_swap_pool_io(struct xe *x, const struct x_swap_io *m, int fd, int out, struct x_swap_rep *rep)
{
    gos_vmm_buf *b = vb_find(x, m->dptr);
    if (!b)
        return gos_fail(GOS_EINVAL, "executor: 0x%llx is not a swappable allocation", (unsigned long long)m->dptr);
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "swap without a descriptor");
    int rc = pool_map(x, fd, m->pool_bytes);
    if (rc)
        return rc;
    if (m->off > x->pool_bytes || b->bytes > x->pool_bytes - m->off)
        return gos_fail(GOS_EPROTO, "executor: swap range 0x%llx + %llu outside the pool", (unsigned long long)m->off,
                        (unsigned long long)b->bytes);
    if (out && (rc = xe_quiesce(x))) /* what the ring issued on it lands before the copy */
        return rc;
    uint64_t t0 = gos_now_ns();
    rep->pinned = pin_span(x, m->off, b->bytes);
    uint64_t t1 = gos_now_ns();
    uint64_t first = X_POOL_CHUNK - m->off % X_POOL_CHUNK;
    rc = out ? gos_vmm_buf_evict_pieces(x->dev, b, x->pool + m->off, first, X_POOL_CHUNK)
             : gos_vmm_buf_restore_pieces(x->dev, b, x->pool + m->off, first, X_POOL_CHUNK);
    rep->register_ns = t1 - t0;
    rep->copy_ns = gos_now_ns() - t1;
    return rc;
}

int xe_swap_ctl(struct xe *x, const struct x_swap_ctl *m, int *fd)
{
    *fd = -1;
    gos_vmm_buf *b = vb_find(x, m->dptr);
    if (!b)
        return gos_fail(GOS_EINVAL, "executor: 0x%llx is not a swappable allocation", (unsigned long long)m->dptr);
    int rc;
    switch (m->op) {
    case X_SWAPCTL_EXPORT:
        /* an eviction's copy by the swap helper: from here to DROP the ring
         * must not touch the allocation (a write the helper's copy missed
         * would be lost at DROP: a tenant's whole 48 MB buffer read back
         * stale once in t_swap_wait), and what the ring issued on it must
         * have landed; READY gives it back where the helper failed */
        xe_al_evicted(x, m->dptr, 1);
        if ((rc = xe_quiesce(x)) || (rc = gos_vmm_buf_export(x->dev, b, fd)))
            xe_al_evicted(x, m->dptr, 0);
        return rc;
    case X_SWAPCTL_DROP:
        if (!b->resident)
            return GOS_OK; /* (a restore whose copy failed: evicted still) */
        if (!(rc = gos_vmm_buf_drop(x->dev, b)))
            xe_al_evicted(x, m->dptr, 1);
        return rc;
    case X_SWAPCTL_REMAP:
        if ((rc = gos_vmm_buf_remap(x->dev, b)))
            return rc;
        if ((rc = gos_vmm_buf_export(x->dev, b, fd)))
            gos_vmm_buf_drop(x->dev, b); /* evicted as before */
        return rc;
    case X_SWAPCTL_READY:
        if (!b->resident)
            return gos_fail(GOS_EPROTO, "executor: 0x%llx is not mapped", (unsigned long long)m->dptr);
        xe_al_evicted(x, m->dptr, 0);
        return GOS_OK;
    default:
        return gos_fail(GOS_EPROTO, "executor: swap control %u", (unsigned)m->op);
    }
}

int xe_pool_copy(struct xe *x, const struct x_pool_copy *m, int fd, struct x_swap_rep *rep)
{
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "POOL_COPY without a descriptor");
    if (!x->pool || m->pool_bytes != x->pool_bytes)
        return gos_fail(GOS_EPROTO, "executor: POOL_COPY before the pool's POOL_PIN");
    if (!m->bytes || m->bytes % GOS_VMM_PAGE || m->off > x->pool_bytes || m->bytes > x->pool_bytes - m->off)
        return gos_fail(GOS_EPROTO, "executor: pool copy 0x%llx + %llu outside the pool", (unsigned long long)m->off,
                        (unsigned long long)m->bytes);
    gos_vmm_buf b;
    int rc = gos_vmm_buf_attach(x->dev, fd, m->bytes, &b);
    if (rc)
        return rc;
    uint64_t t0 = gos_now_ns();
    rep->pinned = pin_span(x, m->off, m->bytes);
    uint64_t t1 = gos_now_ns();
    rc = gos_vmm_buf_copy_pieces(x->dev, &b, x->pool + m->off, m->out != 0, X_POOL_CHUNK - m->off % X_POOL_CHUNK,
                                 X_POOL_CHUNK);
    gos_vmm_buf_free(x->dev, &b);
    rep->register_ns = t1 - t0;
    rep->copy_ns = gos_now_ns() - t1;
    return rc;
}

void xe_region_drop(struct xe *x, uint32_t r)
{
    struct xe_region *g = &x->regions[r];
    if (!g->ptr)
        return;
    if (g->pinned)
        gos_exec_host_unregister(x->dev, g->ptr);
    munmap(g->ptr, g->bytes);
    memset(g, 0, sizeof *g);
}

/* Maps a client's region (and pins it). Asked for its client's address (mapped
 * host memory), it goes there when that is free in this process (never over a
 * mapping of ours: MAP_FIXED_NOREPLACE) and the device reaches the pinned pages
 * at that same address (unified addressing); *flags says whether it did. */
int xe_region_add(struct xe *x, const struct x_region *m, int fd, uint32_t *flags)
{
    *flags = 0;
    if (fd < 0 || m->slot >= GOS_MAX_REGIONS)
        return gos_fail(GOS_EPROTO, "REGION_ADD without descriptor or slot");
    xe_region_drop(x, m->slot);
    void *p = MAP_FAILED;
    if (m->addr) {
        p = mmap((void *)(uintptr_t)m->addr, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
        if (p != MAP_FAILED && p != (void *)(uintptr_t)m->addr) { /* an old kernel took it as a hint */
            munmap(p, m->bytes);
            p = MAP_FAILED;
        }
    }
    int same = p != MAP_FAILED;
    if (!same)
        p = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "executor: mapping a region of %llu bytes", (unsigned long long)m->bytes);
    int pinned = gos_exec_host_register(x->dev, p, m->bytes) == GOS_OK;
    uint64_t dp = 0;
    if (same && pinned && gos_exec_host_device_ptr(x->dev, p, &dp) == GOS_OK && dp == m->addr)
        *flags = GOS_REGION_F_SAME_VA;
    x->regions[m->slot] = (struct xe_region){p, m->bytes, pinned, *flags == GOS_REGION_F_SAME_VA};
    return GOS_OK;
}

const volatile uint64_t *xe_gate_word(struct xe *x, const struct gos_ring_ent *e)
{
    if (e->offset % 8) {
        gos_fail(GOS_EINVAL, "gate word at offset %llu is not 8-aligned", (unsigned long long)e->offset);
        return NULL;
    }
    return xe_host_of(x, e->region, e->offset, 8);
}

int xe_region_reached(const struct xe *x, uint64_t p, uint64_t n)
{
    for (int i = 0; i < GOS_MAX_REGIONS; i++)
        if (x->regions[i].same_va &&
            gos_range_within((uint64_t)(uintptr_t)x->regions[i].ptr, x->regions[i].bytes, p, n))
            return 1;
    return 0;
}

void *xe_host_of(struct xe *x, uint32_t r, uint64_t offset, uint64_t bytes)
{
    if (r >= GOS_MAX_REGIONS || !x->regions[r].ptr || !gos_range_within(0, x->regions[r].bytes, offset, bytes)) {
        gos_fail(GOS_EINVAL, "executor: region %u range outside its mapping", (unsigned)r);
        return NULL;
    }
    return (char *)x->regions[r].ptr + offset;
}

void xe_mem_release(struct xe *x)
{
    for (int i = 0; i < x->n_al; i++) {
        uint64_t p = x->al[i].dptr;
        if (!x->al[i].module && !x->al[i].vmm && xe_shm_unmap(x, p) != GOS_OK && srv_pmem_free(&x->pmem, p) != GOS_OK)
            xe_mem_free(x, p); /* (a module global goes with its module, VMM runs with the table) */
    }
    gos_vmmx_release_all(x->dev, &x->vmm);
    srv_pmem_release_all(&x->pmem);
    for (int i = 0; i < GOS_XE_SHM_MAX; i++)
        if (x->shm[i].va)
            gos_vmm_buf_free(x->dev, &x->shm[i]);
    for (uint32_t r = 0; r < GOS_MAX_REGIONS; r++)
        xe_region_drop(x, r);
    if (x->pool) {
        for (uint64_t c = 0; c * X_POOL_CHUNK < x->pool_bytes; c++)
            if (x->pool_pinned[c] == 1)
                gos_exec_host_unregister(x->dev, x->pool + c * X_POOL_CHUNK);
        munmap(x->pool, x->pool_bytes);
        free(x->pool_pinned);
    }
    free(x->al);
    free(x->vb);
}
