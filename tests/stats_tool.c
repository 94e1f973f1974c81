/* SPDX-License-Identifier: Apache-2.0 */
/* stats_tool.c: a small command-line front end to src/stats for the reference
 * comparisons of tests/ref_stats.py (scipy / sklearn). Every mode prints one
 * JSON object on stdout; data files hold whitespace-separated numbers.
 *
 *   stats_tool describe FILE            mean, var0, var1, sd1, sem, rse, ci95, quantiles
 *   stats_tool ttest FILE1 FILE2        Welch and Student t-tests (level 0.95)
 *   stats_tool tdist P DF T             t quantile of P and two-sided p of T
 *   stats_tool dbscan EPS MINPTS DIM FILE  labels
 *   stats_tool silhouette DIM FILE LABELS  score
 *   stats_tool adaptive FILE            the paper's adaptive DBSCAN (mult 0.15)
 *   stats_tool box FILE                 box-plot numbers (quartiles, Tukey whiskers) */
#include "common/status.h"
#include "stats/dbscan.h"
#include "stats/silhouette.h"
#include "stats/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *load(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "stats_tool: cannot open %s\n", path);
        exit(2);
    }
    size_t cap = 1024, k = 0;
    double *v = malloc(cap * sizeof *v), x;
    while (fscanf(f, "%lf", &x) == 1) {
        if (k == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[k++] = x;
    }
    fclose(f);
    *n = k;
    return v;
}

static void print_tt(const char *name, const gos_ttest *t)
{
    printf("\"%s\": {\"t\": %.17g, \"df\": %.17g, \"p\": %.17g, \"diff\": %.17g, \"ci_lo\": %.17g, "
           "\"ci_hi\": %.17g}",
           name, t->t, t->df, t->p, t->diff, t->ci_lo, t->ci_hi);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    if (!strcmp(mode, "describe") && argc == 3) {
        size_t n;
        double *x = load(argv[2], &n), lo, hi;
        gos_ci_mean(x, n, 0.95, &lo, &hi);
        gos_moments m;
        gos_moments_init(&m);
        for (size_t i = 0; i < n; i++)
            gos_moments_add(&m, x[i]);
        printf("{\"mean\": %.17g, \"var0\": %.17g, \"var1\": %.17g, \"sd1\": %.17g, \"sem\": %.17g, "
               "\"rse\": %.17g, \"ci_lo\": %.17g, \"ci_hi\": %.17g, \"welford_mean\": %.17g, "
               "\"welford_var\": %.17g, \"quantiles\": [",
               gos_mean(x, n), gos_variance(x, n, 0), gos_variance(x, n, 1), gos_sd(x, n, 1),
               gos_sem(x, n), gos_rse(x, n), lo, hi, m.mean, gos_moments_var(&m));
        for (int q = 0; q <= 20; q++)
            printf("%s%.17g", q ? ", " : "", gos_quantile(x, n, q / 20.0));
        printf(", %.17g, %.17g]}\n", gos_quantile(x, n, 0.333), gos_quantile(x, n, 0.999));
        return 0;
    }
    if (!strcmp(mode, "ttest") && argc == 4) {
        size_t na, nb;
        double *a = load(argv[2], &na), *b = load(argv[3], &nb);
        gos_ttest w, s;
        if (gos_ttest_welch_x(a, na, b, nb, 0.95, &w) || gos_ttest_student_x(a, na, b, nb, 0.95, &s))
            return 1;
        printf("{");
        print_tt("welch", &w);
        printf(", ");
        print_tt("student", &s);
        printf("}\n");
        return 0;
    }
    if (!strcmp(mode, "tdist") && argc == 5) {
        double p = atof(argv[2]), df = atof(argv[3]), t = atof(argv[4]);
        printf("{\"ppf\": %.17g, \"sf2\": %.17g, \"cdf\": %.17g}\n", gos_t_quantile(p, df),
               gos_t_sf2(t, df), gos_t_cdf(t, df));
        return 0;
    }
    if (!strcmp(mode, "dbscan") && argc == 6) {
        size_t n;
        int dim = atoi(argv[4]);
        double *x = load(argv[5], &n);
        int *lab = malloc((n / dim + 1) * sizeof *lab);
        int k = gos_dbscan(x, n / dim, dim, atof(argv[2]), atoi(argv[3]), lab);
        printf("{\"k\": %d, \"labels\": [", k);
        for (size_t i = 0; i < n / dim; i++)
            printf("%s%d", i ? "," : "", lab[i]);
        printf("]}\n");
        return 0;
    }
    if (!strcmp(mode, "silhouette") && argc == 5) {
        size_t n, nl;
        int dim = atoi(argv[2]);
        double *x = load(argv[3], &n), *l = load(argv[4], &nl), s = 0;
        int *lab = malloc((nl + 1) * sizeof *lab);
        for (size_t i = 0; i < nl; i++)
            lab[i] = (int)l[i];
        int rc = gos_silhouette(x, n / dim, dim, lab, &s);
        printf("{\"rc\": %d, \"score\": %.17g}\n", rc, s);
        return 0;
    }
    if (!strcmp(mode, "adaptive") && argc == 3) {
        size_t n;
        double *x = load(argv[2], &n);
        int *lab = malloc((n + 1) * sizeof *lab);
        gos_dbscan_adaptive_result r;
        if (gos_dbscan_adaptive(x, n, 0.15, 2, lab, &r))
            return 1;
        printf("{\"min_samples\": %d, \"eps\": %.17g, \"k\": %d, \"noise\": %zu, \"attempts\": %d, "
               "\"labels\": [",
               r.min_samples, r.eps, r.n_clusters, r.n_noise, r.attempts);
        for (size_t i = 0; i < n; i++)
            printf("%s%d", i ? "," : "", lab[i]);
        printf("]}\n");
        return 0;
    }
    if (!strcmp(mode, "box") && argc == 3) {
        size_t n;
        double *x = load(argv[2], &n);
        gos_sort_doubles(x, n);
        gos_box b;
        int rc = gos_boxplot_sorted(x, n, &b);
        if (rc) {
            printf("{\"rc\": %d}\n", rc);
            return 0;
        }
        printf("{\"rc\": %d, \"n\": %zu, \"q1\": %.17g, \"median\": %.17g, \"q3\": %.17g, \"lo\": %.17g, "
               "\"hi\": %.17g, \"n_low\": %zu, \"n_high\": %zu}\n",
               rc, b.n, b.q1, b.median, b.q3, b.lo, b.hi, b.n_low, b.n_high);
        return 0;
    }
    fprintf(stderr, "stats_tool: bad arguments\n");
    return 2;
}
