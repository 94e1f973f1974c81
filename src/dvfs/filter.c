/* SPDX-License-Identifier: Apache-2.0 */
/* filter.c: outlier filtering and the summary of one pair's latencies (paper
 * 000 section V-C and VII-B): adaptive DBSCAN (algorithm 3, eps = 0.15 x the
 * 0.05-0.95 quantile range, minPts 4 % down to 2 % of the data in steps of 2,
 * stop when noise < 10 %), then min/mean/max/sd and a 95 % confidence interval
 * of the kept latencies, and the silhouette score where several clusters form. */
#include "dvfs/dvfs.h"

#include "stats/dbscan.h"
#include "stats/silhouette.h"
#include "stats/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS_MULT 0.15
#define MINPTS_FLOOR 3 /* below this DBSCAN cannot call anything an outlier */

int gos_dvfs_filter(const double *lat, size_t n, int *labels, gos_dvfs_pair_summary *s)
{
    int init = s->init_mhz, target = s->target_mhz;
    memset(s, 0, sizeof *s);
    s->init_mhz = init;
    s->target_mhz = target;
    s->n_total = n;
    s->min_ms = s->mean_ms = s->max_ms = s->sd_ms = s->ci_lo_ms = s->ci_hi_ms = s->median_ms = NAN;
    s->rse = n >= 2 ? gos_rse(lat, n) : NAN;
    s->rse_kept = NAN;
    if (n == 0)
        return GOS_OK;
    gos_dbscan_adaptive_result r;
    int rc = gos_dbscan_adaptive(lat, n, EPS_MULT, MINPTS_FLOOR, labels, &r);
    if (rc)
        return rc;
    s->n_clusters = r.n_clusters;
    s->min_samples = r.min_samples;
    s->eps_ms = r.eps;
    double *kept = malloc(n * sizeof *kept);
    if (!kept)
        return gos_fail(GOS_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (labels[i] >= 0)
            kept[k++] = lat[i];
    s->n = k;
    s->n_outliers = n - k;
    if (k > 0) {
        gos_sort_doubles(kept, k);
        s->min_ms = kept[0];
        s->max_ms = kept[k - 1];
        s->mean_ms = gos_mean(kept, k);
        s->median_ms = gos_quantile_sorted(kept, k, 0.5);
        if (k >= 2) {
            s->sd_ms = gos_sd(kept, k, 1);
            s->rse_kept = gos_rse(kept, k);
            gos_ci_mean(kept, k, 0.95, &s->ci_lo_ms, &s->ci_hi_ms);
        }
    }
    free(kept);
    if (r.n_clusters >= 2) {
        double sc;
        if (gos_silhouette(lat, n, 1, labels, &sc) == GOS_OK) {
            s->has_silhouette = 1;
            s->silhouette = sc;
        }
    }
    return GOS_OK;
}
