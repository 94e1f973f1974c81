/* SPDX-License-Identifier: Apache-2.0 */
/* test_attn_plan.c: the decode-attention benchmark's plan (bench/attn_plan.h),
 * on the CPU:
 *   - split-K: pages per split a power of two times the block's 4 warps, at most
 *     128, the cheapest by the plan's cost model, at most 256 splits per head; the
 *     tasks cover every (sequence, head, page) exactly once;
 *   - pages: with the runtime's queue split (gos_prt_split, by SM count, equal
 *     and unequal partitions), the page table is a bijection onto the slots and
 *     every page of partition p's tasks is in pool p (what makes the reads local);
 *   - the data generator: pinned values (bench/attn_decode_ref.py reproduces them
 *     bit for bit) and exact bf16 values;
 *   - shapes it cannot plan are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../bench/attn_plan.h"
#include "gpuos/pmem_core.h"

#include <string.h>

static void check_shape(uint32_t batch, uint32_t heads, uint32_t ctx, uint32_t sms, const uint32_t w[2])
{
    attn_plan p = {0};
    assert_int_equal(attn_plan_make(&p, batch, heads, ctx, sms), 0);
    assert_int_equal(p.pages, (ctx + 15) / 16);
    assert_int_equal(p.pps % ATTN_WARPS, 0);
    assert_true(p.pps >= ATTN_WARPS && p.pps <= ATTN_MAX_PPS);
    assert_true((uint64_t)p.splits * p.pps >= p.pages && (uint64_t)(p.splits - 1) * p.pps < p.pages);
    assert_true(p.splits <= ATTN_MAX_SPLITS);
    assert_int_equal(p.n_tasks, batch * heads * p.splits);
    assert_true((p.pps & (p.pps - 1)) == 0); /* with ATTN_WARPS a power of two */
    /* the cheapest split size by the cost model among the allowed ones */
    for (uint32_t pps = ATTN_WARPS; pps <= ATTN_MAX_PPS; pps *= 2)
        if ((p.pages + pps - 1) / pps <= ATTN_MAX_SPLITS)
            assert_true(attn_plan_cost(p.n_kv, p.pages, p.pps, sms * ATTN_BLOCKS_PER_SM) <=
                        attn_plan_cost(p.n_kv, p.pages, pps, sms * ATTN_BLOCKS_PER_SM));

    uint32_t n = p.n_kv * p.pages;
    uint8_t *seen = calloc(n, 1);
    for (uint32_t t = 0; t < p.n_tasks; t++) {
        uint32_t a, b, bh = attn_task_pages(&p, t, &a, &b);
        assert_true(bh < p.n_kv && a < b && b <= p.pages && b - a <= p.pps);
        for (uint32_t pg = a; pg < b; pg++)
            seen[(uint64_t)bh * p.pages + pg]++;
    }
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(seen[i], 1);

    gos_prt_table tb;
    memset(&tb, 0, sizeof tb);
    gos_prt_split(&tb, p.n_tasks, w);
    uint32_t c0 = tb.count[0];
    uint32_t *pt = malloc(sizeof *pt * n);
    int64_t n0 = attn_assign_pages(&p, c0, 12345, pt);
    assert_true(n0 >= 0 && n0 <= n);
    assert_int_equal(n0, attn_pool0_pages(&p, c0));
    memset(seen, 0, n);
    for (uint32_t t = 0; t < p.n_tasks; t++) {
        uint32_t a, b, bh = attn_task_pages(&p, t, &a, &b);
        for (uint32_t pg = a; pg < b; pg++) {
            uint32_t s = pt[(uint64_t)bh * p.pages + pg];
            assert_true(s < n);
            if (t < c0)
                assert_true(s < n0);
            else
                assert_true(s >= n0);
            seen[s]++;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(seen[i], 1);
    /* shuffled, not handed out in order (where a pool has a few pages) */
    if (n0 >= 64) {
        uint32_t in_order = 0;
        for (uint32_t i = 0; i < 64; i++)
            in_order += pt[i] == i;
        assert_true(in_order < 16);
    }
    free(pt);
    free(seen);
}

static void test_plan(void **state)
{
    (void)state;
    const uint32_t eq[2] = {66, 66}, uneq[2] = {66, 58}, one[2] = {132, 0};
    const uint32_t batches[] = {1, 3, 8, 32, 128}, ctxs[] = {1, 15, 16, 1000, 1024, 8192, 32768};
    for (size_t i = 0; i < sizeof batches / sizeof *batches; i++)
        for (size_t j = 0; j < sizeof ctxs / sizeof *ctxs; j++) {
            if (batches[i] == 128 && ctxs[j] == 32768)
                continue; /* 2M pages: below, once */
            check_shape(batches[i], 8, ctxs[j], 132, eq);
            check_shape(batches[i], 8, ctxs[j], 124, uneq);
            check_shape(batches[i], 1, ctxs[j], 132, one);
        }
    check_shape(128, 8, 32768, 132, eq);
    /* the benchmark's shapes on a 132-SM H200: the splits it will use */
    attn_plan p = {0};
    attn_plan_make(&p, 1, 8, 1024, 132);
    assert_int_equal(p.pps, 4);
    assert_int_equal(p.n_tasks, 128);
    attn_plan_make(&p, 1, 8, 8192, 132);
    assert_int_equal(p.pps, 16);
    assert_int_equal(p.n_tasks, 256);
    attn_plan_make(&p, 8, 8, 8192, 132);
    assert_int_equal(p.pps, 128);
    assert_int_equal(p.n_tasks, 256);
    attn_plan_make(&p, 128, 8, 32768, 132);
    assert_int_equal(p.pps, 128);
    assert_int_equal(p.n_tasks, 16384);
}

static void test_generator(void **state)
{
    (void)state;
    /* pinned: a change here must change bench/attn_decode_ref.py the same way */
    assert_int_equal(attn_hash(0, ATTN_SALT_Q), 55);
    assert_int_equal(attn_hash(0, ATTN_SALT_K), -124);
    assert_int_equal(attn_hash(0, ATTN_SALT_V), 115);
    int lo = 0, hi = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        int m = attn_hash(i * 7919 + (i << 33), ATTN_SALT_K);
        assert_true(m >= -127 && m <= 127);
        lo += m == -127;
        hi += m == 127;
    }
    assert_true(lo > 100 && hi > 100);
    for (int m = -127; m <= 127; m++)
        for (int shift = 5; shift <= 7; shift += 2) {
            union {
                uint32_t u;
                float f;
            } v = {.u = (uint32_t)attn_bf16_bits(m, shift) << 16};
            assert_true(v.f == (float)m / (float)(1 << shift)); /* exact in bf16 */
        }
    assert_true(attn_kv_index(0, 0, 1, 0, 8) == ATTN_D);
    assert_true(attn_kv_index(0, 1, 0, 0, 8) == (uint64_t)ATTN_MAXCTX * ATTN_D);
}

static void test_refused(void **state)
{
    (void)state;
    attn_plan p = {0};
    assert_int_equal(attn_plan_make(&p, 0, 8, 1024, 132), -1);
    assert_int_equal(attn_plan_make(&p, 1, 0, 1024, 132), -1);
    assert_int_equal(attn_plan_make(&p, 1, 8, 0, 132), -1);
    assert_int_equal(attn_plan_make(&p, 1, 8, 1024, 0), -1);
    assert_int_equal(attn_plan_make(&p, 1, 8, ATTN_MAXCTX + 1, 132), -1);
    assert_int_equal(attn_plan_make(&p, 4096, 64, ATTN_MAXCTX, 132), -1); /* slot ids past 31 bits */
    /* one long sequence: splits grow to stay within 256 per head, then it is refused */
    assert_int_equal(attn_plan_make(&p, 1, 1, 262144, 132), 0);
    assert_true(p.splits <= ATTN_MAX_SPLITS && p.pps >= 64);
    assert_int_equal(attn_plan_make(&p, 1, 1, ATTN_MAX_SPLITS * ATTN_MAX_PPS * ATTN_PAGE, 132), 0);
    assert_int_equal(attn_plan_make(&p, 1, 1, ATTN_MAX_SPLITS * ATTN_MAX_PPS * ATTN_PAGE + 1, 132), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_generator),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
