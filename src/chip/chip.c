/* SPDX-License-Identifier: Apache-2.0 */
/* chip.c: reading, validating and writing gpuos.chip/2, reading gpuos.chip/1
 * unchanged (docs/contracts.md). Runs in the cli (probe, report, place), the
 * daemon (configured charts, simulated devices), the executor (simulated
 * devices, partition-local memory) and programs of libgpuos-pmem.a. */
#include "chip/chip.h"

#include "common/jsonio.h"
#include "common/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

gos_chip *gos_chip_new(void)
{
    gos_chip *c = calloc(1, sizeof(gos_chip));
    if (c)
        memset(c->pair_tier, -1, sizeof c->pair_tier);
    return c;
}

void gos_chip_free(gos_chip *c)
{
    if (!c)
        return;
    json_decref(c->json);
    free(c);
}

/* Reads an array of SM ids at obj[key] into out (max n_max). */
static int read_int_array(json_t *obj, const char *key, const char *where, int *out, int n_max,
                          int lo, int hi, int *n_out, int required)
{
    json_t *a = json_object_get(obj, key);
    if (!a) {
        if (!required) {
            *n_out = -1;
            return GOS_OK;
        }
        return gos_fail(GOS_EINVAL, "%s: missing field \"%s\"", where, key);
    }
    if (!json_is_array(a))
        return gos_fail(GOS_EINVAL, "%s.%s: expected an array", where, key);
    size_t n = json_array_size(a);
    if ((int)n > n_max)
        return gos_fail(GOS_EINVAL, "%s.%s: %zu entries, at most %d allowed", where, key, n, n_max);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v))
            return gos_fail(GOS_EINVAL, "%s.%s[%zu]: expected an integer", where, key, i);
        json_int_t x = json_integer_value(v);
        if (x < lo || x > hi)
            return gos_fail(GOS_EINVAL, "%s.%s[%zu]: %lld out of range %d..%d", where, key, i,
                            (long long)x, lo, hi);
        out[i] = (int)x;
    }
    *n_out = (int)n;
    return GOS_OK;
}

static int get_number(json_t *obj, const char *key, const char *where, double *out, int required)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return gos_fail(GOS_EINVAL, "%s: missing field \"%s\"", where, key);
        return GOS_OK;
    }
    if (!json_is_number(v))
        return gos_fail(GOS_EINVAL, "%s.%s: expected a number", where, key);
    *out = json_number_value(v);
    return GOS_OK;
}

/* Optional non-negative byte count dev[key] (0 when absent). */
static int get_bytes(json_t *dev, const char *key, const char *where, uint64_t *out)
{
    double x = 0;
    int rc = get_number(dev, key, where, &x, 0);
    if (rc)
        return rc;
    if (!(x >= 0 && x <= 0x1p50)) /* NaN, negatives and what no chip has (1e300 would not convert) */
        return gos_fail(GOS_EINVAL, "%s.%s: %g is outside 0..2^50", where, key, x);
    *out = (uint64_t)x;
    return GOS_OK;
}

static int parse_device(gos_chip *c, json_t *dev, const char *what)
{
    char where[300];
    snprintf(where, sizeof where, "%s: device", what);
    if (!json_is_object(dev))
        return gos_fail(GOS_EINVAL, "%s: missing or non-object \"device\"", what);
    json_t *v;
    if ((v = json_object_get(dev, "name"))) {
        if (!json_is_string(v))
            return gos_fail(GOS_EINVAL, "%s.name: expected a string", where);
        snprintf(c->device.name, sizeof c->device.name, "%s", json_string_value(v));
    }
    if ((v = json_object_get(dev, "uuid"))) {
        if (!json_is_string(v))
            return gos_fail(GOS_EINVAL, "%s.uuid: expected a string", where);
        snprintf(c->device.uuid, sizeof c->device.uuid, "%s", json_string_value(v));
    }
    if ((v = json_object_get(dev, "cc"))) {
        int ma, mi;
        if (!json_is_string(v) || sscanf(json_string_value(v), "%d.%d", &ma, &mi) != 2)
            return gos_fail(GOS_EINVAL, "%s.cc: expected a string like \"9.0\"", where);
        c->device.cc_major = ma;
        c->device.cc_minor = mi;
    }
    double x = 0;
    int rc;
    if ((rc = get_number(dev, "sm_count", where, &x, 1)))
        return rc;
    if (x < 1 || x > GOS_MAX_SMS || x != (int)x)
        return gos_fail(GOS_EINVAL, "%s.sm_count: %g is not an integer in 1..%d", where, x, GOS_MAX_SMS);
    c->device.sm_count = (int)x;
    if ((rc = get_bytes(dev, "l2_bytes", where, &c->device.l2_bytes)) ||
        (rc = get_bytes(dev, "mem_bytes", where, &c->device.mem_bytes)))
        return rc;
    x = 0;
    if ((rc = get_number(dev, "sm_clock_mhz", where, &x, 0)))
        return rc;
    if (!(x >= 0 && x <= 100000) || x != (int)x)
        return gos_fail(GOS_EINVAL, "%s.sm_clock_mhz: %g is not an integer in 0..100000", where, x);
    c->device.sm_clock_mhz = (int)x;
    c->device.simulated = json_is_true(json_object_get(dev, "simulated"));
    return GOS_OK;
}

static int parse_topology(gos_chip *c, json_t *topo, const char *what)
{
    json_t *gpcs = json_object_get(topo, "gpcs");
    if (!json_is_array(gpcs))
        return gos_fail(GOS_EINVAL, "%s: topology.gpcs missing or not an array", what);
    size_t n = json_array_size(gpcs);
    if (n == 0 || n > GOS_MAX_GPCS)
        return gos_fail(GOS_EINVAL, "%s: topology.gpcs has %zu entries (1..%d allowed)", what, n,
                        GOS_MAX_GPCS);
    int hi = c->device.sm_count - 1;
    for (size_t g = 0; g < n; g++) {
        char where[300];
        snprintf(where, sizeof where, "%s: topology.gpcs[%zu]", what, g);
        json_t *o = json_array_get(gpcs, g);
        if (!json_is_object(o))
            return gos_fail(GOS_EINVAL, "%s: expected an object", where);
        gos_gpc *G = &c->gpcs[g];
        int rc;
        if ((rc = read_int_array(o, "sms", where, G->sms, GOS_MAX_SMS, 0, hi, &G->n_sms, 1)))
            return rc;
        if (G->n_sms == 0)
            return gos_fail(GOS_EINVAL, "%s.sms: empty", where);
        if ((rc = read_int_array(o, "cluster_sms", where, G->cluster_sms, GOS_MAX_SMS, 0, hi,
                                 &G->n_cluster, 1)))
            return rc;
        json_t *t = json_object_get(o, "tpcs");
        G->n_tpcs = 0;
        if (t) {
            if (!json_is_array(t) || json_array_size(t) > GOS_MAX_SMS)
                return gos_fail(GOS_EINVAL, "%s.tpcs: expected an array of SM pairs", where);
            for (size_t i = 0; i < json_array_size(t); i++) {
                json_t *p = json_array_get(t, i);
                size_t k = json_array_size(p);
                if (!json_is_array(p) || k < 1 || k > 2)
                    return gos_fail(GOS_EINVAL, "%s.tpcs[%zu]: expected [sm] or [sm, sm]", where, i);
                for (size_t j = 0; j < 2; j++) {
                    json_t *v = j < k ? json_array_get(p, j) : NULL;
                    if (j < k && (!json_is_integer(v) || json_integer_value(v) < 0 ||
                                  json_integer_value(v) > hi))
                        return gos_fail(GOS_EINVAL, "%s.tpcs[%zu]: bad SM id", where, i);
                    G->tpcs[i][j] = j < k ? (int)json_integer_value(v) : -1;
                }
            }
            G->n_tpcs = (int)json_array_size(t);
        } else {
            /* Without an explicit list, consecutive entries of `sms` share a TPC. */
            for (int i = 0; i < G->n_sms; i += 2) {
                G->tpcs[G->n_tpcs][0] = G->sms[i];
                G->tpcs[G->n_tpcs][1] = i + 1 < G->n_sms ? G->sms[i + 1] : -1;
                G->n_tpcs++;
            }
        }
        json_t *mc = json_object_get(o, "max_cluster");
        G->max_cluster = json_is_integer(mc) ? (int)json_integer_value(mc) : 0;
    }
    c->n_gpcs = (int)n;
    return GOS_OK;
}

/* *out = numa[key] (NULL when absent), which must be an object; where[300]
 * names it for messages ("WHAT: numa.KEY"). */
static int numa_member(json_t *numa, const char *key, const char *what, char *where, json_t **out)
{
    snprintf(where, 300, "%s: numa.%s", what, key);
    *out = json_object_get(numa, key);
    if (*out && !json_is_object(*out))
        return gos_fail(GOS_EINVAL, "%s: expected an object", where);
    return GOS_OK;
}

static const char *const rel_names[GOS_REL_COUNT] = {"unknown", "same_partition", "same_die", "other_die",
                                                     "other_partition"};

const char *gos_relation_name(int rel) { return rel >= 0 && rel < GOS_REL_COUNT ? rel_names[rel] : "unknown"; }

int gos_relation_parse(const char *s)
{
    for (int i = 0; i < GOS_REL_COUNT; i++)
        if (s && strcmp(s, rel_names[i]) == 0)
            return i;
    return -1;
}

/* Bits of an optional int array obj[key] in lo..hi as a mask. */
static int read_bits(json_t *obj, const char *key, const char *where, int lo, int hi, uint64_t *mask)
{
    int v[GOS_MAX_HASH_BITS], n = 0, rc;
    if ((rc = read_int_array(obj, key, where, v, GOS_MAX_HASH_BITS, lo, hi, &n, 0)))
        return rc;
    *mask = 0;
    for (int i = 0; i < n; i++)
        *mask |= 1ull << v[i];
    return GOS_OK;
}

/* a JSON array of 1..max entries at `where`, or a one-line error naming it */
static int check_array(const json_t *a, size_t max, const char *where, const char *what)
{
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > max)
        return gos_fail(GOS_EINVAL, "%s: expected an array of 1..%zu %s", where, max, what);
    return GOS_OK;
}

/* element i of array a, an object, with its place ("where[i]") in w2 */
static json_t *object_at(json_t *a, size_t i, const char *where, char *w2, size_t len)
{
    snprintf(w2, len, "%s[%zu]", where, i);
    json_t *o = json_array_get(a, i);
    if (!json_is_object(o))
        gos_fail(GOS_EINVAL, "%s: expected an object", w2);
    return json_is_object(o) ? o : NULL;
}

/* gpuos.chip/2: numa.hash.parities, numa.dies, numa.tiers (docs/contracts.md). */
static int parse_numa_v2(gos_chip *c, json_t *numa, json_t *hash, const char *what)
{
    char where[300];
    int rc;
    json_t *pa = json_object_get(hash, "parities");
    if (pa) {
        snprintf(where, sizeof where, "%s: numa.hash.parities", what);
        if ((rc = check_array(pa, GOS_MAX_PARITIES, where, "parities")))
            return rc;
        for (size_t j = 0; j < json_array_size(pa); j++) {
            char w2[340];
            json_t *o = object_at(pa, j, where, w2, sizeof w2);
            uint64_t in = 0, ph = 0;
            if (!o)
                return GOS_EINVAL;
            if ((rc = read_bits(o, "in_page_bits", w2, 7, 20, &in)) ||
                (rc = read_bits(o, "physical_bits", w2, 7, 47, &ph)))
                return rc;
            if (!in && !ph)
                return gos_fail(GOS_EINVAL, "%s: a parity of no bits", w2);
            c->parity[j].in_page = (uint32_t)in;
            c->parity[j].phys = ph | in;
        }
        c->n_parities = (int)json_array_size(pa);
        if (c->n_parities == 1) { /* the /1 fields say the same, or are filled from it */
            uint32_t in = 0;
            for (int i = 0; i < c->n_in_page_bits; i++)
                in |= 1u << c->in_page_bits[i];
            if (!c->n_in_page_bits && !c->n_physical_bits) {
                for (int b = 7; b <= 20; b++)
                    if (c->parity[0].in_page >> b & 1)
                        c->in_page_bits[c->n_in_page_bits++] = b;
                for (int b = 7; b < 48; b++)
                    if ((c->parity[0].phys >> b & 1) && !(c->parity[0].in_page >> b & 1))
                        c->physical_bits[c->n_physical_bits++] = b;
            } else if (in != c->parity[0].in_page)
                return gos_fail(GOS_EINVAL, "%s: in_page_bits of parities[0] and of numa.hash differ", where);
        }
        if (c->n_parts && c->n_parts != 1 << c->n_parities)
            return gos_fail(GOS_EINVAL, "%s: %d partitions, but %d parities make %d (a hash of parities "
                                        "needs 2^k partitions)", where, c->n_parts, c->n_parities,
                            1 << c->n_parities);
    } else if (c->n_parts == 2 && (c->n_in_page_bits || c->n_physical_bits)) {
        c->n_parities = 1; /* a /1 chart: one parity */
        for (int i = 0; i < c->n_in_page_bits; i++)
            c->parity[0].in_page |= 1u << c->in_page_bits[i];
        c->parity[0].phys = c->parity[0].in_page;
        for (int i = 0; i < c->n_physical_bits; i++)
            c->parity[0].phys |= 1ull << c->physical_bits[i];
    }
    if (pa && !c->hash_granularity) { /* /2 parities given: their lowest bit (a /1 file reads as before) */
        uint32_t all = 0;
        for (int j = 0; j < c->n_parities; j++)
            all |= c->parity[j].in_page;
        if (all)
            c->hash_granularity = 1ull << __builtin_ctz(all);
    }
    for (int p = 0; p < GOS_MAX_PARTS; p++)
        for (int q = 0; q < GOS_MAX_PARTS; q++)
            c->pair_tier[p][q] = -1;
    json_t *dies = json_object_get(numa, "dies");
    if (dies) {
        snprintf(where, sizeof where, "%s: numa.dies", what);
        if (!c->n_parts)
            return gos_fail(GOS_EINVAL, "%s: dies without numa.partitions", where);
        if ((rc = check_array(dies, (size_t)c->n_parts, where, "dies")))
            return rc;
        for (int p = 0; p < c->n_parts; p++)
            c->die_of_part[p] = -1;
        for (size_t k = 0; k < json_array_size(dies); k++) {
            char w2[340];
            int v[GOS_MAX_PARTS], n;
            snprintf(w2, sizeof w2, "%s[%zu]", where, k);
            json_t *o = json_array_get(dies, k);
            if (!json_is_object(o))
                return gos_fail(GOS_EINVAL, "%s: expected an object", w2);
            if ((rc = read_int_array(o, "partitions", w2, v, GOS_MAX_PARTS, 0, c->n_parts - 1, &n, 1)))
                return rc;
            if (!n)
                return gos_fail(GOS_EINVAL, "%s.partitions: empty", w2);
            for (int i = 0; i < n; i++) {
                if (c->die_of_part[v[i]] >= 0)
                    return gos_fail(GOS_EINVAL, "%s: partition %d is in die %d and die %zu", w2, v[i],
                                    c->die_of_part[v[i]], k);
                c->die_of_part[v[i]] = (int)k;
            }
        }
        for (int p = 0; p < c->n_parts; p++)
            if (c->die_of_part[p] < 0)
                return gos_fail(GOS_EINVAL, "%s: partition %d is in no die", where, p);
        c->n_dies = (int)json_array_size(dies);
    }
    json_t *tiers = json_object_get(numa, "tiers");
    if (tiers) {
        snprintf(where, sizeof where, "%s: numa.tiers", what);
        if ((rc = check_array(tiers, GOS_MAX_TIERS, where, "tiers")))
            return rc;
        for (size_t t = 0; t < json_array_size(tiers); t++) {
            char w2[340];
            json_t *o = object_at(tiers, t, where, w2, sizeof w2);
            gos_tier *T = &c->tiers[t];
            if (!o)
                return GOS_EINVAL;
            if ((rc = get_number(o, "cycles", w2, &T->cycles, 1)) ||
                (rc = get_number(o, "l2_cycles", w2, &T->l2_cycles, 0)))
                return rc;
            if (!(T->cycles > 0 && T->cycles < 1e7) || !(T->l2_cycles >= 0 && T->l2_cycles < 1e7))
                return gos_fail(GOS_EINVAL, "%s: cycles must be positive", w2);
            if (t && T->cycles < c->tiers[t - 1].cycles)
                return gos_fail(GOS_EINVAL, "%s: tiers must be in ascending cycles", w2);
            json_t *r = json_object_get(o, "relation");
            T->relation = GOS_REL_UNKNOWN;
            if (r && (!json_is_string(r) || (T->relation = gos_relation_parse(json_string_value(r))) < 0))
                return gos_fail(GOS_EINVAL, "%s.relation: expected one of same_partition, same_die, "
                                            "other_die, other_partition, unknown", w2);
            if ((T->relation == GOS_REL_SAME_DIE || T->relation == GOS_REL_OTHER_DIE) && !c->n_dies)
                return gos_fail(GOS_EINVAL, "%s.relation: %s without numa.dies", w2,
                                gos_relation_name(T->relation));
            json_t *pairs = json_object_get(o, "pairs");
            if (pairs && !json_is_array(pairs))
                return gos_fail(GOS_EINVAL, "%s.pairs: expected an array of [partition, partition]", w2);
            for (size_t i = 0; i < json_array_size(pairs); i++) {
                int ab[2], n;
                json_t *w = json_pack("{s:O}", "p", json_array_get(pairs, i));
                rc = read_int_array(w, "p", w2, ab, 2, 0, c->n_parts ? c->n_parts - 1 : 0, &n, 1);
                json_decref(w);
                if (rc)
                    return rc;
                if (n != 2 || !c->n_parts)
                    return gos_fail(GOS_EINVAL, "%s.pairs[%zu]: expected [partition, partition]", w2, i);
                c->pair_tier[ab[0]][ab[1]] = c->pair_tier[ab[1]][ab[0]] = (signed char)t;
            }
        }
        c->n_tiers = (int)json_array_size(tiers);
    }
    return GOS_OK;
}

static int parse_numa(gos_chip *c, json_t *numa, const char *what)
{
    int hi = c->device.sm_count - 1, rc;
    json_t *parts = json_object_get(numa, "partitions");
    if (parts) {
        if (!json_is_array(parts) || json_array_size(parts) > GOS_MAX_PARTS)
            return gos_fail(GOS_EINVAL, "%s: numa.partitions: expected an array of at most %d",
                            what, GOS_MAX_PARTS);
        for (size_t p = 0; p < json_array_size(parts); p++) {
            char where[300];
            snprintf(where, sizeof where, "%s: numa.partitions[%zu]", what, p);
            json_t *o = json_array_get(parts, p);
            if (!json_is_object(o))
                return gos_fail(GOS_EINVAL, "%s: expected an object", where);
            if ((rc = read_int_array(o, "sms", where, c->parts[p].sms, GOS_MAX_SMS, 0, hi,
                                     &c->parts[p].n_sms, 1)))
                return rc;
        }
        c->n_parts = (int)json_array_size(parts);
    }
    char where[300];
    json_t *hash;
    if ((rc = numa_member(numa, "hash", what, where, &hash)))
        return rc;
    if (hash) {
        double g = 0;
        if ((rc = get_number(hash, "granularity_bytes", where, &g, 0)))
            return rc;
        if (g != 0 && (g < 1 || ((uint64_t)g & ((uint64_t)g - 1))))
            return gos_fail(GOS_EINVAL, "%s.granularity_bytes: %g is not a power of two", where, g);
        c->hash_granularity = (uint64_t)g;
        if ((rc = read_int_array(hash, "in_page_bits", where, c->in_page_bits, GOS_MAX_HASH_BITS, 0,
                                 20, &c->n_in_page_bits, 0)))
            return rc;
        if (c->n_in_page_bits < 0)
            c->n_in_page_bits = 0;
        if ((rc = read_int_array(hash, "physical_bits", where, c->physical_bits, GOS_MAX_HASH_BITS,
                                 0, 47, &c->n_physical_bits, 0)))
            return rc;
        if (c->n_physical_bits < 0)
            c->n_physical_bits = 0;
    }
    json_t *lat;
    if ((rc = numa_member(numa, "latency_cycles", what, where, &lat)))
        return rc;
    if (lat) {
        if ((rc = get_number(lat, "hbm_local", where, &c->lat_hbm_local, 1)) ||
            (rc = get_number(lat, "hbm_remote", where, &c->lat_hbm_remote, 1)) ||
            (rc = get_number(lat, "l2_local", where, &c->lat_l2_local, 1)) ||
            (rc = get_number(lat, "l2_remote", where, &c->lat_l2_remote, 1)))
            return rc;
        if (c->lat_hbm_local <= 0 || c->lat_hbm_remote <= 0 || c->lat_l2_local <= 0 ||
            c->lat_l2_remote <= 0)
            return gos_fail(GOS_EINVAL, "%s: latencies must be positive", where);
        c->has_latency = 1;
    }
    return parse_numa_v2(c, numa, hash, what);
}

/* root[key], when present, must be an object; parse() reads it. */
static int parse_optional(gos_chip *c, json_t *root, const char *key,
                          int (*parse)(gos_chip *, json_t *, const char *), const char *what)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return GOS_OK;
    if (!json_is_object(v))
        return gos_fail(GOS_EINVAL, "%s: %s is not an object", what, key);
    return parse(c, v, what);
}

static int parse_sim(gos_chip *c, json_t *sim, const char *what)
{
    char where[300];
    snprintf(where, sizeof where, "%s: sim", what);
    if (!json_is_object(sim))
        return gos_fail(GOS_EINVAL, "%s: expected an object", where);
    double seed = 1, jitter = 0.03, per_sm = 180, per_gpc = 1300;
    int rc;
    if ((rc = get_number(sim, "seed", where, &seed, 0)) ||
        (rc = get_number(sim, "jitter", where, &jitter, 0)) ||
        (rc = get_number(sim, "l2_gbps_per_sm", where, &per_sm, 0)) ||
        (rc = get_number(sim, "l2_gbps_per_gpc", where, &per_gpc, 0)))
        return rc;
    if (seed < 0 || seed != (double)(uint64_t)seed)
        return gos_fail(GOS_EINVAL, "%s.seed: expected a non-negative integer", where);
    if (jitter < 0 || jitter > 0.5)
        return gos_fail(GOS_EINVAL, "%s.jitter: %g outside 0..0.5", where, jitter);
    if (per_sm <= 0 || per_gpc <= 0)
        return gos_fail(GOS_EINVAL, "%s: bandwidths must be positive", where);
    c->has_sim = 1;
    c->sim_seed = (uint64_t)seed;
    c->sim_jitter = jitter;
    c->sim_l2_gbps_per_sm = per_sm;
    c->sim_l2_gbps_per_gpc = per_gpc;
    return GOS_OK;
}

int gos_chip_parse(const char *text, const char *what, gos_chip **out)
{
    json_error_t e;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!root)
        return gos_fail(GOS_EINVAL, "%s: not valid JSON at line %d column %d: %s", what, e.line,
                        e.column, e.text);
    int rc = GOS_OK;
    gos_chip *c = gos_chip_new();
    if (!c) {
        json_decref(root);
        return gos_fail(GOS_ENOMEM, "%s: out of memory", what);
    }
    c->json = root;
    json_t *schema = json_object_get(root, "schema");
    if (!json_is_object(root)) {
        rc = gos_fail(GOS_EINVAL, "%s: top level is not a JSON object", what);
        goto fail;
    }
    if (!json_is_string(schema) || (strcmp(json_string_value(schema), GOS_CHIP_SCHEMA) != 0 &&
                                    strcmp(json_string_value(schema), GOS_CHIP_SCHEMA_V1) != 0)) {
        rc = gos_fail(GOS_EINVAL, "%s: \"schema\" is not \"%s\" (or \"%s\")", what, GOS_CHIP_SCHEMA,
                      GOS_CHIP_SCHEMA_V1);
        goto fail;
    }
    if ((rc = parse_device(c, json_object_get(root, "device"), what)))
        goto fail;
    if ((rc = parse_optional(c, root, "topology", parse_topology, what)) ||
        (rc = parse_optional(c, root, "numa", parse_numa, what)))
        goto fail;
    json_t *s = json_object_get(root, "sim");
    if (s && (rc = parse_sim(c, s, what)))
        goto fail;
    if ((rc = gos_chip_validate(c, what)))
        goto fail;
    *out = c;
    return GOS_OK;
fail:
    gos_chip_free(c);
    return rc;
}

int gos_chip_load(const char *path, gos_chip **out)
{
    if (strcmp(path, "default") == 0) {
        int rc = gos_chip_parse(gos_chip_default_json(), "built-in chip", out);
        if (rc == GOS_OK)
            (*out)->device.simulated = 1;
        return rc;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return gos_fail(errno == EACCES ? GOS_EPERM : GOS_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 131072;
            if (cap > (64u << 20)) {
                free(buf);
                fclose(f);
                return gos_fail(GOS_EINVAL, "%s: larger than 64 MiB, not a chip file", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return gos_fail(GOS_ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, 65536, f);
        len += r;
        if (r == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return gos_fail(GOS_EIO, "%s: read error", path);
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        free(buf);
        return gos_fail(GOS_EINVAL, "%s: contains NUL bytes, not a chip file", path);
    }
    int rc = gos_chip_parse(buf, path, out);
    free(buf);
    return rc;
}

int gos_chip_validate(const gos_chip *c, const char *what)
{
    int n = c->device.sm_count;
    if (n < 1 || n > GOS_MAX_SMS)
        return gos_fail(GOS_EINVAL, "%s: sm_count %d out of range", what, n);
    if (c->n_gpcs) {
        int owner[GOS_MAX_SMS];
        for (int i = 0; i < GOS_MAX_SMS; i++)
            owner[i] = -1;
        for (int g = 0; g < c->n_gpcs; g++) {
            const gos_gpc *G = &c->gpcs[g];
            for (int i = 0; i < G->n_sms; i++) {
                int s = G->sms[i];
                if (s < 0 || s >= n)
                    return gos_fail(GOS_EINVAL, "%s: GPC %d lists SM %d, beyond sm_count %d", what, g, s, n);
                if (owner[s] >= 0)
                    return gos_fail(GOS_EINVAL, "%s: SM %d is in GPC %d and GPC %d", what, s, owner[s], g);
                owner[s] = g;
            }
        }
        for (int s = 0; s < n; s++)
            if (owner[s] < 0)
                return gos_fail(GOS_EINVAL, "%s: SM %d belongs to no GPC", what, s);
        for (int g = 0; g < c->n_gpcs; g++) {
            const gos_gpc *G = &c->gpcs[g];
            unsigned char seen[GOS_MAX_SMS] = {0};
            for (int i = 0; i < G->n_cluster; i++) {
                int s = G->cluster_sms[i];
                if (owner[s] != g)
                    return gos_fail(GOS_EINVAL, "%s: GPC %d lists cluster SM %d that is not one of its SMs", what, g, s);
                if (seen[s]++)
                    return gos_fail(GOS_EINVAL, "%s: GPC %d lists cluster SM %d twice", what, g, s);
            }
            unsigned char in_tpc[GOS_MAX_SMS] = {0};
            for (int i = 0; i < G->n_tpcs; i++)
                for (int j = 0; j < 2; j++) {
                    int s = G->tpcs[i][j];
                    if (s < 0)
                        continue;
                    if (owner[s] != g)
                        return gos_fail(GOS_EINVAL, "%s: GPC %d TPC lists SM %d of another GPC", what, g, s);
                    if (in_tpc[s]++)
                        return gos_fail(GOS_EINVAL, "%s: SM %d is in two TPCs", what, s);
                }
            if (G->n_tpcs)
                for (int i = 0; i < G->n_sms; i++)
                    if (!in_tpc[G->sms[i]])
                        return gos_fail(GOS_EINVAL, "%s: SM %d of GPC %d is in no TPC", what, G->sms[i], g);
        }
    }
    if (c->n_parts) {
        int owner[GOS_MAX_SMS];
        for (int i = 0; i < GOS_MAX_SMS; i++)
            owner[i] = -1;
        for (int p = 0; p < c->n_parts; p++)
            for (int i = 0; i < c->parts[p].n_sms; i++) {
                int s = c->parts[p].sms[i];
                if (owner[s] >= 0)
                    return gos_fail(GOS_EINVAL, "%s: SM %d is in partition %d and partition %d", what, s, owner[s], p);
                owner[s] = p;
            }
    }
    if (c->n_parities && c->n_parts && c->n_parts != 1 << c->n_parities)
        return gos_fail(GOS_EINVAL, "%s: %d partitions but a hash of %d parities (2^k partitions needed)", what,
                        c->n_parts, c->n_parities);
    if (c->n_parts > GOS_MAX_PARTS || c->n_dies > c->n_parts || c->n_tiers > GOS_MAX_TIERS)
        return gos_fail(GOS_EINVAL, "%s: too many partitions, dies or tiers", what);
    for (int i = 0; i < c->n_in_page_bits; i++)
        if (c->in_page_bits[i] < 7 || c->in_page_bits[i] > 20)
            return gos_fail(GOS_EINVAL, "%s: in-page hash bit %d outside 7..20", what, c->in_page_bits[i]);
    for (int i = 0; i < c->n_physical_bits; i++)
        if (c->physical_bits[i] < 7)
            return gos_fail(GOS_EINVAL, "%s: physical hash bit %d below 7", what, c->physical_bits[i]);
    return GOS_OK;
}

json_t *gos_chip_to_json(const gos_chip *c)
{
    json_t *root = c->json ? json_deep_copy(c->json) : json_object();
    json_object_set_new(root, "schema", json_string(GOS_CHIP_SCHEMA));
    json_t *dev = gos_json_child(root, "device");
    json_object_set_new(dev, "name", json_string(c->device.name));
    json_object_set_new(dev, "uuid", json_string(c->device.uuid));
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", c->device.cc_major, c->device.cc_minor);
    json_object_set_new(dev, "cc", json_string(cc));
    json_object_set_new(dev, "sm_count", json_integer(c->device.sm_count));
    json_object_set_new(dev, "l2_bytes", json_integer((json_int_t)c->device.l2_bytes));
    json_object_set_new(dev, "mem_bytes", json_integer((json_int_t)c->device.mem_bytes));
    json_object_set_new(dev, "sm_clock_mhz", json_integer(c->device.sm_clock_mhz));
    if (c->device.simulated)
        json_object_set_new(dev, "simulated", json_true());
    else
        json_object_del(dev, "simulated");
    if (c->n_gpcs) {
        json_t *topo = gos_json_child(root, "topology");
        json_t *gpcs = json_array();
        for (int g = 0; g < c->n_gpcs; g++) {
            const gos_gpc *G = &c->gpcs[g];
            json_t *o = json_object();
            json_object_set_new(o, "sms", gos_json_ints(G->sms, G->n_sms));
            json_object_set_new(o, "cluster_sms", gos_json_ints(G->cluster_sms, G->n_cluster));
            json_t *t = json_array();
            for (int i = 0; i < G->n_tpcs; i++)
                json_array_append_new(t, G->tpcs[i][1] >= 0 ? gos_json_ints(G->tpcs[i], 2)
                                                            : gos_json_ints(G->tpcs[i], 1));
            json_object_set_new(o, "tpcs", t);
            if (G->max_cluster)
                json_object_set_new(o, "max_cluster", json_integer(G->max_cluster));
            json_array_append_new(gpcs, o);
        }
        json_object_set_new(topo, "gpcs", gpcs);
    }
    if (c->n_parts || c->hash_granularity || c->n_in_page_bits || c->has_latency || c->n_parities) {
        json_t *numa = gos_json_child(root, "numa");
        if (c->n_parts) {
            json_t *parts = json_array();
            for (int p = 0; p < c->n_parts; p++) {
                json_t *o = json_object();
                json_object_set_new(o, "sms", gos_json_ints(c->parts[p].sms, c->parts[p].n_sms));
                json_array_append_new(parts, o);
            }
            json_object_set_new(numa, "partitions", parts);
        }
        if (c->hash_granularity || c->n_in_page_bits || c->n_physical_bits) {
            json_t *h = gos_json_child(numa, "hash");
            json_object_set_new(h, "granularity_bytes", json_integer((json_int_t)c->hash_granularity));
            if (c->n_parities <= 1)
                json_object_set_new(h, "in_page_bits", gos_json_ints(c->in_page_bits, c->n_in_page_bits));
            if (c->n_physical_bits)
                json_object_set_new(h, "physical_bits", gos_json_ints(c->physical_bits, c->n_physical_bits));
        }
        if (c->n_parities) {
            json_t *h = gos_json_child(numa, "hash"), *pa = json_array();
            for (int j = 0; j < c->n_parities; j++) {
                int in[32], ph[64], ni = 0, np = 0;
                for (int b = 0; b < 64; b++) {
                    if (b < 32 && (c->parity[j].in_page >> b & 1))
                        in[ni++] = b;
                    if ((c->parity[j].phys >> b & 1) && !(b < 32 && (c->parity[j].in_page >> b & 1)))
                        ph[np++] = b;
                }
                json_t *o = json_pack("{s:o}", "in_page_bits", gos_json_ints(in, ni));
                if (np)
                    json_object_set_new(o, "physical_bits", gos_json_ints(ph, np));
                json_array_append_new(pa, o);
            }
            json_object_set_new(h, "parities", pa);
            if (c->n_parities != 1) { /* the /1 single-parity fields would mislead */
                json_object_del(h, "in_page_bits");
                json_object_del(h, "physical_bits");
            }
        }
        if (c->n_dies) {
            json_t *dies = json_array();
            for (int k = 0; k < c->n_dies; k++) {
                int v[GOS_MAX_PARTS], n = 0;
                for (int p = 0; p < c->n_parts; p++)
                    if (c->die_of_part[p] == k)
                        v[n++] = p;
                json_array_append_new(dies, json_pack("{s:o}", "partitions", gos_json_ints(v, n)));
            }
            json_object_set_new(numa, "dies", dies);
        }
        if (c->n_tiers) {
            json_t *tiers = json_array();
            for (int t = 0; t < c->n_tiers; t++) {
                const gos_tier *T = &c->tiers[t];
                json_t *o = json_pack("{s:f, s:s}", "cycles", T->cycles, "relation", gos_relation_name(T->relation));
                if (T->l2_cycles > 0)
                    json_object_set_new(o, "l2_cycles", json_real(T->l2_cycles));
                json_t *pairs = json_array();
                for (int a = 0; a < c->n_parts; a++)
                    for (int b = a; b < c->n_parts; b++)
                        if (c->pair_tier[a][b] == t)
                            json_array_append_new(pairs, json_pack("[i,i]", a, b));
                if (json_array_size(pairs))
                    json_object_set_new(o, "pairs", pairs);
                else
                    json_decref(pairs);
                json_array_append_new(tiers, o);
            }
            json_object_set_new(numa, "tiers", tiers);
        }
        if (c->n_parts != 2 && c->n_parts) /* the /1 local/remote pair: two partitions only */
            json_object_del(numa, "latency_cycles");
        if (c->has_latency && c->n_parts == 2) {
            json_t *l = gos_json_child(numa, "latency_cycles");
            json_object_set_new(l, "hbm_local", json_real(c->lat_hbm_local));
            json_object_set_new(l, "hbm_remote", json_real(c->lat_hbm_remote));
            json_object_set_new(l, "l2_local", json_real(c->lat_l2_local));
            json_object_set_new(l, "l2_remote", json_real(c->lat_l2_remote));
        }
    }
    if (c->has_sim) {
        json_t *s = gos_json_child(root, "sim");
        json_object_set_new(s, "seed", json_integer((json_int_t)c->sim_seed));
        json_object_set_new(s, "jitter", json_real(c->sim_jitter));
        json_object_set_new(s, "l2_gbps_per_sm", json_real(c->sim_l2_gbps_per_sm));
        json_object_set_new(s, "l2_gbps_per_gpc", json_real(c->sim_l2_gbps_per_gpc));
    }
    return root;
}


int gos_chip_save(const gos_chip *c, const char *path)
{
    json_t *root = gos_chip_to_json(c);
    int rc = gos_json_save_atomic(root, path);
    json_decref(root);
    return rc;
}

void gos_chip_gpc_of(const gos_chip *c, int gpc_of[GOS_MAX_SMS])
{
    for (int i = 0; i < GOS_MAX_SMS; i++)
        gpc_of[i] = -1;
    for (int g = 0; g < c->n_gpcs; g++)
        for (int i = 0; i < c->gpcs[g].n_sms; i++)
            gpc_of[c->gpcs[g].sms[i]] = g;
}

int gos_chip_tpc_partner(const gos_chip *c, int sm)
{
    for (int g = 0; g < c->n_gpcs; g++)
        for (int i = 0; i < c->gpcs[g].n_tpcs; i++) {
            const int *t = c->gpcs[g].tpcs[i];
            if (t[0] == sm)
                return t[1];
            if (t[1] == sm)
                return t[0];
        }
    return -1;
}

/* Canonical key of a GPC: its lowest SM id. */
static int gpc_key(const gos_gpc *G)
{
    int m = GOS_MAX_SMS;
    for (int i = 0; i < G->n_sms; i++)
        if (G->sms[i] < m)
            m = G->sms[i];
    return m;
}

int gos_chip_same_topology(const gos_chip *a, const gos_chip *b, char *why, int whylen)
{
    if (a->device.sm_count != b->device.sm_count) {
        snprintf(why, whylen, "sm_count %d vs %d", a->device.sm_count, b->device.sm_count);
        return 0;
    }
    if (a->n_gpcs != b->n_gpcs) {
        snprintf(why, whylen, "%d GPCs vs %d", a->n_gpcs, b->n_gpcs);
        return 0;
    }
    int ga[GOS_MAX_SMS], gb[GOS_MAX_SMS];
    gos_chip_gpc_of(a, ga);
    gos_chip_gpc_of(b, gb);
    /* Same partition of SMs into GPCs: a bijection between GPC indices. */
    int map[GOS_MAX_GPCS];
    for (int g = 0; g < GOS_MAX_GPCS; g++)
        map[g] = -1;
    for (int s = 0; s < a->device.sm_count; s++) {
        if (ga[s] < 0 || gb[s] < 0) {
            snprintf(why, whylen, "SM %d unplaced", s);
            return 0;
        }
        if (map[ga[s]] < 0)
            map[ga[s]] = gb[s];
        else if (map[ga[s]] != gb[s]) {
            snprintf(why, whylen, "SM %d: GPC with SM %d vs GPC with SM %d", s,
                     gpc_key(&a->gpcs[ga[s]]), gpc_key(&b->gpcs[gb[s]]));
            return 0;
        }
    }
    for (int g = 0; g < a->n_gpcs; g++) {
        const gos_gpc *A = &a->gpcs[g], *B = &b->gpcs[map[g]];
        if (A->n_sms != B->n_sms || A->n_cluster != B->n_cluster) {
            snprintf(why, whylen, "GPC with SM %d: %d/%d SMs/cluster SMs vs %d/%d", gpc_key(A),
                     A->n_sms, A->n_cluster, B->n_sms, B->n_cluster);
            return 0;
        }
        unsigned char in[GOS_MAX_SMS] = {0};
        for (int i = 0; i < B->n_cluster; i++)
            in[B->cluster_sms[i]] = 1;
        for (int i = 0; i < A->n_cluster; i++)
            if (!in[A->cluster_sms[i]]) {
                snprintf(why, whylen, "SM %d cluster-eligible in one chip only", A->cluster_sms[i]);
                return 0;
            }
    }
    for (int s = 0; s < a->device.sm_count; s++)
        if (gos_chip_tpc_partner(a, s) != gos_chip_tpc_partner(b, s)) {
            snprintf(why, whylen, "SM %d: TPC partner %d vs %d", s, gos_chip_tpc_partner(a, s),
                     gos_chip_tpc_partner(b, s));
            return 0;
        }
    return 1;
}

int gos_chip_max_cluster(const gos_chip *c)
{
    int m = 0, eligible = 0;
    for (int g = 0; g < c->n_gpcs; g++) {
        m = c->gpcs[g].max_cluster > m ? c->gpcs[g].max_cluster : m;
        eligible = c->gpcs[g].n_cluster > eligible ? c->gpcs[g].n_cluster : eligible;
    }
    if (!m) {
        json_t *v = json_object_get(json_object_get(c->json, "topology"), "max_cluster_size");
        m = json_is_integer(v) ? (int)json_integer_value(v) : 0;
    }
    if (!m && eligible > 2)
        m = eligible < 16 ? eligible : 16;
    return m;
}

int gos_chip_hash_code(const gos_chip *c, uint64_t pa)
{
    int code = 0;
    for (int j = 0; j < c->n_parities; j++)
        code |= __builtin_parityll(pa & c->parity[j].phys) << j;
    return code;
}

void gos_chip_set_parities(gos_chip *c, const gos_parity *p, int k, int physical)
{
    c->n_parities = k;
    uint32_t all = 0;
    for (int j = 0; j < k; j++) {
        c->parity[j] = p[j];
        c->parity[j].phys = physical ? p[j].phys | p[j].in_page : p[j].in_page;
        all |= p[j].in_page;
    }
    c->n_in_page_bits = c->n_physical_bits = 0;
    if (k == 1) {
        for (int b = 7; b <= 20; b++)
            if (p[0].in_page >> b & 1)
                c->in_page_bits[c->n_in_page_bits++] = b;
        if (physical)
            for (int b = 0; b < 48; b++)
                if (c->parity[0].phys >> b & 1)
                    c->physical_bits[c->n_physical_bits++] = b;
    }
    c->hash_granularity = all ? 1ull << __builtin_ctz(all) : (2ull << 20);
}

int gos_chip_tier_of(const gos_chip *c, int a, int b)
{
    if (a < 0 || b < 0 || a >= c->n_parts || b >= c->n_parts)
        return -1;
    if (c->pair_tier[a][b] >= 0)
        return c->pair_tier[a][b];
    int want[3] = {GOS_REL_SAME_PART, -1, -1};
    if (a != b) {
        int same = c->n_dies && c->die_of_part[a] == c->die_of_part[b];
        want[0] = same ? GOS_REL_SAME_DIE : GOS_REL_OTHER_DIE;
        want[1] = GOS_REL_OTHER_PART;
        want[2] = same ? GOS_REL_SAME_PART : -1; /* unresolved partitions of one die */
    }
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < c->n_tiers; t++)
            if (want[k] >= 0 && c->tiers[t].relation == want[k])
                return t;
    return -1;
}
