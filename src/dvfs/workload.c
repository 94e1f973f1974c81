/* SPDX-License-Identifier: Apache-2.0 */
/* workload.c: running the per-SM timing workload and sizing it (paper 000,
 * section V: "it must be possible to statistically distinguish runtime
 * differences when comparing its executions using any pair of frequencies",
 * while "the workload iteration must be as tiny as possible"). */
#include "dvfs/dvfs.h"

#include "stats/stats.h"

#include <math.h>
#include <stdlib.h>

void gos_dvfs_duration_moments(const int64_t *start, const int64_t *end, size_t a, size_t b, void *mv)
{
    gos_moments *m = mv;
    gos_moments_init(m);
    if (b <= a)
        return;
    /* integer sums around the first duration: exact, and ns durations of up
     * to seconds over millions of iterations stay far inside int64 / double */
    int64_t k = end[a] - start[a];
    double s1 = 0, s2 = 0;
    for (size_t i = a; i < b; i++) {
        double d = (double)(end[i] - start[i] - k);
        s1 += d;
        s2 += d * d;
    }
    double n = (double)(b - a);
    m->n = b - a;
    m->mean = (double)k + s1 / n;
    m->m2 = s2 - s1 * s1 / n;
    if (m->m2 < 0)
        m->m2 = 0;
}

void gos_dvfs_iterstats_of(const gos_dvfs_trace *tr, gos_dvfs_iterstats *out)
{
    gos_moments m;
    gos_dvfs_duration_moments(tr->start_ns, tr->end_ns, 0, tr->off[tr->n_sms], &m);
    out->n = m.n;
    out->mean_ns = m.mean;
    out->sd_ns = gos_moments_sd(&m);
}

int gos_dvfs_run_workload(gos_device *d, const gos_dvfs_workload *w, gos_dvfs_trace *tr)
{
    int rc = gos_dvfs_check(d);
    if (rc || (rc = gos_dvfs_workload_start(d, w)))
        return rc;
    return gos_dvfs_workload_wait(d, tr);
}

int gos_dvfs_pick_sms(int sm_count, int n, int *sms)
{
    if (n <= 0 || n > sm_count)
        n = sm_count;
    for (int i = 0; i < n; i++)
        sms[i] = (int)((long)i * sm_count / n);
    return n;
}

double gos_dvfs_iters_to_separate(double mean_ns, double sd_ns, double rel)
{
    double delta = rel * mean_ns;
    if (!(delta > 0))
        return INFINITY;
    double n = 2;
    for (int k = 0; k < 50; k++) { /* t depends on n: iterate to the fixed point */
        double t = gos_t_quantile(0.975, 2 * n - 2);
        double need = 8 * (t * sd_ns / delta) * (t * sd_ns / delta);
        if (need < 2)
            need = 2;
        if (fabs(need - n) < 0.5)
            break;
        n = need;
    }
    return ceil(n);
}

/* Predicted separation of the closest pair, in units of (sd_a + sd_b). The
 * iteration is compute bound (dependent FMAs), so its time scales as 1/f; the
 * spread is taken as the larger of the measured one and its 1/f-scaled value
 * (timer quantisation does not scale, jitter does). */
static double worst_sep(double mean, double sd, const int *freqs, int n, int cur)
{
    double worst = INFINITY;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (freqs[i] <= freqs[j])
                continue;
            double ta = mean * cur / freqs[i], tb = mean * cur / freqs[j];
            double sa = sd * fmax(1.0, (double)cur / freqs[i]), sb = sd * fmax(1.0, (double)cur / freqs[j]);
            double s = (tb - ta) / (sa + sb > 0 ? sa + sb : 1e-9);
            if (s < worst)
                worst = s;
        }
    return worst;
}

int gos_dvfs_size_work(gos_device *d, const int *sms, int n_sms, const int *freqs, int n_freqs,
                       int cur_mhz, double sep, int iters, int *work, gos_dvfs_iterstats *at)
{
    if (cur_mhz <= 0)
        return gos_fail(GOS_EINVAL, "work sizing needs the current SM clock");
    int w = *work > 0 ? *work : 64, it = iters;
    for (;;) {
        gos_dvfs_workload wl = {.iters = it, .work = w, .n_record = n_sms, .record_sms = sms};
        gos_dvfs_trace tr = {0};
        int rc = gos_dvfs_run_workload(d, &wl, &tr);
        if (rc)
            return rc;
        gos_dvfs_iterstats_of(&tr, at);
        gos_dvfs_trace_free(&tr);
        if (n_freqs < 2 || worst_sep(at->mean_ns, at->sd_ns, freqs, n_freqs, cur_mhz) >= sep)
            break;
        if (w >= (1 << 24))
            return gos_fail(GOS_EAMBIGUOUS, "no work size up to %d FMAs per iteration separates "
                                            "the closest frequencies (iteration %.0f +- %.0f ns)",
                            w, at->mean_ns, at->sd_ns);
        w *= 2;
        /* keep each try near 0.1 s once iterations get long (200 at least) */
        double next = 2 * at->mean_ns;
        it = next * iters > 1e8 ? (int)fmax(200, 1e8 / next) : iters;
    }
    *work = w;
    return GOS_OK;
}
