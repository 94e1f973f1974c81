/* SPDX-License-Identifier: Apache-2.0 */
/* probe.c: `gpuos dvfs probe`, every step of paper 000's methodology that does
 * not change a clock, at whatever clock the GPU runs (on lent machines clocks
 * must never be changed, docs/contracts.md "Clocks on lent machines"):
 *   - the timing workload on every SM at several work sizes: per-SM iteration
 *     time (mean, sd, spread over SMs) and how many iterations a t-test needs
 *     to separate two clocks one 15 MHz step apart;
 *   - the work size the campaign would pick for the closest pair of --freqs
 *     (default: the current clock and one 15 MHz step below);
 *   - phase 1 calibration at the current clock (3 kernels: wake-up from the
 *     first, mean/sd from the last, checked against NVML);
 *   - CPU-GPU timer synchronisation: uncertainty, round trips, drift;
 *   - clocks-event (throttle) reasons, temperature and power, idle and loaded.
 * Writes a JSON object with provenance (GPUOS_COMMIT from the environment). */
#include "dvfs/dvfs.h"

#include "chip/chip.h"
#include "common/jsonio.h"
#include "common/provenance.h"
#include "stats/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static json_t *status_json(const gos_dvfs_status *s)
{
    json_t *o = json_object();
    if (s->has_clock)
        json_object_set_new(o, "sm_clock_mhz", json_integer(s->sm_clock_mhz));
    if (s->has_reasons) {
        char hex[32];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)s->reasons);
        json_object_set_new(o, "clocks_event_reasons", json_string(hex));
        json_object_set_new(o, "thermal", json_boolean(s->reasons & GOS_THR_THERMAL));
        json_object_set_new(o, "power", json_boolean(s->reasons & GOS_THR_POWER));
        json_object_set_new(o, "idle", json_boolean(s->reasons & GOS_THR_IDLE));
    }
    if (s->has_temp)
        json_object_set_new(o, "temp_c", json_integer(s->temp_c));
    if (s->has_power)
        json_object_set_new(o, "power_w", json_real(s->power_w));
    return o;
}

static void log_status(FILE *log, const char *when, const gos_dvfs_status *s)
{
    if (!log)
        return;
    fprintf(log, "  %-7s SM clock %s%d MHz, clocks-event reasons ", when, s->has_clock ? "" : "? ",
            s->sm_clock_mhz);
    if (s->has_reasons)
        fprintf(log, "0x%llx%s%s%s", (unsigned long long)s->reasons,
                s->reasons & GOS_THR_IDLE ? " (idle)" : "", s->reasons & GOS_THR_THERMAL ? " (thermal)" : "",
                s->reasons & GOS_THR_POWER ? " (power)" : "");
    else
        fprintf(log, "unknown");
    if (s->has_temp)
        fprintf(log, ", %d C", s->temp_c);
    if (s->has_power)
        fprintf(log, ", %.0f W", s->power_w);
    fprintf(log, "\n");
}

/* Per-SM means of a trace: mean of means, min, max. */
static void per_sm(const gos_dvfs_trace *tr, double *mn, double *mx, double *sd_of_means)
{
    double m[GOS_MAX_SMS];
    *mn = INFINITY;
    *mx = -INFINITY;
    for (int k = 0; k < tr->n_sms; k++) {
        gos_moments s;
        gos_moments_init(&s);
        for (size_t i = tr->off[k]; i < tr->off[k + 1]; i++)
            gos_moments_add(&s, (double)(tr->end_ns[i] - tr->start_ns[i]));
        m[k] = s.mean;
        *mn = fmin(*mn, s.mean);
        *mx = fmax(*mx, s.mean);
    }
    *sd_of_means = tr->n_sms >= 2 ? gos_sd(m, tr->n_sms, 1) : 0;
}

/* Warm-up: wake the GPU from idle before anything is timed (~0.2 s). */
static int probe_warmup(gos_device *d, int *sms)
{
    gos_dvfs_workload wl = {.iters = 6000, .work = 16384, .n_record = 1, .record_sms = sms};
    gos_dvfs_trace tr = {0};
    int rc = gos_dvfs_run_workload(d, &wl, &tr);
    if (rc)
        return rc;
    gos_dvfs_trace_free(&tr);
    return GOS_OK;
}

/* The workload at several sizes, every SM recorded: root's "workload". */
static int probe_sizes(gos_device *d, int *sms, int n_sms, int cur, json_t *root, FILE *log)
{
    json_t *sizes = json_array();
    if (log)
        fprintf(log, "  workload at %d MHz (4000 iterations per SM, all %d SMs):\n"
                     "  %8s %12s %9s %9s %13s %14s\n",
                cur, n_sms, "FMAs", "iter ns", "sd ns", "SM spread", "15MHz sep/sd", "iters for 15MHz");
    for (int w = 256; w <= 65536; w *= 4) {
        gos_dvfs_workload wl = {.iters = 4000, .work = w, .n_record = n_sms, .record_sms = sms};
        gos_dvfs_trace tr = {0};
        int rc = gos_dvfs_run_workload(d, &wl, &tr);
        if (rc) {
            json_decref(sizes);
            return rc;
        }
        gos_dvfs_iterstats is;
        gos_dvfs_iterstats_of(&tr, &is);
        double mn, mx, sdm;
        per_sm(&tr, &mn, &mx, &sdm);
        gos_dvfs_trace_free(&tr);
        double rel = 15.0 / (cur - 15), delta = is.mean_ns * rel;
        double sep = delta / (2 * is.sd_ns);
        double need = gos_dvfs_iters_to_separate(is.mean_ns, is.sd_ns, rel);
        json_t *s = json_object();
        json_object_set_new(s, "work_fma", json_integer(w));
        json_object_set_new(s, "iter_mean_ns", json_real(is.mean_ns));
        json_object_set_new(s, "iter_sd_ns", json_real(is.sd_ns));
        json_object_set_new(s, "sm_mean_min_ns", json_real(mn));
        json_object_set_new(s, "sm_mean_max_ns", json_real(mx));
        json_object_set_new(s, "sm_mean_sd_ns", json_real(sdm));
        json_object_set_new(s, "step_15mhz_delta_ns", json_real(delta));
        json_object_set_new(s, "step_15mhz_sep_in_sd", json_real(sep));
        json_object_set_new(s, "iters_to_separate_15mhz", json_real(need));
        json_array_append_new(sizes, s);
        if (log)
            fprintf(log, "  %8d %12.1f %9.1f %9.1f %13.2f %14.0f\n", w, is.mean_ns, is.sd_ns, mx - mn, sep, need);
    }
    json_object_set_new(root, "workload", sizes);
    return GOS_OK;
}

/* The campaign's work sizing for the closest pair of --freqs: root's "sizing",
 * *work the FMAs per iteration. */
static int probe_sizing(gos_device *d, const gos_dvfs_config *cfg, int *sms, int n_sms, int cur, json_t *root,
                        FILE *log, int *work)
{
    int fr[GOS_DVFS_MAX_FREQS], nf = cfg->n_freqs;
    if (nf >= 2)
        memcpy(fr, cfg->freqs, nf * sizeof *fr);
    else {
        fr[0] = cur;
        fr[1] = cur - 15;
        nf = 2;
    }
    *work = 64;
    gos_dvfs_iterstats at;
    json_t *sz = json_object();
    int rc = gos_dvfs_size_work(d, sms, n_sms, fr, nf, cur, 3.0, 2000, work, &at);
    if (rc) {
        if (rc != GOS_EAMBIGUOUS) {
            json_decref(sz);
            return rc;
        }
        /* not fatal here: say so, measure the rest at the largest size tried */
        json_object_set_new(sz, "error", json_string(gos_last_error()));
        if (log)
            fprintf(log, "  sizing: %s\n", gos_last_error());
        *work = 65536;
    }
    json_t *fa = json_array();
    for (int i = 0; i < nf; i++)
        json_array_append_new(fa, json_integer(fr[i]));
    json_object_set_new(sz, "freqs_mhz", fa);
    json_object_set_new(sz, "work_fma", json_integer(*work));
    json_object_set_new(sz, "iter_mean_ns", json_real(at.mean_ns));
    json_object_set_new(sz, "iter_sd_ns", json_real(at.sd_ns));
    json_object_set_new(root, "sizing", sz);
    if (log)
        fprintf(log, "  sizing: windows mean +- 2 sd of the closest pair apart at %d FMAs per iteration "
                     "(%.1f +- %.1f ns)\n", *work, at.mean_ns, at.sd_ns);
    return GOS_OK;
}

/* Phase 1 at the current clock: root's "calibration" and "status_after". */
static int probe_calibrate(gos_device *d, int *sms, int n_sms, int work, int cur, json_t *root, FILE *log)
{
    gos_dvfs_trace first = {0}, last = {0};
    int rc;
    for (int k = 0; k < 3; k++) {
        gos_dvfs_workload wl = {.iters = 4000, .work = work, .n_record = n_sms, .record_sms = sms};
        gos_dvfs_trace_free(&last);
        if ((rc = gos_dvfs_run_workload(d, &wl, &last))) {
            gos_dvfs_trace_free(&first);
            return rc;
        }
        if (k == 0) {
            first = last;
            memset(&last, 0, sizeof last);
        }
    }
    gos_dvfs_calib cal;
    gos_dvfs_calib_from_trace(&last, cur, &cal);
    cal.wakeup_ns = gos_dvfs_wakeup_ns(&first, cal.mean_ns, cal.sd_ns);
    gos_dvfs_trace_free(&first);
    gos_dvfs_trace_free(&last);
    gos_dvfs_status st1;
    if ((rc = gos_dvfs_read_status(d, &st1)))
        return rc;
    json_t *cj = json_object();
    json_object_set_new(cj, "mhz", json_integer(cur));
    json_object_set_new(cj, "mean_ns", json_real(cal.mean_ns));
    json_object_set_new(cj, "sd_ns", json_real(cal.sd_ns));
    json_object_set_new(cj, "n", json_integer((json_int_t)cal.n));
    json_object_set_new(cj, "wakeup_ms", json_real(cal.wakeup_ns / 1e6));
    json_object_set_new(cj, "nvml_mhz_after", json_integer(st1.sm_clock_mhz));
    json_object_set_new(cj, "nvml_agrees", json_boolean(st1.has_clock && abs(st1.sm_clock_mhz - cur) <= 8));
    json_object_set_new(root, "calibration", cj);
    if (log)
        fprintf(log, "  phase 1 at %d MHz: iteration %.1f +- %.1f ns over %zu, wake-up %.2f ms, NVML after: %d MHz\n",
                cur, cal.mean_ns, cal.sd_ns, cal.n, cal.wakeup_ns / 1e6, st1.sm_clock_mhz);
    log_status(log, "loaded:", &st1);
    json_object_set_new(root, "status_after", status_json(&st1));
    return GOS_OK;
}

/* The closing timer synchronisation against the first of the 5 opening rounds
 * (sy, unc, taken at host time h0): root's "timesync" with the drift. */
static int probe_drift(gos_device *d, const gos_dvfs_sync *sy, const double *unc, int64_t h0, json_t *root,
                       FILE *log)
{
    gos_dvfs_sync end;
    int rc = gos_dvfs_timesync(d, 64, &end);
    if (rc)
        return rc;
    int64_t h1 = gos_dvfs_host_now(d);
    double drift = h1 > h0 ? (double)(end.offset_ns - sy[0].offset_ns) / ((double)(h1 - h0) / 1e9) : 0;
    json_t *ts = json_object();
    json_t *ua = json_array();
    for (int r = 0; r < 5; r++)
        json_array_append_new(ua, json_real(unc[r]));
    json_array_append_new(ua, json_real(end.uncertainty_ns));
    json_object_set_new(ts, "uncertainty_ns", ua);
    json_object_set_new(ts, "rtt_min_ns", json_real(sy[0].rtt_min_ns));
    json_object_set_new(ts, "rtt_median_ns", json_real(sy[0].rtt_median_ns));
    json_object_set_new(ts, "offset_spread_ns", json_real(sy[0].spread_ns));
    json_object_set_new(ts, "drift_ns_per_s", json_real(drift));
    json_object_set_new(ts, "exchanges", json_integer(64));
    json_object_set_new(root, "timesync", ts);
    if (log)
        fprintf(log, "  timer drift GPU vs host: %.1f ns/s over %.1f s (re-synchronised before every measurement)\n",
                drift, (double)(h1 - h0) / 1e9);
    return GOS_OK;
}

int gos_dvfs_probe(gos_device *d, const gos_dvfs_config *cfg, const char *json_path, FILE *log)
{
    int rc = gos_dvfs_check(d);
    if (rc)
        return rc;
    int sms[GOS_MAX_SMS];
    int n_sms = gos_dvfs_pick_sms(d->info.sm_count, 0, sms); /* every SM */
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("gpuos.dvfs-probe/1"));
    json_object_set_new(root, "provenance", gos_provenance(cfg->command, d->info.driver_version));
    json_object_set_new(root, "device", gos_dvfs_device_json(&d->info));
    json_object_set_new(root, "clocks_changed", json_false());
    if (log)
        fprintf(log, "%sdvfs probe on %s (%d SMs), no clock is changed\n", gos_dev_label(d), d->info.name,
                d->info.sm_count);

    gos_dvfs_status st0;
    if ((rc = gos_dvfs_read_status(d, &st0)))
        goto done;
    log_status(log, "before:", &st0);
    json_object_set_new(root, "status_before", status_json(&st0));
    int cur = st0.has_clock && st0.sm_clock_mhz > 0 ? st0.sm_clock_mhz : d->info.sm_clock_mhz;

    if ((rc = probe_warmup(d, sms)))
        goto done;

    /* timer synchronisation: 5 rounds of 64 exchanges, the first and last a
     * second apart of workload time give the drift */
    gos_dvfs_sync sy[5];
    double unc[5];
    int64_t h0 = gos_dvfs_host_now(d);
    for (int r = 0; r < 5; r++) {
        if ((rc = gos_dvfs_timesync(d, 64, &sy[r])))
            goto done;
        unc[r] = sy[r].uncertainty_ns;
    }
    if (log)
        fprintf(log, "  timer sync: uncertainty %.0f ns (best of 64 exchanges; rounds %.0f..%.0f ns), "
                     "round trip min %.0f / median %.0f ns, offset spread %.0f ns\n",
                sy[0].uncertainty_ns, fmin(fmin(unc[1], unc[2]), fmin(unc[3], unc[4])),
                fmax(fmax(unc[1], unc[2]), fmax(unc[3], unc[4])), sy[0].rtt_min_ns, sy[0].rtt_median_ns,
                sy[0].spread_ns);

    int work;
    if ((rc = probe_sizes(d, sms, n_sms, cur, root, log)) ||
        (rc = probe_sizing(d, cfg, sms, n_sms, cur, root, log, &work)) ||
        (rc = probe_calibrate(d, sms, n_sms, work, cur, root, log)) || (rc = probe_drift(d, sy, unc, h0, root, log)))
        goto done;
    if (json_path)
        rc = gos_json_save_atomic(root, json_path);
done:
    json_decref(root);
    return rc;
}
