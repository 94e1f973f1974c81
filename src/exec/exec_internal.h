/* SPDX-License-Identifier: Apache-2.0 */
/* exec_internal.h: the executor process's own state (`gpuos executor`,
 * src/exec/; runs only in the executor). One struct xe per client it serves:
 * its streams, mapped regions, modules and functions, device memory (the
 * ranges its ring's requests are checked against), swap pool mapping and
 * ring. exec_main.c serves the daemon's channel (the message table),
 * exec_mem.c holds the memory, exec_run.c turns RUN batches and ring entries
 * into gos_ops (exec_op.h), exec_ring.c consumes the ring, exec_pmem.c holds
 * partition-local memory. */
#ifndef GOS_EXEC_INTERNAL_H
#define GOS_EXEC_INTERNAL_H

#include "exec/exec.h"
#include "exec/exec_op.h"
#include "exec/exec_pmem.h"
#include "exec/exec_vmm.h"

#include "common/range.h"
#include "device/device.h"
#include "device/exec_ops.h"
#include "device/vmm_ops.h"
#include "proto/proto.h"
#include "proto/ring_shm.h"
#include "proto/xproto.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XE_ENGINES 2
/* Bounded look-ahead of the ring (issue 9.4): asynchronous entries issued to the
 * device before the executor waits for them, by their expected time (at most
 * XE_RING_AHEAD_NS of work, measured per entry), 4 before anything is known. */
#define XE_RING_AHEAD 4
#define XE_RING_AHEAD_NS 1000000ull
#define XE_RING_AHEAD_MAX 64
/* marks in the look-ahead (one per half of the limit, and one to spare) */
#define XE_RING_MARKS 4
/* Inline HtoD data is copied into one of these private pinned buffers and the
 * entry answered once its copy is issued (the slot is the client's again): the
 * host buffer may be reused and every later request sees the data, as CUDA
 * answers a small HtoD copy from pageable memory once it is staged. A buffer
 * is reused XE_BOUNCE_SLOTS asynchronous entries later, when the look-ahead
 * (at most XE_RING_AHEAD_MAX) has waited for its copy. */
#define XE_BOUNCE_SLOTS XE_RING_AHEAD_MAX
#define GOS_XE_SHM_MAX 64

struct xe_region {
    void *ptr;
    uint64_t bytes;
    int pinned;
    int same_va; /* mapped at the client's address, reached by the device there */
};

struct xe {
    gos_device *dev;
    int sock;
    void *streams[XE_ENGINES];
    void *ev[XE_ENGINES][2];
    struct xe_region regions[GOS_MAX_REGIONS];
    void *modules[SRV_MAX_MODULES];
    void *funcs[SRV_MAX_FUNCS];
    uint16_t fmod[SRV_MAX_FUNCS]; /* by funcs index: its module's slot */
    int n_funcs;
    void *out;
    size_t out_cap;
    gos_vmm_buf shm[GOS_XE_SHM_MAX]; /* attached shared segments (issue 10) */
    gos_vmm_buf *vb; /* swappable allocations (X_VALLOC) */
    int n_vb, cap_vb;
    /* allocations of the ring's table now evicted (issue 42): a launch may touch
     * any allocation, so none runs on the ring while one is out (the daemon
     * evicts only while this executor holds no grant) */
    int n_evicted;
    struct srv_pmem_set pmem; /* partition-local allocations (issue 12) */
    gos_vmm_tab vmm;          /* its CUDA VMM objects (X_VMM_*; exec_vmm.c) */
    /* the daemon's swap pool (X_EVICT_POOL), mapped once */
    char *pool;
    uint64_t pool_bytes;
    dev_t pool_dev;
    ino_t pool_ino;
    unsigned char *pool_pinned; /* per X_POOL_CHUNK: 1 page-locked, 2 refused, 3 to lock ahead */
    uint64_t pin_want, pin_next; /* X_POOL_PIN: chunks left to lock ahead; where to look for the next */
    /* the fast path (issue 9.4): the ring thread and the socket loop take turns
     * on the device under lock; the ring's requests are checked against this
     * client's device memory (al), functions by the client's handles (fmap) */
    pthread_mutex_t lock;
    struct xe_alloc {
        GOS_RANGE_HEAD;
        int evicted;
        int module; /* a module global (MODULE_GLOBAL): its module's slot + 1; 0: memory */
        int ro;     /* a read-only attachment (SHM_RDONLY) or VMM mapping: no copy may write it */
        int vmm;    /* a run of adjacent VMM mappings (xe_al_vmm_sync), not an allocation */
    } *al;
    int n_al, cap_al;
    uint32_t fmap[SRV_MAX_FUNCS];     /* client's function handle - 1 -> funcs index + 1 (0: none) */
    char fbuiltin[SRV_MAX_FUNCS][32]; /* by funcs index: the built-in kernel's name ("" not built-in) */
    int mod_builtin[SRV_MAX_MODULES];
    int ring_on;
    struct gos_grant_page *gp; /* the daemon's grant page of its ring (X_GRANT), NULL before */
    int bell;                  /* the device's doorbell (X_BELL), -1 none */
    struct xr *ring;          /* its consumer (xe_ring_stop when a shared executor's client leaves) */
    int shared;               /* a client channel of a shared executor (X_ADOPT; executor = per-vgpu) */
    uint32_t ring_max_queued; /* the daemon's max_queued_requests, for asynchronous ring entries */
    void *ring_bounce;        /* pinned, private: XE_BOUNCE_SLOTS x GOS_RING_DATA for inline HtoD data */
    uint32_t bounce_next;     /* the next of them */
    int bounce_refused;       /* the driver would not pin them: inline HtoD entries wait */
    uint32_t ring_backlog;    /* entries submitted behind the one running (set by the ring's thread) */
    uint32_t ring_ahead;      /* asynchronous entries issued since the stream was last waited for */
    uint64_t ring_ahead_t0;   /* when the first of them was issued */
    uint64_t ring_entry_ns;   /* measured device time per asynchronous entry (0: not yet) */
    /* the look-ahead's marks: an event recorded after every half of the limit,
     * oldest first, so that reaching the limit waits for the oldest only and the
     * device keeps the later entries (no drain to empty: with one mark the
     * second wait of every two found it behind the last entry and drained) */
    struct xe_mark {
        void *ev;             /* created on first use */
        uint32_t n;           /* entries between the previous mark and this one */
        uint64_t t;           /* when it was recorded */
    } mark[XE_RING_MARKS];
    uint32_t mark_head, mark_n; /* the oldest, how many are recorded and not waited for */
    uint32_t since_mark;      /* entries issued since the newest mark */
};

struct xr;

/* exec_run.c: answers a request on x's channel (an error carries its message;
 * every handler of exec_main.c and X_RUN's batches alike). */
int xe_answer(struct xe *x, uint32_t type, int rc, uint32_t flags, const void *p, uint32_t n);
/* exec_run.c: what a client hears of a device error (msg) that left the
 * context dead: as is, or a shared executor's one reason for all (in buf). */
const char *xe_fault_msg(struct xe *x, const char *msg, char *buf, size_t n);

/* exec_mem.c: the client's device ranges (the one range check, common/range.h),
 * regions, shared segments, swappable allocations and the swap pool. */
/* The new entry (NULL when the table cannot grow: the ring refuses that range). */
struct xe_alloc *xe_al_add(struct xe *x, uint64_t dptr, uint64_t bytes);
struct xe_alloc *xe_al_find(struct xe *x, uint64_t dptr);
void xe_al_del(struct xe *x, uint64_t dptr);
/* An allocation swapped out (evicted = 1) or back in: the ring's check and
 * x->n_evicted follow. */
void xe_al_evicted(struct xe *x, uint64_t dptr, int evicted);
/* Waits for everything x's engines were given (before an eviction's copy). */
int xe_quiesce(struct xe *x);
void xe_al_drop_module(struct xe *x, uint32_t slot);
/* The ranges of x's reachable VMM mappings (gos_vmmtab_runs) in al again,
 * after a map, unmap or access change. */
int xe_al_vmm_sync(struct xe *x);
/* GOS_OK when [p, p+n) lies in one of this client's allocations (write: not a
 * read-only attachment, else GOS_EPERM); GOS_RING_REVOKED when it is swapped
 * out (the socket path restores it first); GOS_EINVAL naming what otherwise. */
int xe_al_check(struct xe *x, uint64_t p, uint64_t n, int write, const char *what);
/* What of the client's table holds [p, p + n) (a gos_range_look_fn, ctx the xe). */
unsigned xe_al_look(void *ctx, uint64_t p, uint64_t n);
/* The host address of [offset, offset + bytes) of region r, or NULL (error set). */
void *xe_host_of(struct xe *x, uint32_t r, uint64_t offset, uint64_t bytes);
/* A GATE entry's host word (8-aligned, inside one of the client's regions), or
 * NULL with the error set. */
const volatile uint64_t *xe_gate_word(struct xe *x, const struct gos_ring_ent *e);
/* Whether [p, p + n) lies in a region the device reaches at the client's own
 * address (mapped host memory: a built-in kernel's argument may point there). */
int xe_region_reached(const struct xe *x, uint64_t p, uint64_t n);
int xe_region_add(struct xe *x, const struct x_region *m, int fd, uint32_t *flags);
void xe_region_drop(struct xe *x, uint32_t r);
int xe_shm_new(struct xe *x, uint64_t bytes, int *fd);
int xe_shm_map(struct xe *x, uint64_t bytes, int fd, int ro, uint64_t *dptr);
int xe_shm_unmap(struct xe *x, uint64_t dptr);
int xe_mem_free(struct xe *x, uint64_t dptr);
int xe_valloc(struct xe *x, uint64_t bytes, uint64_t *dptr);
int xe_swap_io(struct xe *x, uint64_t dptr, int fd, int out);
/* X_POOL_PIN: maps the pool, notes the chunks of [m->dptr, m->off) to lock
 * ahead (xe_pool_pin_next locks them, a chunk a call, between the channel's
 * messages). */
int xe_pool_pin(struct xe *x, const struct x_swap_io *m, int fd);
/* Locks the next chunk to lock ahead; 0 when none is left. */
int xe_pool_pin_next(struct xe *x);
/* Whether every chunk of [b0, b1) of the pool is page-locked. */
int xe_pool_locked(const struct xe *x, uint64_t b0, uint64_t b1);
int xe_swap_pool_io(struct xe *x, const struct x_swap_io *m, int fd, int out, struct x_swap_rep *rep);
/* X_SWAP_CTL on the owner's side (*fd: EXPORT's and REMAP's answer, -1 else). */
int xe_swap_ctl(struct xe *x, const struct x_swap_ctl *m, int *fd);
/* X_POOL_COPY on the helper's: attaches fd's memory, copies it to or from the
 * pool (mapped by an earlier X_POOL_PIN), locking its chunks first. */
int xe_pool_copy(struct xe *x, const struct x_pool_copy *m, int fd, struct x_swap_rep *rep);
/* Everything the client held, released (its channel closed). */
void xe_mem_release(struct xe *x);

/* exec_run.c: X_RUN (a grant's batch between two events) and one ring entry,
 * both through gos_op_issue. */
int xe_run(struct xe *x, const unsigned char *p, uint32_t len);
/* Whether the context still works after a device error (sticky errors fail
 * every later call). */
int xe_alive(struct xe *x);

/* exec_ring.c: maps the ring (fd: its memfd of bytes, checked) and starts its
 * consumer; stops it (its entry in progress ends first) and unmaps the ring
 * (a shared executor's client leaving: executor = per-vgpu). */
int xe_ring_start(struct xe *x, int fd, uint64_t bytes, gos_device *dev, struct xr **out);
void xe_ring_stop(struct xr *r);
/* exec_run.c: one entry (a private copy) on the device, under xe_ring_lock. */
int xe_ring_run(struct xe *x, const struct gos_ring_ent *e, unsigned char *data, uint32_t backlog, int *fault);
void xe_ring_lock(struct xe *x, int on);
/* Waits for everything the ring issued (under xe_ring_lock): a grant's end. */
int xe_ring_drain(struct xe *x);
/* Whether nothing the ring issued is left unwaited for (a hint, no lock). */
int xe_ring_drained(const struct xe *x);

#endif
