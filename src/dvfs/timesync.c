/* SPDX-License-Identifier: Apache-2.0 */
/* timesync.c: CPU-GPU timer synchronisation (paper 000 section V-B, phase 2:
 * "synchronized using the IEEE 1588 standard"). Each exchange brackets one GPU
 * timer read between two host reads; as in PTP the offset is taken at the
 * midpoint and its uncertainty is half the round trip. The exchange with the
 * smallest round trip wins (queuing only ever adds delay); the spread of the
 * offsets of the better half says whether the midpoint assumption holds. */
#include "dvfs/dvfs.h"

#include "stats/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GPU_TIMER_STEP_NS 32.0 /* %globaltimer resolution on Hopper (H200-NOTES) */

int gos_dvfs_timesync(gos_device *d, int n, gos_dvfs_sync *out)
{
    int rc = gos_dvfs_check(d);
    if (rc)
        return rc;
    if (n < 2 || n > 4096)
        return gos_fail(GOS_EINVAL, "timer synchronisation needs 2..4096 exchanges");
    int64_t *hb = malloc(n * sizeof *hb), *g = malloc(n * sizeof *g), *ha = malloc(n * sizeof *ha);
    double *rtt = malloc(n * sizeof *rtt), *off = malloc(n * sizeof *off);
    if (!hb || !g || !ha || !rtt || !off) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = gos_dvfs_timer_exchange(d, n, hb, g, ha)))
        goto done;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (ha[i] < hb[i]) {
            rc = gos_fail(GOS_EDEVICE, "timer exchange %d: host clock went backwards", i);
            goto done;
        }
        rtt[i] = (double)(ha[i] - hb[i]);
        if (best < 0 || rtt[i] < rtt[best])
            best = i;
    }
    memset(out, 0, sizeof *out);
    out->n = n;
    int64_t mid = hb[best] + (ha[best] - hb[best]) / 2;
    out->offset_ns = g[best] - mid;
    out->rtt_min_ns = rtt[best];
    out->uncertainty_ns = rtt[best] / 2 + GPU_TIMER_STEP_NS / 2;
    /* offsets of the better half, relative to the chosen one */
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto done;
    }
    memcpy(sorted, rtt, n * sizeof *rtt);
    gos_sort_doubles(sorted, n);
    out->rtt_median_ns = gos_quantile_sorted(sorted, n, 0.5);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (rtt[i] <= out->rtt_median_ns)
            off[k++] = (double)(g[i] - (hb[i] + (ha[i] - hb[i]) / 2) - out->offset_ns);
    out->spread_ns = k >= 2 ? gos_sd(off, k, 1) : 0;
    free(sorted);
done:
    free(hb);
    free(g);
    free(ha);
    free(rtt);
    free(off);
    return rc;
}
