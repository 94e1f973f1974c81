/* SPDX-License-Identifier: Apache-2.0 */
/* session.h: a client of the daemon (struct srv_client: its connection, its
 * memory, modules and ring) from its reader thread (client.c) to its end
 * (session.c: its executor's loss, its last reference).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_SESSION_H
#define GOS_SERVE_SESSION_H

#include "common/range.h"
#include "proto/proto.h"
#include "proto/xproto.h"
#include "vmem/vmmtab.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct srv;
struct srv_exec;
struct srv_xshare;
struct srv_pmem_set;
struct srv_task;
struct gos_grant_page;

struct srv_region {
    int used;
    int fd;
    void *ptr;
    uint64_t bytes;
    int refs;     /* tasks using it */
    int deleted;  /* unmapped when refs reaches 0 */
    int pinned;
    uint64_t same_va; /* the client's address, when its executor maps it there too
                       * (GOS_REGION_F_SAME_VA: the device reaches it by that address) */
};

struct srv_alloc {
    GOS_RANGE_HEAD; /* dptr, bytes (common/range.h) */
    int shm;    /* an attached shared segment: its id + 1 (not charged here); 0: an allocation */
    void *vbuf; /* isolation = none: the daemon's mapping of it (gos_vmm_buf) */
    int pmem;       /* a partition-local allocation (issue 12; pmem_cl.c): both views */
    uint64_t extra; /* charged to the share beyond bytes (its parity table's page) */
    int ro;     /* a read-only attachment (SHM_RDONLY) or VMM mapping: no copy may write it */
    int vmm;    /* a run of adjacent VMM mappings (vmm_cl.c): not charged here, never freed by MEM_FREE */
};

struct srv_client {
    struct srv *srv;
    int fd;
    uint32_t id;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    int vgpu; /* index, -1 before HELLO */
    int dead; /* reader ended or protocol violated */
    int reaped; /* dropped for sending no HELLO in time */
    int hello;  /* its HELLO arrived (an executor may take long to start before the answer) */
    uint64_t born_ns;
    int refs; /* reader thread + tasks queued or in flight */
    pthread_t thread;
    pthread_mutex_t wlock; /* one writer at a time on fd */
    struct srv_client *next;

    /* Ordering: tasks wait in `pending` until every released task of the other
     * kind has completed (a client's work runs in submission order). */
    struct srv_task *pending_head, *pending_tail;
    struct srv_task *last_task; /* the newest task, while it may still grow */
    uint64_t op_ns[2];          /* recent GPU ns per op, per kind (0: not known yet) */
    int released_n, released_kind;
    int kick; /* work released that the engines have not been offered yet (reader) */
    int outstanding;   /* pending + released */
    int queued_ops;       /* requests queued or running (max_queued_requests) */
    uint64_t queued_bytes; /* daemon memory they hold (max_queued_bytes) */
    int sticky_rc;     /* first error of an asynchronous request */
    char sticky_msg[GOS_MSG_TEXT_MAX];
    uint32_t sync_seq[8];
    int n_sync;

    struct srv_alloc *allocs;
    int n_allocs, cap_allocs;
    struct srv_region regions[GOS_MAX_REGIONS];
    void *modules[SRV_MAX_MODULES];
    void *funcs[SRV_MAX_FUNCS];
    uint16_t fn_module[SRV_MAX_FUNCS]; /* each function's module (an unload ends its functions only) */
    int n_funcs;

    /* isolation = process: the executor that owns this client's context (issue 9).
     * modules[] and funcs[] then hold the executor's slot + 1; built-in functions
     * keep their names for the range checks of validate(). */
    struct srv_exec *x;
    struct srv_xshare *xshare; /* executor = per-vgpu: the shared executor x is a channel to */
    int exec_lost; /* its loss was handled (counted, memory returned) */
    int swap_hold; /* swap.c: what a request of it just made resident stays (until queued) */
    unsigned char module_builtin[SRV_MAX_MODULES];
    uint64_t module_bytes[SRV_MAX_MODULES]; /* what each module's globals take, charged (issue 44.2) */
    char fn_builtin[SRV_MAX_FUNCS][16];
    /* module globals it looked up (MODULE_GLOBAL): copies may reach them until
     * their module is unloaded; charged with their module (module_bytes) */
    struct srv_global {
        GOS_RANGE_HEAD;
        int module;
    } globals[SRV_MAX_GLOBALS];
    int n_globals;
    struct srv_pmem_set *pmem_set; /* isolation = none: its partition-local allocations */
    /* CUDA's VMM (vmm_cl.c): what it holds, by the daemon's handles (ownership,
     * charges), and under isolation = none the daemon's device's own table */
    gos_vmm_tab vmm;
    gos_vmm_tab *vmm_dev;
    /* the fast path (issue 9.4; ring.c): the client's ring, mapped here to
     * grant and revoke it and to charge the time its executor reports */
    void *ring;
    struct gos_grant_page *gp; /* the ring's grant page (the daemon's and the executor's only) */
    int ring_queued;           /* a grant task of it is queued or running */
    struct srv_task *ring_task; /* that task */
    int worked;                /* it has asked for the device (a task): only such clients
                                * share it (srv_ring_rotation); a connection that only
                                * asks questions (the NVML shim's) is nobody's neighbour */
    _Atomic int ring_end;      /* a socket request waits for all of it: that grant ends
                                * at once (srv_ring_end_soon), not at its deadline */
    uint64_t ring_busy_seen, ring_entries_seen, ring_copy_seen, ring_copy_entries_seen;
    uint32_t co_hold_us; /* while a latency companion of it runs: its idle yield (ring.c, set_idle_yield) */
};

/* client.c: the reader thread of one connection; one function per message type. */
void *srv_client_main(void *arg);

/* session.c: drops a reference (lock held); frees the client at zero. */
void srv_client_unref(struct srv_client *c);

/* session.c. The client's executor died (fault, kill; lock held): counted once per vGPU,
 * logged, its memory returned to the vGPU's share; later requests fail with
 * GOS_EDEVICE naming the reason. */
void srv_client_exec_check(struct srv_client *c);
/* The same for an executor that may have died outside any exchange (through
 * its ring: the grant page holds the fault), found by its channel hanging up. */
void srv_client_exec_probe(struct srv_client *c);

#endif
