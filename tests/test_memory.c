/* SPDX-License-Identifier: Apache-2.0 */
/* test_memory.c: pillar 1b costs against simulated chips with known parameters.
 *
 * - knee: a synthetic cliff is found where it was put, a flat curve is ambiguous;
 * - random chips (random effective-L2 fractions for private and shared reads,
 *   HBM and fabric bandwidths, replication on or off, latencies): both
 *   effective L2 capacities are recovered within 4 %, local HBM bandwidth beats remote exactly when the fabric is the
 *   narrower path, the replication test tells the two coherence models apart,
 *   and the L2 latencies are the chip's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "numa/figures.h"
#include "test_numa_gen.h"

#include <math.h>
#include <string.h>

static void test_knee_synthetic(void **state)
{
    (void)state;
    double ws[40], bw[40], knee, top, bot;
    for (int i = 0; i < 40; i++) {
        ws[i] = (i + 1) * 1e6;
        bw[i] = ws[i] <= 23.5e6 ? 9000 : 3000;
    }
    assert_int_equal(gos_l2_knee(ws, bw, 40, &knee, &top, &bot), GOS_OK);
    assert_true(knee > 23e6 && knee < 24e6);
    assert_true(top == 9000 && bot == 3000);
    for (int i = 0; i < 40; i++)
        bw[i] = 5000 + (i % 2);
    assert_int_equal(gos_l2_knee(ws, bw, 40, &knee, &top, &bot), GOS_EAMBIGUOUS);
    assert_int_equal(gos_l2_knee(ws, bw, 5, &knee, &top, &bot), GOS_EINVAL);
}

static void test_random_chips_memory(void **state)
{
    (void)state;
    int saw_rep[2] = {0, 0};
    for (uint64_t seed = 100; seed < 112; seed++) {
        numa_truth t;
        json_t *doc = numa_gen(seed, &t);
        json_t *lat = json_object_get(json_object_get(doc, "numa"), "latency_cycles");
        double ll = json_number_value(json_object_get(lat, "l2_local"));
        double lr = json_number_value(json_object_get(lat, "l2_remote"));
        double l2 = (double)json_integer_value(json_object_get(json_object_get(doc, "device"), "l2_bytes"));
        const char *path = numa_gen_file(doc);
        json_decref(doc);
        gos_device *d = NULL;
        assert_int_equal(gos_sim_open(path, &d), GOS_OK);
        gos_numa_opts o;
        gos_numa_opts_default(&o);
        gos_numa_model m;
        assert_int_equal(gos_numa_discover(d, &o, &m), GOS_OK);
        gos_memory_figures f;
        int rc = gos_memory_measure(d, &m, &f);
        if (rc)
            fail_msg("chip %llu: %s", (unsigned long long)seed, gos_last_error());
        double truth[2] = {t.l2_eff_private, t.l2_eff_shared};
        for (int k = 0; k < 2; k++) {
            assert_true(f.curve[k].has_knee);
            double frac = f.curve[k].eff_bytes / l2;
            if (fabs(frac - truth[k]) > 0.04 * truth[k])
                fail_msg("chip %llu: effective L2 (%s) %.3f, truth %.3f", (unsigned long long)seed,
                         k ? "shared" : "private", frac, truth[k]);
        }
        assert_true(fabs(f.l2_local - ll) < 0.05 * ll);
        assert_true(fabs(f.l2_remote - lr) < 0.05 * lr);
        assert_int_equal(f.replicated, t.replicate);
        saw_rep[t.replicate] = 1;
        if (f.has_bw) { /* granularity >= 4 KB */
            for (int p = 0; p < 2; p++) {
                int n = 0;
                for (int s = 0; s < t.sm_count; s++)
                    n += m.part_of[s] == p;
                /* Strictly slower when the fabric, not the SMs' issue rate (32 GB/s
                 * each by default), limits the remote reads. */
                if (n * 32.0 > 1.2 * t.fabric_gbps)
                    assert_true(f.bw_remote[p] < 0.95 * f.bw_local[p]);
                assert_true(f.bw_remote[p] < 1.1 * f.bw_local[p]);
            }
        } else {
            assert_true(m.granularity < 4096);
        }
        json_t *j = gos_memory_json(&f, (uint64_t)l2);
        assert_non_null(json_object_get(j, "l2_curve"));
        assert_non_null(json_object_get(j, "l2_curve_shared"));
        assert_true(json_is_true(json_object_get(json_object_get(j, "replication"), "replicated")) ==
                    t.replicate);
        json_decref(j);
        gos_memory_figures_free(&f);
        gos_numa_model_free(&m);
        gos_device_close(d);
        unlink(path);
    }
    assert_true(saw_rep[0] && saw_rep[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knee_synthetic),
        cmocka_unit_test(test_random_chips_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
