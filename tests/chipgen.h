/* SPDX-License-Identifier: Apache-2.0 */
/* chipgen.h: random valid gpuos.chip/1 chips for round-trip tests (header-only).
 *
 * 6..8 GPCs of 8..20 SMs, SM ids a random permutation (numbering follows no
 * pattern), TPCs consecutive pairs of each GPC's list, 0..8 free-floating SMs:
 * whole TPCs or single SMs (either SM of a TPC), each GPC keeping at least
 * chipgen_min_cluster cluster-eligible SMs (6 by default, so that its crossbar
 * port can saturate).
 * Partitions: the GPCs split into two random halves. */
#ifndef GOS_TEST_CHIPGEN_H
#define GOS_TEST_CHIPGEN_H

#include "common/rng.h"

#include <jansson.h>

typedef struct {
    int n_gpcs;
    int size[8];
    int sms[8][20];
    int free_[8][20]; /* 1 = free-floating */
} chipgen_truth;

static json_t *chipgen_ints(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* Each GPC keeps at least this many cluster-eligible SMs. */
static int chipgen_min_cluster = 6;
/* Probability that a free-floating pick takes a whole TPC (else one SM). */
static double chipgen_whole_tpc = 0.7;

/* Returns a new JSON chip document; fills *t with the truth if t != NULL. */
static json_t *chipgen_random(uint64_t seed, chipgen_truth *t)
{
    gos_rng r;
    gos_rng_seed(&r, seed);
    chipgen_truth T = {0};
    T.n_gpcs = 6 + (int)gos_rng_below(&r, 3);
    int total = 0;
    for (int g = 0; g < T.n_gpcs; g++) {
        T.size[g] = 8 + (int)gos_rng_below(&r, 13);
        total += T.size[g];
    }
    int perm[256];
    for (int i = 0; i < total; i++)
        perm[i] = i;
    gos_rng_shuffle(&r, perm, total);
    int k = 0;
    for (int g = 0; g < T.n_gpcs; g++)
        for (int i = 0; i < T.size[g]; i++)
            T.sms[g][i] = perm[k++];
    int want_free = (int)gos_rng_below(&r, 9), n_free = 0;
    for (int tries = 0; tries < 200 && n_free < want_free; tries++) {
        int g = (int)gos_rng_below(&r, (uint32_t)T.n_gpcs);
        int cluster = 0;
        for (int i = 0; i < T.size[g]; i++)
            cluster += !T.free_[g][i];
        int tpc = (int)gos_rng_below(&r, (uint32_t)(T.size[g] + 1) / 2);
        int a = 2 * tpc, b = 2 * tpc + 1 < T.size[g] ? 2 * tpc + 1 : -1;
        if (b >= 0 && gos_rng_uniform(&r) < 0.5) { /* either SM of the TPC */
            int x = a;
            a = b;
            b = x;
        }
        if (T.free_[g][a] || (b >= 0 && T.free_[g][b]))
            continue;
        int whole = b >= 0 && gos_rng_uniform(&r) < chipgen_whole_tpc && n_free + 2 <= want_free;
        int take = whole ? 2 : 1;
        if (cluster - take < chipgen_min_cluster)
            continue;
        T.free_[g][a] = 1;
        if (whole)
            T.free_[g][b] = 1;
        n_free += take;
    }
    json_t *gpcs = json_array();
    for (int g = 0; g < T.n_gpcs; g++) {
        int cl[20], nc = 0;
        for (int i = 0; i < T.size[g]; i++)
            if (!T.free_[g][i])
                cl[nc++] = T.sms[g][i];
        json_t *tpcs = json_array();
        for (int i = 0; i < T.size[g]; i += 2)
            json_array_append_new(tpcs, chipgen_ints(&T.sms[g][i], i + 1 < T.size[g] ? 2 : 1));
        json_array_append_new(gpcs, json_pack("{s:o, s:o, s:o}", "sms", chipgen_ints(T.sms[g], T.size[g]),
                                              "cluster_sms", chipgen_ints(cl, nc), "tpcs", tpcs));
    }
    /* Partitions: a random half of the GPCs in each. */
    int order[8];
    for (int g = 0; g < T.n_gpcs; g++)
        order[g] = g;
    gos_rng_shuffle(&r, order, T.n_gpcs);
    json_t *parts = json_array();
    for (int p = 0; p < 2; p++) {
        int v[256], n = 0;
        for (int j = p * (T.n_gpcs / 2); j < (p ? T.n_gpcs : T.n_gpcs / 2); j++)
            for (int i = 0; i < T.size[order[j]]; i++)
                v[n++] = T.sms[order[j]][i];
        json_array_append_new(parts, json_pack("{s:o}", "sms", chipgen_ints(v, n)));
    }
    double per_sm = 150 + 70 * gos_rng_uniform(&r);
    json_t *doc = json_pack(
        "{s:s, s:{s:s, s:s, s:s, s:i, s:I, s:I, s:i}, s:{s:o}, s:{s:o}, s:{s:I, s:f, s:f, s:f}}",
        "schema", "gpuos.chip/1", "device", "name", "Random test chip", "uuid", "SIM-random", "cc", "9.0",
        "sm_count", total, "l2_bytes", (json_int_t)62914560, "mem_bytes", (json_int_t)(16LL << 30),
        "sm_clock_mhz", 1980, "topology", "gpcs", gpcs, "numa", "partitions", parts, "sim", "seed",
        (json_int_t)(seed * 31 + 7), "jitter", 0.03, "l2_gbps_per_sm", per_sm, "l2_gbps_per_gpc",
        per_sm * (6.0 + 2.0 * gos_rng_uniform(&r)));
    if (t)
        *t = T;
    return doc;
}

#endif
