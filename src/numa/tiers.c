/* SPDX-License-Identifier: Apache-2.0 */
/* tiers.c: the local and remote latency tiers and the threshold between them,
 * found from the data (paper 001 section 6.1.1: "a clear gap between the local
 * and remote HBM memory access latency").
 *
 * Otsu's method on the samples between the 0.5 and 99.5 percentiles (interference
 * only ever adds latency, so the top tail is outliers, not a tier), then each
 * tier's median and median absolute deviation; when that split fails the checks,
 * the top is trimmed further (to 95 .. 75 %) in case a heavy slow tail drew it. Two tiers are accepted only when
 * each holds at least 5 % of the samples and their medians are at least three
 * spreads apart; otherwise the answer is "ambiguous", never a guess. */
#include "numa/numa.h"

#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorted copy of the valid samples; *m receives their count. */
static uint32_t *sorted_valid(const uint32_t *v, int n, int *m)
{
    uint32_t *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return NULL;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] != GOS_LAT_NONE)
            s[k++] = v[i];
    qsort(s, k, sizeof *s, cmp_u32);
    *m = k;
    return s;
}

static double median_sorted(const uint32_t *s, int n)
{
    if (n <= 0)
        return 0;
    return n % 2 ? s[n / 2] : 0.5 * ((double)s[n / 2 - 1] + s[n / 2]);
}

double gos_lat_median(const uint32_t *v, int n)
{
    int m;
    uint32_t *s = sorted_valid(v, n, &m);
    if (!s)
        return 0;
    double r = median_sorted(s, m);
    free(s);
    return r;
}

static double mad_sorted(const uint32_t *s, int n, double med)
{
    if (n <= 0)
        return 0;
    double *d = malloc(n * sizeof *d);
    if (!d)
        return 0;
    for (int i = 0; i < n; i++)
        d[i] = fabs(s[i] - med);
    qsort(d, n, sizeof *d, cmp_dbl);
    double r = n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
    free(d);
    return r;
}

/* Otsu on s[lo..hi] (sorted), then the tiers; GOS_OK when they pass the checks. */
static int tiers_in(const uint32_t *s, int m, int lo, int hi, gos_tiers *out)
{
    memset(out, 0, sizeof *out);
    /* Otsu over distinct values: maximise between-class variance w0 w1 (mu0 - mu1)^2. */
    double total = 0;
    for (int i = lo; i <= hi; i++)
        total += s[i];
    int cnt = hi - lo + 1;
    double best = -1, thr = 0, sum0 = 0;
    for (int i = lo; i < hi; i++) {
        sum0 += s[i];
        if (s[i] == s[i + 1])
            continue;
        int n0 = i - lo + 1, n1 = cnt - n0;
        double mu0 = sum0 / n0, mu1 = (total - sum0) / n1;
        double var = (double)n0 * n1 * (mu0 - mu1) * (mu0 - mu1);
        if (var > best) {
            best = var;
            thr = 0.5 * ((double)s[i] + s[i + 1]);
        }
    }
    if (best < 0)
        return gos_fail(GOS_EAMBIGUOUS, "all %d latency samples are equal: no tiers", m);
    int k = 0;
    while (k < m && s[k] < thr)
        k++;
    out->threshold = thr;
    out->low = median_sorted(s, k);
    out->low_spread = mad_sorted(s, k, out->low);
    /* The high tier: samples above the threshold up to the trimmed top. */
    int nh = hi + 1 - k;
    out->high = median_sorted(s + k, nh);
    out->high_spread = mad_sorted(s + k, nh, out->high);
    out->frac_low = (double)k / m;
    out->n = m;
    double cut = out->high + 8 * fmax(out->high_spread, 0.02 * out->high);
    for (int i = k; i < m; i++)
        if (s[i] > cut)
            out->n_outliers++;
    double spread = fmax(fmax(out->low_spread, out->high_spread), 1.0);
    if (out->frac_low < 0.05 || out->frac_low > 0.95)
        return gos_fail(GOS_EAMBIGUOUS,
                        "latencies show one tier (%.1f %% below %.0f cycles): no local/remote split",
                        100 * out->frac_low, thr);
    if (out->high - out->low < 3 * 1.4826 * spread)
        return gos_fail(GOS_EAMBIGUOUS,
                        "latency tiers %.0f and %.0f cycles overlap (spread %.0f): no clear threshold",
                        out->low, out->high, spread);
    return GOS_OK;
}

int gos_tiers_find(const uint32_t *v, int n, gos_tiers *out)
{
    int m;
    uint32_t *s = sorted_valid(v, n, &m);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    memset(out, 0, sizeof *out);
    if (m < 20) {
        free(s);
        return gos_fail(GOS_EAMBIGUOUS, "only %d latency samples: too few for two tiers", m);
    }
    /* A slow tail (interference, DRAM refresh: 5-7 % of HBM samples on the
     * H200) can pull Otsu's split between the body and the tail when the tiers
     * are close; then the top is trimmed further, down to 25 %. The first split
     * that shows two separated tiers wins; the first failure is reported. */
    static const double top[] = {0.995, 0.95, 0.90, 0.85, 0.80, 0.75};
    int rc = GOS_OK;
    char first[256] = "";
    for (size_t t = 0; t < sizeof top / sizeof top[0]; t++) {
        int lo = m / 200, hi = (int)(top[t] * (m - 1));
        if ((rc = tiers_in(s, m, lo, hi, out)) == GOS_OK)
            break;
        if (!first[0])
            snprintf(first, sizeof first, "%s", gos_last_error());
    }
    free(s);
    if (rc)
        return gos_fail(rc, "%s", first);
    return GOS_OK;
}
