/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.c: the daemon's engines (paper 002, section 5.1). Whoever finds an
 * engine idle asks the policy for its next task, runs it on the device between two
 * events, charges the measured GPU time to the task's vGPU (gos_sched_done) and
 * answers the client:
 *   - the reader of the client that has just queued work (srv_client_dispatch),
 *     so that a synchronous request is issued to the device by the thread that
 *     received it, waited for there when it is expected to be short, and answered
 *     by the same thread: no hand-off between threads on its path (each costs a
 *     wake-up, several microseconds on bare metal and tens in a VM);
 *   - one dispatcher thread per scheduler engine (MRQ: compute and copy; SDQ: one)
 *     for everything else: the next task after a completion, work released by a
 *     completion, the wait for long tasks, BAND's timed holds.
 * The policy alone decides which task runs next whoever asks, and at most one task
 * is in flight per engine, so scheduling and accounting are the same either way.
 *
 * A client's tasks run in submission order: a task is handed to the scheduler
 * only when no task of the other kind of that client is still queued or running
 * (same-kind tasks queue behind each other in the policy's per-vGPU FIFO).
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/dispatch.h"
#include "serve/ring.h"
#include "serve/region.h"
#include "device/exec_ops.h"
#include "serve/executor.h"

#include "common/clock.h"
#include "common/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/wire.h"


static struct srv_dev *dev_of(struct srv_client *c)
{
    return &c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device];
}

static void task_finish(struct srv_task *t, int rc, const char *msg, uint64_t gpu_ns);


void srv_client_release(struct srv_client *c)
{
    struct srv_dev *d = dev_of(c);
    while (c->pending_head) {
        struct srv_task *t = c->pending_head;
        if (c->released_n > 0 && c->released_kind != t->st.kind)
            break;
        c->pending_head = t->next;
        if (!c->pending_head)
            c->pending_tail = NULL;
        t->next = NULL;
        t->released = 1;
        c->released_n++;
        c->released_kind = t->st.kind;
        if (gos_sched_submit(d->sched, &t->st, gos_now_ns())) {
            /* Cannot happen with a valid vGPU; fail the task rather than lose it
             * (task_finish releases the rest of the client's queue itself). */
            char why[GOS_MSG_TEXT_MAX];
            snprintf(why, sizeof why, "scheduler refused the task: %s", gos_last_error());
            task_finish(t, GOS_EDEVICE, why, 0);
            return;
        }
        c->kick = 1;
        srv_ring_preempt(d, t); /* a latency vGPU's work ends a batch grant (issue 41) */
    }
}

int srv_client_batch_open(struct srv_client *c)
{
    struct srv_task *t = c->last_task;
    if (!t || t->dispatched || t->n_ops == 0 || (t->ops[0].req.flags & GOS_F_DIRECT) || t->n_ops >= SRV_BATCH_MAX_OPS)
        return 0;
    uint64_t per = c->op_ns[t->st.kind];
    return per > 0 && (uint64_t)(t->n_ops + 1) * per <= srv_grant_limit(dev_of(c)) &&
           (t->st.kind != GOS_SCHED_COPY || t->bytes < SRV_BATCH_MAX_BYTES);
}

static struct srv_task *task_new(struct srv_client *c, int kind, int priority);

int srv_ring_queue(struct srv_client *c)
{
    int kind = atomic_load(&c->gp->want) == GOS_GRANT_COPY ? GOS_SCHED_COPY : GOS_SCHED_COMPUTE;
    struct srv_task *t = task_new(c, kind, 0);
    if (!t)
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    t->ring = 1;
    c->ring_queued = 1;
    c->ring_task = t;
    srv_client_release(c);
    return GOS_OK;
}

static struct srv_task *task_new(struct srv_client *c, int kind, int priority)
{
    struct srv_task *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->c = c;
    t->st.user = t;
    t->st.client = c->id;
    t->st.vgpu = (uint32_t)c->vgpu;
    t->st.kind = kind;
    t->st.priority = priority;
    if (!c->worked) { /* its first: it shares the device from now on */
        c->worked = 1;
        srv_ring_rotation(c->srv, c->srv->vgpus[c->vgpu].cfg.device);
    }
    c->refs++;
    c->outstanding++;
    if (c->pending_tail)
        c->pending_tail->next = t;
    else
        c->pending_head = t;
    c->pending_tail = t;
    return t;
}

int srv_op_submit(struct srv_client *c, int kind, int priority, const struct srv_op *op)
{
    struct srv_task *t = c->last_task;
    int grow = t && !t->dispatched && t->n_ops > 0 && t->st.kind == kind && t->st.priority == priority &&
               !(op->req.flags & GOS_F_DIRECT) && !(t->ops[0].req.flags & GOS_F_DIRECT) &&
               t->n_ops < SRV_BATCH_MAX_OPS && c->op_ns[kind] > 0 &&
               (uint64_t)(t->n_ops + 1) * c->op_ns[kind] <= srv_grant_limit(dev_of(c)) &&
               (kind != GOS_SCHED_COPY || t->bytes + op->req.bytes <= SRV_BATCH_MAX_BYTES);
    if (!grow) {
        t = task_new(c, kind, priority);
        if (!t)
            return gos_fail(GOS_ENOMEM, "daemon out of host memory");
        c->last_task = t;
    }
    if (t->n_ops == t->cap_ops) {
        int cap = t->cap_ops ? 4 * t->cap_ops : 1;
        struct srv_op *o = realloc(t->ops, sizeof *o * (size_t)cap);
        if (!o) {
            if (!grow) /* a new, empty task runs as a no-op */
                srv_client_release(c);
            return gos_fail(GOS_ENOMEM, "daemon out of host memory");
        }
        t->ops = o;
        t->cap_ops = cap;
    }
    t->ops[t->n_ops++] = *op;
    t->bytes += op->req.bytes; /* (a launch's are 0: gos_req_check) */
    c->queued_ops++;
    c->queued_bytes += sizeof *op + op->req.param_bytes;
    if (op->region >= 0)
        c->regions[op->region].refs++;
    if (!grow)
        srv_client_release(c);
    return GOS_OK;
}

static void answer_syncs(struct srv_client *c)
{
    if (c->outstanding || !c->n_sync)
        return;
    for (int i = 0; i < c->n_sync; i++)
        if (gos_wire_reply(c->fd, 1, c->sync_seq[i], GOS_MSG_SYNC, c->sticky_rc, c->sticky_msg, NULL, 0)) {
            c->dead = 1;
            shutdown(c->fd, SHUT_RDWR);
        }
    c->n_sync = 0;
    c->sticky_rc = 0;
    c->sticky_msg[0] = 0;
}

/* A task left the scheduler (completed, or cancelled: rc != 0 for every op
 * without its own result; lock held). Answers each op in order. */
static void task_finish(struct srv_task *t, int rc, const char *msg, uint64_t gpu_ns)
{
    struct srv_client *c = t->c;
    struct srv *s = c->srv;
    if (gpu_ns > 0 && t->n_ops > 0) {
        uint64_t per = gpu_ns / (uint64_t)t->n_ops, *e = &c->op_ns[t->st.kind];
        *e = *e ? (3 * *e + per) / 4 : per;
    }
    c->outstanding--;
    if (t->released)
        c->released_n--;
    if (c->last_task == t)
        c->last_task = NULL;
    if (c->ring_task == t) /* (a grant task dropped unrun: its client or vGPU went away) */
        c->ring_task = NULL;
    for (int i = 0; i < t->n_ops; i++) {
        struct srv_op *o = &t->ops[i];
        int orc = rc ? rc : o->rc;
        const char *omsg = rc ? msg : (o->msg ? o->msg : "");
        if (o->region >= 0)
            srv_region_unref(c, o->region);
        if (!orc)
            s->vgpus[c->vgpu].tasks++;
        if (!c->dead) {
            if (!(o->req.flags & GOS_F_ASYNC)) {
                if (gos_wire_reply(c->fd, 1, o->seq, o->req_type, orc, omsg, NULL, 0)) {
                    c->dead = 1;
                    shutdown(c->fd, SHUT_RDWR);
                }
            } else if (orc && !c->sticky_rc) {
                c->sticky_rc = orc;
                snprintf(c->sticky_msg, sizeof c->sticky_msg, "%s", omsg);
            }
        }
        c->queued_ops--;
        c->queued_bytes -= sizeof *o + o->req.param_bytes;
        free(o->params);
        free(o->msg);
    }
    srv_client_exec_check(c);
    if (!c->dead) {
        srv_client_release(c);
        answer_syncs(c);
    }
    free(t->ops);
    free(t);
    pthread_cond_broadcast(&s->idle);
    srv_client_unref(c);
}

void srv_client_cancel(struct srv_client *c)
{
    struct srv_dev *d = dev_of(c);
    gos_sched_task *back = NULL;
    gos_sched_remove_client(d->sched, c->id, &back);
    while (back) {
        gos_sched_task *nx = back->next;
        task_finish(back->user, GOS_EIO, "client gone", 0);
        back = nx;
    }
    while (c->pending_head) {
        struct srv_task *t = c->pending_head;
        c->pending_head = t->next;
        task_finish(t, GOS_EIO, "client gone", 0);
    }
    c->pending_tail = NULL;
}

/* A task granted to the client's executor (isolation = process): its ops go in
 * one message, run there back to back between two events, and come back with
 * each op's result and the GPU time (lock not held). */
static int issue_remote(struct srv_exec *x, int engine, struct srv_task *t, uint64_t *gpu_ns)
{
    size_t bytes = 0;
    for (int i = 0; i < t->n_ops; i++)
        bytes += sizeof(struct x_op) + t->ops[i].req.param_bytes;
    unsigned char *buf = malloc(bytes ? bytes : 1);
    int32_t *rcs = malloc(sizeof *rcs * (size_t)t->n_ops);
    if (!buf || !rcs) {
        free(buf);
        free(rcs);
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    }
    size_t off = 0;
    for (int i = 0; i < t->n_ops; i++) {
        const struct srv_op *o = &t->ops[i];
        struct x_op xo = {.req = o->req}; /* the request as the client sent it (issue 40.1) */
        memcpy(buf + off, &xo, sizeof xo);
        off += sizeof xo;
        if (o->req.param_bytes)
            memcpy(buf + off, o->params, o->req.param_bytes);
        off += o->req.param_bytes;
    }
    char msg[GOS_MSG_TEXT_MAX];
    uint64_t t0 = gos_now_ns();
    int rc = srv_exec_run(x, engine, buf, (uint32_t)bytes, (uint32_t)t->n_ops, rcs, msg, sizeof msg, gpu_ns);
    t->wall_ns = gos_now_ns() - t0;
    /* a fault in a shared executor: its one reason (executor.c), not the op's
     * bare CUDA error, which any client of the context may have met first */
    const char *omsg = x->dead && x->share ? x->why : msg;
    for (int i = 0; !rc && i < t->n_ops; i++)
        if ((t->ops[i].rc = rcs[i]))
            t->ops[i].msg = strdup(omsg);
    free(buf);
    free(rcs);
    return rc;
}

/* Issues a task's ops on the engine's stream back to back between two events
 * (lock not held). *waiting = 1: the completion remains to be awaited (await);
 * else the task is over and *gpu_ns is its time. Each op keeps its own result;
 * the return value is a failure of the measurement itself (then *gpu_ns = 0). */
static int issue(struct srv_dev *d, int engine, struct srv_task *t, uint64_t *gpu_ns, int *waiting)
{
    *waiting = 0;
    *gpu_ns = 0;
    if (t->ring) { /* a ring's grant: the executor runs it (ring.c) */
        srv_ring_issue(d, t);
        *waiting = 1;
        return GOS_OK;
    }
    if (t->n_ops == 0)
        return GOS_OK;
    if (t->c->x)
        return issue_remote(t->c->x, engine, t, gpu_ns);
    struct srv_op *o0 = &t->ops[0];
    if (t->n_ops == 1 && (o0->req.flags & GOS_F_SYNC)) {
        /* A small copy from host memory the driver could not pin (paper 002,
         * section 4.1, "direct I/O"): the driver's synchronous copy, timed on the
         * CPU. Pinned memory (every region normally) takes the path below: the
         * asynchronous copy straight from the client's shared pages, then the
         * same polling wait as any task. */
        uint64_t t0 = gos_now_ns();
        o0->rc = gos_op_issue(d->dev, &o0->dev, NULL);
        if (o0->rc)
            o0->msg = strdup(gos_last_error());
        *gpu_ns = gos_now_ns() - t0;
        return GOS_OK;
    }
    void *st = d->streams[engine];
    int rc = gos_exec_event_record(d->dev, d->ev[engine][0], st);
    if (rc)
        return rc;
    for (int i = 0; i < t->n_ops; i++) {
        struct srv_op *o = &t->ops[i];
        if ((o->rc = gos_op_issue(d->dev, &o->dev, st)))
            o->msg = strdup(gos_last_error());
    }
    if ((rc = gos_exec_event_record(d->dev, d->ev[engine][1], st)))
        return rc;
    *waiting = 1;
    return GOS_OK;
}

/* Waits for the task issued on the engine and measures it (lock not held). */
static int await(struct srv_dev *d, int engine, struct srv_task *t, uint64_t *gpu_ns)
{
    int rc;
    if (t->ring) {
        uint64_t busy = 0;
        rc = srv_ring_await(d, t, gpu_ns, &busy);
        t->ring_busy = busy; /* the executor's running time (grant_us = auto learns the rest) */
        return rc;
    }
    if ((rc = gos_exec_event_sync(d->dev, d->ev[engine][1])) ||
        (rc = gos_exec_event_elapsed_ns(d->dev, d->ev[engine][0], d->ev[engine][1], gpu_ns)))
        *gpu_ns = 0;
    return rc;
}

/* Whether a task is expected to end soon enough for its issuer to wait for it
 * rather than go back to reading its client's socket: copies by size, kernels by
 * the client's recent GPU time per launch (unknown: not short). */
static int expect_short(const struct srv_task *t)
{
    if (t->st.kind == GOS_SCHED_COPY)
        return t->bytes <= SRV_INLINE_WAIT_BYTES;
    uint64_t per = t->c->op_ns[t->st.kind];
    return per > 0 && per * (uint64_t)t->n_ops <= SRV_INLINE_WAIT_NS;
}

/* The next task of an idle engine from the policy, now in flight (lock held). */
static struct srv_task *take(struct srv_dev *d, int engine, uint64_t *wake)
{
    *wake = GOS_SCHED_NEVER;
    if (d->srv->stop || gos_sched_running(d->sched, engine))
        return NULL;
    gos_sched_task *st = gos_sched_next(d->sched, engine, gos_now_ns(), wake);
    if (!st)
        return NULL;
    struct srv_task *t = st->user;
    t->dispatched = 1; /* the batch is closed from here on */
    return t;
}

/* Gives a task in flight to the engine's dispatcher (lock held). */
static void hand(struct srv_dev *d, int engine, struct srv_task *t, int issued)
{
    d->handed[engine] = t;
    d->handed_issued[engine] = issued;
    pthread_cond_signal(&d->cond[engine]);
}

/* A grant task's end for its ring (lock held). */
static void ring_task_end(struct srv_task *t, int rc)
{
    struct srv_client *c = t->c;
    c->ring_queued = 0;
    if (c->ring_task == t)
        c->ring_task = NULL;
    atomic_store(&c->ring_end, 0);
    srv_ring_charge(c);
    /* entries left at the grant's end: the next grant is queued at once */
    if (!rc && !c->dead && c->gp && atomic_load(&c->gp->want) && !c->x->dead)
        srv_ring_queue(c);
}

/* A task's end (lock held): accounts it and answers its client. */
static void complete(struct srv_dev *d, struct srv_task *t, int rc, const char *msg, uint64_t gpu_ns)
{
    if (t->c->x && t->n_ops > 0)
        srv_grant_learn(d, t->c->x->pid, rc ? 0 : t->wall_ns, gpu_ns);
    if (t->ring) {
        struct srv_client *c = t->c;
        /* the executor's own measure of the GPU's switch when it has one (a
         * context switch hides inside the first synchronisation's wait, which
         * counts as busy), else the grant's time beyond its running time */
        uint64_t sw = c->gp && atomic_load(&c->gp->switch_gen) == atomic_load(&c->gp->done_gen)
                          ? atomic_load(&c->gp->switch_ns) : 0;
        if (sw)
            srv_grant_learn(d, c->x->pid, rc ? 0 : sw + 1, 1);
        else
            srv_grant_learn(d, c->x->pid, rc ? 0 : t->wall_ns, t->ring_busy);
        ring_task_end(t, rc);
    }
    gos_sched_done(d->sched, &t->st, gpu_ns, gos_now_ns());
    task_finish(t, rc, msg, gpu_ns);
}

void srv_ring_companion_done(struct srv_task *t, int rc)
{
    ring_task_end(t, rc);
    task_finish(t, rc, rc ? gos_last_error() : "", 0);
}

/* complete() with this thread's last error as the message when rc says one
 * (copied first: accounting may fail and overwrite it). */
static void complete_rc(struct srv_dev *d, struct srv_task *t, int rc, uint64_t gpu_ns)
{
    char msg[GOS_MSG_TEXT_MAX] = "";
    if (rc)
        snprintf(msg, sizeof msg, "%s", gos_last_error());
    complete(d, t, rc, msg, gpu_ns);
}

void srv_dev_kick(struct srv_dev *d, int skip)
{
    for (int e = 0; e < d->n_engines; e++) {
        if (e == skip)
            continue;
        uint64_t wake;
        struct srv_task *t = take(d, e, &wake);
        if (t)
            hand(d, e, t, 0);
        else if (wake != GOS_SCHED_NEVER && d->sleep_until[e] && wake < d->sleep_until[e])
            pthread_cond_signal(&d->cond[e]);
    }
}

/* The type of the next message waiting in fd (peeked), 0 when something else
 * (a partial header, the end of the stream) is there, -1 when nothing is. */
static int next_type(int fd)
{
    struct gos_msg_hdr h;
    ssize_t n = recv(fd, &h, sizeof h, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0)
        return -1;
    return n == (ssize_t)sizeof h && h.magic == GOS_PROTO_MAGIC ? h.type : 0;
}

/* Whether the client waits for a reply from this task: one of its ops is
 * synchronous, or a SYNC waits for it. */
static int awaited(const struct srv_task *t)
{
    if (t->c->n_sync > 0)
        return 1;
    for (int i = 0; i < t->n_ops; i++)
        if (!(t->ops[i].req.flags & GOS_F_ASYNC))
            return 1;
    return 0;
}

/* Runs task t of engine e on the reader of client r (lock held, dropped
 * meanwhile). Its ops are issued here. The reader then waits for the task itself
 * when nothing else needs it: its client waits for this very task (nothing more
 * to read, or only the SYNC that waits for it), or the task is short and nothing
 * more has come; otherwise (more requests to read, or a long task nobody waits
 * for yet) the engine's dispatcher waits for it, and the reader reads on, so that
 * a stream of asynchronous requests is still read and batched while the device
 * runs the previous batch. */
static void run_here(struct srv_client *r, struct srv_dev *d, int e, struct srv_task *t)
{
    struct srv *s = d->srv;
    if (t->ring) { /* a grant lasts up to grant_us: the dispatcher's */
        hand(d, e, t, 0);
        return;
    }
    int sh = expect_short(t), mine = t->c == r, aw = awaited(t);
    /* A long task of an executor (its exchange blocks until the end): the
     * dispatcher's, unless this reader's client waits for it (a synchronous
     * request with nothing else sent, or a SYNC next in its socket): then no
     * hand-off between threads on its path. */
    if (!sh && t->c->x) {
        int nx = next_type(r->fd);
        if (!(mine && (nx == GOS_MSG_SYNC || (aw && nx < 0)))) {
            hand(d, e, t, 0);
            return;
        }
    }
    if (!sh && !t->c->x && t->n_ops == 1 && (t->ops[0].req.flags & GOS_F_SYNC)) {
        hand(d, e, t, 0); /* a long blocking copy: the dispatcher's */
        return;
    }
    pthread_mutex_unlock(&s->lock);
    uint64_t gpu_ns = 0;
    int waiting = 0;
    int rc = issue(d, e, t, &gpu_ns, &waiting);
    if (!rc && waiting) {
        int nx = next_type(r->fd), here;
        if (nx == GOS_MSG_SYNC)
            here = mine || sh;
        else if (nx >= 0)
            here = 0;
        else
            here = sh || (mine && aw);
        if (!here) {
            pthread_mutex_lock(&s->lock);
            if (!s->stop) { /* the dispatcher waits for it; at shutdown it may be gone */
                hand(d, e, t, 1);
                return;
            }
            pthread_mutex_unlock(&s->lock);
        }
        rc = await(d, e, t, &gpu_ns);
    }
    pthread_mutex_lock(&s->lock);
    complete_rc(d, t, rc, gpu_ns);
}

void srv_client_dispatch(struct srv_client *c)
{
    struct srv_dev *d = dev_of(c);
    c->kick = 0;
    for (int e = 0; e < d->n_engines; e++) {
        uint64_t wake;
        struct srv_task *t = take(d, e, &wake);
        if (t)
            run_here(c, d, e, t);
        else if (wake != GOS_SCHED_NEVER && d->sleep_until[e] && wake < d->sleep_until[e])
            pthread_cond_signal(&d->cond[e]);
    }
    srv_dev_kick(d, -1); /* what completions released, and the engines they freed */
}

void *srv_dispatch_main(void *arg)
{
    struct srv_engine_arg *a = arg;
    struct srv_dev *d = a->d;
    struct srv *s = d->srv;
    int engine = a->engine;
    free(a);
    /* Timed waits (BAND's hold, the simulated device's completions) must end on
     * time: the default 50 us timer slack would add to them. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        struct srv_task *t = d->handed[engine];
        int issued = 0;
        uint64_t wake = GOS_SCHED_NEVER;
        if (t) {
            issued = d->handed_issued[engine];
            d->handed[engine] = NULL; /* in flight: completed even while stopping */
        } else if (s->stop)
            break;
        else
            t = take(d, engine, &wake);
        if (!t) {
            uint64_t until = gos_now_ns() + 50000000ull;
            if (wake < until)
                until = wake;
            /* The condition variables run on the monotonic clock (gos_cond_init). */
            struct timespec ts = gos_at_ns(until);
            d->sleep_until[engine] = until;
            pthread_cond_timedwait(&d->cond[engine], &s->lock, &ts);
            d->sleep_until[engine] = 0;
            continue;
        }
        pthread_mutex_unlock(&s->lock);
        uint64_t gpu_ns = 0;
        int waiting = issued, rc = GOS_OK;
        if (!issued)
            rc = issue(d, engine, t, &gpu_ns, &waiting);
        if (!rc && waiting)
            rc = await(d, engine, t, &gpu_ns);
        pthread_mutex_lock(&s->lock);
        complete_rc(d, t, rc, gpu_ns);
        srv_dev_kick(d, engine); /* this engine: the loop asks for its next task */
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}
