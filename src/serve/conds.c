/* SPDX-License-Identifier: Apache-2.0 */
/* conds.c: the daemon's condition variables, the lowest room of serve/ (it
 * calls no other file of it): a device's engine conditions made (server.c,
 * spatial.c) and the wait on the idle condition (client.c, xshare.c). Here
 * rather than in server.c so that those callers do not call up into it.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"

#include "common/clock.h"

void srv_dev_init_conds(struct srv_dev *d)
{
    for (int e = 0; e < GOS_SCHED_MAX_ENGINES; e++)
        gos_cond_init(&d->cond[e]);
}

void srv_idle_wait(struct srv *s, uint64_t ns)
{
    struct timespec ts = gos_deadline_ns(ns); /* s->idle runs on the monotonic clock */
    pthread_cond_timedwait(&s->idle, &s->lock, &ts);
}
