/* SPDX-License-Identifier: Apache-2.0 */
/* test_numa.c: pillar 1b discovery against simulated chips whose truth is known.
 *
 * - tiers: Otsu threshold between two synthetic tiers; one tier is ambiguous;
 *   a double-peaked near tier (a lent H100's, issue 44) is one tier, on
 *   synthetic samples and through the discovery on a simulated chip, and an
 *   ambiguous first try is measured again;
 * - hash: the bit-flip rule on synthetic evidence, unclear evidence ambiguous;
 * - round trip: 40 random chips (random SM split, random in-page bits with
 *   granularity 256 B..64 KB, random physical bits above the 2 MB page, random
 *   latencies, jitter, seed): partitions (as a set partition) and in-page bits
 *   recovered exactly, and the parity map predicts the latency classification
 *   of a whole allocation (verification agreement);
 * - the placement API: partition_of is an O(1) XOR of page parity and in-page
 *   parity, consistent with gos_numa_classify on the same lines;
 * - refusals: overlapping tiers are ambiguous, more than two partitions are
 *   refused with a message, never a wrong answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/device.h"
#include "numa/numa.h"
#include "test_numa_gen.h"

#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_tiers_two(void **state)
{
    (void)state;
    gos_rng r;
    gos_rng_seed(&r, 5);
    uint32_t v[4000];
    for (int i = 0; i < 4000; i++)
        v[i] = (uint32_t)lround((i % 3 ? 500 : 680) * (1 + 0.03 * gos_rng_normal(&r)));
    v[7] = 3000; /* an interference outlier */
    v[8] = GOS_LAT_NONE;
    gos_tiers t;
    assert_int_equal(gos_tiers_find(v, 4000, &t), GOS_OK);
    assert_true(t.threshold > 540 && t.threshold < 640);
    assert_true(fabs(t.low - 500) < 5 && fabs(t.high - 680) < 7);
    assert_true(fabs(t.frac_low - 2.0 / 3) < 0.02);
    assert_true(t.n_outliers >= 1);
}

static void test_tiers_one_is_ambiguous(void **state)
{
    (void)state;
    gos_rng r;
    gos_rng_seed(&r, 6);
    uint32_t v[3000];
    for (int i = 0; i < 3000; i++)
        v[i] = (uint32_t)lround(500 * (1 + 0.03 * gos_rng_normal(&r)));
    gos_tiers t;
    assert_int_equal(gos_tiers_find(v, 3000, &t), GOS_EAMBIGUOUS);
    assert_true(strlen(gos_last_error()) > 10);
    uint32_t w[10] = {1, 2, 3};
    assert_int_equal(gos_tiers_find(w, 10, &t), GOS_EAMBIGUOUS);
}

/* Issue 44: a lent H100's near tier came in two sub-peaks (532-556 and 557-582
 * cycles) with the far tier ~180 cycles above; f2db5de's peak finder called the
 * sub-peaks two tiers and put the threshold between them (557-564 cycles), and
 * the chart failed. The threshold must land between the near and far tiers. */
static void fill_h100_like(uint32_t *v, int n, uint64_t seed)
{
    gos_rng r;
    gos_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        double base = i % 4 == 0 ? 544 : i % 4 == 1 ? 569 : 745; /* sub-peaks 25 apart */
        v[i] = (uint32_t)lround(base + 5 * gos_rng_normal(&r));
        if (gos_rng_uniform(&r) < 0.05) /* the slow tail */
            v[i] += 100 + (uint32_t)(600 * gos_rng_uniform(&r));
    }
}

static void test_double_peaked_near_tier(void **state)
{
    (void)state;
    enum { N = 16384 };
    static uint32_t v[N];
    for (uint64_t seed = 1; seed <= 20; seed++) {
        fill_h100_like(v, N, seed);
        gos_tiers_n t;
        assert_int_equal(gos_tiers_find_n(v, N, &t), GOS_OK);
        if (t.n != 2 || t.threshold[0] < 600 || t.threshold[0] > 720)
            fail_msg("seed %llu: %d tiers, first threshold %.0f (want 2 tiers split in 600..720)",
                     (unsigned long long)seed, t.n, t.threshold[0]);
        assert_true(fabs(t.median[0] - 556) < 10 && fabs(t.median[1] - 745) < 8);
        assert_true(fabs(t.fraction[0] - 0.5) < 0.03);
        gos_tiers two;
        assert_int_equal(gos_tiers_find(v, N, &two), GOS_OK);
        assert_true(two.threshold > 600 && two.threshold < 720);
    }
    /* The other side of the rule: real tiers as close as tests/partgen.h's
     * MI300X-shaped chips draw them (833 and 907 cycles, 8.9 % apart) stay
     * two tiers. */
    gos_rng r;
    gos_rng_seed(&r, 9);
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)lround((i % 16 == 0 ? 707 : i % 16 == 1 ? 833 : 907) * (1 + 0.01 * gos_rng_normal(&r)));
    gos_tiers_n t;
    assert_int_equal(gos_tiers_find_n(v, N, &t), GOS_OK);
    assert_int_equal(t.n, 3);
    assert_true(fabs(t.median[1] - 833) < 6 && fabs(t.median[2] - 907) < 6);
}

static void test_hash_rule(void **state)
{
    (void)state;
    enum { NB = 14, K = 10 };
    signed char near[K], fl[NB * K];
    uint32_t truth = (1u << 9) | (1u << 14) | (1u << 20), mask = 0;
    double frac[GOS_HASH_HI + 1];
    for (int k = 0; k < K; k++) {
        near[k] = (signed char)(k & 1);
        for (int b = GOS_HASH_LO; b <= GOS_HASH_HI; b++)
            fl[(b - GOS_HASH_LO) * K + k] = (signed char)(near[k] ^ (truth >> b & 1));
    }
    fl[(14 - GOS_HASH_LO) * K + 3] ^= 1; /* one misclassified pair: still clear */
    assert_int_equal(gos_hash_from_flips(near, fl, K, &mask, frac), GOS_OK);
    assert_int_equal(mask, truth);
    assert_true(fabs(frac[14] - 0.9) < 1e-9);
    for (int k = 0; k < K / 2; k++) /* bit 11 changes in half the pairs */
        fl[(11 - GOS_HASH_LO) * K + k] ^= 1;
    assert_int_equal(gos_hash_from_flips(near, fl, K, &mask, frac), GOS_EAMBIGUOUS);
    assert_non_null(strstr(gos_last_error(), "bit 11"));
}

/* Same set partition, whatever the numbering of the partitions. */
static int same_split(const gos_chip *c, const numa_truth *t)
{
    if (c->n_parts != 2)
        return 0;
    int label[256];
    for (int s = 0; s < t->sm_count; s++)
        label[s] = -1;
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < c->parts[p].n_sms; i++)
            label[c->parts[p].sms[i]] = p;
    int flip = label[0] != t->part_of[0];
    for (int s = 0; s < t->sm_count; s++)
        if (label[s] < 0 || (label[s] ^ flip) != t->part_of[s])
            return 0;
    return 1;
}

static void test_random_chips_round_trip(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        numa_truth t;
        json_t *doc = numa_gen(seed, &t);
        const char *path = numa_gen_file(doc);
        json_decref(doc);
        gos_device *d = NULL;
        assert_int_equal(gos_sim_open(path, &d), GOS_OK);
        gos_numa_opts o;
        gos_numa_opts_default(&o);
        gos_numa_model m;
        int rc = gos_numa_discover(d, &o, &m);
        if (rc)
            fail_msg("chip %llu: %s", (unsigned long long)seed, gos_last_error());
        gos_chip *c = gos_chip_new();
        c->device.sm_count = t.sm_count;
        assert_int_equal(gos_numa_model_to_chip(&m, c), GOS_OK);
        if (!same_split(c, &t))
            fail_msg("chip %llu: partitions not recovered", (unsigned long long)seed);
        assert_int_equal(c->n_in_page_bits, t.n_in_page);
        for (int i = 0; i < t.n_in_page; i++)
            assert_int_equal(c->in_page_bits[i], t.in_page[i]);
        assert_int_equal(c->hash_granularity, 1ull << t.in_page[0]);
        assert_int_equal(m.n_ambiguous, 0);
        assert_int_equal(gos_chip_validate(c, "probe"), GOS_OK);
        /* Every 4 KB unit of 256 MB, predicted from one parity per 2 MB page. */
        gos_numa_verify v;
        assert_int_equal(gos_numa_verify_run(d, &m, 256ull << 20, 2, &v), GOS_OK);
        if (v.agreement < 0.995)
            fail_msg("chip %llu: verification agreement %.4f", (unsigned long long)seed, v.agreement);
        assert_int_equal(v.units, (256ull << 20) / 4096);
        /* Disagreements are noise: probed again carefully, they match. */
        assert_true(v.resolved <= v.reprobed && v.agreement_after > 0.9995);
        gos_chip_free(c);
        gos_numa_model_free(&m);
        gos_device_close(d);
        unlink(path);
    }
}

/* Every HBM histogram committed from a real H200 (results/, 21 of them, 4-cycle
 * bins, samples at the bin centres): the first tier is the whole near tier
 * (40-47 % of the lines), the second the far tier ~180 cycles above, the first
 * threshold between them. Seven have the near tier in two sub-peaks 20-27
 * cycles apart, as the lent H100 of issue 44; f2db5de failed all seven: two
 * split into tiers of 20 % and 23 %, five came out as one tier of 90 %. */
static void test_committed_histograms(void **state)
{
    (void)state;
    glob_t g;
    assert_int_equal(glob("results/*/*.json", 0, NULL, &g), 0);
    int seen = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        json_t *r = json_load_file(g.gl_pathv[f], 0, NULL);
        json_t *h = json_object_get(json_object_get(r, "numa"), "hbm_histogram");
        json_t *counts = json_object_get(h, "counts"), *c;
        int bin = (int)json_integer_value(json_object_get(h, "bin_cycles"));
        int start = (int)json_integer_value(json_object_get(h, "start")), n = 0, k = 0;
        size_t i;
        json_array_foreach(counts, i, c) n += (int)json_integer_value(c);
        uint32_t *v = malloc((n ? n : 1) * sizeof *v);
        json_array_foreach(counts, i, c) for (json_int_t j = 0; j < json_integer_value(c); j++) v[k++] =
            (uint32_t)(start + (int)i * bin + bin / 2);
        gos_tiers_n t;
        if (n >= 10000) {
            seen++;
            assert_int_equal(gos_tiers_find_n(v, n, &t), GOS_OK);
            if (t.n < 2 || t.fraction[0] < 0.40 || t.fraction[0] > 0.47 || t.median[1] - t.median[0] < 150 ||
                t.threshold[0] < t.median[0] + 50 || t.threshold[0] > t.median[1] - 50)
                fail_msg("%s: %d tiers, first %.0f (%.0f %%), second %.0f, threshold %.0f", g.gl_pathv[f], t.n,
                         t.median[0], 100 * t.fraction[0], t.median[1], t.threshold[0]);
        }
        free(v);
        json_decref(r);
    }
    globfree(&g);
    assert_true(seen >= 20);
}

/* The same shape on the simulated device (sim.mem.near_split_cycles): the whole
 * discovery finds the two partitions at the first try; a first histogram that
 * is a blur (sim.mem.noisy_latency_calls) is measured again and says so; two
 * blurred tries fail with both reasons in one line. */
static void test_double_peaked_discovery(void **state)
{
    (void)state;
    for (int noisy = 0; noisy <= 2; noisy++) {
        numa_truth t;
        json_t *doc = numa_gen(44 + noisy, &t);
        json_t *lat = json_object_get(json_object_get(doc, "numa"), "latency_cycles");
        json_object_set_new(lat, "hbm_local", json_real(557));
        json_object_set_new(lat, "hbm_remote", json_real(745));
        json_t *sim = json_object_get(doc, "sim");
        json_object_set_new(sim, "jitter", json_real(0.009));
        json_object_set_new(json_object_get(sim, "mem"), "near_split_cycles", json_real(25));
        json_object_set_new(json_object_get(sim, "mem"), "noisy_latency_calls", json_integer(noisy));
        gos_device *d = numa_gen_open(doc);
        assert_non_null(d);
        gos_numa_opts o;
        gos_numa_opts_default(&o);
        gos_numa_model m;
        int rc = gos_numa_discover(d, &o, &m);
        if (noisy == 2) {
            assert_int_equal(rc, GOS_EAMBIGUOUS);
            assert_non_null(strstr(gos_last_error(), "measured twice; the first try:"));
            assert_null(strchr(gos_last_error(), '\n'));
        } else {
            if (rc)
                fail_msg("noisy %d: %s", noisy, gos_last_error());
            assert_int_equal(m.multi, 0);
            assert_true(m.tiers.threshold > 600 && m.tiers.threshold < 720);
            assert_int_equal(m.remeasured, noisy);
            assert_int_equal(m.n_hist, noisy ? 2 * o.hist_samples : o.hist_samples);
            if (noisy)
                assert_non_null(strstr(m.first_try, "overlap"));
            gos_chip *c = gos_chip_new();
            c->device.sm_count = t.sm_count;
            assert_int_equal(gos_numa_model_to_chip(&m, c), GOS_OK);
            assert_true(same_split(c, &t));
            assert_int_equal((int)c->n_in_page_bits, t.n_in_page);
            gos_chip_free(c);
        }
        gos_numa_model_free(&m);
        gos_device_close(d);
    }
}

static void test_map_api(void **state)
{
    (void)state;
    numa_truth t;
    json_t *doc = numa_gen(77, &t);
    const char *path = numa_gen_file(doc);
    json_decref(doc);
    gos_device *d = NULL;
    assert_int_equal(gos_sim_open(path, &d), GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    gos_numa_model m;
    assert_int_equal(gos_numa_discover(d, &o, &m), GOS_OK);
    gos_mem_buf *b;
    assert_int_equal(gos_mem_alloc(d, 64ull << 20, &b), GOS_OK);
    gos_numa_map *map;
    assert_int_equal(gos_numa_map_build(d, &m, b, &map), GOS_OK);
    assert_int_equal(map->n_pages2m, 32);
    assert_int_equal(map->n_unknown, 0);
    /* O(1) rule: flipping an in-page hash bit flips the partition, other bits don't. */
    for (uint64_t off = 0; off < b->bytes; off += 3 * 4096 + 128) {
        int p = gos_numa_partition_of(map, off);
        assert_true(p == 0 || p == 1);
        uint64_t g = 1ull << t.in_page[0];
        assert_int_equal(gos_numa_partition_of(map, off ^ g), 1 - p);
        if (g > 128)
            assert_int_equal(gos_numa_partition_of(map, off ^ (g >> 1)), p);
    }
    assert_int_equal(gos_numa_partition_of(map, b->bytes), -1);
    /* The prediction matches what the SMs measure, line by line. */
    int sms[GOS_MAX_SMS], ns = gos_numa_probers(&m, sms), agree = 0, n = 4096;
    uint32_t *s = malloc(n * sizeof *s);
    assert_int_equal(gos_mem_sweep(d, sms, ns, b->base, (uint64_t)n, 16384, 3, s), GOS_OK);
    for (int i = 0; i < n; i++)
        agree += gos_numa_classify(&m, s[i]) == gos_numa_partition_of(map, gos_sweep_offset(i, 16384));
    assert_true(agree >= n * 0.995);
    free(s);
    /* A model rebuilt from the chart predicts the same. */
    gos_chip *c = gos_chip_new();
    c->device.sm_count = t.sm_count;
    gos_numa_model_to_chip(&m, c);
    gos_numa_model m2;
    assert_int_equal(gos_numa_model_from_chip(c, &m2), GOS_OK);
    assert_int_equal(m2.in_page_mask, m.in_page_mask);
    for (int i = 0; i < t.sm_count; i++)
        assert_int_equal(m2.part_of[i], m.part_of[i]);
    gos_chip_free(c);
    gos_numa_map_free(map);
    gos_mem_free(d, b);
    gos_numa_model_free(&m);
    gos_device_close(d);
    unlink(path);
}

static void test_overlapping_tiers_ambiguous(void **state)
{
    (void)state;
    json_t *doc = numa_gen(3, NULL);
    json_t *lat = json_object_get(json_object_get(doc, "numa"), "latency_cycles");
    json_object_set_new(lat, "hbm_local", json_real(500));
    json_object_set_new(lat, "hbm_remote", json_real(506));
    json_object_set_new(json_object_get(doc, "sim"), "jitter", json_real(0.05));
    const char *path = numa_gen_file(doc);
    json_decref(doc);
    gos_device *d = NULL;
    assert_int_equal(gos_sim_open(path, &d), GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    gos_numa_model m;
    assert_int_equal(gos_numa_discover(d, &o, &m), GOS_EAMBIGUOUS);
    gos_numa_model_free(&m);
    gos_device_close(d);
    unlink(path);
}

static void test_three_partitions_refused(void **state)
{
    (void)state;
    numa_truth t;
    json_t *doc = numa_gen(4, &t);
    json_t *parts = json_object_get(json_object_get(doc, "numa"), "partitions");
    json_t *p1 = json_object_get(json_array_get(parts, 1), "sms");
    json_t *moved = json_array();
    json_array_append(moved, json_array_get(p1, 0));
    json_array_remove(p1, 0);
    json_array_append_new(parts, json_pack("{s:o}", "sms", moved));
    const char *path = numa_gen_file(doc);
    json_decref(doc);
    gos_device *d = NULL;
    assert_int_equal(gos_sim_open(path, &d), GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    gos_numa_model m;
    assert_int_equal(gos_numa_discover(d, &o, &m), GOS_EUNSUPPORTED);
    assert_non_null(strstr(gos_last_error(), "partitions"));
    gos_numa_model_free(&m);
    gos_device_close(d);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiers_two),
        cmocka_unit_test(test_tiers_one_is_ambiguous),
        cmocka_unit_test(test_double_peaked_near_tier),
        cmocka_unit_test(test_double_peaked_discovery),
        cmocka_unit_test(test_committed_histograms),
        cmocka_unit_test(test_hash_rule),
        cmocka_unit_test(test_random_chips_round_trip),
        cmocka_unit_test(test_map_api),
        cmocka_unit_test(test_overlapping_tiers_ambiguous),
        cmocka_unit_test(test_three_partitions_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
