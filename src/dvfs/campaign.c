/* SPDX-License-Identifier: Apache-2.0 */
/* campaign.c: a whole switching-latency campaign (paper 000, sections V and VI):
 *
 *   0. refuse on a real GPU without allow_clock_changes; arm the clock guard;
 *   1. size the work per iteration at the current clock so that the closest
 *      pair of frequencies separates (workload.c);
 *   2. phase 1: per frequency set the clock, run calib_kernels kernels; wake-up
 *      from the first, mean/sd from the last; verify the clock by NVML and by
 *      the measured iteration time (mean x f is the same for every frequency of
 *      a compute-bound loop); pair validity by the Welch interval (calib.c);
 *   3. upper bound of the switching latency from a few pairs (high->low,
 *      low->high, mid->high) with a provisional 1 s window (x10 if nothing is
 *      captured); the switching window is ten times that bound; when the
 *      kernel would need more than max_iters iterations the work per iteration
 *      grows and phase 1 is repeated;
 *   4. phases 2 and 3 per valid pair: synchronise timers, set the initial clock,
 *      warm up, launch, sleep through the delay period, take t_s, request the
 *      target, evaluate (evaluate.c); repeat until the relative standard error
 *      of the latencies is below cfg->rse (checked every check_every viable
 *      passes once min_n are in) or max_n; every throttle_every passes read the
 *      clocks-event reasons: thermal -> drop the newest 5 and wait 10 s; power
 *      -> skip the pair;
 *   5. reset the clock (the guard does it on every path out, signals included).
 * With cfg->out the traces are saved in the contract's directory format. */
#include "dvfs/dvfs.h"

#include "chip/chip.h"
#include "common/jsonio.h"
#include "common/provenance.h"
#include "stats/stats.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SYNC_EXCHANGES 16
#define PROVISIONAL_WINDOW_NS 1e9
#define UB_MEASUREMENTS 3
#define MAX_FAILS_IN_ROW 20
#define THERMAL_DROP 5
#define THERMAL_WAIT_NS 10000000000LL
#define NVML_TOL_MHZ 8

void gos_dvfs_config_default(gos_dvfs_config *c)
{
    *c = (gos_dvfs_config){.rse = 0.05, .min_n = 25, .max_n = 500, .check_every = 25, .throttle_every = 5,
                           .n_record = 16, .max_iters = 10000, .ident_iters = 500, .delay_iters = 300,
                           .calib_kernels = 3};
}

typedef struct {
    gos_device *d;
    const gos_dvfs_config *cfg;
    gos_dvfs_campaign *res;
    int sms[GOS_MAX_SMS];
    int n_sms;
    int work;
    double window_ns, ub_ns, wakeup_ns;
    gos_dvfs_trace last[GOS_DVFS_MAX_FREQS]; /* last calibration kernel per frequency */
    char host[128];
} camp;

static void logf_(camp *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(camp *c, const char *fmt, ...)
{
    if (!c->cfg->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->cfg->log, fmt, ap);
    va_end(ap);
    fflush(c->cfg->log);
}

static int interrupted(camp *c)
{
    int sig = gos_dvfs_guard_interrupted();
    if (!sig)
        return GOS_OK;
    c->res->interrupted = 1;
    return gos_fail(GOS_EBUSY, "interrupted by signal %d; SM clocks restored", sig);
}

static int set_clock(camp *c, int mhz)
{
    gos_dvfs_guard_touched(); /* before the call: a failing call may still have acted */
    int rc = gos_dvfs_set_clock(c->d, mhz);
    if (rc == GOS_EPERM)
        return gos_fail(GOS_EPERM, "no permission to lock the SM clock at %d MHz (%s); run as root "
                                   "or use --sim", mhz, gos_last_error());
    return rc;
}

static int freq_index(camp *c, int mhz)
{
    for (int i = 0; i < c->cfg->n_freqs; i++)
        if (c->cfg->freqs[i] == mhz)
            return i;
    return -1;
}

static double iter_ns(camp *c, int mhz) { return c->res->calib[freq_index(c, mhz)].mean_ns; }

static int iters_for(camp *c, double ns, int mhz)
{
    double t = iter_ns(c, mhz);
    double n = ceil(ns / (t > 0 ? t : 1));
    return n < 1 ? 1 : n > 1e8 ? 100000000 : (int)n;
}

static int run_kernel(camp *c, int iters, gos_dvfs_trace *tr)
{
    gos_dvfs_workload w = {.iters = iters, .work = c->work, .n_record = c->n_sms, .record_sms = c->sms};
    int rc = gos_dvfs_run_workload(c->d, &w, tr);
    return rc ? rc : interrupted(c);
}

/* A kernel that only keeps the GPU busy for about `ns` (one SM recorded, about
 * 1000 iterations of a multiple of the work): the paper's warm-up workload.
 * With wake != NULL, *wake receives the wake-up time measured in it (the time
 * until iterations settle within 2 sd of those of its second half). */
static int warm_kernel(camp *c, double ns, int mhz, double *wake)
{
    int fi = freq_index(c, mhz);
    double t = fi >= 0 ? c->res->calib[fi].mean_ns : 0;
    int mult = 1;
    if (t > 0 && ns / t > 1000)
        mult = (int)fmin(ceil(ns / t / 1000), (double)(1 << 30) / c->work);
    else if (!(t > 0))
        mult = (int)fmax(1, fmin(64, (double)(1 << 30) / c->work));
    int iters = t > 0 ? (int)ceil(ns / (t * mult)) : 1000;
    if (iters < 50)
        iters = 50;
    gos_dvfs_workload w = {.iters = iters, .work = c->work * mult, .n_record = 1, .record_sms = c->sms};
    gos_dvfs_trace tr = {0};
    int rc = gos_dvfs_run_workload(c->d, &w, &tr);
    if (!rc && wake) {
        gos_moments m;
        gos_moments_init(&m);
        for (size_t i = tr.off[1] / 2; i < tr.off[1]; i++)
            gos_moments_add(&m, (double)(tr.end_ns[i] - tr.start_ns[i]));
        *wake = gos_dvfs_wakeup_ns(&tr, m.mean, gos_moments_sd(&m));
    }
    gos_dvfs_trace_free(&tr);
    return rc ? rc : interrupted(c);
}

json_t *gos_dvfs_device_json(const gos_device_info *I)
{
    return GOS_JSON_OBJ(GOS_JS("name", I->name), GOS_JS("uuid", I->uuid), GOS_JI("ordinal", I->ordinal),
                        GOS_JB("simulated", I->simulated), GOS_JI("sm_count", I->sm_count),
                        GOS_JS("driver", I->driver_version));
}

static int write_run_json(camp *c, int final)
{
    if (!c->cfg->out)
        return GOS_OK;
    const gos_device_info *I = &c->d->info;
    const gos_dvfs_config *cfg = c->cfg;
    json_t *cal = json_array();
    for (int i = 0; i < c->res->n_freqs; i++) {
        const gos_dvfs_calib *k = &c->res->calib[i];
        json_t *o = GOS_JSON_OBJ(GOS_JI("mhz", k->mhz), GOS_JR("mean_ns", k->mean_ns), GOS_JR("sd_ns", k->sd_ns),
                                 GOS_JI("n", k->n), GOS_JR("wakeup_ms", k->wakeup_ns / 1e6),
                                 GOS_JI("nvml_mhz", k->nvml_mhz), GOS_JB("verified", k->verified));
        if (k->note[0])
            json_object_set_new(o, "note", json_string(k->note));
        json_array_append_new(cal, o);
    }
    json_t *root = GOS_JSON_OBJ(
        GOS_JS("schema", GOS_DVFS_RUN_SCHEMA), GOS_JO("freqs_mhz", gos_json_ints(cfg->freqs, cfg->n_freqs)),
        GOS_JO("device", gos_dvfs_device_json(I)), GOS_JS("host", c->host),
        GOS_JO("workload", GOS_JSON_OBJ(GOS_JI("work_fma", c->work), GOS_JI("recorded_sms", c->n_sms),
                                        GOS_JI("delay_iters", cfg->delay_iters), GOS_JI("ident_iters", cfg->ident_iters),
                                        GOS_JR("upper_bound_ms", c->ub_ns / 1e6), GOS_JR("window_ms", c->window_ns / 1e6),
                                        GOS_JR("wakeup_ms", c->wakeup_ns / 1e6))),
        GOS_JO("config", GOS_JSON_OBJ(GOS_JR("rse", cfg->rse),
                                      GOS_JS("rse_of", cfg->rse_raw ? "all viable latencies" : "latencies kept by the filter"),
                                      GOS_JI("min", cfg->min_n), GOS_JI("max", cfg->max_n))),
        GOS_JO("provenance", gos_provenance(cfg->command, I->driver_version)), GOS_JO("calibration", cal));
    if (final) {
        const gos_dvfs_campaign *r = c->res;
        json_t *sk = json_array();
        for (int p = 0; p < r->n_pairs; p++)
            if (r->pairs[p].skipped[0])
                json_array_append_new(sk, GOS_JSON_OBJ(GOS_JI("init_mhz", r->pairs[p].init_mhz),
                                                       GOS_JI("target_mhz", r->pairs[p].target_mhz),
                                                       GOS_JS("reason", r->pairs[p].skipped)));
        json_object_set_new(
            root, "campaign",
            GOS_JSON_OBJ(GOS_JR("total_s", r->total_s), GOS_JI("measurements", r->n_measurements),
                         GOS_JI("attempts", r->n_attempts), GOS_JI("thermal_events", r->thermal_events),
                         GOS_JI("power_events", r->power_events),
                         GOS_JR("sync_uncertainty_ns_first", r->sync.uncertainty_ns),
                         GOS_JR("sync_uncertainty_ns_max", r->sync_unc_max_ns), GOS_JB("interrupted", r->interrupted),
                         GOS_JO("skipped_pairs", sk)));
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/run.json", c->cfg->out);
    int rc = gos_json_save_atomic(root, path);
    json_decref(root);
    return rc;
}

/* Phase 1 (algorithm 1) for every frequency. */
static int calibrate(camp *c)
{
    const gos_dvfs_config *cfg = c->cfg;
    gos_dvfs_campaign *res = c->res;
    res->n_freqs = cfg->n_freqs;
    int rc;
    c->wakeup_ns = 0;
    for (int i = 0; i < cfg->n_freqs; i++) {
        int f = cfg->freqs[i];
        gos_dvfs_trace tr = {0};
        double wake = 0;
        for (int attempt = 0;; attempt++) {
            if ((rc = set_clock(c, f)))
                return rc;
            /* let the switch complete (its latency is not known yet) */
            gos_dvfs_host_sleep(c->d, c->ub_ns > 0 ? (int64_t)(2 * c->ub_ns) : 1000000000LL);
            if ((rc = interrupted(c)))
                return rc;
            /* kernel 1: warm-up and wake-up (at least 0.2 s, 3x the longest wake-up seen) */
            if ((rc = warm_kernel(c, fmax(2e8, 3 * c->wakeup_ns), f, &wake)))
                return rc;
            int iters = cfg->max_iters < 4000 ? cfg->max_iters : 4000;
            for (int k = 1; k < cfg->calib_kernels || k == 1; k++) {
                gos_dvfs_trace_free(&tr);
                if ((rc = run_kernel(c, iters, &tr)))
                    return rc;
            }
            /* a calibration under thermal throttling is worthless: cool down, redo */
            gos_dvfs_status st;
            if (attempt < 3 && gos_dvfs_read_status(c->d, &st) == GOS_OK && st.has_reasons &&
                (st.reasons & GOS_THR_THERMAL)) {
                c->res->thermal_events++;
                logf_(c, "  calibration %4d MHz: thermal throttling (reasons 0x%llx), waiting 10 s\n", f,
                      (unsigned long long)st.reasons);
                gos_dvfs_host_sleep(c->d, THERMAL_WAIT_NS);
                continue;
            }
            break;
        }
        gos_dvfs_calib *cal = &res->calib[i];
        gos_dvfs_calib_from_trace(&tr, f, cal);
        cal->wakeup_ns = wake;
        if (cal->wakeup_ns > c->wakeup_ns)
            c->wakeup_ns = cal->wakeup_ns;
        gos_dvfs_trace_free(&c->last[i]);
        c->last[i] = tr;
        gos_dvfs_status st;
        if (gos_dvfs_read_status(c->d, &st) == GOS_OK && st.has_clock)
            cal->nvml_mhz = st.sm_clock_mhz;
        logf_(c, "  calibration %4d MHz: iteration %.1f +- %.1f ns over %zu, NVML %d MHz, wake-up %.1f ms\n",
              f, cal->mean_ns, cal->sd_ns, cal->n, cal->nvml_mhz, cal->wakeup_ns / 1e6);
    }
    /* verification by measurement: mean x f is one constant for a compute-bound
     * loop; a frequency whose product strays by > 5 % from the median did not run
     * at the clock it was given, whatever NVML said */
    double prod[GOS_DVFS_MAX_FREQS], sorted[GOS_DVFS_MAX_FREQS];
    for (int i = 0; i < cfg->n_freqs; i++)
        sorted[i] = prod[i] = res->calib[i].mean_ns * cfg->freqs[i];
    gos_sort_doubles(sorted, cfg->n_freqs);
    double med = gos_quantile_sorted(sorted, cfg->n_freqs, 0.5);
    for (int i = 0; i < cfg->n_freqs; i++) {
        gos_dvfs_calib *cal = &res->calib[i];
        cal->verified = 1;
        cal->note[0] = 0;
        if (cal->nvml_mhz && abs(cal->nvml_mhz - cal->mhz) > NVML_TOL_MHZ) {
            cal->verified = 0;
            snprintf(cal->note, sizeof cal->note, "NVML reports %d MHz", cal->nvml_mhz);
        } else if (cfg->n_freqs >= 3 && fabs(prod[i] / med - 1) > 0.05) {
            cal->verified = 0;
            snprintf(cal->note, sizeof cal->note, "iteration time implies %.0f MHz", med / cal->mean_ns);
        }
        if (!cal->verified)
            logf_(c, "  warning: %d MHz not verified (%s): its pairs are excluded\n", cal->mhz, cal->note);
    }
    if (cfg->out) {
        char path[4096];
        snprintf(path, sizeof path, "%s/calib", cfg->out);
        if ((rc = gos_dvfs_mkdirs(path)))
            return rc;
        for (int i = 0; i < cfg->n_freqs; i++) {
            snprintf(path, sizeof path, "%s/calib/%d.csv", cfg->out, cfg->freqs[i]);
            if ((rc = gos_dvfs_trace_write_csv(&c->last[i], path)))
                return rc;
        }
    }
    return GOS_OK;
}

typedef struct {
    gos_dvfs_eval ev;
    int64_t t_s, host_request;
    int nvml_mhz;
    double sync_unc;
} measurement;

/* One pass of phase 2 + phase 3 (algorithm 2). */
static int measure_once(camp *c, int ii, int ti, double window_ns, const char *save_dir, int k,
                        measurement *m)
{
    const gos_dvfs_config *cfg = c->cfg;
    int init = cfg->freqs[ii], target = cfg->freqs[ti], rc;
    memset(m, 0, sizeof *m);
    gos_dvfs_sync sync;
    if ((rc = gos_dvfs_timesync(c->d, SYNC_EXCHANGES, &sync)))
        return rc;
    m->sync_unc = sync.uncertainty_ns;
    if (sync.uncertainty_ns > c->res->sync_unc_max_ns)
        c->res->sync_unc_max_ns = sync.uncertainty_ns;
    if ((rc = set_clock(c, init)))
        return rc;
    /* warm-up: long enough for the switch to init to finish and the GPU to wake */
    gos_dvfs_trace tr = {0};
    double warm = 1.5 * (c->ub_ns > 0 ? c->ub_ns : window_ns / 4) + c->wakeup_ns;
    if ((rc = warm_kernel(c, warm, init, NULL)))
        return rc;
    /* a switch back to init slower than the upper bound (a pair outside the
     * few that sized it): keep the GPU busy until NVML shows init (the
     * measured iterations before t_s are checked against init as well) */
    for (int w = 0; w < 40; w++) {
        gos_dvfs_status st;
        if (gos_dvfs_read_status(c->d, &st) || !st.has_clock || abs(st.sm_clock_mhz - init) <= NVML_TOL_MHZ)
            break;
        if ((rc = warm_kernel(c, fmax(c->ub_ns, 1e7), init, NULL)))
            return rc;
    }
    double t_init = iter_ns(c, init), t_tgt = iter_ns(c, target);
    int iters = cfg->delay_iters + iters_for(c, window_ns, t_init < t_tgt ? init : target) + cfg->ident_iters;
    gos_dvfs_workload w = {.iters = iters, .work = c->work, .n_record = c->n_sms, .record_sms = c->sms};
    if ((rc = gos_dvfs_workload_start(c->d, &w)))
        return rc;
    gos_dvfs_host_sleep(c->d, (int64_t)(cfg->delay_iters * t_init) + 100000);
    m->host_request = gos_dvfs_host_now(c->d);
    m->t_s = m->host_request + sync.offset_ns;
    int rc_set = set_clock(c, target);
    rc = gos_dvfs_workload_wait(c->d, &tr);
    if (rc_set || rc) {
        gos_dvfs_trace_free(&tr);
        return rc_set ? rc_set : rc;
    }
    gos_dvfs_status st;
    if (gos_dvfs_read_status(c->d, &st) == GOS_OK && st.has_clock)
        m->nvml_mhz = st.sm_clock_mhz;
    gos_dvfs_ref ri, rt;
    gos_dvfs_ref_of(c->res->calib, cfg->n_freqs, ii, &ri);
    gos_dvfs_ref_of(c->res->calib, cfg->n_freqs, ti, &rt);
    gos_dvfs_evaluate(&tr, m->t_s, &ri, &rt, &m->ev);
    /* NVML must agree too (the clock is never trusted from a return code) */
    if (m->ev.status == GOS_DVFS_OK && m->nvml_mhz && abs(m->nvml_mhz - target) > NVML_TOL_MHZ)
        m->ev.status = GOS_DVFS_REJECTED;
    if (save_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.csv", save_dir, k);
        rc = gos_dvfs_trace_write_csv(&tr, path);
        if (!rc) {
            json_t *o = json_object();
            json_object_set_new(o, "t_request_ns", json_integer(m->t_s));
            json_object_set_new(o, "host_request_ns", json_integer(m->host_request));
            json_object_set_new(o, "sync_uncertainty_ns", json_real(m->sync_unc));
            json_object_set_new(o, "nvml_mhz", json_integer(m->nvml_mhz));
            json_object_set_new(o, "status", json_string(gos_dvfs_status_name(m->ev.status)));
            if (m->ev.status == GOS_DVFS_OK)
                json_object_set_new(o, "latency_ms", json_real(m->ev.latency_ns / 1e6));
            snprintf(path, sizeof path, "%s/%d.json", save_dir, k);
            rc = gos_json_save_atomic(o, path);
            json_decref(o);
        }
    }
    gos_dvfs_trace_free(&tr);
    return rc ? rc : interrupted(c);
}

/* Step 3: upper bound of the switching latency from a few pairs. */
static int upper_bound(camp *c, const char *valid)
{
    const gos_dvfs_config *cfg = c->cfg;
    int n = cfg->n_freqs, hi = 0, lo = 0;
    for (int i = 1; i < n; i++) {
        if (cfg->freqs[i] > cfg->freqs[hi])
            hi = i;
        if (cfg->freqs[i] < cfg->freqs[lo])
            lo = i;
    }
    int mid = -1; /* the frequency closest to the middle */
    double target_mid = 0.5 * (cfg->freqs[hi] + cfg->freqs[lo]);
    for (int i = 0; i < n; i++)
        if (i != hi && i != lo && (mid < 0 || fabs(cfg->freqs[i] - target_mid) < fabs(cfg->freqs[mid] - target_mid)))
            mid = i;
    int cand[4][2] = {{hi, lo}, {lo, hi}, {mid, hi}, {hi, mid}}, pairs[3][2], np = 0;
    for (int k = 0; k < 4 && np < 3; k++)
        if (cand[k][0] >= 0 && cand[k][1] >= 0 && valid[cand[k][0] * n + cand[k][1]]) {
            pairs[np][0] = cand[k][0];
            pairs[np][1] = cand[k][1];
            np++;
        }
    if (np == 0) /* any valid pair */
        for (int i = 0; i < n && !np; i++)
            for (int j = 0; j < n && !np; j++)
                if (valid[i * n + j]) {
                    pairs[0][0] = i;
                    pairs[0][1] = j;
                    np = 1;
                }
    if (np == 0)
        return gos_fail(GOS_EAMBIGUOUS, "no frequency pair is distinguishable in calibration");
    double window = PROVISIONAL_WINDOW_NS;
    c->ub_ns = 0;
    /* each pair's latency is the median of its captured measurements, so that
     * one outlier (driver, CPU noise: paper 000 section V-C) does not inflate
     * the window tenfold; the bound is the longest of the pairs */
    for (int round = 0; round < 2; round++) {
        double best = 0;
        for (int p = 0; p < np; p++) {
            double got[UB_MEASUREMENTS];
            int ng = 0;
            for (int r = 0; r < UB_MEASUREMENTS; r++) {
                measurement m;
                int rc = measure_once(c, pairs[p][0], pairs[p][1], window, NULL, 0, &m);
                if (rc)
                    return rc;
                if (m.ev.status == GOS_DVFS_OK)
                    got[ng++] = (double)m.ev.latency_ns;
                if (m.ev.status == GOS_DVFS_OK)
                    logf_(c, "  upper bound: %d -> %d MHz: %.3f ms\n", cfg->freqs[pairs[p][0]],
                          cfg->freqs[pairs[p][1]], m.ev.latency_ns / 1e6);
                else
                    logf_(c, "  upper bound: %d -> %d MHz: %s\n", cfg->freqs[pairs[p][0]],
                          cfg->freqs[pairs[p][1]], gos_dvfs_status_name(m.ev.status));
            }
            if (ng > 0) {
                gos_sort_doubles(got, ng);
                double med = gos_quantile_sorted(got, ng, 0.5);
                best = fmax(best, med);
            }
        }
        if (best > 0) {
            c->ub_ns = best;
            return GOS_OK;
        }
        window *= 10; /* paper: "repeated with a ten-times longer workload" */
    }
    return gos_fail(GOS_ETIMEDOUT, "no switch was captured within %.0f s: the clock does not change "
                                   "(see gpuos dvfs probe)", window / 10 / 1e9);
}

static int cmp_int_desc(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

/* Phases 2-3 for one pair with the RSE stop and throttle checks. */
static int measure_pair(camp *c, int ii, int ti, gos_dvfs_pair_result *pr)
{
    const gos_dvfs_config *cfg = c->cfg;
    char dir[4096], *save = NULL;
    int rc;
    if (cfg->out) {
        snprintf(dir, sizeof dir, "%s/pairs/%d-%d", cfg->out, pr->init_mhz, pr->target_mhz);
        if ((rc = gos_dvfs_mkdirs(dir)))
            return rc;
        save = dir;
    }
    size_t cap = (size_t)cfg->max_n + THERMAL_DROP + 1;
    pr->lat_ms = malloc(cap * sizeof *pr->lat_ms);
    pr->measurement = malloc(cap * sizeof *pr->measurement);
    if (!pr->lat_ms || !pr->measurement)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int fails = 0, last_status = 0, k = 0, max_attempts = 3 * cfg->max_n + 50, not_captured = 0;
    double window = c->window_ns;
    int recent[THERMAL_DROP]; /* measurement numbers of the newest attempts */
    int n_recent = 0;
    while ((int)pr->n < cfg->max_n && k < max_attempts) {
        measurement m;
        if ((rc = measure_once(c, ii, ti, window, save, k, &m)))
            return rc;
        pr->n_attempts++;
        c->res->n_attempts++;
        recent[n_recent++ % THERMAL_DROP] = k;
        if (m.ev.status == GOS_DVFS_OK) {
            pr->lat_ms[pr->n] = m.ev.latency_ns / 1e6;
            pr->measurement[pr->n] = k;
            pr->n++;
            fails = 0;
        } else {
            fails++;
            last_status = m.ev.status;
        }
        /* paper 000 section V: a switch the window cannot capture calls for a
         * ten times longer workload (once per pair) */
        not_captured = m.ev.status == GOS_DVFS_NOT_CAPTURED ? not_captured + 1 : 0;
        if (not_captured == 5 && window == c->window_ns) {
            window *= 10;
            logf_(c, "  %d -> %d MHz: 5 switches not captured in %.0f ms: window x10\n", pr->init_mhz,
                  pr->target_mhz, c->window_ns / 1e6);
        }
        k++;
        if (fails >= MAX_FAILS_IN_ROW) {
            snprintf(pr->skipped, sizeof pr->skipped, "%d attempts in a row failed: %s", fails,
                     gos_dvfs_status_name(last_status));
            break;
        }
        if (pr->n_attempts % cfg->throttle_every == 0) {
            gos_dvfs_status st;
            if (gos_dvfs_read_status(c->d, &st) == GOS_OK && st.has_reasons) {
                if (st.reasons & GOS_THR_POWER) {
                    c->res->power_events++;
                    snprintf(pr->skipped, sizeof pr->skipped, "power throttling (reasons 0x%llx)",
                             (unsigned long long)st.reasons);
                    logf_(c, "  %d -> %d MHz: power throttling (reasons 0x%llx): pair skipped\n",
                          pr->init_mhz, pr->target_mhz, (unsigned long long)st.reasons);
                    break;
                }
                if (st.reasons & GOS_THR_THERMAL) {
                    /* drop the newest measurements, let the GPU cool down */
                    c->res->thermal_events++;
                    int nd = n_recent < THERMAL_DROP ? n_recent : THERMAL_DROP, dropped = 0;
                    for (int j = 0; j < nd; j++) {
                        int mk = recent[j];
                        for (size_t q = 0; q < pr->n; q++)
                            if (pr->measurement[q] == mk) {
                                memmove(pr->lat_ms + q, pr->lat_ms + q + 1, (pr->n - q - 1) * sizeof *pr->lat_ms);
                                memmove(pr->measurement + q, pr->measurement + q + 1,
                                        (pr->n - q - 1) * sizeof *pr->measurement);
                                pr->n--;
                                dropped++;
                                break;
                            }
                        if (save) {
                            char p[4200];
                            snprintf(p, sizeof p, "%s/%d.csv", save, mk);
                            unlink(p);
                            snprintf(p, sizeof p, "%s/%d.json", save, mk);
                            unlink(p);
                        }
                    }
                    pr->n_dropped += dropped;
                    n_recent = 0;
                    logf_(c, "  %d -> %d MHz: thermal throttling (reasons 0x%llx): dropped %d, waiting 10 s\n",
                          pr->init_mhz, pr->target_mhz, (unsigned long long)st.reasons, dropped);
                    gos_dvfs_host_sleep(c->d, THERMAL_WAIT_NS);
                    if ((rc = interrupted(c)))
                        return rc;
                }
            }
        }
        /* the stop criterion: RSE of what the analysis will keep (outliers are
         * rare by definition, but one 100 ms outlier among 25 values of 20 ms
         * would otherwise keep a pair running for hundreds of passes) */
        if ((int)pr->n >= cfg->min_n && pr->n % cfg->check_every == 0 && m.ev.status == GOS_DVFS_OK) {
            int *lab = malloc(pr->n * sizeof *lab);
            if (!lab)
                return gos_fail(GOS_ENOMEM, "out of memory");
            gos_dvfs_pair_summary s = {.init_mhz = pr->init_mhz, .target_mhz = pr->target_mhz};
            rc = gos_dvfs_filter(pr->lat_ms, pr->n, lab, &s);
            free(lab);
            if (rc)
                return rc;
            if ((cfg->rse_raw ? s.rse : s.rse_kept) < cfg->rse)
                break;
        }
    }
    return GOS_OK;
}

static int campaign(camp *c)
{
    const gos_dvfs_config *cfg = c->cfg;
    gos_dvfs_campaign *res = c->res;
    gos_device *d = c->d;
    int rc;
    int64_t t0 = gos_dvfs_host_now(d);
    /* the clock under load (an idle GPU reports its idle clock) */
    c->work = 1024;
    if ((rc = warm_kernel(c, 0, -1, NULL)))
        return rc;
    gos_dvfs_status st;
    int cur = d->info.sm_clock_mhz;
    if (gos_dvfs_read_status(d, &st) == GOS_OK && st.has_clock)
        cur = st.sm_clock_mhz;
    if ((rc = gos_dvfs_timesync(d, SYNC_EXCHANGES, &res->sync)))
        return rc;
    res->sync_unc_max_ns = res->sync.uncertainty_ns;
    logf_(c, "%scampaign on %s: %d frequencies, %d SMs recorded, timer sync +-%.0f ns\n",
          gos_dev_label(d), d->info.name, cfg->n_freqs, c->n_sms, res->sync.uncertainty_ns);
    /* 1. work sizing at the current clock */
    gos_dvfs_iterstats at;
    c->work = 64;
    if ((rc = gos_dvfs_size_work(d, c->sms, c->n_sms, cfg->freqs, cfg->n_freqs, cur, 3.0, 2000,
                                 &c->work, &at)))
        return rc;
    logf_(c, "  work sizing: %d FMAs per iteration, %.1f +- %.1f ns at %d MHz\n", c->work, at.mean_ns,
          at.sd_ns, cur);
    /* 2. phase 1 */
    if ((rc = calibrate(c)))
        return rc;
    int n = cfg->n_freqs;
    char *valid = calloc((size_t)n * n, 1);
    if (!valid)
        return gos_fail(GOS_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            valid[i * n + j] = i != j && res->calib[i].verified && res->calib[j].verified &&
                               gos_dvfs_pair_valid(&res->calib[i], &res->calib[j], NULL);
    /* 3. upper bound and window; grow the work if the kernel gets too long */
    if ((rc = upper_bound(c, valid)))
        goto out;
    c->window_ns = 10 * c->ub_ns;
    double tmin = INFINITY;
    for (int i = 0; i < n; i++)
        tmin = fmin(tmin, res->calib[i].mean_ns);
    double room = cfg->max_iters - cfg->delay_iters - cfg->ident_iters;
    double need = ceil(c->window_ns / tmin);
    if (need > room) {
        int factor = (int)ceil(need / room);
        c->work *= factor;
        logf_(c, "  window %.1f ms needs %.0f iterations > %.0f: work x%d = %d FMAs, recalibrating\n",
              c->window_ns / 1e6, need, room, factor, c->work);
        if ((rc = calibrate(c)))
            goto out;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                valid[i * n + j] = i != j && res->calib[i].verified && res->calib[j].verified &&
                                   gos_dvfs_pair_valid(&res->calib[i], &res->calib[j], NULL);
    }
    res->work = c->work;
    res->upper_bound_ms = c->ub_ns / 1e6;
    res->window_ms = c->window_ns / 1e6;
    logf_(c, "  switching latency upper bound %.2f ms: window %.1f ms\n", res->upper_bound_ms, res->window_ms);
    if ((rc = write_run_json(c, 0)))
        goto out;
    /* 4. phases 2 and 3 per pair, highest initial frequency first */
    int order[GOS_DVFS_MAX_FREQS];
    memcpy(order, cfg->freqs, n * sizeof *order);
    qsort(order, n, sizeof *order, cmp_int_desc);
    res->pairs = calloc((size_t)n * (n - 1) + 1, sizeof *res->pairs);
    if (!res->pairs) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    int n_valid = 0, k = 0;
    for (int i = 0; i < n * n; i++)
        n_valid += valid[i]; /* never i == j */
    uint64_t t_pairs = gos_dvfs_host_now(d);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            int ii = freq_index(c, order[a]), ti = freq_index(c, order[b]);
            if (valid[ii * n + ti] && cfg->progress) {
                double spent = (double)(gos_dvfs_host_now(d) - t_pairs) / 1e9;
                cfg->progress(cfg->progress_arg, k + 1, n_valid, k ? spent / k * (n_valid - k) : -1);
            }
            k += valid[ii * n + ti];
            gos_dvfs_pair_result *pr = &res->pairs[res->n_pairs++];
            pr->init_mhz = order[a];
            pr->target_mhz = order[b];
            pr->valid = valid[ii * n + ti];
            if (!pr->valid) {
                snprintf(pr->skipped, sizeof pr->skipped, "not distinguishable in calibration");
                continue;
            }
            if ((rc = measure_pair(c, ii, ti, pr)))
                goto out;
            int *labels = malloc((pr->n + 1) * sizeof *labels);
            if (!labels) {
                rc = gos_fail(GOS_ENOMEM, "out of memory");
                goto out;
            }
            pr->sum.init_mhz = pr->init_mhz;
            pr->sum.target_mhz = pr->target_mhz;
            rc = gos_dvfs_filter(pr->lat_ms, pr->n, labels, &pr->sum);
            free(labels);
            if (rc)
                goto out;
            res->n_measurements += pr->n;
            logf_(c, "  %4d -> %4d MHz: %3zu measurements (%d attempts), mean %.3f ms, RSE %.1f %% (%.1f %% raw)%s%s\n",
                  pr->init_mhz, pr->target_mhz, pr->n, pr->n_attempts, pr->sum.mean_ms,
                  100 * pr->sum.rse_kept, 100 * pr->sum.rse, pr->skipped[0] ? ", skipped: " : "", pr->skipped);
        }
out:
    free(valid);
    res->total_s = (double)(gos_dvfs_host_now(d) - t0) / 1e9;
    return rc;
}
/* The supported SM clocks as text, highest first, a run of three or more in equal
 * steps written "1980-1605 every 15" (a real GPU has over a hundred). */
static void clocks_text(const gos_device_info *I, char *buf, size_t len)
{
    const int *c = I->supported_sm_clocks_mhz;
    int n = I->n_supported_sm_clocks;
    size_t pos = 0;
    buf[0] = 0;
    for (int i = 0; i < n && pos < len;) {
        int j = i + 1;
        while (j + 1 < n && j - i >= 1 && c[j] - c[j + 1] == c[i] - c[i + 1])
            j++;
        if (j - i >= 2 && c[i] - c[i + 1] > 0) /* c[i..j]: three or more in equal steps */
            pos += (size_t)snprintf(buf + pos, len - pos, "%s%d-%d every %d", i ? ", " : "", c[i], c[j], c[i] - c[i + 1]);
        else
            j = i, pos += (size_t)snprintf(buf + pos, len - pos, "%s%d", i ? ", " : "", c[i]);
        i = j + 1;
    }
}


int gos_dvfs_campaign_run(gos_device *d, const gos_dvfs_config *cfg, gos_dvfs_campaign *res)
{
    memset(res, 0, sizeof *res);
    int rc0 = gos_dvfs_clock_permission(d, cfg->allow_clock_changes);
    if (rc0 || (rc0 = gos_dvfs_check(d)))
        return rc0;
    if (cfg->n_freqs < 2 || cfg->n_freqs > GOS_DVFS_MAX_FREQS)
        return gos_fail(GOS_EINVAL, "a campaign needs 2..%d frequencies", GOS_DVFS_MAX_FREQS);
    for (int i = 0; i < cfg->n_freqs; i++) {
        for (int j = 0; j < i; j++)
            if (cfg->freqs[i] == cfg->freqs[j])
                return gos_fail(GOS_EINVAL, "frequency %d MHz listed twice", cfg->freqs[i]);
        const gos_device_info *I = &d->info;
        int ok = I->n_supported_sm_clocks == 0;
        for (int k = 0; k < I->n_supported_sm_clocks && !ok; k++)
            ok = I->supported_sm_clocks_mhz[k] == cfg->freqs[i];
        if (!ok) {
            char list[400];
            clocks_text(I, list, sizeof list);
            return gos_fail(GOS_EINVAL, "%d MHz is not a supported SM clock of %s; its %d clocks: %s MHz",
                            cfg->freqs[i], I->name, I->n_supported_sm_clocks, list);
        }
    }
    if (cfg->max_iters < cfg->delay_iters + cfg->ident_iters + 100)
        return gos_fail(GOS_EINVAL, "max iterations %d leave no room for the switching window",
                        cfg->max_iters);
    if (cfg->min_n < 2 || cfg->max_n < cfg->min_n || cfg->check_every < 1 || cfg->throttle_every < 1)
        return gos_fail(GOS_EINVAL, "need 2 <= min <= max measurements");
    camp *c = calloc(1, sizeof *c);
    if (!c)
        return gos_fail(GOS_ENOMEM, "out of memory");
    c->d = d;
    c->cfg = cfg;
    c->res = res;
    c->n_sms = gos_dvfs_pick_sms(d->info.sm_count, cfg->n_record, c->sms);
    res->n_record = c->n_sms;
    if (gethostname(c->host, sizeof c->host - 1))
        snprintf(c->host, sizeof c->host, "unknown");
    int rc = GOS_OK;
    if (cfg->out && (rc = gos_dvfs_mkdirs(cfg->out)))
        goto done;
    if ((rc = gos_dvfs_guard_begin(d)))
        goto done;
    rc = campaign(c);
    /* every path out resets the clock and checks that it took */
    char saved[512];
    snprintf(saved, sizeof saved, "%s", gos_last_error());
    int rc_reset = gos_dvfs_guard_end(d);
    if (rc) {
        gos_fail(rc, "%s", saved);
    } else if (rc_reset) {
        rc = rc_reset;
    } else {
        rc = write_run_json(c, 1);
    }
done:
    for (int i = 0; i < GOS_DVFS_MAX_FREQS; i++)
        gos_dvfs_trace_free(&c->last[i]);
    free(c);
    return rc;
}

void gos_dvfs_campaign_free(gos_dvfs_campaign *res)
{
    for (int p = 0; p < res->n_pairs; p++) {
        free(res->pairs[p].lat_ms);
        free(res->pairs[p].measurement);
    }
    free(res->pairs);
    memset(res, 0, sizeof *res);
}
