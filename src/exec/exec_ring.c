/* exec_ring.c: the executor's ring consumer (executor process only; issue 9.4,
 * proto/ring.h).
 *
 * One thread per ring. It waits for the client's submissions (bounded spin,
 * then a futex wait on the shared word), and for each entry: copies it out of
 * the shared slot (the client may rewrite it meanwhile: everything is checked
 * on the copy), runs it while the daemon's grant is set (xe_ring_run in
 * exec_run.c, which checks it as the daemon checks a socket request), writes
 * the result into the slot and advances cq_done. Without the grant, every entry
 * is answered GOS_RING_REVOKED and the ring stays revoked until the client has
 * taken them back (ctl.client_ack): the client sends them again over the socket,
 * in order, so nothing runs out of order. A ring whose indices make no sense (a
 * tail more than a ring ahead) is stopped for good: that client's fast path
 * ends, nobody else's. A device fault ends the process (as a faulted X_RUN):
 * the client has its GPUOS_EDEVICE in the slot, the daemon sees the executor
 * gone. */
#include "exec/exec_internal.h"

#include "common/log.h"
#include "common/status.h"
#include "device/exec_ops.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

struct xr {
    struct xe *x;
    gos_device *dev;
    void *base;
    uint32_t head;
    _Atomic int stop; /* xe_ring_stop: end the consumer */
    pthread_t t;
};

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

static void *ring_main(void *arg)
{
    struct xr *r = arg;
    struct gos_ring_ctl *c = gos_ring_ctl(r->base);
    int revoking = 0;
    uint32_t revoked_upto = 0;
    for (;;) {
        unsigned spin = atomic_load_explicit(&c->spin_us, memory_order_relaxed);
        gos_ring_wait(&c->sq_futex, &c->exec_sleeping, spin > 1000 ? 1000 : spin, 0, pending, r);
        if (atomic_load_explicit(&r->stop, memory_order_acquire))
            return NULL;
        uint32_t tail = atomic_load_explicit(&c->sq_tail, memory_order_acquire);
        if (tail - r->head > GOS_RING_SLOTS) {
            bump(&c->refused, 1);
            gos_log(LOG_WARNING, "ring tail %u is more than %u entries ahead of %u: ring stopped",
                    (unsigned)tail, GOS_RING_SLOTS, (unsigned)r->head);
            return NULL; /* that client's fast path ends; its socket still works */
        }
        while (r->head != tail) {
            struct gos_ring_ent *slot = gos_ring_slot(r->base, r->head);
            struct gos_ring_ent e;
            memcpy(&e, slot, offsetof(struct gos_ring_ent, rc)); /* the request, copied out */
            int granted = atomic_load_explicit(&c->grant, memory_order_acquire);
            if (revoking && atomic_load_explicit(&c->client_ack, memory_order_acquire) - revoked_upto < 0x80000000u)
                revoking = 0; /* the client took every revoked entry back */
            int rc, fault = 0;
            char msg[GOS_RING_MSG] = "";
            if (!granted || revoking) {
                rc = GOS_RING_REVOKED;
            } else {
                xe_ring_lock(r->x, 1);
                uint64_t t0 = gos_ring_now_ns();
                rc = xe_ring_run(r->x, &e, slot->data, tail - r->head - 1, &fault);
                uint64_t dt = gos_ring_now_ns() - t0;
                xe_ring_lock(r->x, 0);
                /* this thread is the counters' only writer: plain stores, no
                 * locked read-modify-write on every entry */
                if (e.op == GOS_OP_HTOD || e.op == GOS_OP_DTOH || e.op == GOS_OP_DTOD) {
                    bump(&c->copy_busy_ns, dt);
                    bump(&c->copy_entries, 1);
                }
                bump(&c->busy_ns, dt);
                bump(&c->entries, 1);
                if (rc == GOS_EPROTO || rc == GOS_EINVAL)
                    bump(&c->refused, 1);
            }
            if (rc == GOS_RING_REVOKED) {
                revoking = 1;
                revoked_upto = r->head + 1;
                atomic_store_explicit(&c->revoked_upto, revoked_upto, memory_order_release);
            } else if (rc) {
                snprintf(msg, sizeof msg, "%s", gos_last_error());
            }
            if (rc && rc != GOS_RING_REVOKED)
                memcpy(slot->msg, msg, sizeof msg); /* read by the client only when rc says so */
            slot->rc = rc;
            r->head++;
            atomic_store_explicit(&c->cq_done, r->head, memory_order_release);
            gos_ring_kick(&c->cq_futex, &c->client_sleeping);
            if (fault)
                _exit(3); /* the context is dead: the client has its error, the daemon sees us gone */
        }
    }
    return NULL;
}

int xe_ring_start(struct xe *x, int fd, uint64_t bytes, gos_device *dev, struct xr **out)
{
    struct stat st;
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "RING without a descriptor");
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
    pthread_join(r->t, NULL);
    gos_exec_host_unregister(r->dev, r->base);
    munmap(r->base, GOS_RING_BYTES);
    free(r);
}
