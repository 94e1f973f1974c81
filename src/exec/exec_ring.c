/* SPDX-License-Identifier: Apache-2.0 */
/* exec_ring.c: the executor's ring consumer (executor process only; issue 9.4,
 * proto/ring_shm.h; issue 22: a grant for every busy client).
 *
 * One thread per ring. It waits for the client's submissions (bounded spin,
 * then a futex wait on the shared word), and for each entry: copies it out of
 * the shared slot (the client may rewrite it meanwhile: everything is checked
 * on the copy), runs it while it holds the daemon's grant (xe_ring_run in
 * exec_run.c, which checks it as the daemon checks a socket request), writes
 * the result into the slot and advances cq_done. The grant lives in the grant
 * page (proto/xproto.h), which only the daemon and this executor map: an entry
 * that finds no grant asks for one (want, the device's doorbell) and waits;
 * the grant ends at its deadline or when the ring stays empty for
 * idle_yield_us, after the stream is drained, and the daemon is woken through
 * the page. Only a revoke (shutdown) answers entries GOS_RING_REVOKED: the ring
 * stays revoked until the client has taken them back (ctl.client_ack) and sent
 * them again over the socket, in order, so nothing runs out of order. A ring whose indices make no sense (a
 * tail more than a ring ahead) is stopped for good: that client's fast path
 * ends, nobody else's. A device fault ends the process (as a faulted X_RUN):
 * the client has its GPUOS_EDEVICE in the slot, the daemon sees the executor
 * gone.
 * Process: the executor (gpuos executor). */
#include "exec/exec_internal.h"

#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "device/exec_ops.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

struct xr {
    struct xe *x;
    gos_device *dev;
    void *base;
    uint32_t head;
    _Atomic int stop; /* xe_ring_stop: end the consumer */
    pthread_t t;
    struct gos_grant_page *gp; /* the daemon's grant page (NULL: an older daemon's open grant) */
    int bell;                  /* the device's doorbell (eventfd), -1 none */
    uint32_t gen;              /* the grant held (0: none) */
    uint32_t ran;              /* entries run in this grant */
    uint64_t len_ns;           /* the grant's length as the daemon gave it */
    uint32_t kind;             /* its kind */
    /* the grant's synchronisations: how many, the first's wait, the shortest
     * later one (the switch's cost, gos_grant_page.switch_ns) */
    uint32_t fences;
    uint64_t fence_first_ns, fence_min_ns;
    uint64_t entry_max_ns; /* the grant's longest launch or synchronise */
};

/* The grant an entry needs. */
static uint32_t kind_of(const struct gos_ring_ent *e)
{
    return e->op == GOS_OP_LAUNCH                          ? GOS_GRANT_COMPUTE
           : e->op == GOS_OP_FENCE || e->op == GOS_OP_GATE ? GOS_GRANT_ANY
                                                           : GOS_GRANT_COPY;
}

/* Whether a grant of kind `grant` runs an entry needing `need`. A compute
 * grant runs the client's copies too: the GPU's time is this tenant's, and
 * handing it over for each small copy (PyTorch's memsets are inline HtoD
 * copies, three per training step) cost a training loop one of its
 * neighbour's 50 ms kernels every time (issue 21, hostile.sh). A copy grant
 * runs no launch: another tenant's kernels may be on the GPU meanwhile. */
static int fits(uint32_t grant, uint32_t need)
{
    return grant == GOS_GRANT_ANY || need == GOS_GRANT_ANY || grant == need ||
           (grant == GOS_GRANT_COMPUTE && need == GOS_GRANT_COPY);
}

/* The grant to ask for when the entry at head needs `need`: a compute grant
 * when a launch is queued behind a copy (it would need one next; a compute
 * grant runs both), so that a client mixing the two asks once. The kinds are
 * read from the shared slots: a client rewriting them only changes its own
 * request. */
static uint32_t need_ahead(const struct xr *r, uint32_t tail, uint32_t need)
{
    if (need != GOS_GRANT_COPY)
        return need;
    /* (a forged tail: one ring at most) */
    for (uint32_t i = r->head + 1, n = 0; i != tail && n < GOS_RING_SLOTS; i++, n++)
        if (((volatile const struct gos_ring_ent *)gos_ring_slot(r->base, i))->op == GOS_OP_LAUNCH)
            return GOS_GRANT_COMPUTE;
    return need;
}

static int pending(void *arg)
{
    struct xr *r = arg;
    struct gos_ring_ctl *c = gos_ring_ctl(r->base);
    return atomic_load_explicit(&r->stop, memory_order_acquire) ||
           atomic_load_explicit(&c->sq_tail, memory_order_acquire) != r->head;
}

static void bump(_Atomic uint64_t *w, uint64_t by)
{
    atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) + by, memory_order_relaxed);
}

static uint32_t gp_state(const struct xr *r)
{
    return atomic_load_explicit(&r->gp->state, memory_order_acquire);
}

/* Takes the daemon's grant when there is one to take (RUN, a generation not
 * finished yet). */
static int take(struct xr *r)
{
    uint32_t g = atomic_load_explicit(&r->gp->gen, memory_order_acquire);
    if (gp_state(r) == GOS_GRANT_RUN && g != atomic_load_explicit(&r->gp->done_gen, memory_order_acquire)) {
        r->gen = g;
        r->ran = 0;
        uint64_t dl = atomic_load_explicit(&r->gp->deadline_ns, memory_order_acquire), now = gos_now_ns();
        r->len_ns = dl > now ? dl - now : 0;
        r->kind = atomic_load_explicit(&r->gp->kind, memory_order_acquire);
        r->fences = 0;
        atomic_store_explicit(&gos_ring_ctl(r->base)->running, 1, memory_order_relaxed);
        return 1;
    }
    return 0;
}

struct grant_wait {
    struct xr *r;
    uint32_t turn; /* the turn notice seen */
};

static int grant_ready(void *arg)
{
    struct grant_wait *w = arg;
    struct xr *r = w->r;
    return atomic_load_explicit(&r->stop, memory_order_acquire) || gp_state(r) == GOS_GRANT_REVOKE || take(r) ||
           atomic_load_explicit(&r->gp->turn, memory_order_acquire) != w->turn;
}

/* Ends the grant held: what it issued is waited for (the next tenant's grant
 * starts on an idle GPU and this one's time is all in its own grant), want
 * says whether entries are left, the daemon is woken. */
static void yield(struct xr *r, uint32_t want)
{
    xe_ring_lock(r->x, 1);
    int rc = xe_ring_drain(r->x);
    xe_ring_lock(r->x, 0);
    if (rc == GOS_EDEVICE) {
        char why[sizeof r->gp->fault_msg];
        snprintf(why, sizeof why, "%s", gos_last_error());
        if (!xe_alive(r->x)) {
            snprintf(r->gp->fault_msg, sizeof r->gp->fault_msg, "%s", why);
            _exit(3); /* the context is dead: the client finds its executor gone, the daemon too */
        }
    }
    atomic_store_explicit(&r->gp->want, want, memory_order_release);
    if (r->fences >= 3 && r->fence_first_ns > r->fence_min_ns) {
        atomic_store_explicit(&r->gp->switch_ns, r->fence_first_ns - r->fence_min_ns, memory_order_relaxed);
        atomic_store_explicit(&r->gp->switch_gen, r->gen, memory_order_relaxed);
    }
    if (r->entry_max_ns) /* (a grant that ran nothing leaves the last one's) */
        atomic_store_explicit(&r->gp->entry_max_ns, r->entry_max_ns, memory_order_relaxed);
    r->entry_max_ns = 0;
    atomic_store_explicit(&r->gp->done_gen, r->gen, memory_order_release);
    atomic_store_explicit(&gos_ring_ctl(r->base)->running, 0, memory_order_relaxed);
    r->gen = 0;
    gos_ring_kick(&r->gp->yield_futex, &r->gp->daemon_sleeping);
}

/* An entry needing a grant of kind `need` is waiting and no grant is held:
 * asks for one (once: the daemon clears want when it grants) and waits for
 * it. 0: granted, 1: revoked, -1: stop. */
static int await_grant(struct xr *r, uint32_t need)
{
    if (!atomic_load_explicit(&r->gp->want, memory_order_acquire)) {
        atomic_store_explicit(&r->gp->want, need == GOS_GRANT_ANY ? GOS_GRANT_COMPUTE : need, memory_order_release);
        gos_ring_kick(&r->gp->yield_futex, &r->gp->daemon_sleeping);
        uint64_t one = 1;
        if (r->bell >= 0 && write(r->bell, &one, sizeof one) < 0) {
            /* a full counter still wakes the daemon's reader */
        }
    }
    struct grant_wait w = {r, atomic_load_explicit(&r->gp->turn, memory_order_acquire)};
    unsigned spin = 50;
    for (;;) {
        /* every 2 ms without a grant the bell is rung again: a ring the daemon
         * missed (its grant task was completing while want was raised) waits no
         * longer than that */
        int woken = gos_ring_wait(&r->gp->state_futex, &r->gp->exec_sleeping, spin, 2000000ull, grant_ready, &w);
        spin = 0;
        if (r->gen || atomic_load_explicit(&r->stop, memory_order_acquire) || gp_state(r) == GOS_GRANT_REVOKE)
            break;
        uint32_t turn = atomic_load_explicit(&r->gp->turn, memory_order_acquire);
        if (turn != w.turn) { /* a grant ends soon: spin through the hand-over */
            w.turn = turn;
            spin = GOS_GRANT_TURN_SPIN_US;
            continue;
        }
        uint64_t one = 1;
        if (!woken && r->bell >= 0 && atomic_load_explicit(&r->gp->want, memory_order_acquire) &&
            write(r->bell, &one, sizeof one) < 0) {
            /* a full counter still wakes the daemon's reader */
        }
    }
    if (atomic_load_explicit(&r->stop, memory_order_acquire))
        return -1;
    return r->gen ? 0 : 1;
}

struct held_wait {
    struct xr *r;
    uint64_t t0; /* since when the ring is empty */
};

/* When a grant held with an empty ring since t0 is given back for idleness
 * (UINT64_MAX: never). The daemon's idle_yield_us is read each time: it
 * becomes non-zero when a second client starts working on the device, and an
 * executor that has kept its grant idle for long then yields at once. */
static uint64_t idle_end(const struct held_wait *w)
{
    uint32_t idle = atomic_load_explicit(&w->r->gp->idle_yield_us, memory_order_relaxed);
    return idle ? w->t0 + (uint64_t)idle * 1000u : UINT64_MAX;
}

static int held_ready(void *arg)
{
    struct held_wait *w = arg;
    uint64_t now = gos_now_ns();
    return pending(w->r) || now >= atomic_load_explicit(&w->r->gp->deadline_ns, memory_order_acquire) ||
           now >= idle_end(w) || gp_state(w->r) == GOS_GRANT_REVOKE;
}

/* Whether the next entry, issued now behind what is on the device, would
 * likely end after the grant's deadline or more than the grant's length from
 * now, while other clients share the device (the daemon's idle_yield_us; alone,
 * the daemon keeps the deadline ahead). */
static int over_deadline(struct xr *r)
{
    if (!atomic_load_explicit(&r->gp->idle_yield_us, memory_order_relaxed))
        return 0; /* no other client works on the device: nobody to stop short for */
    xe_ring_lock(r->x, 1); /* the socket path's engine switch waits for the ring's stream too */
    uint64_t per = r->x->ring_entry_ns, ahead = r->x->ring_ahead;
    xe_ring_lock(r->x, 0);
    uint64_t dl = atomic_load_explicit(&r->gp->deadline_ns, memory_order_acquire), now = gos_now_ns();
    /* nor more than the grant's own length ahead: the daemon moves the
     * deadline on while nobody waits, but a neighbour that asks meanwhile
     * would wait for every unpreemptible kernel issued by then */
    uint64_t end = now + per * (ahead + 1);
    return per && (end > dl || per * (ahead + 1) > r->len_ns);
}

/* Right after a launch: when another like it would not fit in the grant
 * (over_deadline), this executor will yield once what it issued ends, before
 * the deadline; the daemon is told now (yield_soon_dl, once per deadline), so
 * that it can keep the grant or tell the waiting rings to spin for their turn
 * while the last kernels run. Otherwise it slept until just before the
 * deadline and the next tenant's executor too: the GPU stood idle for two
 * futex wake-ups (60-100 us each on the H200 virtual machines) after every
 * grant that ended early, the rule for kernels of a millisecond. */
static void announce_early_yield(struct xr *r)
{
    static int off = -1;
    if (off < 0)
        off = gos_env_off(GOS_ENV_RING_EARLY);
    if (off || !r->gen)
        return;
    uint64_t dl = atomic_load_explicit(&r->gp->deadline_ns, memory_order_acquire);
    if (atomic_load_explicit(&r->gp->yield_soon_dl, memory_order_relaxed) == dl || !over_deadline(r))
        return;
    atomic_store_explicit(&r->gp->yield_soon_dl, dl, memory_order_release);
    gos_ring_kick(&r->gp->yield_futex, &r->gp->daemon_sleeping);
}

/* A GATE entry at the head (exec_run.c checks it): waits until its host word
 * reaches its value, the device going on with what was issued before it. Held
 * (a grant): 0 open (or not a word of this client's: the entry is refused), 1
 * give the grant back (its deadline passed, or the gate stayed closed for the
 * idle yield while others share the device), -1 stop. Not held: until it opens
 * (0) or stop (-1), polling more slowly as it stays closed. The word is read
 * under the executor's lock, which a region's removal takes. */
#define GATE_SPIN_NS 2000000ull
static int gate_wait(struct xr *r, const struct gos_ring_ent *e, int held)
{
    uint64_t t0 = gos_now_ns();
    uint64_t idle = held ? (uint64_t)atomic_load_explicit(&r->gp->idle_yield_us, memory_order_relaxed) * 1000u : 0;
    for (;;) {
        xe_ring_lock(r->x, 1);
        const volatile uint64_t *w = xe_gate_word(r->x, e);
        int open = !w || *w >= e->dptr2;
        xe_ring_lock(r->x, 0);
        if (open || gp_state(r) == GOS_GRANT_REVOKE)
            return 0;
        if (atomic_load_explicit(&r->stop, memory_order_acquire))
            return -1;
        uint64_t now = gos_now_ns();
        if (held && (now >= atomic_load_explicit(&r->gp->deadline_ns, memory_order_acquire) ||
                     (idle && now - t0 >= idle)))
            return 1;
        /* spin for 2 ms: the gate opens when the GPU has done the work before
         * it and the host function has run, and a sleep costs 60-100 us on a
         * virtual machine, idle GPU time for everything queued behind the gate
         * (JAX ends every call with a host function) */
        if (now - t0 < (held ? GATE_SPIN_NS : GATE_SPIN_NS / 10)) { /* (without a grant: less) */
            gos_ring_relax();
        } else {
            struct timespec ts = {0, now - t0 < 10 * GATE_SPIN_NS ? 20000 : 200000};
            nanosleep(&ts, NULL);
        }
    }
}

/* Holding a grant with an empty ring: asleep until the next entry, the grant's
 * end, or idle_yield_us with nothing to do. Returns 0 when the grant went back
 * (nothing pending), 1 when there is an entry to take. */
static int ring_held_wait(struct xr *r, struct gos_ring_ctl *c, unsigned spin)
{
    uint64_t t0 = gos_now_ns(), counted = t0;
    int drained = xe_ring_drained(r->x); /* nothing of the client's left on the device */
    struct held_wait w = {r, t0};
    /* asleep until the first of them (the daemon may move the deadline
     * meanwhile: a lone client keeps its grant idle); the idle time is
     * published as it passes, so that the daemon's charge of a long
     * idle grant, taken as it runs, leaves it out */
    for (unsigned s = spin > 1000 ? 1000 : spin;; s = 0) {
        uint64_t dl = atomic_load_explicit(&r->gp->deadline_ns, memory_order_acquire), now = gos_now_ns();
        uint64_t end = idle_end(&w) < dl ? idle_end(&w) : dl;
        uint64_t left = end > now ? end - now : 1;
        int ready = gos_ring_wait(&c->sq_futex, &c->exec_sleeping, s, left, held_ready, &w);
        if (drained) {
            now = gos_now_ns();
            bump(&r->gp->idle_ns, now - counted);
            counted = now;
        }
        if (ready)
            break;
    }
    if (!pending(r)) {
        yield(r, GOS_GRANT_NONE);
        return 0;
    }
    return 1;
}

/* The grant entry e (the ring's tail at tail) runs under: gates waited for,
 * the right kind asked for or handed back, the deadline respected. Returns 1
 * with *granted set, 0 to look at the same entry again, -1 to stop the ring. */
static int ring_grant_for(struct xr *r, const struct gos_ring_ent *e, uint32_t tail, int *granted)
{
    if (!r->gp) {
        *granted = 0; /* no grant page: nothing runs here, the socket path takes it */
        return 1;
    }
    uint32_t need = kind_of(e);
    /* a closed gate: the grant goes back once it stays closed (no GPU
     * time is wasted on it), and a grant is asked for once it opens */
    if (e->op == GOS_OP_GATE && gp_state(r) != GOS_GRANT_REVOKE) {
        int g = r->gen ? gate_wait(r, e, 1) : 0;
        if (g > 0)
            yield(r, GOS_GRANT_NONE);
        if (g < 0 || (!r->gen && gate_wait(r, e, 0) < 0))
            return -1;
    }
    if (r->gen && !fits(r->kind, need)) /* the other engine's work: its own grant */
        yield(r, need);
    if (!r->gen && gp_state(r) != GOS_GRANT_REVOKE) {
        need = need_ahead(r, tail, need);
        int g = await_grant(r, need);
        if (g < 0)
            return -1;
        if (!g && !fits(r->kind, need)) { /* granted the other kind meanwhile: hand it back */
            yield(r, need);
            return 0;
        }
    }
    if (gp_state(r) == GOS_GRANT_REVOKE && r->gen)
        yield(r, GOS_GRANT_NONE);
    /* An entry that would end past the grant's deadline, by this
     * client's measured time per entry, waits for the next grant
     * (the first of a grant always runs; launches only: a
     * synchronise or copy gains nothing by waiting). A kernel cannot be
     * stopped once issued: a tenant of 50 ms kernels otherwise
     * kept the GPU for two of them per 16 ms grant, and the yield's
     * drain waited for the second (a 70 % vGPU's training loop next
     * to it ran at 0.7 % of native on the H200). */
    if (r->gen && r->ran && e->op == GOS_OP_LAUNCH && over_deadline(r)) {
        yield(r, need);
        return 0;
    }
    *granted = r->gen != 0;
    return 1;
}

/* Runs entry e (its data in slot) on the device and charges its time to the
 * grant page's and the ring's counters. */
static int ring_run_entry(struct xr *r, struct gos_ring_ctl *c, const struct gos_ring_ent *e,
                          struct gos_ring_ent *slot, uint32_t tail, int *fault)
{
    xe_ring_lock(r->x, 1);
    uint64_t t0 = gos_ring_now_ns();
    int rc = xe_ring_run(r->x, e, slot->data, tail - r->head - 1, fault);
    r->ran++;
    uint64_t dt = gos_ring_now_ns() - t0;
    xe_ring_lock(r->x, 0);
    /* this thread is the counters' only writer: plain stores, no
     * locked read-modify-write on every entry; the grant page's
     * are charged, the ring's are the client's to read */
    if (e->op == GOS_OP_HTOD || e->op == GOS_OP_DTOH || e->op == GOS_OP_DTOD) {
        bump(&r->gp->copy_busy_ns, dt);
        bump(&r->gp->copy_entries, 1);
        bump(&c->copy_busy_ns, dt);
        bump(&c->copy_entries, 1);
    }
    if ((e->op == GOS_OP_LAUNCH || e->op == GOS_OP_FENCE) && dt > r->entry_max_ns)
        r->entry_max_ns = dt;
    if (e->op == GOS_OP_FENCE && !rc) {
        if (!r->fences++)
            r->fence_first_ns = dt;
        else if (r->fences == 2 || dt < r->fence_min_ns)
            r->fence_min_ns = dt;
    }
    bump(&r->gp->busy_ns, dt);
    bump(&r->gp->entries, 1);
    bump(&c->busy_ns, dt);
    bump(&c->entries, 1);
    if (rc == GOS_EPROTO || rc == GOS_EINVAL)
        bump(&c->refused, 1);
    if (!rc && e->op == GOS_OP_LAUNCH)
        announce_early_yield(r);
    return rc;
}

/* The grant's end after an entry: the next entry waits for the next grant. */
static void ring_grant_end(struct xr *r, struct gos_ring_ctl *c)
{
    if (r->gp && r->gen && gos_now_ns() >= atomic_load_explicit(&r->gp->deadline_ns, memory_order_acquire)) {
        uint32_t want = GOS_GRANT_NONE, now_tail = atomic_load_explicit(&c->sq_tail, memory_order_acquire);
        if (r->head != now_tail) {
            struct gos_ring_ent nx;
            memcpy(&nx, gos_ring_slot(r->base, r->head), offsetof(struct gos_ring_ent, rc));
            want = kind_of(&nx) == GOS_GRANT_ANY ? r->kind : need_ahead(r, now_tail, kind_of(&nx));
        }
        yield(r, want);
    }
}

static void *ring_main(void *arg)
{
    struct xr *r = arg;
    struct gos_ring_ctl *c = gos_ring_ctl(r->base);
    int revoking = 0;
    uint32_t revoked_upto = 0;
    for (;;) {
        unsigned spin = atomic_load_explicit(&c->spin_us, memory_order_relaxed);
        if (r->gp && r->gen) {
            if (!ring_held_wait(r, c, spin))
                continue;
        } else {
            gos_ring_wait(&c->sq_futex, &c->exec_sleeping, spin > 1000 ? 1000 : spin, 0, pending, r);
        }
        if (atomic_load_explicit(&r->stop, memory_order_acquire))
            return NULL;
        uint32_t tail = atomic_load_explicit(&c->sq_tail, memory_order_acquire);
        if (tail - r->head > GOS_RING_SLOTS) {
            bump(&c->refused, 1);
            gos_log(LOG_WARNING, "ring tail %u is more than %u entries ahead of %u: ring stopped",
                    (unsigned)tail, GOS_RING_SLOTS, (unsigned)r->head);
            if (r->gp && r->gen)
                yield(r, GOS_GRANT_NONE);
            return NULL; /* that client's fast path ends; its socket still works */
        }
        while (r->head != tail) {
            struct gos_ring_ent *slot = gos_ring_slot(r->base, r->head);
            struct gos_ring_ent e;
            memcpy(&e, slot, offsetof(struct gos_ring_ent, rc)); /* the request, copied out */
            int granted, go = ring_grant_for(r, &e, tail, &granted);
            if (go < 0)
                return NULL;
            if (!go)
                continue;
            if (revoking && atomic_load_explicit(&c->client_ack, memory_order_acquire) - revoked_upto < 0x80000000u)
                revoking = 0; /* the client took every revoked entry back */
            int rc, fault = 0;
            char msg[GOS_RING_MSG] = "";
            if (!granted || revoking)
                rc = GOS_RING_REVOKED;
            else
                rc = ring_run_entry(r, c, &e, slot, tail, &fault);
            if (rc == GOS_RING_REVOKED) {
                revoking = 1;
                revoked_upto = r->head + 1;
                atomic_store_explicit(&c->revoked_upto, revoked_upto, memory_order_release);
            } else if (rc) {
                snprintf(msg, sizeof msg, "%s", gos_last_error());
            }
            if (fault) /* before the client hears: its next request finds the daemon told */
                snprintf(r->gp->fault_msg, sizeof r->gp->fault_msg, "%s", msg);
            char said[sizeof msg]; /* a shared executor's clients hear one reason (exec_run.c) */
            const char *heard = fault ? xe_fault_msg(r->x, msg, said, sizeof said) : msg;
            if (rc && rc != GOS_RING_REVOKED)
                memcpy(slot->msg, heard, sizeof msg); /* read by the client only when rc says so */
            slot->rc = rc;
            r->head++;
            atomic_store_explicit(&c->cq_done, r->head, memory_order_release);
            gos_ring_kick(&c->cq_futex, &c->client_sleeping);
            if (fault)
                _exit(3); /* the context is dead: the client has its error, the daemon sees us gone */
            ring_grant_end(r, c);
        }
    }
    return NULL;
}

int xe_ring_start(struct xe *x, int fd, uint64_t bytes, gos_device *dev, struct xr **out)
{
    struct stat st;
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "RING without a descriptor");
    if (!x->gp)
        return gos_fail(GOS_EPROTO, "RING before its grant page (X_GRANT)");
    int seals = fcntl(fd, F_GET_SEALS);
    if (bytes != GOS_RING_BYTES || fstat(fd, &st) || (uint64_t)st.st_size < bytes || seals < 0 ||
        !(seals & F_SEAL_SHRINK))
        return gos_fail(GOS_EINVAL, "ring must be a memfd of %u bytes sealed against shrinking", GOS_RING_BYTES);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "executor: mapping the ring");
    struct xr *r = calloc(1, sizeof *r);
    if (!r) {
        munmap(p, bytes);
        return gos_fail(GOS_ENOMEM, "executor out of memory");
    }
    /* pinned, so that inline copies from and into the slots are DMA (best effort) */
    gos_exec_host_register(dev, p, bytes);
    r->x = x;
    r->dev = dev;
    r->base = p;
    r->head = atomic_load_explicit(&gos_ring_ctl(p)->cq_done, memory_order_acquire);
    r->gp = x->gp;
    r->bell = x->bell;
    atomic_store(&gos_ring_ctl(p)->exec_pid, (int32_t)getpid());
    if (pthread_create(&r->t, NULL, ring_main, r)) {
        munmap(p, bytes);
        free(r);
        return gos_fail(GOS_EIO, "executor: ring thread");
    }
    *out = r;
    return GOS_OK;
}

void xe_ring_stop(struct xr *r)
{
    if (!r)
        return;
    struct gos_ring_ctl *c = gos_ring_ctl(r->base);
    atomic_store_explicit(&r->stop, 1, memory_order_release);
    gos_ring_kick(&c->sq_futex, &c->exec_sleeping); /* a sleeping consumer sees it at once */
    if (r->gp)
        gos_ring_kick(&r->gp->state_futex, &r->gp->exec_sleeping); /* one waiting for a grant too */
    pthread_join(r->t, NULL);
    gos_exec_host_unregister(r->dev, r->base);
    munmap(r->base, GOS_RING_BYTES);
    free(r);
}
