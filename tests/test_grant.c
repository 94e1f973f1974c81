/* SPDX-License-Identifier: Apache-2.0 */
/* test_grant.c: grant lengths under isolation = process (src/serve/grant.c).
 * Against a reference written here from the documented rule: a switch's cost
 * is a batch's exchange time beyond its GPU time when the device's batch before
 * it was another executor's, averaged with weight 1/8; grant_us = auto makes
 * grants SRV_GRANT_AUTO_DIV times that, clamped to [SRV_GRANT_PROCESS_NS,
 * SRV_GRANT_AUTO_MAX_NS]; a fixed grant never moves; a batch may exceed the
 * grant by 1/SRV_GRANT_SLACK_DIV. */
#include "serve/dev.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static struct srv_dev auto_dev(void)
{
    struct srv_dev d;
    memset(&d, 0, sizeof d);
    d.grant_auto = 1;
    d.grant_ns = SRV_GRANT_PROCESS_NS;
    return d;
}

static void test_same_executor_learns_nothing(void **state)
{
    (void)state;
    struct srv_dev d = auto_dev();
    pid_t a = 101;
    for (int i = 0; i < 50; i++)
        srv_grant_learn(&d, a, 4000000 + 900000, 4000000); /* 900 us of exchange, never a switch */
    assert_int_equal(d.switches, 0);
    assert_int_equal(d.switch_ns, 0);
    assert_int_equal(d.grant_ns, SRV_GRANT_PROCESS_NS);
}

static void test_auto_follows_reference(void **state)
{
    (void)state;
    struct srv_dev d = auto_dev();
    pid_t a = 101, b = 202;
    srand(7);
    double ref = 0;
    uint64_t n = 0;
    for (int i = 0; i < 400; i++) {
        pid_t x = (i % 3 == 2) ? a : (i % 2 ? b : a);
        int switched = d.last_pid && d.last_pid != x;
        uint64_t gpu = 1000000 + (uint64_t)(rand() % 3000000);
        uint64_t cost = i < 200 ? 150000 + (uint64_t)(rand() % 200000) : 10000 + (uint64_t)(rand() % 20000);
        if (i == 77)
            cost = 50000000; /* a stall: counts as SRV_SWITCH_SAMPLE_MAX_NS at most */
        srv_grant_learn(&d, x, gpu + cost, gpu);
        if (switched) {
            double c = (double)(cost > SRV_SWITCH_SAMPLE_MAX_NS ? SRV_SWITCH_SAMPLE_MAX_NS : cost);
            ref = n++ ? (7 * ref + c) / 8 : c;
        }
        assert_int_equal(d.switches, n);
        assert_true(fabs((double)d.switch_ns - ref) <= 8.0); /* integer rounding, one ns a step at most */
        double g = ref * SRV_GRANT_AUTO_DIV;
        g = g < SRV_GRANT_PROCESS_NS ? SRV_GRANT_PROCESS_NS : g > SRV_GRANT_AUTO_MAX_NS ? SRV_GRANT_AUTO_MAX_NS : g;
        if (n)
            assert_true(fabs((double)d.grant_ns - g) <= 8.0 * SRV_GRANT_AUTO_DIV);
        if (i == 199) { /* 150..350 us switches: SRV_GRANT_AUTO_DIV times that, within the clamps */
            double lo = 150000.0 * SRV_GRANT_AUTO_DIV, hi = 350000.0 * SRV_GRANT_AUTO_DIV;
            lo = lo > SRV_GRANT_AUTO_MAX_NS ? SRV_GRANT_AUTO_MAX_NS : lo < SRV_GRANT_PROCESS_NS ? SRV_GRANT_PROCESS_NS : lo;
            hi = hi > SRV_GRANT_AUTO_MAX_NS ? SRV_GRANT_AUTO_MAX_NS : hi;
            assert_true(d.grant_ns >= lo && d.grant_ns <= hi);
        }
    }
    /* cheap switches (10..30 us) bring the grant back to its floor */
    assert_int_equal(d.grant_ns, SRV_GRANT_PROCESS_NS);
}

static void test_clamps_and_fixed(void **state)
{
    (void)state;
    struct srv_dev d = auto_dev();
    pid_t a = 101, b = 202;
    for (int i = 0; i < 100; i++)
        srv_grant_learn(&d, i % 2 ? a : b, 9000000, 1000000); /* 8 ms "switches" */
    assert_int_equal(d.grant_ns, SRV_GRANT_AUTO_MAX_NS);
    struct srv_dev f = auto_dev();
    f.grant_auto = 0;
    f.grant_ns = 2500000;
    for (int i = 0; i < 100; i++)
        srv_grant_learn(&f, i % 2 ? a : b, 1300000, 1000000);
    assert_int_equal(f.grant_ns, 2500000); /* measured (300 us), not applied */
    assert_true(f.switch_ns > 250000 && f.switch_ns <= 300000);
    /* failed batches (wall 0) and batches without GPU time teach nothing */
    uint64_t sw = f.switches;
    srv_grant_learn(&f, a, 0, 1000000);
    srv_grant_learn(&f, b, 5000000, 0);
    assert_int_equal(f.switches, sw);
}

static void test_slack(void **state)
{
    (void)state;
    struct srv_dev d = auto_dev();
    /* four 1.01 ms kernels fit a 4 ms grant, five do not */
    assert_true(4 * 1010000ull <= srv_grant_limit(&d));
    assert_false(5 * 1010000ull <= srv_grant_limit(&d));
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_same_executor_learns_nothing),
        cmocka_unit_test(test_auto_follows_reference),
        cmocka_unit_test(test_clamps_and_fixed),
        cmocka_unit_test(test_slack),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
