/* SPDX-License-Identifier: Apache-2.0 */
/* test_topology.c: pillar 1a against simulated chips whose truth is known.
 * Round trip for many random valid chips (6..8 GPCs of 8..20 SMs, random
 * numbering, 0..8 free-floating SMs), the default chip, the paper's known
 * configurations, and the ambiguity report when the signal is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/topo_ops.h"
#include "topology/topology.h"
#include "chipgen.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t current_seed;

static void round_trip(json_t *doc, int expect_unambiguous)
{
    gos_device *d;
    gos_topo_result r;
    if (fx_topo_probe(doc, &d, &r))
        fail_msg("probe: %s", gos_last_error());
    char why[256];
    if (!gos_chip_same_topology(d->chip, r.chip, why, sizeof why))
        fail_msg("topology differs: %s", why);
    if (expect_unambiguous && r.ambiguous)
        {
        for (int i = 0; i < r.n_place; i++) {
            printf("unit %d (%d SMs) gpc %d margin %.2f noise %.3f gains:", r.place[i].sms[0], r.place[i].n_sms,
                   r.place[i].gpc, r.place[i].margin, r.place[i].noise);
            for (int g = 0; g < r.chip->n_gpcs; g++)
                printf(" %.2f", r.place[i].gain[g]);
            printf("\n");
        }
        fail_msg("chip seed %llu: unexpected ambiguity: %s", (unsigned long long)current_seed, r.ambiguity);
    }
    /* Free-floating SMs are exactly the truth's non-cluster SMs. */
    int n_truth_free = 0;
    for (int g = 0; g < d->chip->n_gpcs; g++)
        n_truth_free += d->chip->gpcs[g].n_sms - d->chip->gpcs[g].n_cluster;
    assert_int_equal(r.n_free, n_truth_free);
    gos_topo_result_free(&r);
    gos_device_close(d);
}

static void test_default_chip(void **state)
{
    (void)state;
    json_t *doc = json_loads(gos_chip_default_json(), 0, NULL);
    round_trip(doc, 1);
    json_decref(doc);
}

static void test_random_chips(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 500; seed++) {
        json_t *doc = chipgen_random(seed, NULL);
        current_seed = seed;
        round_trip(doc, 1);
        json_decref(doc);
    }
}

/* Harsher chips: free-floating SMs picked one by one, GPCs left with as few as 3
 * cluster-eligible SMs (their port far from saturated). Placements must still
 * be right whenever they are claimed, and claimed for nearly all chips. */
static void test_harsh_chips(void **state)
{
    (void)state;
    chipgen_min_cluster = 3;
    chipgen_whole_tpc = 0.0;
    int ambiguous = 0, n = 200;
    for (uint64_t seed = 5000; seed < 5000 + (uint64_t)n; seed++) {
        json_t *doc = chipgen_random(seed, NULL);
        gos_device *d;
        gos_topo_result r;
        int rc = fx_topo_probe(doc, &d, &r);
        if (rc == GOS_OK) {
            ambiguous += r.ambiguous;
            if (!r.ambiguous) {
                char why[256];
                if (!gos_chip_same_topology(d->chip, r.chip, why, sizeof why))
                    fail_msg("seed %llu: claimed but wrong: %s", (unsigned long long)seed, why);
            }
            gos_topo_result_free(&r);
        } else {
            assert_int_equal(rc, GOS_EAMBIGUOUS);
            ambiguous++;
        }
        gos_device_close(d);
        json_decref(doc);
    }
    chipgen_min_cluster = 6;
    chipgen_whole_tpc = 0.7;
    printf("harsh chips: %d of %d ambiguous\n", ambiguous, n);
    assert_true(ambiguous * 20 <= n); /* at most 5 % */
}

/* The probe output is itself a valid chip that reproduces the input. */
static void test_output_reloads(void **state)
{
    (void)state;
    json_t *doc = chipgen_random(4242, NULL);
    gos_device *d;
    gos_topo_result r;
    assert_int_equal(fx_topo_probe(doc, &d, &r), 0);
    json_t *out = gos_chip_to_json(r.chip);
    char *text = json_dumps(out, 0);
    gos_chip *back;
    assert_int_equal(gos_chip_parse(text, "probe output", &back), 0);
    char why[256];
    assert_true(gos_chip_same_topology(d->chip, back, why, sizeof why));
    free(text);
    json_decref(out);
    gos_chip_free(back);
    gos_topo_result_free(&r);
    gos_device_close(d);
    json_decref(doc);
}

/* With no L2 contention at all (a GPC port far wider than its SMs), a free
 * TPC cannot be placed: the probe must say "ambiguous", not guess. */
static void test_no_signal_is_ambiguous(void **state)
{
    (void)state;
    json_t *doc = json_loads(gos_chip_default_json(), 0, NULL);
    json_object_set_new(json_object_get(doc, "sim"), "l2_gbps_per_gpc", json_real(1e6));
    gos_device *d;
    gos_topo_result r;
    assert_int_equal(fx_topo_probe(doc, &d, &r), 0);
    assert_true(r.ambiguous);
    int amb = 0;
    for (int i = 0; i < r.n_place; i++)
        amb += r.place[i].ambiguous;
    assert_int_equal(amb, r.n_place);
    gos_topo_result_free(&r);
    gos_device_close(d);
    json_decref(doc);
}

/* GPC membership only (TPC pairs aside): the same set partition of SMs. */
static void assert_same_gpcs(const gos_chip *a, const gos_chip *b)
{
    int ga[GOS_MAX_SMS], gb[GOS_MAX_SMS], map[GOS_MAX_GPCS];
    gos_chip_gpc_of(a, ga);
    gos_chip_gpc_of(b, gb);
    assert_int_equal(a->n_gpcs, b->n_gpcs);
    for (int g = 0; g < GOS_MAX_GPCS; g++)
        map[g] = -1;
    for (int s = 0; s < a->device.sm_count; s++) {
        assert_true(gb[s] >= 0);
        if (map[ga[s]] < 0)
            map[ga[s]] = gb[s];
        assert_int_equal(map[ga[s]], gb[s]);
    }
}

/* Clusters of 2 spanning a whole GPC (as on the lent H200) reveal no TPCs; with
 * a per-TPC bandwidth limit, pair contention recovers them (phase 3). */
static void test_tpcs_by_contention(void **state)
{
    (void)state;
    for (uint64_t seed = 900; seed < 940; seed++) {
        json_t *doc = chipgen_random(seed, NULL);
        json_t *sim = json_object_get(doc, "sim");
        double per_sm = json_number_value(json_object_get(sim, "l2_gbps_per_sm"));
        json_object_set_new(sim, "cluster2", json_string("gpc"));
        json_object_set_new(sim, "l2_gbps_per_tpc", json_real(1.6 * per_sm));
        /* TPC limits lower every GPC's demand: keep its port saturable. */
        json_object_set_new(sim, "l2_gbps_per_gpc", json_real(4.5 * per_sm));
        current_seed = seed;
        round_trip(doc, 1);
        json_decref(doc);
    }
}

/* Without that limit the TPCs are not observable: said so, GPCs still right,
 * and no pairing is invented. */
static void test_tpcs_unobservable(void **state)
{
    (void)state;
    for (uint64_t seed = 950; seed < 970; seed++) {
        json_t *doc = chipgen_random(seed, NULL);
        json_object_set_new(json_object_get(doc, "sim"), "cluster2", json_string("gpc"));
        gos_device *d;
        gos_topo_result r;
        assert_int_equal(fx_topo_probe(doc, &d, &r), 0);
        assert_int_equal(r.tpcs_known, 0);
        assert_false(r.ambiguous);
        assert_same_gpcs(d->chip, r.chip);
        for (int s = 0; s < r.chip->device.sm_count; s++)
            assert_int_equal(gos_chip_tpc_partner(r.chip, s), -1);
        gos_topo_result_free(&r);
        gos_device_close(d);
        json_decref(doc);
    }
}

/* GPCs behind a common path per memory partition (as the H200 shows) are
 * grouped by pair contention, and the groups are exactly the partitions;
 * without such a path no group is claimed. Placements stay right. */
static void test_crossbar_groups(void **state)
{
    (void)state;
    for (int with = 0; with < 2; with++) {
        json_t *doc = json_loads(gos_chip_default_json(), 0, NULL);
        if (with)
            json_object_set_new(json_object_get(doc, "sim"), "l2_gbps_per_partition", json_real(2000));
        gos_device *d;
        gos_topo_result r;
        assert_int_equal(fx_topo_probe(doc, &d, &r), 0);
        assert_false(r.ambiguous);
        char why[256];
        assert_true(gos_chip_same_topology(d->chip, r.chip, why, sizeof why));
        if (!with) {
            assert_int_equal(r.n_xbar_groups, 0);
        } else {
            assert_int_equal(r.n_xbar_groups, 2);
            /* Every group's GPCs lie in one partition of the truth, and the
             * two groups in different ones. */
            int part_of_group[2];
            for (int k = 0; k < 2; k++) {
                part_of_group[k] = -1;
                for (int i = 0; i < r.xbar_size[k]; i++) {
                    int sm = r.chip->gpcs[r.xbar_group[k][i]].sms[0], p = -1;
                    for (int q = 0; q < d->chip->n_parts; q++)
                        for (int j = 0; j < d->chip->parts[q].n_sms; j++)
                            if (d->chip->parts[q].sms[j] == sm)
                                p = q;
                    if (part_of_group[k] < 0)
                        part_of_group[k] = p;
                    assert_int_equal(p, part_of_group[k]);
                }
                assert_int_equal(r.xbar_size[k], 4);
            }
            assert_int_not_equal(part_of_group[0], part_of_group[1]);
        }
        gos_topo_result_free(&r);
        gos_device_close(d);
        json_decref(doc);
    }
}

static void test_summary_and_paper(void **state)
{
    (void)state;
    gos_chip *c;
    assert_int_equal(gos_chip_load("default", &c), 0);
    char s[64];
    gos_topo_summary(c, s, sizeof s);
    assert_string_equal(s, "6x16 + 2x18");
    int exact = -1;
    assert_non_null(strstr(gos_topo_paper_match("NVIDIA H200", s, &exact), "23 of 28"));
    assert_int_equal(exact, 1);
    assert_non_null(strstr(gos_topo_paper_match("NVIDIA H200", "8x16", &exact), "not among"));
    assert_int_equal(exact, 0);
    /* Issue 47: the census is of H200s; nothing is known of an H100 SXM's or a
     * B200's configurations, so nothing is said, whatever the summary. */
    assert_null(gos_topo_paper_match("NVIDIA H100 80GB HBM3", s, &exact));
    assert_int_equal(exact, 0);
    assert_null(gos_topo_paper_match("NVIDIA B200", s, NULL));
    assert_null(gos_topo_paper_match(NULL, s, NULL));
    assert_non_null(strstr(gos_topo_paper_match("NVIDIA H100 PCIe", "1x14 + 6x16", &exact), "one H100 PCIe"));
    assert_int_equal(exact, 0);
    gos_chip_free(c);
}

/* Same seed, same answers: the simulated device is deterministic. */
static void test_deterministic(void **state)
{
    (void)state;
    double first = 0;
    for (int k = 0; k < 2; k++) {
        gos_device *d;
        assert_int_equal(gos_sim_open("default", &d), 0);
        int sms[4] = {124, 125, 0, 1};
        double bw;
        assert_int_equal(gos_topo_l2_bandwidth(d, sms, 4, &bw), 0);
        if (k == 0)
            first = bw;
        else
            assert_true(bw == first);
        gos_device_close(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_chip),     cmocka_unit_test(test_random_chips),
        cmocka_unit_test(test_output_reloads),   cmocka_unit_test(test_no_signal_is_ambiguous),
        cmocka_unit_test(test_summary_and_paper), cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_tpcs_by_contention), cmocka_unit_test(test_tpcs_unobservable),
        cmocka_unit_test(test_harsh_chips),       cmocka_unit_test(test_crossbar_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
