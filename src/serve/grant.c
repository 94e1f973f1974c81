/* SPDX-License-Identifier: Apache-2.0 */
/* grant.c: how long one client's batch (a grant to its executor) may last on a
 * device (issue 9). Under isolation = process the GPU switches contexts between
 * executors, which costs far more than a batch's exchange (H200-NOTES: ~140 us);
 * a grant must be long enough to amortise it, and no longer than needed, since
 * a busy neighbour's grant is what another client waits for. grant_us = N fixes
 * it; grant_us = auto (the default with executors) measures the switch and
 * sizes grants to keep its cost at 1/SRV_GRANT_AUTO_DIV of the GPU.
 * Process: the daemon (gpuos serve). */
#include "serve/dev.h"
#include "common/log.h"
#include "common/clock.h"

#include <string.h>

/* A ring's grant for vGPU id (lock held): the device's grant, but under Credit
 * and BAND, for a vGPU whose share is below an equal split of the busy vGPUs'
 * shares, no longer than what it is owed (its credit), and no shorter than
 * grant_min_us. A grant cannot be taken back once issued, and a small vGPU
 * over its share is still picked whenever its busy neighbour is between two
 * requests: with a whole 16 ms grant each time a 10 % vGPU next to a busy 90 %
 * one got 13-20 % of the GPU on the simulated device and 14 % on the H200
 * (10.0 % with this cap, results/GPU-.../stop29c-d7b031b). Equal and large
 * shares keep whole grants: capping every grant at its credit cost two busy
 * tenants of 50 %, whose credits hover around zero, 6-8 points of the GPU in
 * context switches on the H200 (the same run).
 * The least (grant_min_us = auto, the default) is the grant scaled by the
 * vGPU's share over the largest busy share, at least SRV_GRANT_SHARE_MIN_NS:
 * each busy vGPU then switches in about as often, whatever its share. With a
 * fixed 2 ms, the 10 and 20 % vGPUs of 40/30/20/10 (32 ms grants, H100) ran
 * 345 and 440 grants in 6 s against the 40 % vGPU's 78, each switch-in (about
 * 0.25 ms, ring_free) uncharged: they took 0.113 and 0.205 of the granted
 * time, the 40 % one 0.384, and its training loop 0.947 of its promise (stop
 * 53); with auto, 0.960-0.968 in four windows (GPU-8a6f616b, stop 55). */
static uint64_t grant_min(const struct srv_dev *d, uint64_t g, int share, int top)
{
    if (d->grant_min_ns)
        return d->grant_min_ns;
    uint64_t m = top > 0 ? (uint64_t)((double)g * share / top) : g;
    return m > SRV_GRANT_SHARE_MIN_NS ? m : SRV_GRANT_SHARE_MIN_NS;
}

uint64_t srv_grant_for(struct srv_dev *d, uint32_t id)
{
    uint64_t g = d->grant_ns ? d->grant_ns : SRV_GRANT_PROCESS_NS, now = gos_now_ns();
    if (!strcmp(gos_sched_policy_name(d->sched), "fifo"))
        return g;
    gos_sched_vgpu_stats own = {0}, o;
    int n = 0, sum = 0, top = 0, found = 0;
    uint32_t ids[GOS_SCHED_MAX_VGPUS];
    int k = gos_sched_vgpu_ids(d->sched, ids, GOS_SCHED_MAX_VGPUS);
    for (int i = 0; i < k; i++) /* the busy vGPUs (and this one): how many, their shares */
        if (!gos_sched_vgpu_stats_get(d->sched, ids[i], now, &o) &&
            (o.compute_queued || o.compute_util_pct > 0 || ids[i] == id)) {
            n++;
            sum += o.compute_share;
            if (o.compute_share > top)
                top = o.compute_share;
            if (ids[i] == id) {
                own = o;
                found = 1;
            }
        }
    if (!found || n < 2 || own.compute_share * n >= sum) /* alone, or at least an equal split */
        return g;
    uint64_t least = grant_min(d, g, own.compute_share, top);
    uint64_t cap = own.compute_credit_ns > (int64_t)least ? (uint64_t)own.compute_credit_ns : least;
    return g < cap ? g : cap;
}

/* The expected GPU time a batch may reach: the grant and its slack. */
uint64_t srv_grant_limit(const struct srv_dev *d) { return d->grant_ns + d->grant_ns / SRV_GRANT_SLACK_DIV; }

/* grant_us = auto (lock held): a batch of executor process pid took wall_ns to exchange
 * and gpu_ns on the GPU. When the device's batch before it was another
 * executor's, the difference is what that switch cost (the GPU's context
 * switch, the executor's wake-up and issue): the grants become
 * SRV_GRANT_AUTO_DIV times its moving average. */
void srv_grant_learn(struct srv_dev *d, pid_t pid, uint64_t wall_ns, uint64_t gpu_ns)
{
    int switched = d->last_pid && d->last_pid != pid;
    d->last_pid = pid;
    if (!switched || !wall_ns || !gpu_ns || wall_ns <= gpu_ns)
        return;
    uint64_t cost = wall_ns - gpu_ns;
    if (cost > SRV_SWITCH_SAMPLE_MAX_NS)
        cost = SRV_SWITCH_SAMPLE_MAX_NS;
    d->switch_ns = d->switches++ ? (7 * d->switch_ns + cost) / 8 : cost;
    if (!d->grant_auto)
        return;
    uint64_t g = d->switch_ns * SRV_GRANT_AUTO_DIV;
    g = g < SRV_GRANT_PROCESS_NS ? SRV_GRANT_PROCESS_NS : g > SRV_GRANT_AUTO_MAX_NS ? SRV_GRANT_AUTO_MAX_NS : g;
    uint64_t old = d->grant_ns;
    d->grant_ns = g;
    if (d->switches == 1 || g > old + old / 4 || old > g + g / 4) /* the first, and every large change */
        gos_log(LOG_INFO, "device %d: a switch between executors costs %.0f us: grants of %.0f us (grant_us = auto)",
                d->index, (double)d->switch_ns / 1e3, (double)g / 1e3);
}
