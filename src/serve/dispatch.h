/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.h: a client's requests as the scheduler's tasks (struct srv_op,
 * struct srv_task) and the engines that run them (dispatch.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_DISPATCH_H
#define GOS_SERVE_DISPATCH_H

#include "exec/exec_op.h"
#include "proto/req.h"
#include "sched/sched.h"

#include <stdint.h>

struct srv_client;
struct srv_dev;

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
    /* a latency companion (handover = beside, ring.c): its grant ends by this
     * (the device's grant length from its start) however far the grant beside
     * it is moved on, so that it goes back through the policy (0: a pair's
     * companion, which lasts as long as the grant beside it) */
    uint64_t co_until;
    uint64_t co_t0; /* a companion's start (the grant log's line at its end) */
    /* what of its wall time is not charged: the GPU's switch to its executor
     * after another's (the device's measured switch_ns, at most a quarter of
     * the grant; issue 41: a 10 % vGPU's 2 ms grants each paid a 250 us
     * switch, a share delivered at 74-84 %) */
    uint64_t ring_free;
    int closing; /* its dispatcher is ending it: no companion joins (ring.c) */
};

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

/* dispatch.c: a grant task for c's ring, queued (lock held). */
int srv_ring_queue(struct srv_client *c);

/* dispatch.c: a companion grant's end (lock held): its ring's bookkeeping and
 * its client's answer, as a completed grant's, without the scheduler. */
void srv_ring_companion_done(struct srv_task *t, int rc);

#endif
