/* SPDX-License-Identifier: Apache-2.0 */
/* fastpath.c: libgpuos's side of the fast path (issue 9.4; proto/ring_shm.h).
 *
 * At connect the library creates the ring (a sealed memfd) and hands it to the
 * daemon, which passes it to this client's executor and grants it while the
 * client is alone on its device. While granted, launches, copies and
 * synchronisation go through the ring: a slot is filled, sq_tail advanced, the
 * executor woken if it sleeps; the answer is awaited by a bounded spin and then
 * a futex wait (GPUOS_RING_WAIT_US, default 1000, longer for a long copy; the
 * executor's spin for entries is GPUOS_RING_SPIN_US, default 50). Copies up to
 * ring_inline bytes (GPUOS_RING_INLINE) travel inside the slot (Gdev's direct
 * path for tiny copies; an HtoD one is answered once the executor has issued it
 * from its own copy of the bytes, as CUDA answers a small pageable HtoD copy
 * once staged); larger ones name a registered host buffer or go through the
 * staging region in pieces, as on the socket path. Entries the executor did not run
 * (grant revoked, memory swapped out) come back GOS_RING_REVOKED and are sent
 * over the socket in their order; any socket request that touches the device
 * first waits for the ring to be empty (gcl_ring_drain), and the ring is used
 * after socket requests only once those are synchronised: one order for all.
 * Process: a client program (libgpuos; the shim too). */
#include "client_internal.h"
#include "common/env.h"

#include "proto/ring_shm.h"

#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <time.h>

/* The executor spins this long for the next entry before it sleeps
 * (GPUOS_RING_SPIN_US): long enough for a client that submits back to back,
 * short enough not to take a core from its neighbours (a spinning executor made
 * its own copies 1 us slower on an H200 host, results/GPU-0b1e4acf-...). */
#define DEFAULT_RING_SPIN_US 50
/* The client spins this long for an answer before it sleeps
 * (GPUOS_RING_WAIT_US): a futex wake-up costs tens of microseconds on a virtual
 * machine, more than the whole round trip through the ring; CUDA's own
 * synchronisation spins too. */
#define DEFAULT_RING_WAIT_US 1000
/* A copy's wait spins at least through the copy at this rate (bytes per us),
 * at most RING_COPY_SPIN_MAX_US. */
#define RING_COPY_SPIN_BYTES_PER_US 16000u
#define RING_COPY_SPIN_MAX_US 20000u
/* A wait for a synchronisation spins on past ring_wait_us, up to this long,
 * while the executor holds its grant (ctl.running): the work it waits for is
 * on the GPU, and a kernel of about ring_wait_us otherwise ends just after the
 * client fell asleep, paying a futex wake-up per kernel (17 us per 1 ms
 * kernel on an H200 host, results/GPU-f62118f5-.../final-5c37b5f). Without a
 * grant it sleeps: a tenant waiting for its turn takes no core. */
#define RING_HELD_SPIN_MAX_US 20000u

struct gcl_ring_res {
    int32_t rc[GOS_RING_SLOTS];
    uint8_t async[GOS_RING_SLOTS];
    char msg[GOS_RING_SLOTS][GOS_RING_MSG];
};

static struct gos_ring_ctl *ctl(gpuos_vgpu *g) { return gos_ring_ctl(g->ring); }

void gcl_ring_open(gpuos_vgpu *g)
{
    if (gos_env_off(GOS_ENV_RING))
        return;
    void *p = NULL;
    int fd = -1;
    struct gcl_ring_res *res = calloc(1, sizeof *res);
    if (!res || gcl_make_memfd(GOS_RING_BYTES, &p, &fd)) {
        free(res);
        return;
    }
    struct gos_msg_ring m = {.bytes = GOS_RING_BYTES,
                             .spin_us = (uint32_t)gos_env_size(GOS_ENV_RING_SPIN_US, DEFAULT_RING_SPIN_US)};
    int rc = gcl_call(g, GOS_MSG_RING, &m, sizeof m, fd, NULL, 0);
    close(fd);
    if (rc) { /* no executor (isolation = none) or an older daemon: the socket path */
        munmap(p, GOS_RING_BYTES);
        free(res);
        return;
    }
    g->ring = p;
    g->ring_res = res;
    g->ring_inline = gos_env_size(GOS_ENV_RING_INLINE, GOS_RING_DATA);
    g->ring_piece = gos_env_size(GOS_ENV_RING_PIECE, 0);
    g->ring_wait_us = (unsigned)gos_env_size(GOS_ENV_RING_WAIT_US, DEFAULT_RING_WAIT_US);
    if (g->ring_wait_us > RING_COPY_SPIN_MAX_US)
        g->ring_wait_us = RING_COPY_SPIN_MAX_US;
    if (g->ring_piece && g->ring_piece < 4096)
        g->ring_piece = 4096;
    if (g->ring_inline > GOS_RING_DATA)
        g->ring_inline = GOS_RING_DATA;
}

void gcl_ring_close(gpuos_vgpu *g)
{
    if (g->ring)
        munmap(g->ring, GOS_RING_BYTES);
    free(g->ring_res);
    g->ring = NULL;
    g->ring_res = NULL;
}

int gcl_ring_ok(gpuos_vgpu *g)
{
    return g->ring && !g->ring_off && !g->ring_replaying && !g->broken &&
           atomic_load_explicit(&ctl(g)->open, memory_order_acquire);
}

struct waitarg {
    gpuos_vgpu *g;
    uint32_t want; /* cq_done to reach */
};

static int reached(void *a)
{
    struct waitarg *w = a;
    uint32_t done = atomic_load_explicit(&ctl(w->g)->cq_done, memory_order_acquire);
    return (int32_t)(done - w->want) >= 0;
}

/* How long a wait for a copy of n bytes spins before it sleeps. */
static unsigned copy_spin(gpuos_vgpu *g, size_t n)
{
    unsigned spin = g->ring_wait_us;
    size_t t = n / RING_COPY_SPIN_BYTES_PER_US + 50;
    if (t > RING_COPY_SPIN_MAX_US)
        t = RING_COPY_SPIN_MAX_US;
    return spin && t > spin ? (unsigned)t : spin;
}

/* Waits until entry idx completed, spinning spin us (0: ring_wait_us) before it
 * sleeps. The executor's loss (its pid gone, where this process can see it) or
 * the timeout stops the ring for good. */
static int wait_entry(gpuos_vgpu *g, uint32_t idx, unsigned spin)
{
    struct waitarg w = {g, idx + 1};
    struct gos_ring_ctl *k = ctl(g);
    uint64_t t0 = gos_ring_now_ns(), limit = (uint64_t)g->timeout_ms * 1000000ull;
    if (!spin)
        spin = g->ring_wait_us;
    /* GPUOS_RING_WAIT_US=0: no spinning */
    unsigned held = g->ring_wait_us && gos_ring_cores_to_spare() ? RING_HELD_SPIN_MAX_US : 0;
    while (!gos_ring_wait_held(&k->cq_futex, &k->client_sleeping, spin, &k->running, held, 20000000ull, reached,
                               &w)) {
        spin = held = 0;
        pid_t pid = (pid_t)atomic_load_explicit(&k->exec_pid, memory_order_relaxed);
        char path[64], st[256] = "";
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        /* (in a container the executor is not in this pid namespace: the
         * timeout alone tells its loss, and the daemon's answer why) */
        int watch = pid > 0 && !g->exec_hidden;
        FILE *f = watch ? fopen(path, "r") : NULL;
        if (f) {
            if (!fgets(st, sizeof st, f))
                st[0] = 0;
            fclose(f);
        }
        const char *rp = strrchr(st, ')');
        int gone = watch && (!f || (rp && (rp[2] == 'Z' || rp[2] == 'X')));
        if (gone || gos_ring_now_ns() - t0 >= limit) {
            g->ring_off = 1;
            if (gone) {
                /* The daemon knows why (a fault of this client, or of another
                 * client's on a shared MPS server or shared executor, which
                 * names it): its answer to a synchronise over the socket says
                 * so. It may learn a moment after this ring did (another
                 * client's fault is read by another thread): ask again for up
                 * to 1 s (a loaded host) before answering without the reason. */
                int rc = GOS_OK;
                for (int i = 0; i < 100 && !rc; i++) {
                    if (i)
                        usleep(10000);
                    rc = gcl_call(g, GOS_MSG_SYNC, NULL, 0, -1, NULL, 0);
                }
                return rc ? rc : gos_fail(GOS_EDEVICE, "this client's executor (pid %d) is gone", (int)pid);
            }
            return gos_fail(GOS_ETIMEDOUT, "no answer on the ring within %d ms", g->timeout_ms);
        }
    }
    return GOS_OK;
}

/* A revoked GATE: what follows goes over the socket in order, so this client
 * waits for the word itself (its writer is another thread of the program). */
static int replay_gate(gpuos_vgpu *g, const struct gos_ring_ent *s)
{
    const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)s->dptr;
    for (uint64_t t0 = gos_ring_now_ns(); *w < s->dptr2;) {
        if (gos_ring_now_ns() - t0 > (uint64_t)g->timeout_ms * 1000000u)
            return gos_fail(GOS_ETIMEDOUT, "a gate (a host function) stayed closed for %d ms", g->timeout_ms);
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return GOS_OK;
}

/* Sends a revoked entry over the socket (its slot still holds the request). */
static int replay(gpuos_vgpu *g, struct gos_ring_ent *s)
{
    int rc, async = !!(s->flags & GOS_F_ASYNC);
    g->ring_replaying = 1;
    switch (s->op) {
    case GOS_OP_HTOD:
    case GOS_OP_DTOH: {
        uint32_t dir = s->op == GOS_OP_HTOD ? GOS_OP_HTOD : GOS_OP_DTOH;
        if (s->flags & GOS_F_INLINE)
            rc = gcl_sock_copy_host(g, dir, s->dptr, s->data, s->data, s->bytes);
        else
            rc = gcl_sock_copy_region(g, dir, s->region, s->offset, s->dptr, s->bytes, async);
        break;
    }
    case GOS_OP_DTOD: rc = gcl_sock_dtod(g, s->dptr, s->dptr2, s->bytes, async); break;
    case GOS_OP_LAUNCH: {
        struct gos_msg_launch m = {.req = s->req}; /* the same request, over the socket */
        uint32_t seq = 0;
        rc = gcl_send_req(g, GOS_MSG_LAUNCH, &m, sizeof m, s->data, s->param_bytes, -1, &seq);
        break;
    }
    case GOS_OP_GATE: rc = replay_gate(g, s); break;
    default: rc = gcl_call(g, GOS_MSG_SYNC, NULL, 0, -1, NULL, 0); break;
    }
    g->ring_replaying = 0;
    return rc;
}

/* Looks at the completions of entries before upto (all completed): revoked ones
 * go over the socket, each result is kept, asynchronous errors become sticky. */
static void finish(gpuos_vgpu *g, uint32_t upto)
{
    struct gcl_ring_res *r = g->ring_res;
    while ((int32_t)(upto - g->ring_checked) > 0) { /* an older entry's wait finds it finished already */
        uint32_t i = g->ring_checked % GOS_RING_SLOTS;
        struct gos_ring_ent *s = gos_ring_slot(g->ring, g->ring_checked);
        int rc = s->rc;
        if (rc == GOS_RING_REVOKED) {
            /* Everything submitted has completed: nothing can run out of order
             * any more, so the executor may stop revoking before this replay
             * blocks (the daemon waits for that acknowledgement, see serve/ring.c). */
            if (atomic_load_explicit(&ctl(g)->cq_done, memory_order_acquire) == g->ring_tail &&
                !(s->flags & GOS_F_ASYNC) && s->op != GOS_OP_LAUNCH)
                atomic_store_explicit(&ctl(g)->client_ack, g->ring_tail, memory_order_release);
            rc = replay(g, s);
            snprintf(r->msg[i], GOS_RING_MSG, "%s", rc ? gos_last_error() : "");
        } else if (rc) {
            memcpy(r->msg[i], s->msg, GOS_RING_MSG);
            r->msg[i][GOS_RING_MSG - 1] = 0;
        }
        r->rc[i] = rc;
        if (rc && r->async[i] && !g->ring_sticky) {
            g->ring_sticky = rc;
            snprintf(g->ring_sticky_msg, sizeof g->ring_sticky_msg, "%s", r->msg[i]);
        }
        g->ring_checked++;
    }
    if (g->ring_checked == g->ring_tail) /* every revoked entry taken back */
        atomic_store_explicit(&ctl(g)->client_ack, g->ring_checked, memory_order_release);
}

/* The result of entry idx (completed and finished). */
static int result(gpuos_vgpu *g, uint32_t idx)
{
    uint32_t i = idx % GOS_RING_SLOTS;
    int rc = g->ring_res->rc[i];
    return rc ? gos_fail(rc, "%s", g->ring_res->msg[i]) : GOS_OK;
}

static int complete(gpuos_vgpu *g, uint32_t idx, unsigned spin)
{
    int rc = wait_entry(g, idx, spin);
    if (rc)
        return rc;
    finish(g, idx + 1);
    return result(g, idx);
}

int gcl_ring_drain(gpuos_vgpu *g)
{
    if (!g->ring || g->ring_replaying || g->ring_checked == g->ring_tail || g->ring_off)
        return GOS_OK;
    int rc = wait_entry(g, g->ring_tail - 1, 0);
    if (!rc)
        finish(g, g->ring_tail);
    return rc;
}

/* Submits one entry (e: the request up to rc; data: dlen bytes for the slot). */
static int submit(gpuos_vgpu *g, const struct gos_ring_ent *e, const void *data, size_t dlen, uint32_t *idx)
{
    if (g->sock_async) { /* socket requests first: they are older */
        g->sock_async = 0;
        int rc = gcl_call(g, GOS_MSG_SYNC, NULL, 0, -1, NULL, 0);
        if (rc && g->broken)
            return rc;
        if (rc && !g->ring_sticky) {
            g->ring_sticky = rc;
            snprintf(g->ring_sticky_msg, sizeof g->ring_sticky_msg, "%s", gos_last_error());
        }
    }
    struct gos_ring_ctl *k = ctl(g);
    if (g->ring_tail - g->ring_checked >= GOS_RING_SLOTS) { /* full: the oldest must be done */
        int rc = wait_entry(g, g->ring_checked, 0);
        if (rc)
            return rc;
        finish(g, g->ring_checked + 1);
    }
    struct gos_ring_ent *s = gos_ring_slot(g->ring, g->ring_tail);
    memcpy(s, e, offsetof(struct gos_ring_ent, rc));
    s->rc = 0;
    if (dlen)
        memcpy(s->data, data, dlen);
    g->ring_res->async[g->ring_tail % GOS_RING_SLOTS] = !!(e->flags & GOS_F_ASYNC);
    *idx = g->ring_tail++;
    atomic_store_explicit(&k->sq_tail, g->ring_tail, memory_order_release);
    gos_ring_kick(&k->sq_futex, &k->exec_sleeping);
    return GOS_OK;
}

static int copy_staged(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, void *dst, const void *src, size_t n)
{
    int rc = gcl_stage_ready(g);
    if (rc)
        return rc;
    /* Pieces: GPUOS_RING_PIECE when set (a ring entry costs microseconds, not a
     * socket round trip, so pieces may be small), else the socket path's. The
     * staging area holds depth * chunk bytes: as many pieces in flight as fit. */
    size_t chunk = g->ring_piece ? g->ring_piece : gcl_pipe_chunk(g, n);
    if (chunk > g->chunk)
        chunk = g->chunk;
    size_t nslot = g->stage_bytes / chunk;
    int depth = nslot > MAX_DEPTH ? MAX_DEPTH : nslot < 1 ? 1 : (int)nslot;
    size_t nchunks = (n + chunk - 1) / chunk;
    uint32_t idx[MAX_DEPTH];
    int first_rc = GOS_OK;
    char msg[GOS_MSG_TEXT_MAX] = "";
#define NOTE(r)                                                                 \
    do {                                                                        \
        int r_ = (r);                                                           \
        if (r_ && !first_rc) {                                                  \
            first_rc = r_;                                                      \
            snprintf(msg, sizeof msg, "%s", gos_last_error());                  \
        }                                                                       \
    } while (0)
    struct gos_ring_ent e;
    memset(&e, 0, offsetof(struct gos_ring_ent, rc));
    e.op = dir == GOS_OP_HTOD ? GOS_OP_HTOD : GOS_OP_DTOH;
    e.region = g->stage_region;
    size_t issued = 0;
    for (size_t i = 0; i < nchunks; i++) {
        int slot = (int)(i % (size_t)depth);
        size_t off = i * chunk, len = n - off < chunk ? n - off : chunk;
        if (dir == GOS_OP_HTOD) {
            if (i >= (size_t)depth) {
                rc = complete(g, idx[slot], copy_spin(g, chunk));
                if (rc && g->ring_off)
                    return rc;
                NOTE(rc);
            }
            gcl_par_memcpy(g, (char *)g->stage + (size_t)slot * chunk, (const char *)src + off, len);
            e.offset = (uint64_t)slot * chunk;
            e.dptr = d + off;
            e.bytes = len;
            if ((rc = submit(g, &e, NULL, 0, &idx[slot])))
                return rc;
        } else {
            for (; issued < nchunks && issued < i + (size_t)depth; issued++) {
                size_t o2 = issued * chunk;
                e.offset = (uint64_t)(issued % (size_t)depth) * chunk;
                e.dptr = d + o2;
                e.bytes = n - o2 < chunk ? n - o2 : chunk;
                if ((rc = submit(g, &e, NULL, 0, &idx[issued % (size_t)depth])))
                    return rc;
            }
            rc = complete(g, idx[slot], copy_spin(g, chunk));
            if (rc && g->ring_off)
                return rc;
            NOTE(rc);
            gcl_par_memcpy(g, (char *)dst + off, (char *)g->stage + (size_t)slot * chunk, len);
        }
    }
    if (dir == GOS_OP_HTOD)
        for (size_t i = nchunks > (size_t)depth ? nchunks - (size_t)depth : 0; i < nchunks; i++) {
            rc = complete(g, idx[i % (size_t)depth], copy_spin(g, chunk));
            if (rc && g->ring_off)
                return rc;
            NOTE(rc);
        }
#undef NOTE
    return first_rc ? gos_fail(first_rc, "%s", msg) : GOS_OK;
}

int gcl_ring_copy(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, void *dst, const void *src, size_t n, int async,
                  int region, uint64_t off)
{
    struct gos_ring_ent e;
    memset(&e, 0, offsetof(struct gos_ring_ent, rc));
    e.op = dir == GOS_OP_HTOD ? GOS_OP_HTOD : GOS_OP_DTOH;
    e.dptr = d;
    e.bytes = n;
    uint32_t idx;
    int rc;
    /* a small copy travels inline in the slot, but an asynchronous one from or
     * into registered host memory goes by the region, answered once issued and
     * read or written when it runs (CUDA's contract for pinned memory: a host
     * function queued before it may write its bytes; the shim's event marks are
     * such copies) */
    if (n <= g->ring_inline && !(async && region >= 0)) {
        e.flags = GOS_F_INLINE;
        /* An asynchronous HtoD's bytes are in the slot, which is not reused
         * before the executor is done with the entry: nothing to wait for (an
         * error is the next synchronise's, as a launch's). Waiting here would
         * hold the program until the GPU reached the copy (a memset of a few
         * bytes behind queued kernels: PyTorch's zero_grad every step). */
        if (dir == GOS_OP_HTOD && async) {
            e.flags |= GOS_F_ASYNC;
            return submit(g, &e, src, n, &idx);
        }
        if ((rc = submit(g, &e, dir == GOS_OP_HTOD ? src : NULL, dir == GOS_OP_HTOD ? n : 0, &idx)) ||
            (rc = complete(g, idx, 0)))
            return rc;
        if (dir == GOS_OP_DTOH)
            memcpy(dst, gos_ring_slot(g->ring, idx)->data, n);
        return GOS_OK;
    }
    if (region < 0)
        return copy_staged(g, dir, d, dst, src, n);
    e.region = (uint32_t)region;
    e.offset = off;
    e.flags = async ? GOS_F_ASYNC : 0;
    if ((rc = submit(g, &e, NULL, 0, &idx)) || async)
        return rc;
    return complete(g, idx, copy_spin(g, n));
}

int gcl_ring_dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n, int async)
{
    struct gos_ring_ent e;
    memset(&e, 0, offsetof(struct gos_ring_ent, rc));
    e.op = GOS_OP_DTOD;
    e.flags = async ? GOS_F_ASYNC : 0;
    e.dptr = dst;
    e.dptr2 = src;
    e.bytes = n;
    uint32_t idx;
    int rc = submit(g, &e, NULL, 0, &idx);
    if (rc || async)
        return rc;
    return complete(g, idx, 0);
}

int gcl_ring_launch(gpuos_vgpu *g, const struct gos_msg_launch *m, const void *params)
{
    struct gos_ring_ent e;
    e.req = m->req; /* the same request as on the socket (asynchronous, no priority) */
    uint32_t idx;
    return submit(g, &e, params, m->param_bytes, &idx);
}

int gcl_ring_gate(gpuos_vgpu *g, const uint64_t *word, uint64_t value, uint32_t region, uint64_t off)
{
    struct gos_ring_ent e;
    memset(&e, 0, offsetof(struct gos_ring_ent, rc));
    e.op = GOS_OP_GATE;
    e.flags = GOS_F_ASYNC;
    e.region = region;
    e.offset = off;
    e.dptr = (uint64_t)(uintptr_t)word; /* for a replay here */
    e.dptr2 = value;
    uint32_t idx;
    return submit(g, &e, NULL, 0, &idx);
}

int gcl_ring_fence(gpuos_vgpu *g)
{
    struct gos_ring_ent e;
    memset(&e, 0, offsetof(struct gos_ring_ent, rc));
    e.op = GOS_OP_FENCE;
    uint32_t idx;
    int rc = submit(g, &e, NULL, 0, &idx);
    if (!rc)
        rc = complete(g, idx, 0);
    if (!rc && g->ring_sticky)
        rc = gos_fail(g->ring_sticky, "%s", g->ring_sticky_msg);
    if (rc != GOS_ETIMEDOUT) {
        g->ring_sticky = 0;
        g->ring_sticky_msg[0] = 0;
    }
    return rc;
}
