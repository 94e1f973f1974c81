/* SPDX-License-Identifier: Apache-2.0 */
/* chart.h: charting a chip, section by section (pillars 1a and 1b), below the CLI.
 *
 * gos_chart_probe() runs the sections asked for in order (topology, numa,
 * memory; "all" = every one), each filling its part of one gos_chip (and, for
 * figures beyond the gpuos.chip/1 core fields, extra members of chip->json,
 * e.g. "memory": {...}), then cross-checks topology against the partitions.
 * gos_chart_provenance() is the "probe" record of a saved chart. Each section
 * prints its human-readable output to ctx->out unless it is NULL.
 *
 *   chart.c             the section table, the run, the cross-check, provenance
 *   section_topology.c  pillar 1a: GPCs, TPCs, free-floating SMs (src/topology)
 *   section_numa.c      pillar 1b: partitions, hash, latency tiers (src/numa)
 *   section_memory.c    pillar 1b: L2/HBM costs (src/numa/figures.h) */
#ifndef GOS_CHART_H
#define GOS_CHART_H

#include "chip/chip.h"
#include "device/device.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* gos_chart_ctx.verify_bytes for `--verify all` (the same as GOS_MEM_ALL). */
#define GOS_CHART_VERIFY_ALL UINT64_MAX

typedef struct {
    gos_device *dev;
    gos_chip *chip;     /* the chart being built (device section already filled) */
    FILE *out;          /* human output (stdout), NULL when quiet */
    unsigned long long verify_bytes; /* numa: --verify SIZE (GOS_CHART_VERIFY_ALL: all), 0: off */
    int repeats;        /* --repeat N (default 1): sections may use it for spread */
} gos_chart_ctx;

/* The sections, in the order `all` runs them. */
int gos_chart_topology(gos_chart_ctx *ctx); /* section_topology.c */
int gos_chart_numa(gos_chart_ctx *ctx);     /* section_numa.c */
int gos_chart_memory(gos_chart_ctx *ctx);   /* section_memory.c */

/* 1 when name is a section or "all". */
int gos_chart_is_section(const char *name);

/* Runs section `name` (or "all") on ctx->dev into ctx->chip (device section
 * filled here, chip->json created). In "all", a section whose measurements give
 * no answer (GOS_EAMBIGUOUS, say one latency tier: no NUMA split to find) does
 * not discard the rest of the chart: the reason is printed on stderr and
 * recorded, and the sections that need it are skipped. Any other failure stops. */
int gos_chart_probe(gos_chart_ctx *ctx, const char *name);

/* When both are known, do the GPC groups that share bandwidth above the GPC
 * (topology) coincide with the memory partitions (numa)? Records the answer in
 * topology.crossbar_groups_are_partitions and prints it to out (may be NULL). */
void gos_chart_crosscheck(gos_chip *c, FILE *out);

/* The chart's "probe" record: the common provenance (src/common/provenance.h)
 * plus the backend and the seconds the chart took. */
json_t *gos_chart_provenance(const gos_device *d, int argc, char **argv, double seconds);

#endif
