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
 * copies at the pinned rate without registering host memory each time.
 * Before a copy or launch of a client is queued, what it needs is restored
 * (X_RESTORE_POOL: new memory at the same address, copied back), evicting
 * others as needed: a copy needs the allocations its ranges touch, a launch
 * all of its client's. "Idle": an allocation whose client has no work queued
 * or running is never touched by the device, so only those are victims (the
 * policy's busy flag), and a client whose allocation is in transition waits
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
 * the daemon, less a reserve for the daemon and executors); a plan is tried
 * against the host before anything moves (host_holds), the pool's free pages
 * that the host gave already counting as room. When the host cannot give it,
 * the request waits while another vGPU holds memory that its client's end
 * will give back (swap_host_wait_s, issue 42: three jobs of 45 GB on a host of
 * 128 GB), else (or past that) it fails with GPUOS_ENOMEM saying so: the
 * victims stay resident and no tenant's bytes are lost. Evictions for a new
 * allocation also leave room for the largest object's restore (which needs its
 * victims evicted before its own range comes free), so what was swapped out
 * can always come back.
 *
 * Busy tenants whose memory does not fit together take turns (issue 42;
 * struct srv_swturn below): a busy vGPU keeps its memory for its turn, then
 * the longest waiter turns it out and takes the next. swap_prefault (auto by
 * default) faults the pool in at start as far as it can be needed. The swap
 * helper (swap_helper = 1, the default; struct srv_swpool) page-locks it as
 * it comes and makes every copy through the owner's exported memory, so no
 * tenant's context ever locks; without it (off, or failed) each client's
 * executor locks ahead only its window of the pool (struct srv_swwin,
 * X_POOL_PIN), where its evictions go, and copies itself.
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
    uint64_t host_wait_ns;           /* swap_host_wait_s */
    uint8_t host_short[GOS_SWAP_MAX_VGPUS]; /* 1: its waiting request waits for host memory */
};

/* A client's window of the pool (swap_prefault, issue 42.2): where its
 * evictions go, as large as its allocations, inside the part of the pool the
 * host gave already and clear of other clients' windows; its executor
 * page-locks the window's chunks ahead (X_POOL_PIN) and no others. */
struct srv_swwin {
    struct srv_client *c;
    uint64_t off, len;   /* pool units; len 0: none found yet */
    uint64_t pin0, pin1; /* the chunks' bytes its executor was told to lock ahead */
};

struct srv_swpool {
    int fd;                /* memfd of pool.bytes */
    gos_swap_pool pool;
    uint64_t touched;      /* the pool's prefix that evictions have written (host memory taken) */
    struct srv_swturn turn;
    pthread_t prefault;    /* swap_prefault: faults the pool in ahead */
    int prefault_mode;     /* swap_prefault: 0, 1 or GOS_SWAP_PREFAULT_AUTO */
    int prefaulting, stop;
    pthread_cond_t wake_cv; /* the prefault's: the vGPUs known (srv_swap_quotas_known), or stop */
    int quotas_known;
    struct srv_swwin *win; /* the clients' windows (prefault on, no helper) */
    int n_win, cap_win;
    /* swap_helper (issue 42.2): an executor of the daemon's own that keeps the
     * pool page-locked and makes every swap copy (X_POOL_COPY through the
     * owner's exported memory), so no tenant's context ever page-locks: on
     * GPU-cf4134f8 a tenant's executor locking its 45 GB window ahead stalled
     * that tenant 11 s. NULL: none (off, or it failed to start); helper_off:
     * given up after a failure (kept until the end: a call may be under way) */
    struct srv_exec *helper;
    int helper_off;
    uint64_t helper_locked; /* the pool's first bytes it holds locked */
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

/* The clients' windows of the pool (struct srv_swwin; lock held). */
static struct srv_swwin *win_of(struct srv_dev *d, const struct srv_client *c)
{
    for (int i = 0; i < d->swp->n_win; i++)
        if (d->swp->win[i].c == c)
            return &d->swp->win[i];
    return NULL;
}

/* The free run of the pool from s (0: s lies in another window), below top
 * and up to the next window but me. */
static uint64_t gap_at(struct srv_dev *d, const struct srv_swwin *me, uint64_t s, uint64_t top)
{
    uint64_t e = top;
    if (s >= top)
        return 0;
    for (int i = 0; i < d->swp->n_win; i++) {
        const struct srv_swwin *o = &d->swp->win[i];
        if (o == me || !o->len)
            continue;
        if (o->off <= s && s < o->off + o->len)
            return 0;
        if (o->off > s && o->off < e)
            e = o->off;
    }
    return e - s;
}

/* Grows w toward `want` bytes below top: in place, else at the first gap that
 * holds it all, else as far as its own gap goes (a new window: the largest
 * gap). A window moved keeps what was evicted into its old place there. */
static void win_fit(struct srv_dev *d, struct srv_swwin *w, uint64_t want, uint64_t top)
{
    if (w->len >= want)
        return;
    uint64_t g = w->len ? gap_at(d, w, w->off, top) : 0;
    if (g >= want) {
        w->len = want;
        return;
    }
    uint64_t best = w->off, best_len = g;
    for (int i = -1; i < d->swp->n_win; i++) {
        const struct srv_swwin *o = i < 0 ? NULL : &d->swp->win[i];
        if (o && (o == w || !o->len))
            continue;
        uint64_t s = o ? o->off + o->len : 0, gl = gap_at(d, w, s, top);
        if (gl >= want) {
            w->off = s;
            w->len = want;
            return;
        }
        if (!w->len && gl > best_len) {
            best = s;
            best_len = gl;
        }
    }
    w->off = best;
    w->len = best_len;
}

/* c's window grown toward its allocations (lock held; prefault on). */
static void win_update(struct srv *s, struct srv_dev *d, struct srv_client *c)
{
    struct srv_swpool *sp = d->swp;
    struct srv_swwin *w = win_of(d, c);
    if (!w) {
        if (sp->n_win == sp->cap_win) {
            int cap = sp->cap_win ? 2 * sp->cap_win : 8;
            struct srv_swwin *x = realloc(sp->win, sizeof *x * (size_t)cap);
            if (!x)
                return; /* no window: its evictions go anywhere, as without the prefault */
            sp->win = x;
            sp->cap_win = cap;
        }
        w = &sp->win[sp->n_win++];
        *w = (struct srv_swwin){.c = c};
    }
    uint64_t want = 0, len0 = w->len, off0 = w->off;
    for (int i = 0; i < d->sw->n; i++) {
        const struct srv_swobj *p = d->sw->obj[i].priv;
        if (p && p->c == c)
            want += d->sw->obj[i].bytes;
    }
    win_fit(d, w, want, sp->touched / GOS_SWAP_POOL_UNIT * GOS_SWAP_POOL_UNIT);
    if (w->len != len0 || w->off != off0)
        gos_log(LOG_INFO, "swap: vGPU %s: client %u's window of the pool: %llu..%llu MB (its allocations %llu MB)",
                s->vgpus[c->vgpu].cfg.name, c->id, (unsigned long long)(w->off >> 20),
                (unsigned long long)((w->off + w->len) >> 20), (unsigned long long)(want >> 20));
}

/* The chunks of [off, off + len) of the pool that may be locked ahead: those
 * it touches that lie wholly in the part of the pool the host gave (locking a
 * chunk pins all its pages: one past it would take host memory nobody asked
 * for). */
static void pin_range(const struct srv_swpool *sp, uint64_t off, uint64_t len, uint64_t *b0, uint64_t *b1)
{
    uint64_t end = off + len < sp->touched ? off + len : sp->touched;
    uint64_t c0 = off / X_POOL_CHUNK, c1 = (end + X_POOL_CHUNK - 1) / X_POOL_CHUNK;
    while (c1 > c0 && (c1 * X_POOL_CHUNK < sp->pool.bytes ? c1 * X_POOL_CHUNK : sp->pool.bytes) > sp->touched)
        c1--;
    *b0 = c0 * X_POOL_CHUNK;
    *b1 = c1 > c0 ? (c1 * X_POOL_CHUNK < sp->pool.bytes ? c1 * X_POOL_CHUNK : sp->pool.bytes) : *b0;
}

/* Tells the executor of window i what more to lock ahead (X_POOL_PIN; lock
 * held, dropped for the call). A failure costs only that head start. */
static void pin_send(struct srv *s, struct srv_dev *d, int i)
{
    struct srv_swwin *w = &d->swp->win[i];
    struct srv_client *c = w->c;
    uint64_t b0, b1;
    pin_range(d->swp, w->off, w->len, &b0, &b1);
    if (b1 <= b0 || !c->x || (b0 == w->pin0 && b1 <= w->pin1))
        return;
    w->pin0 = b0;
    w->pin1 = b1;
    struct x_swap_io m = {b0, b1, d->swp->pool.bytes};
    struct srv_exec *x = c->x;
    c->refs++;
    pthread_mutex_unlock(&s->lock);
    gos_log(LOG_INFO, "swap: vGPU %s: client %u's executor locks %llu..%llu MB of the pool ahead",
            s->vgpus[c->vgpu].cfg.name, c->id, (unsigned long long)(b0 >> 20), (unsigned long long)(b1 >> 20));
    if (srv_exec_call(x, X_POOL_PIN, &m, sizeof m, d->swp->fd, NULL, 0))
        gos_log(LOG_WARNING, "swap: vGPU %s: locking the pool ahead: %s", s->vgpus[c->vgpu].cfg.name,
                gos_last_error());
    pthread_mutex_lock(&s->lock);
    srv_client_unref(c);
}

static int helper_on(const struct srv_dev *d) { return d->swp->helper && !d->swp->helper_off; }

/* The swap helper gave up (lock held): the tenants' executors swap from now
 * on, each locking its own window (as without a helper). */
static void helper_fail(struct srv_dev *d, const char *what, const char *why)
{
    if (d->swp->helper_off)
        return;
    d->swp->helper_off = 1;
    gos_log(LOG_WARNING, "swap: the swap helper failed (%s: %s): the tenants' executors swap from now on", what,
            why);
}

/* The helper told to lock the whole chunks of the part of the pool the host
 * gave, synchronously (X_POOL_LOCK; lock held, dropped for the call): it runs
 * no tenant's work, so locking stalls nobody. */
static void helper_lock(struct srv *s, struct srv_dev *d)
{
    struct srv_swpool *sp = d->swp;
    uint64_t b0, b1;
    pin_range(sp, 0, sp->touched, &b0, &b1);
    if (!helper_on(d) || b1 <= sp->helper_locked)
        return;
    struct x_swap_io m = {sp->helper_locked, b1, sp->pool.bytes};
    struct x_swap_rep rep = {0};
    struct srv_exec *x = sp->helper;
    pthread_mutex_unlock(&s->lock);
    int rc = srv_exec_call(x, X_POOL_LOCK, &m, sizeof m, sp->fd, &rep, sizeof rep);
    pthread_mutex_lock(&s->lock);
    if (rc)
        helper_fail(d, "locking the pool", gos_last_error());
    else if (b1 > sp->helper_locked) {
        if (!rep.pinned)
            gos_log(LOG_WARNING, "swap: the driver refused to page-lock part of %llu..%llu MB of the pool: swaps "
                                 "there copy from pageable memory", (unsigned long long)(m.dptr >> 20),
                    (unsigned long long)(b1 >> 20));
        sp->helper_locked = b1;
    }
}

/* Every window grown into what the prefault added, and its chunks sent
 * (lock held, dropped for the calls: the table may change meanwhile); the
 * helper's lock instead while it works. */
static void pin_windows(struct srv *s, struct srv_dev *d)
{
    if (helper_on(d)) {
        helper_lock(s, d);
        return;
    }
    for (int i = 0; i < d->swp->n_win; i++) {
        win_update(s, d, d->swp->win[i].c);
        pin_send(s, d, i);
    }
}

static void win_drop(struct srv_dev *d, struct srv_client *c)
{
    struct srv_swwin *w = d->swp ? win_of(d, c) : NULL;
    if (w)
        *w = d->swp->win[--d->swp->n_win];
}

/* What the prefault faults in (issue 42.2; lock held): swap_prefault = 1
 * the pool; auto what this device's vGPUs can have swapped out at once, the
 * sum of their memory quotas as they are now (the configuration, `vgpu
 * create` and `vgpu set`), none while those fit the device together (nothing
 * is ever evicted then). */
static uint64_t prefault_want(struct srv *s, struct srv_dev *d)
{
    uint64_t pool = d->swp->pool.bytes, sum = 0;
    if (d->swp->prefault_mode == 1)
        return pool;
    for (int i = 0; i < s->n_vgpus; i++)
        if (!s->vgpus[i].removed && s->vgpus[i].cfg.device == (int)(d - s->devs))
            sum += s->vgpus[i].mem_quota;
    return sum <= d->sw->device_bytes ? 0 : sum < pool ? sum : pool;
}

/* One round of the prefault (lock held, dropped while faulting): the pool's
 * memfd faulted in PREFAULT_CHUNK at a time from what is held toward want,
 * the pool's part held in all at most what the host could give beyond the
 * reserve of hostmem.c were it not held, less an eighth of that or 2 GB,
 * whichever is more, but at most half (what is left is for the executors
 * and the tenants' own host memory: a small memory cgroup keeps half, a
 * host of 128 GB an eighth; evictions still ask the host first). So a round that the host cut short takes more at a later one
 * only as the host gets more to give, never a part of what is left each
 * time. (Half, until the pair of issue 42 on GPU-cf4134f8: its second
 * tenant's window fell past 64 of the 91 GB its evictions needed and was
 * locked cold on the eviction's path, 10 s.)
 * Returns the bytes faulted in; *why says where it stopped. */
#define PREFAULT_CHUNK (256ull << 20)
#define PREFAULT_LEAVE (2ull << 30)
static uint64_t prefault_round(struct srv *s, struct srv_dev *d, uint64_t want, const char **why)
{
    uint64_t start = UINT64_MAX, end = 0;
    pthread_mutex_unlock(&s->lock);
    uint64_t lim0, room0 = srv_host_room(&lim0), keep0 = srv_host_reserve(lim0);
    pthread_mutex_lock(&s->lock);
    uint64_t held = d->swp->touched, give = room0 + held > keep0 ? room0 + held - keep0 : 0;
    uint64_t least = give / 2 < PREFAULT_LEAVE ? give / 2 : PREFAULT_LEAVE;
    uint64_t all = give - (give / 8 > least ? give / 8 : least);
    uint64_t budget = all > held ? all - held : 0;
    while (!d->swp->stop && d->swp->touched < want) {
        uint64_t off = d->swp->touched, len = want - off, lim, room, keep, got = end > start ? end - start : 0;
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
            *why = err ? strerror(err) : "what the host could give, less what it leaves the tenants";
            break;
        }
        start = start < off ? start : off;
        end = off + len;
        if (end > d->swp->touched)
            d->swp->touched = end;
        if (end % X_POOL_CHUNK < len) /* a chunk more: windows and locks (the rest: the caller) */
            pin_windows(s, d);
    }
    return end > start ? end - start : 0;
}

/* swap_prefault (issue 42.2): the pool's memfd is faulted in from the start
 * in the background, as far as prefault_want and the host allow
 * (prefault_round), so that the first eviction finds its pages there instead
 * of faulting tens of GB in; again whenever the vGPUs' quotas change (a `vgpu
 * create` of a third tenant after start was served cold). The pages faulted
 * in count as room for evictions and restores (host_room), so the prefault
 * takes nothing that a turn needs. Each client's window grows into them as
 * they come and its executor locks its chunks ahead (pin_windows). */
static void *prefault_main(void *arg)
{
    struct srv_dev *d = arg;
    struct srv *s = d->srv;
    pthread_mutex_lock(&s->lock);
    /* the first round once the daemon knows its vGPUs (srv_swap_quotas_known),
     * then a look every second: `vgpu create`, `vgpu set` and reloads change
     * the quotas */
    while (!d->swp->stop && !d->swp->quotas_known)
        pthread_cond_wait(&d->swp->wake_cv, &s->lock);
    for (uint64_t last = 0, round = 0; !d->swp->stop; round++) {
        uint64_t want = prefault_want(s, d), t0 = gos_now_ns(), done = 0;
        const char *why = want == d->swp->pool.bytes ? "the whole pool" : "as far as the vGPUs' quotas can need it";
        if (!want && !round)
            gos_log(LOG_INFO, "swap: host pool not faulted in ahead: the memory quotas of the device's vGPUs fit "
                              "it together (swap_prefault = auto; nothing is evicted then)");
        if (want > d->swp->touched) /* (again each second while the host gives less than that) */
            done = prefault_round(s, d, want, &why);
        if (done && !d->swp->stop)
            pin_windows(s, d);
        if (done || (want > d->swp->touched && (!round || want != last))) {
            double sec = (double)(gos_now_ns() - t0) * 1e-9;
            gos_log(LOG_INFO,
                    "swap: host pool faulted in ahead%s: %llu MB in %.1f s (%.2f GB/s; %s), %llu of %llu MB held%s",
                    !round ? "" : want != last ? " (the vGPUs' quotas changed)" : " (the host had more to give)",
                    (unsigned long long)(done >> 20), sec, sec > 0 ? (double)done / sec * 1e-9 : 0.0, why,
                    (unsigned long long)(d->swp->touched >> 20), (unsigned long long)(d->swp->pool.bytes >> 20),
                    helper_on(d) ? ", page-locked by the swap helper" : "");
        }
        last = want;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (!d->swp->stop)
            pthread_cond_timedwait(&d->swp->wake_cv, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

void srv_swap_quotas_known(struct srv *s)
{
    for (int i = 0; i < s->n_devs; i++)
        if (s->devs[i].swp) {
            s->devs[i].swp->quotas_known = 1;
            pthread_cond_signal(&s->devs[i].swp->wake_cv);
        }
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
    pthread_cond_init(&d->swp->wake_cv, NULL);
    d->swp->turn.fixed_ns = cfg->swap_turn_ms * 1000000ull;
    d->swp->turn.wait_ns = (uint64_t)(cfg->swap_wait_s ? cfg->swap_wait_s : 120) * 1000000000ull;
    d->swp->turn.host_wait_ns = (uint64_t)cfg->swap_host_wait_s * 1000000000ull;
    d->swp->prefault_mode = cfg->swap_prefault;
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
    if (cfg->swap_helper) {
        if (srv_dev_exec_spawn(d, NULL, &d->swp->helper))
            gos_log(LOG_WARNING, "device %s: no swap helper (%s): the tenants' executors swap", cfg->label,
                    gos_last_error());
        else if (srv_exec_call(d->swp->helper, X_POOL_PIN, &(struct x_swap_io){0, 0, d->swp->pool.bytes},
                               sizeof(struct x_swap_io), d->swp->fd, NULL, 0)) { /* (maps the pool) */
            gos_log(LOG_WARNING, "device %s: no swap helper (mapping the pool: %s): the tenants' executors swap",
                    cfg->label, gos_last_error());
            srv_exec_close(d->swp->helper);
            d->swp->helper = NULL;
        } else
            gos_log(LOG_INFO, "device %s: swap helper started (pid %d): it keeps the host pool page-locked and "
                              "makes the swap copies", cfg->label, (int)d->swp->helper->pid);
    }
    if (cfg->swap_prefault && !pthread_create(&d->swp->prefault, NULL, prefault_main, d))
        d->swp->prefaulting = 1;
    return GOS_OK;
}

void srv_swap_fini(struct srv_dev *d)
{
    if (d->swp && d->swp->prefaulting) {
        pthread_mutex_lock(&d->srv->lock);
        d->swp->stop = 1;
        pthread_cond_signal(&d->swp->wake_cv);
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
        if (d->swp->helper)
            srv_exec_close(d->swp->helper);
        if (d->swp->fd >= 0)
            close(d->swp->fd);
        free(d->swp->win);
        gos_swap_pool_fini(&d->swp->pool);
        pthread_cond_destroy(&d->swp->wake_cv);
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
 * began at t_start: the longest waiter takes the next turn. One that waits
 * for host memory (host_short) keeps its place in that order but stands
 * aside meanwhile: a turn the host can hold goes on before it, and it comes
 * first again as soon as the host (another vGPU's end) can hold its own. */
static int first_waiter(const struct srv_swturn *t, int v, uint64_t t_start)
{
    for (int u = 0; u < GOS_SWAP_MAX_VGPUS; u++)
        if (u != v && t->waiting[u] && t->waiting[u] < t_start && !t->host_short[u])
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
static void unforce(struct srv_dev *d)
{
    memset(d->swp->turn.out, 0, sizeof d->swp->turn.out);
    if (d->bell_started) {
        uint64_t one = 1;
        if (write(d->bell_fd, &one, sizeof one) < 0) { /* the bell's thread looks every 100 ms anyway */
        }
    }
}

static void turn_clear(struct srv_dev *d, struct srv_client *c, uint64_t t_start, int forced)
{
    if (d->swp->turn.waiting[c->vgpu] == t_start) {
        d->swp->turn.waiting[c->vgpu] = 0;
        d->swp->turn.host_short[c->vgpu] = 0;
    }
    if (forced)
        unforce(d);
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

/* What the host can still give the pool (room less the reserve of hostmem.c). */
static uint64_t host_give(uint64_t *lim, uint64_t *keep)
{
    uint64_t room = srv_host_room(lim);
    *keep = srv_host_reserve(*lim);
    return room > *keep ? room - *keep : 0;
}

/* Whether an eviction that adds `more` bytes of new pages to the pool, whose
 * free part the host gave already is `held`, leaves `margin` for a restore
 * when the host can give `give`. */
static int host_fits(uint64_t more, uint64_t held, uint64_t margin, uint64_t give)
{
    return more <= give && (held >= margin || give - more >= margin - held);
}

/* Whether the host can give the bytes an eviction into [off, off + bytes) of
 * the pool (taken from the pool's free ranges already) would newly touch, and
 * still margin for a restore after it: the pool's free part that the host
 * gave already (a prefault's pages, ranges given back) counts as room, so a
 * pool faulted in ahead takes nothing from the restores (issue 42.2; before,
 * evictions into it were never checked and used up the margin, and a
 * tenant's reads back in t_swap_host's 320 MB cgroup were refused). GOS_OK,
 * or GOS_ENOMEM saying why. */
static int host_can_take(struct srv *s, struct srv_dev *d, int vgpu, uint64_t off, uint64_t bytes, uint64_t margin)
{
    uint64_t end = off + bytes, top = end > d->swp->touched ? end : d->swp->touched;
    uint64_t more = end > d->swp->touched ? end - d->swp->touched : 0;
    uint64_t held = gos_swap_pool_free_below(&d->swp->pool, top);
    if (!more && held >= margin)
        return GOS_OK; /* pages the pool holds already */
    uint64_t lim, keep, give = host_give(&lim, &keep);
    if (host_fits(more, held, margin, give))
        return GOS_OK;
    return gos_fail(GOS_ENOMEM, "swap: host memory is short: evicting %llu MB of vGPU %s needs %llu MB more of it and "
                                "%llu MB kept for a restore, the host can give %llu MB and the pool holds %llu MB free "
                                "(%s%llu MB kept for the daemon and executors); refused, nothing evicted or lost",
                    (unsigned long long)(bytes >> 20), s->vgpus[vgpu].cfg.name, (unsigned long long)(more >> 20),
                    (unsigned long long)(margin >> 20), (unsigned long long)(give >> 20),
                    (unsigned long long)(held >> 20), lim != UINT64_MAX ? "memory cgroup limit; " : "",
                    (unsigned long long)(keep >> 20));
}

/* The pool range an eviction of owner's `bytes` goes to, in pool (the
 * daemon's, or a copy to try a plan on) whose first `top` bytes the host
 * gave already: its window; else in that part, clear of other clients'
 * windows, then anywhere in it (another executor's chunks cost this one
 * their locking, new pages cost the host memory); else the first range that
 * fits. */
static int pool_place(struct srv_dev *d, gos_swap_pool *pool, struct srv_client *owner, uint64_t bytes, uint64_t top,
                      uint64_t *off)
{
    struct srv_swpool *sp = d->swp;
    const struct srv_swwin *me = owner ? win_of(d, owner) : NULL;
    if (me && me->len && !gos_swap_pool_get_in(pool, bytes, me->off, me->off + me->len, NULL, 0, off))
        return GOS_OK;
    gos_swap_extent *avoid = sp->n_win > 0 ? malloc(sizeof *avoid * (unsigned)sp->n_win) : NULL;
    int n = 0;
    for (int i = 0; avoid && i < sp->n_win; i++)
        if (&sp->win[i] != me && sp->win[i].len)
            avoid[n++] = (gos_swap_extent){sp->win[i].off, sp->win[i].len};
    int rc = n ? gos_swap_pool_get_in(pool, bytes, 0, top, avoid, n, off) : GOS_ENOMEM;
    free(avoid);
    if (rc)
        rc = gos_swap_pool_get_in(pool, bytes, 0, top, NULL, 0, off);
    return rc ? gos_swap_pool_get(pool, bytes, off) : GOS_OK;
}

/* Before a plan moves anything: whether the host holds it, each eviction
 * tried as step() will carry it out (its range placed in a copy of the pool,
 * the host asked for the pages it adds and for margin for a restore after
 * it, the pool's free part it gave already counting as room) and each
 * restore giving its range back. GOS_OK, or GOS_ENOMEM with the "host memory
 * is short" line. */
static int host_holds(struct srv *s, struct srv_dev *d, struct srv_client *c, const gos_swap_plan *pl,
                      uint64_t margin)
{
    gos_swap_pool sim;
    if (!pl->n_evict || gos_swap_pool_copy(&sim, &d->swp->pool))
        return GOS_OK; /* (out of memory: each eviction asks the host itself) */
    uint64_t top = d->swp->touched, more = 0, held = 0, lim = UINT64_MAX, keep = 0, give = 0;
    int asked = 0, rc = GOS_OK;
    for (int i = 0; i < pl->n_steps && !rc; i++) {
        const gos_swap_obj *o = gos_swap_find(d->sw, pl->step[i].id);
        const struct srv_swobj *p = o ? o->priv : NULL;
        uint64_t off;
        if (!p)
            continue;
        if (!pl->step[i].evict) {
            if (p->held)
                gos_swap_pool_put(&sim, p->off, p->bytes);
            continue;
        }
        if (pool_place(d, &sim, p->c, o->bytes, top, &off))
            break; /* the pool's own refusal comes with the step */
        if (off + o->bytes > top) {
            more += off + o->bytes - top;
            top = off + o->bytes;
        }
        held = gos_swap_pool_free_below(&sim, top);
        if (!more && held >= margin)
            continue; /* pages the pool holds already */
        if (!asked++)
            give = host_give(&lim, &keep);
        if (!host_fits(more, held, margin, give))
            rc = GOS_ENOMEM;
    }
    gos_swap_pool_fini(&sim);
    if (!rc)
        return GOS_OK;
    return gos_fail(GOS_ENOMEM, "swap: host memory is short: vGPU %s's plan needs %llu MB more of it and %llu MB kept "
                                "for a restore, the host can give %llu MB and the pool holds %llu MB free (%s%llu MB kept "
                                "for the daemon and executors); refused, nothing evicted or lost",
                    s->vgpus[c->vgpu].cfg.name, (unsigned long long)(more >> 20), (unsigned long long)(margin >> 20),
                    (unsigned long long)(give >> 20), (unsigned long long)(held >> 20),
                    lim != UINT64_MAX ? "memory cgroup limit; " : "", (unsigned long long)(keep >> 20));
}

/* An eviction's or a restore's copy by the swap helper hx (no lock held):
 * the owner's executor ox exports the allocation's physical memory (an
 * eviction: once its ring is kept off it and what it issued has landed; a
 * restore: new memory mapped at its address first), the helper attaches it
 * and copies it to or from the pool at m->off, then the owner drops it
 * (evict) or takes it back for its ring (restore). *helper_rc: non-zero when
 * the helper failed and nothing changed (the caller goes the owner's own
 * way); else the owner's result. */
static int helper_copy(struct srv_exec *hx, struct srv_exec *ox, int evict, const struct x_swap_io *m,
                       uint64_t bytes, struct x_swap_rep *rep, int *helper_rc)
{
    struct x_swap_ctl ctl = {m->dptr, evict ? X_SWAPCTL_EXPORT : X_SWAPCTL_REMAP, 0};
    struct x_pool_copy pc = {m->off, bytes, m->pool_bytes, evict != 0, 0};
    int fd = -1;
    *helper_rc = 0;
    int rc = srv_exec_call_fd(ox, X_SWAP_CTL, &ctl, sizeof ctl, -1, NULL, 0, &fd);
    if (rc)
        return rc; /* the owner's: as its own path would fail */
    *helper_rc = srv_exec_call(hx, X_POOL_COPY, &pc, sizeof pc, fd, rep, sizeof *rep);
    close(fd);
    if (*helper_rc) { /* nothing changed: an eviction's allocation goes back to the owner's ring
                       * (EXPORT kept the ring off it), a restore's new memory goes again */
        ctl.op = evict ? X_SWAPCTL_READY : X_SWAPCTL_DROP;
        if ((rc = srv_exec_call(ox, X_SWAP_CTL, &ctl, sizeof ctl, -1, NULL, 0)))
            *helper_rc = 0; /* the owner cannot go its own way either: this step failed */
        return rc;
    }
    ctl.op = evict ? X_SWAPCTL_DROP : X_SWAPCTL_READY;
    return srv_exec_call(ox, X_SWAP_CTL, &ctl, sizeof ctl, -1, NULL, 0);
}

/* One eviction or restore (lock held, dropped for the executor's work).
 * GOS_ENOMEM (with the message) when the host could not give an eviction its
 * memory and margin more (*host_short set), or a restore failed (its object
 * stays swapped): the caller stops the plan there. A failed eviction leaves
 * its victim resident and is logged. */
static int step(struct srv *s, struct srv_dev *d, int evict, uint64_t id, uint64_t margin, int *host_short)
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
        if ((rc = pool_place(d, &d->swp->pool, owner, o->bytes, d->swp->touched, &m.off))) {
            gos_log(LOG_WARNING, "swap: vGPU %s: %s", s->vgpus[vgpu].cfg.name, gos_last_error());
            gos_swap_evicted(d->sw, id, 0);
            return GOS_OK;
        }
        if ((rc = host_can_take(s, d, vgpu, m.off, o->bytes, margin))) {
            gos_swap_pool_put(&d->swp->pool, m.off, o->bytes);
            gos_log(LOG_WARNING, "%s", gos_last_error());
            gos_swap_evicted(d->sw, id, 0);
            *host_short = 1;
            return rc;
        }
        p->off = m.off;
        p->bytes = o->bytes;
        p->held = 1;
    }
    uint64_t bytes = o->bytes;
    uint64_t t0 = gos_now_ns();
    owner->refs++; /* the owner (and its executor) outlive the call */
    struct srv_exec *hx = helper_on(d) ? d->swp->helper : NULL;
    int hrc = 0;
    char why[256] = "";
    pthread_mutex_unlock(&s->lock);
    if (hx && (rc = helper_copy(hx, x, evict, &m, bytes, &rep, &hrc), hrc))
        snprintf(why, sizeof why, "%s", gos_last_error());
    if (!hx || hrc) /* (no helper, or it failed before anything changed: the owner's own path) */
        rc = srv_exec_call(x, evict ? X_EVICT_POOL : X_RESTORE_POOL, &m, sizeof m, d->swp->fd, &rep, sizeof rep);
    pthread_mutex_lock(&s->lock);
    int by_helper = hx && !hrc;
    if (hrc)
        helper_fail(d, evict ? "an eviction's copy" : "a restore's copy", why);
    double ms = ms_since(t0);
    if (!rc) { /* the swap time of the owner's vGPU, and the bandwidth turns are cut by */
        struct srv_swturn *t = &d->swp->turn;
        uint64_t ns = gos_now_ns() - t0;
        d->sw->vgpu[vgpu].swap_ns += ns;
        t->moved = t->moved - t->moved / 4 + bytes;
        t->moved_ns = t->moved_ns - t->moved_ns / 4 + ns;
    }
    if (!rc)
        gos_log(LOG_INFO, "swap: %s vGPU %s: %llu MB in %.1f ms (copy %.1f ms, %.2f GB/s; page-locking %.1f ms%s; "
                          "pool %llu..%llu MB%s)", evict ? "evicted" : "restored", s->vgpus[vgpu].cfg.name,
                (unsigned long long)(bytes >> 20), ms, (double)rep.copy_ns * 1e-6,
                rep.copy_ns ? (double)bytes / (double)rep.copy_ns : 0.0, (double)rep.register_ns * 1e-6,
                rep.pinned ? "" : "; NOT page-locked", (unsigned long long)(m.off >> 20),
                (unsigned long long)((m.off + bytes) >> 20), by_helper ? "; by the swap helper" : "");
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
static int run_plan(struct srv *s, struct srv_dev *d, const gos_swap_plan *pl, uint64_t margin, int *host_short)
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
        rc = step(s, d, pl->step[i].evict, pl->step[i].id, margin, host_short);
    }
    gos_swap_end(d->sw, pl);
    return rc;
}

/* The room an allocation's evictions keep in host swap space for a restore
 * (issue 23.3): the largest object's, this one included; 0 for the others. */
static uint64_t restore_margin(struct srv_dev *d, const struct swap_req *q)
{
    if (q->type != GOS_MSG_MEM_ALLOC)
        return 0;
    uint64_t largest = q->bytes;
    for (int i = 0; i < d->sw->n; i++)
        if (d->sw->obj[i].bytes > largest)
            largest = d->sw->obj[i].bytes;
    return largest;
}

/* Whether waiting can serve a request (begun at t_start) short of host
 * memory (issue 42): another vGPU holds memory, on the device or swapped, of
 * a client that has not ended, so its end (or its frees) gives back device
 * room and pool ranges. With none, or swap_host_wait_s = 0, it fails at
 * once. A vGPU that waits for host memory itself counts only when its wait
 * began later: of tenants that all wait for each other's memory the latest
 * fails at once (its program's end frees its memory), not all of them after
 * swap_host_wait_s. */
static int host_wait_helps(struct srv_dev *d, const struct srv_client *c, uint64_t t_start)
{
    const struct srv_swturn *t = &d->swp->turn;
    if (!t->host_wait_ns)
        return 0;
    for (int i = 0; i < d->sw->n; i++) {
        const struct srv_swobj *p = d->sw->obj[i].priv;
        int u = d->sw->obj[i].vgpu;
        if (u != c->vgpu && p && p->c && (!t->host_short[u] || t->waiting[u] > t_start))
            return 1;
    }
    return 0;
}

/* Waits a little for host memory (lock dropped, the caller's hold let go as
 * in wait_turn), in its place among the waiters but standing aside for turns
 * the host can hold (host_short); 0 when it is time to give up
 * (swap_host_wait_s from the request's start, or the client is gone). */
static int wait_host(struct srv *s, struct srv_dev *d, struct srv_client *c, uint64_t t_start)
{
    struct srv_swturn *t = &d->swp->turn;
    if (gos_now_ns() - t_start >= t->host_wait_ns || c->dead)
        return 0;
    if (!t->waiting[c->vgpu] || t->waiting[c->vgpu] > t_start)
        t->waiting[c->vgpu] = t_start;
    if (t->waiting[c->vgpu] == t_start)
        t->host_short[c->vgpu] = 1;
    int hold = c->swap_hold;
    c->swap_hold = 0;
    pthread_mutex_unlock(&s->lock);
    usleep(5000); /* (each look reads the host's and the cgroups' counters) */
    pthread_mutex_lock(&s->lock);
    c->swap_hold = hold;
    return 1;
}

/* The error of a request that waited swap_host_wait_s for host memory. */
static int host_waited_out(struct srv *s, struct srv_dev *d, struct srv_client *c)
{
    if (c->dead)
        return gos_fail(GOS_ENOMEM, "swap: vGPU %s: the client went away while it waited for host memory",
                        s->vgpus[c->vgpu].cfg.name);
    char why[400];
    snprintf(why, sizeof why, "%s", gos_last_error());
    return gos_fail(GOS_ENOMEM, "swap: vGPU %s waited %llu s (swap_host_wait_s) for another vGPU's memory to end: %s",
                    s->vgpus[c->vgpu].cfg.name, (unsigned long long)(d->swp->turn.host_wait_ns / 1000000000ull),
                    why);
}

/* Whether request q, found short of host memory before, still would be were
 * the turns it waits for over (planned as if no object were busy): then it
 * goes on waiting for host memory and turns no one out, whose memory it could
 * not take anyway (the error: host_holds'). */
static int host_still_short(struct srv *s, struct srv_dev *d, struct srv_client *c, const struct swap_req *q)
{
    gos_swap_plan *pl = malloc(sizeof *pl);
    if (!pl)
        return 0;
    d->sw->busy_ignored = 1; /* (victims are never c's own) */
    int rc = plan_req(d, c, q, pl);
    d->sw->busy_ignored = 0;
    int still = !rc && host_holds(s, d, c, pl, restore_margin(d, q)) != GOS_OK;
    free(pl);
    return still;
}

static const char *req_what(const struct swap_req *q)
{
    return q->type == GOS_MSG_MEM_ALLOC ? "an allocation" : q->type == GOS_MSG_LAUNCH ? "a launch" : "a copy";
}

/* Plans request q of client c into pl, waiting while its plan fails only
 * for what other tenants hold now (their work, their turn, a transition or
 * an allocation under way: wait_helps) or c's own memory is in transition,
 * up to swap_wait_s; a plan the host cannot hold (host_holds) waits while
 * another vGPU's memory may still end (host_wait_helps), up to
 * swap_host_wait_s. GOS_OK, or the error (logged: the daemon's log names
 * what a program was refused and why). */
static int plan_wait(struct srv *s, struct srv_dev *d, struct srv_client *c, const struct swap_req *q,
                     gos_swap_plan *pl, uint64_t t_start, int *forced)
{
    uint64_t idle_since[GOS_SWAP_MAX_VGPUS] = {0};
    struct srv_swturn *t = &d->swp->turn;
    int rc, host, said = 0;
    for (;;) {
        mark_busy(s, d, c->vgpu, t_start, idle_since);
        /* turned out: its memory is on its way out for another's turn */
        rc = t->out[c->vgpu] ? GOS_ENOMEM : plan_req(d, c, q, pl);
        if (!rc)
            host = (rc = host_holds(s, d, c, pl, restore_margin(d, q))) != GOS_OK;
        else /* waiting for host memory already: a turn would not help yet */
            host = (rc == GOS_ENOMEM || rc == GOS_EBUSY) && t->host_short[c->vgpu] && t->waiting[c->vgpu] == t_start &&
                   host_still_short(s, d, c, q);
        if (host)
            rc = GOS_ENOMEM;
        else if (t->waiting[c->vgpu] == t_start)
            t->host_short[c->vgpu] = 0;
        if (host && *forced) { /* those it turned out may go on: it cannot take their memory */
            unforce(d);
            *forced = 0;
        }
        if (host ? !host_wait_helps(d, c, t_start)
                 : !(rc == GOS_EBUSY || (rc == GOS_ENOMEM && (t->out[c->vgpu] || wait_helps(d, c, q)))))
            break;
        if (host && !said++) { /* (the reason without its "refused": it is not, yet) */
            char why[400];
            snprintf(why, sizeof why, "%s", gos_last_error());
            char *cut = strstr(why, "; refused");
            if (cut)
                *cut = 0;
            gos_log(LOG_INFO, "swap: vGPU %s: %s waits for host memory (up to swap_host_wait_s = %llu s): %s",
                    s->vgpus[c->vgpu].cfg.name, req_what(q), (unsigned long long)(t->host_wait_ns / 1000000000ull),
                    why);
        }
        if (!(host ? wait_host(s, d, c, t_start) : wait_turn(s, d, c, t_start, forced))) {
            rc = host ? host_waited_out(s, d, c) : waited_out(s, d, c, rc);
            break;
        }
    }
    if (rc)
        gos_log(LOG_WARNING, "swap: vGPU %s: %s refused: %s", s->vgpus[c->vgpu].cfg.name, req_what(q),
                gos_last_error());
    else if (said)
        gos_log(LOG_INFO, "swap: vGPU %s: %s got host memory after %.1f s", s->vgpus[c->vgpu].cfg.name, req_what(q),
                (double)(gos_now_ns() - t_start) * 1e-9);
    return rc;
}

/* Plans request q of client c (plan_wait) and carries the plan out, its
 * turn taken (*took: from another vGPU). An eviction the host could not
 * hold after all (another plan took the room meanwhile) sends the request
 * back to waiting while that can still serve it. An allocation's room stays
 * reserved on success (gos_swap_add or gos_swap_cancel_alloc), never on an
 * error. */
static int plan_run(struct srv *s, struct srv_dev *d, struct srv_client *c, const struct swap_req *q,
                    uint64_t t_start, int *forced, int *took)
{
    gos_swap_plan *pl = malloc(sizeof *pl);
    if (!pl)
        return gos_fail(GOS_ENOMEM, "daemon out of memory");
    int rc;
    for (;;) {
        rc = plan_wait(s, d, c, q, pl, t_start, forced);
        if (rc || (!pl->n_steps && q->type != GOS_MSG_MEM_ALLOC))
            break;
        int host_short = 0;
        *took = takes_from_others(d, pl, c->vgpu);
        if (!(rc = run_plan(s, d, pl, restore_margin(d, q), &host_short))) {
            turn_take(s, d, c->vgpu, *took);
            break;
        }
        if (q->type == GOS_MSG_MEM_ALLOC)
            gos_swap_cancel_alloc(d->sw, q->bytes);
        if (!host_short || !host_wait_helps(d, c, t_start) || !wait_host(s, d, c, t_start))
            break;
    }
    free(pl);
    return rc;
}

int srv_swap_alloc(struct srv_client *c, uint64_t bytes, uint64_t *dptr)
{
    struct srv *s = c->srv;
    struct srv_dev *d = &s->devs[s->vgpus[c->vgpu].cfg.device];
    uint64_t sz = gos_vmm_round(bytes);
    if (!sz)
        return gos_fail(GOS_EINVAL, "swap: allocation of %llu bytes", (unsigned long long)bytes);
    int forced = 0, took = 0;
    uint64_t t_start = gos_now_ns();
    struct swap_req q = {GOS_MSG_MEM_ALLOC, sz, NULL};
    int rc = plan_run(s, d, c, &q, t_start, &forced, &took);
    turn_clear(d, c, t_start, forced);
    if (rc)
        return rc;
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
    if (took) /* its turn runs from when its memory is there, not from the plan: the
               * creation of tens of GB took time that was no turn of its work */
        d->swp->turn.since[c->vgpu] = gos_now_ns();
    if (d->swp->prefaulting && !helper_on(d)) { /* its window grows with its allocations; its executor locks it ahead */
        win_update(s, d, c);
        struct srv_swwin *w = win_of(d, c);
        if (w)
            pin_send(s, d, (int)(w - d->swp->win));
    }
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
    win_drop(d, c);
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
    int forced = 0, took = 0;
    uint64_t t_start = gos_now_ns();
    c->swap_hold = 1; /* the caller clears it once the request is queued */
    struct swap_req q = {h->type, 0, payload};
    int rc = plan_run(s, d, c, &q, t_start, &forced, &took);
    turn_clear(d, c, t_start, forced);
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
