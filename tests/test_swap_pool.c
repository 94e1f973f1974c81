/* SPDX-License-Identifier: Apache-2.0 */
/* test_swap_pool.c: offsets in the host swap pool (vmem/swap_pool.h): ranges
 * handed out never overlap and stay inside the pool (checked against a page map
 * over 10000 random gets and puts), give-backs coalesce so that a pool emptied
 * again is one free range, exhaustion and fragmentation are GOS_ENOMEM with a
 * message, double and foreign frees are refused without changing anything;
 * ranges asked for inside a window and clear of other windows (issue 42.2:
 * each executor's part of the pool) are the first such free range, checked
 * against a model over 10000 random gets and puts, and the free bytes below a
 * bound and a copy of the pool agree with it. */
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

/* 10000 random gets and puts against a page map: plain first-fit gets of any
 * size (windowed 0), or whole units inside a random window clear of up to
 * three random ranges (windowed 1): each is the first such free range. */
static void run_random(unsigned seed, int windowed)
{
    enum { PAGES = 512, LIVE = 64 };
    gos_swap_pool p;
    unsigned char owner[PAGES];
    struct {
        uint64_t off, bytes;
    } live[LIVE];
    int n = 0;
    memset(owner, 0, sizeof owner);
    assert_int_equal(gos_swap_pool_init(&p, PAGES * U), GOS_OK);
    srand(seed);
    for (int it = 0; it < 10000; it++) {
        if (n < LIVE && (n == 0 || rand() % 2)) {
            uint64_t bytes = windowed ? (uint64_t)(rand() % 12 + 1) * U : (uint64_t)(rand() % (24 * U)) + 1, off;
            uint64_t pages = (bytes + U - 1) / U, lo = 0, hi = PAGES, want = UINT64_MAX;
            gos_swap_extent av[3];
            int na = 0, rc;
            if (windowed) {
                lo = (uint64_t)(rand() % PAGES);
                hi = lo + (uint64_t)(rand() % 64);
                na = rand() % 4;
                for (int k = 0; k < na; k++)
                    av[k] = (gos_swap_extent){(uint64_t)(rand() % PAGES) * U, (uint64_t)(rand() % 16 + 1) * U};
                rc = gos_swap_pool_get_in(&p, bytes, lo * U, hi * U, av, na, &off);
            } else {
                rc = gos_swap_pool_get(&p, bytes, &off);
            }
            /* the model: the first free run of `pages` from lo, below hi, clear of av */
            for (uint64_t s0 = lo; want == UINT64_MAX && s0 + pages <= (hi < PAGES ? hi : PAGES); s0++) {
                int ok = 1;
                for (uint64_t i = s0; i < s0 + pages && ok; i++)
                    ok = !owner[i];
                for (int k = 0; k < na && ok; k++)
                    ok = !(av[k].off < (s0 + pages) * U && s0 * U < av[k].off + av[k].bytes);
                if (ok)
                    want = s0;
            }
            if (want == UINT64_MAX) {
                assert_int_equal(rc, GOS_ENOMEM);
                continue;
            }
            assert_int_equal(rc, GOS_OK);
            assert_int_equal(off, want * U); /* never handed out twice: the model's pages were free */
            for (uint64_t i = want; i < want + pages; i++)
                owner[i] = 1;
            live[n].off = off;
            live[n++].bytes = bytes;
        } else {
            int k = rand() % n;
            assert_int_equal(gos_swap_pool_put(&p, live[k].off, live[k].bytes), GOS_OK);
            for (uint64_t i = live[k].off / U; i < (live[k].off + live[k].bytes + U - 1) / U; i++)
                owner[i] = 0;
            live[k] = live[--n];
        }
        uint64_t bound = (uint64_t)(rand() % (PAGES + 1)), free_b = 0, used = 0;
        for (uint64_t i = 0; i < PAGES; i++) {
            free_b += i < bound && !owner[i] ? U : 0;
            used += owner[i] * U;
        }
        assert_int_equal(gos_swap_pool_free_below(&p, bound * U), free_b);
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

static void t_random(void **state)
{
    (void)state;
    run_random(7, 0);
}

static void t_window(void **state)
{
    (void)state;
    gos_swap_pool p, q;
    uint64_t a, b, c;
    assert_int_equal(gos_swap_pool_init(&p, 16 * U), GOS_OK);
    /* inside [4U, 8U): the first fit there, split out of the one free range */
    assert_int_equal(gos_swap_pool_get_in(&p, 2 * U, 4 * U, 8 * U, NULL, 0, &a), GOS_OK);
    assert_int_equal(a, 4 * U);
    assert_int_equal(p.n, 2);
    assert_int_equal(gos_swap_pool_get_in(&p, 3 * U, 4 * U, 8 * U, NULL, 0, &b), GOS_ENOMEM); /* 2 left there */
    assert_non_null(strstr(gos_last_error(), "swap space exhausted"));
    assert_int_equal(p.used, 2 * U);
    /* clear of [0, 3U) and [9U, 10U): 3U..4U is one unit, so 10U */
    gos_swap_extent avoid[2] = {{0, 3 * U}, {9 * U, U}};
    assert_int_equal(gos_swap_pool_get_in(&p, 2 * U, 0, 16 * U, avoid, 2, &b), GOS_OK);
    assert_int_equal(b, 6 * U);
    assert_int_equal(gos_swap_pool_get_in(&p, 2 * U, 0, 16 * U, avoid, 2, &c), GOS_OK);
    assert_int_equal(c, 10 * U);
    assert_int_equal(gos_swap_pool_free_below(&p, 8 * U), 4 * U); /* 0..4U free, 4U..8U taken */
    assert_int_equal(gos_swap_pool_free_below(&p, 16 * U), 10 * U);
    assert_int_equal(gos_swap_pool_copy(&q, &p), GOS_OK);
    assert_int_equal(gos_swap_pool_get(&q, U, &a), GOS_OK); /* the copy alone changes */
    assert_int_equal(gos_swap_pool_free_below(&p, 16 * U), 10 * U);
    assert_int_equal(gos_swap_pool_free_below(&q, 16 * U), 9 * U);
    gos_swap_pool_fini(&q);
    gos_swap_pool_fini(&p);

    run_random(11, 1);
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(t_basic), cmocka_unit_test(t_random), cmocka_unit_test(t_window)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
