/* dispatch.c: the daemon's engines (paper 002, section 5.1). One thread per
 * scheduler engine and device (MRQ: compute and copy; SDQ: one) asks the policy
 * for the next task, runs it on the device between two events, charges the
 * measured GPU time to the task's vGPU (gos_sched_done) and answers the client.
 *
 * A client's tasks run in submission order: a task is handed to the scheduler
 * only when no task of the other kind of that client is still queued or running
 * (same-kind tasks queue behind each other in the policy's per-vGPU FIFO). */
#include "serve/serve.h"

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

uint64_t srv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
        if (gos_sched_submit(d->sched, &t->st, srv_now_ns())) {
            /* Cannot happen with a valid vGPU; fail the task rather than lose it
             * (task_finish releases the rest of the client's queue itself). */
            char why[GOS_MSG_TEXT_MAX];
            snprintf(why, sizeof why, "scheduler refused the task: %s", gos_last_error());
            task_finish(t, GOS_EDEVICE, why, 0);
            return;
        }
        pthread_cond_broadcast(&d->cond);
    }
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
               !op->direct && !t->ops[0].direct && t->n_ops < SRV_BATCH_MAX_OPS && c->op_ns[kind] > 0 &&
               (uint64_t)(t->n_ops + 1) * c->op_ns[kind] <= SRV_BATCH_MAX_NS &&
               (kind != GOS_SCHED_COPY || t->bytes + op->bytes <= SRV_BATCH_MAX_BYTES);
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
    t->bytes += op->bytes;
    if (op->region >= 0)
        c->regions[op->region].refs++;
    if (!grow)
        srv_client_release(c);
    return GOS_OK;
}

static void region_unref(struct srv_client *c, int r)
{
    struct srv_region *g = &c->regions[r];
    if (--g->refs == 0 && g->deleted) {
        struct srv_dev *d = dev_of(c);
        if (g->pinned)
            d->x->host_unregister(d->dev, g->ptr);
        munmap(g->ptr, g->bytes);
        close(g->fd);
        memset(g, 0, sizeof *g);
    }
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
    for (int i = 0; i < t->n_ops; i++) {
        struct srv_op *o = &t->ops[i];
        int orc = rc ? rc : o->rc;
        const char *omsg = rc ? msg : (o->msg ? o->msg : "");
        if (o->region >= 0)
            region_unref(c, o->region);
        if (!orc)
            s->vgpus[c->vgpu].tasks++;
        if (!c->dead) {
            if (!o->async) {
                if (gos_wire_reply(c->fd, 1, o->seq, o->req_type, orc, omsg, NULL, 0)) {
                    c->dead = 1;
                    shutdown(c->fd, SHUT_RDWR);
                }
            } else if (orc && !c->sticky_rc) {
                c->sticky_rc = orc;
                snprintf(c->sticky_msg, sizeof c->sticky_msg, "%s", omsg);
            }
        }
        free(o->params);
        free(o->msg);
    }
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

static int run_op(struct srv_dev *d, struct srv_op *o, void *st)
{
    const struct gos_exec_ops *x = d->x;
    switch (o->op) {
    case OP_HTOD: return x->copy_htod(d->dev, o->dptr, o->host, o->bytes, st);
    case OP_DTOH: return x->copy_dtoh(d->dev, o->host, o->dptr, o->bytes, st);
    case OP_DTOD: return x->copy_dtod(d->dev, o->dptr, o->dptr2, o->bytes, st);
    default: return x->launch(d->dev, o->fn, &o->cfg, st);
    }
}

/* Runs a task's ops back to back between two events; each op keeps its own
 * result. Returns a failure of the measurement itself (then *gpu_ns = 0). */
static int execute(struct srv_dev *d, int engine, struct srv_task *t, uint64_t *gpu_ns)
{
    const struct gos_exec_ops *x = d->x;
    if (t->n_ops == 0) {
        *gpu_ns = 0;
        return GOS_OK;
    }
    struct srv_op *o0 = &t->ops[0];
    if (t->n_ops == 1 && o0->direct && o0->op != OP_DTOD) {
        /* Small copies (paper 002, section 4.1, "direct I/O"): one synchronous
         * driver copy, which for small sizes the driver pushes inline, timed on
         * the CPU; no events, no stream round trip. */
        uint64_t t0 = srv_now_ns();
        o0->rc = o0->op == OP_HTOD ? x->copy_htod_sync(d->dev, o0->dptr, o0->host, o0->bytes)
                                   : x->copy_dtoh_sync(d->dev, o0->host, o0->dptr, o0->bytes);
        if (o0->rc)
            o0->msg = strdup(gos_last_error());
        *gpu_ns = srv_now_ns() - t0;
        return GOS_OK;
    }
    void *st = d->streams[engine], *e0 = d->ev[engine][0], *e1 = d->ev[engine][1];
    int rc = x->event_record(d->dev, e0, st);
    if (rc)
        return rc;
    for (int i = 0; i < t->n_ops; i++) {
        struct srv_op *o = &t->ops[i];
        if ((o->rc = run_op(d, o, st)))
            o->msg = strdup(gos_last_error());
    }
    if ((rc = x->event_record(d->dev, e1, st)) || (rc = x->event_sync(d->dev, e1)) ||
        (rc = x->event_elapsed_ns(d->dev, e0, e1, gpu_ns)))
        *gpu_ns = 0;
    return rc;
}

void *srv_dispatch_main(void *arg)
{
    struct srv_engine_arg *a = arg;
    struct srv_dev *d = a->d;
    struct srv *s = d->srv;
    int engine = a->engine;
    free(a);
    /* Completion is noticed by sleeping until the work's end: the default 50 us
     * timer slack would add to every dispatch (and skew short-kernel accounting). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        uint64_t now = srv_now_ns(), wake = GOS_SCHED_NEVER;
        gos_sched_task *st = gos_sched_next(d->sched, engine, now, &wake);
        if (!st) {
            uint64_t until = now + 50000000ull;
            if (wake != GOS_SCHED_NEVER && wake < until)
                until = wake;
            /* The condition variable runs on CLOCK_MONOTONIC (server.c). */
            struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
                                  .tv_nsec = (long)(until % 1000000000ull)};
            pthread_cond_timedwait(&d->cond, &s->lock, &ts);
            continue;
        }
        struct srv_task *t = st->user;
        t->dispatched = 1; /* the batch is closed from here on */
        pthread_mutex_unlock(&s->lock);
        uint64_t gpu_ns = 0;
        int rc = execute(d, engine, t, &gpu_ns);
        char msg[GOS_MSG_TEXT_MAX] = "";
        if (rc)
            snprintf(msg, sizeof msg, "%s", gos_last_error());
        pthread_mutex_lock(&s->lock);
        gos_sched_done(d->sched, st, gpu_ns, srv_now_ns());
        task_finish(t, rc, msg, gpu_ns);
        pthread_cond_broadcast(&d->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}
