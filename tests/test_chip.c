/* SPDX-License-Identifier: Apache-2.0 */
/* test_chip.c: the gpuos.chip/1 reader rejects malformed input with one line
 * naming the problem, accepts valid chips, and round-trips unknown fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

static const char *good =
    "{\"schema\":\"gpuos.chip/1\",\"device\":{\"name\":\"t\",\"sm_count\":4},"
    "\"topology\":{\"gpcs\":[{\"sms\":[0,1],\"cluster_sms\":[0,1]},{\"sms\":[2,3],\"cluster_sms\":[]}]},"
    "\"extra\":{\"kept\":true}}";

static void expect_reject(const char *text, const char *needle)
{
    gos_chip *c = NULL;
    int rc = gos_chip_parse(text, "t.json", &c);
    if (rc == GOS_OK)
        fail_msg("accepted: %s", text);
    assert_null(c);
    const char *msg = gos_last_error();
    assert_null(strchr(msg, '\n'));
    if (!strstr(msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
}

static void test_rejects(void **state)
{
    (void)state;
    expect_reject("", "not valid JSON");
    expect_reject("{\"schema\":\"gpuos.chip/1\",", "not valid JSON");
    expect_reject("[1,2]", "top level");
    expect_reject("{\"schema\":\"gpuos.chip/3\",\"device\":{\"sm_count\":4}}", "schema");
    expect_reject("{\"schema\":\"gpuos.chip/1\"}", "device");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{}}", "sm_count");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":0}}", "sm_count");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":4.5}}", "sm_count");
    /* SM in two GPCs */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":4},\"topology\":{\"gpcs\":["
                  "{\"sms\":[0,1,2],\"cluster_sms\":[]},{\"sms\":[2,3],\"cluster_sms\":[]}]}}",
                  "SM 2 is in GPC 0 and GPC 1");
    /* SM in no GPC */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":5},\"topology\":{\"gpcs\":["
                  "{\"sms\":[0,1],\"cluster_sms\":[]},{\"sms\":[2,3],\"cluster_sms\":[]}]}}",
                  "SM 4 belongs to no GPC");
    /* missing cluster_sms */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2},\"topology\":{\"gpcs\":["
                  "{\"sms\":[0,1]}]}}",
                  "cluster_sms");
    /* cluster SM outside its GPC */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":4},\"topology\":{\"gpcs\":["
                  "{\"sms\":[0,1],\"cluster_sms\":[2]},{\"sms\":[2,3],\"cluster_sms\":[]}]}}",
                  "not one of its SMs");
    /* SM id out of range, wrong types, duplicate keys */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2},\"topology\":{\"gpcs\":["
                  "{\"sms\":[0,7],\"cluster_sms\":[]}]}}",
                  "out of range");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2},\"topology\":{\"gpcs\":["
                  "{\"sms\":[\"0\",1],\"cluster_sms\":[]}]}}",
                  "expected an integer");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2}}",
                  "duplicate");
    /* partitions overlapping, bad hash */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2},\"numa\":{\"partitions\":["
                  "{\"sms\":[0,1]},{\"sms\":[1]}]}}",
                  "partition 0 and partition 1");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2},\"numa\":{\"hash\":"
                  "{\"granularity_bytes\":3000}}}",
                  "power of two");
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":2},\"sim\":{\"jitter\":-1}}",
                  "jitter");
    /* TPC naming an SM of another GPC */
    expect_reject("{\"schema\":\"gpuos.chip/1\",\"device\":{\"sm_count\":4},\"topology\":{\"gpcs\":["
                  "{\"sms\":[0,1],\"cluster_sms\":[],\"tpcs\":[[0,2],[1]]},{\"sms\":[2,3],\"cluster_sms\":[]}]}}",
                  "another GPC");
}

static void test_accepts_and_keeps_unknown_fields(void **state)
{
    (void)state;
    gos_chip *c;
    assert_int_equal(gos_chip_parse(good, "good", &c), GOS_OK);
    assert_int_equal(c->n_gpcs, 2);
    assert_int_equal(c->gpcs[1].n_cluster, 0);
    assert_int_equal(gos_chip_tpc_partner(c, 0), 1); /* consecutive entries pair up */
    json_t *j = gos_chip_to_json(c);
    assert_true(json_is_true(json_object_get(json_object_get(j, "extra"), "kept")));
    char *text = json_dumps(j, 0);
    gos_chip *back;
    assert_int_equal(gos_chip_parse(text, "again", &back), GOS_OK);
    char why[128];
    assert_true(gos_chip_same_topology(c, back, why, sizeof why));
    free(text);
    json_decref(j);
    gos_chip_free(back);
    gos_chip_free(c);
}

static void test_default_chip_is_h200_shaped(void **state)
{
    (void)state;
    gos_chip *c;
    assert_int_equal(gos_chip_load("default", &c), GOS_OK);
    assert_int_equal(c->device.sm_count, 132);
    assert_int_equal(c->n_gpcs, 8);
    assert_true(c->device.simulated);
    int free_sms = 0;
    for (int g = 0; g < c->n_gpcs; g++)
        for (int i = 0; i < c->gpcs[g].n_sms; i++) {
            int s = c->gpcs[g].sms[i], eligible = 0;
            for (int k = 0; k < c->gpcs[g].n_cluster; k++)
                eligible |= c->gpcs[g].cluster_sms[k] == s;
            if (!eligible) {
                free_sms++;
                assert_true(s >= 124 && s <= 131); /* as the paper reports */
            }
        }
    assert_int_equal(free_sms, 8);
    gos_chip_free(c);
}

static void test_missing_file(void **state)
{
    (void)state;
    gos_chip *c;
    assert_int_not_equal(gos_chip_load("/nonexistent/chip.json", &c), GOS_OK);
    assert_non_null(strstr(gos_last_error(), "cannot open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_accepts_and_keeps_unknown_fields),
        cmocka_unit_test(test_default_chip_is_h200_shaped),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
