/* SPDX-License-Identifier: Apache-2.0 */
/* dvfs.h: pillar 1c, SM frequency switching latency (paper 000, section V).
 *
 * The pieces, one file each:
 *   workload.c   running the per-SM timing workload, iteration statistics,
 *                sizing the work per iteration so any two frequencies separate
 *   timesync.c   CPU-GPU timer synchronisation with a measured uncertainty
 *   calib.c      phase 1: per-frequency mean/sd from the last kernel, wake-up,
 *                pair validity (Welch confidence interval of the difference)
 *   evaluate.c   phase 3 for one measurement (per SM: first iteration within
 *                target mean +- 2 sd gives t_e, the rest must match the target)
 *   filter.c     DBSCAN outlier filtering (algorithm 3) and pair summaries
 *   clockguard.c clocks restored on every exit path (normal, error, signals)
 *   campaign.c   phase 2: the switching runs, upper-bound estimate, RSE stop,
 *                throttle checks
 *   trace.c      the trace directory contract (docs/contracts.md)
 *   analyze.c    offline phases 1 and 3 from a trace directory
 *   report_html.c the HTML report (heatmaps, distributions, table II; dvfs_report.h:
 *                its inputs, the scatter and fleet figures)
 *   probe.c      everything except the switch, at the current clock
 * Everything here talks to the GPU only through device/dvfs_ops.h. */
#ifndef GOS_DVFS_H
#define GOS_DVFS_H

#include "device/dvfs_ops.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#define GOS_DVFS_MAX_FREQS 128

/* ---- workload.c ---- */

/* Per-iteration durations (end - start) of a trace, optionally only the
 * iterations starting at or after `from_ns` (INT64_MIN: all). Pooled over SMs. */
typedef struct {
    size_t n;
    double mean_ns, sd_ns;
} gos_dvfs_iterstats;

void gos_dvfs_iterstats_of(const gos_dvfs_trace *tr, gos_dvfs_iterstats *out);

struct gos_moments_s;
/* Moments of the durations end[i] - start[i], i in [a, b), into *m (a
 * gos_moments of stats.h), by shifted sums: no division per sample. */
void gos_dvfs_duration_moments(const int64_t *start, const int64_t *end, size_t a, size_t b, void *m);

/* Runs one workload synchronously. */
int gos_dvfs_run_workload(gos_device *d, const gos_dvfs_workload *w, gos_dvfs_trace *tr);

/* Picks `n` SM ids spread evenly over 0..sm_count-1 (n <= 0 or >= sm_count: all). */
int gos_dvfs_pick_sms(int sm_count, int n, int *sms);

/* Number of iterations per sample needed for a two-sample t-test (95 %) to
 * separate means that differ by rel (relative) given mean and sd of one
 * iteration: the smallest n with 2 * t * sd * sqrt(2 / n) < rel * mean. */
double gos_dvfs_iters_to_separate(double mean_ns, double sd_ns, double rel);

/* Work sizing (paper 000 section V): doubles `work` from *work until, at the
 * current clock cur_mhz, the closest pair of freqs[] is predicted to separate by
 * at least `sep` standard deviations on each side (windows mean +- 2 sd apart:
 * sep 3), measuring `iters` iterations each time. Fills *work and the stats at
 * the chosen size. */
int gos_dvfs_size_work(gos_device *d, const int *sms, int n_sms, const int *freqs, int n_freqs,
                       int cur_mhz, double sep, int iters, int *work, gos_dvfs_iterstats *at);

/* ---- timesync.c ---- */

typedef struct {
    int64_t offset_ns;      /* gpu_time = host_time + offset_ns */
    double uncertainty_ns;  /* half the best round trip + half the timer step */
    double rtt_min_ns, rtt_median_ns;
    double spread_ns;       /* sd of the offsets of the best half of the exchanges */
    int n;
} gos_dvfs_sync;

int gos_dvfs_timesync(gos_device *d, int n, gos_dvfs_sync *out);

/* ---- calib.c ---- */

typedef struct {
    int mhz;
    double mean_ns, sd_ns; /* pooled over the recorded SMs, last kernel */
    size_t n;
    double wakeup_ns;      /* first kernel: time until iterations settle, 0 if at once */
    int nvml_mhz;          /* NVML's SM clock after the kernels, 0 unknown */
    int verified;          /* NVML and measured iteration time agree with mhz */
    char note[160];        /* why not verified */
} gos_dvfs_calib;

/* Statistics of one calibration trace (also used by analyze). */
void gos_dvfs_calib_from_trace(const gos_dvfs_trace *tr, int mhz, gos_dvfs_calib *c);

/* Wake-up: the time from the first iteration's start until the first of 50
 * consecutive iterations within mean +- 2 sd of the reference (pooled, max over SMs). */
double gos_dvfs_wakeup_ns(const gos_dvfs_trace *first, double mean_ns, double sd_ns);

/* Phase 1 validity of a pair: Welch 95 % confidence interval of the difference of
 * the means excludes zero. *sep receives |diff| / (sd_i + sd_t) (windows
 * mean +- 2 sd are disjoint when sep > 2). */
int gos_dvfs_pair_valid(const gos_dvfs_calib *init, const gos_dvfs_calib *target, double *sep);

/* ---- evaluate.c ---- */

typedef struct {
    double mean_ns, sd_ns; /* calibration of the target (and of init, for the check) */
    size_t n;
    double tol_ns;         /* mean-difference tolerance of the null-hypothesis test */
} gos_dvfs_ref;

/* Reference of frequency i among calibrations c[0..n): tol = 0.25 x the distance
 * of its mean to the nearest mean of a frequency distinguishable from it
 * (1 % of the mean when there is none). */
void gos_dvfs_ref_of(const gos_dvfs_calib *c, int n, int i, gos_dvfs_ref *out);

enum {
    GOS_DVFS_OK = 0,
    GOS_DVFS_NOT_CAPTURED = 1, /* no iteration after t_s within target mean +- 2 sd */
    GOS_DVFS_REJECTED = 2,     /* iterations after t_e do not match the target */
    GOS_DVFS_NO_INIT = 3,      /* iterations before t_s do not match the initial clock */
};

typedef struct {
    int status;            /* GOS_DVFS_* */
    int64_t latency_ns;    /* max over viable SMs of t_e - t_s */
    int64_t t_e_ns;
    int n_viable, n_sms;
    int latency_sm;        /* SM that gave the maximum */
} gos_dvfs_eval;

/* Paper 000 section V-B phase 3 for one measurement: t_s in GPU timebase. */
int gos_dvfs_evaluate(const gos_dvfs_trace *tr, int64_t t_s, const gos_dvfs_ref *init,
                      const gos_dvfs_ref *target, gos_dvfs_eval *out);
const char *gos_dvfs_status_name(int status);

/* ---- filter.c ---- */

typedef struct {
    int init_mhz, target_mhz;
    size_t n_total;          /* viable measurements */
    size_t n, n_outliers;    /* kept after filtering, and noise */
    double min_ms, mean_ms, max_ms, sd_ms, ci_lo_ms, ci_hi_ms, median_ms;
    double rse;              /* of the raw latencies */
    double rse_kept;         /* of the latencies kept by the filter (the stop criterion) */
    int n_clusters;
    int has_silhouette;
    double silhouette;
    int min_samples;
    double eps_ms;
} gos_dvfs_pair_summary;

/* Filters lat_ms[0..n) (algorithm 3, mult 0.15, minPts floor 3); labels[] out
 * (-1 outlier). */
int gos_dvfs_filter(const double *lat_ms, size_t n, int *labels, gos_dvfs_pair_summary *s);

/* ---- clockguard.c ---- */

/* Arms the guard: from now on, until gos_dvfs_guard_end, the device's clocks are
 * reset on normal return (guard_end), at exit() and after SIGINT/SIGTERM (the
 * first signal asks the campaign to stop; a second one resets and exits). */
int gos_dvfs_guard_begin(gos_device *d);
/* Non-zero (the signal number) once SIGINT or SIGTERM arrived. */
int gos_dvfs_guard_interrupted(void);
/* Resets the clocks (if any was set) and disarms; returns reset_clock's code. */
int gos_dvfs_guard_end(gos_device *d);
/* Marks that a clock was set (so the guard must reset it). */
void gos_dvfs_guard_touched(void);

/* ---- trace.c ---- */

#define GOS_DVFS_RUN_SCHEMA "gpuos.dvfs-run/1"

int gos_dvfs_trace_write_csv(const gos_dvfs_trace *tr, const char *path);
/* Strict reader: header "sm,iter,start_ns,end_ns", four integers per row,
 * end >= start, no duplicate (sm, iter); one-line error naming file and line. */
int gos_dvfs_trace_read_csv(const char *path, gos_dvfs_trace *tr);
int gos_dvfs_mkdirs(const char *path);

/* ---- campaign.c ---- */

typedef struct {
    int n_freqs;
    int freqs[GOS_DVFS_MAX_FREQS];
    double rse;              /* stop when relative standard error < rse (0.05) */
    int rse_raw;             /* 1: RSE of all viable latencies (the paper); 0: of those
                              * the outlier filter keeps (default) */
    int min_n, max_n;        /* measurements per pair (25, 500) */
    int check_every;         /* RSE check period (25) */
    int throttle_every;      /* throttle check period (5) */
    int n_record;            /* SMs recorded (0: all) */
    int max_iters;           /* iterations per SM per kernel cap (10000) */
    int ident_iters;         /* target identification iterations (500) */
    int delay_iters;         /* delay period iterations (300) */
    int calib_kernels;       /* kernels per frequency in phase 1 (3) */
    int allow_clock_changes; /* required on a real GPU */
    const char *out;         /* trace directory (NULL: none) */
    const char *command;     /* command line, for provenance */
    FILE *log;               /* progress lines, or NULL */
    /* Called before each measured pair (may be NULL): pair k of n (1-based,
     * the pairs calibration could tell apart) and an estimate of the campaign
     * time left, the mean time of the pairs done times the pairs left (< 0
     * before the first pair is done). */
    void (*progress)(void *arg, int k, int n, double left_s);
    void *progress_arg;
} gos_dvfs_config;

void gos_dvfs_config_default(gos_dvfs_config *c);

typedef struct {
    int init_mhz, target_mhz;
    int valid;               /* phase 1 */
    char skipped[96];        /* why not (fully) measured, "" if measured */
    int n_attempts, n_dropped;
    size_t n;
    double *lat_ms;          /* n viable latencies (owned) */
    int *measurement;        /* their measurement numbers */
    gos_dvfs_pair_summary sum;
} gos_dvfs_pair_result;

typedef struct {
    int n_freqs;
    gos_dvfs_calib calib[GOS_DVFS_MAX_FREQS];
    int work, n_record;
    double upper_bound_ms, window_ms;
    gos_dvfs_sync sync;      /* the first synchronisation */
    double sync_unc_max_ns;
    int n_pairs;
    gos_dvfs_pair_result *pairs;
    size_t n_measurements, n_attempts;
    double total_s;          /* campaign time on the device's host clock */
    int thermal_events, power_events;
    int interrupted;
} gos_dvfs_campaign;

int gos_dvfs_campaign_run(gos_device *d, const gos_dvfs_config *cfg, gos_dvfs_campaign *res);

/* The "device" object of run.json and of the dvfs probe's result. */
json_t *gos_dvfs_device_json(const gos_device_info *I);
void gos_dvfs_campaign_free(gos_dvfs_campaign *res);

/* ---- analyze.c ---- */

/* Offline phases 1 and 3 + filtering of RUN; writes the per-pair CSV files and
 * summary.json into out_dir. Prints a table to `log` if not NULL. */
int gos_dvfs_analyze(const char *run_dir, const char *out_dir, FILE *log);

/* ---- report_html.c ---- */

/* One page from analysis (summary.json) or run (run.json) directories; with
 * several, one GPU each (told apart by device.uuid), the fleet view too. */
int gos_dvfs_report(const char *const *dirs, int n_dirs, const char *html_path);

/* ---- probe.c ---- */

/* Everything except the switch at the current clock; writes a JSON object
 * (NULL path: none) and a human summary to log. Never changes a clock. */
int gos_dvfs_probe(gos_device *d, const gos_dvfs_config *cfg, const char *json_path, FILE *log);

#endif
