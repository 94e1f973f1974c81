/* SPDX-License-Identifier: Apache-2.0 */
/* stats.h: the descriptive and inferential statistics of the switching-latency
 * methodology (paper 000, sections V-A and V-B): moments, standard error,
 * Student t quantiles, confidence intervals, Welch and Student t-tests and
 * quantiles, box plots. Pure C, no allocation except in gos_quantile (a sorted copy).
 *
 * Conventions (checked against numpy/scipy by tests/ref_stats.py):
 *   variance/sd with ddof (0: population, 1: sample, numpy's ddof);
 *   gos_quantile = numpy.quantile(x, q) with the default "linear" method;
 *   t-tests = scipy.stats.ttest_ind (equal_var False: Welch, True: Student),
 *   two-sided p-values; confidence intervals use the t distribution. */
#ifndef GOS_STATS_H
#define GOS_STATS_H

#include <stddef.h>

/* Running moments (Welford): exact enough for millions of iteration times. */
typedef struct {
    size_t n;
    double mean;
    double m2; /* sum of squared deviations from the mean */
} gos_moments;

void gos_moments_init(gos_moments *m);
void gos_moments_add(gos_moments *m, double x);
/* Sample variance (ddof 1); 0 when n < 2. */
double gos_moments_var(const gos_moments *m);
double gos_moments_sd(const gos_moments *m);

double gos_mean(const double *x, size_t n);                /* NaN when n == 0 */
double gos_variance(const double *x, size_t n, int ddof); /* NaN when n <= ddof */
double gos_sd(const double *x, size_t n, int ddof);
/* Standard error of the mean, sd(ddof 1) / sqrt(n) (paper 000 eq. 2). */
double gos_sem(const double *x, size_t n);
/* Relative standard error sem / |mean| (the campaign's stop criterion). */
double gos_rse(const double *x, size_t n);

/* Student t distribution with df > 0 degrees of freedom. */
double gos_t_cdf(double t, double df);
double gos_t_sf2(double t, double df); /* two-sided tail P(|T| >= |t|) */
/* Inverse of gos_t_cdf for 0 < p < 1 (scipy.stats.t.ppf). */
double gos_t_quantile(double p, double df);

/* Confidence interval of the mean at `level` (e.g. 0.95) with the t
 * distribution. GOS_EINVAL when n < 2. */
int gos_ci_mean(const double *x, size_t n, double level, double *lo, double *hi);

/* Two-sample t-test of mean1 - mean2 from summary statistics (sample variances,
 * ddof 1). `ci_lo..ci_hi` is the confidence interval of the difference at
 * `level`; the null hypothesis (equal means) is rejected at 1 - level exactly
 * when the interval excludes zero. */
typedef struct {
    double t, df, p;      /* statistic, degrees of freedom, two-sided p-value */
    double diff;          /* mean1 - mean2 */
    double ci_lo, ci_hi;  /* confidence interval of diff */
} gos_ttest;

int gos_ttest_welch(double mean1, double var1, size_t n1, double mean2, double var2, size_t n2,
                    double level, gos_ttest *out);
int gos_ttest_student(double mean1, double var1, size_t n1, double mean2, double var2,
                      size_t n2, double level, gos_ttest *out);
/* The same from raw samples. */
int gos_ttest_welch_x(const double *a, size_t na, const double *b, size_t nb, double level,
                      gos_ttest *out);
int gos_ttest_student_x(const double *a, size_t na, const double *b, size_t nb, double level,
                        gos_ttest *out);

/* numpy.quantile(x, q) (linear interpolation between order statistics).
 * gos_quantile_sorted expects x sorted ascending; gos_quantile sorts a copy
 * (NaN if out of memory or n == 0). */
double gos_quantile_sorted(const double *x, size_t n, double q);
double gos_quantile(const double *x, size_t n, double q);

/* A box plot's numbers of x[0..n) sorted ascending (boxplot.c): quartiles as
 * gos_quantile (numpy's linear method), whiskers (Tukey) at the smallest and
 * largest values within 1.5 IQR below q1 / above q3; n_low and n_high values
 * lie beyond them (fliers: x[0..n_low) and x[n-n_high..n)). -1 when n == 0. */
typedef struct {
    size_t n;
    double q1, median, q3;
    double lo, hi; /* whisker ends */
    size_t n_low, n_high;
} gos_box;
int gos_boxplot_sorted(const double *x, size_t n, gos_box *b);

/* Ascending sort of doubles (qsort). */
void gos_sort_doubles(double *x, size_t n);

#endif
