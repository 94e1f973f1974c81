/* SPDX-License-Identifier: Apache-2.0 */
/* serve.h: the daemon's internal state (pillar 3; paper 002, sections 5 and 6).
 *
 * Threads:
 *   main         accepts connections, waits for SIGTERM/SIGINT;
 *   one per client reads and answers its messages (client.c);
 *   one per engine and device runs the scheduled tasks (dispatch.c).
 * Whoever finds an engine idle asks the policy for its next task: a client's
 * reader that has just queued work runs what the policy picks itself (no hand-off
 * to another thread on the path of a synchronous request) and waits for it when
 * it is expected to be short; everything else goes to the engine's dispatcher.
 * One lock (srv->lock) guards everything shared: the vGPU table, every client's
 * bookkeeping and every device's scheduler (sched.h is not thread-safe). Device
 * calls (copies, launches, waits) run outside it. Replies from dispatch threads
 * are sent without blocking (a client that does not read them is dropped).
 *
 * Rooms (issue 9; calls go down this list, never up): server.c (socket,
 * threads, shutdown) -> client.c (a connection's reader: validate() and one
 * function per message type in msg_table) -> dispatch.c (engines, tasks, grants)
 * -> session.c (a client's executor loss and its end) -> region.c (shared
 * regions) -> executor.c + xwire.c (executor processes; their own side is
 * exec_main.c, `gpuos executor`); vgpu.c and config.c stand alone.
 *
 * Ownership: a client is freed when its reader thread has ended AND no task of it
 * is queued or in flight (refs), so that a client dying mid-copy releases its
 * memory only after the device stopped touching it.
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_H
#define GOS_SERVE_H

#include "device/device.h"
#include "device/exec_ops.h"
#include "exec/exec_op.h"
#include "proto/proto.h"
#include "proto/xproto.h"
#include "sched/sched.h"
#include "serve/config.h"
#include "vmem/segtable.h"
#include "vmem/vmmtab.h"
#include "vmem/swap_policy.h"
#include "serve/executor.h"
#include "common/log.h"
#include "common/clock.h"
#include "common/range.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct srv;
struct srv_client;


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

/* One request of a client: a copy or a launch (proto/req.h), under isolation
 * = none the device operation it is (exec/exec_op.h), and the daemon's
 * bookkeeping around it. */
struct srv_op {
    /* the client's request as accepted (a direct copy from memory that is not
     * pinned gains GOS_F_SYNC): what an executor's RUN carries as it is */
    struct gos_req req;
    struct gos_op dev; /* isolation = none: the daemon's own resolution of it (gos_op_issue) */
    uint32_t seq;
    uint16_t req_type;
    int region; /* the region it holds a reference on; -1: none */
    unsigned char *params; /* owned */
    int rc;
    char *msg; /* owned, when rc != 0 */
};

/* A scheduler task: one op, or a batch of consecutive ops of one client of the
 * same kind and priority that arrived while the previous one was still queued.
 * Gdev (section 5.1) lets one context launch several instances at once and
 * charges the makespan from the first to the last: a batch runs back to back
 * between two events, which keeps the engine busy instead of paying a dispatch
 * round trip per op. */
#define SRV_BATCH_MAX_OPS 64
#define SRV_BATCH_MAX_BYTES (64ull << 20)
/* A batch grows only while its expected GPU time (the client's recent time per
 * op of that kind times the ops) stays under this: batching must not turn short
 * requests into long non-preemptive ones (priorities, fairness granularity). */
#define SRV_BATCH_MAX_NS 1000000ull
/* isolation = process: a batch is one grant to one executor, and the GPU pays
 * ~140 us to switch between two processes' contexts (H200-NOTES), so grants are
 * longer by default (grant_us; issue 9). */
#define SRV_GRANT_PROCESS_NS 4000000ull
/* grant_us = auto (the default with executors): the daemon measures what a
 * switch between two executors costs (a batch's exchange time beyond its GPU
 * time, when the batch before it on the device was another executor's) and
 * makes grants SRV_GRANT_AUTO_DIV times that long, so switching costs at most
 * 1/SRV_GRANT_AUTO_DIV (1 %) of the GPU, within [SRV_GRANT_PROCESS_NS,
 * SRV_GRANT_AUTO_MAX_NS]: the longest a busy neighbour makes a client wait. */
/* (40, 2.5 %, until stop 29: two tenants synchronising after every 1 ms kernel kept
 * 95.5 % of an H200 busy with the 4 ms grants that gave, 97.5 % with 16 ms ones,
 * results/GPU-e7c90608-.../stop29b-f653c8d) */
#define SRV_GRANT_AUTO_DIV 100u
#define SRV_GRANT_AUTO_MAX_NS 16000000ull
#define SRV_SWITCH_SAMPLE_MAX_NS 2000000ull /* one sample counts at most this (a stall is no switch) */
/* A batch may exceed its grant by this fraction of it: an op's time is measured
 * with jitter, and a grant of four 1 ms kernels must take the fourth */
#define SRV_GRANT_SLACK_DIV 8u
struct srv_task {
    gos_sched_task st; /* st.user == this */
    struct srv_client *c;
    struct srv_task *next; /* client's pending list */
    int released;          /* handed to the scheduler */
    int dispatched;        /* taken by a dispatcher: the batch is closed */
    int n_ops, cap_ops;
    uint64_t bytes;        /* copy bytes in the batch */
    uint64_t wall_ns;      /* an executor's batch: its exchange, send to reply */
    struct srv_op *ops;
    /* a ring's grant (issue 22; ring.c): no ops, the client's executor runs
     * its ring's entries from issue to its yield; charged its wall time */
    int ring;
    uint64_t ring_t0, ring_busy0, ring_busy; /* its start, the executor's busy_ns then, and since */
    uint64_t ring_idle0; /* the executor's idle_ns at the start of the piece not charged yet */
    uint64_t ring_copy0; /* its copy_busy_ns then */
    /* isolation = mps (ring_pair.c): the companion grant issued beside this
     * one, whose kernels overlap this one's (awaited and charged with it), and
     * for a companion, the generation of its grant; a companion was taken out
     * of the scheduler's queue and never runs there */
    struct srv_task *co;
    int companion;
    uint32_t ring_gen;
    /* what of its wall time is not charged: the GPU's switch to its executor
     * after another's (the device's measured switch_ns, at most a quarter of
     * the grant; issue 41: a 10 % vGPU's 2 ms grants each paid a 250 us
     * switch, a share delivered at 74-84 %) */
    uint64_t ring_free;
    int closing; /* its dispatcher is ending it: no companion joins (ring.c) */
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
    int swap_pin_sent; /* swap.c: its executor was told to lock the faulted-in pool ahead (X_POOL_PIN) */
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
};

/* A runtime override of one key of a vGPU (`gpuos vgpu set`), persisted in the
 * state file (state.c) with the configuration file's value it replaced: when the
 * file's value changes later, the file wins and the override is dropped. */
enum { SRV_OV_COMPUTE, SRV_OV_COPY, SRV_OV_MEMORY, SRV_OV_N };
struct srv_override {
    int set;
    char value[32]; /* canonical: "30", "25%", "1073741824" */
    char base[32];  /* the file's value when it was set, same form */
};

struct srv_vgpu {
    struct gos_serve_vgpucfg cfg;  /* in force: the file's values + overrides */
    struct gos_serve_vgpucfg file; /* as the configuration file says */
    struct srv_override ov[SRV_OV_N];
    uint32_t id;
    uint64_t mem_quota, mem_used;
    int clients;
    int removed; /* gone from the configuration at a reload: no new clients */
    int created; /* made by `vgpu create` (vgpu_life.c): kept in the state file */
    int deleted; /* by `vgpu delete` (removed too): never listed, found or revived; its
                  * slot is reused once nothing refers to it and it left the scheduler */
    int unscheduled;
    uint64_t tasks;
    uint64_t faults; /* executors of its clients lost to a device fault or a kill */
    uint64_t ring_ns; /* time its clients' executors spent on their rings (issue 9.4) */
    /* executor = per-vgpu: the executor its clients share (NULL: none yet, or
     * it died and the next client starts another); xshare_busy while one
     * client joins it (the daemon's lock is dropped meanwhile) */
    struct srv_xshare *xshare;
    int xshare_busy;
};

/* A shared executor (executor = per-vgpu): its control channel and how many
 * clients use it; it ends with the last of them. */
struct srv_xshare {
    struct srv_exec *ctl;
    int refs;
    struct srv_exec_share fate; /* a client's fault, for the others' channels (executor.h) */
};

struct srv_dev {
    struct srv *srv;
    int index;
    gos_device *dev;
    gos_sched *sched;
    int n_engines;
    pthread_t threads[GOS_SCHED_MAX_ENGINES];
    /* Per engine: the dispatcher's wake-up, the instant it sleeps until (0: awake),
     * and a task handed to it by another thread, already taken from the policy
     * (in flight), whose ops are already issued when handed_issued is set. */
    pthread_cond_t cond[GOS_SCHED_MAX_ENGINES];
    uint64_t sleep_until[GOS_SCHED_MAX_ENGINES];
    struct srv_task *handed[GOS_SCHED_MAX_ENGINES];
    int handed_issued[GOS_SCHED_MAX_ENGINES];
    void *streams[GOS_SCHED_MAX_ENGINES];
    void *ev[GOS_SCHED_MAX_ENGINES][2];
    uint64_t mem_total;
    /* An SM set's scheduler (serve/spatial.c): shares `dev` with the device it
     * came from (not closed here), its compute engine's stream is on gctx. */
    int shared_dev;
    void *gctx;
    struct srv_dev_attrs attrs; /* its attributes (DEVICE_ATTRS), read once at start */
    gos_device_info info; /* the device's facts (from a probe executor under process / mps:
                           * the daemon then holds no device context at all, dev == NULL) */
    int isolation;  /* GOS_ISOLATION_* */
    int executor_per_vgpu; /* executor = per-vgpu (process / mps) */
    int overlap;           /* overlap = pairs (mps; ring_pair.c) */
    char mps_dir[64]; /* isolation = mps on a GPU: the MPS server's pipe/log directory ("" none) */
    uint64_t mps_restarted_ns; /* clients born before belong to the previous server */
    uint64_t grant_ns; /* a batch's expected GPU time at most (grant_us) */
    int grant_auto;    /* grant_us = auto: grant_ns follows switch_ns (dispatch.c) */
    uint64_t switch_ns; /* measured cost of a switch between executors (moving average), 0: none yet */
    uint64_t preemptions; /* batch grants ended early for a latency vGPU (issue 41) */
    uint64_t companions;  /* latency grants run at once beside a batch grant (mps; issue 41) */
    uint64_t switches;  /* batches that followed another executor's */
    pid_t last_pid;     /* the executor process of the device's last batch (0: none yet);
                         * clients sharing one (executor = per-vgpu) switch nothing */
    char sim[256];  /* the executors' device: a chip, or "" for the GPU of ordinal */
    gos_swap *sw; /* swapping on this device (swap.c, issue 10.2); NULL: off */
    int ordinal;
    struct srv_swpool *swp; /* its host swap pool (swap.c): one memfd, offsets */
    /* rings (issue 22; ring.c): the doorbell its executors ring when an entry
     * waits for a grant (an eventfd), and the thread that answers it */
    int bell_fd;
    pthread_t bell_thread;
    int bell_started;
    int clients_now; /* clients on it that have asked for it (srv_ring_rotation): a lone one's
                      * grants are of any kind and never yield to nobody */
};

struct srv {
    struct gos_serve_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t idle; /* signalled when a client is freed */
    int stop;
    int listen_fd;
    dev_t sock_dev; /* the socket file bound (unlinked at exit only while it is still this one) */
    ino_t sock_ino;
    uid_t uid;
    int n_devs;
    struct srv_dev devs[GOS_SERVE_MAX_DEVICES];
    gos_shm_table shm; /* shared device memory segments (shm.c, issue 10) */
    int n_vgpus;
    struct srv_vgpu vgpus[GOS_MAX_VGPUS];
    struct srv_client *clients;
    int n_clients;
    uint32_t next_client_id;
    int verbose;
    unsigned spin_us;  /* readers poll this long for the next request */
    int max_spinners;  /* readers polling at once, at most */
    int spinners;      /* atomic */

    /* Operation (reload.c, state.c, metrics.c). */
    char config_path[4096]; /* reread on SIGHUP */
    char state_path[4200];  /* "" no persistence */
    int sock_from_cli;      /* --socket or $GPUOS_SOCKET: not the file's */
    uint64_t reloads, reload_failures;
    uint64_t refused; /* connections refused at their HELLO (metrics) */
    double last_reload_s;   /* wall clock of the last successful load */
    int last_reload_ok;
    struct gos_chip *chips[GOS_SERVE_MAX_DEVICES]; /* chip = files, NULL none */
    void *metrics;          /* the HTTP daemon, NULL when off */
    int reserve_fd;    /* given up at the descriptor limit to refuse a connection */
    unsigned long n_refused; /* connections refused (limits, descriptors) */
    int leaked;        /* srv_run gave up on threads that still run: do not free */
    uint64_t next_vmm_handle; /* VMM handles are the daemon's, never reused (vmm_cl.c) */
};



/* server.c */
int srv_run(struct srv *s, const char *force_sim);
void srv_reap_idle(struct srv *s);

/* client.c: the reader thread of one connection; one function per message type. */
void *srv_client_main(void *arg);
/* session.c: drops a reference (lock held); frees the client at zero. */
void srv_client_unref(struct srv_client *c);

/* dispatch.c */
void *srv_dispatch_main(void *arg); /* arg: struct srv_engine_arg */
struct srv_engine_arg {
    struct srv_dev *d;
    int engine;
};
/* Queues op (copied; its params and region reference move into the daemon) of
 * client c (lock held): appended to the client's last task when that one may
 * still grow, else in a new task, pending, then released in order. */
int srv_op_submit(struct srv_client *c, int kind, int priority, const struct srv_op *op);
/* Releases pending tasks of c that may run now (lock held); the caller then
 * offers them to the engines (srv_client_dispatch or srv_dev_kick). */
void srv_client_release(struct srv_client *c);
/* Offers every idle engine of d its next task (lock held): handed to the engine's
 * dispatcher, which is woken; a dispatcher sleeping past a BAND hold or a cap that
 * now ends earlier is woken too. Engine `skip` (or -1) is left alone. */
void srv_dev_kick(struct srv_dev *d, int skip);
/* The reader of c, after queueing work (lock held, dropped meanwhile): runs on
 * this thread the task the policy picks for an idle engine (its ops issued here;
 * waited for here when the client waits for it and sends nothing else, or when it
 * is expected within SRV_INLINE_WAIT_NS, else by the engine's dispatcher), then
 * offers the engines their next tasks. */
void srv_client_dispatch(struct srv_client *c);
/* Whether c's newest task may still take the next request (a reader with more
 * requests already in its socket reads them before dispatching). */
int srv_client_batch_open(struct srv_client *c);
#define SRV_INLINE_WAIT_NS 200000ull
#define SRV_INLINE_WAIT_BYTES (4ull << 20)
/* Takes back every queued task of c (lock held), after it died. */
void srv_client_cancel(struct srv_client *c);

/* server.c: a device's engine condition variables (gos_cond_init: monotonic waits). */
void srv_dev_init_conds(struct srv_dev *d);

/* spatial.c: spatial vGPUs (issue 13). After the devices are open: gives every
 * vGPU with `sms` an SM set (vGPUs naming one smset share it) and a scheduler of
 * its own on it (an extra srv_dev sharing the device, its compute stream on the
 * set's green context); the vGPU's device index then names that scheduler. */
int srv_spatial_open(struct srv *s);
/* Releases an SM set's green context (its streams destroyed first). */
void srv_spatial_close(struct srv_dev *d);
/* region.c (lock held): a region from the client's memfd (REGION_ADD); the
 * region holding [off, off + n) of region r, or NULL with an error; dropping
 * one (unmapped once no task uses it); a task's reference released. */
int srv_region_add(struct srv_client *c, uint64_t bytes, uint64_t addr, int fd, uint32_t *id, uint32_t *flags);
struct srv_region *srv_region_find(struct srv_client *c, uint32_t r, uint64_t off, uint64_t n);
void srv_region_drop(struct srv_client *c, int r);
void srv_region_unref(struct srv_client *c, int r);

/* session.c. The client's executor died (fault, kill; lock held): counted once per vGPU,
 * logged, its memory returned to the vGPU's share; later requests fail with
 * GOS_EDEVICE naming the reason. */
void srv_client_exec_check(struct srv_client *c);
/* The same for an executor that may have died outside any exchange (through
 * its ring: the grant page holds the fault), found by its channel hanging up. */
void srv_client_exec_probe(struct srv_client *c);

/* ring.c: the fast path (issue 9.4; proto/ring_shm.h) for every client (issue 22).
 * RING_ATTACH maps the client's memfd, makes its grant page and hands both and
 * the device's doorbell to its executor (lock held, dropped meanwhile); a
 * ring's grants are tasks of the scheduler (srv_ring_queue), issued and
 * awaited by the engine's dispatcher; rotation sets how soon an idle ring
 * yields (never when its client is alone on the device); charge moves the
 * executor's reported ring entries to its vGPU's counters; gone unmaps it
 * (client freed). */
int srv_ring_attach(struct srv_client *c, const struct gos_msg_ring *m, int fd);
void srv_ring_rotation(struct srv *s, int device);
/* The doorbell's thread of device d (server.c starts it): queues a grant for
 * every ring that wants one. */
void *srv_bell_main(void *arg);
/* At shutdown (s->stop set, lock not held): ends the doorbells' threads. */
void srv_ring_bells_stop(struct srv *s);
/* dispatch.c: a grant task for c's ring, queued (lock held). */
int srv_ring_queue(struct srv_client *c);
/* The grant of task t, issued (lock not held), and awaited until the executor
 * yields: *gpu_ns its wall time, *busy_ns what the executor spent running. */
void srv_ring_issue(struct srv_dev *d, struct srv_task *t);
int srv_ring_await(struct srv_dev *d, struct srv_task *t, uint64_t *gpu_ns, uint64_t *busy_ns);
/* A socket request of c waits for everything of c (a free, a synchronise over
 * the socket; lock held): its ring's grant, queued or running, ends as soon as
 * what its ring holds is done instead of lasting to its deadline, which the
 * daemon moves on and on while nobody else waits. */
void srv_ring_end_soon(struct srv_client *c);
/* Task t (a latency vGPU's, just queued: dispatch.c) ends the running grant of
 * its engine at that grant's next kernel boundary when the scheduler says so
 * (gos_sched_preempts; lock held; issue 41). */
void srv_ring_preempt(struct srv_dev *d, struct srv_task *t);
/* c is dead (lock held): the dispatcher awaiting its grant ends it now, and
 * what c held is released at once, not at the grant's next look. */
void srv_ring_wake(struct srv_client *c);
/* How long an idle ring keeps a grant while others wait. */
#define SRV_RING_IDLE_YIELD_US 200
/* ring_pair.c: under isolation = mps with overlap = pairs, a compute grant of t may have a
 * companion: the queued grant task of another ring of the device whose vGPU
 * has the same compute share and whose entries take about as long (within a
 * factor of SRV_PAIR_RATIO), taken out of the scheduler's queue (lock held;
 * NULL: none). The two grants run at once, their kernels overlap on the GPU
 * (MPS's concurrency), and each is charged their whole common wall time. */
#define SRV_PAIR_RATIO 2
struct srv_task *srv_ring_pair_pick(struct srv_dev *d, struct srv_task *t);
/* Takes queued grant task u out of the scheduler's queue to run as a
 * companion (lock held; ring_pair.c's pairs, ring.c's latency companions):
 * GOS_OK, or GOS_EBUSY when it is not queued there. */
int srv_ring_companion_take(struct srv_dev *d, struct srv_task *u);
/* dispatch.c: a companion grant's end (lock held): its ring's bookkeeping and
 * its client's answer, as a completed grant's, without the scheduler. */
void srv_ring_companion_done(struct srv_task *t, int rc);
/* Waits on the daemon's idle condition (a client freed, a join done) for at
 * most ns (lock held). */
void srv_idle_wait(struct srv *s, uint64_t ns);

/* xshare.c (executor = per-vgpu): a channel to the executor the clients of
 * vGPU v share, started with the first of them (lock held, dropped while it
 * starts); leave ends c's part there, and the executor with its last client. */
int srv_xshare_join(struct srv *s, int v, struct srv_exec **x, struct srv_xshare **sh);
void srv_xshare_leave(struct srv_client *c);

/* grant.c: the expected GPU time a batch may reach (the grant and its slack);
 * grant_us = auto learns a switch's cost from an executor's batch (lock held). */
uint64_t srv_grant_limit(const struct srv_dev *d);
uint64_t srv_grant_for(struct srv_dev *d, uint32_t vgpu_id);
/* The shortest grant srv_grant_for gives a vGPU over its share. */
#define SRV_GRANT_SHARE_MIN_NS 2000000ull
void srv_grant_learn(struct srv_dev *d, pid_t executor, uint64_t wall_ns, uint64_t gpu_ns);
void srv_ring_charge(struct srv_client *c);
void srv_ring_gone(struct srv_client *c);
/* At shutdown (lock held, dropped while waiting): revokes every ring and waits up
 * to ms for their executors to finish what they hold; returns how many did not. */
int srv_ring_quiesce(struct srv *s, int ms);

/* hostmem.c: host memory under pressure (issue 23.3). The bytes the daemon may
 * still take (MemAvailable and every memory cgroup above it); *limit (may be
 * NULL): the tightest cgroup limit, UINT64_MAX when none. */
uint64_t srv_host_room(uint64_t *limit);
/* What to leave free of the room for the daemon and its executors themselves. */
uint64_t srv_host_reserve(uint64_t limit);
/* OOM killer: the daemon at SRV_OOM_DAEMON (when it may lower its own score),
 * each executor at SRV_OOM_EXECUTOR (executor.h, set by srv_exec_spawn). */
void srv_oom_policy(void);

/* shm.c: shared device memory (issue 10), lock held (dropped around device calls). */
void srv_shm_init(struct srv *s);
void srv_shm_limits(struct srv *s); /* cfg.shm_* into the table (start, reload) */
void srv_shm_fini(struct srv *s);
int srv_shm_get(struct srv_client *c, const struct gos_msg_shm_get *m, struct gos_rep_shm_get *r);
int srv_shm_at(struct srv_client *c, const struct gos_msg_shm_at *m, struct gos_rep_shm_at *r);
/* The caller drained c's work first. */
int srv_shm_dt(struct srv_client *c, uint64_t dptr);
int srv_shm_ctl(struct srv_client *c, const struct gos_msg_shm_ctl *m, struct gos_shm_rec *r, int *has_rec);
/* ADMIN_SHM_LIST's reply body in out (room for GOS_SHM_LIST_MAX records); its length. */
size_t srv_shm_list(struct srv_client *c, unsigned char *out);
/* ADMIN_SHM_RM (gpuos shm rm): root or the daemon's owner only; *removed marked. */
int srv_shm_rm(struct srv_client *c, const struct gos_msg_admin_shm_rm *m, uint32_t *removed);
/* Detaches every segment c holds (it or its executor is gone). */
void srv_shm_client_gone(struct srv_client *c);

/* swap.c: swapping (issue 10.2), lock held (dropped around executor calls). */
int srv_swap_init(struct srv *s, struct srv_dev *d, const struct gos_serve_devcfg *cfg);
void srv_swap_fini(struct srv_dev *d);
int srv_swap_alloc(struct srv_client *c, uint64_t bytes, uint64_t *dptr);
void srv_swap_free(struct srv_client *c, uint64_t dptr);
void srv_swap_client_gone(struct srv_client *c);

/* Partition-local memory of clients (issue 12; pmem_cl.c). The caller has
 * drained the client's work where the device might use the memory; each drops
 * the lock around the device work. srv_pmem_client_gone: at the end of a
 * session (isolation = none: frees what the daemon holds for it). */
struct srv_pmem_set;
int srv_pmem_do_alloc(struct srv_client *c, const struct gos_msg_pmem_alloc *m, struct gos_rep_pmem_alloc *r);
int srv_pmem_do_free(struct srv_client *c, uint64_t base);
int srv_pmem_do_copy(struct srv_client *c, const struct gos_msg_pmem_copy *m);
int srv_pmem_do_check(struct srv_client *c, const struct gos_msg_pmem_check *m, struct gos_rep_pmem_check *r);
void srv_pmem_client_gone(struct srv_client *c);
/* CUDA's VMM for clients (vmm_cl.c; lock held, dropped around the device
 * work, which runs on the client's executor or, under isolation = none, on the
 * daemon's device). Each checks that everything named is c's own; CREATE
 * charges the vGPU's memory share until the memory is released and unmapped;
 * mappings with access are listed in c->allocs (runs of adjacent ones) for the
 * range checks of copies and kernels. UNMAP's caller drained c's work.
 * client_gone: c or its executor is gone; its charges returned, its entries
 * dropped (isolation = none: the device's objects released). */
int srv_vmm_reserve(struct srv_client *c, const struct gos_msg_vmm_reserve *m, struct gos_rep_vmm *r);
int srv_vmm_unreserve(struct srv_client *c, const struct gos_msg_vmm_range *m);
int srv_vmm_create(struct srv_client *c, const struct gos_msg_vmm_create *m, struct gos_rep_vmm *r);
int srv_vmm_release(struct srv_client *c, const struct gos_msg_vmm_release *m);
int srv_vmm_map(struct srv_client *c, const struct gos_msg_vmm_map *m);
int srv_vmm_unmap(struct srv_client *c, const struct gos_msg_vmm_range *m);
int srv_vmm_access(struct srv_client *c, const struct gos_msg_vmm_access *m);
void srv_vmm_client_gone(struct srv_client *c);
/* vgpu.c: room for one more entry in c's allocation table (GOS_ENOMEM
 * otherwise); whether bytes more fit the memory share of c's vGPU (GOS_EBUSY
 * naming the share otherwise; what: "allocating 4096 bytes"). */
int srv_alloc_room(struct srv_client *c);
int srv_share_room(struct srv_client *c, uint64_t bytes, const char *what);
/* Before a COPY or LAUNCH of c is queued: what it needs made resident. */
int srv_swap_need(struct srv_client *c, const struct gos_msg_hdr *h, const void *payload);
void srv_swap_record(struct srv *s, int v, uint64_t *resident, uint64_t *swapped);
/* Turns (issue 42): those given to vGPU v and the time its memory spent moving;
 * whether v is turned out now (its rings get no grant meanwhile: ring.c). */
void srv_swap_turns(struct srv *s, int v, uint64_t *turns, uint64_t *swap_ns);
int srv_swap_turned_out(struct srv_dev *d, int vgpu);

/* mps.c: an MPS server of the daemon's own (pipe and log directories under a
 * private temporary directory, written to dir); stopping it (echo quit). */
int srv_mps_start(char *dir, size_t cap);
void srv_mps_stop(char *dir);

/* vgpu.c */
void srv_vgpu_record(struct srv *s, int v, struct gos_vgpu_rec *r);
int srv_vgpu_set(struct srv *s, const char *name, const char *key, const char *value);
/* `vgpu set` from a client (lock held): applied, persisted in the state file
 * (undone when it cannot be saved), oversubscription warned of. */
int srv_vgpu_set_persist(struct srv *s, const char *name, const char *key, const char *value);
/* Index of the vGPU named name (removed ones included), or -1. */
int srv_vgpu_find(struct srv *s, const char *name);
/* The file's value of key SRV_OV_* in canonical form. */
void srv_vgpu_file_value(const struct gos_serve_vgpucfg *f, int key, char *out, size_t n);
/* Logs a warning per device whose active vGPUs' shares add up past 100 %
 * (`when`: "at start", "after reload", ...). Returns how many warnings. */
int srv_check_oversubscription(struct srv *s, const char *when);
/* Whether the peer on fd (uid) may open vGPU g: GOS_OK or GOS_EPERM naming why. */
int srv_vgpu_access(struct srv *s, int v, int fd, pid_t pid, uid_t uid, gid_t gid);
/* The supplementary groups of the peer of socket fd (at most cap; SO_PEERGROUPS,
 * else /proc of pid, the kernel-reported peer pid): how many were written. */
int srv_peer_groups(int fd, pid_t pid, gid_t *out, int cap);
/* cgroup = (peercg.c): whether the peer of socket fd (the kernel-reported
 * pid) is in cgroup cg or below it (GOS_OK; else GOS_EPERM and one line). */
int srv_peer_cgroup_access(const char *vgpu, const char *cg, int fd, pid_t pid);
/* Whether the memory shares of the vGPUs in force still fit their devices with
 * vGPU v's configuration replaced by *g (v < 0: *g added): GOS_OK, or the
 * error of gos_serve_config_check_memory without the file's line. */
int srv_vgpu_fits(struct srv *s, int v, const struct gos_serve_vgpucfg *g);
/* Adds vGPU id with g's shares and latency class to d's scheduler. */
int srv_sched_vgpu_add(struct srv_dev *d, uint32_t id, const struct gos_serve_vgpucfg *g);
/* A compute or copy share "1".."100" (optionally "%"): GOS_EINVAL otherwise. */
int srv_vgpu_share(const char *v, int *out);

/* vgpu_life.c (lock held): vGPUs made and removed at run time (issue 25).
 * parse: the keys of a [vgpu NAME] section, "key=value" lines (device, compute,
 * copy, memory, users, groups); create: checked, added, kept in the state file
 * when persist; delete: only created ones, refused while clients are attached
 * unless force (their executors killed with the reason); created_json: the
 * state file's entry of a created vGPU {"vgpu", "keys": {...}}. */
int srv_vgpu_parse(struct srv *s, const char *name, const char *keys, struct gos_serve_vgpucfg *g);
int srv_vgpu_create(struct srv *s, const char *name, const char *keys, int persist);
int srv_vgpu_delete(struct srv *s, const char *name, int force);
struct json_t *srv_vgpu_created_json(struct srv *s, int v);

/* reload.c: SIGHUP. Rereads the configuration file and applies it without
 * dropping clients, or keeps the running one (error logged) when it is invalid
 * or asks for what only a restart can change. Takes the lock itself. */
int srv_reload(struct srv *s);

/* state.c: the state file of `vgpu set` (JSON, schema gpuos.vgpu-state/1). */
int srv_state_load(struct srv *s); /* at start, lock not needed; applies overrides */
int srv_state_save(struct srv *s); /* atomically (temporary file + rename) */
/* Drops overrides whose file value changed since they were set (after a load
 * or reload); returns how many were dropped. */
int srv_state_reconcile(struct srv *s);

/* metrics.c: the Prometheus endpoint (metrics_listen). */
int srv_metrics_start(struct srv *s);
void srv_metrics_stop(struct srv *s);
/* The exposition text (lock held by the caller), malloc'd; NULL: out of memory. */
char *srv_metrics_text(struct srv *s, size_t *len);

#endif
