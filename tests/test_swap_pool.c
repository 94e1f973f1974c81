/* SPDX-License-Identifier: Apache-2.0 */
/* test_swap_pool.c: offsets in the host swap pool (vmem/swap_pool.h): ranges
 * handed out never overlap and stay inside the pool (checked against a page map
 * over 10000 random gets and puts), give-backs coalesce so that a pool emptied
 * again is one free range, exhaustion and fragmentation are GOS_ENOMEM with a
 * message, double and foreign frees are refused without changing anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "vmem/swap_pool.h"

#include <stdlib.h>
#include <string.h>

#define U GOS_SWAP_POOL_UNIT

static void t_basic(void **state)
{
    (void)state;
    gos_swap_pool p;
    uint64_t a, b, c, d;
    assert_int_equal(gos_swap_pool_init(&p, U - 1), GOS_EINVAL);
    assert_int_equal(gos_swap_pool_init(&p, 8 * U + 5), GOS_OK);
    assert_int_equal(p.bytes, 8 * U);
    assert_int_equal(gos_swap_pool_get(&p, 1, &a), GOS_OK); /* rounded up to one unit */
    assert_int_equal(gos_swap_pool_get(&p, 3 * U, &b), GOS_OK);
    assert_int_equal(gos_swap_pool_get(&p, 2 * U + 1, &c), GOS_OK);
    assert_int_equal(a, 0);
    assert_int_equal(b, U);
    assert_int_equal(c, 4 * U);
    assert_int_equal(p.used, 7 * U);
    assert_int_equal(gos_swap_pool_get(&p, 2 * U, &d), GOS_ENOMEM); /* exhausted */
    assert_non_null(strstr(gos_last_error(), "swap space exhausted"));
    assert_int_equal(gos_swap_pool_get(&p, 0, &d), GOS_EINVAL);
    /* fragmented: 2 units free in two holes, 2 asked */
    assert_int_equal(gos_swap_pool_put(&p, a, 1), GOS_OK);
    assert_int_equal(gos_swap_pool_get(&p, 2 * U, &d), GOS_ENOMEM);
    /* double free and ranges outside: refused, nothing changes */
    assert_int_equal(gos_swap_pool_put(&p, a, U), GOS_EINVAL);
    assert_int_equal(gos_swap_pool_put(&p, 7 * U, U), GOS_EINVAL);
    assert_int_equal(gos_swap_pool_put(&p, 8 * U, U), GOS_EINVAL);
    assert_int_equal(gos_swap_pool_put(&p, U + 4096, U), GOS_EINVAL);
    assert_int_equal(gos_swap_pool_put(&p, UINT64_MAX - U, U), GOS_EINVAL);
    assert_int_equal(p.used, 6 * U);
    assert_int_equal(gos_swap_pool_put(&p, c, 2 * U + 1), GOS_OK);
    assert_int_equal(gos_swap_pool_put(&p, b, 3 * U), GOS_OK);
    assert_int_equal(p.used, 0);
    assert_int_equal(p.n, 1); /* coalesced into one range again */
    assert_int_equal(p.free[0].bytes, 8 * U);
    gos_swap_pool_fini(&p);
}

static void t_random(void **state)
{
    (void)state;
    enum { PAGES = 512, LIVE = 64 };
    gos_swap_pool p;
    unsigned char owner[PAGES];
    struct {
        uint64_t off, bytes;
    } live[LIVE];
    int n = 0;
    memset(owner, 0, sizeof owner);
    assert_int_equal(gos_swap_pool_init(&p, PAGES * U), GOS_OK);
    srand(7);
    for (int it = 0; it < 10000; it++) {
        if (n < LIVE && (n == 0 || rand() % 2)) {
            uint64_t bytes = (uint64_t)(rand() % (24 * U)) + 1, off;
            uint64_t pages = (bytes + U - 1) / U;
            int rc = gos_swap_pool_get(&p, bytes, &off);
            /* a model first-fit: is there a free run of `pages`? */
            int run = 0, fits = 0;
            for (int i = 0; i < PAGES && !fits; i++)
                fits = (run = owner[i] ? 0 : run + 1) >= (int)pages;
            if (!fits) {
                assert_int_equal(rc, GOS_ENOMEM);
                continue;
            }
            assert_int_equal(rc, GOS_OK);
            assert_int_equal(off % U, 0);
            assert_true(off / U + pages <= PAGES);
            for (uint64_t i = off / U; i < off / U + pages; i++) {
                assert_int_equal(owner[i], 0); /* never handed out twice */
                owner[i] = 1;
            }
            live[n].off = off;
            live[n++].bytes = bytes;
        } else {
            int k = rand() % n;
            assert_int_equal(gos_swap_pool_put(&p, live[k].off, live[k].bytes), GOS_OK);
            for (uint64_t i = live[k].off / U; i < (live[k].off + live[k].bytes + U - 1) / U; i++)
                owner[i] = 0;
            live[k] = live[--n];
        }
        uint64_t used = 0;
        for (int i = 0; i < PAGES; i++)
            used += owner[i] * U;
        assert_int_equal(p.used, used);
        for (int i = 1; i < p.n; i++) /* sorted, never adjacent */
            assert_true(p.free[i - 1].off + p.free[i - 1].bytes < p.free[i].off);
    }
    while (n > 0) {
        assert_int_equal(gos_swap_pool_put(&p, live[n - 1].off, live[n - 1].bytes), GOS_OK);
        n--;
    }
    assert_int_equal(p.used, 0);
    assert_int_equal(p.n, 1);
    gos_swap_pool_fini(&p);
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(t_basic), cmocka_unit_test(t_random)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
