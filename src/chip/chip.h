/* SPDX-License-Identifier: Apache-2.0 */
/* chip.h: the gpuos.chip/2 description of one GPU (docs/contracts.md); gpuos.chip/1
 * files are read unchanged (a /1 file is a /2 file without tiers, dies, parities).
 * Runs in the cli, the daemon, the executor and programs of libgpuos-pmem.a
 * (chip.c says for what).
 *
 * One format is both what `gpuos probe` writes and what the simulated device
 * reads. gos_chip holds the fields every pillar shares in plain C; the parsed
 * JSON document is kept alongside (`json`) so that a pillar can read fields of
 * its own (for example sim.dvfs) without this file knowing them. */
#ifndef GOS_CHIP_H
#define GOS_CHIP_H

#include <jansson.h>
#include <stdint.h>

#define GOS_CHIP_SCHEMA "gpuos.chip/2"
#define GOS_CHIP_SCHEMA_V1 "gpuos.chip/1" /* still read */
#define GOS_MAX_SMS 512   /* SM ids are 0..GOS_MAX_SMS-1 (MI300X-like: 304 CUs) */
#define GOS_MAX_GPCS 32
#define GOS_MAX_PARTS 32  /* memory partitions: 2^k with k <= GOS_MAX_PARITIES */
#define GOS_MAX_PARITIES 5
#define GOS_MAX_TIERS 8
#define GOS_MAX_HASH_BITS 48

/* What separates the SM from the memory of a latency tier (numa.tiers[].relation). */
enum {
    GOS_REL_UNKNOWN = 0,  /* "unknown": only the partition pairs are known */
    GOS_REL_SAME_PART,    /* "same_partition": local */
    GOS_REL_SAME_DIE,     /* "same_die": another partition of the SM's die */
    GOS_REL_OTHER_DIE,    /* "other_die" */
    GOS_REL_OTHER_PART,   /* "other_partition": remote, dies not told apart */
    GOS_REL_COUNT
};
const char *gos_relation_name(int rel);
int gos_relation_parse(const char *s); /* -1 when unknown */

/* One latency tier: HBM cycles (median) of the accesses it holds. */
typedef struct {
    double cycles;
    double l2_cycles; /* L2-hit latency of the same relation; 0 unknown */
    int relation;     /* GOS_REL_* */
} gos_tier;

/* One parity of the partition hash: partition code bit j of a physical address
 * is the parity of its bits in in_page (7..20) and phys (any, simulated chips). */
typedef struct {
    uint32_t in_page;
    uint64_t phys;
} gos_parity;

typedef struct {
    int n_sms;
    int sms[GOS_MAX_SMS];          /* every SM of the GPC */
    int n_cluster;
    int cluster_sms[GOS_MAX_SMS];  /* eligible for clusters > 2; others free-floating */
    int n_tpcs;
    int tpcs[GOS_MAX_SMS][2];      /* SM pairs sharing a TPC; [1] == -1 for a lone SM */
    int max_cluster;               /* largest cluster size seen/allowed, 0 if unknown */
} gos_gpc;

typedef struct {
    int n_sms;
    int sms[GOS_MAX_SMS];
} gos_partition;

typedef struct {
    char name[128];
    char uuid[96];
    int cc_major, cc_minor;
    int sm_count;
    uint64_t l2_bytes;
    uint64_t mem_bytes;
    int sm_clock_mhz;
    int simulated; /* written as "simulated": true; everything printed says so */
} gos_chip_device;

typedef struct gos_chip {
    gos_chip_device device;

    int n_gpcs; /* 0: topology unknown */
    gos_gpc gpcs[GOS_MAX_GPCS];

    int n_parts; /* 0: NUMA unknown */
    gos_partition parts[GOS_MAX_PARTS];
    uint64_t hash_granularity; /* bytes; 0 unknown */
    int n_in_page_bits;
    int in_page_bits[GOS_MAX_HASH_BITS];
    int n_physical_bits; /* simulated chips only */
    int physical_bits[GOS_MAX_HASH_BITS];
    int has_latency;
    double lat_hbm_local, lat_hbm_remote, lat_l2_local, lat_l2_remote; /* cycles */

    /* gpuos.chip/2. Partition p of parts[] is the one of hash code p: code bit j
     * is parity[j] of the address (the probe's codes are relative to a measured
     * per-2 MB-page constant, so only the partition of SMs and the masks' span
     * are facts). A /1 chart with two partitions reads as one parity (the
     * in_page_bits / physical_bits above) and no tiers or dies. */
    int n_parities;                       /* 0: none known; n_parts == 1 << n_parities */
    gos_parity parity[GOS_MAX_PARITIES];
    int n_dies;                           /* 0: unknown (one die) */
    int die_of_part[GOS_MAX_PARTS];
    int n_tiers;                          /* 0: none listed (latency_cycles may be) */
    gos_tier tiers[GOS_MAX_TIERS];        /* ascending cycles */
    signed char pair_tier[GOS_MAX_PARTS][GOS_MAX_PARTS]; /* tier of SMs of p on memory of q, -1 */

    /* sim section (read only by the simulated device); has_sim = 0 when absent */
    int has_sim;
    uint64_t sim_seed;
    double sim_jitter;
    double sim_l2_gbps_per_sm, sim_l2_gbps_per_gpc;

    json_t *json; /* the whole document as read (owned), or NULL */
} gos_chip;

/* Reads and validates a gpuos.chip/1 or /2 file. On error returns a GOS_E* code with a
 * one-line message naming the file and the problem; *out is untouched.
 * `path` may be "default" for the built-in simulated H200. */
int gos_chip_load(const char *path, gos_chip **out);

/* Same from a JSON text (used by tests and the built-in chip). */
int gos_chip_parse(const char *text, const char *what, gos_chip **out);

/* Validates the invariants (SM ids in range, no SM in two GPCs or partitions,
 * cluster_sms subset of sms, TPCs pairs of the GPC, bits in range). */
int gos_chip_validate(const gos_chip *c, const char *what);

/* Serialises the chip (device, topology, numa when known, sim when has_sim)
 * merging over the fields of c->json so that unknown fields survive a round
 * trip. Returns a new reference. */
json_t *gos_chip_to_json(const gos_chip *c);

/* Writes the chip atomically (temporary file + rename) so an existing file is
 * never left half-written. */
int gos_chip_save(const gos_chip *c, const char *path);

gos_chip *gos_chip_new(void);
void gos_chip_free(gos_chip *c);

/* The largest thread-block cluster the chip launches: as measured (the GPCs'
 * max_cluster, else topology.max_cluster_size), else, for a chip known by its
 * GPCs alone (a simulated chip's truth), the largest GPC's cluster-eligible SMs
 * up to 16 (sm_90's non-portable limit, the most the probe tries); 0: unknown. */
int gos_chip_max_cluster(const gos_chip *c);

/* The built-in chip shaped like a typical H200 (paper 001 figure 3; default_chip.c). */
const char *gos_chip_default_json(void);

/* Helpers over the topology. Fills gpc_of[sm] with the GPC index of each SM
 * (-1 for an SM in no GPC); returns nothing. */
void gos_chip_gpc_of(const gos_chip *c, int gpc_of[GOS_MAX_SMS]);
/* TPC partner of `sm` (-1 if lone or unknown). */
int gos_chip_tpc_partner(const gos_chip *c, int sm);
/* Whether two chips have the same topology (GPC sets, cluster sets, TPC pairs),
 * order-insensitive. On mismatch writes a description into why. */
int gos_chip_same_topology(const gos_chip *a, const gos_chip *b, char *why, int whylen);

/* The partition code of a physical address (simulated chips: in_page | phys). */
int gos_chip_hash_code(const gos_chip *c, uint64_t pa);
/* Sets the hash from k parities (also the /1 fields when k == 1). */
void gos_chip_set_parities(gos_chip *c, const gos_parity *p, int k, int physical);
/* The tier of SMs of partition a on memory of b: from pair_tier, else by the
 * relation (dies), else -1. */
int gos_chip_tier_of(const gos_chip *c, int a, int b);

#endif
