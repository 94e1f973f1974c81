/* SPDX-License-Identifier: Apache-2.0 */
/* sched_sim.c: the fairness table of the vGPU schedulers on the discrete-event
 * simulator (src/sched/simulate.h), for docs/readme-sched.md. Virtual time, fixed
 * seed: the numbers are the same on every machine and say nothing about a real GPU.
 *
 *   build/bench/sched_sim [--markdown] [--json FILE]
 *
 * JSON (schema gpuos.sched-sim/1) goes to stdout, or to FILE; --markdown prints the
 * tables of docs/readme-sched.md instead. Rows: FIFO, Credit and BAND on the
 * "bursty-10x" workload
 * (gos_sim_bursty_config: closed-loop bursts, kernels 10x apart between vGPUs) for
 * 2, 4 and 8 vGPUs with equal and unequal shares, on the MRQ compute engine and on
 * SDQ with a copy before every kernel; the copy/compute overlap of MRQ vs SDQ; and
 * sweeps of BAND's wait and of the period (how the defaults were chosen). */
#include "common/jsonio.h"
#include "common/status.h"
#include "sched/simulate.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define WARMUP (300 * MS)
#define DURATION (3000 * MS)

static const int s2[] = {50, 50}, s2w[] = {70, 30};
static const int s4[] = {25, 25, 25, 25}, s4w[] = {40, 30, 20, 10};
static const int s8[] = {13, 13, 12, 12, 13, 13, 12, 12};
static const int s8w[] = {20, 20, 15, 15, 10, 10, 5, 5};
static const struct { int n; const int *shares; } cases[] = {
    {2, s2}, {2, s2w}, {4, s4}, {4, s4w}, {8, s8}, {8, s8w},
};
/* "band-gpu": BAND with holds not charged (gos_sched_set_band_charge_hold(s, false)),
 * shares of GPU time alone. */
static const char *policies[] = {"fifo", "credit", "band", "band-gpu"};
#define NPOL 4

static void set_policy(gos_sim_config *c, const char *label)
{
    c->band_free_hold = !strcmp(label, "band-gpu");
    c->policy = c->band_free_hold ? "band" : label;
}
#define NCASES (int)(sizeof cases / sizeof cases[0])

static json_t *darray(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real((double)(long long)(v[i] * 100 + 0.5) / 100));
    return a;
}

static json_t *iarray(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static double round2(double x) { return (double)(long long)(x * 100 + 0.5) / 100; }

/* workload 0: bursty-10x; 1: "turnaround" (1 ms vs 10 ms kernels, 400 us between a
 * completion and the next request, no bursts: the daemon's fairness benchmark). */
static int fairness_row(json_t *rows, const char *policy, int mode, int k, int workload,
                        bool md)
{
    gos_sim_config c;
    gos_sim_bursty_config(&c, "fifo", mode, cases[k].n, cases[k].shares);
    set_policy(&c, policy);
    int kind = GOS_SCHED_COMPUTE;
    if (workload == 1) {
        for (int i = 0; i < c.nvgpus; i++) {
            c.vgpu[i].kernel_ns = i % 2 ? 10 * MS : 1 * MS;
            c.vgpu[i].think_ns = 400000;
            c.vgpu[i].burst = 0;
        }
    }
    if (mode == GOS_SCHED_SDQ) { /* a copy (1/4 of the kernel) before every kernel */
        for (int i = 0; i < c.nvgpus; i++)
            c.vgpu[i].copy_ns = c.vgpu[i].kernel_ns / 4;
        kind = GOS_SIM_ALL;
    }
    gos_sim_result r;
    int rc = gos_sim_run(&c, WARMUP, DURATION, kind, &r);
    if (rc)
        return rc;
    if (md) {
        char sh[64] = "", ach[128] = "", gpu[128] = "";
        for (int i = 0; i < r.nvgpus; i++) {
            size_t a = strlen(sh), b = strlen(ach), g = strlen(gpu);
            snprintf(sh + a, sizeof sh - a, "%s%d", i ? "/" : "", cases[k].shares[i]);
            snprintf(ach + b, sizeof ach - b, "%s%.1f", i ? "/" : "", r.achieved_pct[i]);
            snprintf(gpu + g, sizeof gpu - g, "%s%.1f", i ? "/" : "", r.gpu_pct[i]);
        }
        printf("| %s | %s | %d | %s | %s | %.2f | %s | %.1f | %.1f |\n", policy,
               mode == GOS_SCHED_SDQ ? "sdq" : "mrq", r.nvgpus, sh, ach, r.max_error_pct,
               gpu, r.busy_pct, r.held_pct);
        return GOS_OK;
    }
    json_t *o = json_object();
    json_object_set_new(o, "workload", json_string(workload ? "turnaround" : "bursty-10x"));
    json_object_set_new(o, "policy", json_string(policy));
    json_object_set_new(o, "mode", json_string(mode == GOS_SCHED_SDQ ? "sdq" : "mrq"));
    json_object_set_new(o, "engine", json_string(mode == GOS_SCHED_SDQ ? "device" : "compute"));
    json_object_set_new(o, "vgpus", json_integer(r.nvgpus));
    json_object_set_new(o, "shares", iarray(cases[k].shares, r.nvgpus));
    json_object_set_new(o, "achieved", darray(r.achieved_pct, r.nvgpus));
    json_object_set_new(o, "gpu_time_share", darray(r.gpu_pct, r.nvgpus));
    json_object_set_new(o, "busy_pct", json_real(round2(r.busy_pct)));
    json_object_set_new(o, "held_pct", json_real(round2(r.held_pct)));
    json_object_set_new(o, "max_error_pct", json_real(round2(r.max_error_pct)));
    json_array_append_new(rows, o);
    return GOS_OK;
}

static int overlap_row(json_t *rows, const char *policy, bool md)
{
    gos_sim_config c;
    memset(&c, 0, sizeof c);
    set_policy(&c, policy);
    c.band_wait_ns = -1;
    c.seed = 3;
    c.nvgpus = 2;
    for (int i = 0; i < 2; i++) {
        c.vgpu[i].compute_share = c.vgpu[i].copy_share = 50;
        c.vgpu[i].copy_ns = c.vgpu[i].kernel_ns = 300000;
        c.vgpu[i].jitter = 0.1;
        c.vgpu[i].think_ns = 10000;
    }
    gos_sim_result m, d;
    int rc;
    c.mode = GOS_SCHED_MRQ;
    if ((rc = gos_sim_run(&c, WARMUP, DURATION, GOS_SIM_ALL, &m)))
        return rc;
    c.mode = GOS_SCHED_SDQ;
    if ((rc = gos_sim_run(&c, WARMUP, DURATION, GOS_SIM_ALL, &d)))
        return rc;
    if (md) {
        printf("| %s | %.0f | %.0f | %.2f |\n", policy, m.total_cycles_per_s,
               d.total_cycles_per_s, m.total_cycles_per_s / d.total_cycles_per_s);
        return GOS_OK;
    }
    json_t *o = json_object();
    json_object_set_new(o, "policy", json_string(policy));
    json_object_set_new(o, "mrq_cycles_per_s", json_real(round2(m.total_cycles_per_s)));
    json_object_set_new(o, "sdq_cycles_per_s", json_real(round2(d.total_cycles_per_s)));
    json_object_set_new(o, "mrq_busy_pct", json_real(round2(m.busy_pct)));
    json_object_set_new(o, "sdq_busy_pct", json_real(round2(d.busy_pct)));
    json_array_append_new(rows, o);
    return GOS_OK;
}

/* BAND's wait: error and busy time on the bursty workload for 2, 4 and 8 vGPUs
 * with unequal shares (2: 50/50). */
static int wait_sweep(json_t *rows, bool md)
{
    static const int64_t waits[] = {0, 50000, 100000, 250000, 500000, 1000000, 2000000};
    static const int ks[] = {0, 3, 5};
    for (size_t w = 0; w < sizeof waits / sizeof waits[0]; w++) {
        json_t *o = json_object(), *cols = json_array();
        if (md)
            printf("| %lld |", (long long)waits[w] / 1000);
        for (int j = 0; j < 3; j++) {
            int k = ks[j];
            gos_sim_config c;
            gos_sim_bursty_config(&c, "band", GOS_SCHED_MRQ, cases[k].n, cases[k].shares);
            c.band_wait_ns = waits[w];
            gos_sim_result r;
            int rc = gos_sim_run(&c, WARMUP, DURATION, GOS_SCHED_COMPUTE, &r);
            if (rc) {
                json_decref(o);
                json_decref(cols);
                return rc;
            }
            if (md)
                printf(" %.2f / %.1f |", r.max_error_pct, r.busy_pct);
            json_t *e = json_object();
            json_object_set_new(e, "vgpus", json_integer(cases[k].n));
            json_object_set_new(e, "max_error_pct", json_real(round2(r.max_error_pct)));
            json_object_set_new(e, "busy_pct", json_real(round2(r.busy_pct)));
            json_array_append_new(cols, e);
        }
        if (md)
            printf("\n");
        json_object_set_new(o, "band_wait_ns", json_integer((json_int_t)waits[w]));
        json_object_set_new(o, "results", cols);
        json_array_append_new(rows, o);
    }
    return GOS_OK;
}

/* The period: BAND's error (4 vGPUs 40/30/20/10) and how long a share change
 * (2 vGPUs, 50/50 -> 20/80) takes until every later 90 ms window is within 3 points
 * of the new shares (observed for 2.7 s). */
static int period_sweep(json_t *rows, bool md)
{
    static const uint64_t periods[] = {3 * MS, 10 * MS, 30 * MS, 100 * MS};
    for (size_t p = 0; p < sizeof periods / sizeof periods[0]; p++) {
        gos_sim_config c;
        gos_sim_bursty_config(&c, "band", GOS_SCHED_MRQ, cases[3].n, cases[3].shares);
        c.period_ns = periods[p];
        gos_sim_result r;
        int rc = gos_sim_run(&c, WARMUP, DURATION, GOS_SCHED_COMPUTE, &r);
        if (rc)
            return rc;
        gos_sim_config d;
        gos_sim_bursty_config(&d, "band", GOS_SCHED_MRQ, cases[0].n, cases[0].shares);
        d.period_ns = periods[p];
        gos_sim *sim;
        if ((rc = gos_sim_new(&d, &sim)))
            return rc;
        gos_sim_run_until(sim, 1000 * MS);
        gos_sim_set_shares(sim, 0, 20, 20);
        gos_sim_set_shares(sim, 1, 80, 80);
        uint64_t t0 = gos_sim_now(sim);
        int64_t settle = -1;
        for (int i = 0; i < 30; i++) {
            gos_sim_snapshot a, b;
            gos_sim_result rr;
            gos_sim_snapshot_get(sim, &a);
            gos_sim_run_until(sim, t0 + (uint64_t)(i + 1) * 90 * MS);
            gos_sim_snapshot_get(sim, &b);
            gos_sim_result_between(sim, &a, &b, GOS_SCHED_COMPUTE, &rr);
            if (rr.max_error_pct > 3.0)
                settle = -1;
            else if (settle < 0)
                settle = (i + 1) * 90;
        }
        gos_sim_free(sim);
        if (md && settle >= 0)
            printf("| %llu | %.2f | %.1f | %lld |\n", (unsigned long long)(periods[p] / MS),
                   r.max_error_pct, r.busy_pct, (long long)settle);
        else if (md)
            printf("| %llu | %.2f | %.1f | not within 2700 (windows oscillate) |\n",
                   (unsigned long long)(periods[p] / MS), r.max_error_pct, r.busy_pct);
        json_t *o = json_object();
        json_object_set_new(o, "period_ns", json_integer((json_int_t)periods[p]));
        json_object_set_new(o, "max_error_pct_4vgpus", json_real(round2(r.max_error_pct)));
        json_object_set_new(o, "busy_pct_4vgpus", json_real(round2(r.busy_pct)));
        json_object_set_new(o, "share_change_settle_ms",
                            settle >= 0 ? json_integer(settle) : json_null());
        json_array_append_new(rows, o);
    }
    return GOS_OK;
}

int main(int argc, char **argv)
{
    bool md = false;
    const char *out = "-";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown"))
            md = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: sched_sim [--markdown] [--json FILE]\n");
            return 2;
        }
    }
    json_t *root = json_object(), *rows = json_array(), *ov = json_array();
    json_t *ws = json_array(), *ps = json_array();
    int rc = GOS_OK;
    if (md)
        printf("| policy | mode | vGPUs | shares %% | achieved %% | max error (points) "
               "| GPU-time split %% | busy %% | held %% |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
    for (int mode = GOS_SCHED_MRQ; mode <= GOS_SCHED_SDQ && !rc; mode++)
        for (int k = 0; k < NCASES && !rc; k++)
            for (int p = 0; p < NPOL && !rc; p++)
                rc = fairness_row(rows, policies[p], mode, k, 0, md);
    if (md && !rc)
        printf("\nturnaround workload (1 ms vs 10 ms kernels, 400 us between requests):\n\n"
               "| policy | mode | vGPUs | shares %% | achieved %% | max error (points) "
               "| GPU-time split %% | busy %% | held %% |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < 4 && !rc; k += 2)
        for (int p = 0; p < NPOL && !rc; p++)
            rc = fairness_row(rows, policies[p], GOS_SCHED_MRQ, k, 1, md);
    if (md && !rc)
        printf("\n| policy | MRQ cycles/s | SDQ cycles/s | MRQ/SDQ |\n|---|---|---|---|\n");
    for (int p = 0; p < NPOL && !rc; p++)
        rc = overlap_row(ov, policies[p], md);
    if (md && !rc)
        printf("\n| BAND wait us | 2 vGPUs 50/50: error / busy %% | 4 vGPUs 40/30/20/10 "
               "| 8 vGPUs 20..5 |\n|---|---|---|---|\n");
    if (!rc)
        rc = wait_sweep(ws, md);
    if (md && !rc)
        printf("\n| period ms | BAND error, 4 vGPUs | busy %% | share change settled after ms "
               "|\n|---|---|---|---|\n");
    if (!rc)
        rc = period_sweep(ps, md);
    if (!rc && !md) {
        json_object_set_new(root, "schema", json_string("gpuos.sched-sim/1"));
        json_object_set_new(root, "workload", json_string(
            "bursty-10x: closed-loop clients, bursts of 8 kernels, 20 us think, 200 us "
            "pause between bursts, +-20 % jitter; even vGPUs 100 us kernels, odd 1 ms; "
            "SDQ rows add a copy of 1/4 the kernel length before every kernel"));
        json_object_set_new(root, "period_ns",
                            json_integer((json_int_t)GOS_SCHED_DEFAULT_PERIOD_NS));
        json_object_set_new(root, "band_wait_ns",
                            json_integer((json_int_t)GOS_SCHED_DEFAULT_BAND_WAIT_NS));
        json_object_set_new(root, "warmup_ns", json_integer((json_int_t)WARMUP));
        json_object_set_new(root, "duration_ns", json_integer((json_int_t)DURATION));
        json_object_set_new(root, "achieved", json_string(
            "share of engine time allocated to each vGPU (GPU time plus BAND holds charged "
            "to it; band-gpu: GPU time alone), percent; max_error_pct: max |achieved - "
            "share| in points"));
        json_object_set_new(root, "fairness", rows);
        json_object_set_new(root, "overlap", ov);
        json_object_set_new(root, "band_wait_sweep", ws);
        json_object_set_new(root, "period_sweep", ps);
        rows = ov = ws = ps = NULL;
        /* 6 significant digits: the figures are rounded to 0.01 already. */
        char *txt = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (!txt) {
            rc = gos_fail(GOS_ENOMEM, "cannot format the JSON document");
        } else {
            gos_json_trace(root);
            rc = gos_file_save_atomic(out, txt, strlen(txt));
            if (!rc && !strcmp(out, "-"))
                putchar('\n');
            free(txt);
        }
    }
    json_decref(rows);
    json_decref(ov);
    json_decref(ws);
    json_decref(ps);
    json_decref(root);
    if (rc) {
        fprintf(stderr, "sched_sim: %s\n", gos_last_error());
        return 1;
    }
    return 0;
}
