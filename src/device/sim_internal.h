/* sim_internal.h: what the simulated backend's files share (never included above
 * the device layer). The simulated chip's truth is d->chip; every primitive draws
 * its noise from a stream of its own, seeded from sim.seed and a per-primitive
 * constant, so adding a pillar never changes another pillar's numbers. */
#ifndef GOS_SIM_INTERNAL_H
#define GOS_SIM_INTERNAL_H

#include "chip/chip.h"
#include "common/rng.h"
#include "device/device.h"

/* Seeds r from the chip's sim.seed and `stream` (a constant per primitive). */
void gos_sim_rng(const gos_device *d, gos_rng *r, uint64_t stream);

/* Multiplicative noise 1 + jitter * N(0,1), clamped to stay positive. */
double gos_sim_noise(const gos_device *d, gos_rng *r);

/* Reads and checks the chip's sim.cluster2 / sim.l2_gbps_per_* parameters and
 * sets up the topology primitives' state (d->topo_priv); called by gos_sim_open
 * so that a bad chip file fails at open. */
int gos_sim_topo_open(gos_device *d, const char *chip_path);

#endif
