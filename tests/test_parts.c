/* SPDX-License-Identifier: Apache-2.0 */
/* test_parts.c: issue 26, N memory partitions, several dies and tiers.
 *
 * - peaks: overlapping twin peaks are one tier, three separated peaks three,
 *   a flat slow tail none (tiers found from the data, never assumed two);
 * - gf2: parities recovered from labels of a random linear hash (random k,
 *   masks, cluster numbering): the codes predict every label and the masks
 *   span the truth's;
 * - the chip format: a gpuos.chip/2 chip round-trips (tiers, dies, parities);
 *   the built-in /1 chip reads as one parity; impossible shapes are refused;
 * - discovery on held-out B200- and MI300X-shaped chips (tests/partgen.h, seed
 *   from /dev/urandom, printed; PARTS_SEED replays): partitions, dies and the
 *   parities' span equal the truth, the parity map predicts the simulated
 *   device's home partition of every sampled line;
 * - partition-local memory: one view per partition of a 16-partition chart,
 *   every unit of view p in partition p by the device's truth, the runtime
 *   splitting tasks over 16 queues by SM count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/device.h"
#include "device/sim/sim_internal.h"
#include "numa/numa.h"
#include "partgen.h"
#include "place/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t g_seed;

static void test_peaks(void **state)
{
    (void)state;
    gos_rng r;
    gos_rng_seed(&r, g_seed);
    enum { N = 12000 };
    static uint32_t v[N];
    gos_tiers_n t;
    /* twin local peaks 545 / 558 (noise sd 16) and the other die at 920 */
    for (int i = 0; i < N; i++) {
        double base = i % 4 == 0 ? 545 : i % 4 == 1 ? 558 : 920;
        v[i] = (uint32_t)lround(base * (1 + 0.03 * gos_rng_normal(&r)));
        if (gos_rng_uniform(&r) < 0.05)
            v[i] += 100 + (uint32_t)(600 * gos_rng_uniform(&r));
    }
    assert_int_equal(gos_tiers_find_n(v, N, &t), GOS_OK);
    assert_int_equal(t.n, 2);
    assert_true(fabs(t.median[0] - 551) < 10 && fabs(t.median[1] - 920) < 15);
    assert_true(t.threshold[0] > 600 && t.threshold[0] < 850);
    /* three tiers of 1/16, 1/16, 14/16 with a slow tail */
    for (int i = 0; i < N; i++) {
        double base = i % 16 == 0 ? 707 : i % 16 == 1 ? 817 : 926;
        v[i] = (uint32_t)lround(base * (1 + 0.015 * gos_rng_normal(&r)));
        if (gos_rng_uniform(&r) < 0.05)
            v[i] += 100 + (uint32_t)(600 * gos_rng_uniform(&r));
    }
    assert_int_equal(gos_tiers_find_n(v, N, &t), GOS_OK);
    assert_int_equal(t.n, 3);
    assert_true(fabs(t.median[0] - 707) < 8 && fabs(t.median[1] - 817) < 8 && fabs(t.median[2] - 926) < 8);
    assert_true(fabs(t.fraction[0] - 1.0 / 16) < 0.02);
    /* one tier */
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)lround(600 * (1 + 0.02 * gos_rng_normal(&r)));
    assert_int_equal(gos_tiers_find_n(v, N, &t), GOS_OK);
    assert_int_equal(t.n, 1);
    uint32_t few[10] = {1, 2, 3};
    assert_int_equal(gos_tiers_find_n(few, 10, &t), GOS_EAMBIGUOUS);
}

/* gf2 on a known linear hash: label of offset o = perm[M o]. */
typedef struct {
    int k;
    uint32_t m[5];
    int perm[32];
    int calls;
} lin_hash;

static int lin_label(void *ctx, const uint64_t *offs, int n, int *labels)
{
    lin_hash *h = ctx;
    h->calls++;
    for (int i = 0; i < n; i++) {
        int c = 0;
        for (int j = 0; j < h->k; j++)
            c |= __builtin_parityll(offs[i] & h->m[j]) << j;
        labels[i] = h->perm[c];
    }
    return GOS_OK;
}

/* Reduced row echelon basis over GF(2), sorted: equal iff equal spans. */
static int rref(const uint32_t *m, int k, uint32_t *out)
{
    int n = 0;
    for (int j = 0; j < k; j++) {
        uint32_t x = m[j];
        for (int i = 0; i < n; i++)
            if ((x ^ out[i]) < x)
                x ^= out[i];
        if (!x)
            continue;
        for (int i = 0; i < n; i++)
            if ((out[i] ^ x) < out[i])
                out[i] ^= x;
        out[n++] = x;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (out[j] < out[i]) {
                uint32_t t = out[i];
                out[i] = out[j];
                out[j] = t;
            }
    return n;
}

static void same_span(const uint32_t *a, int ka, const uint32_t *b, int kb)
{
    uint32_t ra[8] = {0}, rb[8] = {0};
    int na = rref(a, ka, ra), nb = rref(b, kb, rb);
    assert_int_equal(na, nb);
    for (int i = 0; i < na; i++)
        assert_int_equal(ra[i], rb[i]);
}

static void test_gf2(void **state)
{
    (void)state;
    gos_rng r;
    gos_rng_seed(&r, g_seed + 1);
    for (int trial = 0; trial < 50; trial++) {
        lin_hash h = {.k = 1 + (int)gos_rng_below(&r, 4)};
        partgen_masks(&r, h.k, h.m);
        int n = 1 << h.k;
        for (int c = 0; c < n; c++)
            h.perm[c] = c;
        gos_rng_shuffle(&r, h.perm, n);
        int code_of[32], k = 0;
        uint32_t masks[5];
        assert_int_equal(gos_gf2_codes(n, h.perm[0], lin_label, &h, code_of, masks, &k), GOS_OK);
        assert_int_equal(k, h.k);
        same_span(masks, k, h.m, h.k);
        for (int t = 0; t < 64; t++) { /* the codes predict every label */
            uint64_t o = (gos_rng_u64(&r) & 0x1fff80ull);
            int lab;
            lin_label(&h, &o, 1, &lab);
            int c = 0;
            for (int j = 0; j < k; j++)
                c |= __builtin_parityll(o & masks[j]) << j;
            assert_int_equal(code_of[lab], c);
        }
    }
    /* not 2^k, and an inconsistent labelling: refused */
    lin_hash h = {.k = 2, .m = {1u << 12, 1u << 13}, .perm = {0, 1, 2, 3}};
    int code_of[32], k;
    uint32_t masks[5];
    assert_int_equal(gos_gf2_codes(3, 0, lin_label, &h, code_of, masks, &k), GOS_EAMBIGUOUS);
    h.m[1] = 0; /* only 2 of 4 partitions reachable inside a page */
    assert_int_not_equal(gos_gf2_codes(4, 0, lin_label, &h, code_of, masks, &k), GOS_OK);
    assert_non_null(strstr(gos_last_error(), "partitions"));
}

static const char *write_tmp(json_t *doc, const char *tag)
{
    static char path[2][96];
    static int which;
    char *p = path[which++ & 1];
    snprintf(p, 96, "/tmp/gpuos-parts-%s-%d.json", tag, (int)getpid());
    json_dump_file(doc, p, 0);
    return p;
}

static void test_chip_format(void **state)
{
    (void)state;
    partgen_truth t;
    json_t *doc = partgen_mi300x(g_seed, &t);
    char *text = json_dumps(doc, 0);
    gos_chip *c = NULL, *c2 = NULL;
    assert_int_equal(gos_chip_parse(text, "mi300x", &c), GOS_OK);
    free(text);
    assert_int_equal(c->n_parts, 16);
    assert_int_equal(c->n_parities, 4);
    assert_int_equal(c->n_dies, 8);
    assert_int_equal(c->n_tiers, 3);
    assert_int_equal(c->device.sm_count, 304);
    json_t *j = gos_chip_to_json(c);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "gpuos.chip/2");
    text = json_dumps(j, 0);
    assert_int_equal(gos_chip_parse(text, "again", &c2), GOS_OK);
    free(text);
    json_decref(j);
    for (int p = 0; p < 16; p++) {
        assert_int_equal(c2->die_of_part[p], c->die_of_part[p]);
        for (int q = 0; q < 16; q++)
            assert_int_equal(gos_chip_tier_of(c2, p, q), gos_chip_tier_of(c, p, q));
    }
    for (int jj = 0; jj < 4; jj++) {
        assert_int_equal(c2->parity[jj].in_page, c->parity[jj].in_page);
        assert_true(c2->parity[jj].phys == c->parity[jj].phys);
    }
    /* tiers by relation: same partition 0, same die 1, other die 2 */
    for (int p = 0; p < 16; p++)
        for (int q = 0; q < 16; q++)
            assert_int_equal(gos_chip_tier_of(c, p, q),
                             p == q ? 0 : c->die_of_part[p] == c->die_of_part[q] ? 1 : 2);
    gos_chip_free(c);
    gos_chip_free(c2);
    /* the built-in chip (gpuos.chip/1 shape): one parity, no tiers, old fields */
    assert_int_equal(gos_chip_load("default", &c), GOS_OK);
    assert_int_equal(c->n_parities, 1);
    assert_int_equal(c->n_tiers, 0);
    assert_true(c->has_latency && c->n_in_page_bits > 0);
    gos_chip_free(c);
    /* two partitions given by parities alone: the /1 fields are filled from them */
    assert_int_equal(gos_chip_parse("{\"schema\":\"gpuos.chip/2\",\"device\":{\"sm_count\":4},\"numa\":{"
                                    "\"partitions\":[{\"sms\":[0,1]},{\"sms\":[2,3]}],\"hash\":{\"parities\":"
                                    "[{\"in_page_bits\":[12,14],\"physical_bits\":[30]}]}}}", "two", &c),
                     GOS_OK);
    assert_int_equal(c->n_in_page_bits, 2);
    assert_int_equal(c->in_page_bits[1], 14);
    assert_int_equal(c->n_physical_bits, 1);
    assert_int_equal(c->hash_granularity, 4096);
    gos_chip_free(c);
    /* impossible shapes: a clear error */
    json_t *numa = json_object_get(doc, "numa");
    json_array_remove(json_object_get(json_object_get(numa, "hash"), "parities"), 0);
    text = json_dumps(doc, 0);
    assert_int_equal(gos_chip_parse(text, "bad", &c), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "2^k"));
    free(text);
    json_decref(doc);
}

/* In-process discovery on a partgen chip: the truth, order-insensitive. */
static void check_probe(json_t *doc, const partgen_truth *t, const char *what)
{
    const char *path = write_tmp(doc, "probe");
    gos_device *d;
    assert_int_equal(gos_sim_open(path, &d), GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    o.hist_samples = 8192;
    o.buf_bytes = 256ull << 20;
    gos_numa_model m;
    if (gos_numa_discover(d, &o, &m))
        fail_msg("%s (seed %llu): %s", what, (unsigned long long)g_seed, gos_last_error());
    if (m.n_parts != t->n_parts)
        fail_msg("%s (seed %llu): %d partitions, truth %d", what, (unsigned long long)g_seed, m.n_parts, t->n_parts);
    int map[32], back[32];
    for (int p = 0; p < 32; p++)
        map[p] = back[p] = -1;
    for (int s = 0; s < t->sm_count; s++) { /* a bijection found <-> truth */
        int a = m.part_of[s], b = t->part_of[s];
        if ((map[a] >= 0 && map[a] != b) || (back[b] >= 0 && back[b] != a))
            fail_msg("%s (seed %llu): SM %d in the wrong partition", what, (unsigned long long)g_seed, s);
        map[a] = b;
        back[b] = a;
    }
    assert_int_equal(m.n_dies, t->n_dies);
    for (int p = 0; p < m.n_parts && m.n_dies; p++)
        for (int q = 0; q < m.n_parts; q++)
            assert_int_equal(m.die_of_part[p] == m.die_of_part[q],
                             t->die_of_part[map[p]] == t->die_of_part[map[q]]);
    assert_int_equal(m.n_tiers, t->n_tiers);
    same_span(m.masks, m.n_parities, t->masks, t->n_masks);
    /* the map predicts the device's own home of sampled lines */
    gos_mem_buf *b;
    assert_int_equal(gos_mem_alloc(d, 64ull << 20, &b), GOS_OK);
    gos_numa_map *nm;
    assert_int_equal(gos_numa_map_build(d, &m, b, &nm), GOS_OK);
    assert_int_equal(nm->n_unknown, 0);
    gos_rng r;
    gos_rng_seed(&r, g_seed + 7);
    /* truth home -> probe's numbering via an SM of that home partition */
    for (int i = 0; i < 2000; i++) {
        uint64_t off = gos_rng_u64(&r) % b->bytes / 128 * 128;
        int home = gos_sim_mem_home(d, b->base + off), got = gos_numa_partition_of(nm, off);
        assert_true(home >= 0 && home < d->chip->n_parts && d->chip->parts[home].n_sms > 0);
        int sm = d->chip->parts[home].sms[0];
        if (t->n_parts == d->chip->n_parts)
            assert_int_equal(got, m.part_of[sm]);
        else /* B200: the chart's partition is the truth's die */
            assert_int_equal(map[got], t->part_of[sm]);
    }
    gos_numa_map_free(nm);
    gos_mem_free(d, b);
    gos_numa_model_free(&m);
    gos_device_close(d);
    unlink(path);
}

static void test_probe_shapes(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        partgen_truth t;
        json_t *doc = partgen_b200(g_seed + k, &t);
        check_probe(doc, &t, "B200-like");
        json_decref(doc);
        doc = partgen_b200_split(g_seed + k, 1, &t);
        check_probe(doc, &t, "B200-like, twins apart");
        json_decref(doc);
        doc = partgen_mi300x(g_seed + k, &t);
        check_probe(doc, &t, "MI300X-like");
        json_decref(doc);
    }
}

static void test_pmem_views(void **state)
{
    (void)state;
    partgen_truth t;
    json_t *doc = partgen_mi300x(g_seed + 11, &t);
    const char *path = write_tmp(doc, "pmem");
    json_decref(doc);
    gos_device *d;
    assert_int_equal(gos_sim_open(path, &d), GOS_OK);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    o.buf_bytes = 256ull << 20;
    gos_numa_model m;
    assert_int_equal(gos_numa_discover(d, &o, &m), GOS_OK);
    gos_chip *chart = gos_chip_new();
    chart->device.sm_count = d->info.sm_count;
    assert_int_equal(gos_numa_model_to_chip(&m, chart), GOS_OK);
    gos_numa_model_free(&m);
    /* through JSON, as a program reads its chart */
    json_t *j = gos_chip_to_json(chart);
    char *text = json_dumps(j, 0);
    json_decref(j);
    gos_chip_free(chart);
    assert_int_equal(gos_chip_parse(text, "chart", &chart), GOS_OK);
    free(text);
    gos_pmem *pm;
    if (gos_pmem_create(d, chart, 8ull << 20, &pm))
        fail_msg("pmem (seed %llu): %s", (unsigned long long)g_seed, gos_last_error());
    assert_int_equal(gos_pmem_n_parts(pm), 16);
    for (int p = 0; p < 16; p++) {
        uint64_t units, in;
        assert_int_equal(gos_pmem_truth_part(pm, p, &units, &in), GOS_OK);
        assert_true(units == (8ull << 20) >> __builtin_ctz(chart->parity[0].in_page | chart->parity[1].in_page |
                                                          chart->parity[2].in_page | chart->parity[3].in_page));
        if (in != units)
            fail_msg("seed %llu: view %d: %llu of %llu units in its partition", (unsigned long long)g_seed, p,
                     (unsigned long long)in, (unsigned long long)units);
    }
    gos_pmem_view v;
    assert_int_equal(gos_pmem_get_view(pm, 15, &v), GOS_OK);
    assert_int_equal(v.n_parities, 4);
    assert_int_equal(gos_pmem_get_view(pm, 16, &v), GOS_EINVAL);
    /* 16 queues by working SM count (19 each): equal shares */
    gos_prt_table rt;
    assert_int_equal(gos_pmem_runtime(pm, NULL, 0, 1600, GOS_PMEM_SPLIT_SMS, &rt), GOS_OK);
    uint32_t sum = 0;
    for (int p = 0; p < 16; p++) {
        assert_int_equal(rt.count[p], 100);
        assert_int_equal(rt.first[p], sum);
        sum += rt.count[p];
    }
    /* the byte copies reach the view's logical bytes */
    uint8_t in[5000], out[5000];
    for (int i = 0; i < 5000; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    assert_int_equal(gos_pmem_write(pm, 9, 12345, in, sizeof in), GOS_OK);
    assert_int_equal(gos_pmem_read(pm, 9, 12345, out, sizeof out), GOS_OK);
    assert_memory_equal(in, out, sizeof in);
    gos_pmem_close(pm);
    gos_chip_free(chart);
    gos_device_close(d);
    unlink(path);
}

int main(void)
{
    g_seed = partgen_seed("test_parts", "PARTS_SEED");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peaks),      cmocka_unit_test(test_gf2),        cmocka_unit_test(test_chip_format),
        cmocka_unit_test(test_probe_shapes), cmocka_unit_test(test_pmem_views),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
