/* SPDX-License-Identifier: Apache-2.0 */
/* test_pd_plan.c: the prefill/decode multiplexing plan (src/place/pdplan.h,
 * issue 45) on simulated chips whose truth is known: the H200-shaped default
 * chip (two partitions), B200-shaped chips of four partitions and an
 * MI300X-shaped one of sixteen (tests/partgen.h, seed from /dev/urandom,
 * printed; PD_SEED replays). Every
 * property is recomputed from the chip's truth, never from the allocator:
 *
 * - every placement gives both phases the same SM counts (gos_pd_fit), the two
 *   sets disjoint, at least the asked sizes;
 * - cluster-aware and partition-aware sets run clusters of 8 on every SM (by the
 *   chip's GPCs and cluster-eligible SMs);
 * - partition-aware: each phase's SMs all in one partition, the two phases in
 *   different ones; the decode runtime (idle list = SMs outside its set) queues
 *   every task on its own partition, and every KV page slot the decode plan
 *   hands out (bench/attn_plan.h's pool assignment) lies in memory near the
 *   decode SMs by the simulated chip's physical hash (two partitions; the
 *   bench's layout of two layers in one pool, attn_assign_layers), or the
 *   decode partition's view is entirely in that partition (four, sixteen);
 * - the layered pool for any queue split: a bijection whose view-0 slots are
 *   exactly queue 0's pages;
 * - cluster-aware: the decode tasks are queued by the set's SMs per partition;
 * - refusals: sets that cannot fit, a chart without partitions, bad requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/device.h"
#include "device/place_ops.h"
#include "fixtures.h"
#include "partgen.h"
#include "place/pdplan.h"
#include "place/place.h"

#include "../bench/attn_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed;
static const gos_pd_req REQ = {.sms = {64, 56}, .cluster = 8};

/* Clusters of 8 that the SMs in[] can run at once, by the chip's truth. */
static int truth_clusters8(const gos_chip *c, const unsigned char *in)
{
    int n = 0;
    for (int g = 0; g < c->n_gpcs; g++) {
        int e = 0;
        for (int i = 0; i < c->gpcs[g].n_cluster; i++)
            e += in[c->gpcs[g].cluster_sms[i]];
        n += e / 8;
    }
    return n;
}

static int part_of(const gos_chip *c, int sm)
{
    for (int p = 0; p < c->n_parts; p++)
        for (int i = 0; i < c->parts[p].n_sms; i++)
            if (c->parts[p].sms[i] == sm)
                return p;
    return -1;
}

/* The sets' shape by the truth; returns the one partition of phase ph's set or -1. */
static int check_set(const gos_chip *c, const gos_pd_plan *pl, int ph, int want, unsigned char *seen)
{
    const gos_smset *s = &pl->set[ph];
    assert_true(s->n_sms >= want); /* a union of whole green-context groups */
    unsigned char in[GOS_MAX_SMS] = {0};
    int part = part_of(c, s->sms[0]);
    for (int i = 0; i < s->n_sms; i++) {
        assert_false(seen[s->sms[i]]); /* the two phases never share an SM */
        seen[s->sms[i]] = in[s->sms[i]] = 1;
        if (part_of(c, s->sms[i]) != part)
            part = -1;
    }
    if (pl->kind != GOS_PD_CLUSTER_MISMATCHED && truth_clusters8(c, in) * 8 < s->n_sms)
        fail_msg("seed %llu: %s %s set of %d SMs runs only %d clusters of 8", (unsigned long long)g_seed,
                 gos_pd_kind_name(pl->kind), ph ? "decode" : "prefill", s->n_sms, truth_clusters8(c, in));
    return part;
}

/* The decode phase's runtime table: every task on a queue of a partition its set
 * covers, in proportion to its SMs there. */
static void decode_table(gos_pmem *pm, const gos_chip *c, const gos_pd_plan *pl, uint32_t n_tasks, gos_prt_table *t)
{
    int idle[GOS_MAX_SMS], sms = c->device.sm_count;
    int n_idle = gos_pd_idle(pl, GOS_PD_DECODE, sms, idle);
    assert_int_equal(n_idle, sms - pl->set[1].n_sms);
    assert_int_equal(gos_pmem_runtime(pm, idle, n_idle, n_tasks, GOS_PMEM_SPLIT_SMS, t), GOS_OK);
    int per_part[32] = {0};
    for (int i = 0; i < pl->set[1].n_sms; i++)
        per_part[part_of(c, pl->set[1].sms[i])]++;
    uint32_t sum = 0;
    for (int p = 0; p < c->n_parts; p++) {
        sum += t->count[p];
        if (!per_part[p])
            assert_int_equal(t->count[p], 0);
        else /* SPLIT_SMS: within one task of the SM share */
            assert_true(llabs((long long)t->count[p] * pl->set[1].n_sms - (long long)n_tasks * per_part[p]) <=
                        pl->set[1].n_sms);
    }
    assert_int_equal(sum, n_tasks);
}

/* Two partitions: the decode plan's pages of two layers in one pool, as
 * bench/pd_multiplex lays them out (attn_assign_layers): a bijection onto the
 * pool's slots, all of them in the decode partition's view, and every K and V
 * block, remapped on the host, near the decode SMs by the simulated chip's
 * physical frames and hash. */
static void check_pages_local(gos_pmem *pm, gos_device *d, const gos_pd_plan *pl, const gos_prt_table *t)
{
    attn_plan P = {0};
    assert_int_equal(attn_plan_make(&P, 16, 8, 512, (uint32_t)pl->set[1].n_sms), 0); /* 2 x 16 MB of pages */
    const uint32_t layers = 2, n = layers * P.n_kv * P.pages;
    uint32_t *pt = malloc(sizeof *pt * n);
    uint8_t *seen = calloc(n, 1);
    int64_t n0 = attn_assign_layers(&P, t->count[0], layers, 45, pt);
    const int pd = pl->part[GOS_PD_DECODE];
    assert_int_equal(n0, pd == 0 ? (int64_t)n : 0); /* one pool: the decode partition's */
    for (uint32_t i = 0; i < n; i++) {
        assert_true(pt[i] < n && !seen[pt[i]]);
        seen[pt[i]] = 1;
    }
    gos_pmem_view v;
    assert_int_equal(gos_pmem_get_view(pm, pd, &v), GOS_OK);
    uint64_t np = gos_pmem_buffer(pm)->bytes / GOS_PAGE_2M, meta = v.parity;
    uint8_t *par = malloc(np);
    assert_int_equal(gos_place_copy_units(d, 0, &meta, 1, (uint32_t)np, par), GOS_OK);
    v.parity = (uint64_t)(uintptr_t)par;
    uint64_t *addr = malloc(sizeof *addr * 2 * n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = pt[i] - (pd == 0 ? 0 : (uint32_t)n0); /* attn_kernel.cuh's slot_addr */
        for (int kv = 0; kv < 2; kv++) /* the K block, then the V block: 4 KB each */
            addr[2 * i + kv] = gos_pmem_addr(&v, (uint64_t)slot * ATTN_SLOT + (uint64_t)kv * ATTN_UNIT);
    }
    uint8_t *remote = malloc(2 * n);
    if (gos_place_truth(d, addr, 2ull * n, pl->set[1].sms[0], remote))
        fail_msg("truth: %s", gos_last_error());
    uint64_t bad = 0;
    for (uint32_t i = 0; i < 2 * n; i++)
        bad += remote[i];
    if (bad)
        fail_msg("%llu of %u KV blocks of the decode plan are remote from its SMs", (unsigned long long)bad, 2 * n);
    free(remote);
    free(addr);
    free(par);
    free(seen);
    free(pt);
}

/* Any split of the tasks between the queues (cluster-aware decode sets straddle
 * both partitions): attn_assign_layers' pool-0 slots are exactly the pages of
 * queue 0's tasks in every layer, below the returned count. */
static void test_layered_pools(void **state)
{
    (void)state;
    attn_plan P = {0};
    assert_int_equal(attn_plan_make(&P, 8, 8, 700, 56), 0);
    const uint32_t layers = 3, per = P.n_kv * P.pages, n = layers * per;
    uint32_t *pt = malloc(sizeof *pt * n);
    uint8_t *seen = calloc(n, 1);
    const uint32_t c0 = P.n_tasks / 3;
    int64_t n0 = attn_assign_layers(&P, c0, layers, 7, pt);
    assert_int_equal(n0, (int64_t)layers * attn_pool0_pages(&P, c0));
    for (uint32_t l = 0; l < layers; l++)
        for (uint32_t task = 0; task < P.n_tasks; task++) {
            uint32_t a, b, bh = attn_task_pages(&P, task, &a, &b);
            for (uint32_t pg = a; pg < b; pg++) {
                uint32_t g = pt[l * per + bh * P.pages + pg];
                assert_true(g < n && !seen[g]);
                seen[g] = 1;
                assert_int_equal(g < (uint32_t)n0, task < c0);
            }
        }
    free(seen);
    free(pt);
}

/* One chip: fit, then every placement's sets and the decode phase's pages. */
static void check_chip(gos_device *d, int want_parts)
{
    const gos_chip *c = d->chip;
    assert_int_equal(c->n_parts, want_parts);
    gos_smset_pool *pool;
    if (gos_smset_pool_open(d, c, &pool))
        fail_msg("pool: %s", gos_last_error());
    gos_pd_req fit;
    if (gos_pd_fit(pool, &REQ, &fit))
        fail_msg("seed %llu: fit: %s", (unsigned long long)g_seed, gos_last_error());
    assert_int_equal((REQ.sms[0] - fit.sms[0]) % 8, 0);
    assert_int_equal((REQ.sms[1] - fit.sms[1]) % 8, 0);
    /* 8 more SMs for either phase would not fit every placement */
    for (int ph = 0; ph < 2; ph++) {
        gos_pd_req more = fit;
        more.sms[ph] += 8;
        gos_pd_plan pl;
        int all = more.sms[ph] <= REQ.sms[ph];
        for (int k = 0; all && k < GOS_PD_KINDS; k++)
            if ((all = !gos_pd_plan_make(pool, &more, (gos_pd_kind)k, &pl)))
                gos_pd_release(pool, &pl);
        assert_false(all);
    }
    gos_pmem *pm;
    if (gos_pmem_create(d, c, 64ull << 20, &pm))
        fail_msg("pmem: %s", gos_last_error());
    for (int k = 0; k < GOS_PD_KINDS; k++) {
        gos_pd_plan pl;
        if (gos_pd_plan_make(pool, &fit, (gos_pd_kind)k, &pl))
            fail_msg("seed %llu: %s: %s", (unsigned long long)g_seed, gos_pd_kind_name(k), gos_last_error());
        unsigned char seen[GOS_MAX_SMS] = {0};
        int pp = check_set(c, &pl, 0, fit.sms[0], seen), pd = check_set(c, &pl, 1, fit.sms[1], seen);
        gos_prt_table t;
        decode_table(pm, c, &pl, 1024 * 4, &t);
        if (k == GOS_PD_PARTITION_AWARE) {
            assert_true(pp >= 0 && pd >= 0 && pp != pd);
            assert_int_equal(pl.part[0], pp);
            assert_int_equal(pl.part[1], pd);
            assert_int_equal(t.count[pd], 1024 * 4); /* every decode task on its own partition */
            if (want_parts == 2)
                check_pages_local(pm, d, &pl, &t);
            uint64_t units, in;
            assert_int_equal(gos_pmem_truth_part(pm, pd, &units, &in), GOS_OK);
            assert_true(units > 0 && in == units);
        } else {
            assert_int_equal(pl.part[0], -1);
            assert_int_equal(pl.part[1], -1);
        }
        gos_pd_release(pool, &pl);
    }
    gos_pmem_close(pm);
    gos_smset_pool_free(pool);
}

static void test_default_chip(void **state)
{
    (void)state;
    gos_device *d;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    assert_int_equal(gos_device_open(&spec, &d), GOS_OK);
    check_chip(d, 2);
    /* the H200-shaped chip: a partition runs at most 7 clusters of 8 (56 SMs), so
     * the paper's 64 + 56 become 56 + 56 */
    gos_smset_pool *pool;
    assert_int_equal(gos_smset_pool_open(d, d->chip, &pool), GOS_OK);
    gos_pd_req fit;
    assert_int_equal(gos_pd_fit(pool, &REQ, &fit), GOS_OK);
    assert_int_equal(fit.sms[0], 56);
    assert_int_equal(fit.sms[1], 56);
    /* refusals: too many SMs, bad requests */
    gos_pd_plan pl;
    gos_pd_req big = {.sms = {120, 64}, .cluster = 8};
    assert_int_equal(gos_pd_plan_make(pool, &big, GOS_PD_CLUSTER_AWARE, &pl), GOS_ENOMEM);
    assert_non_null(strstr(gos_last_error(), "cluster-aware placement: cannot place"));
    big.sms[0] = 8;
    big.sms[1] = 200; /* lowered to what one partition runs at cluster 8 */
    assert_int_equal(gos_pd_fit(pool, &big, &fit), GOS_OK);
    assert_int_equal(fit.sms[0], 8);
    assert_int_equal(fit.sms[1], 56);
    big.cluster = 16; /* past the green contexts' co-scheduling alignment */
    assert_int_equal(gos_pd_fit(pool, &big, &fit), GOS_ENOMEM);
    assert_non_null(strstr(gos_last_error(), "clusters of 16"));
    gos_pd_req bad[] = {{{0, 8}, 8}, {{8, 8}, 1}, {{8, 8}, 17}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(gos_pd_plan_make(pool, &bad[i], GOS_PD_CLUSTER_AWARE, &pl), GOS_EINVAL);
    assert_int_equal(gos_pd_plan_make(pool, &REQ, (gos_pd_kind)3, &pl), GOS_EINVAL);
    assert_null(gos_pd_kind_name(3));
    gos_smset_pool_free(pool);
    /* a chart without a numa section: no partition-aware placement */
    gos_chip *flat;
    assert_int_equal(gos_chip_parse(gos_chip_default_json(), "flat", &flat), GOS_OK);
    flat->n_parts = 0;
    assert_int_equal(gos_smset_pool_open(d, flat, &pool), GOS_OK);
    assert_int_equal(gos_pd_plan_make(pool, &REQ, GOS_PD_PARTITION_AWARE, &pl), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "two or more memory partitions"));
    gos_smset_pool_free(pool);
    gos_chip_free(flat);
    gos_device_close(d);
}

static void test_more_partitions(void **state)
{
    (void)state;
    for (int k = 0; k < 4; k++) {
        json_t *doc = k < 3 ? partgen_b200_split(g_seed + (uint64_t)k, 1, NULL) : partgen_mi300x(g_seed, NULL);
        gos_device *d;
        assert_int_equal(fx_open_json(doc, &d), GOS_OK);
        json_decref(doc);
        check_chip(d, k < 3 ? 4 : 16);
        gos_device_close(d);
    }
}

int main(void)
{
    g_seed = partgen_seed("test_pd_plan", "PD_SEED");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_chip),
        cmocka_unit_test(test_more_partitions),
        cmocka_unit_test(test_layered_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
