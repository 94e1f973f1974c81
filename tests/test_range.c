/* SPDX-License-Identifier: Apache-2.0 */
/* test_range.c: gos_range_within (issue 15.1) against exact 128-bit arithmetic,
 * on edge values around 0, 2^32, 2^63 and 2^64 combined in every way, and on
 * random inputs; the config size parser's refusals; and the one range rule of
 * a copy (gos_range_copy: read-only, source, swapped-out entries). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/range.h"
#include "common/status.h"
#include "device/exec_builtin.h"
#include "serve/config.h"

#include <string.h>

#include <stdint.h>

static int exact(uint64_t base, uint64_t len, uint64_t p, uint64_t n)
{
    unsigned __int128 b = base, e = (unsigned __int128)base + len, q = p, qe = (unsigned __int128)p + n;
    return q >= b && qe <= e;
}

static void test_edges(void **state)
{
    (void)state;
    const uint64_t v[] = {0, 1, 2, 3, 4, 7, 8, 4095, 4096, 4097, 0xFFFFFFFFull, 1ull << 32, (1ull << 32) + 1,
                          (1ull << 62) + 1, (1ull << 63) - 1, 1ull << 63, (1ull << 63) + 1, UINT64_MAX - 4096,
                          UINT64_MAX - 4, UINT64_MAX - 1, UINT64_MAX};
    const size_t nv = sizeof v / sizeof v[0];
    long inside = 0;
    for (size_t a = 0; a < nv; a++)
        for (size_t b = 0; b < nv; b++)
            for (size_t c = 0; c < nv; c++)
                for (size_t d = 0; d < nv; d++) {
                    int got = gos_range_within(v[a], v[b], v[c], v[d]), want = exact(v[a], v[b], v[c], v[d]);
                    /* an empty range at the very end of a block that ends at 2^64 is inside */
                    if (got != want)
                        fail_msg("range_within(%llu, %llu, %llu, %llu) = %d, exact %d", (unsigned long long)v[a],
                                 (unsigned long long)v[b], (unsigned long long)v[c], (unsigned long long)v[d], got,
                                 want);
                    inside += got;
                }
    assert_true(inside > 1000);
    /* the case: a pointer past the block with a small count */
    assert_false(gos_range_within(0x10000, 4096, 0x10000 + (1ull << 30), 4096));
    assert_false(gos_range_within(0x10000, 4096, 0x10008, UINT64_MAX - 3)); /* (2^62 - 1) words */
}

static void test_random(void **state)
{
    (void)state;
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < 2000000; i++) {
        uint64_t x[4];
        for (int k = 0; k < 4; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[k] = (i & 1) ? s >> (s % 64) : s; /* small and large magnitudes */
        }
        assert_int_equal(gos_range_within(x[0], x[1], x[2], x[3]), exact(x[0], x[1], x[2], x[3]));
    }
    uint64_t o;
    assert_int_equal(gos_mul_overflows(1ull << 32, 1ull << 32, &o), 1);
    assert_int_equal(gos_mul_overflows(1ull << 31, 1ull << 32, &o), 0);
    assert_true(o == 1ull << 63);
}

static void test_sizes(void **state)
{
    (void)state;
    const char *bad[] = {"nan", "inf", "-1", "+1", "1e3", "0x10", "", " 1", "1 ", "1.2.3", "16E", "20000000T",
                         "18446744073709551616", "1K1", "K", ".", "1%"};
    uint64_t u;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gos_serve_parse_size(bad[i], 0, UINT64_MAX, &u) != GOS_EINVAL)
            fail_msg("size \"%s\" accepted as %llu", bad[i], (unsigned long long)u);
    assert_int_equal(gos_serve_parse_size("4M", 0, UINT64_MAX, &u), GOS_OK);
    assert_true(u == 4ull << 20);
    assert_int_equal(gos_serve_parse_size("1.5G", 0, UINT64_MAX, &u), GOS_OK);
    assert_true(u == 3ull << 29);
    assert_int_equal(gos_serve_parse_size("16383.99T", 0, UINT64_MAX, &u), GOS_OK);
    assert_int_equal(gos_serve_parse_size("4K", 8192, UINT64_MAX, &u), GOS_EINVAL);
}

/* The built-in kernels' ranges (exec_builtin.c), on the GPU kernels' layouts. */
static void test_builtin(void **state)
{
    (void)state;
    struct gos_dev_range r[GOS_LAUNCH_RANGES_MAX];
    int n;
    unsigned char p[32];
    struct gos_launch_cfg c;
    memset(&c, 0, sizeof c);
    c.params = p;
    uint64_t a = 0x10000, b = 0x20000, d = 0x30000, count;
    uint32_t dim = 64, v = 7, pad = 0;
    memcpy(p, &a, 8), memcpy(p + 8, &v, 4), memcpy(p + 12, &pad, 4);
    count = 1000;
    memcpy(p + 16, &count, 8);
    c.param_bytes = 24;
    assert_int_equal(gos_exec_builtin_ranges("fill", &c, r, &n), GOS_OK);
    assert_int_equal(n, 1);
    assert_true(r[0].ptr == a && r[0].bytes == 4000);
    count = (1ull << 62) + 1; /* count * 4 would wrap */
    memcpy(p + 16, &count, 8);
    assert_int_equal(gos_exec_builtin_ranges("fill", &c, r, &n), GOS_EINVAL);
    count = 1, a = 0x10002; /* misaligned */
    memcpy(p + 16, &count, 8), memcpy(p, &a, 8);
    assert_int_equal(gos_exec_builtin_ranges("fill", &c, r, &n), GOS_EINVAL);
    c.param_bytes = 16;
    assert_int_equal(gos_exec_builtin_ranges("fill", &c, r, &n), GOS_EINVAL);
    /* madd / mmul: three n x n float matrices; mmul's geometry */
    a = 0x10000;
    memcpy(p, &a, 8), memcpy(p + 8, &b, 8), memcpy(p + 16, &d, 8), memcpy(p + 24, &dim, 4);
    c.param_bytes = 28;
    assert_int_equal(gos_exec_builtin_ranges("madd", &c, r, &n), GOS_OK);
    assert_int_equal(n, 3);
    assert_true(r[0].ptr == a && r[1].ptr == b && r[2].ptr == d && r[2].bytes == 64 * 64 * 4);
    assert_int_equal(gos_exec_builtin_ranges("mmul", &c, r, &n), GOS_EINVAL); /* no geometry */
    c.grid[0] = c.grid[1] = 4, c.grid[2] = 1, c.block[0] = c.block[1] = 16, c.block[2] = 1;
    assert_int_equal(gos_exec_builtin_ranges("mmul", &c, r, &n), GOS_OK);
    c.grid[0] = 5; /* one column of blocks past the matrices */
    assert_int_equal(gos_exec_builtin_ranges("mmul", &c, r, &n), GOS_EINVAL);
    dim = UINT32_MAX; /* n^2 * 4 is over 2^64 */
    memcpy(p + 24, &dim, 4);
    assert_int_equal(gos_exec_builtin_ranges("madd", &c, r, &n), GOS_EINVAL);
    assert_int_equal(gos_exec_builtin_ranges("my_kernel", &c, r, &n), GOS_OK);
    assert_int_equal(n, -1);
    assert_true(gos_exec_builtin_known("fill") && !gos_exec_builtin_known("my_kernel"));
}

/* The one range rule (issue 40.1), over a table as the daemon's and the
 * executor's: [0x1000, +0x1000) writable, [0x3000, +0x1000) read-only,
 * [0x5000, +0x1000) swapped out. */
struct tab_ent {
    GOS_RANGE_HEAD;
    unsigned flags;
};
static const struct tab_ent tab[] = {
    {.dptr = 0x1000, .bytes = 0x1000},
    {.dptr = 0x3000, .bytes = 0x1000, .flags = GOS_RANGE_RO},
    {.dptr = 0x5000, .bytes = 0x1000, .flags = GOS_RANGE_SWAPPED},
};
static unsigned tab_look(void *ctx, uint64_t p, uint64_t n)
{
    (void)ctx;
    int i = gos_range_find(tab, 3, sizeof tab[0], p, n);
    return i < 0 ? 0 : GOS_RANGE_IN | tab[i].flags;
}

static void rule(int to_host, int dtod, uint64_t dptr, uint64_t dptr2, uint64_t n, int want, const char *says)
{
    int rc = gos_range_copy(to_host, dtod, dptr, dptr2, n, tab_look, NULL, 77);
    if (rc != want)
        fail_msg("copy 0x%llx <- 0x%llx + %llu: rc %d, wanted %d", (unsigned long long)dptr,
                 (unsigned long long)dptr2, (unsigned long long)n, rc, want);
    if (says && !strstr(gos_last_error(), says))
        fail_msg("message \"%s\" lacks \"%s\"", gos_last_error(), says);
}

static void test_rule(void **state)
{
    (void)state;
    rule(0, 0, 0x1000, 0, 0x1000, GOS_OK, NULL);                              /* HtoD into the whole allocation */
    rule(0, 0, 0x1800, 0, 0x801, GOS_EINVAL, "device range 0x1800+2049 is not inside"); /* one byte past */
    rule(0, 0, 0x3000, 0, 16, GOS_EPERM, "read-only attachment");             /* HtoD into a read-only one */
    rule(1, 0, 0x3000, 0, 16, GOS_OK, NULL);                                  /* DtoH out of it */
    rule(0, 1, 0x3000, 0x1000, 16, GOS_EPERM, "0x3000+16 is a read-only");    /* DtoD into it */
    rule(0, 1, 0x1000, 0x3000, 16, GOS_OK, NULL);                             /* DtoD out of it */
    rule(0, 1, 0x1000, 0x2000, 16, GOS_EINVAL, "source range 0x2000+16");     /* a source in no entry */
    rule(0, 0, 0x1000, 0x2000, 16, GOS_OK, NULL);                             /* no source unless DtoD */
    rule(0, 1, 0x1000, 0x1ff0, 32, GOS_EINVAL, "source range");               /* a source across two */
    rule(1, 0, 0x5000, 0, 16, 77, NULL);                                      /* swapped out: the caller's code */
    rule(0, 1, 0x1000, 0x5000, 16, 77, NULL);
    rule(0, 1, 0x2000, 0x5000, 16, GOS_EINVAL, "device range");               /* the destination first */
    rule(0, 0, 0x1000, 0, UINT64_MAX, GOS_EINVAL, "not inside");              /* a length that wraps */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
