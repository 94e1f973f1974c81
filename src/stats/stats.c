/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c: see stats.h. The t distribution goes through the regularised
 * incomplete beta function (continued fraction, modified Lentz), its quantile
 * through a bracketing bisection on the CDF: slow-ish but exact to ~1e-12,
 * which is what agreeing with scipy needs. */
#include "stats/stats.h"

#include "common/status.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void gos_moments_init(gos_moments *m) { memset(m, 0, sizeof *m); }

void gos_moments_add(gos_moments *m, double x)
{
    m->n++;
    double d = x - m->mean;
    m->mean += d / (double)m->n;
    m->m2 += d * (x - m->mean);
}

double gos_moments_var(const gos_moments *m) { return m->n < 2 ? 0.0 : m->m2 / (double)(m->n - 1); }
double gos_moments_sd(const gos_moments *m) { return sqrt(gos_moments_var(m)); }

double gos_mean(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    /* two passes: the correction term keeps large offsets (ns timestamps) exact */
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    double m = s / (double)n, c = 0;
    for (size_t i = 0; i < n; i++)
        c += x[i] - m;
    return m + c / (double)n;
}

double gos_variance(const double *x, size_t n, int ddof)
{
    if (ddof < 0 || n <= (size_t)ddof)
        return NAN;
    double m = gos_mean(x, n), s = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - m;
        s += d * d;
        c += d;
    }
    return (s - c * c / (double)n) / (double)(n - (size_t)ddof);
}

double gos_sd(const double *x, size_t n, int ddof) { return sqrt(gos_variance(x, n, ddof)); }

double gos_sem(const double *x, size_t n) { return n < 2 ? NAN : gos_sd(x, n, 1) / sqrt((double)n); }

double gos_rse(const double *x, size_t n) { return gos_sem(x, n) / fabs(gos_mean(x, n)); }

/* Continued fraction of the incomplete beta function (Numerical Recipes
 * betacf, modified Lentz); converges for x < (a+1)/(a+b+2). */
#define CF_TINY 1e-300

/* One modified-Lentz step with coefficient aa: updates c and d, returns the
 * factor d * c that multiplies the running value. */
static double lentz_step(double aa, double *c, double *d)
{
    *d = 1 + aa * *d;
    if (fabs(*d) < CF_TINY)
        *d = CF_TINY;
    *c = 1 + aa / *c;
    if (fabs(*c) < CF_TINY)
        *c = CF_TINY;
    *d = 1 / *d;
    return *d * *c;
}

static double betacf(double a, double b, double x)
{
    const double eps = 1e-16;
    double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < CF_TINY)
        d = CF_TINY;
    d = 1 / d;
    double h = d;
    for (int m = 1; m < 100000; m++) {
        int m2 = 2 * m;
        h *= lentz_step(m * (b - m) * x / ((qam + m2) * (a + m2)), &c, &d); /* even step */
        double del = lentz_step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), &c, &d); /* odd */
        h *= del;
        if (fabs(del - 1) < eps)
            break;
    }
    return h;
}

/* Regularised incomplete beta I_x(a, b), with y = 1 - x passed separately so
 * that neither is rounded when the other is tiny. */
static double ibeta(double a, double b, double x, double y)
{
    if (x <= 0)
        return 0;
    if (y <= 0)
        return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(y);
    if (x < (a + 1) / (a + b + 2))
        return exp(lbt) * betacf(a, b, x) / a;
    return 1 - exp(lbt) * betacf(b, a, y) / b;
}

/* P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2), with 1 - x = t^2/(df+t^2) exact:
 * no cancellation in the small tails that p-values live in. */
double gos_t_sf2(double t, double df)
{
    if (isnan(t) || !(df > 0))
        return NAN;
    if (isinf(t))
        return 0;
    double t2 = t * t;
    return ibeta(df / 2, 0.5, df / (df + t2), t2 / (df + t2));
}

double gos_t_cdf(double t, double df)
{
    double tail = 0.5 * gos_t_sf2(t, df);
    return t > 0 ? 1 - tail : tail;
}

double gos_t_quantile(double p, double df)
{
    if (!(p > 0 && p < 1) || !(df > 0))
        return NAN;
    if (p == 0.5)
        return 0;
    /* solve for the upper tail q = min(p, 1-p) on t >= 0: P(T > t) = q */
    double q = p < 0.5 ? p : 1 - p;
    double lo = 0, hi = 1;
    while (0.5 * gos_t_sf2(hi, df) > q && hi < 1e300)
        hi *= 2;
    for (int i = 0; i < 400 && hi - lo > 1e-15 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * gos_t_sf2(mid, df) > q)
            lo = mid;
        else
            hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return p < 0.5 ? -t : t;
}

int gos_ci_mean(const double *x, size_t n, double level, double *lo, double *hi)
{
    if (n < 2 || !(level > 0 && level < 1))
        return gos_fail(GOS_EINVAL, "confidence interval needs n >= 2 and 0 < level < 1");
    double m = gos_mean(x, n), se = gos_sem(x, n);
    double h = gos_t_quantile(0.5 + level / 2, (double)(n - 1)) * se;
    *lo = m - h;
    *hi = m + h;
    return GOS_OK;
}

static int ttest_fill(double diff, double se, double df, double level, gos_ttest *out)
{
    out->diff = diff;
    out->df = df;
    if (se > 0) {
        out->t = diff / se;
        out->p = gos_t_sf2(out->t, df);
    } else { /* no variance at all: the means either match exactly or differ surely */
        out->t = diff == 0 ? NAN : copysign(INFINITY, diff);
        out->p = diff == 0 ? NAN : 0;
    }
    double h = se > 0 ? gos_t_quantile(0.5 + level / 2, df) * se : 0;
    out->ci_lo = diff - h;
    out->ci_hi = diff + h;
    return GOS_OK;
}

int gos_ttest_welch(double mean1, double var1, size_t n1, double mean2, double var2, size_t n2,
                    double level, gos_ttest *out)
{
    if (n1 < 2 || n2 < 2 || !(level > 0 && level < 1) || var1 < 0 || var2 < 0)
        return gos_fail(GOS_EINVAL, "t-test needs two samples of at least 2 values");
    double a = var1 / (double)n1, b = var2 / (double)n2;
    double se = sqrt(a + b);
    double den = a * a / (double)(n1 - 1) + b * b / (double)(n2 - 1);
    double df = den > 0 ? (a + b) * (a + b) / den : (double)(n1 + n2 - 2);
    return ttest_fill(mean1 - mean2, se, df, level, out);
}

int gos_ttest_student(double mean1, double var1, size_t n1, double mean2, double var2,
                      size_t n2, double level, gos_ttest *out)
{
    if (n1 < 2 || n2 < 2 || !(level > 0 && level < 1) || var1 < 0 || var2 < 0)
        return gos_fail(GOS_EINVAL, "t-test needs two samples of at least 2 values");
    double df = (double)(n1 + n2 - 2);
    double sp2 = ((double)(n1 - 1) * var1 + (double)(n2 - 1) * var2) / df;
    double se = sqrt(sp2 * (1.0 / (double)n1 + 1.0 / (double)n2));
    return ttest_fill(mean1 - mean2, se, df, level, out);
}

/* A t-test from summary statistics applied to two raw samples. */
typedef int (*ttest_fn)(double, double, size_t, double, double, size_t, double, gos_ttest *);

static int ttest_samples(ttest_fn test, const double *a, size_t na, const double *b, size_t nb, double level,
                         gos_ttest *out)
{
    if (na < 2 || nb < 2)
        return gos_fail(GOS_EINVAL, "t-test needs two samples of at least 2 values");
    return test(gos_mean(a, na), gos_variance(a, na, 1), na, gos_mean(b, nb), gos_variance(b, nb, 1), nb, level,
                out);
}

int gos_ttest_welch_x(const double *a, size_t na, const double *b, size_t nb, double level, gos_ttest *out)
{
    return ttest_samples(gos_ttest_welch, a, na, b, nb, level, out);
}

int gos_ttest_student_x(const double *a, size_t na, const double *b, size_t nb, double level, gos_ttest *out)
{
    return ttest_samples(gos_ttest_student, a, na, b, nb, level, out);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void gos_sort_doubles(double *x, size_t n) { qsort(x, n, sizeof *x, cmp_double); }

double gos_quantile_sorted(const double *x, size_t n, double q)
{
    if (n == 0 || !(q >= 0 && q <= 1))
        return NAN;
    double h = (double)(n - 1) * q;
    size_t i = (size_t)floor(h);
    if (i >= n - 1)
        return x[n - 1];
    double f = h - (double)i;
    /* numpy's _lerp: a + (b - a) * t, switched at t >= 0.5 for exactness */
    double a = x[i], b = x[i + 1], d = b - a;
    return f >= 0.5 ? b - d * (1 - f) : a + d * f;
}

double gos_quantile(const double *x, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double *c = malloc(n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, x, n * sizeof *c);
    gos_sort_doubles(c, n);
    double v = gos_quantile_sorted(c, n, q);
    free(c);
    return v;
}
