/* SPDX-License-Identifier: Apache-2.0 */
/* test_smset.c: the SM-set allocator (src/place/smset.h) and the simulated
 * green contexts, on random chips whose truth is known (tests/chipgen.h, with the
 * H200's clusters of 2: two SMs of one GPC, eligible and free-floating apart).
 * Every capability is recomputed here from the generator's truth, never from the
 * allocator's own functions. Properties over many random request sequences:
 * sets disjoint; each set runs the clusters its request needs (by the truth, and
 * by probing its green context: the promised clusters are co-resident, one more
 * is not); refusals only when the free groups truly cannot serve; nothing
 * cluster-capable in a cluster <= 2 set that free-floating groups could replace;
 * a cluster-8 tenant and a cluster-2 tenant are served alike in either order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "chip/chip.h"
#include "common/status.h"
#include "device/device.h"
#include "device/green_ops.h"
#include "place/smset.h"
#include "chipgen.h"
#include "fixtures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The truth of one chip, from the generator (or the default chip's file). */
struct truth {
    int n_gpcs;
    int gpc_of[256];
    int elig[256];
    int part_of[256];
    int gpc_size[32];
    int n_sms;
};

static void truth_from_chip(const gos_chip *c, struct truth *t)
{
    memset(t, 0, sizeof *t);
    for (int s = 0; s < 256; s++)
        t->gpc_of[s] = t->part_of[s] = -1;
    t->n_gpcs = c->n_gpcs;
    for (int g = 0; g < c->n_gpcs; g++) {
        t->gpc_size[g] = c->gpcs[g].n_sms;
        for (int i = 0; i < c->gpcs[g].n_sms; i++)
            t->gpc_of[c->gpcs[g].sms[i]] = g;
        for (int i = 0; i < c->gpcs[g].n_cluster; i++)
            t->elig[c->gpcs[g].cluster_sms[i]] = 1;
        t->n_sms += c->gpcs[g].n_sms;
    }
    for (int p = 0; p < c->n_parts; p++)
        for (int i = 0; i < c->parts[p].n_sms; i++)
            t->part_of[c->parts[p].sms[i]] = p;
}

static void truth_from_gen(const chipgen_truth *T, json_t *doc, struct truth *t)
{
    memset(t, 0, sizeof *t);
    for (int s = 0; s < 256; s++)
        t->gpc_of[s] = t->part_of[s] = -1;
    t->n_gpcs = T->n_gpcs;
    for (int g = 0; g < T->n_gpcs; g++) {
        t->gpc_size[g] = T->size[g];
        for (int i = 0; i < T->size[g]; i++) {
            t->gpc_of[T->sms[g][i]] = g;
            t->elig[T->sms[g][i]] = !T->free_[g][i];
        }
        t->n_sms += T->size[g];
    }
    json_t *parts = json_object_get(json_object_get(doc, "numa"), "partitions");
    for (size_t p = 0; p < json_array_size(parts); p++) {
        json_t *sms = json_object_get(json_array_get(parts, p), "sms");
        for (size_t i = 0; i < json_array_size(sms); i++)
            t->part_of[json_integer_value(json_array_get(sms, i))] = (int)p;
    }
}

/* Clusters of k at once on the SMs in[] (the H200 rules, from the truth). */
static int t_clusters(const struct truth *t, const unsigned char *in, int k)
{
    int e[32] = {0}, f[32] = {0}, n = 0, c = 0;
    for (int s = 0; s < 256; s++)
        if (in[s]) {
            n++;
            (t->elig[s] ? e : f)[t->gpc_of[s]]++;
        }
    if (k == 1)
        return n;
    for (int g = 0; g < t->n_gpcs; g++)
        c += k == 2 ? e[g] / 2 + f[g] / 2 : e[g] / k;
    return c;
}

static json_t *random_chip(uint64_t seed, chipgen_truth *T)
{
    json_t *doc = chipgen_random(seed, T);
    json_object_set_new(json_object_get(doc, "sim"), "cluster2", json_string("gpc"));
    return doc;
}

/* Green-context groups of the simulated device: disjoint, covering every SM,
 * groups of 8 inside one GPC, free-floating SMs only after every pure
 * cluster-eligible group (the driver's priority, paper 001 section 5.3.1). */
static void check_groups(gos_device *d, const struct truth *t)
{
    const struct gos_green_split *s;
    if (gos_green_split(d, 0, &s))
        fail_msg("split: %s", gos_last_error());
    assert_int_equal(s->min_count, 8);
    unsigned char seen[256] = {0};
    int total = 0, last_pure = -1, first_free = 1 << 30;
    for (int g = 0; g < s->n_groups; g++) {
        const struct gos_green_group *G = &s->groups[g];
        int n_free = 0;
        for (int i = 0; i < G->n_sms; i++) {
            assert_false(seen[G->sms[i]]);
            seen[G->sms[i]] = 1;
            n_free += !t->elig[G->sms[i]];
            if (!G->remainder)
                assert_int_equal(t->gpc_of[G->sms[i]], t->gpc_of[G->sms[0]]);
        }
        total += G->n_sms;
        if (!G->remainder)
            assert_int_equal(G->n_sms, 8);
        else
            assert_int_equal(g, s->n_groups - 1);
        if (n_free == 0 && !G->remainder)
            last_pure = g;
        if (n_free && g < first_free)
            first_free = g;
    }
    assert_int_equal(total, t->n_sms);
    assert_true(first_free > last_pure);
    /* A second call returns the same split (groups identified once). */
    const struct gos_green_split *again;
    assert_int_equal(gos_green_split(d, 0, &again), GOS_OK);
    assert_ptr_equal(again, s);
}

/* The set's green context runs exactly the promised clusters at once. */
static void check_green(gos_device *d, gos_smset_pool *p, const gos_smset *s)
{
    void *g, *st;
    if (gos_smset_green(d, p, s, &g))
        fail_msg("green: %s", gos_last_error());
    assert_int_equal(gos_green_stream_create(d, g, &st), GOS_OK);
    static int sms[8 * 256], co[8 * 256];
    unsigned char in[256] = {0};
    for (int i = 0; i < s->n_sms; i++)
        in[s->sms[i]] = 1;
    int K = s->req.cluster;
    if (K == 1) {
        assert_int_equal(gos_green_probe(d, st, 1, 2 * s->n_sms, 1000, sms, co), GOS_OK);
        unsigned char hit[256] = {0};
        int n = 0;
        for (int i = 0; i < 2 * s->n_sms; i++) {
            assert_true(in[sms[i]]);
            n += !hit[sms[i]];
            hit[sms[i]] = 1;
        }
        assert_int_equal(n, s->n_sms);
    } else {
        int C = s->clusters[K];
        assert_int_equal(gos_green_probe(d, st, K, C * K, 1000, sms, co), GOS_OK);
        for (int i = 0; i < C * K; i++) {
            assert_true(in[sms[i]]);
            assert_int_equal(co[i], 1);
        }
        if ((C + 1) * K <= 8 * 256) {
            assert_int_equal(gos_green_probe(d, st, K, (C + 1) * K, 1000, sms, co), GOS_OK);
            int all = 1;
            for (int i = 0; i < (C + 1) * K; i++)
                all &= co[i];
            assert_false(all);
        }
    }
    assert_int_equal(gos_green_stream_destroy(d, st), GOS_OK);
    assert_int_equal(gos_green_destroy(d, g), GOS_OK);
}

static int group_sms(gos_smset_pool *p, int g, unsigned char *in, int v)
{
    int sms[256], owner;
    int n = gos_smset_pool_group(p, g, sms, 256, &owner);
    for (int i = 0; i < n; i++)
        in[sms[i]] = (unsigned char)v;
    return owner;
}

/* Free groups a request may use, by the truth: in its partition; with GPC
 * alignment, all free groups of GPCs that are entirely free. */
static void candidates(gos_smset_pool *p, const struct truth *t, const gos_smset_req *r, unsigned char *in)
{
    memset(in, 0, 256);
    int ng = gos_smset_pool_groups(p);
    int gpc_ok[32];
    for (int G = 0; G < t->n_gpcs; G++)
        gpc_ok[G] = 1;
    for (int g = 0; g < ng; g++) {
        int sms[256], owner;
        int n = gos_smset_pool_group(p, g, sms, 256, &owner);
        int ok = !owner, one_gpc = 1;
        for (int i = 0; i < n; i++) {
            if (r->partition >= 0 && t->part_of[sms[i]] != r->partition)
                ok = 0;
            one_gpc &= t->gpc_of[sms[i]] == t->gpc_of[sms[0]];
        }
        if (r->gpc_align && (!ok || !one_gpc))
            for (int i = 0; i < n; i++)
                gpc_ok[t->gpc_of[sms[i]]] = 0;
        if (ok && !r->gpc_align)
            group_sms(p, g, in, 1);
    }
    if (r->gpc_align)
        for (int s = 0; s < 256; s++)
            in[s] = t->gpc_of[s] >= 0 && gpc_ok[t->gpc_of[s]];
}

static int n_checked_green, n_refused, n_alloc, n_waste_checks;

static void run_sequence(gos_device *d, const gos_chip *chart, const struct truth *t, gos_rng *r, int steps)
{
    gos_smset_pool *p;
    if (gos_smset_pool_open(d, chart, &p))
        fail_msg("pool: %s", gos_last_error());
    int owner_of[256] = {0}, live[64], n_live = 0;
    static const int ks[] = {1, 2, 2, 4, 8, 8, 16, 3};
    for (int step = 0; step < steps; step++) {
        if (n_live && gos_rng_uniform(r) < 0.2) {
            int i = (int)gos_rng_below(r, (uint32_t)n_live);
            assert_int_equal(gos_smset_release(p, live[i]), GOS_OK);
            for (int s = 0; s < 256; s++)
                if (owner_of[s] == live[i])
                    owner_of[s] = 0;
            live[i] = live[--n_live];
            continue;
        }
        gos_smset_req q = {.sms = 4 + (int)gos_rng_below(r, 61), .cluster = ks[gos_rng_below(r, 8)],
                           .partition = gos_rng_uniform(r) < 0.2 ? (int)gos_rng_below(r, 2) : -1,
                           .gpc_align = gos_rng_uniform(r) < 0.15};
        unsigned char cand[256];
        candidates(p, t, &q, cand);
        gos_smset s;
        int rc = gos_smset_alloc(p, &q, &s);
        if (rc && q.cluster > 8) { /* green contexts of groups of 8 run clusters of <= 8 */
            assert_int_equal(rc, GOS_EUNSUPPORTED);
            continue;
        }
        if (rc) {
            assert_int_equal(rc, GOS_ENOMEM);
            assert_non_null(strstr(gos_last_error(), "cannot give"));
            /* Refused only when the free groups truly cannot serve it. */
            if (q.cluster * t_clusters(t, cand, q.cluster) >= q.sms)
                fail_msg("refused %d SMs at cluster %d (partition %d, align %d) that the free groups "
                         "can run (%d): %s", q.sms, q.cluster, q.partition, q.gpc_align,
                         q.cluster * t_clusters(t, cand, q.cluster), gos_last_error());
            n_refused++;
            continue;
        }
        n_alloc++;
        unsigned char in[256] = {0};
        for (int i = 0; i < s.n_sms; i++) {
            int sm = s.sms[i];
            assert_int_equal(owner_of[sm], 0); /* disjoint from every live set */
            assert_true(cand[sm]);             /* from groups it may use */
            owner_of[sm] = s.id;
            in[sm] = 1;
            if (q.partition >= 0)
                assert_int_equal(t->part_of[sm], q.partition);
        }
        /* The set is exactly the union of its groups. */
        unsigned char from_groups[256] = {0};
        for (int i = 0; i < s.n_groups; i++)
            assert_int_equal(group_sms(p, s.groups[i], from_groups, 1), s.id);
        assert_memory_equal(from_groups, in, 256);
        /* It runs what it promises and what was asked, by the truth. */
        for (int k = 1; k <= 16; k++)
            assert_int_equal(s.clusters[k], k > 8 ? 0 : t_clusters(t, in, k));
        assert_true(q.cluster * t_clusters(t, in, q.cluster) >= q.sms);
        if (q.gpc_align)
            for (int s2 = 0; s2 < 256; s2++)
                if (t->gpc_of[s2] >= 0 && in[s2] == 0)
                    for (int i = 0; i < s.n_sms; i++)
                        assert_true(t->gpc_of[s.sms[i]] != t->gpc_of[s2]);
        /* Nothing cluster-capable is spent on a cluster <= 2 tenant that the
         * unused free-floating-only groups could replace (whole GPCs aside). */
        if (q.cluster <= 2 && !q.gpc_align) {
            unsigned char pure[256] = {0};
            for (int g = 0; g < gos_smset_pool_groups(p); g++) {
                int sms[256], owner;
                int n = gos_smset_pool_group(p, g, sms, 256, &owner), elig = 0;
                for (int i = 0; i < n; i++)
                    elig += t->elig[sms[i]];
                int usable = 1;
                for (int i = 0; i < n; i++)
                    usable &= cand[sms[i]];
                if (!owner && !elig && usable)
                    group_sms(p, g, pure, 1);
            }
            for (int i = 0; i < s.n_groups; i++) {
                unsigned char alt[256], grp[256] = {0};
                group_sms(p, s.groups[i], grp, 1);
                int elig = 0;
                for (int sm = 0; sm < 256; sm++)
                    elig += grp[sm] && t->elig[sm];
                if (!elig)
                    continue;
                for (int sm = 0; sm < 256; sm++)
                    alt[sm] = (in[sm] && !grp[sm]) || pure[sm];
                n_waste_checks++;
                if (q.cluster * t_clusters(t, alt, q.cluster) >= q.sms)
                    fail_msg("cluster-%d set of %d SMs holds cluster-eligible group %d although free-floating "
                             "groups could replace it", q.cluster, q.sms, s.groups[i]);
            }
            /* Stronger: no group of the set whose return would give the pool
             * clusters of 8 can be swapped for unused groups that cost the pool
             * none, with the request still served. */
            unsigned char rest[256] = {0}, zero[256] = {0};
            for (int g = 0; g < gos_smset_pool_groups(p); g++) {
                int sms[256], owner;
                int n = gos_smset_pool_group(p, g, sms, 256, &owner);
                if (!owner)
                    for (int i = 0; i < n; i++)
                        rest[sms[i]] = 1;
            }
            int rest8 = t_clusters(t, rest, 8);
            for (int g = 0; g < gos_smset_pool_groups(p); g++) {
                int sms[256], owner, ok = 1;
                int n = gos_smset_pool_group(p, g, sms, 256, &owner);
                unsigned char without[256];
                memcpy(without, rest, 256);
                for (int i = 0; i < n; i++) {
                    ok &= cand[sms[i]];
                    without[sms[i]] = 0;
                }
                if (!owner && ok && t_clusters(t, without, 8) == rest8)
                    for (int i = 0; i < n; i++)
                        zero[sms[i]] = 1;
            }
            for (int i = 0; i < s.n_groups; i++) {
                unsigned char grp[256] = {0}, pool2[256], alt[256];
                group_sms(p, s.groups[i], grp, 1);
                for (int sm = 0; sm < 256; sm++) {
                    pool2[sm] = (rest[sm] && !zero[sm]) || grp[sm];
                    alt[sm] = (in[sm] && !grp[sm]) || zero[sm];
                }
                n_waste_checks++;
                if (t_clusters(t, pool2, 8) > rest8 && q.cluster * t_clusters(t, alt, q.cluster) >= q.sms)
                    fail_msg("cluster-%d set of %d SMs holds group %d: returning it and taking unused groups of no "
                             "cluster-8 value instead leaves the pool %d clusters of 8 instead of %d",
                             q.cluster, q.sms, s.groups[i], t_clusters(t, pool2, 8), rest8);
            }
        }
        if (n_alloc % 3 == 0) {
            check_green(d, p, &s);
            n_checked_green++;
        }
        live[n_live++] = s.id;
    }
    gos_smset_pool_free(p);
}

static void test_random_sequences(void **state)
{
    gos_rng r;
    gos_rng_seed(&r, 1313);
    for (uint64_t seed = 1; seed <= 120; seed++) {
        chipgen_truth T;
        json_t *doc = random_chip(seed, &T);
        gos_device *d;
        if (fx_open_json(doc, &d))
            fail_msg("open: %s", gos_last_error());
        struct truth t;
        truth_from_gen(&T, doc, &t);
        check_groups(d, &t);
        for (int seq = 0; seq < 4; seq++)
            run_sequence(d, d->chip, &t, &r, 12);
        gos_device_close(d);
        json_decref(doc);
    }
    printf("%d sets (%d probed on their green contexts), %d refusals, %d waste checks\n", n_alloc,
           n_checked_green, n_refused, n_waste_checks);
    assert_true(n_refused > 20 && n_alloc > 500 && n_waste_checks > 100);
}

/* The paper's co-location (section 7.3) with the allocator: a cluster-8 tenant A
 * and a cluster-2 tenant B get what they need whatever order they arrive in, and
 * A gets the same clusters of 8 either way. */
static void pair_orders(gos_device *d, const gos_chip *chart, const struct truth *t, int na, int nb, int *served)
{
    int a_clusters[2] = {0}, ok[2] = {0};
    for (int order = 0; order < 2; order++) {
        gos_smset_pool *p;
        assert_int_equal(gos_smset_pool_open(d, chart, &p), GOS_OK);
        gos_smset_req A = {.sms = na, .cluster = 8, .partition = -1}, B = {.sms = nb, .cluster = 2, .partition = -1};
        gos_smset sa, sb;
        int ra, rb;
        if (order == 0) {
            ra = gos_smset_alloc(p, &A, &sa);
            rb = gos_smset_alloc(p, &B, &sb);
        } else {
            rb = gos_smset_alloc(p, &B, &sb);
            ra = gos_smset_alloc(p, &A, &sa);
        }
        ok[order] = !ra && !rb;
        if (!ra)
            a_clusters[order] = sa.clusters[8];
        if (ok[order]) {
            assert_int_equal(sa.n_free_floating, 0);
            (void)t;
        }
        gos_smset_pool_free(p);
    }
    if (ok[0] || ok[1]) {
        if (ok[0] != ok[1])
            fail_msg("A (%d SMs, cluster 8) + B (%d SMs, cluster 2): served in one order only (%d, %d)", na, nb,
                     ok[0], ok[1]);
        assert_true(a_clusters[0] * 8 >= na && a_clusters[1] * 8 >= na);
        (*served)++;
    }
}

static void test_colocation_orders(void **state)
{
    int served = 0;
    gos_device *d;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    assert_int_equal(gos_device_open(&spec, &d), GOS_OK);
    struct truth t;
    truth_from_chip(d->chip, &t);
    check_groups(d, &t);
    pair_orders(d, d->chip, &t, 64, 64, &served);
    assert_int_equal(served, 1);
    gos_device_close(d);
    gos_rng r;
    gos_rng_seed(&r, 77);
    for (uint64_t seed = 500; seed < 620; seed++) {
        chipgen_truth T;
        json_t *doc = random_chip(seed, &T);
        assert_int_equal(fx_open_json(doc, &d), GOS_OK);
        truth_from_gen(&T, doc, &t);
        unsigned char all[256] = {0};
        for (int s = 0; s < 256; s++)
            all[s] = t.gpc_of[s] >= 0;
        int cap8 = 8 * t_clusters(&t, all, 8);
        int na = 8 * (1 + (int)gos_rng_below(&r, (uint32_t)(cap8 / 8)));
        int nb = 2 + (int)gos_rng_below(&r, (uint32_t)(t.n_sms - na > 2 ? t.n_sms - na - 1 : 1));
        pair_orders(d, d->chip, &t, na, nb, &served);
        gos_device_close(d);
        json_decref(doc);
    }
    printf("%d chip/request pairs served in both orders\n", served);
    assert_true(served > 40);
}

/* The naive allocation the paper used: two successive green contexts of >= 64
 * SMs; on the simulated H200 the free-floating SMs all land in the second. */
static void test_naive_split(void **state)
{
    gos_device *d;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    assert_int_equal(gos_device_open(&spec, &d), GOS_OK);
    struct truth t;
    truth_from_chip(d->chip, &t);
    const struct gos_green_split *s;
    assert_int_equal(gos_green_split(d, 64, &s), GOS_OK);
    assert_int_equal(s->min_count, 64);
    assert_true(s->n_groups >= 2);
    assert_int_equal(s->groups[0].n_sms, 64);
    int free0 = 0, total = 0;
    for (int i = 0; i < 64; i++)
        free0 += !t.elig[s->groups[0].sms[i]];
    for (int g = 0; g < s->n_groups; g++)
        total += s->groups[g].n_sms;
    assert_int_equal(free0, 0);
    assert_int_equal(total, 132);
    /* The groups of 8 and of 64 are separate splits, both cached. */
    const struct gos_green_split *s8;
    assert_int_equal(gos_green_split(d, 8, &s8), GOS_OK);
    assert_ptr_not_equal(s8, s);
    gos_device_close(d);
}

static void test_bad_requests(void **state)
{
    gos_device *d;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    assert_int_equal(gos_device_open(&spec, &d), GOS_OK);
    gos_smset_pool *p;
    assert_int_equal(gos_smset_pool_open(d, d->chip, &p), GOS_OK);
    gos_smset s;
    gos_smset_req bad[] = {{0, 2, -1, 0}, {8, 0, -1, 0}, {8, 17, -1, 0}, {8, 2, 2, 0}, {8, 2, -2, 0}, {GOS_MAX_SMS + 1, 2, -1, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(gos_smset_alloc(p, &bad[i], &s), GOS_EINVAL);
    gos_smset_req big = {.sms = 128, .cluster = 8, .partition = -1};
    assert_int_equal(gos_smset_alloc(p, &big, &s), GOS_ENOMEM);
    assert_non_null(strstr(gos_last_error(), "at most 112 SMs (14 clusters of 8)"));
    gos_smset_req part = {.sms = 48, .cluster = 8, .partition = 1};
    assert_int_equal(gos_smset_alloc(p, &part, &s), GOS_OK);
    assert_int_equal(s.partition, 1);
    assert_int_equal(gos_smset_release(p, s.id), GOS_OK);
    assert_int_equal(gos_smset_release(p, s.id), GOS_EINVAL);
    gos_smset_pool_free(p);
    /* A chart of another chip is refused. */
    chipgen_truth T;
    json_t *doc = random_chip(9, &T);
    gos_chip *other;
    char *text = json_dumps(doc, 0);
    assert_int_equal(gos_chip_parse(text, "other", &other), GOS_OK);
    free(text);
    json_decref(doc);
    gos_smset_pool *q = NULL;
    int rc = gos_smset_pool_open(d, other, &q);
    if (rc == GOS_OK) { /* same SM ids by chance: then the GPCs must differ somewhere */
        gos_smset_pool_free(q);
    } else {
        assert_int_equal(rc, GOS_EINVAL);
        assert_non_null(strstr(gos_last_error(), "chart does not describe"));
    }
    gos_chip_free(other);
    /* Green-context misuse. */
    void *g;
    int groups[2] = {0, 0};
    assert_int_equal(gos_green_create(d, 0, groups, 2, &g), GOS_EINVAL);
    groups[0] = 99;
    assert_int_equal(gos_green_create(d, 0, groups, 1, &g), GOS_EINVAL);
    assert_int_equal(gos_green_destroy(d, (void *)&groups), GOS_EINVAL);
    gos_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive_split),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_colocation_orders),
        cmocka_unit_test(test_random_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
