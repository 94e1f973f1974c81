/* SPDX-License-Identifier: Apache-2.0 */
/* test_dvfs.c: pillar 1c on known truth: phase 3 on synthetic traces, the
 * trace file contract (round trip, malformed files rejected), timer sync,
 * whole simulated campaigns recovering the latencies they were given, throttle
 * handling, clock restoration, and the refusal on a real GPU without
 * permission (nothing touched). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/device.h"
#include "dvfs/dvfs.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A trace of n_sms SMs: iterations of t_init ns until t_sw, then t_tgt ns
 * (the straddling iteration mixes both), deterministic +-1 % ripple. */
static void synth(gos_dvfs_trace *tr, int n_sms, int iters, int64_t t0, int64_t t_sw, double t_init,
                  double t_tgt)
{
    assert_int_equal(gos_dvfs_trace_alloc(tr, n_sms, (size_t)iters), GOS_OK);
    for (int k = 0; k < n_sms; k++) {
        tr->sm[k] = 3 * k;
        double t = (double)t0 + 100 * k;
        for (int i = 0; i < iters; i++) {
            double r = 1 + 0.01 * sin(i * 1.7 + k);
            double dur;
            if (t + t_init * r <= (double)t_sw)
                dur = t_init * r;
            else if (t >= (double)t_sw)
                dur = t_tgt * r;
            else { /* straddles: the cycles left run at the target clock */
                double frac = ((double)t_sw - t) / (t_init * r);
                dur = ((double)t_sw - t) + (1 - frac) * t_tgt * r;
            }
            tr->start_ns[tr->off[k] + i] = (int64_t)t;
            tr->end_ns[tr->off[k] + i] = (int64_t)(t + dur);
            t += dur + 10;
        }
    }
}

static void ref(gos_dvfs_ref *r, double mean)
{
    r->mean_ns = mean;
    r->sd_ns = mean * 0.01 / sqrt(2.0); /* the ripple's sd */
    r->n = 100000;
    r->tol_ns = 0.25 * 300;
}

static void test_evaluate(void **st)
{
    gos_dvfs_trace tr;
    gos_dvfs_ref ri, rt;
    ref(&ri, 1000);
    ref(&rt, 1300);
    int64_t t0 = 1000000000, t_s = t0 + 400000, t_sw = t_s + 2000000; /* 2 ms latency */
    synth(&tr, 4, 6000, t0, t_sw, 1000, 1300);
    gos_dvfs_eval ev;
    assert_int_equal(gos_dvfs_evaluate(&tr, t_s, &ri, &rt, &ev), GOS_OK);
    assert_int_equal(ev.status, GOS_DVFS_OK);
    assert_int_equal(ev.n_viable, 4);
    /* t_e is the end of the first target-like iteration: within 2 iterations */
    assert_true(ev.latency_ns >= t_sw - t_s);
    assert_true(ev.latency_ns <= t_sw - t_s + 2 * 1300 + 200);
    gos_dvfs_trace_free(&tr);

    /* never switches: not captured */
    synth(&tr, 2, 3000, t0, INT64_MAX / 2, 1000, 1300);
    gos_dvfs_evaluate(&tr, t_s, &ri, &rt, &ev);
    assert_int_equal(ev.status, GOS_DVFS_NOT_CAPTURED);
    gos_dvfs_trace_free(&tr);

    /* runs at a third clock before the request: initial clock not established */
    gos_dvfs_ref r3;
    ref(&r3, 800);
    synth(&tr, 2, 6000, t0, t_sw, 1000, 1300);
    gos_dvfs_evaluate(&tr, t_s, &r3, &rt, &ev);
    assert_int_equal(ev.status, GOS_DVFS_NO_INIT);
    gos_dvfs_trace_free(&tr);

    /* lands next to the target but not on it: rejected */
    gos_dvfs_ref rx;
    ref(&rx, 1600);
    rx.sd_ns = 400; /* a wide window that 1300 falls in, but the rest is 1300, not 1600 */
    synth(&tr, 2, 6000, t0, t_sw, 1000, 1300);
    gos_dvfs_evaluate(&tr, t_s, &ri, &rx, &ev);
    assert_int_equal(ev.status, GOS_DVFS_REJECTED);
    gos_dvfs_trace_free(&tr);
}

static char tmpdir[256];

static void write_file(const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_trace_files(void **st)
{
    gos_dvfs_trace tr, back;
    synth(&tr, 3, 50, 5000, 20000, 100, 130);
    char path[512];
    snprintf(path, sizeof path, "%s/t.csv", tmpdir);
    assert_int_equal(gos_dvfs_trace_write_csv(&tr, path), GOS_OK);
    assert_int_equal(gos_dvfs_trace_read_csv(path, &back), GOS_OK);
    assert_int_equal(back.n_sms, 3);
    for (int k = 0; k <= 3; k++)
        assert_int_equal(back.off[k], tr.off[k]);
    for (int k = 0; k < 3; k++)
        assert_int_equal(back.sm[k], tr.sm[k]);
    assert_memory_equal(back.start_ns, tr.start_ns, 150 * sizeof(int64_t));
    assert_memory_equal(back.end_ns, tr.end_ns, 150 * sizeof(int64_t));
    gos_dvfs_trace_free(&back);
    gos_dvfs_trace_free(&tr);

    /* rows in any order are accepted and sorted */
    write_file("o.csv", "sm,iter,start_ns,end_ns\n1,1,30,40\n0,0,5,9\n1,0,10,20\r\n", path, sizeof path);
    assert_int_equal(gos_dvfs_trace_read_csv(path, &back), GOS_OK);
    assert_int_equal(back.n_sms, 2);
    assert_int_equal(back.start_ns[1], 10);
    gos_dvfs_trace_free(&back);

    static const char *bad[] = {
        "",                                            /* empty */
        "sm,iter,start,end\n0,0,1,2\n",                /* wrong header */
        "sm,iter,start_ns,end_ns\n",                   /* no rows */
        "sm,iter,start_ns,end_ns\n0,0,1\n",            /* three fields */
        "sm,iter,start_ns,end_ns\n0,0,1,2,3\n",        /* five fields */
        "sm,iter,start_ns,end_ns\n0,0,1.5,2\n",        /* not an integer */
        "sm,iter,start_ns,end_ns\n0,0,9,2\n",          /* end before start */
        "sm,iter,start_ns,end_ns\n0,0,1,2\n0,0,3,4\n", /* duplicate */
        "sm,iter,start_ns,end_ns\n-1,0,1,2\n",         /* negative SM */
        "sm,iter,start_ns,end_ns\n0,0,x,2\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("bad.csv", bad[i], path, sizeof path);
        assert_int_equal(gos_dvfs_trace_read_csv(path, &back), GOS_EINVAL);
        assert_non_null(strstr(gos_last_error(), "bad.csv"));
        assert_null(strchr(gos_last_error(), '\n'));
    }
}

/* A chip file: the default chip with sim.dvfs replaced by `dvfs` (JSON text). */
static void chip_with(const char *dvfs, char *path, size_t len)
{
    json_t *root = json_loads(gos_chip_default_json(), 0, NULL);
    assert_non_null(root);
    json_t *m = json_loads(dvfs, 0, NULL);
    assert_non_null(m);
    json_object_set_new(json_object_get(root, "sim"), "dvfs", m);
    snprintf(path, len, "%s/chip%d.json", tmpdir, rand());
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
}

static gos_device *open_sim(const char *path)
{
    gos_device_spec spec = {.sim = path, .ordinal = -1};
    gos_device *d = NULL;
    assert_int_equal(gos_device_open(&spec, &d), GOS_OK);
    return d;
}

static void test_timesync(void **st)
{
    gos_device *d = open_sim("default");
    gos_dvfs_sync a, b;
    assert_int_equal(gos_dvfs_timesync(d, 32, &a), GOS_OK);
    assert_int_equal(gos_dvfs_timesync(d, 32, &b), GOS_OK);
    assert_true(a.uncertainty_ns > 0 && a.uncertainty_ns < 5000);
    assert_true(llabs(a.offset_ns - b.offset_ns) <= (long long)(a.uncertainty_ns + b.uncertainty_ns));
    assert_int_equal(gos_dvfs_timesync(d, 1, &a), GOS_EINVAL);
    gos_device_close(d);
}

static void small_config(gos_dvfs_config *c, int f1, int f2)
{
    gos_dvfs_config_default(c);
    c->n_freqs = 2;
    c->freqs[0] = f1;
    c->freqs[1] = f2;
    c->n_record = 4;
    c->max_iters = 3000;
    c->min_n = 25;
    c->max_n = 100;
}

static void test_campaign_recovers(void **st)
{
    char chip[512];
    chip_with("{\"freqs_mhz\": [1980, 1605], \"targets\": {\"1980\": {\"mean\": 9, \"sd\": 1},"
              " \"1605\": {\"mean\": 27, \"sd\": 3}}, \"outlier_rate\": 0.04, \"outlier_ms\": [70, 90],"
              " \"thermal_rate\": 0}",
              chip, sizeof chip);
    gos_device *d = open_sim(chip);
    gos_dvfs_config cfg;
    small_config(&cfg, 1980, 1605);
    gos_dvfs_campaign res;
    assert_int_equal(gos_dvfs_campaign_run(d, &cfg, &res), GOS_OK);
    assert_int_equal(res.n_pairs, 2);
    for (int p = 0; p < 2; p++) {
        const gos_dvfs_pair_result *pr = &res.pairs[p];
        double truth = pr->target_mhz == 1980 ? 9 : 27;
        double it_ms = res.calib[pr->target_mhz == 1980 ? 0 : 1].mean_ns / 1e6;
        double tol = 4 * pr->sum.sd_ms / sqrt((double)pr->sum.n) + 2 * it_ms;
        assert_true(pr->n >= 25 && pr->n <= 100);
        assert_true(fabs(pr->sum.mean_ms - truth) < tol);
        assert_true(pr->sum.rse_kept < 0.05 || pr->n == 100);
        assert_true(pr->sum.max_ms < 60); /* the 70-90 ms outliers were filtered */
    }
    /* the clock was reset: after a while the simulated clock is the default */
    gos_dvfs_host_sleep(d, 2000000000LL);
    gos_dvfs_status s;
    assert_int_equal(gos_dvfs_read_status(d, &s), GOS_OK);
    assert_int_equal(s.sm_clock_mhz, 1980);
    gos_dvfs_campaign_free(&res);
    gos_device_close(d);
    unlink(chip);
}

static void test_throttling(void **st)
{
    char chip[512];
    /* power capping at 1605 skips the pair that ends there; frequent thermal
     * events drop measurements and wait, and the campaign still completes */
    chip_with("{\"freqs_mhz\": [1980, 1605], \"switch_ms\": {\"mean\": 10, \"sd\": 1},"
              " \"outlier_rate\": 0, \"thermal_rate\": 0.3, \"thermal_ms\": 3000,"
              " \"power_throttle_mhz\": [1605]}",
              chip, sizeof chip);
    gos_device *d = open_sim(chip);
    gos_dvfs_config cfg;
    small_config(&cfg, 1980, 1605);
    gos_dvfs_campaign res;
    assert_int_equal(gos_dvfs_campaign_run(d, &cfg, &res), GOS_OK);
    int seen_power = 0;
    for (int p = 0; p < res.n_pairs; p++) {
        const gos_dvfs_pair_result *pr = &res.pairs[p];
        if (pr->target_mhz == 1605) {
            assert_non_null(strstr(pr->skipped, "power"));
            seen_power = 1;
        } else {
            assert_true(pr->n >= 25);
            assert_true(fabs(pr->sum.mean_ms - 10) < 2);
        }
    }
    assert_true(seen_power);
    assert_true(res.power_events >= 1);
    assert_true(res.thermal_events >= 1);
    gos_dvfs_campaign_free(&res);
    gos_device_close(d);
    unlink(chip);
}

/* A "real" device whose clock calls are counted: the campaign must refuse
 * before touching it. */
static int touched;
static int count_set(gos_device *d, int mhz) { return ++touched, GOS_OK; }
static int count_reset(gos_device *d) { return ++touched, GOS_OK; }

static void test_refusal(void **st)
{
    gos_device *sim = open_sim("default");
    struct gos_dvfs_ops counted = *sim->ops->dvfs;
    counted.set_clock = count_set;
    counted.reset_clock = count_reset;
    struct gos_device_ops dops = *sim->ops;
    dops.dvfs = &counted;
    gos_device fake = *sim;
    fake.ops = &dops;
    fake.info.caps |= GOS_CAP_SYSTEM_CLOCKS;
    gos_dvfs_config cfg;
    small_config(&cfg, 1980, 1605);
    gos_dvfs_campaign res;
    touched = 0;
    assert_int_equal(gos_dvfs_campaign_run(&fake, &cfg, &res), GOS_EPERM);
    assert_non_null(strstr(gos_last_error(), "--allow-clock-changes"));
    assert_int_equal(touched, 0);
    gos_device_close(sim);
}

/* A simulated device whose 5th clock change fails: the campaign returns the
 * error and the guard resets the clock exactly once on the way out. */
static const struct gos_dvfs_ops *real_ops;
static int resets;
static int failing_set(gos_device *d, int mhz)
{
    if (++touched == 5)
        return gos_fail(GOS_EDEVICE, "nvmlDeviceSetGpuLockedClocks: injected failure");
    return real_ops->set_clock(d, mhz);
}
static int counted_reset(gos_device *d) { return ++resets, real_ops->reset_clock(d); }

static void test_error_path_restores(void **st)
{
    gos_device *d = open_sim("default");
    real_ops = d->ops->dvfs;
    struct gos_dvfs_ops ops = *real_ops;
    ops.set_clock = failing_set;
    ops.reset_clock = counted_reset;
    struct gos_device_ops dops = *d->ops;
    dops.dvfs = &ops;
    const struct gos_device_ops *saved = d->ops;
    d->ops = &dops;
    gos_dvfs_config cfg;
    small_config(&cfg, 1980, 1605);
    gos_dvfs_campaign res;
    touched = resets = 0;
    assert_int_equal(gos_dvfs_campaign_run(d, &cfg, &res), GOS_EDEVICE);
    assert_non_null(strstr(gos_last_error(), "injected failure"));
    assert_int_equal(resets, 1);
    gos_dvfs_campaign_free(&res);
    d->ops = saved;
    gos_device_close(d);
}

static int setup(void **st)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gos_test_dvfs_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **st)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evaluate),          cmocka_unit_test(test_trace_files),
        cmocka_unit_test(test_timesync),          cmocka_unit_test(test_campaign_recovers),
        cmocka_unit_test(test_throttling),        cmocka_unit_test(test_refusal),
        cmocka_unit_test(test_error_path_restores),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
