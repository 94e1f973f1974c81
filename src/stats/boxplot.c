/* SPDX-License-Identifier: Apache-2.0 */
/* boxplot.c: the five numbers of a box plot (stats.h, gos_boxplot): quartiles
 * as numpy.quantile's default (linear interpolation), whiskers after Tukey at
 * the most extreme values within 1.5 interquartile ranges of the box (the
 * convention of matplotlib's and seaborn's boxplot, with which the paper's
 * figures are drawn); values beyond the whiskers are fliers. */
#include "stats/stats.h"

#include <math.h>

int gos_boxplot_sorted(const double *x, size_t n, gos_box *b)
{
    *b = (gos_box){.n = n, .q1 = NAN, .median = NAN, .q3 = NAN, .lo = NAN, .hi = NAN};
    if (n == 0)
        return -1;
    b->q1 = gos_quantile_sorted(x, n, 0.25);
    b->median = gos_quantile_sorted(x, n, 0.5);
    b->q3 = gos_quantile_sorted(x, n, 0.75);
    double iqr = b->q3 - b->q1, lo_fence = b->q1 - 1.5 * iqr, hi_fence = b->q3 + 1.5 * iqr;
    size_t a = 0, z = n;
    while (a < n && x[a] < lo_fence)
        a++;
    while (z > a && x[z - 1] > hi_fence)
        z--;
    /* the box's edges are within the fences, so a < z */
    b->lo = x[a];
    b->hi = x[z - 1];
    b->n_low = a;
    b->n_high = n - z;
    return 0;
}
