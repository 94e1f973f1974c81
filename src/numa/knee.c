/* SPDX-License-Identifier: Apache-2.0 */
/* knee.c: effective L2 capacity from a bandwidth-versus-working-set curve (paper
 * 001 section 6.2.1: "the inflection point in the bandwidth-vs-working-set curve
 * reveals the effective L2 cache"). The knee is where the curve leaves its L2
 * plateau for good: the last downward crossing of the level 15 % of the way from
 * the plateau down to the HBM floor. The onset, not the middle of the cliff, is
 * the largest working set that still fits (a cliff that slopes, as with
 * non-LRU replacement, would push a midpoint beyond the capacity); taking the
 * last crossing ignores a noisy plateau point that dips and recovers. */
#include "numa/figures.h"

#include "common/status.h"
#include "stats/stats.h"

#include <stdlib.h>

/* Median (numpy's linear interpolation, src/stats). */
static double median(const double *v, int n) { return gos_quantile(v, (size_t)n, 0.5); }

int gos_l2_knee(const double *ws, const double *gbps, int n, double *knee, double *plateau,
                double *floor_gbps)
{
    if (n < 8)
        return gos_fail(GOS_EINVAL, "L2 curve: %d points, need at least 8", n);
    double lo = ws[0], hi = ws[n - 1], span = hi - lo;
    int a = 0, b = n;
    while (a < n && ws[a] <= lo + 0.25 * span)
        a++;
    while (b > 0 && ws[b - 1] >= hi - 0.25 * span)
        b--;
    if (a < 1 || b > n - 1)
        return gos_fail(GOS_EINVAL, "L2 curve: working sets do not span a range");
    double top = median(gbps, a), bot = median(gbps + b, n - b);
    *plateau = top;
    *floor_gbps = bot;
    if (top < 1.3 * bot)
        return gos_fail(GOS_EAMBIGUOUS,
                        "L2 curve: no cliff (%.0f GB/s in L2 vs %.0f GB/s beyond it)", top, bot);
    double level = top - 0.15 * (top - bot);
    for (int i = n - 1; i >= 1; i--)
        if (gbps[i] < level && gbps[i - 1] >= level) {
            double t = (gbps[i - 1] - level) / (gbps[i - 1] - gbps[i]);
            *knee = ws[i - 1] + t * (ws[i] - ws[i - 1]);
            return GOS_OK;
        }
    return gos_fail(GOS_EAMBIGUOUS, "L2 curve never falls through %.0f GB/s", level);
}
