/* SPDX-License-Identifier: Apache-2.0 */
/* test_numa_gen.h: random valid chips for the pillar-1b tests (header-only).
 *
 * Topology from chipgen.h; the memory side is drawn independently of it:
 * partitions a random split of the SMs (any sizes from 10 % to 90 %, SM ids in
 * no order), in-page hash bits a random set of 1..8 bits in 8..20 whose lowest
 * bit sets the granularity (256 B .. 64 KB), physical bits those plus 0..8 bits
 * in 21..36 (above the 2 MB page: invisible except through page parities),
 * latencies with a remote/local gap of 20..60 %, random jitter and seed, and
 * random sim.mem parameters (effective L2 fraction, bandwidths, replication).
 * The truth returned is what a probe must recover. */
#ifndef GOS_TEST_NUMA_GEN_H
#define GOS_TEST_NUMA_GEN_H

#include "chipgen.h"
#include "common/rng.h"
#include "common/status.h"
#include "device/device.h"

#include <jansson.h>
#include <stdio.h>
#include <unistd.h>

typedef struct {
    int sm_count;
    int part_of[256];
    unsigned in_page_mask;
    int n_in_page;
    int in_page[21];
    double l2_eff_shared, l2_eff_private;
    int replicate;
    double hbm_part_gbps, fabric_gbps;
} numa_truth;

static json_t *numa_gen(uint64_t seed, numa_truth *t)
{
    json_t *doc = chipgen_random(seed, NULL);
    gos_rng r;
    gos_rng_seed(&r, seed * 977 + 13);
    numa_truth T = {0};
    T.sm_count = (int)json_integer_value(json_object_get(json_object_get(doc, "device"), "sm_count"));
    /* A random split: a share of 10..90 %, at least 2 SMs on each side. */
    int perm[256];
    for (int i = 0; i < T.sm_count; i++)
        perm[i] = i;
    gos_rng_shuffle(&r, perm, T.sm_count);
    int n0 = (int)(T.sm_count * (0.1 + 0.8 * gos_rng_uniform(&r)));
    if (n0 < 2)
        n0 = 2;
    if (n0 > T.sm_count - 2)
        n0 = T.sm_count - 2;
    json_t *s0 = json_array(), *s1 = json_array();
    for (int i = 0; i < T.sm_count; i++) {
        T.part_of[perm[i]] = i < n0 ? 0 : 1;
        json_array_append_new(i < n0 ? s0 : s1, json_integer(perm[i]));
    }
    /* In-page bits: the lowest in 8..16, then 0..7 more above it up to 20. */
    int low = 8 + (int)gos_rng_below(&r, 9);
    T.in_page_mask = 1u << low;
    int more = (int)gos_rng_below(&r, 8);
    for (int k = 0; k < more; k++)
        T.in_page_mask |= 1u << (low + 1 + (int)gos_rng_below(&r, (uint32_t)(20 - low)));
    json_t *inp = json_array(), *phys = json_array();
    for (int b = 0; b <= 20; b++)
        if (T.in_page_mask >> b & 1) {
            T.in_page[T.n_in_page++] = b;
            json_array_append_new(inp, json_integer(b));
            json_array_append_new(phys, json_integer(b));
        }
    int above = (int)gos_rng_below(&r, 9);
    unsigned long long hi = 0;
    for (int k = 0; k < above; k++)
        hi |= 1ull << (21 + gos_rng_below(&r, 16));
    for (int b = 21; b < 40; b++)
        if (hi >> b & 1)
            json_array_append_new(phys, json_integer(b));
    double hl = 350 + 300 * gos_rng_uniform(&r), hr = hl * (1.2 + 0.4 * gos_rng_uniform(&r));
    double ll = 0.5 * hl + 60 * gos_rng_uniform(&r), lr = ll * (1.15 + 0.5 * gos_rng_uniform(&r));
    json_t *numa = json_pack("{s:[{s:o},{s:o}], s:{s:I, s:o, s:o}, s:{s:f, s:f, s:f, s:f}}",
                             "partitions", "sms", s0, "sms", s1, "hash", "granularity_bytes",
                             (json_int_t)(1 << low), "in_page_bits", inp, "physical_bits", phys,
                             "latency_cycles", "hbm_local", hl, "hbm_remote", hr, "l2_local", ll,
                             "l2_remote", lr);
    json_object_set_new(doc, "numa", numa);
    T.l2_eff_shared = 0.45 + 0.4 * gos_rng_uniform(&r);
    T.l2_eff_private = T.l2_eff_shared + (1 - T.l2_eff_shared) * gos_rng_uniform(&r);
    T.replicate = gos_rng_uniform(&r) < 0.7;
    T.hbm_part_gbps = 1200 + 1600 * gos_rng_uniform(&r);
    T.fabric_gbps = T.hbm_part_gbps * (0.4 + 0.4 * gos_rng_uniform(&r));
    json_t *sim = json_object_get(doc, "sim");
    json_object_set_new(sim, "jitter", json_real(0.005 + 0.025 * gos_rng_uniform(&r)));
    json_object_set_new(sim, "mem", json_pack("{s:f, s:f, s:f, s:f, s:b}", "l2_effective_fraction_shared",
                                              T.l2_eff_shared, "l2_effective_fraction_private",
                                              T.l2_eff_private, "hbm_gbps_per_partition", T.hbm_part_gbps,
                                              "fabric_gbps", T.fabric_gbps, "replicate", T.replicate));
    if (t)
        *t = T;
    return doc;
}

/* Writes doc to a temporary file and returns its path (static buffer). */
static const char *numa_gen_file(json_t *doc)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/gpuos-numa-test-%d.json", (int)getpid());
    json_dump_file(doc, path, 0);
    return path;
}

/* The simulated device of doc (taken), through a temporary file; NULL on failure. */
static inline gos_device *numa_gen_open(json_t *doc)
{
    const char *path = numa_gen_file(doc);
    json_decref(doc);
    gos_device *d = NULL;
    if (gos_sim_open(path, &d) != GOS_OK)
        d = NULL;
    unlink(path);
    return d;
}

#endif
