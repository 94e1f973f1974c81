/* ring.c: the daemon's side of the fast path (issue 9.4; proto/ring.h).
 *
 * The daemon keeps scheduling: a ring runs only while its grant word is set, and
 * only the daemon sets it. Policy: the lone client of a device (every other
 * client's work goes through the scheduler) holds an open-ended grant; as soon
 * as a second client is on the device, every ring there is revoked, so BAND,
 * Credit and FIFO see every request of every client again (the executor answers
 * entries it has not started with GOS_RING_REVOKED and the client sends them
 * over the socket). The time an executor reports for its ring is charged to the
 * vGPU (compute time in `gpuos vgpu list`).
 * Process: the daemon (gpuos serve). */
#include "serve/serve.h"

#include "common/status.h"
#include "proto/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int device_of(struct srv_client *c)
{
    return c->srv->vgpus[c->vgpu].cfg.device;
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
    void *p = mmap(NULL, GOS_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "mapping a ring: %s", strerror(errno));
    struct gos_ring_ctl *k = gos_ring_ctl(p);
    k->magic = GOS_RING_MAGIC;
    k->slots = GOS_RING_SLOTS;
    atomic_store(&k->grant, 0);
    atomic_store(&k->spin_us, m->spin_us > 1000 ? 1000 : m->spin_us);
    c->ring_busy_seen = atomic_load(&k->busy_ns);
    c->ring_entries_seen = atomic_load(&k->entries);
    c->ring_copy_seen = atomic_load(&k->copy_busy_ns);
    c->ring_copy_entries_seen = atomic_load(&k->copy_entries);
    struct srv_exec *x = c->x;
    struct {
        uint64_t bytes;
        uint32_t max_queued, pad;
    } xr = {GOS_RING_BYTES, (uint32_t)s->cfg.max_queued_requests, 0};
    pthread_mutex_unlock(&s->lock);
    int rc = srv_exec_call(x, X_RING, &xr, sizeof xr, fd, NULL, 0);
    pthread_mutex_lock(&s->lock);
    if (rc) {
        munmap(p, GOS_RING_BYTES);
        return rc;
    }
    c->ring = p;
    srv_ring_regrant(s, device_of(c));
    return GOS_OK;
}

int srv_ring_regrant(struct srv *s, int device)
{
    int n = 0, revoked = 0;
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c->vgpu >= 0 && !c->dead && device_of(c) == device)
            n++;
    for (struct srv_client *c = s->clients; c; c = c->next) {
        if (!c->ring || c->vgpu < 0 || device_of(c) != device)
            continue;
        struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
        uint32_t want = n == 1 && !c->dead && !(c->x && c->x->dead);
        if (atomic_load(&k->grant) != want) {
            srv_ring_charge(c);
            atomic_store(&k->grant, want);
            gos_ring_kick(&k->sq_futex, &k->exec_sleeping);
            gos_log(LOG_DEBUG, "client %u: ring %s", c->id, want ? "granted (alone on the device)" : "revoked");
            revoked += !want;
        }
    }
    return revoked;
}

static int settled(struct srv_client *c)
{
    struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
    uint32_t tail = atomic_load(&k->sq_tail), done = atomic_load(&k->cq_done);
    uint32_t upto = atomic_load(&k->revoked_upto), ack = atomic_load(&k->client_ack);
    return c->dead || (c->x && c->x->dead) || (done == tail && (int32_t)(ack - upto) >= 0);
}

void srv_ring_settle(struct srv *s, int device, int ms)
{
    uint64_t until = gos_now_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        int busy = 0;
        for (struct srv_client *c = s->clients; c; c = c->next)
            if (c->ring && c->vgpu >= 0 && device_of(c) == device && !atomic_load(&gos_ring_ctl(c->ring)->grant))
                busy += !settled(c);
        if (!busy || gos_now_ns() >= until || s->stop)
            return;
        pthread_mutex_unlock(&s->lock);
        usleep(200);
        pthread_mutex_lock(&s->lock);
    }
}

void srv_ring_charge(struct srv_client *c)
{
    if (!c->ring || c->vgpu < 0)
        return;
    struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
    /* the executor's counters only grow; a hostile client's writes to them
     * could only cost its own vGPU (or nothing: deltas are bounded below) */
    uint64_t b = atomic_load(&k->busy_ns), e = atomic_load(&k->entries);
    uint64_t cb = atomic_load(&k->copy_busy_ns), ce = atomic_load(&k->copy_entries);
    struct srv_vgpu *v = &c->srv->vgpus[c->vgpu];
    uint64_t db = b > c->ring_busy_seen ? b - c->ring_busy_seen : 0;
    uint64_t de = e > c->ring_entries_seen ? e - c->ring_entries_seen : 0;
    uint64_t dcb = cb > c->ring_copy_seen ? cb - c->ring_copy_seen : 0;
    uint64_t dce = ce > c->ring_copy_entries_seen ? ce - c->ring_copy_entries_seen : 0;
    dcb = dcb < db ? dcb : db;
    dce = dce < de ? dce : de;
    v->ring_ns += db;
    v->tasks += de;
    gos_sched *sc = c->srv->devs[device_of(c)].sched;
    /* what utilisation, Credit and BAND see: copies as copy time, the rest as compute */
    if (db - dcb || de - dce)
        gos_sched_charge(sc, v->id, GOS_SCHED_COMPUTE, db - dcb, de - dce, gos_now_ns());
    if (dcb || dce)
        gos_sched_charge(sc, v->id, GOS_SCHED_COPY, dcb, dce, gos_now_ns());
    c->ring_busy_seen = b;
    c->ring_entries_seen = e;
    c->ring_copy_seen = cb;
    c->ring_copy_entries_seen = ce;
}

static int ring_busy(struct srv_client *c)
{
    struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
    return atomic_load(&k->cq_done) != atomic_load(&k->sq_tail) && !(c->x && c->x->dead) && !c->dead;
}

int srv_ring_quiesce(struct srv *s, int ms)
{
    uint64_t until = gos_now_ns() + (uint64_t)(ms > 0 ? ms : 0) * 1000000ull;
    for (;;) {
        int n = 0;
        for (struct srv_client *c = s->clients; c; c = c->next) {
            if (!c->ring)
                continue;
            struct gos_ring_ctl *k = gos_ring_ctl(c->ring);
            if (atomic_load(&k->grant)) {
                srv_ring_charge(c);
                atomic_store(&k->grant, 0);
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

void srv_ring_gone(struct srv_client *c)
{
    if (!c->ring)
        return;
    srv_ring_charge(c);
    munmap(c->ring, GOS_RING_BYTES);
    c->ring = NULL;
}
