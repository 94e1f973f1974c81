/* SPDX-License-Identifier: Apache-2.0 */
/* exec_run.c: an executor's device work (executor process only;
 * exec_internal.h). Both ways a client's operations arrive end in the one
 * runner, gos_op_issue (exec_op.h):
 *   - X_RUN, a grant of the daemon's scheduler: a batch between two events on
 *     the engine's stream, answered with each op's result and the GPU time
 *     (the daemon charges it to the vGPU);
 *   - one ring entry (issue 9.4), checked here as the daemon checks a socket
 *     request, since the client wrote it.
 * A sticky device error (an illegal address, a kernel fault) is answered with
 * X_FAULTED and ends the process: only this client's context dies.
 * Process: the executor (gpuos executor). */
#include "exec/exec_internal.h"

#include "common/clock.h"
#include "common/status.h"
#include "device/exec_builtin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The message a client hears of a device error (msg, the CUDA error) that
 * left the context dead: as is, unless its channel is one of a shared
 * executor's (executor = per-vgpu). One context: the sticky error meets whichever client
 * syncs first, so no channel can tell whose work faulted, and every client
 * hears the daemon's one reason for all (serve/executor.c's share_reason), not
 * a bare fault it need not have caused (t_xshare saw the bare error when a
 * sibling's copy met the fault first). buf (n bytes) holds the new one. */
const char *xe_fault_msg(struct xe *x, const char *msg, char *buf, size_t n)
{
    if (!x->shared)
        return msg;
    static const char head[] = "the executor its clients share (executor = per-vgpu) was lost: ";
    int keep = n > sizeof head ? (int)(n - sizeof head) : 0; /* the error's name comes first: its tail may go */
    snprintf(buf, n, "%s%.*s", head, keep, msg);
    return buf;
}

int xe_answer(struct xe *x, uint32_t type, int rc, uint32_t flags, const void *p, uint32_t n)
{
    /* an error answer carries its message as the payload */
    char buf[X_MSG_MAX];
    const char *msg = rc ? gos_last_error() : NULL;
    if (rc == GOS_EDEVICE && x->shared && !xe_alive(x))
        msg = xe_fault_msg(x, msg, buf, sizeof buf);
    struct x_hdr h = {type, msg ? (uint32_t)strlen(msg) + 1 : n, rc, flags};
    return x_send(x->sock, &h, msg ? msg : p, -1);
}

/* How many entries may be on the device ahead of the ring: about
 * XE_RING_AHEAD_NS of work, but never fewer than two, so that the next kernel
 * is always queued behind the running one (with one, each kernel longer than
 * that waited for the last to end: the GPU drained between two bf16 GEMMs of
 * 1.4 ms, PyTorch's product ran at 0.93 x native alone). */
static uint32_t ring_ahead_limit(const struct xe *x)
{
    if (!x->ring_entry_ns)
        return XE_RING_AHEAD;
    uint64_t n = XE_RING_AHEAD_NS / x->ring_entry_ns;
    return n < 2 ? 2 : n > XE_RING_AHEAD_MAX ? XE_RING_AHEAD_MAX : (uint32_t)n;
}

/* n entries issued since t0 completed now: learn their time. */
static void ring_learn(struct xe *x, uint32_t n, uint64_t t0)
{
    if (!n)
        return;
    uint64_t per = (gos_ring_now_ns() - t0) / n;
    x->ring_entry_ns = x->ring_entry_ns ? (3 * x->ring_entry_ns + per) / 4 : per;
    if (!x->ring_entry_ns)
        x->ring_entry_ns = 1;
}

/* Nothing of the ring's is on the device any more. */
static void ring_ahead_reset(struct xe *x)
{
    x->ring_ahead = 0;
    x->mark_n = 0;
    x->since_mark = 0;
}

/* The stream was waited for with ring_ahead entries on it: learn their time. */
static void ring_ahead_done(struct xe *x)
{
    ring_learn(x, x->ring_ahead, x->ring_ahead_t0);
    ring_ahead_reset(x);
}

/* The look-ahead is full: wait for the oldest marks until it is not (the
 * device keeps the entries behind them queued: a client issuing kernels back
 * to back keeps the GPU busy), for the stream when no mark is left. */
static int ring_ahead_wait(struct xe *x, void *st)
{
    int rc;
    while (x->mark_n && x->ring_ahead >= ring_ahead_limit(x)) {
        struct xe_mark *m = &x->mark[x->mark_head];
        if ((rc = gos_exec_event_sync(x->dev, m->ev)))
            return rc;
        ring_learn(x, m->n, x->ring_ahead_t0);
        x->ring_ahead -= m->n;
        x->ring_ahead_t0 = m->t;
        x->mark_head = (x->mark_head + 1) % XE_RING_MARKS;
        x->mark_n--;
    }
    if (x->ring_ahead < ring_ahead_limit(x))
        return GOS_OK;
    if ((rc = gos_exec_stream_sync(x->dev, st)))
        return rc;
    ring_ahead_done(x);
    return GOS_OK;
}

/* One more asynchronous entry on the stream: a mark after every half of the
 * limit (while a slot is free; events that cannot be had leave the stream's
 * wait). */
static void ring_ahead_issued(struct xe *x, void *st)
{
    if (!x->ring_ahead++)
        x->ring_ahead_t0 = gos_ring_now_ns();
    uint32_t half = ring_ahead_limit(x) / 2;
    if (++x->since_mark < (half ? half : 1) || x->mark_n == XE_RING_MARKS)
        return;
    struct xe_mark *m = &x->mark[(x->mark_head + x->mark_n) % XE_RING_MARKS];
    if (!m->ev && gos_exec_event_create(x->dev, &m->ev))
        m->ev = NULL;
    if (m->ev && !gos_exec_event_record(x->dev, m->ev, st)) {
        m->n = x->since_mark;
        m->t = gos_ring_now_ns();
        x->mark_n++;
        x->since_mark = 0;
    }
}

/* A client's function by its handle (X_FUNCTION mapped it): *fi its index. */
static int xe_function(const struct xe *x, uint64_t h, uint32_t *fi)
{
    if (h < 1 || h > SRV_MAX_FUNCS || !x->fmap[h - 1] || x->fmap[h - 1] > (uint32_t)x->n_funcs ||
        !x->funcs[x->fmap[h - 1] - 1])
        return gos_fail(GOS_EINVAL, "function handle %llu is not a function of this client", (unsigned long long)h);
    *fi = x->fmap[h - 1] - 1;
    return GOS_OK;
}

/* A launch's function, geometry and parameters (xe_decode). */
static int decode_launch(struct xe *x, const struct gos_req *r, int ring, const unsigned char *data,
                         unsigned char *pbuf, struct gos_op *o)
{
    /* a kernel may touch any of the client's allocations (the daemon's rule,
     * swap_policy.h): with one swapped out it goes through the socket, where
     * the daemon restores them first (before issue 42 an arbitrary kernel ran
     * here on unmapped memory) */
    if (ring && x->n_evicted > 0)
        return GOS_RING_REVOKED;
    uint32_t fi = 0;
    int rc = xe_function(x, r->func, &fi);
    if (rc)
        return rc;
    /* a slot's parameters are the client's to rewrite: copied out before use */
    const void *params = ring ? memcpy(pbuf, data, r->param_bytes) : data;
    o->fn = x->funcs[fi];
    o->cfg = (struct gos_launch_cfg){.geom = r->geom, .params = params, .param_bytes = r->param_bytes};
    if (!ring || !x->fbuiltin[fi][0])
        return GOS_OK;
    struct gos_dev_range rr[GOS_LAUNCH_RANGES_MAX];
    int n = 0;
    if ((rc = gos_exec_builtin_ranges(x->fbuiltin[fi], &o->cfg, rr, &n)))
        return rc;
    for (int i = 0; i < n; i++) /* device memory, or mapped host memory at its own address */
        if (rr[i].bytes && !xe_region_reached(x, rr[i].ptr, rr[i].bytes) &&
            (rc = xe_al_check(x, rr[i].ptr, rr[i].bytes, 0, "kernel argument")))
            return rc;
    return GOS_OK;
}

/* The one decoder of a request (issue 40.1), for both ways one arrives: a
 * RUN's operation (via gos_req_run; the daemon checked what it names) and a
 * ring entry (gos_req_ring; the client wrote it: checked here as the daemon
 * checks a socket request, its device ranges against this client's
 * allocations, a built-in kernel's too). First gos_req_check with the
 * carrier's rules, then the host side resolved in this executor's own
 * mapping (inline bytes: data) and the function by the client's handle.
 * data, tail: what follows the request (a RUN's parameters; a slot's data
 * area, whose launch parameters are copied into pbuf, GOS_PARAM_MAX bytes).
 * FENCE and GATE decode to their kind alone. */
static int xe_decode(struct xe *x, const struct gos_req *r, const struct gos_req_via *via, unsigned char *data,
                     size_t tail, unsigned char *pbuf, struct gos_op *o)
{
    int ring = via == &gos_req_ring, rc = gos_req_check(r, via, tail);
    if (rc)
        return rc;
    *o = (struct gos_op){.kind = r->op, .sync = !!(r->flags & GOS_F_SYNC), .dptr = r->dptr, .dptr2 = r->dptr2,
                         .bytes = r->bytes};
    switch (r->op) {
    case GOS_OP_HTOD:
    case GOS_OP_DTOH:
    case GOS_OP_DTOD:
        if (ring && (rc = gos_range_copy(r->op == GOS_OP_DTOH, r->op == GOS_OP_DTOD, r->dptr, r->dptr2, r->bytes,
                                         xe_al_look, x, GOS_RING_REVOKED)))
            return rc;
        if (r->op == GOS_OP_DTOD)
            return GOS_OK;
        if (r->flags & GOS_F_INLINE)
            o->host = data;
        else if (!(o->host = xe_host_of(x, r->region, r->offset, r->bytes)))
            return GOS_EINVAL;
        return GOS_OK;
    case GOS_OP_LAUNCH: return decode_launch(x, r, ring, data, pbuf, o);
    default: return GOS_OK;
    }
}

int xe_alive(struct xe *x)
{
    return gos_exec_event_record(x->dev, x->ev[0][0], x->streams[0]) == GOS_OK &&
           gos_exec_event_sync(x->dev, x->ev[0][0]) == GOS_OK;
}

/* A grant: the batch between two events on the engine's stream. */
int xe_run(struct xe *x, const unsigned char *p, uint32_t len)
{
    uint32_t engine, n;
    if (len < 8)
        return xe_answer(x, X_RUN, gos_fail(GOS_EPROTO, "short RUN"), 0, NULL, 0);
    memcpy(&engine, p, 4);
    memcpy(&n, p + 4, 4);
    if (engine >= XE_ENGINES || n > 4096)
        return xe_answer(x, X_RUN, gos_fail(GOS_EPROTO, "RUN engine %u, %u ops", engine, n), 0, NULL, 0);
    size_t need = sizeof(struct x_run_rep) + 4 * (size_t)n + X_MSG_MAX;
    if (need > x->out_cap) {
        void *b = realloc(x->out, need);
        if (!b)
            return xe_answer(x, X_RUN, gos_fail(GOS_ENOMEM, "executor out of memory"), 0, NULL, 0);
        x->out = b;
        x->out_cap = need;
    }
    struct x_run_rep rep = {.n = n};
    int32_t *rcs = (int32_t *)((char *)x->out + sizeof rep);
    char *msg = (char *)(rcs + n);
    msg[0] = 0;
    void *st = x->streams[engine];
    int device_error = 0;
    struct gos_op op;
    /* Ring entries answered before they finished (launches, staged copies) run
     * on stream 0: a batch on another engine's stream waits for them, so that
     * the client's requests keep their order when the ring hands over to the
     * socket (a revoked grant). */
    if (engine != 0 && x->ring_ahead && !gos_exec_stream_sync(x->dev, x->streams[0]))
        ring_ahead_done(x);
    int rc = gos_exec_event_record(x->dev, x->ev[engine][0], st);
    size_t off = 8;
    for (uint32_t i = 0; i < n; i++) {
        struct x_op o;
        if (off + sizeof o > len) {
            rcs[i] = gos_fail(GOS_EPROTO, "truncated RUN");
            continue;
        }
        memcpy(&o, p + off, sizeof o);
        off += sizeof o;
        /* (a RUN's parameters lie in this executor's own buffer: used in place) */
        rcs[i] = rc ? rc : xe_decode(x, &o.req, &gos_req_run, (unsigned char *)p + off, len - off, NULL, &op);
        if (!rcs[i])
            rcs[i] = gos_op_issue(x->dev, &op, st);
        off += o.param_bytes < len - off ? o.param_bytes : len - off;
        if (rcs[i] && !msg[0])
            snprintf(msg, X_MSG_MAX, "%s", gos_last_error());
        device_error |= rcs[i] == GOS_EDEVICE;
    }
    if (!rc)
        rc = gos_exec_event_record(x->dev, x->ev[engine][1], st);
    if (!rc)
        rc = gos_exec_event_sync(x->dev, x->ev[engine][1]);
    if (!rc)
        rc = gos_exec_event_elapsed_ns(x->dev, x->ev[engine][0], x->ev[engine][1], &rep.gpu_ns);
    if (rc) {
        device_error |= rc == GOS_EDEVICE;
        if (!msg[0])
            snprintf(msg, X_MSG_MAX, "%s", gos_last_error());
        /* the batch's ops completed (or not) with the stream: its error is theirs */
        for (uint32_t i = 0; i < n; i++)
            if (!rcs[i])
                rcs[i] = rc;
    }
    rep.measure_rc = rc;
    uint32_t flags = device_error && !xe_alive(x) ? X_FAULTED : 0;
    memcpy(x->out, &rep, sizeof rep);
    struct x_hdr h = {X_RUN, (uint32_t)(sizeof rep + 4 * (size_t)n + strlen(msg) + 1), 0, flags};
    int s = x_send(x->sock, &h, x->out, -1);
    return flags ? GOS_EDEVICE : s;
}

/* The staging buffers of inline HtoD entries (allocated on first use); NULL
 * when pinned memory cannot be had: those entries then wait for their copy. */
static void *ring_bounce(struct xe *x)
{
    if (!x->ring_bounce && !x->bounce_refused &&
        gos_exec_host_alloc(x->dev, (size_t)XE_BOUNCE_SLOTS * GOS_RING_DATA, &x->ring_bounce)) {
        x->ring_bounce = NULL;
        x->bounce_refused = 1; /* asked once */
    }
    return x->ring_bounce;
}

/* One ring entry (issue 9.4), already copied out of the shared slot into e;
 * data is the slot's data area (shared: HtoD sources and kernel parameters
 * are copied out before they are checked or used). Decoded and checked by
 * xe_decode as a RUN's operation is, issued by the one runner on the engine
 * 0 stream, waited for unless the entry is asynchronous. GOS_OK,
 * GOS_RING_REVOKED (run it through the socket) or an error with its message;
 * *fault when the context is dead after it. */
int xe_ring_run(struct xe *x, const struct gos_ring_ent *e, unsigned char *data, uint32_t backlog, int *fault)
{
    x->ring_backlog = backlog;
    void *st = x->streams[0];
    int rc, sync = !(e->flags & GOS_F_ASYNC);
    int inline_copy = (e->op == GOS_OP_HTOD || e->op == GOS_OP_DTOH) && (e->flags & GOS_F_INLINE);
    int staged = inline_copy && e->op == GOS_OP_HTOD && ring_bounce(x);
    if (staged)
        sync = 0; /* answered once issued from the executor's own copy of the bytes */
    else if (inline_copy)
        sync = 1; /* the slot is the client's again once answered */
    *fault = 0;
    /* queued: what the client submitted and nothing has completed yet, the
     * entries behind this one and those on the device not yet waited for (the
     * socket path counts the daemon's queues the same way) */
    uint32_t queued = x->ring_backlog + x->ring_ahead;
    if (!sync && x->ring_max_queued && queued >= x->ring_max_queued)
        return gos_fail(GOS_ELIMIT, "client has %u requests queued, the maximum (max_queued_requests); synchronize",
                        (unsigned)queued);
    /* Bounded look-ahead: at most XE_RING_AHEAD asynchronous entries on the
     * device at a time, so that a revoked grant leaves little work behind it
     * (the rest comes back to the client and through the daemon's scheduler). */
    if (!sync && x->ring_ahead >= ring_ahead_limit(x) && (rc = ring_ahead_wait(x, st)))
        goto out;
    /* decoded by the one decoder, issued by the one runner (a launch's
     * parameters in params, which lives as long as o) */
    struct gos_op o;
    unsigned char params[GOS_PARAM_MAX];
    if ((rc = xe_decode(x, &e->req, &gos_req_ring, data, GOS_RING_DATA, params, &o)))
        return rc;
    if (e->op == GOS_OP_GATE) /* opened already (exec_ring.c's gate_wait): no device work */
        return xe_gate_word(x, e) ? GOS_OK : GOS_EINVAL;
    if (e->op == GOS_OP_FENCE) {
        sync = 1;
    } else {
        if (staged) {
            o.host = (char *)x->ring_bounce + (size_t)(x->bounce_next++ % XE_BOUNCE_SLOTS) * GOS_RING_DATA;
            memcpy(o.host, data, e->bytes);
        }
        rc = gos_op_issue(x->dev, &o, st);
    }
    if (!rc && sync) {
        rc = gos_exec_stream_sync(x->dev, st); /* as a native synchronous copy waits */
        if (e->op == GOS_OP_FENCE)
            ring_ahead_done(x);
        else
            ring_ahead_reset(x);
    } else if (!rc) {
        ring_ahead_issued(x, st);
    }
out:
    if (rc == GOS_EDEVICE) {
        char why[GOS_MSG_TEXT_MAX];
        snprintf(why, sizeof why, "%s", gos_last_error());
        *fault = !xe_alive(x);
        gos_fail(GOS_EDEVICE, "%s", why);
    }
    return rc;
}

int xe_ring_drain(struct xe *x)
{
    int rc = gos_exec_stream_sync(x->dev, x->streams[0]);
    if (!rc)
        ring_ahead_done(x);
    return rc;
}

int xe_ring_drained(const struct xe *x)
{
    return __atomic_load_n(&x->ring_ahead, __ATOMIC_RELAXED) == 0;
}

void xe_ring_lock(struct xe *x, int on)
{
    if (on)
        pthread_mutex_lock(&x->lock);
    else
        pthread_mutex_unlock(&x->lock);
}
