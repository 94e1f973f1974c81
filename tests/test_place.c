/* SPDX-License-Identifier: Apache-2.0 */
/* test_place.c: pillar 2, partition-local memory and the partition-aware
 * runtime on simulated chips whose truth is known (the physical frames and
 * hash of sim/sim_mem.c, read through sim/sim_internal.h, the simulated device's own
 * truth oracle):
 *   - every logical unit of each view lies in the view's partition wherever the
 *     measured 2 MB parity is right, and the parity is right on >= 99.7 % of pages
 *     (H200-shaped chip and random chips with other granularities and hashes);
 *     the independent latency check agrees with the truth;
 *   - views are disjoint and cover half the allocation; copies round-trip;
 *   - the runtime runs every task exactly once, on an SM of its queue's partition,
 *     splitting by SM count (66 / 58 with 8 SMs idle) and balancing within a
 *     partition; a GEMV through the views gives the exact product;
 *   - remote reads are charged; bad input gives clear errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/rng.h"
#include "common/status.h"
#include "device/place_ops.h"
#include "device/sim/sim_internal.h"
#include "numa/numa.h"
#include "place/place.h"
#include "test_numa_gen.h"

#include <stdlib.h>
#include <string.h>

/* Opens a simulated chip and charts it the way `gpuos probe numa` does. */
static void open_charted(const char *path, gos_device **d, gos_chip **chart)
{
    assert_int_equal(gos_sim_open(path, d), GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    o.buf_bytes = 256ull << 20;
    gos_numa_model m;
    if (gos_numa_discover(*d, &o, &m))
        fail_msg("discover %s: %s", path, gos_last_error());
    *chart = gos_chip_new();
    (*chart)->device.sm_count = (*d)->info.sm_count;
    snprintf((*chart)->device.uuid, sizeof (*chart)->device.uuid, "%s", (*d)->info.uuid);
    assert_int_equal(gos_numa_model_to_chip(&m, *chart), GOS_OK);
    gos_numa_model_free(&m);
}

static gos_pmem_view host_view(gos_pmem *pm, int p, uint8_t **par)
{
    gos_pmem_view v;
    assert_int_equal(gos_pmem_get_view(pm, p, &v), GOS_OK);
    uint64_t n = gos_pmem_buffer(pm)->bytes / GOS_PAGE_2M, meta = v.parity;
    *par = malloc(n);
    assert_int_equal(gos_place_copy_units(gos_pmem_device(pm), 0, &meta, 1, (uint32_t)n, *par), GOS_OK);
    v.parity = (uint64_t)(uintptr_t)*par;
    return v;
}

/* Placement against the truth for one chip. */
static void check_chip(const char *path, uint64_t bytes)
{
    gos_device *d;
    gos_chip *chart;
    open_charted(path, &d, &chart);
    gos_pmem *pm;
    if (gos_pmem_create(d, chart, bytes, &pm))
        fail_msg("%s: %s", path, gos_last_error());
    const gos_mem_buf *b = gos_pmem_buffer(pm);
    uint64_t np = b->bytes / GOS_PAGE_2M;
    uint8_t *par[2];
    gos_pmem_view v[2] = {host_view(pm, 0, &par[0]), host_view(pm, 1, &par[1])};
    uint64_t unit = 1ull << v[0].shift, n_units = b->bytes / unit;
    assert_int_equal(unit, chart->hash_granularity);
    /* The chart numbers partitions from its reference SM; the truth from the
     * chip file: map truth -> chart through the SMs. */
    gos_sim_mem_truth T;
    assert_int_equal(gos_sim_mem_truth_get(d, &T), GOS_OK);
    int t0 = T.part_of[chart->parts[0].sms[0]], to_chart[2];
    to_chart[t0] = 0;
    to_chart[1 - t0] = 1;
    /* Parity right <=> page truth: the partition of offset 0 of the page. */
    uint64_t right = 0;
    uint8_t *ok = malloc(np);
    for (uint64_t p = 0; p < np; p++) {
        int h = gos_sim_mem_home(d, b->base + p * GOS_PAGE_2M);
        assert_true(h == 0 || h == 1);
        h = to_chart[h];
        ok[p] = par[0][p] == (uint8_t)h;
        right += ok[p];
    }
    if ((double)right < 0.997 * (double)np)
        fail_msg("%s: parity right on %llu of %llu pages", path, (unsigned long long)right,
                 (unsigned long long)np);
    uint8_t *used = calloc(n_units, 1);
    uint64_t in[2] = {0, 0};
    for (int p = 0; p < 2; p++) {
        uint64_t units = (bytes + unit - 1) / unit;
        for (uint64_t j = 0; j < units; j++) {
            uint64_t off = j * unit + (j * 7919 % unit); /* any byte of the unit */
            uint64_t a = gos_pmem_addr(&v[p], off);
            assert_true(a >= b->base && a < b->base + b->bytes);
            assert_int_equal((a - b->base) % unit, off % unit);
            uint64_t u = (a - b->base) / unit;
            assert_int_equal(used[u], 0); /* the views never share a unit */
            used[u] = 1;
            int h = to_chart[gos_sim_mem_home(d, a)];
            /* exact: where the parity is right, the unit is in the partition */
            if (ok[u * unit / GOS_PAGE_2M])
                assert_int_equal(h, p);
            in[p] += h == p;
        }
        assert_true((double)in[p] >= 0.997 * (double)units);
    }
    /* The independent latency check agrees with the truth (within 0.2 %). */
    gos_pmem_check_result r;
    if (gos_pmem_check(pm, 2, &r))
        fail_msg("%s: check: %s", path, gos_last_error());
    for (int p = 0; p < 2; p++) {
        double truth = (double)in[p] / (double)r.units[p];
        if (r.frac[p] < truth - 0.002 || r.frac[p] > truth + 0.002)
            fail_msg("%s: view %d: check says %.4f, truth %.4f", path, p, r.frac[p], truth);
    }
    free(used);
    free(ok);
    free(par[0]);
    free(par[1]);
    gos_pmem_close(pm);
    gos_chip_free(chart);
    gos_device_close(d);
}

static void test_views_default_chip(void **state)
{
    (void)state;
    check_chip("default", 96ull << 20);
}

static void test_views_random_chips(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        numa_truth t;
        json_t *doc = numa_gen(seed * 7 + 3, &t);
        const char *path = numa_gen_file(doc);
        json_decref(doc);
        check_chip(path, (24ull << 20) + 12345);
        unlink(path);
    }
}

static void test_copies(void **state)
{
    (void)state;
    gos_device *d;
    gos_chip *chart;
    open_charted("default", &d, &chart);
    gos_pmem *pm;
    uint64_t n = (5ull << 20) + 333;
    assert_int_equal(gos_pmem_create(d, chart, n, &pm), GOS_OK);
    uint8_t *a = malloc(n), *b = malloc(n), *c = malloc(n);
    gos_rng r;
    gos_rng_seed(&r, 42);
    for (uint64_t i = 0; i < n; i++) {
        a[i] = (uint8_t)gos_rng_u64(&r);
        b[i] = (uint8_t)~a[i];
    }
    assert_int_equal(gos_pmem_write(pm, 0, 0, a, n), GOS_OK);
    assert_int_equal(gos_pmem_write(pm, 1, 0, b, n), GOS_OK);
    assert_int_equal(gos_pmem_read(pm, 0, 0, c, n), GOS_OK);
    assert_memory_equal(a, c, n);
    assert_int_equal(gos_pmem_read(pm, 1, 0, c, n), GOS_OK);
    assert_memory_equal(b, c, n);
    /* unaligned piece in the middle */
    assert_int_equal(gos_pmem_write(pm, 0, 4095, b + 10, 9000), GOS_OK);
    assert_int_equal(gos_pmem_read(pm, 0, 4000, c, 9200), GOS_OK);
    assert_memory_equal(c, a + 4000, 95);
    assert_memory_equal(c + 95, b + 10, 9000);
    assert_memory_equal(c + 9095, a + 13095, 105);
    /* out of range */
    assert_int_equal(gos_pmem_read(pm, 0, n - 10, c, 11), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "outside the view"));
    assert_int_equal(gos_pmem_write(pm, 2, 0, a, 1), GOS_EINVAL);
    free(a);
    free(b);
    free(c);
    gos_pmem_close(pm);
    gos_chip_free(chart);
    gos_device_close(d);
}

/* The 8 first SMs of partition 1 idle: 66 / 58 working SMs. */
static int idle8(const gos_pmem *pm, int idle[8])
{
    const gos_numa_model *m = gos_pmem_model(pm);
    int k = 0;
    for (int s = 0; s < m->sm_count && k < 8; s++)
        if (m->part_of[s] == 1)
            idle[k++] = s;
    return k;
}

static void test_runtime_tasks(void **state)
{
    (void)state;
    gos_device *d;
    gos_chip *chart;
    open_charted("default", &d, &chart);
    gos_pmem *pm;
    assert_int_equal(gos_pmem_create(d, chart, 4ull << 20, &pm), GOS_OK);
    const gos_numa_model *m = gos_pmem_model(pm);
    int idle[8];
    assert_int_equal(idle8(pm, idle), 8);
    const uint32_t N = 13200;
    uint32_t *owner = malloc(N * 4), *runs = malloc(N * 4);
    int max_load[2], expect[2];
    for (int split = 0; split < 2; split++) {
        struct gos_place_job *j = calloc(1, sizeof *j);
        assert_int_equal(gos_pmem_runtime(pm, idle, 8, N, split, &j->rt), GOS_OK);
        uint32_t w[2];
        gos_prt_sm_counts(&j->rt, w);
        assert_int_equal(w[0], 66);
        assert_int_equal(w[1], 58);
        if (split == GOS_PMEM_SPLIT_SMS) {
            assert_int_equal(j->rt.count[0], 7026); /* 13200 * 66 / 124 = 7025.8 */
            assert_int_equal(j->rt.count[1], N - 7026);
        } else {
            assert_int_equal(j->rt.count[0], N / 2);
        }
        j->kind = GOS_PJOB_TASKS;
        j->repeats = 2;
        j->owner = owner;
        j->runs = runs;
        assert_int_equal(gos_place_run(d, j), GOS_OK);
        int load[GOS_MAX_SMS] = {0};
        for (uint32_t t = 0; t < N; t++) {
            assert_int_equal(runs[t], 1); /* exactly once */
            int p = t < j->rt.count[0] ? 0 : 1;
            assert_true(owner[t] < (uint32_t)m->sm_count);
            assert_int_equal(m->part_of[owner[t]], p);
            for (int i = 0; i < 8; i++)
                assert_int_not_equal((int)owner[t], idle[i]);
            load[owner[t]]++;
        }
        max_load[split] = 0;
        for (int s = 0; s < m->sm_count; s++) {
            int p = m->part_of[s];
            uint32_t fair = (j->rt.count[p] + w[p] - 1) / w[p];
            if (j->rt.part_of_sm[s] >= 0)
                assert_true(load[s] <= (int)fair && load[s] >= (int)fair - 1); /* balanced */
            max_load[split] = load[s] > max_load[split] ? load[s] : max_load[split];
        }
        expect[split] = 0;
        for (int p = 0; p < 2; p++) {
            int e = (int)((j->rt.count[p] + w[p] - 1) / w[p]);
            expect[split] = e > expect[split] ? e : expect[split];
        }
        assert_int_equal(max_load[split], expect[split]);
        free(j);
    }
    assert_int_equal(max_load[GOS_PMEM_SPLIT_SMS], 107);   /* ceil(7026 / 66) */
    assert_int_equal(max_load[GOS_PMEM_SPLIT_EQUAL], 114); /* ceil(6600 / 58) */
    free(owner);
    free(runs);
    gos_pmem_close(pm);
    gos_chip_free(chart);
    gos_device_close(d);
}

static void test_gemv_and_remote_cost(void **state)
{
    (void)state;
    gos_device *d;
    gos_chip *chart;
    open_charted("default", &d, &chart);
    gos_pmem *pm;
    assert_int_equal(gos_pmem_create(d, chart, 8ull << 20, &pm), GOS_OK);
    enum { COLS = 256, B = 3, RPT = 4, TASKS = 96 };
    float x[B * COLS], ref[B * TASKS * RPT], y[B * TASKS * RPT];
    for (int b = 0; b < B; b++)
        for (int k = 0; k < COLS; k++)
            x[b * COLS + k] = (float)((b * 7 + k * 3) % 9 - 4) / 1024.0f;
    for (int b = 0; b < B; b++)
        for (int r = 0; r < TASKS * RPT; r++) {
            float a = 0;
            for (int k = 0; k < COLS; k++)
                a += gos_pmem_pattern_w((uint64_t)r, (uint64_t)k) * x[b * COLS + k];
            ref[b * TASKS * RPT + r] = a;
        }
    gos_pmem_view pv[2], sv[2];
    assert_int_equal(gos_pmem_get_view(pm, 0, &pv[0]), GOS_OK);
    assert_int_equal(gos_pmem_get_view(pm, 1, &pv[1]), GOS_OK);
    assert_int_equal(gos_pmem_scrambled_views(pm, sv), GOS_OK);
    gos_pmem_view lin[2] = {{.base = gos_pmem_buffer(pm)->base, .bytes = 8ull << 20, .part = GOS_PMEM_LINEAR},
                            {.base = gos_pmem_buffer(pm)->base + (8ull << 20), .bytes = 8ull << 20,
                             .part = GOS_PMEM_LINEAR}};
    const gos_pmem_view *sets[3] = {pv, sv, lin};
    for (int s = 0; s < 3; s++) {
        struct gos_place_job *j = calloc(1, sizeof *j);
        assert_int_equal(gos_pmem_runtime(pm, NULL, 0, TASKS, GOS_PMEM_SPLIT_SMS, &j->rt), GOS_OK);
        j->kind = GOS_PJOB_GEMV;
        j->view[0] = sets[s][0];
        j->view[1] = sets[s][1];
        j->cols = COLS;
        j->batch = B;
        j->rows_per_task = RPT;
        j->init = 1;
        j->x = x;
        j->y = y;
        j->repeats = 1;
        memset(y, 0, sizeof y);
        if (gos_place_run(d, j))
            fail_msg("gemv %d: %s", s, gos_last_error());
        assert_memory_equal(y, ref, sizeof y); /* exact: the sums are exact in float */
        free(j);
    }
    /* READ by partition 0's SMs alone: its own view vs the other view vs linear. */
    double ms[3];
    const gos_pmem_view *rv[3] = {&pv[0], &pv[1], &lin[0]};
    for (int k = 0; k < 3; k++) {
        struct gos_place_job *j = calloc(1, sizeof *j);
        int idle[GOS_MAX_SMS], n = 0;
        const gos_numa_model *m = gos_pmem_model(pm);
        for (int s2 = 0; s2 < m->sm_count; s2++)
            if (m->part_of[s2] == 1)
                idle[n++] = s2;
        assert_int_equal(gos_pmem_runtime(pm, idle, n, 128, GOS_PMEM_SPLIT_SMS, &j->rt), GOS_OK);
        assert_int_equal(j->rt.count[0], 128);
        j->kind = GOS_PJOB_READ;
        j->view[0] = *rv[k];
        j->view[1] = *rv[k];
        j->task_bytes = 64 << 10;
        j->passes = 1;
        j->repeats = 5;
        assert_int_equal(gos_place_run(d, j), GOS_OK);
        ms[k] = j->ms[0];
        free(j);
    }
    /* remote costs hbm/fabric = 2245 / 1274 more; interleaved in between */
    assert_true(ms[1] / ms[0] > 1.5 && ms[1] / ms[0] < 2.1);
    assert_true(ms[2] > ms[0] * 1.1 && ms[2] < ms[1]);
    gos_pmem_close(pm);
    gos_chip_free(chart);
    gos_device_close(d);
}

static void test_bad_input(void **state)
{
    (void)state;
    gos_chip *c = NULL;
    unsetenv("GPUOS_CHIP");
    assert_int_equal(gos_pmem_chart_load(NULL, &c), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "no chart"));
    assert_int_not_equal(gos_pmem_chart_load("/nonexistent/chart.json", &c), GOS_OK);
    /* a chart without the hash */
    json_t *doc = json_loads(gos_chip_default_json(), 0, NULL);
    json_object_del(json_object_get(json_object_get(doc, "numa"), "hash"), "in_page_bits");
    json_object_del(json_object_get(doc, "numa"), "hash");
    const char *path = "/tmp/gpuos-place-nohash.json";
    json_dump_file(doc, path, 0);
    json_decref(doc);
    assert_int_equal(gos_pmem_chart_load(path, &c), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "hash"));
    setenv("GPUOS_CHIP", path, 1);
    gos_pmem *pm = NULL;
    gos_pmem_opts o = {.sim = "default"};
    assert_int_equal(gos_pmem_open(&o, 1 << 20, &pm), GOS_EINVAL);
    unsetenv("GPUOS_CHIP");
    unlink(path);
    /* a chart without partitions */
    doc = json_loads(gos_chip_default_json(), 0, NULL);
    json_object_del(doc, "numa");
    json_dump_file(doc, path, 0);
    json_decref(doc);
    assert_int_equal(gos_pmem_chart_load(path, &c), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "partitions"));
    unlink(path);

    gos_device *d;
    gos_chip *chart;
    open_charted("default", &d, &chart);
    assert_int_equal(gos_pmem_create(d, chart, 0, &pm), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "0 bytes"));
    assert_int_equal(gos_pmem_create(d, chart, d->info.mem_bytes, &pm), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "device memory"));
    chart->device.sm_count = 100;
    assert_int_equal(gos_pmem_create(d, chart, 1 << 20, &pm), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "SMs"));
    chart->device.sm_count = d->info.sm_count;
    snprintf(chart->device.uuid, sizeof chart->device.uuid, "GPU-other");
    assert_int_equal(gos_pmem_create(d, chart, 1 << 20, &pm), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "GPU-other"));
    chart->device.uuid[0] = 0;
    assert_int_equal(gos_pmem_create(d, chart, 1 << 20, &pm), GOS_OK);
    gos_pmem_view v;
    assert_int_equal(gos_pmem_get_view(pm, -1, &v), GOS_EINVAL);
    gos_prt_table t;
    int bad = 999;
    assert_int_equal(gos_pmem_runtime(pm, &bad, 1, 10, GOS_PMEM_SPLIT_SMS, &t), GOS_EINVAL);
    /* a job whose queues do not cover the tasks */
    struct gos_place_job *j = calloc(1, sizeof *j);
    assert_int_equal(gos_pmem_runtime(pm, NULL, 0, 100, GOS_PMEM_SPLIT_SMS, &j->rt), GOS_OK);
    j->kind = GOS_PJOB_READ;
    j->repeats = 1;
    j->rt.count[1] += 1;
    assert_int_equal(gos_place_run(d, j), GOS_EINVAL);
    j->rt.count[1] -= 1;
    assert_int_equal(gos_pmem_get_view(pm, 0, &j->view[0]), GOS_OK);
    assert_int_equal(gos_pmem_get_view(pm, 1, &j->view[1]), GOS_OK);
    j->task_bytes = 1 << 20; /* 100 tasks of 1 MB do not fit 1 MB views */
    j->passes = 1;
    assert_int_equal(gos_place_run(d, j), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "its view has"));
    free(j);
    gos_pmem_close(pm);
    gos_chip_free(chart);
    gos_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_views_default_chip), cmocka_unit_test(test_views_random_chips),
        cmocka_unit_test(test_copies),             cmocka_unit_test(test_runtime_tasks),
        cmocka_unit_test(test_gemv_and_remote_cost), cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
