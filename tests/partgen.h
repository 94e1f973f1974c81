/* SPDX-License-Identifier: Apache-2.0 */
/* partgen.h: random gpuos.chip/2 chips with N memory partitions, several dies
 * and several latency tiers (issue 26), header-only, next to chipgen.h.
 *
 *   partgen_b200(seed)   two dies, 148 SMs in 8 GPCs (4 per die) of up to 20
 *                        SMs, two partitions per die (two GPCs each) whose
 *                        twin local peaks overlap (the other partition of the
 *                        die 0.4..0.9 noise sd above the own), the other die
 *                        ~920 cycles against ~552 (paper 001 section 6.1.1);
 *   partgen_b200_split   the same with the twins 15..25 % apart: four
 *                        partitions, two dies, three tiers, all resolvable;
 *   partgen_mi300x(seed) eight dies of 38 compute units, two partitions per
 *                        die (19 CUs each, one GPC-like group each), three
 *                        tiers ~707 / ~817 / ~926 (appendix G).
 *
 * Both: SM ids a random permutation, partition codes paired into dies at
 * random, the hash k independent parities of random in-page bits (8..20) each
 * with 0..5 random physical bits above the 2 MB page, latencies and jitter
 * drawn around the shape's values, a random sim seed.
 *
 * The truth a probe must recover (partgen_truth) is what latency can resolve:
 * on the B200 shape, the twin partitions of a die are one (the die) and the
 * hash is the one parity that tells the dies apart; on the MI300X shape, all
 * sixteen partitions, eight dies and four parities. */
#ifndef GOS_TEST_PARTGEN_H
#define GOS_TEST_PARTGEN_H

#include "common/rng.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    int sm_count;
    int n_parts;               /* resolvable partitions */
    int part_of[512];          /* SM -> resolvable partition */
    int n_dies;                /* 0: the probe cannot tell dies (two tiers) */
    int die_of_part[32];
    int n_masks;
    uint32_t masks[5];         /* in-page masks whose span the probe must find */
    int n_tiers;
    double tier_cycles[8];     /* expected medians (twin peaks: their mean) */
    const char *relation[8];
} partgen_truth;

/* The seed of a test's random chips: $env when set (a replay), else from
 * /dev/urandom; printed with how to replay it. */
static inline uint64_t partgen_seed(const char *test, const char *env)
{
    uint64_t seed = 0;
    const char *e = getenv(env);
    if (e && *e)
        seed = strtoull(e, NULL, 10);
    else {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&seed, sizeof seed, 1, f) != 1)
            seed = (uint64_t)getpid();
        if (f)
            fclose(f);
        seed %= 1000000000ull;
    }
    printf("%s: seed %llu (replay: %s=%llu)\n", test, (unsigned long long)seed, env, (unsigned long long)seed);
    return seed;
}

static json_t *partgen_ints(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* k random in-page masks of bits 8..20, linearly independent over GF(2). */
static void partgen_masks(gos_rng *r, int k, uint32_t *m)
{
    for (int ok = 0; !ok;) {
        for (int j = 0; j < k; j++) {
            m[j] = 0;
            int nb = 1 + (int)gos_rng_below(r, 4);
            for (int i = 0; i < nb; i++)
                m[j] |= 1u << (8 + gos_rng_below(r, 13));
        }
        ok = 1; /* rank k: no nonzero combination vanishes */
        for (int c = 1; ok && c < 1 << k; c++) {
            uint32_t x = 0;
            for (int j = 0; j < k; j++)
                if (c >> j & 1)
                    x ^= m[j];
            ok = x != 0;
        }
    }
}

/* The chip document for `gpcs` GPCs of size[g] SMs; partition code of each
 * GPC slice: part_of_sm filled by the caller. */
static json_t *partgen_doc(gos_rng *r, const char *name, int n_gpcs, const int *size, int gsms[][40],
                           int *total_out)
{
    int total = 0;
    for (int g = 0; g < n_gpcs; g++)
        total += size[g];
    int perm[512];
    for (int i = 0; i < total; i++)
        perm[i] = i;
    gos_rng_shuffle(r, perm, total);
    json_t *gpcs = json_array();
    for (int g = 0, k = 0; g < n_gpcs; g++) {
        for (int i = 0; i < size[g]; i++)
            gsms[g][i] = perm[k++];
        json_t *tpcs = json_array();
        for (int i = 0; i < size[g]; i += 2)
            json_array_append_new(tpcs, partgen_ints(&gsms[g][i], i + 1 < size[g] ? 2 : 1));
        json_array_append_new(gpcs, json_pack("{s:o, s:o, s:o}", "sms", partgen_ints(gsms[g], size[g]),
                                              "cluster_sms", partgen_ints(gsms[g], size[g]), "tpcs", tpcs));
    }
    *total_out = total;
    return json_pack("{s:s, s:{s:s, s:s, s:s, s:i, s:I, s:I, s:i}, s:{s:o}}", "schema", "gpuos.chip/2", "device",
                     "name", name, "uuid", "SIM-partgen", "cc", "10.0", "sm_count", total, "l2_bytes",
                     (json_int_t)(126ll << 20), "mem_bytes", (json_int_t)(16ll << 30), "sm_clock_mhz", 1965,
                     "topology", "gpcs", gpcs);
}

/* numa section: partitions by code, dies pairing codes at random, k parities,
 * tiers by relation. slices[c] lists the SMs of the partition of code c. */
static void partgen_numa(gos_rng *r, json_t *doc, int k, int sm_of_code[][64], const int *n_of_code,
                         const double *cyc, int n_rel, int die_of_code[32], uint32_t masks[5])
{
    int np = 1 << k;
    json_t *parts = json_array();
    for (int c = 0; c < np; c++)
        json_array_append_new(parts, json_pack("{s:o}", "sms", partgen_ints(sm_of_code[c], n_of_code[c])));
    int perm[32];
    for (int c = 0; c < np; c++)
        perm[c] = c;
    gos_rng_shuffle(r, perm, np);
    json_t *dies = json_array();
    for (int d = 0; d < np / 2; d++) {
        int v[2] = {perm[2 * d], perm[2 * d + 1]};
        die_of_code[v[0]] = die_of_code[v[1]] = d;
        json_array_append_new(dies, json_pack("{s:o}", "partitions", partgen_ints(v, 2)));
    }
    partgen_masks(r, k, masks);
    json_t *par = json_array();
    for (int j = 0; j < k; j++) {
        int in[21], ni = 0, ph[8], nph = 0;
        for (int b = 0; b <= 20; b++)
            if (masks[j] >> b & 1)
                in[ni++] = b;
        int more = (int)gos_rng_below(r, 6);
        for (int i = 0; i < more; i++) {
            int b = 21 + (int)gos_rng_below(r, 16), dup = 0;
            for (int x = 0; x < nph; x++)
                dup |= ph[x] == b;
            if (!dup)
                ph[nph++] = b;
        }
        json_array_append_new(par, json_pack("{s:o, s:o}", "in_page_bits", partgen_ints(in, ni),
                                             "physical_bits", partgen_ints(ph, nph)));
    }
    static const char *const rel[3] = {"same_partition", "same_die", "other_die"};
    json_t *tiers = json_array();
    for (int t = 0; t < n_rel; t++)
        json_array_append_new(tiers, json_pack("{s:f, s:f, s:s}", "cycles", cyc[t], "l2_cycles", 0.62 * cyc[t],
                                               "relation", rel[t]));
    uint32_t all = 0;
    for (int j = 0; j < k; j++)
        all |= masks[j];
    json_object_set_new(doc, "numa", json_pack("{s:o, s:o, s:{s:I, s:o}, s:o}", "partitions", parts, "dies", dies,
                                               "hash", "granularity_bytes", (json_int_t)1 << __builtin_ctz(all),
                                               "parities", par, "tiers", tiers));
}

/* split = 1: the twin partitions of a die 15..25 % apart (resolvable): the truth
 * is then all four partitions, both dies, three tiers and both parities. */
/* The truth of a chip whose partition c is code c (its SMs sm_of_code[c]) in
 * die die_of_code[c], hashed by masks[0..n_masks), with three tiers: the same
 * partition, the same die, another die. */
static void partgen_truth_dies(partgen_truth *T, int n_parts, int sm_of_code[][64], const int *n_of_code,
                               const int *die_of_code, int n_dies, const uint32_t *masks, int n_masks,
                               const double cyc[3])
{
    T->n_parts = n_parts;
    for (int c = 0; c < n_parts; c++) {
        for (int i = 0; i < n_of_code[c]; i++)
            T->part_of[sm_of_code[c][i]] = c;
        T->die_of_part[c] = die_of_code[c];
    }
    T->n_dies = n_dies;
    T->n_masks = n_masks;
    for (int j = 0; j < n_masks; j++)
        T->masks[j] = masks[j];
    T->n_tiers = 3;
    for (int i = 0; i < 3; i++)
        T->tier_cycles[i] = cyc[i];
    T->relation[0] = "same_partition";
    T->relation[1] = "same_die";
    T->relation[2] = "other_die";
}

static json_t *partgen_b200_split(uint64_t seed, int split, partgen_truth *t)
{
    gos_rng r;
    gos_rng_seed(&r, seed * 7919 + 26);
    partgen_truth T = {0};
    int size[8], total = 0;
    for (;;) { /* 8 GPCs of 14..20 SMs, 148 in all */
        total = 0;
        for (int g = 0; g < 8; g++)
            total += size[g] = 14 + 2 * (int)gos_rng_below(&r, 4);
        while (total < 148) {
            int g = (int)gos_rng_below(&r, 8);
            if (size[g] < 20)
                size[g]++, total++;
        }
        if (total == 148)
            break;
    }
    static int gsms[8][40];
    json_t *doc = partgen_doc(&r, "Simulated B200-like (two dies)", 8, size, gsms, &total);
    /* GPCs in random order: two per partition, codes 0..3. */
    int order[8];
    for (int g = 0; g < 8; g++)
        order[g] = g;
    gos_rng_shuffle(&r, order, 8);
    static int sm_of_code[32][64];
    int n_of_code[32] = {0};
    for (int i = 0; i < 8; i++) {
        int g = order[i], c = i / 2;
        for (int j = 0; j < size[g]; j++)
            sm_of_code[c][n_of_code[c]++] = gsms[g][j];
    }
    double jitter = 0.02 + 0.01 * gos_rng_uniform(&r);
    double own = 552 * (0.97 + 0.06 * gos_rng_uniform(&r));
    double twin = own * (1 + jitter * (0.4 + 0.5 * gos_rng_uniform(&r)));
    if (split)
        twin = own * (1.15 + 0.1 * gos_rng_uniform(&r));
    double other = 920 * (0.97 + 0.06 * gos_rng_uniform(&r));
    double cyc[3] = {own, twin, other};
    int die_of_code[32];
    uint32_t masks[5];
    for (;;) {
        json_object_del(doc, "numa");
        partgen_numa(&r, doc, 2, sm_of_code, n_of_code, cyc, 3, die_of_code, masks);
        /* the die as a parity: the functional f with f(c1 ^ c2) = 0 inside a die */
        int u = 0;
        for (int c = 1; c < 4; c++)
            if (die_of_code[c] == die_of_code[0])
                u = c;
        int f = u == 1 ? 2 : u == 2 ? 1 : 3;
        uint32_t dm = (f & 1 ? masks[0] : 0) ^ (f & 2 ? masks[1] : 0);
        if (dm) {
            T.masks[0] = dm;
            break;
        }
    }
    T.sm_count = total;
    if (split) {
        partgen_truth_dies(&T, 4, sm_of_code, n_of_code, die_of_code, 2, masks, 2, cyc);
    } else {
        T.n_parts = 2;
        for (int c = 0; c < 4; c++)
            for (int i = 0; i < n_of_code[c]; i++)
                T.part_of[sm_of_code[c][i]] = die_of_code[c] == die_of_code[0] ? 0 : 1;
        T.n_dies = 0;
        T.n_masks = 1;
        T.n_tiers = 2;
        T.tier_cycles[0] = 0.5 * (own + twin);
        T.tier_cycles[1] = other;
        T.relation[0] = "same_partition";
        T.relation[1] = "other_partition";
    }
    json_object_set_new(doc, "sim", json_pack("{s:I, s:f}", "seed", (json_int_t)(seed % 1000000007), "jitter", jitter));
    if (t)
        *t = T;
    return doc;
}

static inline json_t *partgen_b200(uint64_t seed, partgen_truth *t) { return partgen_b200_split(seed, 0, t); }

static json_t *partgen_mi300x(uint64_t seed, partgen_truth *t)
{
    gos_rng r;
    gos_rng_seed(&r, seed * 104729 + 300);
    partgen_truth T = {0};
    int size[16], total;
    for (int g = 0; g < 16; g++)
        size[g] = 19;
    static int gsms[16][40];
    json_t *doc = partgen_doc(&r, "Simulated MI300X-like (eight dies)", 16, size, gsms, &total);
    static int sm_of_code[32][64];
    int n_of_code[32] = {0};
    for (int c = 0; c < 16; c++) { /* partition c: the CUs of GPC c (half an XCD) */
        n_of_code[c] = 19;
        for (int i = 0; i < 19; i++)
            sm_of_code[c][i] = gsms[c][i];
    }
    double jitter = 0.01 + 0.01 * gos_rng_uniform(&r);
    double cyc[3] = {707 * (0.98 + 0.04 * gos_rng_uniform(&r)), 817 * (0.98 + 0.04 * gos_rng_uniform(&r)),
                     926 * (0.98 + 0.04 * gos_rng_uniform(&r))};
    int die_of_code[32];
    uint32_t masks[5];
    json_t *tmp = json_object();
    partgen_numa(&r, tmp, 4, sm_of_code, n_of_code, cyc, 3, die_of_code, masks);
    json_t *numa = json_incref(json_object_get(tmp, "numa"));
    json_decref(tmp);
    json_object_set_new(doc, "numa", numa);
    T.sm_count = total;
    partgen_truth_dies(&T, 16, sm_of_code, n_of_code, die_of_code, 8, masks, 4, cyc);
    json_object_set_new(doc, "sim", json_pack("{s:I, s:f}", "seed", (json_int_t)(seed % 1000000007), "jitter", jitter));
    if (t)
        *t = T;
    return doc;
}

/* The truth as JSON (partitions as SM lists, dies as lists of those indices,
 * the masks, tiers): what tests/t_parts.sh compares a probe's chart with. */
static inline json_t *partgen_truth_json(const partgen_truth *T)
{
    json_t *parts = json_array(), *dies = json_array(), *masks = json_array(), *tiers = json_array();
    for (int p = 0; p < T->n_parts; p++) {
        int v[512], n = 0;
        for (int s = 0; s < T->sm_count; s++)
            if (T->part_of[s] == p)
                v[n++] = s;
        json_array_append_new(parts, partgen_ints(v, n));
    }
    for (int d = 0; d < T->n_dies; d++) {
        int v[32], n = 0;
        for (int p = 0; p < T->n_parts; p++)
            if (T->die_of_part[p] == d)
                v[n++] = p;
        json_array_append_new(dies, partgen_ints(v, n));
    }
    for (int j = 0; j < T->n_masks; j++)
        json_array_append_new(masks, json_integer(T->masks[j]));
    for (int i = 0; i < T->n_tiers; i++)
        json_array_append_new(tiers, json_pack("{s:f, s:s}", "cycles", T->tier_cycles[i], "relation", T->relation[i]));
    return json_pack("{s:o, s:o, s:o, s:o}", "partitions", parts, "dies", dies, "masks", masks, "tiers", tiers);
}

#endif
