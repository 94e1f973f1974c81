/* SPDX-License-Identifier: Apache-2.0 */
/* placement_client.c: partition-local memory as a vGPU client sees it (issue 12),
 * on a real GPU behind `gpuos serve` (bench/placement_client.sh starts the
 * daemon with the chip's chart). Everything goes through libgpuos:
 *   - two views of BYTES each from gpuos_pmem_alloc (the client's executor
 *     allocates and measures the parities);
 *   - placement checked independently by latency probing (gpuos_pmem_check:
 *     src/place/check.c in the executor), >= 99.7 % of each view's units;
 *   - host writes/reads through both views byte-exact, and the raw allocation
 *     (plain gpuos_memcpy_dtoh) holding one unit of each view in every pair;
 *   - the client's own kernel (the placement bench's READ kernel, loaded from
 *     its fatbin with gpuos_module_load) run on the partition-aware runtime by
 *     partition 0's SMs only, reading view 0 (local), view 1 (remote) and the
 *     same bytes interleaved (no placement): GPU time per launch from the
 *     daemon's accounting (vGPU compute_ns); every task run exactly once, by an
 *     SM of partition 0.
 * Writes one JSON document (schema gpuos.placement-client/1) to OUT.
 *
 *   placement_client VGPU FATBIN BYTES_PER_VIEW OUT.json */
#define CLIENT_NAME "placement_client"
#include "../tests/client_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MB (1ull << 20)
#define REPS 7
#define BLOCK 512

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (uint8_t)(seed >> 56);
    }
}

static uint64_t compute_ns(gpuos_vgpu *g)
{
    gpuos_vgpu_facts f;
    CHECK(gpuos_vgpu_info(g, &f) == 0, "vgpu_info");
    return f.compute_ns;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: placement_client VGPU FATBIN BYTES_PER_VIEW OUT.json\n");
        return 2;
    }
    char *end;
    uint64_t bytes = strtoull(argv[3], &end, 0);
    if (*end || bytes < 256 * MB || bytes % MB) {
        fprintf(stderr, "placement_client: BYTES_PER_VIEW must be a multiple of 1 MB, at least 256 MB\n");
        return 2;
    }
    FILE *fb = fopen(argv[2], "rb");
    CHECK(fb, "cannot open the fatbin %s", argv[2]);
    fseek(fb, 0, SEEK_END);
    long fbn = ftell(fb);
    fseek(fb, 0, SEEK_SET);
    void *img = malloc((size_t)fbn);
    CHECK(img && fread(img, 1, (size_t)fbn, fb) == (size_t)fbn, "reading %s", argv[2]);
    fclose(fb);
    FILE *out = fopen(argv[4], "w");
    CHECK(out, "cannot write %s", argv[4]);

    gpuos_vgpu *g = open_or_die(argv[1]);
    gpuos_device_facts dev;
    CHECK(gpuos_device_info(g, &dev) == 0, "device_info");
    int32_t av[256];
    unsigned char ok[256];
    CHECK(gpuos_device_attributes(g, av, ok, 256) == 0, "attributes");
    unsigned smem = ok[97] && av[97] > 2048 ? (unsigned)av[97] - 1024 : 200 * 1024; /* one block per SM */

    double t0 = now_s();
    gpuos_pmem *m;
    CHECK(gpuos_pmem_alloc(g, bytes, &m) == 0, "pmem_alloc %llu", (unsigned long long)bytes);
    double t_alloc = now_s() - t0;
    gpuos_dptr base;
    size_t all, charged;
    gpuos_pmem_extent(m, &base, &all, &charged);
    gpuos_pmem_view v[2];
    gpuos_pmem_get_view(m, 0, &v[0]);
    gpuos_pmem_get_view(m, 1, &v[1]);
    uint64_t used, quota, total;
    CHECK(gpuos_mem_info(g, &used, &quota, &total) == 0, "mem_info");

    /* placement by latency */
    gpuos_pmem_check_result c;
    CHECK(gpuos_pmem_check(m, 2, &c) == 0, "check");
    double frac[2] = {(double)c.local[0] / (double)c.units[0], (double)c.local[1] / (double)c.units[1]};
    printf("check: view 0 %.4f %%, view 1 %.4f %% of %llu units in their partition (%.2f s)\n", 100 * frac[0],
           100 * frac[1], (unsigned long long)c.units[0], c.check_s);

    /* byte-exact through the views; the raw allocation splits every pair */
    size_t n = 64 * MB;
    uint8_t *a = malloc(n), *b = malloc(n), *r = malloc(n), *raw = malloc(2 * n);
    CHECK(a && b && r && raw, "malloc");
    fill(a, n, 11);
    fill(b, n, 12);
    CHECK(gpuos_pmem_write(m, 0, 0, a, n) == 0 && gpuos_pmem_write(m, 1, 0, b, n) == 0, "write");
    CHECK(gpuos_pmem_read(m, 0, 0, r, n) == 0, "read");
    int exact0 = !memcmp(a, r, n);
    CHECK(gpuos_pmem_read(m, 1, 0, r, n) == 0, "read");
    int exact1 = !memcmp(b, r, n);
    size_t odd = 4095, on = 5 * MB + 77;
    CHECK(gpuos_pmem_write(m, 0, odd, b + 3, on) == 0, "write odd");
    memcpy(a + odd, b + 3, on);
    CHECK(gpuos_pmem_read(m, 0, 0, r, n) == 0, "read");
    int exact_odd = !memcmp(a, r, n);
    CHECK(gpuos_memcpy_dtoh(g, raw, base, 2 * n) == 0, "raw dtoh");
    uint64_t unit = 1ull << v[0].shift, pairs = n / unit, pairs_ok = 0;
    for (uint64_t j = 0; j < pairs; j++) {
        const uint8_t *u0 = raw + 2 * j * unit, *u1 = u0 + unit;
        int x = !memcmp(u0, a + j * unit, unit) && !memcmp(u1, b + j * unit, unit);
        int y = !memcmp(u1, a + j * unit, unit) && !memcmp(u0, b + j * unit, unit);
        pairs_ok += x != y;
    }
    printf("data: view 0 exact %d, view 1 exact %d, odd %d, raw pairs %llu of %llu\n", exact0, exact1, exact_odd,
           (unsigned long long)pairs_ok, (unsigned long long)pairs);

    /* the client's own kernel on the runtime, partition 0's SMs only */
    gpuos_module mod;
    gpuos_function f_map, f_lin;
    CHECK(gpuos_module_load(g, img, (size_t)fbn, &mod) == 0, "module_load");
    CHECK(gpuos_module_function(g, mod, "gos_place_read_map", &f_map) == 0, "read_map");
    CHECK(gpuos_module_function(g, mod, "gos_place_read_lin", &f_lin) == 0, "read_lin");
    gos_prt_table t0t;
    CHECK(gpuos_pmem_runtime(m, NULL, 0, 1, 0, &t0t) == 0, "runtime");
    int idle[GOS_PRT_MAX_SMS], n_idle = 0, sms0 = 0;
    for (int s = 0; s < dev.sm_count && s < GOS_PRT_MAX_SMS; s++) {
        if (t0t.part_of_sm[s] == 1)
            idle[n_idle++] = s;
        sms0 += t0t.part_of_sm[s] == 0;
    }
    uint64_t tb = MB, ws = bytes / MB * MB;
    uint32_t tasks = (uint32_t)(ws / tb);
    int passes = 4;
    gos_prt_table t;
    CHECK(gpuos_pmem_runtime(m, idle, n_idle, tasks, 0, &t) == 0, "runtime table");
    CHECK(t.count[0] == tasks && t.count[1] == 0, "all tasks to partition 0");
    gpuos_dptr ctr, owner, runs, sink;
    CHECK(gpuos_mem_alloc(g, 2 * 64 * 4, &ctr) == 0 && gpuos_mem_alloc(g, tasks * 4ull, &owner) == 0 &&
              gpuos_mem_alloc(g, tasks * 4ull, &runs) == 0 && gpuos_mem_alloc(g, 64, &sink) == 0,
          "mem_alloc");
    uint32_t *zero = calloc(tasks + 128, 4), *hrun = malloc(tasks * 4ull), *hown = malloc(tasks * 4ull);
    CHECK(zero && hrun && hown, "malloc");
    gpuos_pmem_view lin = {.base = base, .bytes = ws, .part = GOS_PMEM_LINEAR};
    const char *names[3] = {"local", "remote", "interleaved"};
    double med_ms[3], min_ms[3], max_ms[3], wall_ms[3] = {0, 0, 0};
    int once_ok[3];
    for (int k = 0; k < 3; k++) {
        gpuos_pmem_view rv = k == 0 ? v[0] : k == 1 ? v[1] : lin;
        gpuos_function fn = k == 2 ? f_lin : f_map;
        double ms[REPS + 1];
        for (int rep = 0; rep <= REPS; rep++) { /* the first launch is untimed */
            CHECK(gpuos_memcpy_htod(g, ctr, zero, 2 * 64 * 4) == 0 && gpuos_memcpy_htod(g, runs, zero, tasks * 4ull) == 0,
                  "zero");
            gpuos_params p;
            gpuos_params_init(&p);
            int passes_ = passes;
            CHECK(gpuos_params_add(&p, &t, sizeof t) == 0 && gpuos_params_add(&p, &rv, sizeof rv) == 0 &&
                      gpuos_params_add(&p, &rv, sizeof rv) == 0 && gpuos_params_add(&p, &tb, 8) == 0 &&
                      gpuos_params_add(&p, &passes_, 4) == 0 && gpuos_params_add(&p, &ctr, 8) == 0 &&
                      gpuos_params_add(&p, &owner, 8) == 0 && gpuos_params_add(&p, &runs, 8) == 0 &&
                      gpuos_params_add(&p, &sink, 8) == 0,
                  "params");
            gpuos_launch_config cfg = {.grid = {(unsigned)dev.sm_count, 1, 1}, .block = {BLOCK, 1, 1},
                                       .shared_mem = smem};
            uint64_t c0 = compute_ns(g);
            double w0 = now_s();
            CHECK(gpuos_launch(g, fn, &cfg, p.buf, p.len) == 0 && gpuos_synchronize(g) == 0, "launch %s", names[k]);
            double w1 = now_s();
            uint64_t c1 = compute_ns(g);
            /* the daemon's GPU time of the launch; wall time where it has none */
            ms[rep] = c1 > c0 ? (double)(c1 - c0) * 1e-6 : (w1 - w0) * 1e3;
            wall_ms[k] += rep ? (w1 - w0) * 1e3 / REPS : 0;
        }
        CHECK(gpuos_memcpy_dtoh(g, hrun, runs, tasks * 4ull) == 0 && gpuos_memcpy_dtoh(g, hown, owner, tasks * 4ull) == 0,
              "dtoh runs");
        once_ok[k] = 1;
        for (uint32_t i = 0; i < tasks; i++)
            once_ok[k] &= hrun[i] == 1 && hown[i] < GOS_PRT_MAX_SMS && t.part_of_sm[hown[i]] == 0;
        qsort(ms + 1, REPS, sizeof ms[0], cmp_d);
        med_ms[k] = ms[1 + REPS / 2];
        min_ms[k] = ms[1];
        max_ms[k] = ms[REPS];
        printf("read by partition 0's %d SMs, %s: %.3f ms median, %.1f GB/s, tasks once by partition 0: %d\n", sms0,
               names[k], med_ms[k], (double)ws * passes / (med_ms[k] * 1e6), once_ok[k]);
    }

    double moved = (double)ws * passes;
    fprintf(out, "{\n \"schema\": \"gpuos.placement-client/1\",\n");
    fprintf(out, " \"device\": {\"name\": \"%s\", \"uuid\": \"%s\", \"sm_count\": %d, \"simulated\": %s},\n", dev.name,
            dev.uuid, dev.sm_count, dev.simulated ? "true" : "false");
    fprintf(out, " \"bytes_per_view\": %llu, \"allocation_bytes\": %llu, \"charged_bytes\": %llu, "
                 "\"vgpu_mem_used\": %llu, \"vgpu_mem_quota\": %llu,\n",
            (unsigned long long)bytes, (unsigned long long)all, (unsigned long long)charged,
            (unsigned long long)used, (unsigned long long)quota);
    fprintf(out, " \"alloc_s\": %.6f, \"parity_probe_s\": %.6f, \"unit_bytes\": %u, \"check_s\": %.4f,\n", t_alloc,
            c.parity_s, c.unit_bytes, c.check_s);
    fprintf(out, " \"views\": [\n");
    for (int p = 0; p < 2; p++)
        fprintf(out, "  {\"partition\": %d, \"units\": %llu, \"in_partition\": %llu, \"fraction\": %.6f}%s\n", p,
                (unsigned long long)c.units[p], (unsigned long long)c.local[p], frac[p], p ? "" : ",");
    fprintf(out, " ],\n \"pass_99_7\": %s,\n", frac[0] >= 0.997 && frac[1] >= 0.997 ? "true" : "false");
    fprintf(out, " \"data\": {\"bytes\": %zu, \"view0_exact\": %s, \"view1_exact\": %s, \"odd_exact\": %s, "
                 "\"raw_pairs\": %llu, \"raw_pairs_split\": %llu},\n",
            n, exact0 ? "true" : "false", exact1 ? "true" : "false", exact_odd ? "true" : "false",
            (unsigned long long)pairs, (unsigned long long)pairs_ok);
    fprintf(out, " \"read\": {\"readers\": \"partition 0 SMs\", \"sms\": %d, \"working_set_bytes\": %llu, "
                 "\"task_bytes\": %llu, \"passes\": %d, \"launches\": %d, \"timing\": \"vGPU compute_ns per launch\",\n"
                 "  \"variants\": {\n",
            sms0, (unsigned long long)ws, (unsigned long long)tb, passes, REPS);
    for (int k = 0; k < 3; k++)
        fprintf(out, "   \"%s\": {\"ms_median\": %.4f, \"ms_min\": %.4f, \"ms_max\": %.4f, \"gbps_median\": %.1f, "
                     "\"wall_ms_mean\": %.4f, \"tasks_once_in_partition\": %s}%s\n",
                names[k], med_ms[k], min_ms[k], max_ms[k], moved / (med_ms[k] * 1e6), wall_ms[k],
                once_ok[k] ? "true" : "false",
                k < 2 ? "," : "");
    fprintf(out, "  },\n  \"local_over_interleaved\": %.4f, \"local_over_remote\": %.4f\n }\n}\n",
            med_ms[2] / med_ms[0], med_ms[1] / med_ms[0]);
    fclose(out);
    CHECK(gpuos_pmem_free(m) == 0, "pmem_free");
    gpuos_close(g);
    int pass = frac[0] >= 0.997 && frac[1] >= 0.997 && exact0 && exact1 && exact_odd && pairs_ok == pairs &&
               once_ok[0] && once_ok[1] && once_ok[2];
    printf("placement_client: %s\n", pass ? "pass" : "FAIL");
    return pass ? 0 : 1;
}
