/* probe.h: the sections of `gpuos probe [topology|numa|memory|all]`.
 *
 * cmd_probe.c parses the common options (--device, --sim, --json, --verify),
 * opens the device, and runs the sections asked for in order, each filling its
 * part of one gos_chip (and, for figures beyond the gpuos.chip/1 core fields,
 * extra members of chip->json, e.g. "memory": {...}). Each section prints its
 * human-readable output to ctx->out unless ctx->quiet. Weak in cmd_probe.c: a
 * section whose file is missing answers "not built". */
#ifndef GOS_PROBE_H
#define GOS_PROBE_H

#include "chip/chip.h"
#include "device/device.h"

#include <stdio.h>

typedef struct {
    gos_device *dev;
    gos_chip *chip;     /* the chart being built (device section already filled) */
    FILE *out;          /* human output (stdout), NULL when quiet */
    const char *verify; /* numa: argument of --verify (SIZE or "all"), or NULL */
    int repeats;        /* --repeat N (default 1): sections may use it for spread */
} gos_probe_ctx;

int probe_topology(gos_probe_ctx *ctx); /* src/cli/probe_topology.c */
int probe_numa(gos_probe_ctx *ctx);     /* src/cli/probe_numa.c */
int probe_memory(gos_probe_ctx *ctx);   /* src/cli/probe_memory.c */

#endif
