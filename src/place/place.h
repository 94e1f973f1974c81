/* SPDX-License-Identifier: Apache-2.0 */
/* place.h: pillar 2 inside gpuos (the public side is include/gpuos/pmem.h).
 * Runs in the executor (exec_pmem.c; the daemon too under isolation = none)
 * and programs linking libgpuos-pmem.a (include/gpuos/pmem.h,
 * bench/placement_bench.c); smset.h (cli, daemon) says its own.
 *
 *   pmem.c   partition-local allocation on a gos_device: chart checks, the 2 MB
 *            parity map (numa_map.c's probes), the views, scattered copies,
 *            runtime tables
 *   check.c  independent placement check: classify every unit by latency and
 *            count each view's units found in the view's partition */
#ifndef GOS_PLACE_H
#define GOS_PLACE_H

#include "chip/chip.h"
#include "device/device.h"
#include "device/mem_ops.h"
#include "gpuos/pmem.h"
#include "numa/numa.h"

/* Loads the chart at `path` (NULL: $GPUOS_CHIP) and checks it can place memory:
 * two partitions, in-page hash bits, a latency threshold. */
int gos_pmem_chart_load(const char *path, gos_chip **out);

/* gos_pmem_open on a device the caller owns (the chart is copied from). */
int gos_pmem_create(gos_device *d, const gos_chip *chart, uint64_t bytes_per_view, gos_pmem **out);

gos_device *gos_pmem_device(const gos_pmem *pm);
const gos_numa_model *gos_pmem_model(const gos_pmem *pm);
const gos_mem_buf *gos_pmem_buffer(const gos_pmem *pm);
/* Seconds spent allocating and probing parities at creation. */
void gos_pmem_times(const gos_pmem *pm, double *alloc_s, double *parity_s);

/* A "remap but place nothing" pair of views over the same memory: the parity
 * table of every odd 2 MB page inverted, so each view is half local, half
 * remote at 2 MB granularity while doing the same remap work. */
int gos_pmem_scrambled_views(gos_pmem *pm, gos_pmem_view out[2]);

typedef struct {
    uint64_t units[2];      /* logical units of each view */
    uint64_t in_target[2];  /* found in the view's partition (after re-probing) */
    uint64_t first_pass[2]; /* found there by the sweep alone */
    uint64_t reprobed[2], unclassified[2];
    double frac[2];         /* in_target / units */
    uint64_t unit_bytes;
    double t_sweep_s, t_reprobe_s;
} gos_pmem_check_result;

/* Classifies every unit of the allocation by latency (a sweep: min of
 * `samples` probes per unit, each judged against its SM's own tiers), then
 * looks up, for every logical unit of each view, where its remapped address was
 * found; units found elsewhere or unclassified are probed 7 more times from an
 * SM of the view's partition (median) before they count as misplaced. */
int gos_pmem_check(gos_pmem *pm, int samples, gos_pmem_check_result *r);

/* Where the device itself knows where memory lives (a simulated chip; a GPU
 * answers GOS_EUNSUPPORTED): units[p] logical units of view p, in_target[p] of
 * them in partition p by that truth (chart numbering). */
int gos_pmem_truth(gos_pmem *pm, uint64_t units[2], uint64_t in_target[2]);
/* The same for the view of partition p of any of the chart's N partitions. */
int gos_pmem_truth_part(gos_pmem *pm, int p, uint64_t *units, uint64_t *in_target);

#endif
