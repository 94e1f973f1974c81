/* SPDX-License-Identifier: Apache-2.0 */
/* calib.c: phase 1 statistics (paper 000 section V-B, algorithm 1): the mean
 * and standard deviation of the iteration time per frequency from the last
 * calibration kernel, the wake-up period from the first one, and the validity
 * of a pair (the confidence interval of the difference of means excludes 0).
 * Running the calibration kernels is campaign.c's job; this file only computes,
 * so that `dvfs analyze` gets the same numbers from saved traces. */
#include "dvfs/dvfs.h"

#include "stats/stats.h"

#include <math.h>
#include <string.h>

void gos_dvfs_calib_from_trace(const gos_dvfs_trace *tr, int mhz, gos_dvfs_calib *c)
{
    memset(c, 0, sizeof *c);
    c->mhz = mhz;
    gos_dvfs_iterstats st;
    gos_dvfs_iterstats_of(tr, &st);
    c->mean_ns = st.mean_ns;
    c->sd_ns = st.sd_ns;
    c->n = st.n;
}

double gos_dvfs_wakeup_ns(const gos_dvfs_trace *first, double mean_ns, double sd_ns)
{
    const int win = 50, need = 45; /* ~95 % of a settled window lies within 2 sd */
    double lo = mean_ns - 2 * sd_ns, hi = mean_ns + 2 * sd_ns, worst = 0;
    for (int k = 0; k < first->n_sms; k++) {
        size_t a = first->off[k], b = first->off[k + 1];
        if (b - a < (size_t)win)
            continue;
        int inside = 0;
        size_t settled = b; /* never */
        for (size_t i = a; i < b; i++) {
            double t = (double)(first->end_ns[i] - first->start_ns[i]);
            inside += t > lo && t < hi;
            if (i >= a + (size_t)win) {
                double o = (double)(first->end_ns[i - win] - first->start_ns[i - win]);
                inside -= o > lo && o < hi;
            }
            if (i + 1 >= a + (size_t)win && inside >= need) {
                settled = i + 1 - (size_t)win;
                break;
            }
        }
        double w = settled < b ? (double)(first->start_ns[settled] - first->start_ns[a])
                               : (double)(first->end_ns[b - 1] - first->start_ns[a]);
        if (w > worst)
            worst = w;
    }
    return worst;
}

int gos_dvfs_pair_valid(const gos_dvfs_calib *i, const gos_dvfs_calib *t, double *sep)
{
    gos_ttest tt;
    double s = i->sd_ns + t->sd_ns;
    if (sep)
        *sep = s > 0 ? fabs(i->mean_ns - t->mean_ns) / s : INFINITY;
    if (gos_ttest_welch(i->mean_ns, i->sd_ns * i->sd_ns, i->n, t->mean_ns, t->sd_ns * t->sd_ns, t->n,
                        0.95, &tt))
        return 0;
    return tt.ci_lo > 0 || tt.ci_hi < 0;
}
