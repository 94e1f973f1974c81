/* SPDX-License-Identifier: Apache-2.0 */
/* dbscan.c: see dbscan.h. Neighbourhoods are recomputed on demand instead of
 * stored, so memory stays O(n) whatever eps is. */
#include "stats/dbscan.h"

#include "common/status.h"
#include "stats/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double dist2(const double *a, const double *b, int dim)
{
    double s = 0;
    for (int k = 0; k < dim; k++) {
        double d = a[k] - b[k];
        s += d * d;
    }
    return s;
}

int gos_dbscan(const double *x, size_t n, int dim, double eps, int min_samples, int *labels)
{
    if (dim < 1 || !(eps >= 0) || min_samples < 1)
        return gos_fail(GOS_EINVAL, "dbscan: need dim >= 1, eps >= 0, min_samples >= 1");
    if (n == 0)
        return 0;
    char *core = calloc(n, 1);
    size_t *stack = malloc(n * sizeof *stack);
    if (!core || !stack) {
        free(core);
        free(stack);
        return gos_fail(GOS_ENOMEM, "dbscan: out of memory for %zu points", n);
    }
    /* sklearn compares distances (not squared) with <= eps; squaring both
     * sides is monotone, and eps^2 rounding is harmless at these scales */
    double e2 = eps * eps;
    for (size_t i = 0; i < n; i++) {
        int cnt = 0;
        for (size_t j = 0; j < n && cnt < min_samples; j++)
            if (dist2(x + i * dim, x + j * dim, dim) <= e2)
                cnt++;
        core[i] = cnt >= min_samples;
        labels[i] = -1;
    }
    int label = 0;
    for (size_t i0 = 0; i0 < n; i0++) {
        if (labels[i0] != -1 || !core[i0])
            continue;
        size_t top = 0, i = i0;
        for (;;) { /* sklearn's dbscan_inner: depth-first from core points */
            if (labels[i] == -1) {
                labels[i] = label;
                if (core[i])
                    for (size_t j = 0; j < n; j++)
                        if (labels[j] == -1 && dist2(x + i * dim, x + j * dim, dim) <= e2) {
                            labels[j] = -2; /* queued */
                            stack[top++] = j;
                        }
            }
            if (top == 0)
                break;
            i = stack[--top];
            labels[i] = -1;
        }
        label++;
    }
    free(core);
    free(stack);
    return label;
}

int gos_dbscan_adaptive(const double *x, size_t n, double mult, int min_floor, int *labels,
                        gos_dbscan_adaptive_result *res)
{
    memset(res, 0, sizeof *res);
    if (min_floor < 2)
        min_floor = 2;
    if (n == 0)
        return GOS_OK;
    double q05 = gos_quantile(x, n, 0.05), q95 = gos_quantile(x, n, 0.95);
    if (isnan(q05) || isnan(q95))
        return gos_fail(GOS_ENOMEM, "dbscan: out of memory for quantiles");
    double eps = mult * (q95 - q05);
    int start = (int)ceil(0.04 * (double)n), end = (int)floor(0.02 * (double)n);
    if (start <= end || start < min_floor) {
        start = min_floor;
        end = min_floor - 1;
    }
    for (int m = start; m > end; m -= 2) {
        int mp = m < min_floor ? min_floor : m;
        int k = gos_dbscan(x, n, 1, eps, mp, labels);
        if (k < 0)
            return k;
        size_t noise = 0;
        for (size_t i = 0; i < n; i++)
            noise += labels[i] < 0;
        res->min_samples = mp;
        res->eps = eps;
        res->n_clusters = k;
        res->n_noise = noise;
        res->attempts++;
        if ((double)noise <= 0.1 * (double)n || mp == min_floor)
            break;
    }
    return GOS_OK;
}
