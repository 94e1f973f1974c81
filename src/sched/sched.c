/* SPDX-License-Identifier: Apache-2.0 */
/* sched.c: the scheduler core (see sched.h for the contract): the vGPU table, the
 * per-vGPU priority queues, the engines, the period clock and the accounting of
 * measured GPU time. Which vGPU runs next is the policy's decision (policy.h). */
#include "sched/policy.h"

#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const gos_sched_policy *const policies[] = {
    &gos_sched_policy_fifo, &gos_sched_policy_credit, &gos_sched_policy_band,
};

/* ---- helpers for policies ---------------------------------------------------- */

gos_vgpu *gos_sched_find(gos_sched *s, uint32_t id)
{
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
        if (s->vgpus[i].used && s->vgpus[i].id == id)
            return &s->vgpus[i];
    return NULL;
}

int gos_sched_res_of(const gos_sched *s, int kind)
{
    return s->mode == GOS_SCHED_SDQ ? 0 : kind;
}

bool gos_sched_capped(const gos_sched *s, const gos_vgpu *v, int res)
{
    const gos_sched_res *r = &v->res[res];
    return r->cap > 0 && r->used_period * 100 >= (uint64_t)r->cap * s->period;
}

bool gos_sched_eligible(const gos_sched *s, const gos_vgpu *v, int res)
{
    return v->used && v->res[res].queued > 0 && !gos_sched_capped(s, v, res);
}

bool gos_sched_active(const gos_sched *s, const gos_vgpu *v, int res)
{
    const gos_sched_res *r = &v->res[res];
    return v->used && (r->queued > 0 || r->in_flight > 0 || r->used_period > 0);
}

int gos_sched_active_share_sum(const gos_sched *s, int res)
{
    int sum = 0;
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
        if (gos_sched_active(s, &s->vgpus[i], res))
            sum += s->vgpus[i].res[res].share;
    return sum;
}

static uint64_t bucket_width(const gos_sched *s)
{
    uint64_t w = s->period / GOS_SCHED_NBUCKETS;
    return w ? w : 1;
}

/* Adds the busy interval [a, b) to a window. */
static void window_add(const gos_sched *s, gos_sched_window *w, uint64_t a, uint64_t b)
{
    uint64_t bw = bucket_width(s);
    uint64_t span = bw * (GOS_SCHED_NBUCKETS + 1);
    if (b > span && a < b - span)
        a = b - span; /* older parts fall out of the window anyway */
    while (a < b) {
        uint64_t idx = a / bw, end = (idx + 1) * bw;
        if (end > b)
            end = b;
        int slot = (int)(idx % (GOS_SCHED_NBUCKETS + 1));
        if (w->idx[slot] != idx) {
            w->idx[slot] = idx;
            w->ns[slot] = 0;
        }
        w->ns[slot] += end - a;
        a = end;
    }
}

/* GPU ns in the window (now - period, now]. */
static double window_sum(const gos_sched *s, const gos_sched_window *w, uint64_t now)
{
    uint64_t bw = bucket_width(s);
    uint64_t cur = now / bw;
    double frac = (double)(now - cur * bw) / (double)bw; /* of the current bucket */
    double sum = 0;
    for (uint64_t k = 0; k <= GOS_SCHED_NBUCKETS; k++) {
        if (k > cur)
            break;
        uint64_t idx = cur - k;
        int slot = (int)(idx % (GOS_SCHED_NBUCKETS + 1));
        if (w->idx[slot] != idx)
            continue;
        /* The oldest bucket is only partly inside the window. */
        sum += k == GOS_SCHED_NBUCKETS ? w->ns[slot] * (1.0 - frac) : (double)w->ns[slot];
    }
    return sum;
}

/* A latency vGPU's decayed use of engine res, brought to now (gos_vgpu.lat_use). */
static double latency_use(const gos_sched *s, const gos_vgpu *v, int res, uint64_t now)
{
    double h = (double)s->period * GOS_SCHED_LATENCY_HORIZON;
    uint64_t t = v->lat_t[res];
    return now > t ? v->lat_use[res] * exp(-(double)(now - t) / h) : v->lat_use[res];
}

/* gpu_ns of a latency vGPU's GPU time on engine res, ending now. */
static void latency_add(const gos_sched *s, gos_vgpu *v, int res, uint64_t gpu_ns, uint64_t now)
{
    if (!v->latency_ns || res < 0 || res >= GOS_SCHED_MAX_ENGINES)
        return;
    v->lat_use[res] = latency_use(s, v, res, now) + (double)gpu_ns;
    v->lat_t[res] = now;
}

double gos_sched_latency_util(const gos_sched *s, const gos_vgpu *v, int res, uint64_t now)
{
    /* a steady use u of the engine converges to u x the horizon */
    return res < 0 || res >= GOS_SCHED_MAX_ENGINES
               ? 0
               : latency_use(s, v, res, now) / ((double)s->period * GOS_SCHED_LATENCY_HORIZON);
}

double gos_sched_util(const gos_sched *s, const gos_vgpu *v, int res, uint64_t now)
{
    double ns = 0;
    for (int k = 0; k < 2; k++)
        if (gos_sched_res_of(s, k) == res)
            ns += window_sum(s, &v->win[k], now);
    if (s->band_charge_hold)
        ns += window_sum(s, &v->held_win[res], now);
    return ns / (double)s->period;
}

void gos_sched_hold_begin(gos_sched *s, int res, gos_vgpu *v, uint32_t client, uint64_t now,
                          uint64_t until)
{
    gos_sched_hold *h = &s->hold[res];
    h->active = true;
    h->vgpu = v->id;
    h->client = client;
    h->blocking = false;
    h->start = now;
    h->until = until;
}

void gos_sched_hold_blocks(gos_sched *s, int res, uint64_t now)
{
    gos_sched_hold *h = &s->hold[res];
    if (h->active && !h->blocking) {
        h->blocking = true;
        h->blocking_since = now;
    }
}

void gos_sched_hold_end(gos_sched *s, int res, uint64_t now)
{
    gos_sched_hold *h = &s->hold[res];
    if (!h->active)
        return;
    h->active = false;
    uint64_t end = now < h->until ? now : h->until;
    gos_vgpu *v = gos_sched_find(s, h->vgpu);
    if (!v || !h->blocking || end <= h->blocking_since)
        return;
    uint64_t ns = end - h->blocking_since;
    if (s->band_charge_hold) {
        v->res[res].credit -= (int64_t)ns;
        v->res[res].used_period += ns;
    }
    v->held_ns[res] += ns;
    window_add(s, &v->held_win[res], h->blocking_since, end);
}

/* ---- life cycle -------------------------------------------------------------- */

int gos_sched_parse_mode(const char *name, int *mode)
{
    if (name && !strcasecmp(name, "mrq"))
        *mode = GOS_SCHED_MRQ;
    else if (name && !strcasecmp(name, "sdq"))
        *mode = GOS_SCHED_SDQ;
    else
        return gos_fail(GOS_EINVAL, "unknown scheduler mode '%s' (mrq, sdq)",
                        name ? name : "(null)");
    return GOS_OK;
}

int gos_sched_new(const char *policy, int mode, uint64_t period_ns, gos_sched **out)
{
    const gos_sched_policy *p = NULL;
    for (size_t i = 0; policy && i < sizeof policies / sizeof policies[0]; i++)
        if (!strcasecmp(policy, policies[i]->name))
            p = policies[i];
    if (!p)
        return gos_fail(GOS_EINVAL, "unknown scheduling policy '%s' (fifo, credit, band)",
                        policy ? policy : "(null)");
    if (mode != GOS_SCHED_MRQ && mode != GOS_SCHED_SDQ)
        return gos_fail(GOS_EINVAL, "unknown scheduler mode %d", mode);
    if (period_ns == 0)
        period_ns = GOS_SCHED_DEFAULT_PERIOD_NS;
    if (period_ns < 1000 || period_ns > 10000000000ull)
        return gos_fail(GOS_EINVAL, "scheduler period %llu ns is outside 1 us .. 10 s",
                        (unsigned long long)period_ns);
    gos_sched *s = calloc(1, sizeof *s);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory for the scheduler");
    s->policy = p;
    s->mode = mode;
    s->nres = mode == GOS_SCHED_SDQ ? 1 : 2;
    s->period = period_ns;
    s->band_wait = GOS_SCHED_DEFAULT_BAND_WAIT_NS;
    s->band_charge_hold = true;
    if (s->band_wait > period_ns)
        s->band_wait = period_ns / 10;
    *out = s;
    return GOS_OK;
}

void gos_sched_free(gos_sched *s) { free(s); }

const char *gos_sched_policy_name(const gos_sched *s) { return s->policy->name; }
const char *gos_sched_mode_name(const gos_sched *s)
{
    return s->mode == GOS_SCHED_SDQ ? "sdq" : "mrq";
}
int gos_sched_mode(const gos_sched *s) { return s->mode; }
uint64_t gos_sched_period_ns(const gos_sched *s) { return s->period; }
int gos_sched_engine_count(const gos_sched *s) { return s->nres; }
int gos_sched_engine_for(const gos_sched *s, int kind) { return gos_sched_res_of(s, kind); }

int gos_sched_set_band_wait(gos_sched *s, uint64_t wait_ns)
{
    if (wait_ns > s->period)
        return gos_fail(GOS_EINVAL, "BAND wait %llu ns exceeds the period %llu ns",
                        (unsigned long long)wait_ns, (unsigned long long)s->period);
    s->band_wait = wait_ns;
    return GOS_OK;
}
uint64_t gos_sched_band_wait_ns(const gos_sched *s) { return s->band_wait; }

void gos_sched_set_band_charge_hold(gos_sched *s, bool charge) { s->band_charge_hold = charge; }
bool gos_sched_band_charge_hold(const gos_sched *s) { return s->band_charge_hold; }

uint64_t gos_sched_longest_active(const gos_sched *s, int res)
{
    uint64_t l = s->longest[res];
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
        if (gos_sched_active(s, &s->vgpus[i], res) && s->vgpus[i].res[res].longest > l)
            l = s->vgpus[i].res[res].longest;
    return l;
}

/* ---- time -------------------------------------------------------------------- */

/* The longest task lately: a longer one at once, a shorter one by 1/16 of the
 * difference (a run of 16 ms grants forgets a 50 ms kernel in some 40 tasks). */
static void decay_to(uint64_t *lo, uint64_t len)
{
    *lo = len >= *lo ? len : *lo - (*lo - len) / 16;
}

/* Moves the clock to now (never backwards) and closes every period that ended:
 * the policy replenishes, then the per-period counters restart. Periods with no
 * activity in between are skipped in one step. */
static void advance(gos_sched *s, uint64_t now)
{
    if (now < s->now)
        now = s->now;
    s->now = now;
    if (now < s->period_start + s->period)
        return;
    for (int r = 0; r < s->nres; r++) {
        uint64_t used = 0;
        for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
            if (s->vgpus[i].used)
                used += s->vgpus[i].res[r].used_period;
        if (s->policy->replenish)
            s->policy->replenish(s, r, used);
        for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
            s->vgpus[i].res[r].used_period = 0;
    }
    s->period_start = now - (now - s->period_start) % s->period;
}

/* ---- vGPUs ------------------------------------------------------------------- */

static int check_share(int share, const char *what)
{
    if (share < 1 || share > 100)
        return gos_fail(GOS_EINVAL, "%s share %d%% outside 1..100", what, share);
    return GOS_OK;
}

int gos_sched_vgpu_add(gos_sched *s, uint32_t id, int compute_share, int copy_share)
{
    int rc;
    if ((rc = check_share(compute_share, "compute")) || (rc = check_share(copy_share, "copy")))
        return rc;
    if (gos_sched_find(s, id))
        return gos_fail(GOS_EINVAL, "vGPU %u already exists", id);
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++) {
        gos_vgpu *v = &s->vgpus[i];
        if (v->used)
            continue;
        memset(v, 0, sizeof *v);
        /* Window slots start as "held by no bucket". */
        for (int k = 0; k < 2; k++)
            for (int b = 0; b <= GOS_SCHED_NBUCKETS; b++)
                v->win[k].idx[b] = v->held_win[k].idx[b] = UINT64_MAX;
        v->used = true;
        v->id = id;
        v->order = s->vgpu_order++;
        v->res[0].share = compute_share;
        v->res[1].share = copy_share; /* kept but unused in SDQ (all on res 0) */
        return GOS_OK;
    }
    return gos_fail(GOS_EBUSY, "too many vGPUs (at most %d)", GOS_SCHED_MAX_VGPUS);
}

int gos_sched_vgpu_set_shares(gos_sched *s, uint32_t id, int compute_share, int copy_share)
{
    int rc;
    if ((rc = check_share(compute_share, "compute")) || (rc = check_share(copy_share, "copy")))
        return rc;
    gos_vgpu *v = gos_sched_find(s, id);
    if (!v)
        return gos_fail(GOS_EINVAL, "no vGPU %u", id);
    v->res[0].share = compute_share;
    v->res[1].share = copy_share;
    return GOS_OK;
}

int gos_sched_vgpu_set_caps(gos_sched *s, uint32_t id, int compute_cap, int copy_cap)
{
    if (compute_cap < 0 || compute_cap > 100 || copy_cap < 0 || copy_cap > 100)
        return gos_fail(GOS_EINVAL, "vGPU caps %d%%/%d%% outside 0..100", compute_cap, copy_cap);
    gos_vgpu *v = gos_sched_find(s, id);
    if (!v)
        return gos_fail(GOS_EINVAL, "no vGPU %u", id);
    v->res[0].cap = compute_cap;
    v->res[1].cap = copy_cap;
    return GOS_OK;
}

/* ---- queues ------------------------------------------------------------------ */

static void unlink_task(gos_sched *s, gos_vgpu *v, int res, gos_sched_task *t)
{
    gos_sched_res *r = &v->res[res];
    if (t->prev)
        t->prev->next = t->next;
    else
        r->head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        r->tail = t->prev;
    t->next = t->prev = NULL;
    r->queued--;
    s->total_queued--;
}

static bool is_queued(gos_sched *s, const gos_sched_task *t)
{
    gos_vgpu *v = gos_sched_find(s, t->vgpu);
    if (!v || t->kind < 0 || t->kind > 1)
        return false;
    for (gos_sched_task *q = v->res[gos_sched_res_of(s, t->kind)].head; q; q = q->next)
        if (q == t)
            return true;
    return false;
}

/* Appends t to a chain kept in submission order (by seq). */
static void chain_insert(gos_sched_task **chain, gos_sched_task *t)
{
    gos_sched_task **p = chain;
    while (*p && (*p)->seq < t->seq)
        p = &(*p)->next;
    t->next = *p;
    t->prev = NULL;
    *p = t;
}

/* Unlinks every queued task of v that matches (client == NULL: all) into *chain. */
static void take_tasks(gos_sched *s, gos_vgpu *v, const uint32_t *client,
                       gos_sched_task **chain)
{
    for (int r = 0; r < s->nres; r++) {
        gos_sched_task *t = v->res[r].head;
        while (t) {
            gos_sched_task *n = t->next;
            if (!client || t->client == *client) {
                unlink_task(s, v, r, t);
                chain_insert(chain, t);
            }
            t = n;
        }
    }
}

int gos_sched_vgpu_remove(gos_sched *s, uint32_t id, gos_sched_task **returned)
{
    gos_vgpu *v = gos_sched_find(s, id);
    if (!v)
        return gos_fail(GOS_EINVAL, "no vGPU %u", id);
    if (!returned && (v->res[0].queued || v->res[1].queued))
        return gos_fail(GOS_EINVAL, "vGPU %u has queued tasks and no list to return them",
                        id);
    gos_sched_task *chain = NULL;
    take_tasks(s, v, NULL, &chain);
    if (returned)
        *returned = chain;
    if (s->policy->forget)
        s->policy->forget(s, v);
    v->used = false;
    return GOS_OK;
}

int gos_sched_remove_client(gos_sched *s, uint32_t client, gos_sched_task **returned)
{
    gos_sched_task *chain = NULL;
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
        if (s->vgpus[i].used)
            take_tasks(s, &s->vgpus[i], &client, &chain);
    if (returned)
        *returned = chain;
    return GOS_OK;
}

int gos_sched_cancel(gos_sched *s, gos_sched_task *t)
{
    for (int e = 0; e < s->nres; e++)
        if (s->running[e] == t)
            return gos_fail(GOS_EBUSY, "task is running and cannot be cancelled");
    if (!is_queued(s, t))
        return gos_fail(GOS_EINVAL, "task is not queued");
    unlink_task(s, gos_sched_find(s, t->vgpu), gos_sched_res_of(s, t->kind), t);
    return GOS_OK;
}

int gos_sched_submit(gos_sched *s, gos_sched_task *t, uint64_t now_ns)
{
    if (!t)
        return gos_fail(GOS_EINVAL, "no task");
    if (t->kind != GOS_SCHED_COMPUTE && t->kind != GOS_SCHED_COPY)
        return gos_fail(GOS_EINVAL, "task kind %d is neither compute nor copy", t->kind);
    gos_vgpu *v = gos_sched_find(s, t->vgpu);
    if (!v)
        return gos_fail(GOS_EINVAL, "task for unknown vGPU %u", t->vgpu);
    int res = gos_sched_res_of(s, t->kind);
    for (gos_sched_task *q = v->res[res].head; q; q = q->next)
        if (q == t)
            return gos_fail(GOS_EINVAL, "task already queued");
    for (int e = 0; e < s->nres; e++)
        if (s->running[e] == t)
            return gos_fail(GOS_EINVAL, "task is running");
    advance(s, now_ns);
    t->seq = s->seq++;
    t->submit_ns = s->now;
    t->start_ns = 0;
    t->engine = -1;
    /* Priority order: after every task of equal or higher priority. */
    gos_sched_res *r = &v->res[res];
    gos_sched_task *after = r->tail;
    while (after && after->priority < t->priority)
        after = after->prev;
    t->prev = after;
    t->next = after ? after->next : r->head;
    if (t->next)
        t->next->prev = t;
    else
        r->tail = t;
    if (after)
        after->next = t;
    else
        r->head = t;
    r->queued++;
    s->total_queued++;
    if (s->policy->schedule)
        s->policy->schedule(s, v, res, s->now);
    return GOS_OK;
}

/* ---- dispatch and completion ------------------------------------------------- */

gos_sched_task *gos_sched_next(gos_sched *s, int engine, uint64_t now_ns, uint64_t *wake_ns)
{
    uint64_t wake = GOS_SCHED_NEVER;
    gos_sched_task *t = NULL;
    if (engine < 0 || engine >= s->nres) {
        gos_fail(GOS_EINVAL, "no engine %d in %s mode", engine, gos_sched_mode_name(s));
        goto out;
    }
    advance(s, now_ns);
    if (s->running[engine] || s->total_queued == 0)
        goto out;
    gos_vgpu *v = s->policy->select_next(s, engine, s->now, &wake);
    if (!v) {
        /* Capped vGPUs with work: they may run when the period turns. */
        for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++) {
            gos_vgpu *o = &s->vgpus[i];
            if (o->used && o->res[engine].queued && gos_sched_capped(s, o, engine)) {
                uint64_t next_period = s->period_start + s->period;
                if (next_period < wake)
                    wake = next_period;
                break;
            }
        }
        goto out;
    }
    gos_sched_res *r = &v->res[engine];
    t = r->head;
    unlink_task(s, v, engine, t);
    r->in_flight++;
    r->last_dispatch = ++s->dispatches;
    t->engine = engine;
    t->start_ns = s->now;
    s->running[engine] = t;
    wake = GOS_SCHED_NEVER;
out:
    if (wake_ns)
        *wake_ns = wake;
    return t;
}

int gos_sched_done(gos_sched *s, gos_sched_task *t, uint64_t gpu_ns, uint64_t now_ns)
{
    if (!t || t->engine < 0 || t->engine >= s->nres || s->running[t->engine] != t)
        return gos_fail(GOS_EINVAL, "task is not in flight");
    int engine = t->engine;
    advance(s, now_ns);
    s->running[engine] = NULL;
    t->engine = -1;
    t->next = t->prev = NULL;
    if (gpu_ns == 0)
        gpu_ns = s->now - t->start_ns;
    uint64_t len = s->now - t->start_ns;
    decay_to(&s->longest[engine], len);
    gos_vgpu *v = gos_sched_find(s, t->vgpu);
    if (v) {
        gos_sched_res *r = &v->res[engine];
        decay_to(&r->longest, len);
        if (r->in_flight > 0)
            r->in_flight--;
        r->used_period += gpu_ns;
        v->kind_ns[t->kind] += gpu_ns;
        v->kind_done[t->kind]++;
        uint64_t a = gpu_ns > s->now ? 0 : s->now - gpu_ns;
        window_add(s, &v->win[t->kind], a, s->now);
        latency_add(s, v, engine, gpu_ns, s->now);
    }
    if (s->policy->complete)
        s->policy->complete(s, v, engine, t, gpu_ns, s->now);
    return GOS_OK;
}

int gos_sched_charge(gos_sched *s, uint32_t vgpu, int kind, uint64_t gpu_ns, uint64_t n, uint64_t now_ns)
{
    gos_vgpu *v = gos_sched_find(s, vgpu);
    if (!v || kind < 0 || kind > 1)
        return gos_fail(GOS_EINVAL, "charge to vGPU %u, kind %d", (unsigned)vgpu, kind);
    advance(s, now_ns);
    int engine = gos_sched_engine_for(s, kind);
    if (engine >= 0 && engine < s->nres)
        v->res[engine].used_period += gpu_ns;
    v->kind_ns[kind] += gpu_ns;
    v->kind_done[kind] += n;
    uint64_t a = gpu_ns > s->now ? 0 : s->now - gpu_ns;
    window_add(s, &v->win[kind], a, s->now);
    latency_add(s, v, engine, gpu_ns, s->now);
    if (engine >= 0 && engine < s->nres && s->policy->charge)
        s->policy->charge(s, v, engine, gpu_ns, s->now);
    return GOS_OK;
}

bool gos_sched_keeps(gos_sched *s, int engine, uint64_t now_ns)
{
    if (engine < 0 || engine >= s->nres || !s->running[engine] || !s->policy->keeps)
        return false;
    advance(s, now_ns);
    return s->policy->keeps(s, engine, s->now);
}

int gos_sched_vgpu_set_latency(gos_sched *s, uint32_t id, uint64_t latency_ns)
{
    gos_vgpu *v = gos_sched_find(s, id);
    if (!v)
        return gos_fail(GOS_EINVAL, "no vGPU %u", id);
    v->latency_ns = latency_ns;
    return GOS_OK;
}

uint64_t gos_sched_vgpu_latency(gos_sched *s, uint32_t id)
{
    gos_vgpu *v = gos_sched_find(s, id);
    return v ? v->latency_ns : 0;
}

bool gos_sched_preempts(gos_sched *s, int engine, uint32_t id, uint64_t now_ns)
{
    if (engine < 0 || engine >= s->nres || !s->running[engine] || !s->policy->latency_first)
        return false;
    gos_vgpu *v = gos_sched_find(s, id), *x = gos_sched_find(s, s->running[engine]->vgpu);
    if (!v || !v->latency_ns || v == x || (x && x->latency_ns))
        return false;
    advance(s, now_ns);
    int res = engine; /* (engine == res in MRQ and SDQ alike) */
    /* in its class, the policy serves it before any batch vGPU */
    return !gos_sched_capped(s, v, res) && s->policy->latency_first(s, v, res, s->now);
}

void gos_sched_nobody_waits(gos_sched *s, int engine, uint64_t now_ns)
{
    if (engine < 0 || engine >= s->nres || !s->running[engine])
        return;
    advance(s, now_ns);
    if (s->running[engine]->start_ns < s->now)
        s->running[engine]->start_ns = s->now;
}

gos_sched_task *gos_sched_running(const gos_sched *s, int engine)
{
    return engine >= 0 && engine < s->nres ? s->running[engine] : NULL;
}

/* ---- inspection -------------------------------------------------------------- */

int gos_sched_vgpu_count(const gos_sched *s)
{
    int n = 0;
    for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++)
        n += s->vgpus[i].used;
    return n;
}

int gos_sched_vgpu_ids(const gos_sched *s, uint32_t *ids, int max)
{
    /* Insertion order: repeatedly take the smallest order above the last one. */
    int n = 0;
    uint64_t last = 0;
    bool first = true;
    while (n < max) {
        const gos_vgpu *best = NULL;
        for (int i = 0; i < GOS_SCHED_MAX_VGPUS; i++) {
            const gos_vgpu *v = &s->vgpus[i];
            if (v->used && (first || v->order > last) && (!best || v->order < best->order))
                best = v;
        }
        if (!best)
            break;
        ids[n++] = best->id;
        last = best->order;
        first = false;
    }
    return n;
}

int gos_sched_vgpu_stats_get(gos_sched *s, uint32_t id, uint64_t now_ns,
                             gos_sched_vgpu_stats *out)
{
    gos_vgpu *v = gos_sched_find(s, id);
    if (!v)
        return gos_fail(GOS_EINVAL, "no vGPU %u", id);
    advance(s, now_ns);
    memset(out, 0, sizeof *out);
    out->compute_util_pct = 100.0 * window_sum(s, &v->win[0], s->now) / (double)s->period;
    out->copy_util_pct = 100.0 * window_sum(s, &v->win[1], s->now) / (double)s->period;
    out->compute_ns = v->kind_ns[0];
    out->copy_ns = v->kind_ns[1];
    out->compute_done = v->kind_done[0];
    out->copy_done = v->kind_done[1];
    if (s->mode == GOS_SCHED_SDQ) {
        for (gos_sched_task *t = v->res[0].head; t; t = t->next)
            *(t->kind == GOS_SCHED_COPY ? &out->copy_queued : &out->compute_queued) += 1;
    } else {
        out->compute_queued = v->res[0].queued;
        out->copy_queued = v->res[1].queued;
        out->copy_credit_ns = v->res[1].credit;
    }
    out->compute_credit_ns = v->res[0].credit;
    out->compute_share = v->res[0].share;
    out->copy_share = v->res[1].share;
    out->compute_held_ns = v->held_ns[0];
    out->copy_held_ns = v->held_ns[1];
    out->compute_held_pct = 100.0 * window_sum(s, &v->held_win[0], s->now) / (double)s->period;
    out->copy_held_pct = 100.0 * window_sum(s, &v->held_win[1], s->now) / (double)s->period;
    return GOS_OK;
}

uint32_t gos_sched_queued(const gos_sched *s) { return s->total_queued; }
