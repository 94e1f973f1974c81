/* SPDX-License-Identifier: Apache-2.0 */
/* topology.h: pillar 1a, the SM-to-GPC chart of one die (paper 001, section 5.1).
 *
 * Phase 1 (cluster probing): launches with clusters of 2..16 blocks, one block per
 * SM. SMs seen together in a cluster of >= 3 share a GPC (union-find); SMs never
 * seen in such clusters are free-floating. Clusters of 2 reveal TPC pairs.
 * Phase 1b (check): two phase-1 groups whose summed L2 bandwidth saturates like
 * one GPC are the same GPC (guards against a GPC split by sparse sampling).
 * Phase 2 (L2-bandwidth contention): each free-floating TPC is co-run with each
 * GPC's SMs; in its own GPC it adds far less than a lone TPC's bandwidth. Where
 * clusters of 2 paired a free SM with cluster-eligible SMs, that is independent
 * evidence of its GPC (a cluster never spans GPCs); both must agree.
 * Sharing above the GPC: saturated GPCs read in pairs show which GPCs share a
 * path beyond their own port (on the H200, the GPCs of one L2 partition).
 * Phase 3 (only where clusters of 2 are not bound to TPCs): TPC pairs by L2
 * contention between pairs of SMs of one GPC, claimed only if every SM has a
 * clear mutual partner.
 * Every decision keeps its measured margin; a placement without a clear winner is
 * reported as ambiguous, never guessed silently. */
#ifndef GOS_TOPOLOGY_H
#define GOS_TOPOLOGY_H

#include "chip/chip.h"
#include "device/device.h"

typedef struct {
    int launches;      /* per cluster size (default 20) */
    int min_cluster;   /* 2 */
    int max_cluster;   /* 16 */
    int repeats;       /* bandwidth measurements per comparison (default 7) */
    double threshold;  /* gain below threshold x lone-TPC bandwidth = same GPC (0.9) */
    int check_merge;   /* phase 1b on (default 1) */
    int tpc_by_contention; /* phase 3 on (default 1): TPCs by pair contention */
    int crossbar_groups;   /* GPC pairs read together: sharing above the GPC (1) */
} gos_topo_opts;

typedef struct {
    int sms[2], n_sms;   /* the free-floating unit (a TPC, or one SM) */
    int gpc;             /* chosen GPC index in the result, -1 if none */
    double gain[GOS_MAX_GPCS]; /* bandwidth gained / lone unit's bandwidth, per GPC */
    double lone_gbps;
    double margin;       /* second-lowest gain - lowest gain */
    double noise;        /* robust standard error of the margin */
    int ambiguous;
    const char *why;     /* when ambiguous: the reason */
    int vote_gpc;        /* GPC of the cluster-eligible SMs it shared clusters of 2 with */
    int votes;           /* such shared clusters */
    double vote_share;   /* fraction of them in vote_gpc */
    const char *how;     /* the evidence that placed it: "clusters-of-2+l2-contention",
                            "l2-contention", "clusters-of-2", "conflict", "none" */
} gos_topo_placement;

typedef struct {
    gos_chip *chip;            /* device + topology filled; caller frees */
    int n_free;                /* free-floating SMs */
    int free_sms[GOS_MAX_SMS];
    int n_place;
    gos_topo_placement place[GOS_MAX_SMS];
    int n_merged;              /* phase-1 groups merged by phase 1b */
    int tpcs_known;            /* TPC pairs known: 1 from clusters of 2, 2 from
                                  pair contention, 0 not observable */
    /* Sharing above the GPC: pair_ratio[a][b] = bw(GPCs a+b) / (bw(a) + bw(b));
     * GPCs behind one common path (on the H200: one L2 partition) form groups.
     * n_xbar_groups = 0: none visible (or no clear split, xbar_gap small). */
    double pair_ratio[GOS_MAX_GPCS][GOS_MAX_GPCS];
    int n_xbar_groups;
    int xbar_size[GOS_MAX_GPCS];
    int xbar_group[GOS_MAX_GPCS][GOS_MAX_GPCS];
    double xbar_gap;
    double tpc_contention_ratio; /* phase 3: worst (largest) ratio of an SM's
                                  lowest pair bandwidth to its median pair */
    double pair_top_share;     /* median over SMs of the share of its clusters of 2
                                  spent with its most frequent partner (1.0: TPC-bound) */
    int ambiguous;             /* any ambiguity */
    char ambiguity[512];       /* first reasons, human readable */
    int cluster_launches, bw_measurements;
    int max_cluster_chip;      /* largest cluster size the device accepted */
    double seconds;
    double gpc_gbps[GOS_MAX_GPCS]; /* saturated bandwidth of each GPC's cluster SMs */
    double lone_tpc_gbps;      /* median lone-unit bandwidth */
} gos_topo_result;

void gos_topo_default_opts(gos_topo_opts *o);

/* The chip's device section from d's facts (the one place they are copied:
 * gos_topo_probe's chip and the chart of src/chart both use it). */
void gos_topo_fill_device(gos_chip *c, const gos_device *d);

/* Runs both phases on d. The result's chip has the device section (from d->info)
 * and the topology section; extra figures are added to chip->json "topology". */
int gos_topo_probe(gos_device *d, const gos_topo_opts *o, gos_topo_result *r);
void gos_topo_result_free(gos_topo_result *r);

/* "6x16 + 2x18": GPC sizes grouped, ascending. */
void gos_topo_summary(const gos_chip *c, char *buf, int len);

/* What paper 001 knows of the GPC configurations of `product` (the device
 * name, "NVIDIA H200") given the chip's summary: a note, or NULL where the
 * paper says nothing of that product (an H100 SXM, a B200, an unknown name).
 * Its census is of 28 H200s (section 5.2.1); of the H100 PCIe it charted one
 * chip (appendix A). *exact (may be NULL) is 1 when the note names this very
 * configuration, 0 when it is about the product only. */
const char *gos_topo_paper_match(const char *product, const char *summary, int *exact);

/* Prints the ASCII floor plan (paper 001 figure 3 layout: GPCs as rows, TPCs as
 * cells, free-floating TPCs marked with *, partitions if known). */
void gos_topo_print_floorplan(FILE *f, const gos_chip *c, const int *free_sms, int n_free);

#endif
