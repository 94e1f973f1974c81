/* SPDX-License-Identifier: Apache-2.0 */
/* swap.c: swapping inside the daemon (issue 10.2; docs/readme-shm.md), on a
 * device whose configuration sets `swap = SIZE` (host swap space) and runs
 * executors (isolation = process).
 *
 * Client allocations are then VMM allocations of the client's executor
 * (X_VALLOC, 2 MB rounded), registered with the swap policy of src/vmem/swap_policy.c.
 * An allocation that does not fit the pool (`swap_pool`, default the device's
 * memory) evicts other vGPUs' idle allocations: the owner's executor copies them
 * into the daemon's host swap pool (one memfd of `swap` bytes, created once;
 * each swapped allocation holds one range of it, vmem/swap_pool.h), unmaps and
 * releases them (X_EVICT_POOL). Each executor maps the pool once and page-locks
 * it chunk by chunk (X_POOL_CHUNK) on first use, kept for its life, so a swap
 * copies at the pinned rate without registering host memory each time. Before a copy or launch of a client is queued, what
 * it needs is restored (X_RESTORE_POOL: new memory at the same address, copied back),
 * evicting others as needed: a copy needs the allocations its ranges touch, a
 * launch all of its client's. "Idle": an allocation whose client has no work
 * queued or running is never touched by the device, so only those are victims
 * (the policy's busy flag), and a client whose allocation is in transition waits
 * for the transition before its request is queued.
 *
 * Deaths: a victim's executor that dies during its eviction loses only its own
 * client's memory (its context is gone anyway); the daemon drops that client's
 * objects and gives their pool ranges back. A client that dies drops its objects
 * the same way; objects in transition are dropped when the step reports.
 *
 * Host memory (issue 23.3): the pool's memfd is sparse, host memory is taken as
 * evictions first touch a range of it, so an eviction that would grow the touched
 * part asks the host first (hostmem.c: MemAvailable and every memory cgroup above
 * the daemon, less a reserve for the daemon and executors). When the host cannot
 * give it, that eviction and the rest of its plan are not carried out: the
 * victims stay resident, the request that needed the room fails with
 * GPUOS_ENOMEM saying so, and no tenant's bytes are lost. Evictions for a new
 * allocation also leave room for the largest object's restore (which needs its
 * victims evicted before its own range comes free), so what was swapped out
 * can always come back.
 *
 * Busy tenants whose memory does not fit together take turns (issue 42;
 * struct srv_swturn below): a busy vGPU keeps its memory for its turn, then
 * the longest waiter turns it out and takes the next. swap_prefault = 1 faults
 * the pool in at start and has every executor lock it ahead (X_POOL_PIN).
 *
 * All functions run with srv->lock held and drop it around executor calls.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/ring.h"
#include "serve/hostmem.h"
#include "serve/swap.h"
#include "serve/executor.h"

#include "common/clock.h"
#include "common/status.h"
#include "device/vmm_ops.h"
#include "common/log.h"
#include "proto/xproto.h"
#include "vmem/swap_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct srv_swobj {
    uint64_t off, bytes;   /* the host copy's range of the pool while swapped */
    int held;              /* 1: that range is held */
    struct srv_client *c;  /* the owner */
};

/* Turns between busy tenants (issue 42). Each vGPU with resident memory has a
 * turn, from when its memory became resident (or it last took memory from
 * another); a vGPU that waits for room that busy tenants hold waits while
 * their turns last, then (the longest waiter first) turns out those whose
 * turn is over: no new grant for their rings (srv_swap_turned_out), their
 * grants end soon, and once their work has drained their memory is evicted
 * and the waiter's restored. */
struct srv_swturn {
    uint64_t since[GOS_SWAP_MAX_VGPUS]; /* its turn's start (0: nothing resident) */
    uint64_t fixed_ns, wait_ns;      /* swap_turn_ms (0: auto), swap_wait_s */
    uint64_t moved, moved_ns;        /* swap bandwidth learned: decaying sums of bytes and time */
    uint8_t out[GOS_SWAP_MAX_VGPUS]; /* 1: turned out, its rings get no grant */
    uint64_t waiting[GOS_SWAP_MAX_VGPUS]; /* when its oldest waiting request began (0: none) */
};

struct srv_swpool {
    int fd;                /* memfd of pool.bytes */
    gos_swap_pool pool;
    uint64_t touched;      /* the pool's prefix that evictions have written (host memory taken) */
    struct srv_swturn turn;
    pthread_t prefault;    /* swap_prefault = 1: faults the pool in ahead */
    int prefaulting, stop;
};

/* Gives o's pool range back (if it holds one). */
static void obj_unhold(struct srv_dev *d, struct srv_swobj *o)
{
    if (o && o->held) {
        gos_swap_pool_put(&d->swp->pool, o->off, o->bytes);
        o->held = 0;
    }
}

static void obj_free(struct srv_dev *d, struct srv_swobj *o)
{
    obj_unhold(d, o);
    free(o);
}

/* swap_prefault = 1 (issue 42.2): the pool's memfd is faulted in from the start
 * in the background, PREFAULT_CHUNK at a time, up to half of what the host can
 * give beyond the reserve of hostmem.c at the start (the other half stays for
 * the executors, the tenants and evictions, each of which still asks the host
 * first), so that the first eviction finds its pages there instead of faulting
 * tens of GB in (the executors still page-lock them at their first swap, from
 * memory that is already there). */
#define PREFAULT_CHUNK (256ull << 20)
static void *prefault_main(void *arg)
{
    struct srv_dev *d = arg;
    struct srv *s = d->srv;
    uint64_t t0 = gos_now_ns(), start = UINT64_MAX, end = 0;
    const char *why = "the whole pool";
    uint64_t lim0, room0 = srv_host_room(&lim0), keep0 = srv_host_reserve(lim0);
    uint64_t budget = room0 > keep0 ? (room0 - keep0) / 2 : 0;
    pthread_mutex_lock(&s->lock);
    while (!d->swp->stop && d->swp->touched < d->swp->pool.bytes) {
        uint64_t off = d->swp->touched, len = d->swp->pool.bytes - off, lim, room, keep, got = end > start ? end - start : 0;
        if (len > PREFAULT_CHUNK)
            len = PREFAULT_CHUNK;
        if (len > budget - got && budget > got + GOS_VMM_PAGE)
            len = (budget - got) / GOS_VMM_PAGE * GOS_VMM_PAGE; /* the last piece up to the budget */
        pthread_mutex_unlock(&s->lock);
        room = srv_host_room(&lim);
        keep = srv_host_reserve(lim);
        int short_host = room < keep || len > room - keep || got + len > budget;
        int err = short_host || !fallocate(d->swp->fd, 0, (off_t)off, (off_t)len) ? 0 : errno;
        pthread_mutex_lock(&s->lock);
        if (short_host || err) {
            why = err ? strerror(err) : "half of what the host could give at start";
            break;
        }
        start = start < off ? start : off;
        end = off + len;
        if (end > d->swp->touched)
            d->swp->touched = end;
    }
    uint64_t done = end > start ? end - start : 0, touched = d->swp->touched;
    pthread_mutex_unlock(&s->lock);
    double sec = (double)(gos_now_ns() - t0) * 1e-9;
    gos_log(LOG_INFO, "swap: host pool faulted in ahead: %llu MB in %.1f s (%.2f GB/s; %s), %llu of %llu MB held",
            (unsigned long long)(done >> 20), sec, sec > 0 ? (double)done / sec * 1e-9 : 0.0, why,
            (unsigned long long)(touched >> 20), (unsigned long long)(d->swp->pool.bytes >> 20));
    return NULL;
}

int srv_swap_init(struct srv *s, struct srv_dev *d, const struct gos_serve_devcfg *cfg)
{
    if (!cfg->swap_bytes)
        return GOS_OK;
    if (cfg->isolation == GOS_ISOLATION_NONE)
        return gos_fail(GOS_EINVAL, "device %s: swap needs executors (isolation = process or mps)", cfg->label);
    d->sw = calloc(1, sizeof *d->sw);
    d->swp = calloc(1, sizeof *d->swp);
    if (!d->sw || !d->swp)
        return gos_fail(GOS_ENOMEM, "out of memory");
    d->swp->fd = -1;
    d->swp->turn.fixed_ns = cfg->swap_turn_ms * 1000000ull;
    d->swp->turn.wait_ns = (uint64_t)(cfg->swap_wait_s ? cfg->swap_wait_s : 120) * 1000000000ull;
    uint64_t pool = cfg->swap_pool ? cfg->swap_pool : d->mem_total;
    int rc = gos_swap_init(d->sw, pool / GOS_VMM_PAGE * GOS_VMM_PAGE, cfg->swap_bytes);
    if (!rc)
        rc = gos_swap_pool_init(&d->swp->pool, cfg->swap_bytes);
    if (rc)
        return rc;
    /* sparse: host memory is taken as swaps first touch it (and page-locked
     * then by the executors), never more than `swap` */
    d->swp->fd = memfd_create("gpuos-swap-pool", MFD_CLOEXEC);
    if (d->swp->fd < 0 || ftruncate(d->swp->fd, (off_t)d->swp->pool.bytes))
        return gos_fail(GOS_ENOMEM, "device %s: a host swap pool of %llu MB: %s", cfg->label,
                        (unsigned long long)(d->swp->pool.bytes >> 20), strerror(errno));
    uint64_t lim, room = srv_host_room(&lim), keep = srv_host_reserve(lim);
    if (d->swp->pool.bytes > (room > keep ? room - keep : 0))
        gos_log(LOG_WARNING, "device %s: swap = %llu MB, but this host can give %llu MB now (%s%llu MB kept for the "
                             "daemon and executors): evictions past that are refused with an error",
                cfg->label, (unsigned long long)(d->swp->pool.bytes >> 20),
                (unsigned long long)((room > keep ? room - keep : 0) >> 20),
                lim != UINT64_MAX ? "inside a memory cgroup limit; " : "", (unsigned long long)(keep >> 20));
    if (cfg->swap_prefault && !pthread_create(&d->swp->prefault, NULL, prefault_main, d))
        d->swp->prefaulting = 1;
    return GOS_OK;
}

void srv_swap_fini(struct srv_dev *d)
{
    if (d->swp && d->swp->prefaulting) {
        pthread_mutex_lock(&d->srv->lock);
        d->swp->stop = 1;
        pthread_mutex_unlock(&d->srv->lock);
        pthread_join(d->swp->prefault, NULL);
        d->swp->prefaulting = 0;
    }
    if (d->sw) {
        for (int i = 0; i < d->sw->n; i++)
            obj_free(d, d->sw->obj[i].priv);
        gos_swap_free(d->sw);
        free(d->sw);
        d->sw = NULL;
    }
    if (d->swp) {
        if (d->swp->fd >= 0)
            close(d->swp->fd);
        gos_swap_pool_fini(&d->swp->pool);
        free(d->swp);
        d->swp = NULL;
    }
}

/* Busy: the owner has work queued or running. While another vGPU's turn
 * lasts, its memory counts as busy too unless the waiter has seen it idle for
 * SWAP_IDLE_NS (idle_since[u]: when it last found u idle, 0: busy), so a busy
 * tenant's short pauses (a synchronise, a host step) do not hand its memory
 * to the next one at every pause: the swaps would cost more than the work
 * they make room for. Once a turn is over only the longest waiter may take
 * its memory. */
#define SWAP_IDLE_NS 100000000ull
static uint64_t turn_len(struct srv *s, struct srv_dev *d, int holder, int waiter);
/* Whether no other vGPU has waited longer than the request of vGPU v that
 * began at t_start: the longest waiter takes the next turn. */
static int first_waiter(const struct srv_swturn *t, int v, uint64_t t_start)
{
    for (int u = 0; u < GOS_SWAP_MAX_VGPUS; u++)
        if (u != v && t->waiting[u] && t->waiting[u] < t_start)
            return 0;
    return 1;
}

/* Whether vGPU u's turn is over for waiter w (lock held). */
static int turn_over(struct srv *s, struct srv_dev *d, int u, int w, uint64_t now)
{
    uint64_t t0 = d->swp->turn.since[u];
    return !t0 || now - t0 >= turn_len(s, d, u, w);
}

static void mark_busy(struct srv *s, struct srv_dev *d, int waiter, uint64_t t_start, uint64_t *idle_since)
{
    struct srv_swturn *t = &d->swp->turn;
    uint8_t busy[GOS_SWAP_MAX_VGPUS] = {0}, keep[GOS_SWAP_MAX_VGPUS] = {0};
    for (int i = 0; i < d->sw->n; i++) {
        struct srv_swobj *p = d->sw->obj[i].priv;
        d->sw->obj[i].busy = p && p->c && (p->c->outstanding > 0 || p->c->swap_hold);
        busy[d->sw->obj[i].vgpu] |= (uint8_t)d->sw->obj[i].busy;
    }
    uint64_t now = gos_now_ns();
    int first = first_waiter(t, waiter, t_start);
    for (int u = 0; u < GOS_SWAP_MAX_VGPUS; u++) {
        if (busy[u] || !idle_since[u])
            idle_since[u] = busy[u] ? 0 : now;
        int free_now = turn_over(s, d, u, waiter, now) || (!busy[u] && now - idle_since[u] >= SWAP_IDLE_NS);
        keep[u] = u != waiter && t->since[u] && !(free_now && first);
    }
    for (int i = 0; i < d->sw->n; i++)
        d->sw->obj[i].busy |= keep[d->sw->obj[i].vgpu];
}

/* A request that needs a plan: an allocation of `bytes` (rounded), a launch,
 * or a copy (its message). */
struct swap_req {
    int type; /* GOS_MSG_MEM_ALLOC, GOS_MSG_LAUNCH or GOS_MSG_COPY */
    uint64_t bytes;
    const void *payload;
};

static int plan_req(struct srv_dev *d, struct srv_client *c, const struct swap_req *q, gos_swap_plan *pl)
{
    if (q->type == GOS_MSG_MEM_ALLOC)
        return gos_swap_plan_alloc(d->sw, c->vgpu, q->bytes, pl);
    if (q->type == GOS_MSG_LAUNCH)
        return gos_swap_plan_launch(d->sw, c->vgpu, c->id, pl);
    const struct gos_msg_copy *m = q->payload;
    struct gos_swap_range r[2] = {{m->dptr, m->bytes}, {m->dptr2, m->bytes}};
    return gos_swap_plan_copy(d->sw, c->vgpu, c->id, r, m->op == GOS_OP_DTOD ? 2 : 1, 0, pl);
}

/* Whether a request whose plan failed for room can be served by waiting
 * (issue 42): another vGPU's memory is in transition, an allocation is under
 * way (its room reserved, its object not added yet: the executor is creating
 * it), or the plan would succeed were every other vGPU's memory idle (what is
 * busy or kept for a turn now is swapped out once that turn ends). Before, only
 * busy memory counted: a waiter that looked while the holder of the next turn
 * was still creating its allocation (seconds for 45 GB on an H100) found
 * nothing busy and got GOS_ENOMEM at once. 0: it never fits (the reason in
 * the last error). */
static int wait_helps(struct srv_dev *d, struct srv_client *c, const struct swap_req *q)
{
    if (d->sw->reserved)
        return 1;
    for (int i = 0; i < d->sw->n; i++)
        if (d->sw->obj[i].vgpu != c->vgpu &&
            (d->sw->obj[i].state == GOS_SWAP_EVICTING || d->sw->obj[i].state == GOS_SWAP_RESTORING))
            return 1;
    gos_swap_plan *pl = malloc(sizeof *pl);
    int rc = GOS_ENOMEM;
    if (pl) {
        d->sw->busy_ignored = 1; /* (victims are never c's own) */
        rc = plan_req(d, c, q, pl);
        d->sw->busy_ignored = 0;
    }
    free(pl);
    return rc == GOS_OK;
}

/* How long the holder's turn lasts before vGPU `waiter` may turn it out: fixed
 * (swap_turn_ms), or SWAP_TURN_X times what the turn's swap will take (the
 * holder's resident bytes out, the waiter's swapped bytes in, at the swap
 * bandwidth measured so far, SWAP_BW_GUESS before any), so that a turn's swap
 * costs at most about 1 / SWAP_TURN_X of it. A holder whose compute share is
 * larger than the waiter's keeps its turn that many times longer, so shares
 * hold over periods that span turns. At most half of swap_wait_s. */
#define SWAP_TURN_X 10
#define SWAP_TURN_MIN_NS 100000000ull
#define SWAP_BW_GUESS 4.0 /* bytes per ns */
static uint64_t turn_len(struct srv *s, struct srv_dev *d, int holder, int waiter)
{
    struct srv_swturn *t = &d->swp->turn;
    uint64_t len = t->fixed_ns;
    if (!len) {
        double bw = t->moved_ns ? (double)t->moved / (double)t->moved_ns : SWAP_BW_GUESS;
        double bytes = (double)(d->sw->vgpu[holder].resident + d->sw->vgpu[waiter].swapped);
        len = (uint64_t)(bytes / bw) * SWAP_TURN_X;
        int sh = s->vgpus[holder].cfg.compute, sw = s->vgpus[waiter].cfg.compute;
        if (sh > sw && sw > 0)
            len = len * (uint64_t)sh / (uint64_t)sw;
        if (len < SWAP_TURN_MIN_NS)
            len = SWAP_TURN_MIN_NS;
        if (len > t->wait_ns / 2)
            len = t->wait_ns / 2;
    }
    return len;
}

/* Waits a little for other tenants' work (lock dropped); 0 when it is time to
 * give up (swap_wait_s, or the client is gone). The caller's own hold is let
 * go meanwhile, so two tenants waiting for each other's memory cannot block
 * each other. While another vGPU's turn lasts it just waits; once it is over
 * (or the caller holds the turn, or none does) the vGPUs whose busy memory is
 * in the way are turned out (*forced set; turn_clear undoes it): their rings
 * get no new grant and their grants end once their rings are empty
 * (srv_ring_end_soon: a lone client's idle grant is otherwise kept), so their
 * memory falls idle and can be evicted. A caller turned out itself waits. */
static int wait_turn(struct srv *s, struct srv_dev *d, struct srv_client *c, uint64_t t_start, int *forced)
{
    struct srv_swturn *t = &d->swp->turn;
    uint64_t now = gos_now_ns();
    if (now - t_start >= t->wait_ns || c->dead)
        return 0;
    if (!t->waiting[c->vgpu] || t->waiting[c->vgpu] > t_start)
        t->waiting[c->vgpu] = t_start;
    if (!t->out[c->vgpu] && first_waiter(t, c->vgpu, t_start))
        for (int i = 0; i < d->sw->n; i++) {
            const gos_swap_obj *o = &d->sw->obj[i];
            struct srv_swobj *p = o->priv;
            if (o->busy && o->vgpu != c->vgpu && o->state == GOS_SWAP_RESIDENT && p && p->c && p->c != c &&
                turn_over(s, d, o->vgpu, c->vgpu, now)) {
                t->out[o->vgpu] = 1;
                *forced = 1;
                srv_ring_end_soon(p->c);
            }
        }
    int hold = c->swap_hold;
    c->swap_hold = 0;
    pthread_mutex_unlock(&s->lock);
    usleep(500);
    pthread_mutex_lock(&s->lock);
    c->swap_hold = hold;
    return 1;
}

/* The end of a request's wait (lock held): it waits no longer, and those it
 * turned out may have grants again (those whose memory went out find it
 * swapped and wait for their own turn through the socket). */
static void turn_clear(struct srv_dev *d, struct srv_client *c, uint64_t t_start, int forced)
{
    if (d->swp->turn.waiting[c->vgpu] == t_start)
        d->swp->turn.waiting[c->vgpu] = 0;
    if (!forced)
        return;
    memset(d->swp->turn.out, 0, sizeof d->swp->turn.out);
    if (d->bell_started) {
        uint64_t one = 1;
        if (write(d->bell_fd, &one, sizeof one) < 0) { /* the bell's thread looks every 100 ms anyway */
        }
    }
}

/* A plan of vGPU v was carried out (lock held): v's turn begins when the plan
 * took another vGPU's memory (a turn, counted) or v had none before; a vGPU
 * left with nothing resident has no turn. */
static void turn_take(struct srv *s, struct srv_dev *d, int v, int took)
{
    struct srv_swturn *t = &d->swp->turn;
    if (took) {
        d->sw->vgpu[v].turns++;
        gos_log(LOG_INFO, "swap: vGPU %s takes its turn %llu", s->vgpus[v].cfg.name,
                (unsigned long long)d->sw->vgpu[v].turns);
    }
    if (took || !t->since[v])
        t->since[v] = gos_now_ns();
    for (int u = 0; u < GOS_SWAP_MAX_VGPUS; u++)
        if (!d->sw->vgpu[u].resident)
            t->since[u] = 0;
}

/* Whether plan pl evicts memory of a vGPU other than v. */
static int takes_from_others(struct srv_dev *d, const gos_swap_plan *pl, int v)
{
    for (int i = 0; i < pl->n_evict; i++) {
        const gos_swap_obj *o = gos_swap_find(d->sw, pl->evict[i]);
        if (o && o->vgpu != v)
            return 1;
    }
    return 0;
}

/* The error of a request that waited swap_wait_s for its turn (or whose
 * client went away meanwhile): the policy's reason, and the wait. */
static int waited_out(struct srv *s, struct srv_dev *d, struct srv_client *c, int rc)
{
    if (c->dead)
        return gos_fail(rc, "swap: vGPU %s: the client went away while it waited for its turn", s->vgpus[c->vgpu].cfg.name);
    char why[200];
    snprintf(why, sizeof why, "%s", d->swp->turn.out[c->vgpu] ? "another vGPU's turn" : gos_last_error());
    return gos_fail(GOS_ENOMEM, "swap: vGPU %s waited %llu s (swap_wait_s) for its turn on the device and did not get "
                                "it: %s; nothing was lost", s->vgpus[c->vgpu].cfg.name,
                    (unsigned long long)(d->swp->turn.wait_ns / 1000000000ull), why);
}

int srv_swap_turned_out(struct srv_dev *d, int vgpu)
{
    return d->swp && vgpu >= 0 && vgpu < GOS_SWAP_MAX_VGPUS && d->swp->turn.out[vgpu];
}

static double ms_since(uint64_t t0) { return (double)(gos_now_ns() - t0) * 1e-6; }

/* Whether the host can give the bytes an eviction into [off, off + bytes) of
 * the pool would newly touch: GOS_OK, or GOS_ENOMEM saying why. */
static int host_can_take(struct srv *s, struct srv_dev *d, int vgpu, uint64_t off, uint64_t bytes, uint64_t margin)
{
    if (off + bytes <= d->swp->touched)
        return GOS_OK; /* pages the pool holds already */
    uint64_t more = off + bytes - d->swp->touched, lim, room = srv_host_room(&lim),
             keep = srv_host_reserve(lim) + margin;
    if (room >= keep && more <= room - keep)
        return GOS_OK;
    return gos_fail(GOS_ENOMEM, "swap: host memory is short: evicting %llu MB of vGPU %s needs %llu MB more of it, "
                                "the host can give %llu MB (%s%llu MB kept for the daemon, executors and restores); refused, "
                                "nothing evicted or lost", (unsigned long long)(bytes >> 20), s->vgpus[vgpu].cfg.name,
                    (unsigned long long)(more >> 20), (unsigned long long)(room > keep ? (room - keep) >> 20 : 0),
                    lim != UINT64_MAX ? "memory cgroup limit; " : "", (unsigned long long)(keep >> 20));
}

/* One eviction or restore (lock held, dropped for the executor's work).
 * GOS_ENOMEM (with the message) when the host could not give an eviction its
 * memory and margin more, or a restore failed (its object stays swapped): the
 * caller stops the plan there. A failed eviction leaves its victim resident
 * and is logged. */
static int step(struct srv *s, struct srv_dev *d, int evict, uint64_t id, uint64_t margin)
{
    gos_swap_obj *o = gos_swap_find(d->sw, id);
    struct srv_swobj *p = o ? o->priv : NULL;
    if (!o || !p || !p->c || !p->c->x) {
        if (o)
            evict ? gos_swap_evicted(d->sw, id, 0) : gos_swap_restored(d->sw, id, 0);
        return GOS_OK;
    }
    struct srv_client *owner = p->c;
    struct srv_exec *x = owner->x;
    int vgpu = o->vgpu, rc;
    struct x_swap_io m = {o->va, p->off, d->swp->pool.bytes};
    struct x_swap_rep rep = {0};
    if (evict) {
        if ((rc = gos_swap_pool_get(&d->swp->pool, o->bytes, &m.off))) {
            gos_log(LOG_WARNING, "swap: vGPU %s: %s", s->vgpus[vgpu].cfg.name, gos_last_error());
            gos_swap_evicted(d->sw, id, 0);
            return GOS_OK;
        }
        if ((rc = host_can_take(s, d, vgpu, m.off, o->bytes, margin))) {
            gos_swap_pool_put(&d->swp->pool, m.off, o->bytes);
            gos_log(LOG_WARNING, "%s", gos_last_error());
            gos_swap_evicted(d->sw, id, 0);
            return rc;
        }
        p->off = m.off;
        p->bytes = o->bytes;
        p->held = 1;
    }
    uint64_t bytes = o->bytes;
    uint64_t t0 = gos_now_ns();
    owner->refs++; /* the owner (and its executor) outlive the call */
    pthread_mutex_unlock(&s->lock);
    rc = srv_exec_call(x, evict ? X_EVICT_POOL : X_RESTORE_POOL, &m, sizeof m, d->swp->fd, &rep, sizeof rep);
    pthread_mutex_lock(&s->lock);
    double ms = ms_since(t0);
    if (!rc) { /* the swap time of the owner's vGPU, and the bandwidth turns are cut by */
        struct srv_swturn *t = &d->swp->turn;
        uint64_t ns = gos_now_ns() - t0;
        d->sw->vgpu[vgpu].swap_ns += ns;
        t->moved = t->moved - t->moved / 4 + bytes;
        t->moved_ns = t->moved_ns - t->moved_ns / 4 + ns;
    }
    if (!rc)
        gos_log(LOG_INFO, "swap: %s vGPU %s: %llu MB in %.1f ms (copy %.1f ms, %.2f GB/s; page-locking %.1f ms%s)",
                evict ? "evicted" : "restored", s->vgpus[vgpu].cfg.name, (unsigned long long)(bytes >> 20), ms,
                (double)rep.copy_ns * 1e-6, rep.copy_ns ? (double)bytes / (double)rep.copy_ns : 0.0,
                (double)rep.register_ns * 1e-6, rep.pinned ? "" : "; NOT page-locked");
    else /* (before, silent: a failed restore let the request run on unmapped memory) */
        gos_log(LOG_WARNING, "swap: %s vGPU %s: %llu MB failed after %.1f ms: %s", evict ? "evicting" : "restoring",
                s->vgpus[vgpu].cfg.name, (unsigned long long)(bytes >> 20), ms, gos_last_error());
    int failed = rc;
    /* p stays valid: only a report (below) or the owner's end frees it, and the
     * owner marks it dead while it is in transition */
    int dropped;
    if (evict) {
        if (rc)
            obj_unhold(d, p); /* still resident: the range is free again */
        dropped = gos_swap_evicted(d->sw, id, rc == GOS_OK);
    } else {
        if (!rc)
            obj_unhold(d, p); /* resident again */
        dropped = gos_swap_restored(d->sw, id, rc == GOS_OK);
    }
    if (dropped)
        obj_free(d, p);
    if (evict && !rc && m.off + bytes > d->swp->touched)
        d->swp->touched = m.off + bytes;
    srv_client_unref(owner);
    if (failed && !evict) /* still swapped: the request that needed it must not run */
        return gos_fail(GOS_ENOMEM, "swap: restoring %llu MB of vGPU %s failed (nothing lost: it stays in host swap "
                                    "space; see the daemon's log)", (unsigned long long)(bytes >> 20),
                        s->vgpus[vgpu].cfg.name);
    return GOS_OK;
}

/* Carries a plan out; when the host refuses an eviction the remaining steps
 * are reported undone (victims stay resident, restores stay swapped) and its
 * GOS_ENOMEM returned. */
static int run_plan(struct srv *s, struct srv_dev *d, const gos_swap_plan *pl, uint64_t margin)
{
    int rc = GOS_OK;
    gos_swap_begin(d->sw, pl);
    for (int i = 0; i < pl->n_steps; i++) {
        if (rc) {
            uint64_t id = pl->step[i].id;
            gos_swap_obj *o = gos_swap_find(d->sw, id);
            struct srv_swobj *p = o ? o->priv : NULL;
            if (o && (pl->step[i].evict ? gos_swap_evicted(d->sw, id, 0) : gos_swap_restored(d->sw, id, 0)))
                obj_free(d, p); /* its owner died meanwhile */
            continue;
        }
        rc = step(s, d, pl->step[i].evict, pl->step[i].id, margin);
    }
    gos_swap_end(d->sw, pl);
    return rc;
}

/* At a client's first allocation (lock held, dropped for the call): its
 * executor locks the pool's faulted-in part ahead (X_POOL_PIN; swap_prefault),
 * between its other work, so that its first eviction does not wait for tens of
 * GB to be page-locked (issue 42.2). A failure costs only that head start. */
static void pin_ahead(struct srv *s, struct srv_dev *d, struct srv_client *c)
{
    if (c->swap_pin_sent || !d->swp->prefaulting || !d->swp->touched || !c->x)
        return;
    c->swap_pin_sent = 1;
    struct x_swap_io m = {0, d->swp->touched, d->swp->pool.bytes};
    struct srv_exec *x = c->x;
    c->refs++;
    pthread_mutex_unlock(&s->lock);
    if (srv_exec_call(x, X_POOL_PIN, &m, sizeof m, d->swp->fd, NULL, 0))
        gos_log(LOG_WARNING, "swap: vGPU %s: locking the pool ahead: %s", s->vgpus[c->vgpu].cfg.name,
                gos_last_error());
    pthread_mutex_lock(&s->lock);
    srv_client_unref(c);
}

/* Plans request q of client c into pl, waiting while its plan fails only
 * for what other tenants hold now (their work, their turn, a transition or
 * an allocation under way: wait_helps) or c's own memory is in transition,
 * up to swap_wait_s. GOS_OK, or the error (logged: the daemon's log names
 * what a program was refused and why). */
static int plan_wait(struct srv *s, struct srv_dev *d, struct srv_client *c, const struct swap_req *q,
                     gos_swap_plan *pl, uint64_t t_start, int *forced)
{
    uint64_t idle_since[GOS_SWAP_MAX_VGPUS] = {0};
    int rc;
    for (;;) {
        mark_busy(s, d, c->vgpu, t_start, idle_since);
        /* turned out: its memory is on its way out for another's turn */
        rc = d->swp->turn.out[c->vgpu] ? GOS_ENOMEM : plan_req(d, c, q, pl);
        if (!(rc == GOS_EBUSY || (rc == GOS_ENOMEM && (d->swp->turn.out[c->vgpu] || wait_helps(d, c, q)))))
            break;
        if (!wait_turn(s, d, c, t_start, forced)) {
            rc = waited_out(s, d, c, rc);
            break;
        }
    }
    if (rc)
        gos_log(LOG_WARNING, "swap: vGPU %s: %s refused: %s", s->vgpus[c->vgpu].cfg.name,
                q->type == GOS_MSG_MEM_ALLOC ? "an allocation" : q->type == GOS_MSG_LAUNCH ? "a launch" : "a copy",
                gos_last_error());
    return rc;
}

int srv_swap_alloc(struct srv_client *c, uint64_t bytes, uint64_t *dptr)
{
    struct srv *s = c->srv;
    struct srv_dev *d = &s->devs[s->vgpus[c->vgpu].cfg.device];
    uint64_t sz = gos_vmm_round(bytes);
    gos_swap_plan *pl = malloc(sizeof *pl);
    if (!pl || !sz) {
        free(pl);
        return gos_fail(sz ? GOS_ENOMEM : GOS_EINVAL, "swap: allocation of %llu bytes", (unsigned long long)bytes);
    }
    int forced = 0;
    uint64_t t_start = gos_now_ns();
    struct swap_req q = {GOS_MSG_MEM_ALLOC, sz, NULL};
    int rc = plan_wait(s, d, c, &q, pl, t_start, &forced);
    if (rc) {
        turn_clear(d, c, t_start, forced);
        free(pl);
        return rc;
    }
    int took = takes_from_others(d, pl, c->vgpu);
    /* room kept for a restore of the largest object, this one included */
    uint64_t largest = sz;
    for (int i = 0; i < d->sw->n; i++)
        if (d->sw->obj[i].bytes > largest)
            largest = d->sw->obj[i].bytes;
    rc = run_plan(s, d, pl, largest);
    free(pl);
    if (!rc)
        turn_take(s, d, c->vgpu, took);
    turn_clear(d, c, t_start, forced);
    if (rc) {
        gos_swap_cancel_alloc(d->sw, sz);
        return rc;
    }
    struct srv_swobj *p = calloc(1, sizeof *p);
    if (!p) {
        gos_swap_cancel_alloc(d->sw, sz);
        return gos_fail(GOS_ENOMEM, "daemon out of memory");
    }
    p->c = c;
    pin_ahead(s, d, c);
    pthread_mutex_unlock(&s->lock);
    rc = srv_exec_call(c->x, X_VALLOC, &bytes, 8, -1, dptr, 8);
    pthread_mutex_lock(&s->lock);
    uint64_t id;
    if (rc || (rc = gos_swap_add(d->sw, c->vgpu, c->id, *dptr, sz, 0, &id))) {
        gos_swap_cancel_alloc(d->sw, sz);
        free(p);
        return rc;
    }
    gos_swap_find(d->sw, id)->priv = p;
    if (took) /* its turn runs from when its memory is there, not from the plan: the
               * creation of tens of GB took time that was no turn of its work */
        d->swp->turn.since[c->vgpu] = gos_now_ns();
    return GOS_OK;
}

void srv_swap_free(struct srv_client *c, uint64_t dptr)
{
    struct srv *s = c->srv;
    struct srv_dev *d = &s->devs[s->vgpus[c->vgpu].cfg.device];
    gos_swap_obj *o = gos_swap_find_va(d->sw, c->id, dptr);
    if (!o)
        return;
    struct srv_swobj *p = o->priv;
    if (p)
        p->c = NULL;
    if (gos_swap_remove(d->sw, o->id) == 1 && p)
        obj_free(d, p);
}

void srv_swap_client_gone(struct srv_client *c)
{
    struct srv *s = c->srv;
    if (c->vgpu < 0)
        return;
    struct srv_dev *d = &s->devs[s->vgpus[c->vgpu].cfg.device];
    if (!d->sw)
        return;
    for (int i = d->sw->n - 1; i >= 0; i--) {
        gos_swap_obj *o = &d->sw->obj[i];
        struct srv_swobj *p = o->priv;
        if (!p || p->c != c)
            continue;
        p->c = NULL;
        if (gos_swap_remove(d->sw, o->id) == 1)
            obj_free(d, p);
    }
}

int srv_swap_need(struct srv_client *c, const struct gos_msg_hdr *h, const void *payload)
{
    struct srv *s = c->srv;
    struct srv_dev *d = &s->devs[s->vgpus[c->vgpu].cfg.device];
    gos_swap_plan *pl = malloc(sizeof *pl);
    if (!pl)
        return gos_fail(GOS_ENOMEM, "daemon out of memory");
    int forced = 0;
    uint64_t t_start = gos_now_ns();
    c->swap_hold = 1; /* the caller clears it once the request is queued */
    struct swap_req q = {h->type, 0, payload};
    int rc = plan_wait(s, d, c, &q, pl, t_start, &forced);
    if (!rc && pl->n_steps) {
        int took = takes_from_others(d, pl, c->vgpu);
        if (!(rc = run_plan(s, d, pl, 0)))
            turn_take(s, d, c->vgpu, took);
    }
    turn_clear(d, c, t_start, forced);
    free(pl);
    return rc;
}

void srv_swap_record(struct srv *s, int v, uint64_t *resident, uint64_t *swapped)
{
    struct srv_dev *d = &s->devs[s->vgpus[v].cfg.device];
    *resident = d->sw ? d->sw->vgpu[v].resident : 0;
    *swapped = d->sw ? d->sw->vgpu[v].swapped : 0;
}

void srv_swap_turns(struct srv *s, int v, uint64_t *turns, uint64_t *swap_ns)
{
    struct srv_dev *d = &s->devs[s->vgpus[v].cfg.device];
    *turns = d->sw ? d->sw->vgpu[v].turns : 0;
    *swap_ns = d->sw ? d->sw->vgpu[v].swap_ns : 0;
}
