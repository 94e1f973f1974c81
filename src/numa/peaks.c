/* SPDX-License-Identifier: Apache-2.0 */
/* peaks.c: any number of latency tiers, from the peaks of the latency
 * histogram (issue 26: N partitions, several dies, several tiers).
 *
 * The samples between the 0.5 and 99.5 percentiles go into bins of 0.25 % of
 * the median, smoothed with a Gaussian of 0.6 % of the median; every local
 * maximum is a candidate peak. Two neighbouring peaks stay apart only when the
 * valley between them falls below 70 % of the lower peak: overlapping peaks (the
 * B200's twin intra-die peaks, paper 001 section 6.1.1) are one tier, because
 * latency alone cannot tell them apart. So are two peaks closer than 7 % of
 * the lower one's latency, however deep the valley between them: a tier is
 * another path through the fabric (MI300X-shaped tiers 13-16 % apart, 9 % at
 * the worst of tests/partgen.h's +-2 %; B200 dies 15 %+; H100/H200 partitions
 * 33 %), while sub-peaks of one tier sit 4-5 % apart (a lent H100's near tier
 * in 2 of 4 runs, 25 cycles; 7 of 21 committed H200 histograms, 20-27 cycles:
 * issue 44), which split the near tier and failed the chart. A tier must hold 2 % of the samples
 * (fewer is a slow tail, interference adds latency, never a tier); the
 * threshold between two tiers is the bottom of their valley. */
#include "numa/numa.h"

#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Neighbouring peaks closer than this share of the lower one's latency are
 * sub-peaks of one tier. */
#define MIN_TIER_GAP 0.07

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static double med_sorted(const uint32_t *s, int n)
{
    return n <= 0 ? 0 : n % 2 ? s[n / 2] : 0.5 * ((double)s[n / 2 - 1] + s[n / 2]);
}

/* Merges the peaks pk[0..np) (bins of the smoothed density k, bin i at
 * lo + (i + 0.5) w cycles) that are one tier, each time the lower peak into the
 * higher; returns how many are left: neighbours without a clear valley
 * (valley above 70 % of the lower peak) or closer than MIN_TIER_GAP of the
 * lower one's latency (sub-peaks of one tier). */
static int merge_peaks(const double *k, int *pk, int np, double lo, double w)
{
    for (int i = 0; i + 1 < np;) {
        double val = 1e300;
        for (int b = pk[i]; b <= pk[i + 1]; b++)
            val = fmin(val, k[b]);
        int shallow = val > 0.7 * fmin(k[pk[i]], k[pk[i + 1]]);
        int close = (pk[i + 1] - pk[i]) * w < MIN_TIER_GAP * (lo + (pk[i] + 0.5) * w);
        if (!shallow && !close) {
            i++;
            continue;
        }
        int drop = k[pk[i]] < k[pk[i + 1]] ? i : i + 1;
        memmove(pk + drop, pk + drop + 1, (np - drop - 1) * sizeof *pk);
        np--;
        i = 0; /* the survivor's new neighbours are checked again */
    }
    return np;
}

int gos_tiers_find_n(const uint32_t *v, int n, gos_tiers_n *out)
{
    memset(out, 0, sizeof *out);
    uint32_t *s = malloc((n > 0 ? n : 1) * sizeof *s);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int m = 0;
    for (int i = 0; i < n; i++)
        if (v[i] != GOS_LAT_NONE)
            s[m++] = v[i];
    if (m < 50) {
        free(s);
        return gos_fail(GOS_EAMBIGUOUS, "only %d latency samples: too few for tiers", m);
    }
    qsort(s, m, sizeof *s, cmp_u32);
    double lo = s[m / 200], hi = s[m - 1 - m / 200], med = med_sorted(s, m);
    double w = fmax(0.25, 0.0025 * med), sd = fmax(1.0, 0.006 * med) / w; /* bin; kernel in bins */
    int nb = (int)((hi - lo) / w) + 1, r = (int)ceil(3 * sd);
    if (nb > 100000)
        nb = 100000;
    double *h = calloc(nb, sizeof *h), *k = calloc(nb, sizeof *k);
    int *pk = malloc(nb * sizeof *pk), np = 0, rc = GOS_OK;
    if (!h || !k || !pk) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    int used = 0;
    for (int i = 0; i < m; i++)
        if (s[i] >= lo && s[i] <= hi) {
            int b = (int)((s[i] - lo) / w);
            h[b < nb ? b : nb - 1] += 1;
            used++;
        }
    for (int b = 0; b < nb; b++) /* smoothed density */
        for (int j = -r; j <= r; j++)
            if (b + j >= 0 && b + j < nb)
                k[b] += h[b + j] * exp(-0.5 * j * j / (sd * sd));
    for (int b = 0; b < nb; b++)
        if ((b == 0 || k[b] > k[b - 1]) && (b == nb - 1 || k[b] >= k[b + 1]) && k[b] > 0)
            pk[np++] = b;
    np = merge_peaks(k, pk, np, lo, w);
    /* Boundaries: the valley bottoms. A tier under 2 % of the samples goes, and
     * so does one whose effective width (mass / peak height) is over three
     * times the near tier's: that is the flat slow tail (interference adds
     * 100s of cycles at random), not a tier. Until every tier left passes. */
    double ksum = 0;
    for (int j = -r; j <= r; j++)
        ksum += exp(-0.5 * j * j / (sd * sd));
    for (int changed = 1; changed && np > 0;) {
        changed = 0;
        int j = 0;
        double w0 = 0;
        for (int i = 0; i < np && !changed; i++) {
            double top = 1e300;
            if (i + 1 < np) {
                int bb = pk[i];
                for (int b = pk[i]; b <= pk[i + 1]; b++)
                    if (k[b] < k[bb])
                        bb = b;
                top = lo + (bb + 0.5) * w;
            }
            int c = 0;
            while (j < m && s[j] < top)
                j++, c++;
            double width = c * ksum / k[pk[i]];
            if (i == 0)
                w0 = width;
            if (c < 0.02 * m || (i > 0 && width > 3 * w0)) {
                memmove(pk + i, pk + i + 1, (np - i - 1) * sizeof *pk);
                np--;
                changed = 1;
            }
        }
    }
    if (np < 1) {
        rc = gos_fail(GOS_EAMBIGUOUS, "no latency tier holds 2 %% of the samples");
        goto out;
    }
    if (np > GOS_MAX_TIERS) {
        rc = gos_fail(GOS_EAMBIGUOUS, "%d latency peaks: more tiers than the %d modelled", np, GOS_MAX_TIERS);
        goto out;
    }
    out->n = np;
    out->samples = m;
    for (int i = 0; i + 1 < np; i++) {
        int bb = pk[i];
        for (int b = pk[i]; b <= pk[i + 1]; b++)
            if (k[b] < k[bb])
                bb = b;
        out->threshold[i] = lo + (bb + 0.5) * w;
    }
    int j = 0;
    for (int i = 0; i < np; i++) {
        double top = i + 1 < np ? out->threshold[i] : 1e300;
        int a = j;
        while (j < m && s[j] < top)
            j++;
        int c = j - a;
        if (i + 1 == np) { /* the slow tail above the top tier is not part of it */
            double mtop = med_sorted(s + a, c), cutoff = mtop * 1.15;
            c = 0;
            while (a + c < m && s[a + c] <= cutoff)
                c++;
            out->n_outliers = m - a - c;
        }
        out->median[i] = med_sorted(s + a, c);
        out->fraction[i] = (double)c / m;
    }
    (void)used;
out:
    free(s);
    free(h);
    free(k);
    free(pk);
    return rc;
}
