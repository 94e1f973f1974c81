/* SPDX-License-Identifier: Apache-2.0 */
/* xproto.h: the protocol between the daemon and an executor process (issue 9).
 *
 * An executor is `gpuos executor --fd N ...`, spawned by the daemon with one end
 * of a socketpair. It owns one CUDA context (or one simulated address space) and
 * runs the device work of its client there; the daemon keeps the socket of the
 * client, validation, scheduling and accounting. Each message is a header and
 * `len` payload bytes; REGION_ADD carries the client's memfd (SCM_RIGHTS). The
 * executor answers every request in order with the same type, rc and a payload;
 * flags X_FAULTED in an answer means its context is dead (a sticky device error)
 * and the executor exits after sending it.
 * Process: every side of the wire (client, daemon, executor). */
#ifndef GOS_PROTO_XPROTO_H
#define GOS_PROTO_XPROTO_H

#include "device/info.h"

#include "proto/proto.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* A device's attributes as cuDeviceGetAttribute answers them (DEVICE_ATTRS):
 * rc is the device layer's answer (GOS_EUNSUPPORTED where it has none). */
struct srv_dev_attrs {
    int32_t rc;
    int32_t value[GOS_DEVICE_ATTRS_MAX];
    uint8_t valid[GOS_DEVICE_ATTRS_MAX];
};

enum {
    X_HELLO = 1,   /* -> struct x_hello_rep */
    X_ALLOC,       /* u64 bytes -> u64 dptr */
    X_FREE,        /* u64 dptr */
    X_REGION_ADD,  /* struct x_region + fd */
    X_MODULE_LOAD, /* struct x_module -> u64 bytes its globals take (charged) */
    X_MODULE_UNLOAD, /* u32 slot */
    X_FUNCTION,    /* struct x_function -> u32 index */
    X_RUN,         /* u32 engine, u32 n, n x (struct x_op + params) -> struct x_run_rep (x_op: issue 40.1) */
    /* shared device memory (issue 10; device/vmm_ops.h) */
    X_SHM_NEW,     /* u64 bytes (2 MB multiple) -> fd of new exportable device memory */
    X_SHM_MAP,     /* u64 bytes [+ u64 X_SHM_MAP_RDONLY] + fd -> u64 dptr (mapped in this context) */
    X_SHM_UNMAP,   /* u64 dptr */
    /* swapping (issue 10.2): X_VALLOC is X_ALLOC on VMM (2 MB rounded), so the
     * daemon can evict (copy into the host memfd sent along, unmap, release) and
     * restore (new memory at the same address, copy back from the memfd); X_FREE
     * frees either kind */
    X_VALLOC,      /* u64 bytes -> u64 dptr */
    X_EVICT,       /* u64 dptr + fd of a memfd of its size */
    X_RESTORE,     /* u64 dptr + fd */
    /* partition-local memory (issue 12; exec/exec_pmem.c, the same code both ways) */
    X_PMEM_ALLOC,  /* struct x_pmem_alloc -> struct gos_rep_pmem_alloc */
    X_PMEM_FREE,   /* u64 base */
    X_PMEM_COPY,   /* struct gos_msg_pmem_copy (region: the executor's slot) */
    X_PMEM_CHECK,  /* struct gos_msg_pmem_check -> struct gos_rep_pmem_check */
    /* the pre-pinned swap pool (issue 10.2): as EVICT / RESTORE, the host copy at
     * an offset of the daemon's one pool memfd, which the executor maps once and
     * page-locks chunk by chunk on first use, kept for its life */
    X_EVICT_POOL,   /* struct x_swap_io + the pool's fd -> struct x_swap_rep */
    X_RESTORE_POOL, /* struct x_swap_io + the pool's fd -> struct x_swap_rep */
    /* the fast path (issue 9.4; proto/ring_shm.h) */
    X_RING,        /* u64 bytes, u32 max_queued_requests, u32 pad + fd of the client's ring memfd */
    X_MODULE_GLOBAL, /* struct x_function (module slot, global's name) -> struct gos_rep_global */
    /* executor = per-vgpu: on a shared executor's first (control) channel, the
     * channel of one more client of that vGPU; the executor serves it from a
     * thread of its own, which first sends X_HELLO on it, and releases what
     * that client held when the daemon closes it */
    X_ADOPT,       /* fd of the client's channel -> nothing */
    /* rings for every busy client (issue 22): the grant page of this client's
     * ring (a memfd of the daemon's, never the client's: issue 23.1) and the
     * device's doorbell (an eventfd the executor writes when its ring holds
     * entries it may not run yet); both before X_RING */
    X_GRANT,       /* fd of the grant page (struct gos_grant_page) -> nothing */
    X_BELL,        /* fd of the device's eventfd -> nothing */
    /* CUDA's VMM for tenants (exec/exec_vmm.c, the same code on the daemon's
     * device under isolation = none): struct x_vmm -> u64 (RESERVE: the
     * address, CREATE: the device's handle); the daemon checked and charged */
    X_VMM_RESERVE,
    X_VMM_UNRESERVE,
    X_VMM_CREATE,
    X_VMM_RELEASE,
    X_VMM_MAP,
    X_VMM_UNMAP,   /* waits for what the ring issued first */
    X_VMM_ACCESS,
    /* the swap pool's pages the daemon faulted in ahead (swap_prefault, issue
     * 42.2) where this client's evictions go: struct x_swap_io (dptr: the
     * first byte, off: the end, whole X_POOL_CHUNKs) + the pool's fd ->
     * nothing; the executor maps the pool and page-locks those chunks between
     * its other messages, so that its first eviction finds them locked */
    X_POOL_PIN,
    /* a tensor map by this executor's device (issue 43; device/exec_ops.h
     * tmap_encode): gpuos_tmap_args, checked by the daemon -> struct gos_rep_tmap */
    X_TMAP_ENCODE,
    /* the swap helper (issue 42.2; serve/swap.c): an executor of the daemon's
     * own, no client's, that keeps the pool page-locked (X_POOL_PIN) and makes
     * the tenants' swap copies, so that locking tens of GB stalls no tenant's
     * context. To the owner's executor: struct x_swap_ctl -> (EXPORT, REMAP)
     * fd of the allocation's physical memory; to the helper: struct
     * x_pool_copy + that fd -> struct x_swap_rep (the copy between it and
     * the pool, whose fd came with X_POOL_PIN) */
    X_SWAP_CTL,
    X_POOL_COPY,
    X_POOL_LOCK, /* as X_POOL_PIN, locked before the answer -> struct x_swap_rep (the helper's) */
};

enum {
    X_SWAPCTL_EXPORT = 1, /* resident: its physical memory's fd, the ring kept off it (an eviction's) */
    X_SWAPCTL_DROP,       /* copied out: unmapped and released (evicted) */
    X_SWAPCTL_REMAP,      /* evicted: new physical memory at its address, its fd (still evicted) */
    X_SWAPCTL_READY,      /* copied back in (or an EXPORT's copy failed): resident for the ring again */
};

struct x_swap_ctl {
    uint64_t dptr;
    uint32_t op; /* X_SWAPCTL_* */
    uint32_t pad;
};

struct x_pool_copy {
    uint64_t off, bytes, pool_bytes;
    uint32_t out; /* 1: device to pool (evict), 0: pool to device (restore) */
    uint32_t pad;
};

struct x_vmm {
    uint64_t va, bytes;
    uint64_t handle; /* the device's (CREATE's answer) */
    uint64_t align;  /* RESERVE */
    uint32_t access; /* ACCESS: GOS_VMM_ACCESS_* */
    uint32_t pad;
};

/* The grant page: what the daemon decides and what it charges, shared by the
 * daemon and one client's executor only (the client's ring, proto/ring_shm.h, is
 * the client's to write: nothing there is obeyed or charged). One per ring.
 *
 * A grant is a generation: the daemon's dispatcher, when the scheduler picks
 * the ring's task, bumps gen with state RUN and a deadline; the executor runs
 * the ring's entries until the deadline passes (the daemon extends it while no
 * other work waits on the device, or pulls it in when some arrives) or until
 * the ring stays empty for idle_yield_us, then waits for its stream, publishes
 * done_gen = gen and wakes the daemon: the hand-over needs no socket. Entries
 * that arrive without a grant wait (want says for which engine, and the
 * doorbell is rung), unless
 * the state is REVOKE (shutdown): then they are answered GOS_RING_REVOKED and
 * go over the socket. */
enum { GOS_GRANT_WAIT = 0, GOS_GRANT_RUN = 1, GOS_GRANT_REVOKE = 2 };
/* A grant's engine (kind) and a want's: under MRQ a copy grant runs the ring's
 * copies and a compute grant its launches, so that one tenant's copies overlap
 * another's kernels as on the socket path; a grant ends at the first entry of
 * the other kind (a fence runs under either). Under SDQ every grant is ANY. */
enum { GOS_GRANT_NONE = 0, GOS_GRANT_COMPUTE = 1, GOS_GRANT_COPY = 2, GOS_GRANT_ANY = 3 };
#define GOS_GRANT_FOREVER UINT64_MAX
/* How long an executor told of its turn spins for its grant, and how long before
 * a grant's deadline the daemon tells the waiting ones and spins for the yield. */
#define GOS_GRANT_TURN_SPIN_US 2000u
#define GOS_GRANT_TURN_AHEAD_NS 100000ull
struct gos_grant_page {
    /* the daemon's */
    _Atomic uint32_t state;    /* GOS_GRANT_* */
    _Atomic uint32_t gen;      /* the grant's generation */
    _Atomic uint32_t state_futex; /* bumped with every change above (the executor waits here) */
    _Atomic uint32_t exec_sleeping;
    _Atomic uint64_t deadline_ns; /* RUN until this gos_now_ns instant */
    _Atomic uint32_t idle_yield_us; /* an empty ring yields after this long (0: never; a lone client) */
    _Atomic uint32_t kind;     /* the grant's GOS_GRANT_COMPUTE, _COPY or _ANY */
    _Atomic uint32_t turn;     /* bumped (with state_futex) when another ring's grant
                                * is about to end while this one wants: its executor
                                * spins for up to GOS_GRANT_TURN_SPIN_US instead of
                                * sleeping, so the hand-over pays no wake-up */
    /* the executor's */
    _Alignas(64) _Atomic uint32_t done_gen; /* the last generation it finished */
    _Atomic uint32_t want;          /* the kind of grant its waiting entries need (GOS_GRANT_NONE: none) */
    _Atomic uint32_t yield_futex;   /* bumped with done_gen and want (the daemon waits here) */
    _Atomic uint32_t daemon_sleeping;
    /* the deadline this executor's next launch will not fit in (set, with a
     * kick of yield_futex, once per deadline, when a launch has just been
     * issued and another like it would end past the deadline while others
     * share the device): its yield comes early, when what it issued ends, so
     * the daemon tells the waiting rings their turn now, or keeps the grant
     * (ring.c) */
    _Atomic uint64_t yield_soon_dl;
    /* the executor's counters, the only ones the daemon charges */
    _Alignas(64) _Atomic uint64_t busy_ns; /* time spent running entries */
    _Atomic uint64_t entries;      /* entries run */
    _Atomic uint64_t copy_busy_ns; /* the part of busy_ns and entries that were copies */
    _Atomic uint64_t copy_entries;
    _Atomic uint64_t idle_ns; /* held a grant with an empty ring and nothing left on the device */
    /* what the GPU's switch to this context cost, as the grant saw it: its first
     * synchronisation's wait beyond the shortest of its later ones (a context
     * switch delays the first kernel of a grant; the daemon's grant_us = auto
     * learns it), for generation switch_gen; 0: not measured (fewer than 3) */
    _Atomic uint64_t switch_ns;
    _Atomic uint32_t switch_gen;
    /* the longest launch or synchronise of its last grant that ran entries
     * (0: none yet; one grant only: a host's hiccup in an honest tenant's
     * grant is forgotten at its next, a tenant's long kernels are in each of
     * its grants): an overlap pair
     * is made only of rings whose longest entries are alike and short beside
     * a grant (ring_pair.c; issue 44.4: a tenant alternating 2 and 40 ms
     * kernels took 55 % beside an equal peer's 20 %) */
    _Atomic uint64_t entry_max_ns;
    /* a device fault through the ring ends the executor (its context is dead):
     * the error first, for the daemon to tell whom it concerns */
    _Alignas(64) char fault_msg[256];
};
#define GOS_GRANT_PAGE_BYTES 4096u
_Static_assert(sizeof(struct gos_grant_page) <= GOS_GRANT_PAGE_BYTES, "grant page");

/* Modules and looked-up functions per client (daemon and executor alike): a
 * CUDA runtime program registers one module per translation unit. */
#define SRV_MAX_MODULES 1024
#define SRV_MAX_FUNCS 8192
/* Module globals a client may reach by copies (MODULE_GLOBAL). */
#define SRV_MAX_GLOBALS 1024

/* X_PMEM_ALLOC: the chart is the device's `chip = FILE` (its path: the executor
 * reads it itself). */
struct x_pmem_alloc {
    uint64_t bytes;
    char chart[256];
};

struct x_swap_io {
    uint64_t dptr, off, pool_bytes;
};

struct x_swap_rep {
    uint64_t register_ns; /* spent page-locking pool chunks for this call */
    uint64_t copy_ns;     /* the copy with unmap/release (evict) or create/map (restore) */
    uint32_t pinned;      /* 1: every chunk it touched is page-locked */
    uint32_t pad;
};

#define X_SHM_MAP_RDONLY 1ull /* X_SHM_MAP's optional second word: map read-only */

/* Pool chunks are page-locked in pieces of this size (the last one shorter). */
#define X_POOL_CHUNK (1ull << 30)

#define X_FAULTED 1u
/* An executor's exit status after a device fault (answered X_FAULTED on the
 * channel whose batch faulted): what its other channels read when theirs broke. */
#define X_EXIT_FAULTED 3
#define X_MAX_PAYLOAD (8u << 20)
#define X_MSG_MAX 200

struct x_hdr {
    uint32_t type;
    uint32_t len;
    int32_t rc;
    uint32_t flags;
};

struct x_hello_rep {
    int32_t pid;
    uint32_t pad;
    uint64_t mem_total;
    gos_device_info info; /* same binary on both sides: the daemon's device facts */
    int32_t attr_rc;      /* the device's attributes (cuDeviceGetAttribute), for DEVICE_ATTRS */
    int32_t attr_value[GOS_DEVICE_ATTRS_MAX];
    uint8_t attr_valid[GOS_DEVICE_ATTRS_MAX];
};

struct x_region {
    uint32_t slot;
    uint32_t pad;
    uint64_t bytes;
    uint64_t addr; /* the client's address of it, to map it at too (0: anywhere); answered u32 GOS_REGION_F_* */
};

struct x_module {
    uint32_t slot;
    uint32_t region; /* image from this region when name is empty */
    uint64_t offset, bytes;
    uint64_t limit; /* device memory its globals may take: what is left of the share (issue 44.2) */
    char name[64];
};

struct x_function {
    uint32_t module;
    uint32_t pad; /* the client's handle for it (1..SRV_MAX_FUNCS; 0: none): ring launches name it */
    char name[GOS_FUNC_NAME_MAX];
};


/* One operation of a RUN: the client's request (req.h) as the daemon accepted
 * it, its param_bytes of parameters after it. func is the client's handle
 * (X_FUNCTION told the executor which function it names), region the
 * client's region (the executor's slot of the same number); the daemon adds
 * GOS_F_SYNC to a direct copy from host memory that is not pinned. Decoded
 * by the executor's one decoder, as a ring entry (exec_run.c). */
struct x_op {
    GOS_REQ_HEAD;
};

struct x_run_rep {
    uint64_t gpu_ns;
    uint32_t n;
    int32_t measure_rc;
    /* n x int32 rc, then the first failing op's message (NUL-terminated) */
};

/* Sends a header and payload (and fd when >= 0); reads one back. The payload
 * buffer of x_recv is *buf of *cap bytes, grown as needed. GOS_OK or GOS_EIO. */
int x_send(int sock, const struct x_hdr *h, const void *p, int fd);
int x_recv(int sock, struct x_hdr *h, void **buf, size_t *cap, int *fd);


#endif
