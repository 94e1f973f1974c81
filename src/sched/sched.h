/* SPDX-License-Identifier: Apache-2.0 */
/* sched.h: the virtual-GPU scheduler core (pillar 3; paper 002, section 5).
 *
 * One physical GPU is shared by virtual GPUs (vGPUs). Each vGPU has a compute share
 * and a copy share (percent of GPU time). Clients of a vGPU submit tasks (a kernel
 * launch or a copy); the scheduler decides which task each engine runs next and
 * accounts the GPU time each task actually took, as measured by the caller.
 *
 * Queuing (paper 002, section 5.1):
 *   GOS_SCHED_MRQ  Multiple Resource Queues: a compute engine and a copy engine, each
 *                  with its own queues, its own accounting and its own policy state;
 *                  they dispatch concurrently (a copy may overlap a kernel).
 *                  Engines: GOS_SCHED_ENGINE_COMPUTE (0) and GOS_SCHED_ENGINE_COPY (1).
 *   GOS_SCHED_SDQ  Single Device Queue: one engine (0) runs copies and kernels one at
 *                  a time; all GPU time counts against the vGPU's compute share.
 *
 * Policies (chosen by name; one vtable each, policy.h):
 *   "fifo"    arrival order across vGPUs; ignores shares.
 *   "credit"  Xen-style Credit: every period each active vGPU gets credit in
 *             proportion to its share; measured GPU time is debited; a vGPU with
 *             negative credit waits while a vGPU with credit has work.
 *   "band"    Gdev's BAND (figure 2): Credit's accounting; a vGPU is demoted only if
 *             its credit is negative AND its utilisation exceeds its share; otherwise
 *             the vGPU most behind its share (credit per share point) goes first;
 *             after a task of an under-share vGPU completes, the engine is held for a
 *             short wait (default 500 us) for that vGPU's next request, and the time
 *             the idle engine keeps other vGPUs' work waiting is charged to that vGPU
 *             like GPU time (optional: gos_sched_set_band_charge_hold).
 *   Credit is redistributed each period from the GPU time the period delivered, in
 *   proportion to the shares of the active vGPUs; it stays within one period either
 *   way, and a vGPU with no work keeps no positive credit (nothing is banked).
 *
 * Model of an engine: at most ONE task is in flight per engine. The caller asks
 * gos_sched_next() for the next task when the engine is idle, runs it, and reports
 * gos_sched_done() with the task's measured GPU time. Several tasks of one vGPU run
 * back to back, not concurrently (the accounting is then exact).
 *
 * Time: every call that can change the schedule takes now_ns (any monotonic clock,
 * e.g. gos_now_ns (common/clock.h), or a virtual clock in the simulator). The scheduler
 * never reads a clock. A now_ns smaller than one already seen is treated as the
 * largest seen (dispatch threads may take the lock out of order).
 *
 * Threads: NOT thread-safe. The caller serialises every call on one gos_sched with
 * its own lock. No call blocks or sleeps: BAND's "short wait" is expressed as
 * gos_sched_next() returning NULL with a wake time.
 *
 * Ownership: tasks are owned by the caller. The scheduler links them through the
 * intrusive fields (next/prev) while they are queued or in flight and never frees
 * them. Every task handed back (from next, remove, cancel) belongs to the caller again.
 */
#ifndef GOS_SCHED_H
#define GOS_SCHED_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gos_sched gos_sched;

enum gos_sched_mode { GOS_SCHED_MRQ = 0, GOS_SCHED_SDQ = 1 };

/* Task kinds; in MRQ also the engine numbers. */
enum gos_sched_kind { GOS_SCHED_COMPUTE = 0, GOS_SCHED_COPY = 1 };
#define GOS_SCHED_ENGINE_COMPUTE 0
#define GOS_SCHED_ENGINE_COPY 1
#define GOS_SCHED_MAX_ENGINES 2

/* Limits. */
#define GOS_SCHED_MAX_VGPUS 64
#define GOS_SCHED_DEFAULT_PERIOD_NS 30000000ull  /* 30 ms, Xen's and Gdev's default */
/* A latency vGPU is over its share when its use decayed over this many
 * periods is (issue 41): a 10 % service whose request (7 ms) outlasts its
 * share of one 30 ms period was demoted mid-request and waited behind a batch
 * grant (p50 38 ms against 10 alone on GPU-6982ed85). Six periods (180 ms by
 * default) keep a request of up to about its share of the horizon in the
 * class (a 10 % vGPU's 7 ms every 100 ms peaks at 9 % of it); a flooder that
 * was idle is over after -ln(1 - share) horizons (64 ms at 30 %: 1.5 points
 * of a 3 s run) and is then held to its share like any other vGPU. */
#define GOS_SCHED_LATENCY_HORIZON 6
#define GOS_SCHED_LATENCY_RESUME 0.95 /* back in the class under this much of its share */
#define GOS_SCHED_DEFAULT_BAND_WAIT_NS 500000ull /* 500 us, Gdev section 6 */
#define GOS_SCHED_NEVER UINT64_MAX               /* "no timed wake-up needed" */

/* One request (a kernel launch or a copy). The caller fills vgpu, client, kind,
 * priority and user before gos_sched_submit() and must not touch the task until the
 * scheduler hands it back. The fields below "scheduler's" are private. */
typedef struct gos_sched_task {
    uint32_t vgpu;      /* id given to gos_sched_vgpu_add() */
    uint32_t client;    /* caller's client id (for gos_sched_remove_client) */
    int kind;           /* GOS_SCHED_COMPUTE or GOS_SCHED_COPY */
    int priority;       /* inside its vGPU: higher runs first, FIFO among equals */
    void *user;         /* caller's pointer, never dereferenced */
    /* scheduler's: */
    struct gos_sched_task *next, *prev; /* intrusive link; after remove/cancel, `next`
                                           chains the returned tasks (NULL-ended) */
    uint64_t seq;        /* submission order */
    uint64_t submit_ns;  /* now_ns at submission */
    uint64_t start_ns;   /* now_ns when gos_sched_next() handed it out (or gos_sched_nobody_waits) */
    int engine;          /* engine it ran on, -1 while queued */
} gos_sched_task;

/* Per-vGPU figures, gos_sched_vgpu_stats_get(). Utilisation is GPU time over the
 * last period (a sliding window of period_ns ending at now_ns) in percent of that
 * period, per task kind (in SDQ copies are still reported under copy_util_pct,
 * although they are charged to the compute share). A task's time is accounted when
 * it completes, as the interval [now_ns - gpu_ns, now_ns]; a task still running
 * does not count yet. */
typedef struct {
    double compute_util_pct, copy_util_pct;
    uint64_t compute_ns, copy_ns;        /* total GPU time since the vGPU was added */
    uint64_t compute_done, copy_done;    /* tasks completed */
    uint32_t compute_queued, copy_queued;/* tasks waiting (not in flight) */
    int64_t compute_credit_ns, copy_credit_ns; /* credit/band only; 0 for fifo */
    int compute_share, copy_share;       /* percent, as set */
    uint64_t compute_held_ns, copy_held_ns; /* engine time BAND held idle waiting for
                                              this vGPU while other vGPUs' work waited,
                                              in total (SDQ: compute) */
    double compute_held_pct, copy_held_pct; /* the same over the last period, percent */
} gos_sched_vgpu_stats;

/* Creates a scheduler. policy: "fifo", "credit" or "band". mode: GOS_SCHED_MRQ or
 * GOS_SCHED_SDQ. period_ns: the credit/accounting period, 0 for the default
 * (GOS_SCHED_DEFAULT_PERIOD_NS); must be within 1 us .. 10 s. On success *out owns
 * a new scheduler (free with gos_sched_free). Errors: GOS_EINVAL (unknown policy,
 * mode, period), GOS_ENOMEM. */
int gos_sched_new(const char *policy, int mode, uint64_t period_ns, gos_sched **out);

/* Frees the scheduler. Tasks still queued or in flight are not freed (they belong
 * to the caller; take them back first with gos_sched_vgpu_remove). NULL is fine. */
void gos_sched_free(gos_sched *s);

/* Names: "fifo"|"credit"|"band", "mrq"|"sdq". */
const char *gos_sched_policy_name(const gos_sched *s);
const char *gos_sched_mode_name(const gos_sched *s);
int gos_sched_mode(const gos_sched *s);
uint64_t gos_sched_period_ns(const gos_sched *s);

/* Parses "mrq"/"sdq" (case-insensitive) into *mode. GOS_EINVAL otherwise. */
int gos_sched_parse_mode(const char *name, int *mode);

/* BAND's short wait (ignored by other policies). 0 disables the wait (BAND then
 * differs from Credit only in its ordering). GOS_EINVAL if wait_ns > period. */
int gos_sched_set_band_wait(gos_sched *s, uint64_t wait_ns);
uint64_t gos_sched_band_wait_ns(const gos_sched *s);

/* Whether BAND charges held engine time (idle while other vGPUs' work waits) to the
 * vGPU it waits for.
 *   true (default): shares are of engine time, GPU time plus holds. A client that
 *     thinks between requests pays for the idle engine it causes, so every other
 *     vGPU keeps its share of elapsed time (a guarantee).
 *   false: shares are of GPU time alone (Gdev's utilisation). A short-kernel client
 *     gets its share of GPU time even with a slow turnaround, but the idle time its
 *     holds cause comes out of the other vGPUs, which can then get less than their
 *     share of elapsed time (docs/readme-sched.md shows by how much).
 * Held time is reported in gos_sched_vgpu_stats either way. */
void gos_sched_set_band_charge_hold(gos_sched *s, bool charge);
bool gos_sched_band_charge_hold(const gos_sched *s);

/* Number of engines: 2 in MRQ, 1 in SDQ; and the engine a kind of task runs on
 * (the kind itself in MRQ, 0 in SDQ). The caller runs one dispatcher per engine. */
int gos_sched_engine_count(const gos_sched *s);
int gos_sched_engine_for(const gos_sched *s, int kind);

/* Adds vGPU `id` (any value, unique) with compute and copy shares in percent
 * (1..100 each). Shares of all vGPUs need not sum to 100: credit is distributed in
 * proportion to the shares of the vGPUs active in a period (work-conserving).
 * Errors: GOS_EINVAL (bad share, duplicate id), GOS_EBUSY (GOS_SCHED_MAX_VGPUS). */
int gos_sched_vgpu_add(gos_sched *s, uint32_t id, int compute_share, int copy_share);

/* Changes the shares at run time; takes effect at once for ordering and from the next
 * replenishment for credit (within one period). GOS_EINVAL: unknown id, bad share. */
int gos_sched_vgpu_set_shares(gos_sched *s, uint32_t id, int compute_share, int copy_share);

/* Optional caps (Xen's cap), percent of each period, 0 = uncapped (the default).
 * A capped vGPU that used cap% of the current period waits for the next period even
 * if the GPU is idle (not work-conserving). Credit and BAND only. GOS_EINVAL: unknown
 * id, cap outside 0..100. */
int gos_sched_vgpu_set_caps(gos_sched *s, uint32_t id, int compute_cap, int copy_cap);

/* The latency class (issue 41): latency_ns > 0 says the vGPU's work must start
 * within latency_ns; 0 (the default) makes it a batch vGPU. Credit and BAND
 * serve a latency vGPU before every batch vGPU while it is not demoted (BAND:
 * credit exhausted and over its share; Credit: no credit left), and BAND never
 * holds an engine for one (its requests come far apart, and the daemon ends a
 * batch grant for them: gos_sched_preempts). Its time is charged as any
 * vGPU's, so flooding demotes it like any other: it cannot take more than its
 * share over a period. GOS_EINVAL: unknown id. */
int gos_sched_vgpu_set_latency(gos_sched *s, uint32_t id, uint64_t latency_ns);
uint64_t gos_sched_vgpu_latency(gos_sched *s, uint32_t id);

/* Whether queued work of latency vGPU `id` should end the task running on
 * engine now (the daemon then ends that ring grant at its next kernel
 * boundary): the running task is a batch vGPU's and the policy would serve
 * `id` before it (Credit and BAND; never under FIFO). */
bool gos_sched_preempts(gos_sched *s, int engine, uint32_t id, uint64_t now_ns);

/* Removes vGPU `id`. Its queued tasks are unlinked and returned in *returned as a
 * NULL-terminated chain through task->next, in submission order (the caller frees
 * them). Tasks of that vGPU in flight stay in flight: the caller still reports them
 * with gos_sched_done(), which then frees the engine without accounting.
 * returned may be NULL only if the caller knows nothing is queued (else GOS_EINVAL
 * and nothing is removed). GOS_EINVAL: unknown id. */
int gos_sched_vgpu_remove(gos_sched *s, uint32_t id, gos_sched_task **returned);

/* Takes back every queued task whose client == client (all vGPUs), as above.
 * *returned is NULL if there were none. Always GOS_OK. In-flight tasks as above. */
int gos_sched_remove_client(gos_sched *s, uint32_t client, gos_sched_task **returned);

/* Takes one queued task back (e.g. its client gave up). GOS_EBUSY if it is in
 * flight, GOS_EINVAL if it is not queued here. */
int gos_sched_cancel(gos_sched *s, gos_sched_task *t);

/* Queues a task of vGPU t->vgpu. Errors: GOS_EINVAL (unknown vGPU, bad kind, task
 * already queued). After a submit (and after a done) the caller should call
 * gos_sched_next() for every idle engine: BAND may be holding an engine for exactly
 * this vGPU, and in MRQ a client's request on one engine ends a hold for that
 * client on the other. */
int gos_sched_submit(gos_sched *s, gos_sched_task *t, uint64_t now_ns);

/* Picks the task to run now on `engine`, marks it in flight and returns it, or
 * returns NULL: nothing queued, the engine is busy, every queued vGPU is capped, or
 * BAND holds the engine for a vGPU that just completed a task. With NULL, *wake_ns
 * (if wake_ns != NULL) is the time at which to call again even if nothing else
 * happens (end of BAND's wait, the next period for capped vGPUs), or
 * GOS_SCHED_NEVER; the caller must also call again after any submit or done.
 * With a task, *wake_ns is GOS_SCHED_NEVER. */
gos_sched_task *gos_sched_next(gos_sched *s, int engine, uint64_t now_ns, uint64_t *wake_ns);

/* Reports that in-flight task t finished at now_ns, having used gpu_ns of GPU time
 * (measured by the caller, e.g. with events; 0 if unknown, then now_ns - start_ns is
 * used). Accounts it to the vGPU (if it still exists) and frees the engine; the task
 * belongs to the caller again. GOS_EINVAL if t is not in flight. */
int gos_sched_done(gos_sched *s, gos_sched_task *t, uint64_t gpu_ns, uint64_t now_ns);

/* Accounts gpu_ns of GPU time (n requests) of kind to vGPU vgpu at now_ns without
 * a task's completion: a ring grant's time while it runs (issue 22), debited
 * from the vGPU's credit too (Credit, BAND), as a completion's is.
 * GOS_EINVAL: unknown vGPU or kind. */
int gos_sched_charge(gos_sched *s, uint32_t vgpu, int kind, uint64_t gpu_ns, uint64_t n, uint64_t now_ns);

/* Whether the policy would serve the vGPU of engine's running task again before
 * every vGPU with work queued there (BAND; false under the others, and when
 * nothing runs). */
bool gos_sched_keeps(gos_sched *s, int engine, uint64_t now_ns);

/* Nothing waited for engine until now_ns while its running task ran (a ring
 * grant kept while its client is alone on the device, serve/ring.c): the
 * task's length, as the longest task lately counts it (BAND's holds, the
 * credit's bound), starts again from now_ns. A lone client's grant kept for
 * seconds is not a task that keeps anyone waiting for seconds. */
void gos_sched_nobody_waits(gos_sched *s, int engine, uint64_t now_ns);

/* The task in flight on an engine, or NULL. */
gos_sched_task *gos_sched_running(const gos_sched *s, int engine);

/* Number of vGPUs and their ids (ids[] gets up to max entries, in insertion order). */
int gos_sched_vgpu_count(const gos_sched *s);
int gos_sched_vgpu_ids(const gos_sched *s, uint32_t *ids, int max);

/* Figures of vGPU id at now_ns (see gos_sched_vgpu_stats). GOS_EINVAL: unknown id. */
int gos_sched_vgpu_stats_get(gos_sched *s, uint32_t id, uint64_t now_ns,
                             gos_sched_vgpu_stats *out);

/* Total queued tasks (all vGPUs, all engines). */
uint32_t gos_sched_queued(const gos_sched *s);

#endif
