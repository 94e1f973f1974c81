/* chip.h: the gpuos.chip/1 description of one GPU die (docs/contracts.md).
 *
 * One format is both what `gpuos probe` writes and what the simulated device
 * reads. gos_chip holds the fields every pillar shares in plain C; the parsed
 * JSON document is kept alongside (`json`) so that a pillar can read fields of
 * its own (for example sim.dvfs) without this file knowing them. */
#ifndef GOS_CHIP_H
#define GOS_CHIP_H

#include <jansson.h>
#include <stdint.h>

#define GOS_CHIP_SCHEMA "gpuos.chip/1"
#define GOS_MAX_SMS 256   /* SM ids are 0..GOS_MAX_SMS-1 */
#define GOS_MAX_GPCS 32
#define GOS_MAX_PARTS 8
#define GOS_MAX_HASH_BITS 48

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

    /* sim section (read only by the simulated device); has_sim = 0 when absent */
    int has_sim;
    uint64_t sim_seed;
    double sim_jitter;
    double sim_l2_gbps_per_sm, sim_l2_gbps_per_gpc;

    json_t *json; /* the whole document as read (owned), or NULL */
} gos_chip;

/* Reads and validates a gpuos.chip/1 file. On error returns a GOS_E* code with a
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

#endif
