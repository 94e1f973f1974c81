/* SPDX-License-Identifier: Apache-2.0 */
/* ring.h: the fast path's grants (ring.c), their pairs under MPS (ring_pair.c)
 * and a ring's grant page seen from outside that scheduling (ring_page.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_RING_H
#define GOS_SERVE_RING_H

#include "proto/proto.h"

#include <stdint.h>

struct srv;
struct srv_client;
struct srv_dev;
struct srv_task;

/* ring.c: the fast path (issue 9.4; proto/ring_shm.h) for every client (issue 22).
 * RING_ATTACH maps the client's memfd, makes its grant page and hands both and
 * the device's doorbell to its executor (lock held, dropped meanwhile); a
 * ring's grants are tasks of the scheduler (srv_ring_queue), issued and
 * awaited by the engine's dispatcher; rotation sets how soon an idle ring
 * yields (never when its client is alone on the device); ring_page.c's
 * charge moves the executor's reported ring entries to its vGPU's counters,
 * its gone unmaps the ring (client freed). */
int srv_ring_attach(struct srv_client *c, const struct gos_msg_ring *m, int fd);
void srv_ring_rotation(struct srv *s, int device);
/* The doorbell's thread of device d (server.c starts it): queues a grant for
 * every ring that wants one. */
void *srv_bell_main(void *arg);
/* At shutdown (s->stop set, lock not held): ends the doorbells' threads. */
void srv_ring_bells_stop(struct srv *s);

/* The grant of task t, issued (lock not held), and awaited until the executor
 * yields: *gpu_ns its wall time, *busy_ns what the executor spent running. */
void srv_ring_issue(struct srv_dev *d, struct srv_task *t);
int srv_ring_await(struct srv_dev *d, struct srv_task *t, uint64_t *gpu_ns, uint64_t *busy_ns);
/* Task t (a latency vGPU's, just queued: dispatch.c) ends the running grant of
 * its engine at that grant's next kernel boundary when the scheduler says so
 * (gos_sched_preempts; lock held; issue 41). */
void srv_ring_preempt(struct srv_dev *d, struct srv_task *t);
/* c is dead (lock held): the dispatcher awaiting its grant ends it now, and
 * what c held is released at once, not at the grant's next look. */
void srv_ring_wake(struct srv_client *c);
/* How long an idle ring keeps a grant while others wait. */
#define SRV_RING_IDLE_YIELD_US 200
/* The most a latency companion's idle yield grows to (its vGPU's latency_ms). */
#define SRV_RING_COMPANION_HOLD_MAX_US 5000
/* At shutdown (lock held, dropped while waiting): revokes every ring and waits up
 * to ms for their executors to finish what they hold; returns how many did not. */
int srv_ring_quiesce(struct srv *s, int ms);
/* RING_ATTACH (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_ring(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

/* ring_pair.c: under isolation = mps with overlap = pairs, a compute grant of t may have a
 * companion: the queued grant task of another ring of the device whose vGPU
 * has the same compute share and whose entries take about as long (within a
 * factor of SRV_PAIR_RATIO), taken out of the scheduler's queue (lock held;
 * NULL: none). The two grants run at once, their kernels overlap on the GPU
 * (MPS's concurrency), and each is charged their whole common wall time. */
#define SRV_PAIR_RATIO 2
struct srv_task *srv_ring_pair_pick(struct srv_dev *d, struct srv_task *t);
/* Takes queued grant task u out of the scheduler's queue to run as a
 * companion (lock held; ring_pair.c's pairs, ring.c's latency companions):
 * GOS_OK, or GOS_EBUSY when it is not queued there. */
int srv_ring_companion_take(struct srv_dev *d, struct srv_task *u);

/* ring_page.c. A socket request of c waits for everything of c (a free, a
 * synchronise over the socket; lock held): its ring's grant, queued or
 * running, ends as soon as what its ring holds is done instead of lasting to
 * its deadline, which the daemon moves on and on while nobody else waits. */
void srv_ring_end_soon(struct srv_client *c);
/* The grant c's executor holds ends at its next kernel boundary (its
 * deadline now; lock held). */
void srv_ring_end_now(struct srv_client *c);
/* The executor's ring time to its vGPU's counters; c's ring unmapped. */
void srv_ring_charge(struct srv_client *c);
void srv_ring_gone(struct srv_client *c);

#endif
