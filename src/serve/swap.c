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
 * All functions run with srv->lock held and drop it around executor calls.
 * Process: the daemon (gpuos serve). */
#include "serve/serve.h"

#include "common/clock.h"
#include "common/status.h"
#include "device/vmm_ops.h"
#include "common/log.h"
#include "proto/xproto.h"
#include "vmem/swap_pool.h"

#include <errno.h>
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

struct srv_swpool {
    int fd;                /* memfd of pool.bytes */
    gos_swap_pool pool;
    uint64_t touched;      /* the pool's prefix that evictions have written (host memory taken) */
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
    return GOS_OK;
}

void srv_swap_fini(struct srv_dev *d)
{
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

/* Busy: the owner has work queued or running. */
static void mark_busy(struct srv_dev *d)
{
    for (int i = 0; i < d->sw->n; i++) {
        struct srv_swobj *p = d->sw->obj[i].priv;
        d->sw->obj[i].busy = p && p->c && (p->c->outstanding > 0 || p->c->swap_hold);
    }
}

/* Whether another vGPU holds resident memory that is busy now: a plan that
 * failed for room may succeed once that work ends (tenants take turns). */
static int others_busy(struct srv_dev *d, int vgpu)
{
    for (int i = 0; i < d->sw->n; i++) {
        const gos_swap_obj *o = &d->sw->obj[i];
        if (o->vgpu != vgpu && o->busy && o->state == GOS_SWAP_RESIDENT)
            return 1;
    }
    return 0;
}

/* Waits a little for other tenants' work (lock dropped); 0 when it is time to
 * give up (SRV_SWAP_WAIT_MS). The caller's own hold is let go meanwhile, so
 * two tenants waiting for each other's memory cannot block each other. The
 * grants of the tenants whose memory is busy end once their rings are empty
 * (srv_ring_end_soon): a lone client's idle grant is otherwise kept while no
 * task of the device waits (ring.c), and its memory would stay busy. */
#define SRV_SWAP_WAIT_MS 30000
static int wait_turn(struct srv *s, struct srv_dev *d, struct srv_client *c, int *waited_us)
{
    if (*waited_us >= SRV_SWAP_WAIT_MS * 1000)
        return 0;
    for (int i = 0; i < d->sw->n; i++) {
        struct srv_swobj *p = d->sw->obj[i].priv;
        if (d->sw->obj[i].busy && p && p->c && p->c != c)
            srv_ring_end_soon(p->c);
    }
    int hold = c->swap_hold;
    c->swap_hold = 0;
    pthread_mutex_unlock(&s->lock);
    usleep(500);
    pthread_mutex_lock(&s->lock);
    c->swap_hold = hold;
    *waited_us += 500;
    return 1;
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
 * GOS_ENOMEM (with the message) only when the host could not give an
 * eviction its memory and margin more: the caller stops the plan there. */
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
    if (!rc)
        gos_log(LOG_INFO, "swap: %s vGPU %s: %llu MB in %.1f ms (copy %.1f ms, %.2f GB/s; page-locking %.1f ms%s)",
                evict ? "evicted" : "restored", s->vgpus[vgpu].cfg.name, (unsigned long long)(bytes >> 20), ms,
                (double)rep.copy_ns * 1e-6, rep.copy_ns ? (double)bytes / (double)rep.copy_ns : 0.0,
                (double)rep.register_ns * 1e-6, rep.pinned ? "" : "; NOT page-locked");
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
    int rc, waited = 0;
    for (;;) {
        mark_busy(d);
        rc = gos_swap_plan_alloc(d->sw, c->vgpu, sz, pl);
        if (rc != GOS_ENOMEM || !others_busy(d, c->vgpu) || !wait_turn(s, d, c, &waited))
            break;
    }
    if (rc) {
        free(pl);
        return rc;
    }
    /* room kept for a restore of the largest object, this one included */
    uint64_t largest = sz;
    for (int i = 0; i < d->sw->n; i++)
        if (d->sw->obj[i].bytes > largest)
            largest = d->sw->obj[i].bytes;
    rc = run_plan(s, d, pl, largest);
    free(pl);
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
    int rc = GOS_OK, waited = 0;
    c->swap_hold = 1; /* the caller clears it once the request is queued */
    for (;;) {
        mark_busy(d);
        if (h->type == GOS_MSG_LAUNCH)
            rc = gos_swap_plan_launch(d->sw, c->vgpu, c->id, pl);
        else {
            const struct gos_msg_copy *m = payload;
            struct gos_swap_range r[2] = {{m->dptr, m->bytes}, {m->dptr_src, m->bytes}};
            rc = gos_swap_plan_copy(d->sw, c->vgpu, c->id, r, m->dir == GOS_OP_DTOD ? 2 : 1, 0, pl);
        }
        /* one of its allocations is in transition, or the memory it needs is
         * busy with other tenants' work: wait for it */
        if (!(rc == GOS_EBUSY || (rc == GOS_ENOMEM && others_busy(d, c->vgpu))) || !wait_turn(s, d, c, &waited))
            break;
    }
    if (!rc && pl->n_steps)
        rc = run_plan(s, d, pl, 0);
    free(pl);
    return rc;
}

void srv_swap_record(struct srv *s, int v, uint64_t *resident, uint64_t *swapped)
{
    struct srv_dev *d = &s->devs[s->vgpus[v].cfg.device];
    *resident = d->sw ? d->sw->vgpu[v].resident : 0;
    *swapped = d->sw ? d->sw->vgpu[v].swapped : 0;
}
