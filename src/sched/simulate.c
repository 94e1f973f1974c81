/* SPDX-License-Identifier: Apache-2.0 */
/* simulate.c: discrete-event simulation of closed-loop vGPU clients driving the
 * scheduler in virtual time (contract in simulate.h). */
#include "sched/simulate.h"

#include "common/rng.h"
#include "common/status.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NEVER GOS_SCHED_NEVER

typedef struct {
    int vgpu;            /* index = scheduler id */
    int only;            /* -1: copy-then-kernel cycles; else the one kind it submits */
    int phase;           /* kind of the next request */
    int in_burst;        /* cycles done in the current burst */
    uint64_t submit_at;  /* NEVER while a request is outstanding */
    uint64_t len;        /* length of the outstanding request */
    gos_sched_task task;
} sim_stream;

struct gos_sim {
    gos_sim_config cfg;
    gos_sched *s;
    gos_rng rng;
    uint64_t now;
    int nstreams;
    sim_stream streams[GOS_SIM_MAX_VGPUS * GOS_SIM_MAX_STREAMS * 2];
    uint64_t end_at[GOS_SCHED_MAX_ENGINES];  /* completion time of the running task */
    uint64_t wake_at[GOS_SCHED_MAX_ENGINES]; /* when an idle engine asks again */
    uint64_t busy[GOS_SIM_MAX_VGPUS][2];
    uint64_t cycles[GOS_SIM_MAX_VGPUS];
};

static uint64_t sample(gos_sim *sim, uint64_t mean, double jitter)
{
    if (jitter <= 0)
        return mean;
    double f = 1.0 + jitter * (2.0 * gos_rng_uniform(&sim->rng) - 1.0);
    uint64_t v = (uint64_t)llround((double)mean * f);
    return v ? v : 1;
}

static int first_phase(const gos_sim_vgpu *v, int only)
{
    if (only >= 0)
        return only;
    return v->copy_ns ? GOS_SCHED_COPY : GOS_SCHED_COMPUTE;
}

int gos_sim_new(const gos_sim_config *cfg, gos_sim **out)
{
    if (cfg->nvgpus < 1 || cfg->nvgpus > GOS_SIM_MAX_VGPUS)
        return gos_fail(GOS_EINVAL, "simulation needs 1..%d vGPUs, got %d", GOS_SIM_MAX_VGPUS,
                        cfg->nvgpus);
    for (int i = 0; i < cfg->nvgpus; i++) {
        const gos_sim_vgpu *v = &cfg->vgpu[i];
        if (!v->kernel_ns && !v->copy_ns)
            return gos_fail(GOS_EINVAL, "simulated vGPU %d has neither kernels nor copies", i);
        if (v->jitter < 0 || v->jitter > 0.9 || v->streams < 0 ||
            v->streams > GOS_SIM_MAX_STREAMS)
            return gos_fail(GOS_EINVAL, "simulated vGPU %d: bad jitter or stream count", i);
    }
    gos_sim *sim = calloc(1, sizeof *sim);
    if (!sim)
        return gos_fail(GOS_ENOMEM, "out of memory for the simulation");
    sim->cfg = *cfg;
    int rc = gos_sched_new(cfg->policy, cfg->mode, cfg->period_ns, &sim->s);
    if (rc)
        goto fail;
    gos_sched_set_band_charge_hold(sim->s, !cfg->band_free_hold);
    if (cfg->band_wait_ns >= 0 &&
        (rc = gos_sched_set_band_wait(sim->s, (uint64_t)cfg->band_wait_ns)))
        goto fail;
    gos_rng_seed(&sim->rng, cfg->seed);
    for (int i = 0; i < cfg->nvgpus; i++) {
        const gos_sim_vgpu *v = &cfg->vgpu[i];
        if ((rc = gos_sched_vgpu_add(sim->s, (uint32_t)i, v->compute_share, v->copy_share)))
            goto fail;
        int n = v->streams ? v->streams : 1;
        for (int k = 0; k < 2 * n; k++) {
            int only = -1;
            if (v->split) { /* n loops of kernels, then n loops of copies */
                only = k < n ? GOS_SCHED_COMPUTE : GOS_SCHED_COPY;
                if ((only == GOS_SCHED_COMPUTE && !v->kernel_ns) ||
                    (only == GOS_SCHED_COPY && !v->copy_ns))
                    continue;
            } else if (k >= n) {
                break;
            }
            sim_stream *st = &sim->streams[sim->nstreams++];
            st->vgpu = i;
            st->only = only;
            st->phase = first_phase(v, only);
            /* Stagger the first submits a little so ties do not decide everything. */
            st->submit_at = gos_rng_below(&sim->rng, 1000);
        }
    }
    for (int e = 0; e < GOS_SCHED_MAX_ENGINES; e++)
        sim->end_at[e] = sim->wake_at[e] = NEVER;
    *out = sim;
    return GOS_OK;
fail:
    gos_sched_free(sim->s);
    free(sim);
    return rc;
}

void gos_sim_free(gos_sim *sim)
{
    if (!sim)
        return;
    gos_sched_free(sim->s);
    free(sim);
}

uint64_t gos_sim_now(const gos_sim *sim) { return sim->now; }
gos_sched *gos_sim_sched(gos_sim *sim) { return sim->s; }

int gos_sim_set_shares(gos_sim *sim, int i, int compute_share, int copy_share)
{
    if (i < 0 || i >= sim->cfg.nvgpus)
        return gos_fail(GOS_EINVAL, "no simulated vGPU %d", i);
    return gos_sched_vgpu_set_shares(sim->s, (uint32_t)i, compute_share, copy_share);
}

static void submit(gos_sim *sim, sim_stream *st)
{
    const gos_sim_vgpu *v = &sim->cfg.vgpu[st->vgpu];
    gos_sched_task *t = &st->task;
    memset(t, 0, sizeof *t);
    t->vgpu = (uint32_t)st->vgpu;
    t->client = (uint32_t)(st - sim->streams);
    t->kind = st->phase;
    t->priority = v->priority;
    t->user = st;
    st->len = sample(sim, st->phase == GOS_SCHED_COPY ? v->copy_ns : v->kernel_ns, v->jitter);
    st->submit_at = NEVER;
    gos_sched_submit(sim->s, t, sim->now); /* cannot fail: vGPU and kind are valid */
}

static void complete(gos_sim *sim, int engine)
{
    gos_sched_task *t = gos_sched_running(sim->s, engine);
    sim_stream *st = t->user;
    const gos_sim_vgpu *v = &sim->cfg.vgpu[st->vgpu];
    gos_sched_done(sim->s, t, st->len, sim->now);
    sim->busy[st->vgpu][t->kind] += st->len;
    sim->end_at[engine] = NEVER;
    uint64_t pause = v->think_ns;
    if (st->only < 0 && st->phase == GOS_SCHED_COPY && v->kernel_ns) {
        st->phase = GOS_SCHED_COMPUTE;
    } else {
        sim->cycles[st->vgpu]++;
        st->phase = first_phase(v, st->only);
        if (v->burst > 1 && ++st->in_burst >= v->burst) {
            st->in_burst = 0;
            pause += v->burst_gap_ns;
        }
    }
    st->submit_at = sim->now + pause;
}

static void dispatch_idle(gos_sim *sim)
{
    for (int e = 0; e < gos_sched_engine_count(sim->s); e++) {
        if (sim->end_at[e] != NEVER)
            continue;
        uint64_t wake;
        gos_sched_task *t = gos_sched_next(sim->s, e, sim->now, &wake);
        if (t) {
            sim->end_at[e] = sim->now + ((sim_stream *)t->user)->len;
            sim->wake_at[e] = NEVER;
        } else {
            sim->wake_at[e] = wake;
        }
    }
}

int gos_sim_run_until(gos_sim *sim, uint64_t t_end)
{
    int ne = gos_sched_engine_count(sim->s);
    while (sim->now < t_end) {
        uint64_t t = NEVER;
        for (int e = 0; e < ne; e++) {
            if (sim->end_at[e] < t)
                t = sim->end_at[e];
            if (sim->wake_at[e] > sim->now && sim->wake_at[e] < t)
                t = sim->wake_at[e];
        }
        for (int k = 0; k < sim->nstreams; k++)
            if (sim->streams[k].submit_at < t)
                t = sim->streams[k].submit_at;
        if (t == NEVER || t > t_end) {
            sim->now = t_end;
            break;
        }
        if (t > sim->now)
            sim->now = t;
        for (int e = 0; e < ne; e++)
            if (sim->end_at[e] <= sim->now)
                complete(sim, e);
        for (int k = 0; k < sim->nstreams; k++)
            if (sim->streams[k].submit_at <= sim->now)
                submit(sim, &sim->streams[k]);
        dispatch_idle(sim);
    }
    return GOS_OK;
}

void gos_sim_snapshot_get(const gos_sim *sim, gos_sim_snapshot *out)
{
    memset(out, 0, sizeof *out);
    out->now = sim->now;
    out->nvgpus = sim->cfg.nvgpus;
    memcpy(out->busy_ns, sim->busy, sizeof out->busy_ns);
    memcpy(out->cycles, sim->cycles, sizeof out->cycles);
    for (int i = 0; i < sim->cfg.nvgpus; i++) {
        gos_sched_vgpu_stats st;
        gos_sched_vgpu_stats_get(sim->s, (uint32_t)i, sim->now, &st);
        out->held_ns[i][0] = st.compute_held_ns;
        out->held_ns[i][1] = st.copy_held_ns;
    }
    for (int e = 0; e < gos_sched_engine_count(sim->s); e++) {
        gos_sched_task *t = gos_sched_running(sim->s, e);
        if (!t)
            continue;
        sim_stream *st = t->user;
        uint64_t start = sim->end_at[e] - st->len;
        out->busy_ns[st->vgpu][t->kind] += sim->now - start;
    }
}

void gos_sim_result_between(const gos_sim *sim, const gos_sim_snapshot *a,
                            const gos_sim_snapshot *b, int kind, gos_sim_result *out)
{
    memset(out, 0, sizeof *out);
    int n = out->nvgpus = sim->cfg.nvgpus;
    double elapsed = (double)(b->now - a->now);
    double busy[GOS_SIM_MAX_VGPUS], alloc[GOS_SIM_MAX_VGPUS], total = 0, total_busy = 0;
    int share_sum = 0;
    for (int i = 0; i < n; i++) {
        const gos_sim_vgpu *v = &sim->cfg.vgpu[i];
        busy[i] = 0;
        for (int k = 0; k < 2; k++)
            if (kind == GOS_SIM_ALL || kind == k)
                busy[i] += (double)(b->busy_ns[i][k] - a->busy_ns[i][k]);
        /* Holds are per resource: in SDQ everything is resource 0. */
        double held = 0;
        for (int r = 0; r < 2; r++) {
            int as_kind = sim->cfg.mode == GOS_SCHED_SDQ ? GOS_SCHED_COMPUTE : r;
            if (kind == GOS_SIM_ALL || kind == as_kind)
                held += (double)(b->held_ns[i][r] - a->held_ns[i][r]);
        }
        alloc[i] = busy[i] + (sim->cfg.band_free_hold ? 0 : held);
        out->held_pct += elapsed > 0 ? 100.0 * held / elapsed : 0;
        total += alloc[i];
        total_busy += busy[i];
        gos_sched_vgpu_stats st;
        gos_sched_vgpu_stats_get(((gos_sim *)sim)->s, (uint32_t)i, sim->now, &st);
        bool has = kind == GOS_SCHED_COPY ? v->copy_ns > 0
                   : kind == GOS_SCHED_COMPUTE ? v->kernel_ns > 0 : true;
        if (has)
            share_sum += kind == GOS_SCHED_COPY ? st.copy_share : st.compute_share;
        out->target_pct[i] = has ? (kind == GOS_SCHED_COPY ? st.copy_share : st.compute_share)
                                 : 0;
    }
    for (int i = 0; i < n; i++) {
        out->target_pct[i] = share_sum ? 100.0 * out->target_pct[i] / share_sum : 0;
        out->achieved_pct[i] = total > 0 ? 100.0 * alloc[i] / total : 0;
        out->gpu_pct[i] = total_busy > 0 ? 100.0 * busy[i] / total_busy : 0;
        out->util_pct[i] = elapsed > 0 ? 100.0 * busy[i] / elapsed : 0;
        out->busy_pct += out->util_pct[i];
        out->cycles_per_s[i] = elapsed > 0 ? (double)(b->cycles[i] - a->cycles[i]) * 1e9 / elapsed
                                           : 0;
        out->total_cycles_per_s += out->cycles_per_s[i];
        if (out->target_pct[i] > 0) {
            double err = fabs(out->achieved_pct[i] - out->target_pct[i]);
            if (err > out->max_error_pct)
                out->max_error_pct = err;
        }
    }
}

int gos_sim_run(const gos_sim_config *cfg, uint64_t warmup_ns, uint64_t duration_ns,
                int kind, gos_sim_result *out)
{
    gos_sim *sim;
    int rc = gos_sim_new(cfg, &sim);
    if (rc)
        return rc;
    gos_sim_snapshot a, b;
    gos_sim_run_until(sim, warmup_ns);
    gos_sim_snapshot_get(sim, &a);
    gos_sim_run_until(sim, warmup_ns + duration_ns);
    gos_sim_snapshot_get(sim, &b);
    gos_sim_result_between(sim, &a, &b, kind, out);
    gos_sim_free(sim);
    return GOS_OK;
}

void gos_sim_bursty_config(gos_sim_config *c, const char *policy, int mode, int n,
                           const int *shares)
{
    memset(c, 0, sizeof *c);
    c->policy = policy;
    c->mode = mode;
    c->band_wait_ns = -1;
    c->seed = 42;
    c->nvgpus = n;
    for (int i = 0; i < n && i < GOS_SIM_MAX_VGPUS; i++) {
        gos_sim_vgpu *v = &c->vgpu[i];
        v->compute_share = v->copy_share = shares[i];
        v->kernel_ns = i % 2 ? 1000000 : 100000;
        v->jitter = 0.2;
        v->think_ns = 20000;
        v->burst = 8;
        v->burst_gap_ns = 200000;
    }
}
