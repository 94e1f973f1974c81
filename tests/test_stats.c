/* SPDX-License-Identifier: Apache-2.0 */
/* test_stats.c: src/stats on hand-checked values (the random-data agreement
 * with scipy/sklearn is tests/ref_stats.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "stats/dbscan.h"
#include "stats/silhouette.h"
#include "stats/stats.h"

#include <math.h>

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

static void test_moments(void **st)
{
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    NEAR(gos_mean(x, 8), 5.0, 1e-15);
    NEAR(gos_variance(x, 8, 0), 4.0, 1e-15);
    NEAR(gos_variance(x, 8, 1), 32.0 / 7, 1e-14);
    NEAR(gos_sem(x, 8), sqrt(32.0 / 7 / 8), 1e-14);
    gos_moments m;
    gos_moments_init(&m);
    for (int i = 0; i < 8; i++)
        gos_moments_add(&m, x[i] + 1e9); /* large offset (ns timestamps) */
    NEAR(m.mean, 5.0 + 1e9, 1e-6);
    NEAR(gos_moments_var(&m), 32.0 / 7, 1e-6);
    assert_true(isnan(gos_mean(x, 0)));
    assert_true(isnan(gos_variance(x, 1, 1)));
}

static void test_t_distribution(void **st)
{
    /* textbook two-sided 95 % critical values */
    NEAR(gos_t_quantile(0.975, 1), 12.706204736174707, 1e-9);
    NEAR(gos_t_quantile(0.975, 10), 2.2281388519862747, 1e-12); /* mpmath, 30 digits */
    NEAR(gos_t_quantile(0.975, 1e6), 1.9599663, 1e-6);
    NEAR(gos_t_quantile(0.025, 10), -2.2281388519862747, 1e-12);
    NEAR(gos_t_sf2(2.2281388519862747, 10), 0.05, 1e-12);
    NEAR(gos_t_cdf(0, 5), 0.5, 1e-15);
    NEAR(gos_t_sf2(1.0, 1), 0.5, 1e-14); /* Cauchy: P(|T|>1) = 1/2 */
}

static void test_ttests(void **st)
{
    const double a[] = {1, 2, 3, 4, 5}, b[] = {3, 4, 5, 6, 7, 8};
    gos_ttest w, s;
    assert_int_equal(gos_ttest_welch_x(a, 5, b, 6, 0.95, &w), GOS_OK);
    assert_int_equal(gos_ttest_student_x(a, 5, b, 6, 0.95, &s), GOS_OK);
    NEAR(w.diff, -2.5, 1e-14);
    NEAR(s.df, 9, 0);
    /* Student: sp^2 = (4*2.5 + 5*3.5)/9, se = sqrt(sp^2 (1/5 + 1/6)) */
    double sp2 = (4 * 2.5 + 5 * 3.5) / 9.0, se = sqrt(sp2 * (1.0 / 5 + 1.0 / 6));
    NEAR(s.t, -2.5 / se, 1e-12);
    assert_true(s.ci_lo < -2.5 && s.ci_hi > -2.5);
    assert_true(w.p > 0 && w.p < 0.05 + 0.03); /* borderline significance */
    assert_int_equal(gos_ttest_welch_x(a, 1, b, 6, 0.95, &w), GOS_EINVAL);
    /* identical constant samples: no difference, no variance */
    const double c[] = {3, 3, 3};
    assert_int_equal(gos_ttest_welch_x(c, 3, c, 3, 0.95, &w), GOS_OK);
    NEAR(w.ci_lo, 0, 0);
    NEAR(w.ci_hi, 0, 0);
}

static void test_quantiles(void **st)
{
    const double x[] = {7, 1, 3, 5}; /* sorted 1 3 5 7 */
    NEAR(gos_quantile(x, 4, 0), 1, 0);
    NEAR(gos_quantile(x, 4, 1), 7, 0);
    NEAR(gos_quantile(x, 4, 0.5), 4, 1e-15);
    NEAR(gos_quantile(x, 4, 0.05), 1.3, 1e-14); /* numpy: 1 + 0.15 * 2 */
    NEAR(gos_quantile(x, 4, 0.95), 6.7, 1e-14);
    double ci_lo, ci_hi;
    assert_int_equal(gos_ci_mean(x, 4, 0.95, &ci_lo, &ci_hi), GOS_OK);
    assert_true(ci_lo < 4 && ci_hi > 4);
}

static void test_dbscan(void **st)
{
    /* two tight groups and one far point */
    const double x[] = {1.0, 1.1, 1.2, 50, 10.0, 10.1, 10.2, 10.3};
    int lab[8];
    int k = gos_dbscan(x, 8, 1, 0.25, 3, lab);
    assert_int_equal(k, 2);
    assert_int_equal(lab[0], 0);
    assert_int_equal(lab[2], 0);
    assert_int_equal(lab[3], -1);
    assert_int_equal(lab[4], 1);
    assert_int_equal(lab[7], 1);
    double sc;
    assert_int_equal(gos_silhouette(x, 8, 1, lab, &sc), GOS_OK);
    assert_true(sc > 0.9);
    /* one cluster only: no silhouette */
    int one[8] = {0, 0, 0, -1, 0, 0, 0, 0};
    assert_int_equal(gos_silhouette(x, 8, 1, one, &sc), GOS_EINVAL);
    /* adaptive: 100 values around 20 plus 3 far outliers -> exactly those */
    double y[103];
    for (int i = 0; i < 100; i++)
        y[i] = 20 + 0.05 * (i % 10) + 0.01 * (i / 10);
    y[100] = 80;
    y[101] = 95;
    y[102] = 140;
    int ly[103];
    gos_dbscan_adaptive_result r;
    assert_int_equal(gos_dbscan_adaptive(y, 103, 0.15, 3, ly, &r), GOS_OK);
    assert_int_equal(r.n_noise, 3);
    assert_int_equal(ly[101], -1);
    assert_int_equal(r.min_samples, 5); /* ceil(0.04 * 103) */
}

static void test_boxplot(void **state)
{
    (void)state;
    /* numpy: percentile([1, 2, 3, 4, 100], [25, 50, 75]) = 2, 3, 4; IQR 2, fences -1 and 7 */
    const double x[] = {1, 2, 3, 4, 100};
    gos_box b;
    assert_int_equal(gos_boxplot_sorted(x, 5, &b), 0);
    assert_true(b.q1 == 2 && b.median == 3 && b.q3 == 4);
    assert_true(b.lo == 1 && b.hi == 4);
    assert_int_equal(b.n_low, 0);
    assert_int_equal(b.n_high, 1);
    /* interpolated quartiles (h = 0.75, 2.25): 1.75, 3.5 of 1..6; whiskers reach both ends */
    const double y[] = {1, 2, 3, 4, 5, 6};
    assert_int_equal(gos_boxplot_sorted(y, 6, &b), 0);
    assert_true(fabs(b.q1 - 2.25) < 1e-15 && fabs(b.median - 3.5) < 1e-15 && fabs(b.q3 - 4.75) < 1e-15);
    assert_true(b.lo == 1 && b.hi == 6 && b.n_low == 0 && b.n_high == 0);
    /* one value: everything is that value; none: an error */
    const double z[] = {7};
    assert_int_equal(gos_boxplot_sorted(z, 1, &b), 0);
    assert_true(b.q1 == 7 && b.q3 == 7 && b.lo == 7 && b.hi == 7);
    assert_int_equal(gos_boxplot_sorted(z, 0, &b), -1);
    /* q1 1, q3 1.75, fences -0.125 and 2.875: 3.5 is beyond, a value exactly on
     * the fence is inside (matplotlib: x <= q3 + 1.5 IQR) */
    double w[] = {0, 1, 1, 1, 2, 3.5};
    assert_int_equal(gos_boxplot_sorted(w, 6, &b), 0);
    assert_true(b.q1 == 1 && b.q3 == 1.75);
    assert_true(b.hi == 2 && b.n_high == 1);
    assert_true(b.lo == 0 && b.n_low == 0);
    w[5] = 2.875;
    assert_int_equal(gos_boxplot_sorted(w, 6, &b), 0);
    assert_true(b.hi == 2.875 && b.n_high == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moments),   cmocka_unit_test(test_t_distribution),
        cmocka_unit_test(test_ttests),    cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_dbscan),    cmocka_unit_test(test_boxplot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
