/* SPDX-License-Identifier: Apache-2.0 */
/* policy_band.c: Gdev's BAND scheduler (bandwidth-aware non-preemptive device
 * scheduling; paper 002, section 5.2, figure 2).
 *
 * Credit's accounting (policy_credit.c: credit redistributed each period in
 * proportion to share, debited with measured GPU time, not banked by idle vGPUs)
 * with two changes:
 *  1. Priority. A vGPU is demoted only if its credit is exhausted AND its
 *     utilisation over the last period exceeds its share (Credit demotes on credit
 *     alone). Inside a class the vGPU most behind its share goes first: the highest
 *     credit per share point, which is exact because it counts measured GPU time,
 *     where Credit's round-robin lets a 10x longer kernel take 10x the time.
 *  2. Time buffering. When a task of vGPU X completes and X has no queued request
 *     while it is under its share (credit left, by measured time), the
 *     engine is held for a short wait (band_wait, or an eighth of the longest
 *     recent task of the vGPU that would run instead when that is longer: see
 *     hold_for) if X is owed more than the vGPU that would run instead: a
 *     closed-loop client is between two requests exactly when the scheduler
 *     picks, and without the wait whoever is queued (typically the vGPU with
 *     long kernels) takes the engine every time. If X submits within
 *     the wait it runs at once; if the wait expires, the normal choice runs (no
 *     burst: no emergency). The hold is gos_sched_next() returning NULL with the
 *     wait's end as wake time; nothing blocks. In MRQ the hold ends as soon as the
 *     client whose task ended has work on the other engine (its pipeline moved on;
 *     holding would only break the copy/compute overlap). By default the held time
 *     is charged to X as if it were GPU time (a reservation): the vGPU that makes
 *     the engine wait pays for the wait, so holds cannot push the other vGPUs below
 *     their shares (sched.h, gos_sched_set_band_charge_hold, for the other choice).
 * The latency class (issue 41, gos_sched_vgpu_set_latency): a vGPU that is not
 * demoted and has a latency bound goes before every batch vGPU, and is never
 * held for. */
#include "sched/policy.h"

/* Utilisation over the last period / target share (> 1: over its share), for an
 * active vGPU, with the active share sum precomputed (band_pick runs on every
 * dispatch; this keeps it linear in the vGPUs). */
static double ratio_active(gos_sched *s, gos_vgpu *v, int res, uint64_t now, int sum)
{
    return gos_sched_util(s, v, res, now) * sum / v->res[res].share;
}

/* Credit per share point: how far a vGPU is behind its share. */
static double owed(const gos_vgpu *v, int res)
{
    return (double)v->res[res].credit / v->res[res].share;
}

/* Under its share by measured time: credit left once the current period's GPU time
 * so far is redistributed as the next replenishment will (credit + used x share /
 * sum of active shares > 0; the raw credit only falls during a period, which with a
 * long period would stop every hold halfway through it). Not the one-period
 * utilisation: with kernels of a third of the period the window says "over" right
 * after each long kernel of the others and the holds stop too early (5.8 points
 * instead of 0.06 on 1 ms vs 10 ms kernels with a 30 ms period). */
static bool under_share(const gos_sched *s, const gos_vgpu *v, int res)
{
    uint64_t used = 0;
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
        if (s->vgpus[i].used)
            used += s->vgpus[i].res[res].used_period;
    int sum = gos_sched_active_share_sum(s, res);
    return sum > 0 && owed(v, res) > -(double)used / sum;
}

/* In MRQ, the next request of the client whose task ended may go to the other
 * engine first (a copy, then the kernel that uses it). Once that client has work
 * queued or running on another engine, it is not between two requests but busy
 * elsewhere, and holding this engine would only break the copy/compute overlap. */
static bool moved_on(const gos_sched *s, const gos_vgpu *x, uint32_t client, int res)
{
    for (int r = 0; r < s->nres; r++) {
        if (r == res)
            continue;
        const gos_sched_task *run = s->running[r];
        if (run && run->vgpu == x->id && run->client == client)
            return true;
        for (const gos_sched_task *t = x->res[r].head; t; t = t->next)
            if (t->client == client)
                return true;
    }
    return false;
}

/* BAND's order of two vGPUs: not demoted first, then the most owed, then the
 * least used. */
struct band_key {
    double r, c;
    bool d, l;
};

/* Whether a latency vGPU is over its share, judged by its use over its own
 * horizon (sched.h, GOS_SCHED_LATENCY_HORIZON) so that a request longer than
 * its share of a period keeps the class to its end; once over, until that use
 * is back under GOS_SCHED_LATENCY_RESUME of its share. Without the margin a
 * 30 % flooder on the simulated device alternated with its neighbour every few
 * ms and took 0.35 of the charged time (the neighbour's switches are not
 * charged), 0.32-0.33 with it; with a margin of 0.8 a 10 % service that had
 * fallen behind (its requests back to back) stayed out of the class for
 * seconds (p50 60-130 ms against 10). */
static bool latency_over(gos_sched *s, gos_vgpu *v, int res, uint64_t now, int sum)
{
    double h = gos_sched_latency_util(s, v, res, now) * sum / v->res[res].share;
    if (h > 1.0)
        v->lat_over[res] = true;
    else if (h < GOS_SCHED_LATENCY_RESUME)
        v->lat_over[res] = false;
    return v->lat_over[res];
}

static struct band_key band_key(gos_sched *s, gos_vgpu *v, int res, uint64_t now, int sum)
{
    double r = ratio_active(s, v, res, now, sum);
    bool d = v->res[res].credit < 0 && (v->latency_ns ? latency_over(s, v, res, now, sum) : r > 1.0); /* demoted */
    return (struct band_key){r, owed(v, res), d, v->latency_ns && !d};
}

/* Not demoted first, then the latency class (issue 41: a latency vGPU within
 * its share before every batch vGPU), then the most owed, then the least used. */
static bool band_before(struct band_key a, struct band_key b)
{
    return a.d != b.d ? !a.d : a.l != b.l ? a.l : a.c != b.c ? a.c > b.c : a.r < b.r;
}

static bool band_latency_first(gos_sched *s, gos_vgpu *v, int res, uint64_t now)
{
    return band_key(s, v, res, now, gos_sched_active_share_sum(s, res)).l;
}

/* The vGPU BAND serves next among the eligible ones, except `skip` (may be NULL). */
static gos_vgpu *band_pick(gos_sched *s, int res, uint64_t now, gos_vgpu *skip)
{
    gos_vgpu *best = NULL;
    struct band_key bk = {0, 0, false, false};
    int sum = gos_sched_active_share_sum(s, res);
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++) {
        gos_vgpu *v = &s->vgpus[i];
        if (v == skip || !gos_sched_eligible(s, v, res))
            continue;
        struct band_key k = band_key(s, v, res, now, sum);
        if (!best || band_before(k, bk)) {
            best = v;
            bk = k;
        }
    }
    return best;
}

/* The running task's vGPU goes before every other eligible one (ties go to the
 * others: a hand-over then costs one drain, not a starved neighbour). */
static bool band_keeps(gos_sched *s, int res, uint64_t now)
{
    const gos_sched_task *t = s->running[res];
    gos_vgpu *x = t ? gos_sched_find(s, t->vgpu) : NULL;
    if (!x || gos_sched_capped(s, x, res))
        return false;
    gos_vgpu *n = band_pick(s, res, now, x);
    int sum = gos_sched_active_share_sum(s, res);
    return !n || band_before(band_key(s, x, res, now, sum), band_key(s, n, res, now, sum));
}

/* A hold lasts band_wait, or an eighth of the longest task lately of the vGPU
 * that would run instead when that is longer (at most a quarter period): what
 * the hold risks, idle time, stays small beside what it saves X, a wait behind
 * a whole task of n. With the fixed 500 us a 70 % vGPU that asks again 0.9 ms
 * after a grant that ran dry got 27 % of the GPU next to 50 ms kernels, every
 * gap of its pipeline one of them; 69 % with this (test_sched,
 * test_band_hold_long_neighbour). */
static void hold_for(const gos_sched *s, gos_sched_hold *h, const gos_vgpu *n, int res)
{
    uint64_t w = n->res[res].longest / 8, cap = s->period / 4;
    if (w > cap)
        w = cap;
    if (h->start + w > h->until)
        h->until = h->start + w;
}

static gos_vgpu *band_select_next(gos_sched *s, int res, uint64_t now, uint64_t *wake)
{
    gos_sched_hold *h = &s->hold[res];
    if (h->active) {
        gos_vgpu *x = gos_sched_find(s, h->vgpu);
        gos_vgpu *n = x ? band_pick(s, res, now, x) : NULL;
        if (n) /* the longer n's tasks, the longer X is waited for */
            hold_for(s, h, n, res);
        /* (never held against a latency vGPU in its class: a busy batch vGPU
         * whose grant ended for one, and whose next came a moment later, was
         * held for and ran a whole grant more; test_latency_long_request) */
        if (!x || now >= h->until || gos_sched_capped(s, x, res) || moved_on(s, x, h->client, res) ||
            (n && band_latency_first(s, n, res, now))) {
            gos_sched_hold_end(s, res, now);
        } else {
            /* Figure 2: keep the engine for X only while X is under its share and
             * owed more than the vGPU that would run instead. */
            if (!n || (under_share(s, x, res) && owed(x, res) > owed(n, res))) {
                if (gos_sched_eligible(s, x, res)) {
                    gos_sched_hold_end(s, res, now); /* X's request came in time */
                    return x;
                }
                if (n)
                    gos_sched_hold_blocks(s, res, now); /* n waits for X from now */
                *wake = h->until;
                return NULL;
            }
            gos_sched_hold_end(s, res, now);
        }
    }
    return band_pick(s, res, now, NULL);
}

static void band_complete(gos_sched *s, gos_vgpu *v, int res, const gos_sched_task *t,
                          uint64_t gpu_ns, uint64_t now)
{
    gos_sched_credit_complete(s, v, res, t, gpu_ns, now);
    gos_sched_hold_end(s, res, now);
    /* (no hold for a latency vGPU: its next request comes a period later, and
     * it ends the batch grants it waits behind) */
    if (!v || v->latency_ns || s->band_wait == 0 || v->res[res].queued > 0 || moved_on(s, v, t->client, res))
        return;
    if (under_share(s, v, res))
        gos_sched_hold_begin(s, res, v, t->client, now, now + s->band_wait);
}

static void band_forget(gos_sched *s, gos_vgpu *v)
{
    for (int e = 0; e < GOS_SCHED_MAX_ENGINES; e++)
        if (s->hold[e].active && s->hold[e].vgpu == v->id)
            s->hold[e].active = false;
}

const gos_sched_policy gos_sched_policy_band = {
    .name = "band",
    .select_next = band_select_next,
    .replenish = gos_sched_credit_replenish,
    .complete = band_complete,
    .charge = gos_sched_credit_charge,
    .forget = band_forget,
    .keeps = band_keeps,
    .latency_first = band_latency_first,
};
