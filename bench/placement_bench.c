/* SPDX-License-Identifier: Apache-2.0 */
/* placement_bench.c: partition-local memory on a real GPU (pillar 2, paper 001
 * section 7.1; bench/placement.sh runs it after charting the chip).
 *
 *   placement_bench --chart CHIP.json --out DIR [--device N | --sim CHIP] [--quick]
 *
 * Writes DIR/placement-check.json (placement checked by latency),
 * DIR/placement-locality.json (bandwidth and latency, local / remote /
 * interleaved / remap-only), DIR/placement-gemv.json (batched GEMV on the
 * runtime), DIR/placement-unequal.json (58/66 SMs: split by SM count vs equal)
 * and prints the tables. Every comparison runs its variants side by side,
 * round after round (ROUNDS x REPEATS launches each, after one warm-up), and
 * reports the median and the spread (min..max) of the launches.
 *
 * Variants: "local" = each partition's SMs read their partition's view;
 * "remote" = the other partition's view; "interleaved" = the same amount of
 * ordinary memory addressed linearly (no remap, pages alternate partitions);
 * "remap-only" = views whose parity table is wrong on every other 2 MB page:
 * the same remap work, half the data remote (the cost of remapping alone). */
#include "chip/chip.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "device/device.h"
#include "device/place_ops.h"
#include "place/place.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1ull << 20)
#define ROUNDS 3
#define REPEATS 5
#define MAXV 4

static gos_device *D;
static gos_pmem *PM;
static int QUICK;
static gos_pmem_view PV[2], SV[2], LIN[2];

enum { V_LOCAL, V_REMOTE, V_INTER, V_REMAP };
static const char *VNAME[] = {"local", "remote", "interleaved", "remap-only"};

static void views_of(int v, gos_pmem_view out[2])
{
    switch (v) {
    case V_LOCAL: out[0] = PV[0], out[1] = PV[1]; break;
    case V_REMOTE: out[0] = PV[1], out[1] = PV[0]; break;
    case V_INTER: out[0] = LIN[0], out[1] = LIN[1]; break;
    default: out[0] = SV[0], out[1] = SV[1]; break;
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double ms[ROUNDS * REPEATS];
    int n;
    double med, lo, hi;
} vstat;

static void finish(vstat *s)
{
    double v[ROUNDS * REPEATS];
    memcpy(v, s->ms, s->n * sizeof *v);
    qsort(v, s->n, sizeof *v, cmp_d);
    s->med = s->n % 2 ? v[s->n / 2] : 0.5 * (v[s->n / 2 - 1] + v[s->n / 2]);
    s->lo = v[0];
    s->hi = v[s->n - 1];
}

/* Runs job `j` for each variant vs[0..nv), ROUNDS rounds side by side. */
static int measure(const struct gos_place_job *tmpl, const int *vs, int nv, vstat *out)
{
    for (int k = 0; k < nv; k++)
        out[k].n = 0;
    struct gos_place_job *j = malloc(sizeof *j);
    int rc = GOS_OK;
    for (int r = 0; r < ROUNDS && !rc; r++)
        for (int k = 0; k < nv && !rc; k++) {
            *j = *tmpl;
            views_of(vs[k], j->view);
            j->repeats = REPEATS;
            if ((rc = gos_place_run(D, j)))
                break;
            for (int i = 0; i < REPEATS; i++)
                out[k].ms[out[k].n++] = j->ms[i];
        }
    free(j);
    for (int k = 0; k < nv && !rc; k++)
        finish(&out[k]);
    return rc;
}

static json_t *stat_json(const vstat *s, double bytes)
{
    json_t *o = json_object();
    json_object_set_new(o, "ms_median", json_real(s->med));
    json_object_set_new(o, "ms_min", json_real(s->lo));
    json_object_set_new(o, "ms_max", json_real(s->hi));
    json_object_set_new(o, "launches", json_integer(s->n));
    if (bytes > 0) {
        json_object_set_new(o, "gbps_median", json_real(bytes / (s->med * 1e6)));
        json_object_set_new(o, "gbps_min", json_real(bytes / (s->hi * 1e6)));
        json_object_set_new(o, "gbps_max", json_real(bytes / (s->lo * 1e6)));
    }
    return o;
}

/* Working SMs: partition `only` (0/1) or all (-1), minus the first n_idle1 SMs
 * of partition 1. */
static int table(int only, int n_idle1, uint32_t n_tasks, int split, gos_prt_table *t)
{
    const gos_numa_model *m = gos_pmem_model(PM);
    int idle[GOS_MAX_SMS], n = 0, k1 = 0;
    for (int s = 0; s < m->sm_count; s++) {
        if (only >= 0 && m->part_of[s] != only)
            idle[n++] = s;
        else if (m->part_of[s] == 1 && k1 < n_idle1) {
            idle[n++] = s;
            k1++;
        }
    }
    return gos_pmem_runtime(PM, idle, n, n_tasks, split, t);
}

static uint64_t pow2_floor(uint64_t x)
{
    uint64_t p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p;
}

/* A READ job over ws bytes read by partition `only`'s SMs (or all). */
static int read_job(struct gos_place_job *j, int only, int n_idle1, uint64_t ws, int split, double *bytes)
{
    memset(j, 0, sizeof *j);
    int sms = only >= 0 ? 66 : 132;
    uint64_t tb = pow2_floor(ws / ((uint64_t)sms * 8));
    tb = tb < 16384 ? 16384 : tb > MB ? MB : tb;
    uint32_t n = (uint32_t)(ws / tb);
    int rc = table(only, n_idle1, n, split, &j->rt);
    j->kind = GOS_PJOB_READ;
    j->task_bytes = tb;
    uint64_t want = ws >= (1ull << 30) ? 1 : (1ull << 30) / ws;
    j->passes = (uint32_t)(want < 4 ? 4 : want > 64 ? 64 : want);
    if (ws >= (1ull << 30))
        j->passes = 1;
    *bytes = (double)n * tb * j->passes;
    return rc;
}

static json_t *row(const char *what, const char *who, uint64_t ws, const int *vs, int nv, const vstat *s,
                   double bytes)
{
    json_t *o = json_object();
    json_object_set_new(o, "test", json_string(what));
    json_object_set_new(o, "readers", json_string(who));
    json_object_set_new(o, "working_set_bytes", json_integer((json_int_t)ws));
    json_t *v = json_object();
    for (int k = 0; k < nv; k++)
        json_object_set_new(v, VNAME[vs[k]], stat_json(&s[k], bytes));
    json_object_set_new(o, "variants", v);
    return o;
}

static void print_row(const char *what, const char *who, uint64_t ws, const int *vs, int nv, const vstat *s,
                      double bytes, const char *unit)
{
    printf("%-8s %-10s %8.1f MB ", what, who, ws / (double)MB);
    for (int k = 0; k < nv; k++) {
        double v = bytes > 0 ? bytes / (s[k].med * 1e6) : s[k].med;
        printf(" %s %.4g%s", VNAME[vs[k]], v, unit);
    }
    /* local's figure over each other layout's: throughput with bytes (times
     * inverted), else time; each ratio named by what it divides */
    for (int k = 1; k < nv && vs[0] == V_LOCAL; k++)
        if (vs[k] != V_REMOTE)
            printf("  %s/%s %.3f", VNAME[V_LOCAL], VNAME[vs[k]], bytes > 0 ? s[k].med / s[0].med : s[0].med / s[k].med);
    printf("\n");
}

static int save(json_t *doc, const char *dir, const char *name, json_t *prov)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char schema[128]; /* placement-check.json: gpuos.placement-check/1 */
    snprintf(schema, sizeof schema, "gpuos.%.*s/1", (int)(strlen(name) - strlen(".json")), name);
    json_object_set_new(doc, "schema", json_string(schema));
    json_object_set(doc, "provenance", prov);
    int rc = json_dump_file(doc, path, JSON_INDENT(1)) ? gos_fail(GOS_EIO, "cannot write %s", path) : GOS_OK;
    json_decref(doc);
    if (!rc)
        printf("wrote %s\n", path);
    return rc;
}

int main(int argc, char **argv)
{
    const char *chart_path = NULL, *sim = NULL, *out = NULL;
    int dev = 0, rc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chart") && i + 1 < argc)
            chart_path = argv[++i];
        else if (!strcmp(argv[i], "--sim") && i + 1 < argc)
            sim = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            dev = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            QUICK = 1;
        else {
            fprintf(stderr, "usage: placement_bench --chart CHIP.json --out DIR [--device N | --sim CHIP] [--quick]\n");
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "placement_bench: --out DIR is required\n");
        return 2;
    }
    mkdir(out, 0755);
    gos_chip *chart = NULL;
    gos_device_spec spec = {.sim = sim, .ordinal = dev};
    if ((rc = gos_pmem_chart_load(chart_path, &chart)) || (rc = gos_device_open(&spec, &D))) {
        fprintf(stderr, "placement_bench: %s\n", gos_last_error());
        gos_chip_free(chart);
        return 1;
    }
    uint64_t big = QUICK ? 48 * MB : 2048 * MB, V = big + big / 4 + 64 * MB;
    if ((rc = gos_pmem_create(D, chart, V, &PM))) {
        fprintf(stderr, "placement_bench: %s\n", gos_last_error());
        return 1;
    }
    const gos_mem_buf *buf = gos_pmem_buffer(PM);
    gos_pmem_get_view(PM, 0, &PV[0]);
    gos_pmem_get_view(PM, 1, &PV[1]);
    if ((rc = gos_pmem_scrambled_views(PM, SV)))
        goto fail;
    for (int p = 0; p < 2; p++)
        LIN[p] = (gos_pmem_view){.base = buf->base + p * V, .bytes = V, .part = GOS_PMEM_LINEAR};

    char host[256] = "", date[64], cmd[1024] = "";
    gethostname(host, sizeof host);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    for (int i = 0; i < argc; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
    const char *commit = getenv("GOS_COMMIT");
    json_t *prov = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b}", "date", date, "commit",
                             commit ? commit : "unknown", "command", cmd, "driver", D->info.driver_version,
                             "host", host, "gpu_uuid", D->info.uuid, "gpu_name", D->info.name,
                             "simulated", D->info.simulated);
    printf("placement bench on %s%s (%s), chart %s\n", gos_dev_label(D), D->info.name, D->info.uuid,
           chart_path ? chart_path : "$GPUOS_CHIP");

    /* (i) placement, checked by latency */
    gos_pmem_check_result cr;
    double t_alloc, t_par;
    gos_pmem_times(PM, &t_alloc, &t_par);
    if ((rc = gos_pmem_check(PM, 2, &cr)))
        goto fail;
    json_t *doc = json_object();
    json_object_set_new(doc, "bytes_per_view", json_integer((json_int_t)V));
    json_object_set_new(doc, "unit_bytes", json_integer((json_int_t)cr.unit_bytes));
    json_object_set_new(doc, "parity_probe_s", json_real(t_par));
    json_object_set_new(doc, "alloc_s", json_real(t_alloc));
    json_t *vv = json_array();
    for (int p = 0; p < 2; p++) {
        json_array_append_new(vv, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "partition", p,
                                            "units", (json_int_t)cr.units[p], "in_partition",
                                            (json_int_t)cr.in_target[p], "in_partition_first_sweep",
                                            (json_int_t)cr.first_pass[p], "reprobed",
                                            (json_int_t)cr.reprobed[p], "unclassified_first_sweep",
                                            (json_int_t)cr.unclassified[p], "fraction", cr.frac[p],
                                            "fraction_first_sweep",
                                            cr.units[p] ? (double)cr.first_pass[p] / cr.units[p] : 0));
        printf("check: view %d: %.4f %% of %llu units in partition %d (%.4f %% by the first sweep, %llu re-probed)\n",
               p, 100 * cr.frac[p], (unsigned long long)cr.units[p], p,
               cr.units[p] ? 100.0 * cr.first_pass[p] / cr.units[p] : 0, (unsigned long long)cr.reprobed[p]);
    }
    json_object_set_new(doc, "views", vv);
    json_object_set_new(doc, "check_s", json_real(cr.t_sweep_s + cr.t_reprobe_s));
    json_object_set_new(doc, "pass_99_7", json_boolean(cr.frac[0] >= 0.997 && cr.frac[1] >= 0.997));
    if ((rc = save(doc, out, "placement-check.json", prov)))
        goto fail;

    /* (ii)/(iii) locality: bandwidth and latency */
    json_t *rows = json_array();
    struct gos_place_job *j = calloc(1, sizeof *j);
    vstat s[MAXV];
    double bytes;
    const int v4[] = {V_LOCAL, V_REMOTE, V_INTER, V_REMAP};
    const uint64_t tenant_ws[] = {5 * MB, 10 * MB, 20 * MB, 30 * MB, 40 * MB, 60 * MB, 80 * MB, 120 * MB, big};
    const uint64_t quick_ws[] = {5 * MB, 40 * MB};
    const uint64_t *wsl = QUICK ? quick_ws : tenant_ws;
    int nws = QUICK ? 2 : 9;
    printf("\n-- read bandwidth (GB/s), median of %d launches --\n", ROUNDS * REPEATS);
    for (int i = 0; i < nws; i++) {
        if ((rc = read_job(j, 0, 0, wsl[i], GOS_PMEM_SPLIT_SMS, &bytes)) || (rc = measure(j, v4, 4, s)))
            goto fail;
        json_array_append_new(rows, row("read", "partition 0 SMs", wsl[i], v4, 4, s, bytes));
        print_row("read", "part0-SMs", wsl[i], v4, 4, s, bytes, "");
    }
    const uint64_t all_ws[] = {40 * MB, 80 * MB, 120 * MB, 240 * MB, 2 * big};
    for (int i = QUICK ? 4 : 0; i < 5; i++) {
        if ((rc = read_job(j, -1, 0, all_ws[i], GOS_PMEM_SPLIT_SMS, &bytes)) || (rc = measure(j, v4, 4, s)))
            goto fail;
        json_array_append_new(rows, row("read", "all SMs", all_ws[i], v4, 4, s, bytes));
        print_row("read", "all-SMs", all_ws[i], v4, 4, s, bytes, "");
    }
    printf("\n-- pointer chase, one thread on one SM of partition 0 (ns per step) --\n");
    const uint64_t chase_ws[] = {16 * MB, QUICK ? 32 * MB : 1024 * MB};
    for (int i = 0; i < 2; i++) {
        memset(j, 0, sizeof *j);
        const gos_numa_model *m = gos_pmem_model(PM);
        int sm0 = -1;
        for (int x = 0; x < m->sm_count && sm0 < 0; x++)
            if (m->part_of[x] == 0)
                sm0 = x;
        int idle[GOS_MAX_SMS], n = 0;
        for (int x = 0; x < m->sm_count; x++)
            if (x != sm0)
                idle[n++] = x;
        if ((rc = gos_pmem_runtime(PM, idle, n, 1, GOS_PMEM_SPLIT_SMS, &j->rt)))
            goto fail;
        j->kind = GOS_PJOB_CHASE;
        j->n_nodes = chase_ws[i] / 128;
        j->steps = QUICK ? 2000 : 20000;
        if ((rc = measure(j, v4, 4, s)))
            goto fail;
        json_t *r = row("chase", "one SM of partition 0", chase_ws[i], v4, 4, s, 0);
        json_object_set_new(r, "steps", json_integer((json_int_t)j->steps));
        for (int k = 0; k < 4; k++)
            json_object_set_new(json_object_get(json_object_get(r, "variants"), VNAME[k]), "ns_per_step",
                                json_real(s[k].med * 1e6 / (double)j->steps));
        json_array_append_new(rows, r);
        printf("chase    one-SM     %8.1f MB ", chase_ws[i] / (double)MB);
        for (int k = 0; k < 4; k++)
            printf(" %s %.1f ns", VNAME[k], s[k].med * 1e6 / (double)j->steps);
        printf("\n");
    }
    doc = json_object();
    json_object_set_new(doc, "rows", rows);
    if ((rc = save(doc, out, "placement-locality.json", prov)))
        goto fail;

    /* (iv) batched GEMV on the runtime */
    printf("\n-- batched GEMV y = W x (batch 4, 4096 columns), all SMs (GB/s of W) --\n");
    rows = json_array();
    const uint64_t gemv_ws[] = {32 * MB, 64 * MB, 128 * MB, 512 * MB, 2 * big};
    const int v3[] = {V_LOCAL, V_INTER, V_REMAP};
    enum { COLS = 4096, B = 4, RPT = 16 };
    float *x = malloc(sizeof(float) * B * COLS);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < COLS; k++)
            x[b * COLS + k] = (float)((b * 7 + k * 3) % 9 - 4) / 1024.0f;
    for (int i = QUICK ? 3 : 0; i < 5; i++) {
        uint64_t ws = QUICK ? 16 * MB : gemv_ws[i];
        uint32_t tasks = (uint32_t)(ws / ((uint64_t)RPT * COLS * 4));
        memset(j, 0, sizeof *j);
        if ((rc = table(-1, 0, tasks, GOS_PMEM_SPLIT_SMS, &j->rt)))
            goto fail;
        j->kind = GOS_PJOB_GEMV;
        j->cols = COLS;
        j->batch = B;
        j->rows_per_task = RPT;
        j->init = 1;
        j->x = x;
        uint64_t rows_n = (uint64_t)tasks * RPT;
        float *y = malloc(sizeof(float) * B * rows_n);
        /* exactness: every variant's y against the host reference on sampled rows */
        uint64_t bad = 0, checked = 0;
        for (int k = 0; k < 3; k++) {
            struct gos_place_job *jj = malloc(sizeof *jj);
            *jj = *j;
            views_of(v3[k], jj->view);
            jj->repeats = 1;
            jj->y = y;
            if ((rc = gos_place_run(D, jj))) {
                free(jj);
                free(y);
                goto fail;
            }
            free(jj);
            for (uint64_t r = 0; r < rows_n; r += 1 + rows_n / 512)
                for (int b = 0; b < B; b++) {
                    float a = 0;
                    for (int c = 0; c < COLS; c++)
                        a += gos_pmem_pattern_w(r, (uint64_t)c) * x[b * COLS + c];
                    checked++;
                    bad += y[(uint64_t)b * rows_n + r] != a;
                }
        }
        free(y);
        if (bad) {
            rc = gos_fail(GOS_EDEVICE, "GEMV %llu MB: %llu of %llu sampled outputs wrong",
                          (unsigned long long)(ws / MB), (unsigned long long)bad, (unsigned long long)checked);
            goto fail;
        }
        /* the three layouts share the memory: each run refills W (untimed) */
        if ((rc = measure(j, v3, 3, s)))
            goto fail;
        json_t *r = row("gemv", "all SMs", ws, v3, 3, s, (double)ws);
        json_object_set_new(r, "outputs_checked_exact", json_integer((json_int_t)checked));
        json_array_append_new(rows, r);
        print_row("gemv", "all-SMs", ws, v3, 3, s, (double)ws, "");
    }
    free(x);
    doc = json_object();
    json_object_set_new(doc, "rows", rows);
    json_object_set_new(doc, "kernel", json_string("y[b] = W x[b], b < 4, W fp32 row-major 4096 columns, "
                                                   "16 rows per task, one warp per row, float4 loads"));
    if ((rc = save(doc, out, "placement-gemv.json", prov)))
        goto fail;

    /* (v) unequal partitions: 8 SMs of partition 1 idle */
    printf("\n-- 66 / 58 working SMs: split by SM count vs equal split (ms) --\n");
    rows = json_array();
    const int vl[] = {V_LOCAL};
    struct {
        const char *what;
        uint64_t ws;
    } uq[] = {{"read", 2 * big}, {"read", 80 * MB}, {"gemv", QUICK ? 16 * MB : 1024 * MB}};
    for (int i = 0; i < 3; i++) {
        vstat st[2];
        for (int split = 0; split < 2; split++) {
            if (!strcmp(uq[i].what, "read")) {
                if ((rc = read_job(j, -1, 8, uq[i].ws, split, &bytes)))
                    goto fail;
            } else {
                memset(j, 0, sizeof *j);
                uint32_t tasks = (uint32_t)(uq[i].ws / ((uint64_t)RPT * COLS * 4));
                if ((rc = table(-1, 8, tasks, split, &j->rt)))
                    goto fail;
                j->kind = GOS_PJOB_GEMV;
                j->cols = COLS;
                j->batch = B;
                j->rows_per_task = RPT;
                j->init = 1;
                float *xx = calloc(B * COLS, sizeof *xx);
                j->x = xx;
                rc = measure(j, vl, 1, &st[split]);
                free(xx);
                if (rc)
                    goto fail;
                continue;
            }
            if ((rc = measure(j, vl, 1, &st[split])))
                goto fail;
        }
        json_t *r = json_object();
        json_object_set_new(r, "test", json_string(uq[i].what));
        json_object_set_new(r, "working_set_bytes", json_integer((json_int_t)uq[i].ws));
        uint32_t w[2];
        gos_prt_sm_counts(&j->rt, w);
        json_object_set_new(r, "working_sms", json_pack("[i,i]", (int)w[0], (int)w[1]));
        json_object_set_new(r, "split_by_sms", stat_json(&st[0], 0));
        json_object_set_new(r, "split_equal", stat_json(&st[1], 0));
        json_object_set_new(r, "equal_over_by_sms", json_real(st[1].med / st[0].med));
        json_array_append_new(rows, r);
        printf("%-8s %8.1f MB  by-SMs %.3f ms [%.3f..%.3f]  equal %.3f ms [%.3f..%.3f]  equal/by-SMs %.3f\n",
               uq[i].what, uq[i].ws / (double)MB, st[0].med, st[0].lo, st[0].hi, st[1].med, st[1].lo,
               st[1].hi, st[1].med / st[0].med);
    }
    doc = json_object();
    json_object_set_new(doc, "rows", rows);
    if ((rc = save(doc, out, "placement-unequal.json", prov)))
        goto fail;
    free(j);
    json_decref(prov);
    gos_pmem_close(PM);
    gos_device_close(D);
    gos_chip_free(chart);
    return 0;
fail:
    fprintf(stderr, "placement_bench: %s\n", gos_last_error());
    return 1;
}
