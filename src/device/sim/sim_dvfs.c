/* SPDX-License-Identifier: Apache-2.0 */
/* sim_dvfs.c: the simulated device's frequency-switching primitives, driven by
 * the chip's sim.dvfs model (every parameter optional; defaults below):
 *
 *   freqs_mhz            supported SM clocks (sim.c puts them in the device info);
 *                        absent: any clock from 210 MHz to the device's clock
 *   switch_ms            {mean, sd}: switching latency of every pair by default
 *   targets              {"MHZ": {mean, sd}}: per-target latency (paper 000 VII:
 *                        the target frequency dominates)
 *   pairs                {"INIT-TARGET": {mean, sd} | {"clusters": [{mean, sd,
 *                        weight}, ...]}}: per-pair latency, possibly multi-cluster
 *   outlier_rate 0.03, outlier_ms [60, 150]: rare long switches (driver, CPU noise)
 *   iter_jitter 0.0005   relative per-iteration noise of the workload
 *   cycles_per_work 4, overhead_cycles 40: iteration = (work*4 + 40) cycles / clock
 *   timer_step_ns 32     %globaltimer resolution (32 ns steps on the lent H200)
 *   glitch_rate 2e-5, glitch_us [1, 20]: iterations stretched by an interruption
 *   wakeup_ms 30, idle_gap_ms 100: after an idle gap the clock ramps up for wakeup_ms
 *   thermal_rate 0.003 (per kernel), thermal_ms 4000, thermal_slowdown 0.08:
 *                        thermal throttling events (reason 0x20, clock lowered)
 *   power_throttle_mhz []: clocks at which the power cap reason (0x4) shows
 *   sync_rtt_ns 1500, launch_us 6, set_call_us 300: host-device costs
 *
 * The switch requested at host time t takes effect at t + L with L drawn for
 * the pair (current clock -> requested); iteration times integrate the clock
 * over the iteration, so an iteration straddling the switch has a mixed time.
 * All time is virtual (host_sleep only advances a counter). */
#include "device/dvfs_ops.h"
#include "device/sim/sim_internal.h"

#include "common/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STREAM_DVFS = 0x1c };
#define MAX_EVENTS 64
#define MAX_CLUSTERS 8

typedef struct {
    int n;
    double mean[MAX_CLUSTERS], sd[MAX_CLUSTERS], w[MAX_CLUSTERS];
} lat_model;

struct sim_dvfs {
    gos_rng rng;
    json_t *model;  /* sim.dvfs (borrowed from the chip) or NULL */
    int64_t now;    /* virtual host clock, ns */
    int64_t gpu_offset;
    int default_mhz, locked_mhz;
    int n_ev;
    struct {
        int64_t t;
        int mhz;
    } ev[MAX_EVENTS]; /* clock is ev[i].mhz from ev[i].t on (sorted) */
    int64_t last_kernel_end, thermal_from, thermal_until;
    /* parameters */
    double switch_mean, switch_sd, outlier_rate, outlier_lo, outlier_hi;
    double iter_jitter, cycles_per_work, overhead_cycles, glitch_rate, glitch_lo, glitch_hi;
    double wakeup_ns, idle_gap_ns, thermal_rate, thermal_ns, thermal_slowdown;
    double sync_rtt, launch_ns, set_call_ns;
    int64_t timer_step;
    /* the outstanding kernel */
    int running;
    gos_dvfs_workload w;
    int *rec;
    int64_t k_start;
    int wakeup; /* the kernel starts after an idle gap */
};

static double num(json_t *o, const char *k, double def)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : def;
}

static void range(json_t *o, const char *k, double *lo, double *hi)
{
    json_t *v = json_object_get(o, k);
    if (json_is_array(v) && json_array_size(v) == 2 && json_is_number(json_array_get(v, 0)) &&
        json_is_number(json_array_get(v, 1))) {
        *lo = json_number_value(json_array_get(v, 0));
        *hi = json_number_value(json_array_get(v, 1));
    }
}

static struct sim_dvfs *state(gos_device *d)
{
    if (d->dvfs_priv)
        return d->dvfs_priv;
    struct sim_dvfs *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    gos_sim_rng(d, &s->rng, STREAM_DVFS);
    json_t *m = json_object_get(json_object_get(d->chip->json, "sim"), "dvfs");
    s->model = json_is_object(m) ? m : NULL;
    json_t *sw = json_object_get(s->model, "switch_ms");
    s->switch_mean = num(sw, "mean", 20.0);
    s->switch_sd = num(sw, "sd", 4.0);
    s->outlier_rate = num(s->model, "outlier_rate", 0.03);
    s->outlier_lo = 60;
    s->outlier_hi = 150;
    range(s->model, "outlier_ms", &s->outlier_lo, &s->outlier_hi);
    s->iter_jitter = num(s->model, "iter_jitter", 0.0005);
    s->cycles_per_work = num(s->model, "cycles_per_work", 4);
    s->overhead_cycles = num(s->model, "overhead_cycles", 40);
    s->glitch_rate = num(s->model, "glitch_rate", 2e-5);
    s->glitch_lo = 1;
    s->glitch_hi = 20;
    range(s->model, "glitch_us", &s->glitch_lo, &s->glitch_hi);
    s->wakeup_ns = num(s->model, "wakeup_ms", 30) * 1e6;
    s->idle_gap_ns = num(s->model, "idle_gap_ms", 100) * 1e6;
    s->thermal_rate = num(s->model, "thermal_rate", 0.003);
    s->thermal_ns = num(s->model, "thermal_ms", 4000) * 1e6;
    s->thermal_slowdown = num(s->model, "thermal_slowdown", 0.08);
    s->sync_rtt = num(s->model, "sync_rtt_ns", 1500);
    s->launch_ns = num(s->model, "launch_us", 6) * 1e3;
    s->set_call_ns = num(s->model, "set_call_us", 300) * 1e3;
    s->timer_step = (int64_t)num(s->model, "timer_step_ns", 32);
    if (s->timer_step < 1)
        s->timer_step = 1;
    s->default_mhz = d->info.max_sm_clock_mhz > 0 ? d->info.max_sm_clock_mhz : 1980;
    s->now = 1000000000000LL; /* 1000 s of uptime */
    s->gpu_offset = 1764000000000000000LL - s->now + 12345;
    s->ev[0].t = 0;
    s->ev[0].mhz = s->default_mhz;
    s->n_ev = 1;
    s->last_kernel_end = -(int64_t)1e12;
    s->thermal_until = -1;
    d->dvfs_priv = s;
    return s;
}

static void sim_dvfs_close(gos_device *d)
{
    struct sim_dvfs *s = d->dvfs_priv;
    if (s)
        free(s->rec);
    free(s);
    d->dvfs_priv = NULL;
}

static int clock_at(const struct sim_dvfs *s, int64_t t)
{
    int mhz = s->ev[0].mhz;
    for (int i = 0; i < s->n_ev && s->ev[i].t <= t; i++)
        mhz = s->ev[i].mhz;
    return mhz;
}

static int64_t sim_host_now(gos_device *d)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return 0;
    s->now += 20; /* reading the clock costs a little */
    return s->now;
}

static int sim_host_sleep(gos_device *d, int64_t ns)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    if (ns > 0)
        s->now += ns;
    return GOS_OK;
}

static int supported(gos_device *d, int mhz)
{
    const gos_device_info *I = &d->info;
    if (I->n_supported_sm_clocks == 0)
        return mhz >= 210 && mhz <= (I->max_sm_clock_mhz > 0 ? I->max_sm_clock_mhz : 1980);
    for (int i = 0; i < I->n_supported_sm_clocks; i++)
        if (I->supported_sm_clocks_mhz[i] == mhz)
            return 1;
    return 0;
}

/* The latency model of one pair: "pairs" entry, else "targets" entry, else switch_ms. */
static void pair_model(struct sim_dvfs *s, int init, int target, lat_model *m)
{
    char key[32];
    m->n = 1;
    m->mean[0] = s->switch_mean;
    m->sd[0] = s->switch_sd;
    m->w[0] = 1;
    snprintf(key, sizeof key, "%d", target);
    json_t *t = json_object_get(json_object_get(s->model, "targets"), key);
    if (json_is_object(t)) {
        m->mean[0] = num(t, "mean", m->mean[0]);
        m->sd[0] = num(t, "sd", m->sd[0]);
    }
    snprintf(key, sizeof key, "%d-%d", init, target);
    json_t *p = json_object_get(json_object_get(s->model, "pairs"), key);
    if (!json_is_object(p))
        return;
    json_t *cl = json_object_get(p, "clusters");
    if (json_is_array(cl) && json_array_size(cl) > 0) {
        m->n = 0;
        for (size_t i = 0; i < json_array_size(cl) && m->n < MAX_CLUSTERS; i++) {
            json_t *c = json_array_get(cl, i);
            m->mean[m->n] = num(c, "mean", s->switch_mean);
            m->sd[m->n] = num(c, "sd", s->switch_sd);
            m->w[m->n] = num(c, "weight", 1);
            m->n++;
        }
    } else {
        m->mean[0] = num(p, "mean", m->mean[0]);
        m->sd[0] = num(p, "sd", m->sd[0]);
    }
}

static double draw_latency_ns(struct sim_dvfs *s, int init, int target)
{
    if (init == target)
        return 0;
    if (gos_rng_uniform(&s->rng) < s->outlier_rate)
        return 1e6 * (s->outlier_lo + (s->outlier_hi - s->outlier_lo) * gos_rng_uniform(&s->rng));
    lat_model m;
    pair_model(s, init, target, &m);
    double tw = 0;
    for (int i = 0; i < m.n; i++)
        tw += m.w[i] > 0 ? m.w[i] : 0;
    double u = gos_rng_uniform(&s->rng) * tw;
    int k = 0;
    for (; k < m.n - 1; k++) {
        u -= m.w[k] > 0 ? m.w[k] : 0;
        if (u < 0)
            break;
    }
    double ms = m.mean[k] + m.sd[k] * gos_rng_normal(&s->rng);
    return 1e6 * (ms < 0.1 ? 0.1 : ms);
}

static int sim_set_clock(gos_device *d, int mhz)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    if (!supported(d, mhz))
        return gos_fail(GOS_EINVAL, "the simulated device does not support an SM clock of %d MHz", mhz);
    int64_t t = s->now;
    int cur = clock_at(s, t);
    /* a new request supersedes a pending one; the history before t folds into
     * the clock in force at t (the outstanding kernel, if any, started later
     * than every event that matters to it only if we keep those after its
     * start: keep events from the kernel start on) */
    int64_t keep_from = s->running ? s->k_start : t;
    int n = 0;
    int in_force = s->ev[0].mhz;
    for (int i = 0; i < s->n_ev; i++) {
        if (s->ev[i].t > t)
            break; /* pending: dropped */
        if (s->ev[i].t <= keep_from)
            in_force = s->ev[i].mhz;
        else
            s->ev[1 + n++] = s->ev[i];
    }
    s->ev[0].t = 0;
    s->ev[0].mhz = in_force;
    s->n_ev = 1 + n;
    if (s->n_ev >= MAX_EVENTS - 1)
        return gos_fail(GOS_EBUSY, "too many clock changes during one simulated kernel");
    double lat = draw_latency_ns(s, cur, mhz);
    s->ev[s->n_ev].t = t + (int64_t)lat;
    s->ev[s->n_ev].mhz = mhz;
    s->n_ev++;
    s->locked_mhz = mhz;
    s->now += (int64_t)s->set_call_ns;
    return GOS_OK;
}

static int sim_reset_clock(gos_device *d)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    if (s->locked_mhz) {
        int rc = sim_set_clock(d, s->default_mhz);
        s->locked_mhz = 0;
        return rc;
    }
    return GOS_OK;
}

static int sim_status(gos_device *d, gos_dvfs_status *st)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    memset(st, 0, sizeof *st);
    int mhz = clock_at(s, s->now);
    st->has_clock = 1;
    st->sm_clock_mhz = mhz;
    st->has_reasons = 1;
    if (s->now < s->thermal_until && s->now >= s->thermal_from) {
        st->reasons |= GOS_THR_SW_THERMAL;
        st->sm_clock_mhz = (int)(mhz * (1 - s->thermal_slowdown) / 15) * 15;
    }
    json_t *pw = json_object_get(s->model, "power_throttle_mhz");
    for (size_t i = 0; i < json_array_size(pw); i++)
        if (json_integer_value(json_array_get(pw, i)) == mhz)
            st->reasons |= GOS_THR_SW_POWER;
    if (s->now - s->last_kernel_end > s->idle_gap_ns && !s->running)
        st->reasons |= GOS_THR_IDLE;
    st->has_temp = 1;
    st->temp_c = st->reasons & GOS_THR_SW_THERMAL ? 87 : 52;
    st->has_power = 1;
    st->power_w = s->running || s->now - s->last_kernel_end < s->idle_gap_ns ? 60 + 0.06 * mhz : 85;
    return GOS_OK;
}

static int sim_workload_start(gos_device *d, const gos_dvfs_workload *w)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    if (s->running)
        return gos_fail(GOS_EBUSY, "a timing workload is already running");
    /* iters, work and the recorded SMs were checked by gos_dvfs_workload_start */
    int *rec = realloc(s->rec, (size_t)w->n_record * sizeof *rec);
    if (!rec)
        return gos_fail(GOS_ENOMEM, "out of memory");
    for (int i = 0; i < w->n_record; i++)
        rec[i] = w->record_sms[i];
    s->rec = rec;
    s->w = *w;
    s->w.record_sms = rec;
    s->now += 3000; /* the launch call */
    s->k_start = s->now + (int64_t)s->launch_ns;
    s->wakeup = s->k_start - s->last_kernel_end > s->idle_gap_ns;
    if (gos_rng_uniform(&s->rng) < s->thermal_rate && s->now >= s->thermal_until) {
        s->thermal_from = s->k_start + (int64_t)(gos_rng_uniform(&s->rng) * 2e8);
        s->thermal_until = s->thermal_from + (int64_t)s->thermal_ns;
    }
    s->running = 1;
    return GOS_OK;
}

/* Clock in force at host time t, with wake-up ramp and thermal slowdown. */
static double eff_mhz(const struct sim_dvfs *s, double t, double *next_change)
{
    int mhz = s->ev[0].mhz;
    *next_change = INFINITY;
    for (int i = 0; i < s->n_ev; i++) {
        if ((double)s->ev[i].t <= t)
            mhz = s->ev[i].mhz;
        else {
            *next_change = (double)s->ev[i].t;
            break;
        }
    }
    double f = mhz;
    if (s->wakeup && t < (double)s->k_start + s->wakeup_ns) {
        f *= 0.6 + 0.4 * (t - (double)s->k_start) / s->wakeup_ns;
        double step = (double)s->k_start + s->wakeup_ns;
        if (step < *next_change)
            *next_change = step; /* approximate the ramp piecewise per iteration */
    }
    if (t < (double)s->thermal_until && t >= (double)s->thermal_from)
        f *= 1 - s->thermal_slowdown;
    return f;
}

/* Cheap near-normal deviate (Irwin-Hall of 4 uniforms, unit variance): the
 * per-iteration jitter needs millions of draws and no exact tails. */
static double fast_normal(gos_rng *r)
{
    uint64_t x = gos_rng_u64(r);
    double s = (double)(x & 0xffff) + (double)((x >> 16) & 0xffff) + (double)((x >> 32) & 0xffff) +
               (double)(x >> 48);
    return (s / 65536.0 - 2.0) * 1.7320508075688772;
}

static int sim_workload_wait(gos_device *d, gos_dvfs_trace *tr)
{
    struct sim_dvfs *s = state(d);
    if (!s || !s->running)
        return gos_fail(GOS_EINVAL, "no timing workload is running");
    s->running = 0;
    int rc = gos_dvfs_trace_alloc(tr, s->w.n_record, (size_t)s->w.iters);
    if (rc)
        return rc;
    double cycles0 = s->w.work * s->cycles_per_work + s->overhead_cycles;
    int pow2 = (s->timer_step & (s->timer_step - 1)) == 0;
    double kend = (double)s->k_start;
    for (int k = 0; k < s->w.n_record; k++) {
        tr->sm[k] = s->rec[k];
        double t = (double)s->k_start + 2000.0 * gos_rng_uniform(&s->rng); /* block start skew */
        int64_t *st = tr->start_ns + tr->off[k], *en = tr->end_ns + tr->off[k];
        for (int i = 0; i < s->w.iters; i++) {
            double c = cycles0 * (1 + s->iter_jitter * fast_normal(&s->rng));
            if (c < 1)
                c = 1;
            double t0 = t;
            while (c > 0) {
                double next, f = eff_mhz(s, t, &next) * 1e-3; /* cycles per ns */
                double dt = c / f;
                if (t + dt <= next) {
                    t += dt;
                    c = 0;
                } else {
                    c -= (next - t) * f;
                    t = next;
                }
            }
            if (s->glitch_rate > 0 && (gos_rng_u64(&s->rng) >> 11) * 0x1.0p-53 < s->glitch_rate)
                t += 1e3 * (s->glitch_lo + (s->glitch_hi - s->glitch_lo) * gos_rng_uniform(&s->rng));
            int64_t g0 = (int64_t)t0 + s->gpu_offset, g1 = (int64_t)t + s->gpu_offset;
            if (pow2) {
                st[i] = g0 & ~(s->timer_step - 1);
                en[i] = g1 & ~(s->timer_step - 1);
            } else {
                st[i] = g0 - g0 % s->timer_step;
                en[i] = g1 - g1 % s->timer_step;
            }
            t += 8; /* the timestamp stores between iterations */
        }
        if (t > kend)
            kend = t;
    }
    int64_t done = (int64_t)kend + 5000; /* synchronise + copy back */
    if (done > s->now)
        s->now = done;
    s->last_kernel_end = (int64_t)kend;
    return GOS_OK;
}

static int sim_timer_exchange(gos_device *d, int n, int64_t *hb, int64_t *gpu, int64_t *ha)
{
    struct sim_dvfs *s = state(d);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    s->now += (int64_t)s->launch_ns; /* the exchange kernel's launch */
    for (int i = 0; i < n; i++) {
        hb[i] = s->now;
        double a = s->sync_rtt * (0.5 + 0.25 * fabs(gos_rng_normal(&s->rng)));
        double b = s->sync_rtt * (0.5 + 0.25 * fabs(gos_rng_normal(&s->rng)));
        s->now += (int64_t)a;
        int64_t g = s->now + s->gpu_offset;
        gpu[i] = g - g % s->timer_step;
        s->now += (int64_t)b;
        ha[i] = s->now;
    }
    return GOS_OK;
}

const struct gos_dvfs_ops gos_sim_dvfs_ops = {
    .close = sim_dvfs_close,
    .host_now = sim_host_now,
    .host_sleep = sim_host_sleep,
    .workload_start = sim_workload_start,
    .workload_wait = sim_workload_wait,
    .timer_exchange = sim_timer_exchange,
    .set_clock = sim_set_clock,
    .reset_clock = sim_reset_clock,
    .status = sim_status,
};
