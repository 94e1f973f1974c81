/* SPDX-License-Identifier: Apache-2.0 */
/* ring_pair.c: two rings' grants at once under isolation = mps and
 * overlap = pairs (issue 22.3; off by default: measured on the H200 only with
 * the half charges this file no longer uses, docs/readme-fastpath.md).
 *
 * Every executor of an mps device is a client of the device's MPS server, so
 * kernels of two executors run on the GPU at the same time; with one grant at
 * a time (ring.c) that concurrency was never used, and two tenants that
 * synchronise after every kernel each left the GPU idle for a ring round trip
 * per kernel. A compute grant may now have one companion: the queued grant
 * task of another ring of the device, taken out of the scheduler's queue,
 * issued with the same deadline and awaited and charged by the same
 * dispatcher (srv_ring_await in ring.c, which also ends it; this file only
 * says which ring may be a companion). Each of the two is charged the whole of their
 * common wall time, as if it had had the GPU alone: kernels that leave room on
 * the GPU run as fast beside a companion as alone, and a half each let paired
 * vGPUs take twice their share (BAND with eight vGPUs 15 points off on the
 * H200); kernels that fill it make each pay for time it shared, alike for both.
 * So pairing never gains a vGPU share, only the GPU work. A companion must be
 * a vGPU of the same compute share whose ring entries take about as long (the
 * executor's mean entry time, within a factor of SRV_PAIR_RATIO, and whose
 * longest entries are alike too and short beside a grant: alike_longest), on a vGPU
 * without an SM set, the one of those most owed (its credit); any other mix
 * (70/30, 200 us next to 20 ms kernels) keeps taking turns. Process: the
 * daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/dispatch.h"
#include "serve/ring.h"
#include "serve/executor.h"
#include "common/clock.h"

#include "common/env.h"
#include "common/log.h"
#include "common/status.h"

#include <stdlib.h>

/* A ring's mean time per entry so far, by its executor's counters (ns; 0:
 * nothing run yet). */
static uint64_t mean_entry_ns(const struct srv_client *c)
{
    uint64_t e = atomic_load(&c->gp->entries);
    return e ? atomic_load(&c->gp->busy_ns) / e : 0;
}

/* Whether two rings' longest entries lately (the executors' entry_max_ns) let
 * them overlap: both short beside a grant (at most half of it: a kernel
 * that outlasts the common deadline runs on alone, charged as shared) and
 * within SRV_PAIR_RATIO of each other. A mean alone let a tenant alternating
 * 2 and 40 ms kernels pair with a peer of 20 ms ones and take 53-57 % against
 * its 19-21 % (issue 44.4). */
static int alike_longest(const struct srv_dev *d, uint64_t xa, uint64_t xb)
{
    uint64_t half = (d->grant_ns ? d->grant_ns : SRV_GRANT_PROCESS_NS) / 2;
    if (!xa || !xb) /* (not known before a ring's first grant ends: the means alone, as before) */
        return 1;
    /* (with a quarter, a host's hiccup in an honest grant on a CPU-only CI
     * machine kept two fills clients apart in most of their grants) */
    return xa <= half && xb <= half && xa <= SRV_PAIR_RATIO * xb && xb <= SRV_PAIR_RATIO * xa;
}

int srv_ring_companion_take(struct srv_dev *d, struct srv_task *u)
{
    if (gos_sched_cancel(d->sched, &u->st))
        return GOS_EBUSY;
    u->dispatched = 1;
    u->companion = 1;
    return GOS_OK;
}

struct srv_task *srv_ring_pair_pick(struct srv_dev *d, struct srv_task *t)
{
    struct srv *s = d->srv;
    struct srv_client *a = t->c;
    if (d->isolation != GOS_ISOLATION_MPS || !d->overlap || t->st.kind != GOS_SCHED_COMPUTE || s->stop || a->vgpu < 0 ||
        atomic_load(&a->ring_end))
        return NULL;
    const struct gos_serve_vgpucfg *va = &s->vgpus[a->vgpu].cfg;
    uint64_t ma = mean_entry_ns(a), xa = atomic_load(&a->gp->entry_max_ns);
    if (va->sms || !ma)
        return NULL;
    struct srv_task *best = NULL;
    int64_t best_credit = 0;
    for (struct srv_client *c = s->clients; c; c = c->next) {
        struct srv_task *u = c->ring_task;
        if (c == a || !u || u->dispatched || u->st.kind != GOS_SCHED_COMPUTE || !c->gp || !c->ring || c->vgpu < 0 ||
            c->dead || (c->x && c->x->dead) || &s->devs[s->vgpus[c->vgpu].cfg.device] != d ||
            atomic_load(&c->ring_end) || atomic_load(&c->gp->state) == GOS_GRANT_REVOKE)
            continue;
        const struct gos_serve_vgpucfg *vb = &s->vgpus[c->vgpu].cfg;
        uint64_t mb = mean_entry_ns(c), xb = atomic_load(&c->gp->entry_max_ns);
        if (vb->sms || vb->compute != va->compute || !mb || ma > SRV_PAIR_RATIO * mb || mb > SRV_PAIR_RATIO * ma ||
            !alike_longest(d, xa, xb))
            continue;
        gos_sched_vgpu_stats st = {0};
        gos_sched_vgpu_stats_get(d->sched, s->vgpus[c->vgpu].id, gos_now_ns(), &st);
        if (!best || st.compute_credit_ns > best_credit) { /* the most owed of them */
            best = u;
            best_credit = st.compute_credit_ns;
        }
    }
    if (!best || srv_ring_companion_take(d, best))
        return NULL; /* (not in the scheduler's queue yet) */
    if (gos_env(GOS_ENV_GRANT_LOG)) /* (GPUOS_GRANT_LOG: ring.c's line per grant, and this) */
        gos_log(LOG_INFO, "grant vgpu %d: companion of vgpu %d's grant (mean entry %.1f / %.1f us)", best->c->vgpu,
                a->vgpu, (double)mean_entry_ns(best->c) / 1e3, (double)ma / 1e3);
    return best;
}
