/* SPDX-License-Identifier: Apache-2.0 */
/* colocation.c: the co-location experiment of paper 001 section 7.3 on a real GPU
 * (bench/colocation.sh runs it; issue 13).
 *
 * Two tenants run kernels/gemm_cluster.cu (FP32 GEMM, the A tile shared through
 * distributed shared memory inside each thread-block cluster) at the same time,
 * each on its own green context, each launching `iters` GEMMs on its own stream;
 * a tenant's throughput is its FLOPs over its own first-to-last event time.
 *   naive: two successive green-context allocations of >= 64 SMs (one split by
 *          count: the first group of 64, then everything else), tenant A with
 *          clusters of 2, 4 or 8 and tenant B with clusters of 2, A on the first
 *          set then on the second;
 *   allocator: A asks gos_smset_alloc for 64 SMs running clusters of 8, B for 64
 *          SMs running clusters of 2, A arriving first, then B first.
 * Each configuration is repeated (--reps); medians and min..max are reported.
 * Before measuring, the GEMM is checked against a double-precision host product
 * for every cluster size. Writes one JSON document (--out). */
#include "chip/chip.h"
#include "common/clock.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "device/device.h"
#include "device/exec_ops.h"
#include "device/green_ops.h"
#include "place/smset.h"
#include "topology/topology.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gemm_params {
    uint64_t a, b, c;
    int32_t m, n, k, pad; /* the kernel's parameters, exactly (40 bytes) */
};

struct tenant {
    uint64_t a, b, c;
};

static gos_device *dev;
static void *fn;
static int M = 8192, N = 8192, K = 1024;
static unsigned dyn_smem; /* unused dynamic shared memory: one block per SM */

#define CHECK(call)                                                                              \
    do {                                                                                         \
        if ((call) != GOS_OK) {                                                                  \
            fprintf(stderr, "colocation: %s: %s\n", #call, gos_last_error());                    \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static int launch(const struct tenant *t, int m, int n, int k, int cs, void *stream)
{
    struct gemm_params p = {t->a, t->b, t->c, m, n, k, 0};
    struct gos_launch_cfg c;
    memset(&c, 0, sizeof c);
    c.grid[0] = (unsigned)(n / 128);
    c.grid[1] = (unsigned)(m / 128);
    c.grid[2] = 1;
    c.block[0] = 256;
    c.block[1] = c.block[2] = 1;
    c.cluster[0] = (unsigned)cs;
    c.cluster[1] = c.cluster[2] = 1;
    c.smem = dyn_smem;
    c.params = &p;
    c.param_bytes = sizeof p;
    return gos_exec_launch(dev, fn, &c, stream);
}

static void fill(float *v, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

/* GEMM against the host in double precision, every cluster size. */
static json_t *verify(void *stream)
{
    const int m = 256, n = 1024, k = 64;
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
    fill(a, (size_t)m * k, 1);
    fill(b, (size_t)k * n, 2);
    struct tenant t;
    CHECK(gos_exec_mem_alloc(dev, sizeof(float) * m * k, &t.a));
    CHECK(gos_exec_mem_alloc(dev, sizeof(float) * k * n, &t.b));
    CHECK(gos_exec_mem_alloc(dev, sizeof(float) * m * n, &t.c));
    CHECK(gos_exec_copy_htod_sync(dev, t.a, a, sizeof(float) * m * k));
    CHECK(gos_exec_copy_htod_sync(dev, t.b, b, sizeof(float) * k * n));
    json_t *out = json_object();
    int all_ok = 1;
    for (int cs = 1; cs <= 8; cs *= 2) {
        CHECK(launch(&t, m, n, k, cs, stream));
        CHECK(gos_exec_stream_sync(dev, stream));
        CHECK(gos_exec_copy_dtoh_sync(dev, c, t.c, sizeof(float) * m * n));
        double worst = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double ref = 0;
                for (int q = 0; q < k; q++)
                    ref += (double)a[i * k + q] * b[q * n + j];
                double e = fabs(ref - c[i * n + j]) / (fabs(ref) + 1.0);
                if (e > worst)
                    worst = e;
            }
        char key[16];
        snprintf(key, sizeof key, "cluster_%d", cs);
        json_object_set_new(out, key, json_real(worst));
        if (!(worst < 1e-4))
            all_ok = 0;
        printf("gemm check, clusters of %d: max relative error %.2e\n", cs, worst);
    }
    json_object_set_new(out, "ok", json_boolean(all_ok));
    gos_exec_mem_free(dev, t.a);
    gos_exec_mem_free(dev, t.b);
    gos_exec_mem_free(dev, t.c);
    free(a);
    free(b);
    free(c);
    if (!all_ok) {
        fprintf(stderr, "colocation: the GEMM kernel computes wrong results\n");
        exit(1);
    }
    return out;
}

static struct tenant make_tenant(unsigned seed)
{
    struct tenant t;
    size_t na = (size_t)M * K, nb = (size_t)K * N;
    float *h = malloc(sizeof(float) * (na > nb ? na : nb));
    CHECK(gos_exec_mem_alloc(dev, sizeof(float) * na, &t.a));
    CHECK(gos_exec_mem_alloc(dev, sizeof(float) * nb, &t.b));
    CHECK(gos_exec_mem_alloc(dev, sizeof(float) * (size_t)M * N, &t.c));
    fill(h, na, seed);
    CHECK(gos_exec_copy_htod_sync(dev, t.a, h, sizeof(float) * na));
    fill(h, nb, seed + 1);
    CHECK(gos_exec_copy_htod_sync(dev, t.b, h, sizeof(float) * nb));
    free(h);
    return t;
}

/* Both tenants at once: iters launches each; TFLOP/s of each. */
static void run_pair(const struct tenant *ta, int csa, void *sa, const struct tenant *tb, int csb, void *sb,
                     int iters, double *tfa, double *tfb)
{
    void *e[4];
    for (int i = 0; i < 4; i++)
        CHECK(gos_exec_event_create(dev, &e[i]));
    CHECK(gos_exec_event_record(dev, e[0], sa));
    CHECK(gos_exec_event_record(dev, e[2], sb));
    for (int i = 0; i < iters; i++) {
        CHECK(launch(ta, M, N, K, csa, sa));
        CHECK(launch(tb, M, N, K, csb, sb));
    }
    CHECK(gos_exec_event_record(dev, e[1], sa));
    CHECK(gos_exec_event_record(dev, e[3], sb));
    CHECK(gos_exec_event_sync(dev, e[1]));
    CHECK(gos_exec_event_sync(dev, e[3]));
    uint64_t na, nb;
    CHECK(gos_exec_event_elapsed_ns(dev, e[0], e[1], &na));
    CHECK(gos_exec_event_elapsed_ns(dev, e[2], e[3], &nb));
    double flops = 2.0 * M * N * (double)K * iters;
    *tfa = flops / (double)na / 1e3;
    *tfb = flops / (double)nb / 1e3;
    for (int i = 0; i < 4; i++)
        gos_exec_event_destroy(dev, e[i]);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double s[64];
    memcpy(s, v, sizeof(double) * n);
    qsort(s, (size_t)n, sizeof(double), cmp_d);
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static json_t *series(const double *v, int n)
{
    json_t *a = json_array();
    double lo = v[0], hi = v[0];
    for (int i = 0; i < n; i++) {
        json_array_append_new(a, json_real(v[i]));
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    return json_pack("{s:o, s:f, s:f, s:f, s:f}", "tflops", a, "median", median(v, n), "min", lo, "max", hi,
                     "spread_percent", 100.0 * (hi - lo) / median(v, n));
}

static json_t *set_json(const gos_smset *s)
{
    json_t *cl = json_object();
    for (int k = 1; k <= 16; k *= 2) {
        char key[8];
        snprintf(key, sizeof key, "%d", k);
        json_object_set_new(cl, key, json_integer(s->clusters[k]));
    }
    json_t *gpcs = json_array();
    for (int i = 0; i < s->n_gpcs; i++)
        json_array_append_new(gpcs, json_pack("[i,i]", s->gpcs[i], s->gpc_sms[i]));
    return json_pack("{s:i, s:o, s:i, s:o, s:o, s:o}", "n_sms", s->n_sms, "sms", gos_json_ints(s->sms, s->n_sms),
                     "free_floating_sms", s->n_free_floating, "gpcs_sms", gpcs, "groups",
                     gos_json_ints(s->groups, s->n_groups), "clusters_at_once", cl);
}

static void *stream_on(void *gctx)
{
    void *s;
    CHECK(gos_green_stream_create(dev, gctx, &s));
    return s;
}

/* Two successive naive allocations from the split of split_min (0: the
 * driver's minimum): the first takes the split's groups in order until it has
 * min_sms SMs, the second takes the rest; A (clusters of 2, 4, 8) on the first
 * then on the second, B (clusters of 2) on the other. */
static json_t *run_naive(gos_smset_pool *pool, int split_min, int min_sms, const struct tenant *TA,
                         const struct tenant *TB, int iters, int reps)
{
    const struct gos_green_split *sp;
    CHECK(gos_green_split(dev, split_min, &sp));
    int first[GOS_GREEN_MAX_GROUPS], n_first = 0, rest[GOS_GREEN_MAX_GROUPS], n_rest = 0, have = 0;
    int sms1[GOS_MAX_SMS], n1 = 0, sms2[GOS_MAX_SMS], n2 = 0;
    for (int g = 0; g < sp->n_groups; g++) {
        const struct gos_green_group *G = &sp->groups[g];
        if (have < min_sms) {
            first[n_first++] = g;
            have += G->n_sms;
            for (int i = 0; i < G->n_sms; i++)
                sms1[n1++] = G->sms[i];
        } else {
            rest[n_rest++] = g;
            for (int i = 0; i < G->n_sms; i++)
                sms2[n2++] = G->sms[i];
        }
    }
    if (!n_rest) {
        fprintf(stderr, "colocation: the split of %d leaves nothing for a second set\n", sp->min_count);
        exit(1);
    }
    gos_smset set[2];
    CHECK(gos_smset_describe(pool, sms1, n1, &set[0]));
    CHECK(gos_smset_describe(pool, sms2, n2, &set[1]));
    void *gc1, *gc2;
    CHECK(gos_green_create(dev, sp->min_count, first, n_first, &gc1));
    CHECK(gos_green_create(dev, sp->min_count, rest, n_rest, &gc2));
    void *s1 = stream_on(gc1), *s2 = stream_on(gc2);
    printf("naive (split of %d): first %d SMs (%d free-floating, %d clusters of 8), second %d SMs (%d free-floating, "
           "%d clusters of 8)\n", sp->min_count, set[0].n_sms, set[0].n_free_floating, set[0].clusters[8],
           set[1].n_sms, set[1].n_free_floating, set[1].clusters[8]);
    json_t *nj = json_object();
    json_object_set_new(nj, "split_min_count", json_integer(sp->min_count));
    json_object_set_new(nj, "first_set", set_json(&set[0]));
    json_object_set_new(nj, "second_set", set_json(&set[1]));
    json_t *rows = json_array();
    static const double paper[9] = {0, 0, 1.0, 0, 1.18, 0, 0, 0, 1.18};
    for (int csa = 2; csa <= 8; csa *= 2) {
        double a_first[64], b_first[64], a_second[64], b_second[64];
        for (int r = 0; r < reps; r++) {
            run_pair(TA, csa, s1, TB, 2, s2, iters, &a_first[r], &b_second[r]);
            run_pair(TA, csa, s2, TB, 2, s1, iters, &a_second[r], &b_first[r]);
        }
        double ratio = median(a_first, reps) / median(a_second, reps);
        double model = (double)(set[0].clusters[csa] * csa) / (set[1].clusters[csa] * csa);
        json_array_append_new(rows, json_pack("{s:i, s:o, s:o, s:o, s:o, s:f, s:f, s:f}", "cluster_a", csa,
                                              "a_on_first", series(a_first, reps), "b_on_second",
                                              series(b_second, reps), "a_on_second", series(a_second, reps),
                                              "b_on_first", series(b_first, reps), "a_first_over_second", ratio,
                                              "usable_sms_ratio", model, "paper_ratio", paper[csa]));
        printf("  A cluster %d: A on first %.2f TFLOP/s, on second %.2f: ratio %.3f (usable SMs %d/%d = %.3f; "
               "paper %.2f)\n", csa, median(a_first, reps), median(a_second, reps), ratio,
               set[0].clusters[csa] * csa, set[1].clusters[csa] * csa, model, paper[csa]);
    }
    json_object_set_new(nj, "runs", rows);
    CHECK(gos_green_stream_destroy(dev, s1));
    CHECK(gos_green_stream_destroy(dev, s2));
    CHECK(gos_green_destroy(dev, gc1));
    CHECK(gos_green_destroy(dev, gc2));
    return nj;
}

int main(int argc, char **argv)
{
    const char *chart_path = NULL, *out_path = NULL, *fatbin = "build/kernels/gemm_cluster.fatbin";
    int ordinal = 0, reps = 5, iters = 0, min_sms = 64, one_per_sm = 1;
    double seconds = 0.4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "usage: colocation --chart CHIP.json --out OUT.json [--device N] [--reps N] "
                            "[--iters N] [--seconds S] [--fatbin F] [--sms N] [--m M --n N --k K] [--blocks-per-sm 1|2]\n");
            return 2;
        }
        i++;
        if (!strcmp(a, "--chart"))
            chart_path = v;
        else if (!strcmp(a, "--out"))
            out_path = v;
        else if (!strcmp(a, "--fatbin"))
            fatbin = v;
        else if (!strcmp(a, "--device"))
            ordinal = atoi(v);
        else if (!strcmp(a, "--reps"))
            reps = atoi(v);
        else if (!strcmp(a, "--iters"))
            iters = atoi(v);
        else if (!strcmp(a, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(a, "--blocks-per-sm"))
            one_per_sm = atoi(v) == 1;
        else if (!strcmp(a, "--sms"))
            min_sms = atoi(v);
        else if (!strcmp(a, "--m"))
            M = atoi(v);
        else if (!strcmp(a, "--n"))
            N = atoi(v);
        else if (!strcmp(a, "--k"))
            K = atoi(v);
        else {
            fprintf(stderr, "colocation: unexpected argument \"%s\"\n", a);
            return 2;
        }
    }
    if (!chart_path || !out_path || reps < 1 || reps > 64 || M % 128 || N % 1024 || K % 16 || K < 16) {
        fprintf(stderr, "colocation: needs --chart and --out; reps 1..64; M %% 128, N %% 1024, K %% 16 == 0\n");
        return 2;
    }
    gos_chip *chart;
    CHECK(gos_chip_load(chart_path, &chart));
    gos_device_spec spec = {.sim = NULL, .ordinal = ordinal};
    CHECK(gos_device_open(&spec, &dev));
    CHECK(gos_exec_init(dev));
    FILE *f = fopen(fatbin, "rb");
    if (!f) {
        fprintf(stderr, "colocation: cannot open %s (built with nvcc?)\n", fatbin);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *img = malloc((size_t)sz);
    if (fread(img, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "colocation: cannot read %s\n", fatbin);
        return 1;
    }
    fclose(f);
    void *mod;
    CHECK(gos_exec_module_load(dev, img, (size_t)sz, "gemm_cluster", &mod));
    free(img);
    CHECK(gos_exec_function(dev, mod, "gos_gemm_cluster", &fn));
    /* One block per SM, as CUTLASS's Hopper GEMMs (about 200 KB of shared memory
     * each): the clusters at once are then the chart's clusters of SMs. */
    if (one_per_sm)
        dyn_smem = (unsigned)(dev->info.max_smem_per_block_optin - 32 * 1024 - 1024);

    json_t *doc = json_object();
    char summary[128];
    gos_topo_summary(chart, summary, sizeof summary);
    json_object_set_new(doc, "schema", json_string("gpuos.colocation/1"));
    json_object_set_new(doc, "gpu", json_pack("{s:s, s:s, s:s, s:i}", "name", dev->info.name, "uuid", dev->info.uuid,
                                              "driver", dev->info.driver_version, "sm_count", dev->info.sm_count));
    json_object_set_new(doc, "chart_summary", json_string(summary));
    json_object_set_new(doc, "gemm", json_pack("{s:i, s:i, s:i, s:i, s:s}", "m", M, "n", N, "k", K,
                                               "dynamic_smem_bytes", (int)dyn_smem, "kernel",
                                               "kernels/gemm_cluster.cu gos_gemm_cluster (FP32 FFMA, A tile shared "
                                               "through distributed shared memory in each cluster)"));

    /* The allocator's pool (groups of the driver's minimum), also used to
     * describe the naive sets from the chart. */
    gos_smset_pool *pool;
    CHECK(gos_smset_pool_open(dev, chart, &pool));
    void *plain;
    CHECK(gos_exec_stream_create(dev, &plain));
    json_object_set_new(doc, "gemm_check", verify(plain));

    struct tenant TA = make_tenant(11), TB = make_tenant(23);

    /* Calibrate: launches for ~seconds on the whole GPU's first 64-SM group with
     * clusters of 2 (the same count for every run). */
    if (iters <= 0) {
        int g0 = 0;
        void *gc, *st;
        CHECK(gos_green_create(dev, 0, &g0, 1, &gc));
        st = stream_on(gc);
        CHECK(launch(&TA, M, N, K, 2, st));
        CHECK(gos_exec_stream_sync(dev, st));
        double t0 = gos_now_s();
        CHECK(launch(&TA, M, N, K, 2, st));
        CHECK(gos_exec_stream_sync(dev, st));
        /* one group of 8 SMs here; a set of >= 64 runs >= 8 times faster */
        double per = (gos_now_s() - t0) / 8.0;
        iters = (int)(seconds / per + 0.5);
        if (iters < 3)
            iters = 3;
        CHECK(gos_green_stream_destroy(dev, st));
        CHECK(gos_green_destroy(dev, gc));
    }
    json_object_set_new(doc, "iters_per_run", json_integer(iters));
    json_object_set_new(doc, "reps", json_integer(reps));
    /* Naive, as the paper: the driver's groups of 8 in its order, the first
     * allocation taking groups until it has min_sms SMs, the second the rest. */
    json_object_set_new(doc, "naive", run_naive(pool, 0, min_sms, &TA, &TB, iters, reps));
    /* Naive, one split by count of min_sms: its first group vs everything else. */
    json_object_set_new(doc, "naive_split_by_count", run_naive(pool, min_sms, min_sms, &TA, &TB, iters, reps));

    /* The allocator, both arrival orders. */
    json_t *aj = json_array();
    double med_a[2], med_b[2];
    for (int order = 0; order < 2; order++) {
        gos_smset_req ra = {.sms = min_sms, .cluster = 8, .partition = -1};
        gos_smset_req rb = {.sms = min_sms, .cluster = 2, .partition = -1};
        gos_smset sa, sb;
        if (order == 0) {
            CHECK(gos_smset_alloc(pool, &ra, &sa));
            CHECK(gos_smset_alloc(pool, &rb, &sb));
        } else {
            CHECK(gos_smset_alloc(pool, &rb, &sb));
            CHECK(gos_smset_alloc(pool, &ra, &sa));
        }
        void *ga, *gb;
        CHECK(gos_smset_green(dev, pool, &sa, &ga));
        CHECK(gos_smset_green(dev, pool, &sb, &gb));
        void *qa = stream_on(ga), *qb = stream_on(gb);
        double ta[64], tb[64];
        for (int r = 0; r < reps; r++)
            run_pair(&TA, 8, qa, &TB, 2, qb, iters, &ta[r], &tb[r]);
        med_a[order] = median(ta, reps);
        med_b[order] = median(tb, reps);
        json_array_append_new(aj, json_pack("{s:s, s:o, s:o, s:o, s:o}", "arrival", order ? "B then A" : "A then B",
                                            "a_set", set_json(&sa), "b_set", set_json(&sb), "a", series(ta, reps),
                                            "b", series(tb, reps)));
        printf("smset  %s: A (cluster 8, %d SMs, %d free-floating) %.2f TFLOP/s, B (cluster 2, %d SMs, %d "
               "free-floating) %.2f TFLOP/s\n", order ? "B then A" : "A then B", sa.n_sms, sa.n_free_floating,
               med_a[order], sb.n_sms, sb.n_free_floating, med_b[order]);
        CHECK(gos_green_stream_destroy(dev, qa));
        CHECK(gos_green_stream_destroy(dev, qb));
        CHECK(gos_green_destroy(dev, ga));
        CHECK(gos_green_destroy(dev, gb));
        CHECK(gos_smset_release(pool, sa.id));
        CHECK(gos_smset_release(pool, sb.id));
    }
    double da = 100.0 * fabs(med_a[0] - med_a[1]) / (0.5 * (med_a[0] + med_a[1]));
    double db = 100.0 * fabs(med_b[0] - med_b[1]) / (0.5 * (med_b[0] + med_b[1]));
    json_object_set_new(doc, "allocator", json_pack("{s:o, s:f, s:f, s:b}", "runs", aj, "a_order_difference_percent",
                                                    da, "b_order_difference_percent", db, "within_2_percent",
                                                    da <= 2.0 && db <= 2.0));
    printf("smset  order difference: A %.2f %%, B %.2f %% (target <= 2 %%)\n", da, db);
    int rc = gos_json_save_atomic(doc, out_path);
    json_decref(doc);
    if (rc) {
        fprintf(stderr, "colocation: %s\n", gos_last_error());
        return 1;
    }
    gos_exec_stream_destroy(dev, plain);
    gos_smset_pool_free(pool);
    gos_chip_free(chart);
    gos_device_close(dev);
    return 0;
}
