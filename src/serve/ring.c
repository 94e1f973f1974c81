/* SPDX-License-Identifier: Apache-2.0 */
/* ring.c: the daemon's side of the fast path (issue 9.4; proto/ring_shm.h), for
 * every client of a device at once (issue 22), with grants the client cannot
 * forge (issue 23.1).
 *
 * The daemon keeps scheduling. A ring runs only while its executor holds a
 * grant, and grants live in the ring's grant page (proto/xproto.h), which the
 * daemon makes and maps with the executor alone: whatever the client writes
 * into its ring, nothing there is obeyed or charged. A grant is a task of the
 * device's scheduler (BAND, Credit, FIFO alike): an executor whose ring holds
 * entries and no grant raises want and rings the device's doorbell; the bell's
 * thread queues a grant task for it; the compute engine's dispatcher, when the
 * policy picks it, issues the grant (a generation and a deadline grant_ns
 * ahead) and waits on the page until the executor yields: at the deadline when
 * other work waits (else the deadline moves on), or when its ring stayed empty
 * for SRV_RING_IDLE_YIELD_US while other clients share the device. The task is
 * charged the grant's wall time: the GPU was that tenant's meanwhile. Hand-over
 * is through the page's words and futexes: no socket on the critical path.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/dispatch.h"
#include "serve/ring.h"
#include "serve/swap.h"
#include "common/log.h"
#include "common/clock.h"
#include "serve/executor.h"

#include "common/env.h"
#include "common/status.h"
#include "proto/ring_shm.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int device_of(struct srv_client *c)
{
    return c->srv->vgpus[c->vgpu].cfg.device;
}

/* A grant page for a ring: a memfd of the daemon's (never passed to the
 * client), mapped here; its descriptor for the executor in *fd. */
static struct gos_grant_page *grant_page_new(int *fd)
{
    *fd = memfd_create("gpuos-grant", MFD_CLOEXEC);
    if (*fd < 0) {
        gos_fail(GOS_ENOMEM, "grant page: %s", strerror(errno));
        return NULL;
    }
    void *p = ftruncate(*fd, GOS_GRANT_PAGE_BYTES) ? MAP_FAILED
                                                   : mmap(NULL, GOS_GRANT_PAGE_BYTES, PROT_READ | PROT_WRITE,
                                                          MAP_SHARED, *fd, 0);
    if (p == MAP_FAILED) {
        gos_fail(GOS_ENOMEM, "grant page: %s", strerror(errno));
        close(*fd);
        *fd = -1;
        return NULL;
    }
    return p;
}

int srv_ring_attach(struct srv_client *c, const struct gos_msg_ring *m, int fd)
{
    struct srv *s = c->srv;
    struct stat st;
    if (!c->x)
        return gos_fail(GOS_EUNSUPPORTED, "no ring without an executor (isolation = none)");
    if (c->ring)
        return gos_fail(GOS_EBUSY, "this client has a ring already");
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "RING without a descriptor");
    int seals = fcntl(fd, F_GET_SEALS);
    if (m->bytes != GOS_RING_BYTES || fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < m->bytes ||
        seals < 0 || !(seals & F_SEAL_SHRINK))
        return gos_fail(GOS_EINVAL, "ring must be a memfd of %u bytes sealed with F_SEAL_SHRINK", GOS_RING_BYTES);
    struct srv_dev *d = &s->devs[device_of(c)];
    if (!d->bell_started) { /* the device's doorbell, with its first ring */
        d->bell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (d->bell_fd < 0)
            return gos_fail(GOS_EIO, "the device's doorbell: %s", strerror(errno));
        if (pthread_create(&d->bell_thread, NULL, srv_bell_main, d)) {
            close(d->bell_fd);
            return gos_fail(GOS_EIO, "the device's doorbell thread");
        }
        d->bell_started = 1;
    }
    void *p = mmap(NULL, GOS_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "mapping a ring: %s", strerror(errno));
    int gfd;
    struct gos_grant_page *gp = grant_page_new(&gfd);
    if (!gp) {
        munmap(p, GOS_RING_BYTES);
        return GOS_ENOMEM;
    }
    struct gos_ring_ctl *k = gos_ring_ctl(p);
    k->magic = GOS_RING_MAGIC;
    k->slots = GOS_RING_SLOTS;
    atomic_store(&k->open, 0);
    atomic_store(&k->spin_us, m->spin_us > 1000 ? 1000 : m->spin_us);
    c->ring_busy_seen = c->ring_entries_seen = c->ring_copy_seen = c->ring_copy_entries_seen = 0;
    struct srv_exec *x = c->x;
    struct {
        uint64_t bytes;
        uint32_t max_queued, pad;
    } xr = {GOS_RING_BYTES, (uint32_t)s->cfg.max_queued_requests, 0};
    int bell = d->bell_fd;
    pthread_mutex_unlock(&s->lock);
    int rc = srv_exec_call(x, X_GRANT, NULL, 0, gfd, NULL, 0);
    if (!rc)
        rc = srv_exec_call(x, X_BELL, NULL, 0, bell, NULL, 0);
    if (!rc)
        rc = srv_exec_call(x, X_RING, &xr, sizeof xr, fd, NULL, 0);
    pthread_mutex_lock(&s->lock);
    close(gfd);
    if (rc) {
        munmap(gp, GOS_GRANT_PAGE_BYTES);
        munmap(p, GOS_RING_BYTES);
        return rc;
    }
    c->ring = p;
    c->gp = gp;
    atomic_store(&k->open, 1);
    srv_ring_rotation(s, device_of(c));
    return GOS_OK;
}

/* Whether c holds a grant of kind any (issued while it worked alone: copies
 * and launches alike, held on one engine of the scheduler's) while another
 * client works on the device (lock held). Such a grant goes back to the
 * policy: the other engine is free in the scheduler, so another client's grant
 * there ran beside it unarbitrated, and nobody queued to end either (issue 41,
 * GPU-dec7bfb3: a training job's first request a copy of its weights, its
 * grant and an inference service's side by side for a whole run). */
static int any_shared(struct srv_dev *d, struct srv_client *c)
{
    return d->clients_now > 1 && gos_sched_engine_count(d->sched) > 1 && c->gp &&
           atomic_load(&c->gp->kind) == GOS_GRANT_ANY && atomic_load(&c->gp->state) == GOS_GRANT_RUN;
}

/* Sets c's idle yield (lock held; c->gp mapped): none for a lone client (it
 * keeps its grant idle), a running latency companion's hold (companion_hold),
 * else SRV_RING_IDLE_YIELD_US. Returns whether it changed. */
static int set_idle_yield(const struct srv_dev *d, struct srv_client *c)
{
    uint32_t v = d->clients_now <= 1 ? 0 : c->co_hold_us ? c->co_hold_us : SRV_RING_IDLE_YIELD_US;
    return atomic_exchange(&c->gp->idle_yield_us, v) != v;
}

void srv_ring_rotation(struct srv *s, int device)
{
    int n = 0;
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c->vgpu >= 0 && !c->dead && c->worked && device_of(c) == device)
            n++;
    s->devs[device].clients_now = n;
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c->gp && c->vgpu >= 0 && device_of(c) == device && set_idle_yield(&s->devs[device], c) &&
            c->ring) /* an executor idle on its grant sees the change at once (and yields if idle for long enough) */
            gos_ring_kick(&gos_ring_ctl(c->ring)->sq_futex, &gos_ring_ctl(c->ring)->exec_sleeping);
    for (struct srv_client *c = s->clients; n > 1 && c; c = c->next)
        if (c->ring && c->vgpu >= 0 && device_of(c) == device && any_shared(&s->devs[device], c)) {
            srv_ring_end_now(c); /* at its next kernel boundary, back to the policy (any_shared) */
            srv_ring_wake(c);
        }
}

/* Queues a grant for every ring of d that wants one (lock held). */
static void want_all(struct srv_dev *d)
{
    struct srv *s = d->srv;
    int queued = 0;
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c->gp && c->vgpu >= 0 && &s->devs[device_of(c)] == d && !c->ring_queued && !c->dead &&
            !(c->x && c->x->dead) && atomic_load(&c->gp->want) && atomic_load(&c->gp->state) != GOS_GRANT_REVOKE &&
            !srv_swap_turned_out(d, c->vgpu)) /* its memory is on its way out for another's turn (swap.c) */
            queued += srv_ring_queue(c) == GOS_OK;
    if (queued)
        srv_dev_kick(d, -1);
}

void *srv_bell_main(void *arg)
{
    struct srv_dev *d = arg;
    struct srv *s = d->srv;
    for (;;) {
        struct pollfd p = {.fd = d->bell_fd, .events = POLLIN};
        int n = poll(&p, 1, 100);
        uint64_t v;
        if (n > 0 && read(d->bell_fd, &v, sizeof v) < 0 && errno != EAGAIN)
            break;
        pthread_mutex_lock(&s->lock);
        int stop = s->stop;
        if (!stop)
            want_all(d); /* also every 100 ms: a lost ring of the bell costs no hang */
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
    }
    return NULL;
}

static void grant(struct srv_task *t, uint32_t kind, uint64_t deadline);

/* Companion co (taken out of the queue: srv_ring_companion_take) runs from t0
 * beside t's grant, to its deadline dl; t's dispatcher awaits, charges and
 * ends it (srv_ring_await). */
static void companion_start(struct srv_task *t, struct srv_task *co, uint64_t t0, uint64_t dl)
{
    co->ring_t0 = co->co_t0 = t0;
    co->ring_idle0 = atomic_load(&co->c->gp->idle_ns);
    grant(co, GOS_GRANT_COMPUTE, dl);
    __atomic_store_n(&t->co, co, __ATOMIC_RELEASE);
}

/* Issues the grant of task t: kind, deadline, a new generation (its own in
 * t->ring_gen), RUN, and the executor woken. */
static void grant(struct srv_task *t, uint32_t kind, uint64_t deadline)
{
    struct gos_grant_page *g = t->c->gp;
    t->ring_busy0 = atomic_load(&g->busy_ns);
    t->ring_copy0 = atomic_load(&g->copy_busy_ns);
    atomic_store(&g->want, GOS_GRANT_NONE);
    atomic_store(&g->kind, kind);
    atomic_store(&g->deadline_ns, deadline);
    uint32_t gen = atomic_load(&g->gen) + 1;
    t->ring_gen = gen ? gen : 1;
    atomic_store(&g->gen, t->ring_gen);
    atomic_store(&g->state, GOS_GRANT_RUN);
    gos_ring_kick(&g->state_futex, &g->exec_sleeping);
}

void srv_ring_issue(struct srv_dev *d, struct srv_task *t)
{
    struct srv *s = d->srv;
    pthread_mutex_lock(&s->lock);
    uint64_t len = srv_grant_for(d, s->vgpus[t->c->vgpu].id);
    struct srv_task *co = srv_ring_pair_pick(d, t); /* under mps, one whose kernels overlap these (ring_pair.c) */
    /* the GPU's switch to this executor after another's is not its use (issue
     * 41): d->last_pid is the executor of the device's last grant */
    t->ring_free = d->last_pid && t->c->x && d->last_pid != t->c->x->pid && d->clients_now > 1 ? d->switch_ns : 0;
    if (t->ring_free > len / 4)
        t->ring_free = len / 4;
    s->vgpus[t->c->vgpu].grants++;
    pthread_mutex_unlock(&s->lock);
    t->ring_t0 = gos_now_ns();
    /* a lone client's grant, or any under SDQ, runs copies and launches alike:
     * no hand-over at every change between them */
    uint64_t dl = atomic_load(&t->c->ring_end) ? t->ring_t0 : t->ring_t0 + len;
    grant(t, gos_sched_engine_count(d->sched) == 1 || d->clients_now <= 1 ? GOS_GRANT_ANY
             : t->st.kind == GOS_SCHED_COPY                               ? GOS_GRANT_COPY
                                                                          : GOS_GRANT_COMPUTE,
          dl);
    if (co)
        companion_start(t, co, t->ring_t0, dl);
}

/* The grant of `holder` is about to end and others wait (lock held): every
 * other ring of the device that wants a grant is told its turn may come, so
 * its executor spins for it (proto/xproto.h, turn). */
static void turn_notice(struct srv_dev *d, struct srv_client *holder)
{
    struct srv *s = d->srv;
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c != holder && c->gp && c->vgpu >= 0 && &s->devs[device_of(c)] == d && !c->dead &&
            atomic_load(&c->gp->want)) {
            atomic_fetch_add(&c->gp->turn, 1);
            gos_ring_kick(&c->gp->state_futex, &c->gp->exec_sleeping);
        }
}

/* A latency companion's idle yield (lock held): its vGPU's latency_ms, at
 * least the device's SRV_RING_IDLE_YIELD_US and at most
 * SRV_RING_COMPANION_HOLD_MAX_US. An empty ring gave a companion back after
 * 200 us, as it gives back a grant that others wait for; but a companion
 * keeps nobody waiting (it runs beside the batch grant, charged only the time
 * it has work: companion_cost), and a service that stops on the host
 * mid-request (Python between two layers, a synchronise, a host function)
 * lost it there: the rest of its request waited for the companion's end to be
 * seen and for a new grant (GPU-2899ddf5: a request's copy of its own queued
 * until the batch grant's end, p99 4.9 x alone). With its own bound as the
 * hold, a pause shorter than the service's latency bound keeps its companion,
 * and its next work runs at once. */
static uint32_t companion_hold(const struct srv_dev *d, const struct srv_client *c)
{
    const struct srv *s = d->srv;
    uint64_t us = c->vgpu >= 0 ? (uint64_t)s->vgpus[c->vgpu].cfg.latency_ms * 1000u : 0;
    return us < SRV_RING_IDLE_YIELD_US ? SRV_RING_IDLE_YIELD_US
           : us > SRV_RING_COMPANION_HOLD_MAX_US ? SRV_RING_COMPANION_HOLD_MAX_US
                                                : (uint32_t)us;
}

/* With handover = beside (the default under mps with overlap = pairs;
 * otherwise r ends early instead), latency task t runs at once beside the
 * batch grant r as its companion (lock held), instead of waiting for r's
 * drain and the switch: under mps its kernels share SMs with r's, as under
 * NVIDIA's MPS; under process the driver time-slices the two executors'
 * contexts, as it does plain processes, for as long as both have work. r's
 * dispatcher awaits, charges (t: its own wall time) and ends it
 * (srv_ring_await). */
static int companion_now(struct srv_dev *d, struct srv_task *r, struct srv_task *t)
{
    if (!d->handover || r->co || r->companion || r->closing || !t->ring ||
        t->st.kind != GOS_SCHED_COMPUTE || !t->c->gp || !t->c->ring || t->c->dead || (t->c->x && t->c->x->dead) ||
        srv_ring_companion_take(d, t))
        return 0;
    /* at most a grant's length (the device's grant_us, not the latency vGPU's
     * own, often shorter than a request: a 10 % service then waited out a
     * batch grant mid-request): a flooding latency vGPU beside a batch grant
     * that is moved on while nobody waits would otherwise run beside it for
     * as long, both charged, never back through the policy's demotion (on the
     * simulated device it took 43 % against its 30 %) */
    uint64_t now = gos_now_ns(), dl = atomic_load(&r->c->gp->deadline_ns);
    t->co_until = now + (d->grant_ns ? d->grant_ns : SRV_GRANT_PROCESS_NS);
    t->c->co_hold_us = companion_hold(d, t->c);
    set_idle_yield(d, t->c); /* (before its grant: its executor reads it when its ring empties) */
    companion_start(r, t, now, dl < t->co_until ? dl : t->co_until);
    srv_ring_wake(r->c); /* its dispatcher watches the companion from now on */
    d->companions++;
    if (gos_env(GOS_ENV_GRANT_LOG))
        gos_log(LOG_INFO, "grant vgpu %d: latency companion of vgpu %d's grant", t->c->vgpu, r->c->vgpu);
    return 1;
}

void srv_ring_preempt(struct srv_dev *d, struct srv_task *t)
{
    int engine = gos_sched_engine_for(d->sched, t->st.kind);
    gos_sched_task *rs = gos_sched_running(d->sched, engine);
    struct srv_task *r = rs ? rs->user : NULL;
    if (!r || !r->ring || r->c == t->c || !r->c->gp || !r->c->ring ||
        !gos_sched_preempts(d->sched, engine, t->st.vgpu, gos_now_ns()))
        return;
    if (companion_now(d, r, t))
        return;
    /* the holder's executor yields once what it issued ends (at most
     * XE_RING_AHEAD_NS of work); the dispatcher, waiting on its yield, then
     * hands the engine to the policy, which picks t's vGPU */
    srv_ring_end_now(r->c);
    if (r->co && r->co->c->gp && r->co->c->ring)
        srv_ring_end_now(r->co->c);
    srv_ring_wake(r->c);
    d->preemptions++;
}

struct yield_wait {
    struct gos_grant_page *g;
    struct srv_client *c;
    uint32_t gen;
    uint64_t until;
    uint64_t soon; /* yield_soon_dl when the wait began: a new announcement wakes it */
    struct srv_task *t, *co; /* the grant awaited and its companion when the wait began: a new one wakes it */
};

static int yielded(void *arg)
{
    struct yield_wait *w = arg;
    return atomic_load(&w->g->done_gen) == w->gen || gos_now_ns() >= w->until ||
           atomic_load(&w->g->yield_soon_dl) != w->soon || __atomic_load_n(&w->c->dead, __ATOMIC_ACQUIRE) ||
           (w->t && __atomic_load_n(&w->t->co, __ATOMIC_ACQUIRE) != w->co);
}

/* Whether grant gen of c is over: yielded, its client gone (*rc GOS_OK), or
 * its executor lost (*rc says so). */
static int grant_over(struct srv_client *c, uint32_t gen, int *rc)
{
    *rc = GOS_OK;
    if (atomic_load(&c->gp->done_gen) == gen)
        return 1;
    if (srv_exec_hungup(c->x)) {
        *rc = gos_fail(GOS_EDEVICE, "executor (pid %d) is gone", (int)c->x->pid);
        return 1;
    }
    return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE); /* the client left: its executor ends with it */
}

void srv_ring_wake(struct srv_client *c)
{
    if (c->gp)
        gos_ring_kick(&c->gp->yield_futex, &c->gp->daemon_sleeping);
}

/* t's executor's idle time since its last charge, its idle_ns now being idle. */
static uint64_t idle_since(const struct srv_task *t, uint64_t idle)
{
    return idle > t->ring_idle0 ? idle - t->ring_idle0 : 0;
}

/* What a piece of a grant costs its vGPU: its wall time while the device is
 * shared (the GPU was this tenant's), and while its client is alone the wall
 * time less what the executor spent idle (an empty ring, nothing left on the
 * device): an idle lone client holds its grant at no one's expense. */
static uint64_t segment_cost(struct srv_dev *d, struct srv_task *t, uint64_t now, uint64_t idle)
{
    uint64_t wall = now - t->ring_t0, i = idle_since(t, idle);
    return d->clients_now > 1 ? wall : i < wall ? wall - i : 0;
}

/* What waits for the grant of c to end (lock held): 2: one of c's own requests
 * (one of the other engine is released to the scheduler only once the grant is
 * done; a socket request or SYNC that waits for all of c), or the daemon's end;
 * 1: another task of the device's; 0: nothing. */
static int waiting(struct srv_dev *d, struct srv_client *c)
{
    if (c->pending_head || c->n_sync || d->srv->stop || atomic_load(&c->ring_end))
        return 2;
    return gos_sched_queued(d->sched) > 0 || any_shared(d, c);
}

/* The grant's deadline, and its companion's (ring_pair.c), whose own
 * srv_ring_end_soon stands. */
static void set_deadline(struct srv_task *t, uint64_t v)
{
    atomic_store(&t->c->gp->deadline_ns, v);
    if (t->co) {
        uint64_t cv = t->co->co_until && t->co->co_until < v ? t->co->co_until : v;
        atomic_store(&t->co->c->gp->deadline_ns, atomic_load(&t->co->c->ring_end) ? gos_now_ns() : cv);
    }
}

/* cost less what is left of t's switch (ring_free), which it uses up and its
 * vGPU is counted (lock held). */
static uint64_t unswitched(struct srv *s, struct srv_task *t, uint64_t cost)
{
    uint64_t f = t->ring_free < cost ? t->ring_free : cost;
    t->ring_free -= f;
    if (f && t->c->vgpu >= 0)
        s->vgpus[t->c->vgpu].switch_free_ns += f;
    return cost - f;
}

/* Charges cost ns of t's grant to its vGPU (lock held): to the engine the
 * grant holds, and a grant of kind any (held while its client worked alone)
 * to the copy and compute engines in the proportion its executor spent on
 * each since the last charge. A compute grant holds the compute engine for
 * its whole wall time, whatever it runs: split, a tenant whose rounds end in
 * a synchronous copy (its busy time the copy's wait for the kernels before
 * it) was charged nearly all of it as copy time, was never behind on the
 * compute engine and kept its grant for seconds while an equal peer waited
 * (t_ring_pair's fills, 1 to 2900 rounds in 3 s). */
static void charge_split(struct srv_dev *d, struct srv_task *t, uint64_t cost, uint64_t now)
{
    struct srv *s = d->srv;
    struct srv_client *c = t->c;
    cost = unswitched(s, t, cost);
    uint64_t busy = atomic_load(&c->gp->busy_ns), cb = atomic_load(&c->gp->copy_busy_ns);
    if (cost && c->vgpu >= 0) {
        uint32_t kind = atomic_load(&c->gp->kind);
        uint64_t db = busy - t->ring_busy0, dc = cb - t->ring_copy0;
        uint64_t copy = kind == GOS_GRANT_COPY                   ? cost
                        : kind != GOS_GRANT_ANY                  ? 0
                        : db && dc <= db ? (uint64_t)((double)cost * (double)dc / (double)db)
                                         : 0;
        if (copy)
            gos_sched_charge(d->sched, s->vgpus[c->vgpu].id, GOS_SCHED_COPY, copy, 0, now);
        if (cost > copy)
            gos_sched_charge(d->sched, s->vgpus[c->vgpu].id, GOS_SCHED_COMPUTE, cost - copy, 0, now);
    }
    t->ring_t0 = now;
    t->ring_busy0 = busy;
    t->ring_copy0 = cb;
}

/* What companion co is charged of the time since its last charge (lock
 * held; t_idle: the idle time of the grant beside it in that time). A pair's
 * companion (ring_pair.c): the whole wall time, as the grant beside it. A
 * latency companion: the time it had work (its wall less its executor's idle
 * time), half of it where the batch grant's executor had work too, since
 * the two then share the GPU (the driver time-slices the two contexts under
 * process, the SMs are shared under mps); the batch grant is charged the rest
 * (companion_charge), so that the two together are charged the wall time
 * once. Charged its whole wall time beside a batch grant charged its own, a
 * service paid for the time the driver gave the training's kernels (issue
 * 41; on GPU-cf4134f8 this charge did not make `beside` win: the service's
 * work ran much slower beside the training's executor than beside a plain
 * process, docs/readme-fastpath.md). */
static uint64_t companion_cost(struct srv_task *co, uint64_t now, uint64_t t_idle)
{
    uint64_t wall = now > co->ring_t0 ? now - co->ring_t0 : 0;
    if (!co->co_until)
        return wall;
    uint64_t idle = atomic_load(&co->c->gp->idle_ns), ci = idle_since(co, idle);
    co->ring_idle0 = idle;
    uint64_t had = ci < wall ? wall - ci : 0;        /* it had work */
    uint64_t both = had > t_idle ? had - t_idle : 0; /* and so had the batch grant (at least) */
    return had - both / 2;
}

/* Charges companion co of grant t for the time since its last charge (lock
 * held; t's executor's idle_ns now: idle) and returns t's own cost of that
 * time, `cost` less a latency companion's part. */
static uint64_t companion_charge(struct srv_dev *d, struct srv_task *t, struct srv_task *co, uint64_t now,
                                 uint64_t idle, uint64_t cost)
{
    uint64_t cc = companion_cost(co, now, idle_since(t, idle));
    charge_split(d, co, cc, now);
    return !co->co_until ? cost : cost > cc ? cost - cc : 0;
}

/* How long grant task t waited in the scheduler's queue before its start t0
 * (ms; the grant log's lines): a latency vGPU's request that waited for a
 * batch grant's end, not for the GPU, shows here (issue 41). */
static double queued_ms(const struct srv_task *t, uint64_t t0)
{
    return t0 > t->st.submit_ns && t->st.submit_ns ? (double)(t0 - t->st.submit_ns) / 1e6 : 0.0;
}

/* A companion's grant is over (lock held): it completes, and with
 * GPUOS_GRANT_LOG=1 the daemon logs its wall time (a pair's charged whole,
 * a latency companion's as companion_cost says) and its vGPU's credit then:
 * a latency vGPU whose companions, stretched by the driver's time-slicing
 * under process, run it into debt shows here (issue 41). */
static void companion_over(struct srv_dev *d, struct srv_task *co, uint64_t now, int rc)
{
    if (gos_env(GOS_ENV_GRANT_LOG) && co->c->vgpu >= 0) {
        gos_sched_vgpu_stats st = {0};
        gos_sched_vgpu_stats_get(d->sched, d->srv->vgpus[co->c->vgpu].id, now, &st);
        gos_log(LOG_INFO,
                "companion vgpu %d: %.3f ms wall from %.6f s (%s); credit %+.3f ms, utilisation %.0f %%, "
                "queued %.3f ms before",
                co->c->vgpu, (double)(now - co->co_t0) / 1e6, (double)co->co_t0 / 1e9,
                co->co_until ? "latency" : "pair", (double)st.compute_credit_ns / 1e6, st.compute_util_pct,
                queued_ms(co, co->co_t0));
    }
    if (co->c->co_hold_us) { /* its next grant, its own or a companion's, yields as the device's do */
        co->c->co_hold_us = 0;
        if (co->c->gp)
            set_idle_yield(d, co->c);
    }
    srv_ring_companion_done(co, rc);
}

/* Ends a companion's grant now (ring_pair.c; lock not held): its executor
 * yields after the entry in progress; then its tail (the GPU its alone) is
 * charged and it completes. */
static void companion_end(struct srv_dev *d, struct srv_task *co)
{
    struct srv *s = d->srv;
    struct srv_client *c = co->c;
    struct gos_grant_page *g = c->gp;
    srv_ring_end_now(c);
    struct yield_wait w = {g, c, co->ring_gen, 0, 0, NULL, NULL};
    int rc;
    do {
        w.until = gos_now_ns() + 10000000ull; /* (every 10 ms: its executor's loss) */
        w.soon = atomic_load(&g->yield_soon_dl); /* (an announcement is no yield) */
        gos_ring_wait(&g->yield_futex, &g->daemon_sleeping, 0, 10000000ull, yielded, &w);
    } while (!grant_over(c, co->ring_gen, &rc));
    pthread_mutex_lock(&s->lock);
    uint64_t now = gos_now_ns();
    charge_split(d, co, now > co->ring_t0 ? now - co->ring_t0 : 0, now);
    companion_over(d, co, now, rc);
    pthread_mutex_unlock(&s->lock);
}

/* srv_ring_await's charge as it goes (every 10 ms at most): utilisation,
 * Credit and BAND see a long grant as it runs, not in one piece at its end;
 * the companion's share too, and its end when its grant is over. *ran: the
 * client ran entries since the last look. Returns the tasks waiting. */
static int await_charge(struct srv_dev *d, struct srv_task *t, uint64_t now, int *ran)
{
    struct srv *s = d->srv;
    struct gos_grant_page *g = t->c->gp;
    pthread_mutex_lock(&s->lock);
    uint64_t idle = atomic_load(&g->idle_ns), cost = segment_cost(d, t, now, idle);
    uint64_t busy = atomic_load(&g->busy_ns);
    if (t->co) { /* the time shared with a companion (companion_cost) */
        cost = companion_charge(d, t, t->co, now, idle, cost);
        int crc;
        if (grant_over(t->co->c, t->co->ring_gen, &crc)) {
            struct srv_task *done = t->co;
            t->co = NULL; /* (before its end: its ring's next grant may join at once) */
            companion_over(d, done, now, crc);
        }
    }
    *ran = busy != t->ring_busy0;
    charge_split(d, t, cost, now);
    t->ring_idle0 = idle;
    int others = waiting(d, t->c);
    if (!others) /* (the grant's length as the longest task counts it starts again) */
        gos_sched_nobody_waits(d->sched, gos_sched_engine_for(d->sched, t->st.kind), now);
    pthread_mutex_unlock(&s->lock);
    return others;
}

/* GPUOS_GRANT_LOG=1 in the daemon's environment: one line per grant (how
 * long it ran, against its deadline), for studying rotations
 * (docs/readme-fastpath.md, "Known problems"). */
static void await_log(struct srv_dev *d, struct srv_task *t, uint64_t now, uint64_t gpu_ns)
{
    struct srv *s = d->srv;
    struct srv_client *c = t->c;
    struct gos_grant_page *g = c->gp;
    static _Atomic int grant_log = -1;
    if (atomic_load(&grant_log) < 0)
        atomic_store(&grant_log, gos_env(GOS_ENV_GRANT_LOG) != NULL);
    if (!atomic_load(&grant_log))
        return;
    gos_sched_vgpu_stats st = {0};
    pthread_mutex_lock(&s->lock);
    if (c->vgpu >= 0)
        gos_sched_vgpu_stats_get(d->sched, s->vgpus[c->vgpu].id, now, &st);
    pthread_mutex_unlock(&s->lock);
    static const char *const kinds[] = {"none", "compute", "copy", "any"};
    uint32_t kind = atomic_load(&g->kind);
    /* (its kind, the scheduler's engine it held, its start on the monotonic
     * clock and the clients then counted as working: two grants of one engine
     * side by side show in the log; issue 41, GPU-dec7bfb3) */
    gos_log(LOG_INFO,
            "grant vgpu %d: %.3f ms wall (the last %.3f ms charged at its end), %+.3f ms past its deadline, "
            "idle_yield %u us, wants %u, entries %llu; credit %+.3f ms, utilisation %.0f %%; "
            "early yield announced %d; kind %s, engine %d, from %.6f s, %d clients working, queued %.3f ms before",
            c->vgpu, (double)t->wall_ns / 1e6, (double)gpu_ns / 1e6,
            ((double)now - (double)atomic_load(&g->deadline_ns)) / 1e6, (unsigned)atomic_load(&g->idle_yield_us),
            (unsigned)atomic_load(&g->want), (unsigned long long)atomic_load(&g->entries),
            (double)st.compute_credit_ns / 1e6, st.compute_util_pct,
            atomic_load(&g->yield_soon_dl) == atomic_load(&g->deadline_ns), kinds[kind < 4 ? kind : 0],
            gos_sched_engine_for(d->sched, t->st.kind), (double)(now - t->wall_ns) / 1e9, d->clients_now,
            queued_ms(t, now - t->wall_ns));
}

int srv_ring_await(struct srv_dev *d, struct srv_task *t, uint64_t *gpu_ns, uint64_t *busy_ns)
{
    struct srv *s = d->srv;
    struct srv_client *c = t->c;
    struct gos_grant_page *g = c->gp;
    struct yield_wait w = {g, c, atomic_load(&g->gen), 0, 0, t, NULL};
    int rc = GOS_OK;
    uint64_t grant = d->grant_ns ? d->grant_ns : SRV_GRANT_PROCESS_NS;
    uint64_t busy_start = t->ring_busy0, start = t->ring_t0;
    t->ring_copy0 = atomic_load(&g->copy_busy_ns);
    t->ring_idle0 = atomic_load(&g->idle_ns);
    pthread_mutex_lock(&s->lock);
    int others = waiting(d, c), told = 0, ran = 1; /* ran: entries since the last look */
    pthread_mutex_unlock(&s->lock);
    for (;;) {
        uint64_t dl = atomic_load(&g->deadline_ns), now = gos_now_ns();
        /* its executor announced that it yields before this deadline, when its
         * last kernels end (exec_ring.c, announce_early_yield) */
        w.soon = atomic_load(&g->yield_soon_dl);
        w.co = __atomic_load_n(&t->co, __ATOMIC_ACQUIRE);
        int soon = w.soon == dl;
        /* wake at the deadline, and every 10 ms to see the executor's loss;
         * while nobody else waits, half-way to the deadline, to move it on
         * before it passes (below) */
        w.until = !others ? now + (dl > now ? (dl - now) / 2 : 0) : (dl > now ? dl : now) + 200000ull;
        if (w.until > now + 10000000ull)
            w.until = now + 10000000ull;
        unsigned spin = 0;
        int ahead = others && gos_ring_cores_to_spare(); /* a host of few cores: no spinning for the hand-over */
        if (others && !soon && now + GOS_GRANT_TURN_AHEAD_NS < dl) {
            w.until = dl - GOS_GRANT_TURN_AHEAD_NS; /* wake just before the hand-over (keep, or tell) */
            /* (an early yield announced: the hand-over is near now) */
        } else if (ahead && now < dl + GOS_GRANT_TURN_SPIN_US * 1000ull) {
            /* the hand-over is near: the waiting executors are told to spin
             * for their grants, and this thread spins for the yield, so that
             * neither side pays a futex wake-up between two tenants' work
             * (not past the spin's length: an entry that outlasts the
             * deadline by more is waited for asleep) */
            if (!told) {
                pthread_mutex_lock(&s->lock);
                turn_notice(d, c);
                pthread_mutex_unlock(&s->lock);
                told = 1;
            }
            spin = GOS_GRANT_TURN_SPIN_US;
        }
        /* a companion's yield is seen within 1 ms, whoever waits: its vGPU's
         * next work is queued only once its grant is seen over (ring_task_end).
         * When another task waited this wait lasted to the hand-over, and a
         * latency service that paused on the host mid-request (its executor
         * yields after 200 us idle) had the rest of the request queued at the
         * batch grant's end: p90 11.2-11.6 ms against 5.5-5.7 alone on the
         * simulated device (t_latency), the likely cause of p99 2.9-4.9 x
         * alone on an H100 (GPU-2899ddf5, stop 56) */
        if (w.co && w.until > now + 1000000ull)
            w.until = now + 1000000ull;
        gos_ring_wait(&g->yield_futex, &g->daemon_sleeping, spin, w.until > now ? w.until - now : 1, yielded, &w);
        if (grant_over(c, w.gen, &rc))
            break;
        now = gos_now_ns();
        others = await_charge(d, t, now, &ran);
        if (!others) {
            /* nobody waits: the grant goes on, its deadline kept ahead of the
             * executor, which would otherwise hold back a launch that might
             * end past it and yield at it to nobody (a drain and a new grant
             * every few milliseconds: PyTorch's bf16 product ran at 0.945 x
             * native alone). An idle executor keeps it too: a program that
             * stops to compute on the host for longer than a grant (a hash, a
             * print) found its grant gone and paid the doorbell, the bell's
             * thread, this dispatcher and the executor's wake-up before its
             * next kernel. What needs the client quiet ends it: a request of
             * its own or another task of the device (waiting), a swap
             * (swap.c) and srv_ring_end_soon, whose deadline stands. */
            set_deadline(t, now + grant);
            if (atomic_load(&c->ring_end))
                set_deadline(t, now);
            continue;
        }
        uint64_t dl_now = atomic_load(&g->deadline_ns);
        if (others == 1 && ran &&
            (now + GOS_GRANT_TURN_AHEAD_NS >= dl_now || atomic_load(&g->yield_soon_dl) == dl_now)) {
            /* others wait, but the policy would pick this vGPU again: the grant
             * goes on, charged as it runs, instead of a drain and a new grant for
             * the same tenant (a 70 % vGPU next to 50 ms kernels handed over to
             * itself six times per kernel of the other) */
            pthread_mutex_lock(&s->lock);
            int keep = !any_shared(d, c) && gos_sched_keeps(d->sched, gos_sched_engine_for(d->sched, t->st.kind), now);
            uint64_t len = keep ? srv_grant_for(d, s->vgpus[c->vgpu].id) : 0;
            pthread_mutex_unlock(&s->lock);
            if (keep) {
                set_deadline(t, now + len);
                told = 0;
                continue;
            }
        }
        if (now < atomic_load(&g->deadline_ns))
            continue;
        /* others wait: an idle executor waits on its ring and sees the deadline passed */
        gos_ring_kick(&gos_ring_ctl(c->ring)->sq_futex, &gos_ring_ctl(c->ring)->exec_sleeping);
    }
    uint64_t now = gos_now_ns(), b = atomic_load(&g->busy_ns), idle = atomic_load(&g->idle_ns);
    uint64_t cost = segment_cost(d, t, now, idle); /* the rest, charged with the task */
    pthread_mutex_lock(&s->lock);
    struct srv_task *co = t->co; /* (no companion joins from now: closing) */
    t->co = NULL;
    t->closing = 1;
    if (co) /* the companion: the rest, then its own end */
        cost = companion_charge(d, t, co, now, idle, cost);
    *gpu_ns = unswitched(s, t, cost);
    pthread_mutex_unlock(&s->lock);
    if (co)
        companion_end(d, co);
    if (!*gpu_ns)
        *gpu_ns = 1; /* (0 would have the scheduler charge the task's whole wall time) */
    *busy_ns = b > busy_start ? b - busy_start : 0;
    t->wall_ns = now - start;
    await_log(d, t, now, *gpu_ns);
    return rc;
}

static int ring_busy(struct srv_client *c)
{
    struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
    return atomic_load(&k->cq_done) != atomic_load(&k->sq_tail) && !(c->x && c->x->dead) && !c->dead;
}

void srv_ring_bells_stop(struct srv *s)
{
    for (int i = 0; i < GOS_SERVE_MAX_DEVICES; i++) {
        struct srv_dev *d = &s->devs[i];
        if (!d->bell_started)
            continue;
        pthread_join(d->bell_thread, NULL); /* it sees s->stop within 100 ms */
        close(d->bell_fd);
        d->bell_started = 0;
    }
}

int srv_ring_quiesce(struct srv *s, int ms)
{
    uint64_t until = gos_now_ns() + (uint64_t)(ms > 0 ? ms : 0) * 1000000ull;
    for (;;) {
        int n = 0;
        for (struct srv_client *c = s->clients; c; c = c->next) {
            if (!c->ring || !c->gp)
                continue;
            struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
            if (atomic_load(&c->gp->state) != GOS_GRANT_REVOKE) {
                srv_ring_charge(c);
                atomic_store(&k->open, 0);
                atomic_store(&c->gp->state, GOS_GRANT_REVOKE);
                gos_ring_kick(&c->gp->state_futex, &c->gp->exec_sleeping);
                gos_ring_kick(&k->sq_futex, &k->exec_sleeping);
            }
            n += ring_busy(c);
        }
        if (!n || gos_now_ns() >= until)
            return n;
        pthread_mutex_unlock(&s->lock);
        usleep(2000);
        pthread_mutex_lock(&s->lock);
    }
}

/* RING_ATTACH (client.c's msg_table). */
int srv_msg_ring(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    return srv_reply(c, h->seq, h->type, srv_ring_attach(c, p, fd), NULL, 0);
}
