/* SPDX-License-Identifier: Apache-2.0 */
/* l2_hits.c: L2-hit latency, local and remote (paper 001 appendix C.2), for
 * both the discovery (discover.c, step 5) and the memory figures (figures.c). */
#include "numa/numa.h"

#include "common/status.h"

#include <stdlib.h>

int gos_l2_hits(gos_device *d, const int sm[2], int nq, int n, gos_line_picker pick, void *ctx,
                uint32_t *samples[2], double *local, double *remote)
{
    int rc = GOS_OK;
    samples[0] = malloc((size_t)nq * n * sizeof(uint32_t));
    samples[1] = malloc((size_t)nq * n * sizeof(uint32_t));
    uint64_t *a = malloc((size_t)n * sizeof *a);
    if (!samples[0] || !samples[1] || !a) {
        free(a);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (int q = 0; q < nq && !rc; q++) {
        /* local: q's SM warms and times; remote: q's SM warms, the other times. */
        if ((rc = pick(ctx, q, n, a)) ||
            (rc = gos_mem_latency(d, GOS_LAT_L2, sm[q], sm[q], a, n, samples[0] + (size_t)q * n)) ||
            (rc = pick(ctx, q, n, a)) ||
            (rc = gos_mem_latency(d, GOS_LAT_L2, sm[1 - q], sm[q], a, n, samples[1] + (size_t)q * n)))
            break;
    }
    free(a);
    if (rc)
        return rc;
    *local = gos_lat_median(samples[0], nq * n);
    *remote = gos_lat_median(samples[1], nq * n);
    return GOS_OK;
}
