/* SPDX-License-Identifier: Apache-2.0 */
/* ring_page.c: a client's ring and grant page as the rest of the daemon sees
 * them, outside the scheduling of grants (ring.c): a grant ended at its next
 * kernel boundary (srv_ring_end_now: ring.c's preemptions and companions;
 * srv_ring_end_soon: a socket request waiting for everything of its client,
 * swap.c's turns), the executor's reported ring time moved to its vGPU's
 * counters (srv_ring_charge) and the mappings' end (srv_ring_gone, client
 * freed). It calls no other file of serve/, so that session.c, swap.c and
 * vgpu.c reach these without calling up into the grants' scheduling.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/session.h"
#include "serve/ring.h"

#include "common/clock.h"
#include "proto/ring_shm.h"

#include <stdatomic.h>
#include <sys/mman.h>

/* The grant c's executor holds ends at its next kernel boundary: its
 * deadline is now, and an executor asleep on its ring sees it at once (it
 * issues nothing more and yields when what it issued ends). */
void srv_ring_end_now(struct srv_client *c)
{
    atomic_store(&c->gp->deadline_ns, gos_now_ns());
    gos_ring_kick(&gos_ring_ctl(c->ring)->sq_futex, &gos_ring_ctl(c->ring)->exec_sleeping);
}

void srv_ring_end_soon(struct srv_client *c)
{
    if (!c->gp || !c->ring || !c->ring_queued)
        return;
    atomic_store(&c->ring_end, 1);
    srv_ring_end_now(c); /* a grant running now: its executor yields when the ring is empty */
}

void srv_ring_charge(struct srv_client *c)
{
    if (!c->gp || c->vgpu < 0)
        return;
    struct gos_grant_page *g = c->gp;
    /* the grant page's counters, which only the executor writes, only grow; the
     * scheduler was charged by the grant tasks (their wall time): these are
     * the vGPU's ring time and entries as `gpuos vgpu list` shows them */
    uint64_t b = atomic_load(&g->busy_ns), e = atomic_load(&g->entries);
    struct srv_vgpu *v = &c->srv->vgpus[c->vgpu];
    v->ring_ns += b > c->ring_busy_seen ? b - c->ring_busy_seen : 0;
    v->tasks += e > c->ring_entries_seen ? e - c->ring_entries_seen : 0;
    c->ring_busy_seen = b;
    c->ring_entries_seen = e;
}

void srv_ring_gone(struct srv_client *c)
{
    if (!c->ring)
        return;
    srv_ring_charge(c);
    munmap(c->ring, GOS_RING_BYTES);
    c->ring = NULL;
    if (c->gp)
        munmap(c->gp, GOS_GRANT_PAGE_BYTES);
    c->gp = NULL;
}
