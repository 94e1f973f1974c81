/* SPDX-License-Identifier: Apache-2.0 */
/* histogram.c: latency histograms for the terminal and for JSON (the report
 * draws them). The range is the 0.5..99.5 percentile of the samples (1..99 in
 * the terminal); the counts outside are kept as "below" and "above", so rare interference outliers do not squash the tiers into one bin. */
#include "numa/numa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Valid samples, sorted; range [*lo, *hi]. Returns count (0 on none). */
static int range(const uint32_t *v, int n, int trim, uint32_t **sorted, uint32_t *lo, uint32_t *hi)
{
    uint32_t *s = malloc((n ? n : 1) * sizeof *s);
    int m = 0;
    if (!s)
        return 0;
    for (int i = 0; i < n; i++)
        if (v[i] != GOS_LAT_NONE)
            s[m++] = v[i];
    qsort(s, m, sizeof *s, cmp_u32);
    if (m) {
        *lo = s[m / trim];
        *hi = s[m - 1 - m / trim];
    }
    *sorted = s;
    return m;
}

json_t *gos_hist_json(const uint32_t *v, int n, int bin)
{
    uint32_t *s, lo = 0, hi = 0;
    int m = range(v, n, 200, &s, &lo, &hi);
    json_t *o = json_object();
    if (!m) {
        free(s);
        json_object_set_new(o, "n", json_integer(0));
        return o;
    }
    if (bin <= 0) {
        bin = (int)((hi - lo) / 80);
        if (bin < 1)
            bin = 1;
    }
    uint32_t start = lo - lo % (uint32_t)bin;
    int nb = (int)((hi - start) / (uint32_t)bin) + 1;
    json_t *counts = json_array();
    int *c = calloc(nb, sizeof *c);
    int below = 0, above = 0;
    for (int i = 0; i < m; i++) {
        if (s[i] < start)
            below++;
        else if ((s[i] - start) / (uint32_t)bin >= (uint32_t)nb)
            above++;
        else
            c[(s[i] - start) / (uint32_t)bin]++;
    }
    for (int b = 0; b < nb; b++)
        json_array_append_new(counts, json_integer(c ? c[b] : 0));
    free(c);
    json_object_set_new(o, "bin_cycles", json_integer(bin));
    json_object_set_new(o, "start", json_integer(start));
    json_object_set_new(o, "counts", counts);
    json_object_set_new(o, "n", json_integer(m));
    json_object_set_new(o, "below", json_integer(below));
    json_object_set_new(o, "above", json_integer(above));
    json_object_set_new(o, "median", json_real(m % 2 ? s[m / 2] : 0.5 * ((double)s[m / 2 - 1] + s[m / 2])));
    json_object_set_new(o, "min", json_integer(s[0]));
    json_object_set_new(o, "max", json_integer(s[m - 1]));
    free(s);
    return o;
}

void gos_hist_print(FILE *f, const uint32_t *v, int n, int rows, int width, double thr)
{
    uint32_t *s, lo = 0, hi = 0;
    int m = range(v, n, 100, &s, &lo, &hi);
    if (!m || rows < 1) {
        free(s);
        fprintf(f, "    (no samples)\n");
        return;
    }
    double step = fmax(1.0, (double)(hi - lo + 1) / rows);
    int *c = calloc(rows, sizeof *c), peak = 1;
    if (!c) {
        free(s);
        return;
    }
    for (int i = 0; i < m; i++) {
        int r = (int)((s[i] - (double)lo) / step);
        if (r >= 0 && r < rows)
            c[r]++;
    }
    for (int r = 0; r < rows; r++)
        if (c[r] > peak)
            peak = c[r];
    int marked = 0;
    for (int r = 0; r < rows; r++) {
        double a = lo + r * step, b = a + step;
        if (b > hi + 1.0 && c[r] == 0)
            break;
        int len = (int)lround((double)c[r] * width / peak);
        fprintf(f, "    %5.0f-%-5.0f %7d |", a, b - 1, c[r]);
        for (int i = 0; i < len; i++)
            fputc('#', f);
        if (thr > 0 && !marked && b > thr) {
            fprintf(f, "   <- threshold %.0f", thr);
            marked = 1;
        }
        fputc('\n', f);
    }
    free(c);
    free(s);
}
