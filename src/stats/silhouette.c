/* SPDX-License-Identifier: Apache-2.0 */
/* silhouette.c: see silhouette.h. O(n^2) distances, O(k) memory per point. */
#include "stats/silhouette.h"

#include "common/status.h"

#include <math.h>
#include <stdlib.h>

int gos_silhouette(const double *x, size_t n, int dim, const int *labels, double *score)
{
    int k = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (labels[i] >= 0) {
            m++;
            if (labels[i] + 1 > k)
                k = labels[i] + 1;
        }
    size_t *size = calloc(k ? (size_t)k : 1, sizeof *size);
    double *sum = calloc(k ? (size_t)k : 1, sizeof *sum);
    if (!size || !sum) {
        free(size);
        free(sum);
        return gos_fail(GOS_ENOMEM, "silhouette: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (labels[i] >= 0)
            size[labels[i]]++;
    int distinct = 0;
    for (int c = 0; c < k; c++)
        distinct += size[c] > 0;
    if (distinct < 2 || (size_t)distinct > m - 1) {
        free(size);
        free(sum);
        return gos_fail(GOS_EINVAL, "silhouette needs 2..n-1 clusters (got %d over %zu points)",
                        distinct, m);
    }
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        if (labels[i] < 0)
            continue;
        for (int c = 0; c < k; c++)
            sum[c] = 0;
        for (size_t j = 0; j < n; j++) {
            if (labels[j] < 0)
                continue;
            double s = 0;
            for (int d = 0; d < dim; d++) {
                double t = x[i * dim + d] - x[j * dim + d];
                s += t * t;
            }
            sum[labels[j]] += sqrt(s);
        }
        int own = labels[i];
        if (size[own] < 2)
            continue; /* silhouette 0 */
        double a = sum[own] / (double)(size[own] - 1), b = INFINITY;
        for (int c = 0; c < k; c++)
            if (c != own && size[c] > 0 && sum[c] / (double)size[c] < b)
                b = sum[c] / (double)size[c];
        double den = a > b ? a : b;
        total += den > 0 ? (b - a) / den : 0;
    }
    *score = total / (double)m;
    free(size);
    free(sum);
    return GOS_OK;
}
