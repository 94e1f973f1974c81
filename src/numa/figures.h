/* SPDX-License-Identifier: Apache-2.0 */
/* figures.h: pillar 1b costs (paper 001 section 6.2, appendix C.2): local and
 * remote L2-hit latency, local and remote HBM bandwidth (reading only local or
 * only remote 4 KB pages), effective L2 capacity (bandwidth against working-set
 * size, the knee), and the cross-partition replication test (section 6.2.2).
 *
 *   knee.c     the effective capacity from a bandwidth curve (pure)
 *   figures.c  the measurements on a device, given a NUMA model */
#ifndef GOS_NUMA_FIGURES_H
#define GOS_NUMA_FIGURES_H

#include "numa/numa.h"

#include <jansson.h>

/* Working-set size at which the curve ws[0..n) (increasing) / gbps[0..n) leaves
 * its L2 plateau (median of the points up to the first quarter of the range)
 * for good: the last downward crossing of the level 15 % of the way down to the
 * HBM floor (median of the points in the last quarter), interpolated linearly. GOS_EAMBIGUOUS when the plateau is not
 * clearly above the floor (under 1.3x) or the curve never crosses. */
int gos_l2_knee(const double *ws, const double *gbps, int n, double *knee, double *plateau,
                double *floor_gbps);

/* Bandwidth against working-set size. */
typedef struct {
    int n;
    double ws[64], gbps[64];
    int has_knee;
    double eff_bytes, plateau, floor_gbps;
} gos_l2_curve;

typedef struct {
    double l2_local, l2_remote;         /* cycles, medians */
    uint32_t *l2_samples[2];            /* owned: local, remote */
    int n_l2;
    double reload, hbm_remote_ref;      /* replication: reload cycles, remote HBM */
    int replicated;                     /* reload looks like a local L2 hit */
    int has_bw;                         /* 0 when granularity < 4 KB */
    double bw_local[2], bw_remote[2];   /* GB/s: SMs of partition p on local/remote pages */
    double bw_all;                      /* every SM on every page */
    uint64_t bw_ws_bytes;
    gos_l2_curve curve[3];              /* [0] private: each page one reader;
                                           [1] shared: every SM reads every page;
                                           [2] one partition: only partition 0's SMs
                                               read (each page one reader), so half the
                                               lines are remote to every reader and may
                                               be replicated in the near L2 half */
    double t_total_s;
} gos_memory_figures;

/* Measures every figure with the partitions and hash of m. */
int gos_memory_measure(gos_device *d, const gos_numa_model *m, gos_memory_figures *f);
void gos_memory_figures_free(gos_memory_figures *f);
json_t *gos_memory_json(const gos_memory_figures *f, uint64_t l2_bytes);

#endif
