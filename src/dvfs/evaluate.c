/* SPDX-License-Identifier: Apache-2.0 */
/* evaluate.c: phase 3 of paper 000 (section V-B, algorithm 2) for one
 * measurement. Per SM, among the iterations that start at or after t_s (the
 * GPU-timebase moment of the change request), the first whose time lies within
 * the target's mean +- 2 sd (section V-A: two standard deviations, not two
 * standard errors) ends at t_e; the remaining iterations must then match the
 * target (Welch 95 % confidence interval of the difference includes zero, or
 * |difference| < tol). The measurement's latency is the maximum of t_e - t_s
 * over the SMs that gave a viable result; with none, it is repeated.
 *
 * Additionally (the campaign's verification "by measured iteration time"), the
 * iterations before t_s must match the initial frequency the same way; an SM
 * whose initial clock was not established cannot say when the switch ended. */
#include "dvfs/dvfs.h"

#include "stats/stats.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MIN_REST 30    /* iterations after t_e needed for the test */
#define INIT_WINDOW 200 /* iterations before t_s checked against the initial clock */
#define MIN_INIT 10

void gos_dvfs_ref_of(const gos_dvfs_calib *c, int n, int i, gos_dvfs_ref *out)
{
    out->mean_ns = c[i].mean_ns;
    out->sd_ns = c[i].sd_ns;
    out->n = c[i].n;
    double nearest = INFINITY;
    /* frequencies indistinguishable from i (excluded pairs) do not count */
    for (int j = 0; j < n; j++)
        if (j != i && c[j].mhz != c[i].mhz && fabs(c[j].mean_ns - c[i].mean_ns) < nearest &&
            gos_dvfs_pair_valid(&c[i], &c[j], NULL))
            nearest = fabs(c[j].mean_ns - c[i].mean_ns);
    out->tol_ns = isfinite(nearest) ? 0.25 * nearest : 0.01 * c[i].mean_ns;
}

const char *gos_dvfs_status_name(int status)
{
    switch (status) {
    case GOS_DVFS_OK: return "ok";
    case GOS_DVFS_NOT_CAPTURED: return "switch not captured";
    case GOS_DVFS_REJECTED: return "iterations after t_e do not match the target";
    case GOS_DVFS_NO_INIT: return "initial frequency not established";
    }
    return "?";
}

static int matches(const gos_moments *m, const gos_dvfs_ref *r)
{
    if (m->n < 2)
        return 0;
    gos_ttest tt;
    if (gos_ttest_welch(m->mean, gos_moments_var(m), m->n, r->mean_ns, r->sd_ns * r->sd_ns,
                        r->n < 2 ? 2 : r->n, 0.95, &tt))
        return 0;
    return (tt.ci_lo <= 0 && tt.ci_hi >= 0) || fabs(tt.diff) < r->tol_ns;
}

int gos_dvfs_evaluate(const gos_dvfs_trace *tr, int64_t t_s, const gos_dvfs_ref *init,
                      const gos_dvfs_ref *target, gos_dvfs_eval *out)
{
    memset(out, 0, sizeof *out);
    out->n_sms = tr->n_sms;
    out->latency_sm = -1;
    out->status = GOS_DVFS_NOT_CAPTURED;
    int n_noinit = 0, n_captured = 0;
    double lo = target->mean_ns - 2 * target->sd_ns, hi = target->mean_ns + 2 * target->sd_ns;
    for (int k = 0; k < tr->n_sms; k++) {
        size_t a = tr->off[k], b = tr->off[k + 1];
        const int64_t *st = tr->start_ns, *en = tr->end_ns;
        /* first iteration starting at or after t_s (iterations are in order) */
        size_t first = a;
        while (first < b && st[first] < t_s)
            first++;
        if (init) {
            gos_moments m;
            gos_moments_init(&m);
            size_t from = first > a + INIT_WINDOW ? first - INIT_WINDOW : a;
            for (size_t i = from; i < first; i++)
                if (en[i] <= t_s)
                    gos_moments_add(&m, (double)(en[i] - st[i]));
            if (m.n >= MIN_INIT && !matches(&m, init)) {
                n_noinit++;
                continue;
            }
        }
        size_t e = first;
        while (e < b) {
            double t = (double)(en[e] - st[e]);
            if (t > lo && t < hi)
                break;
            e++;
        }
        if (e >= b)
            continue;
        n_captured++;
        if (b - e - 1 < MIN_REST)
            continue;
        gos_moments m;
        gos_dvfs_duration_moments(st, en, e + 1, b, &m);
        if (!matches(&m, target))
            continue;
        int64_t lat = en[e] - t_s;
        if (out->n_viable == 0 || lat > out->latency_ns) {
            out->latency_ns = lat;
            out->t_e_ns = en[e];
            out->latency_sm = tr->sm[k];
        }
        out->n_viable++;
    }
    if (out->n_viable > 0)
        out->status = GOS_DVFS_OK;
    else if (n_noinit == tr->n_sms && tr->n_sms > 0)
        out->status = GOS_DVFS_NO_INIT;
    else if (n_captured > 0)
        out->status = GOS_DVFS_REJECTED;
    return GOS_OK;
}
