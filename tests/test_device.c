/* SPDX-License-Identifier: Apache-2.0 */
/* test_device.c: the device layer's one convention, checked on the simulated
 * device: every pillar's checked wrappers answer GOS_EUNSUPPORTED (with a message
 * naming the backend) when the backend lacks an operation and GOS_EINVAL for bad
 * arguments; the capabilities that replace info.simulated; the built-in module
 * that has one name and the GPU kernels' parameter layouts on every backend, its
 * work modelled as durations (loop 20M iterations = 100 ms, madd 1024^2 = 1 ms,
 * mmul 1024^3 = 5 ms with the default chip). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/dvfs_ops.h"
#include "device/exec_ops.h"
#include "device/mem_ops.h"
#include "device/topo_ops.h"

#include <string.h>

static gos_device *open_default(void)
{
    gos_device *d = NULL;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    if (gos_device_open(&spec, &d))
        fail_msg("open: %s", gos_last_error());
    return d;
}

static void expect_missing(int rc)
{
    assert_int_equal(rc, GOS_EUNSUPPORTED);
    assert_non_null(strstr(gos_last_error(), "the sim device does not support"));
}

/* A copy of the simulated device whose ops table has no pillars at all. */
static void test_missing_pillars(void **st)
{
    gos_device *sim = open_default();
    struct gos_device_ops bare = {.name = sim->ops->name};
    gos_device d = *sim;
    d.ops = &bare;
    int sms[4] = {0, 1, 2, 3}, n = 0;
    double gbps;
    expect_missing(gos_topo_cluster_probe(&d, 2, sms, 4, &n));
    expect_missing(gos_topo_l2_bandwidth(&d, sms, 4, &gbps));
    gos_mem_buf *b = NULL;
    expect_missing(gos_mem_alloc(&d, 2u << 20, &b));
    assert_int_equal(gos_dvfs_check(&d), GOS_EUNSUPPORTED);
    assert_non_null(strstr(gos_last_error(), "no frequency-switching primitives"));
    expect_missing(gos_dvfs_set_clock(&d, 1980));
    expect_missing(gos_dvfs_reset_clock(&d));
    gos_dvfs_status s;
    expect_missing(gos_dvfs_read_status(&d, &s));
    expect_missing(gos_exec_init(&d));
    uint64_t p;
    expect_missing(gos_exec_mem_alloc(&d, 4096, &p));
    void *stream;
    expect_missing(gos_exec_stream_create(&d, &stream));
    /* one missing operation in an otherwise complete pillar */
    struct gos_exec_ops partial = *sim->ops->exec;
    partial.event_elapsed_ns = NULL;
    bare.exec = &partial;
    uint64_t ns;
    expect_missing(gos_exec_event_elapsed_ns(&d, &p, &p, &ns));
    gos_device_close(sim);
}

static void test_bad_arguments(void **st)
{
    gos_device *d = open_default();
    int sms[GOS_MAX_SMS], n;
    double gbps;
    assert_int_equal(gos_topo_cluster_probe(d, 0, sms, 8, &n), GOS_EINVAL);
    assert_int_equal(gos_topo_cluster_probe(d, 17, sms, 8, &n), GOS_EINVAL);
    assert_int_equal(gos_topo_l2_bandwidth(d, sms, 0, &gbps), GOS_EINVAL);
    sms[0] = d->info.sm_count;
    assert_int_equal(gos_topo_l2_bandwidth(d, sms, 1, &gbps), GOS_EINVAL);
    assert_int_equal(gos_dvfs_set_clock(d, 0), GOS_EINVAL);
    assert_int_equal(gos_dvfs_timer_exchange(d, 0, NULL, NULL, NULL), GOS_EINVAL);
    int rec[1] = {d->info.sm_count};
    gos_dvfs_workload w = {.iters = 10, .work = 1, .n_record = 1, .record_sms = rec};
    assert_int_equal(gos_dvfs_workload_start(d, &w), GOS_EINVAL);
    rec[0] = 0;
    w.iters = 0;
    assert_int_equal(gos_dvfs_workload_start(d, &w), GOS_EINVAL);
    assert_int_equal(gos_exec_init(d), GOS_OK);
    assert_int_equal(gos_exec_mem_alloc(d, 4096, NULL), GOS_EINVAL);
    void *mod = NULL;
    assert_int_equal(gos_exec_module_load(d, NULL, 0, NULL, &mod), GOS_EINVAL);
    assert_int_equal(gos_exec_module_load(d, NULL, 0, "no-such-module", &mod), GOS_EINVAL);
    struct gos_launch_cfg cfg = {.geom = {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0}, .params = NULL, .param_bytes = 8};
    assert_int_equal(gos_exec_launch(d, &cfg, &cfg, NULL), GOS_EINVAL); /* 8 bytes, no params */
    gos_device_close(d);
}

/* The simulated device's clocks are the model's, on a virtual clock; a real
 * GPU's (GOS_CAP_SYSTEM_CLOCKS) need the user's permission. */
static void test_capabilities(void **st)
{
    gos_device *d = open_default();
    assert_int_equal(d->info.caps & GOS_CAP_SYSTEM_CLOCKS, 0);
    assert_true(d->info.caps & GOS_CAP_VIRTUAL_TIME);
    assert_int_equal(gos_dvfs_clock_permission(d, 0), GOS_OK);
    gos_device fake = *d;
    fake.info.caps = GOS_CAP_SYSTEM_CLOCKS;
    assert_int_equal(gos_dvfs_clock_permission(&fake, 0), GOS_EPERM);
    assert_non_null(strstr(gos_last_error(), "--allow-clock-changes"));
    assert_int_equal(gos_dvfs_clock_permission(&fake, 1), GOS_OK);
    gos_device_close(d);
}

/* GPU time of one launch of `fn` with params (bytes), by events, in ns. A 20 ms
 * sleep_ns of module `mod` runs first, so that both events and the launch queue
 * behind it and the elapsed time is exactly the launch's modelled duration. */
static uint64_t timed_launch(gos_device *d, void *stream, void *mod, void *fn, const void *params,
                             size_t bytes)
{
    void *e0, *e1, *sleep;
    uint64_t ns = 0, lead = 20000000;
    struct gos_launch_cfg cfg = {.geom = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0}, .params = params, .param_bytes = bytes};
    struct gos_launch_cfg lead_cfg = {.geom = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0}, .params = &lead, .param_bytes = 8};
    assert_int_equal(gos_exec_function(d, mod, "sleep_ns", &sleep), GOS_OK);
    assert_int_equal(gos_exec_event_create(d, &e0), GOS_OK);
    assert_int_equal(gos_exec_event_create(d, &e1), GOS_OK);
    assert_int_equal(gos_exec_launch(d, sleep, &lead_cfg, stream), GOS_OK);
    assert_int_equal(gos_exec_event_record(d, e0, stream), GOS_OK);
    assert_int_equal(gos_exec_launch(d, fn, &cfg, stream), GOS_OK);
    assert_int_equal(gos_exec_event_record(d, e1, stream), GOS_OK);
    assert_int_equal(gos_exec_event_sync(d, e1), GOS_OK);
    assert_int_equal(gos_exec_event_elapsed_ns(d, e0, e1, &ns), GOS_OK);
    gos_exec_event_destroy(d, e0);
    gos_exec_event_destroy(d, e1);
    return ns;
}

static void test_builtin_module(void **st)
{
    gos_device *d = open_default();
    void *stream, *mod, *mod_old, *fn;
    assert_int_equal(gos_exec_init(d), GOS_OK);
    assert_int_equal(gos_exec_stream_create(d, &stream), GOS_OK);
    assert_int_equal(gos_exec_module_load(d, NULL, 0, GOS_EXEC_BUILTIN, &mod), GOS_OK);
    assert_int_equal(gos_exec_module_load(d, NULL, 0, "sim:builtin", &mod_old), GOS_OK);
    assert_int_equal(gos_exec_module_load(d, NULL, 0, "exec", &fn), GOS_EINVAL); /* the GPU's image name */
    /* kernels/exec.cu's parameter layouts; durations from the work they describe */
    uint64_t iters = 20000000;
    assert_int_equal(gos_exec_function(d, mod, "loop", &fn), GOS_OK);
    const uint64_t launch_ns = 3000; /* sim.exec.launch_us of the default chip */
    uint64_t ns = timed_launch(d, stream, mod, fn, &iters, 8);
    assert_int_equal(ns, launch_ns + 100000000ull);
    struct {
        uint64_t a, b, c;
        uint32_t n, pad;
    } p = {0, 0, 0, 1024, 0};
    assert_int_equal(gos_exec_function(d, mod, "madd", &fn), GOS_OK);
    ns = timed_launch(d, stream, mod, fn, &p, 28);
    assert_int_equal(ns, launch_ns + 1000000);
    assert_int_equal(gos_exec_function(d, mod_old, "mmul", &fn), GOS_OK);
    ns = timed_launch(d, stream, mod_old, fn, &p, 28);
    assert_int_equal(ns, launch_ns + 5000000);
    /* mmul needs n: 8 bytes of parameters are rejected */
    struct gos_launch_cfg cfg = {.geom = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0}, .params = &iters, .param_bytes = 8};
    assert_int_equal(gos_exec_launch(d, fn, &cfg, stream), GOS_EINVAL);
    assert_int_equal(gos_exec_module_unload(d, mod), GOS_OK);
    assert_int_equal(gos_exec_module_unload(d, mod_old), GOS_OK);
    assert_int_equal(gos_exec_stream_destroy(d, stream), GOS_OK);
    gos_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_pillars),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_capabilities),
        cmocka_unit_test(test_builtin_module),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
