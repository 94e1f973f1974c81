/* SPDX-License-Identifier: Apache-2.0 */
/* sim_internal.h: what the simulated backend's files share (never included above
 * the device layer). The simulated chip's truth is d->chip; every primitive draws
 * its noise from a stream of its own, seeded from sim.seed and a per-primitive
 * constant, so adding a pillar never changes another pillar's numbers. */
#ifndef GOS_SIM_INTERNAL_H
#define GOS_SIM_INTERNAL_H

#include "chip/chip.h"
#include "common/rng.h"
#include "device/device.h"
#include "gpuos/gpuos.h" /* gpuos_tmap_args */

/* Seeds r from the chip's sim.seed and `stream` (a constant per primitive).
 * (Here, not in sim.c: the pillars draw noise, sim.c registers the pillars.) */
static inline void gos_sim_rng(const gos_device *d, gos_rng *r, uint64_t stream)
{
    gos_rng_seed(r, d->chip->sim_seed * 0x9e3779b97f4a7c15ULL + stream * 0xd1b54a32d192ed03ULL + 1);
}

/* Multiplicative noise 1 + jitter * N(0,1), clamped to stay positive. */
static inline double gos_sim_noise(const gos_device *d, gos_rng *r)
{
    double x = 1.0 + d->chip->sim_jitter * gos_rng_normal(r);
    return x < 0.05 ? 0.05 : x;
}

/* Reads and checks the chip's sim.cluster2 / sim.l2_gbps_per_* parameters and
 * sets up the topology primitives' state (d->topo_priv); called by gos_sim_open
 * so that a bad chip file fails at open. */
int gos_sim_topo_open(gos_device *d, const char *chip_path);

/* The simulated memory's truth, for the placement pillar (sim_mem.c): the home
 * partition of a device address (-1 outside every allocation), and the model's
 * costs. */
typedef struct {
    double hbm_local, hbm_remote;          /* cycles */
    double hbm_part_gbps, fabric_gbps, sm_hbm_gbps, l2_gbps;
    int n_parts;
    int part_of[GOS_MAX_SMS];
} gos_sim_mem_truth;
int gos_sim_mem_home(gos_device *d, uint64_t va);
int gos_sim_mem_truth_get(gos_device *d, gos_sim_mem_truth *t);

/* Whether [p, p + n) lies inside one mapping of the simulated VMM (sim_vmm.c),
 * so that copies and built-in kernels of the execution pillar reach it. */
int gos_sim_vmm_mapped(gos_device *d, uint64_t p, uint64_t n);
/* 1: mapped (and writable when write), 0: not mapped, -1: mapped read-only
 * and write asked (a read-only shared segment, vmm_ops.h set_access). */
int gos_sim_vmm_access(gos_device *d, uint64_t p, uint64_t n, int write);

/* Tensor maps of the simulated device (sim_tmap.c; exec_ops.h tmap_encode). */
int gos_sim_tmap_encode(gos_device *d, const gpuos_tmap_args *a, void *map);

#endif
