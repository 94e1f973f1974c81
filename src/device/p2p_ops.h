/* SPDX-License-Identifier: Apache-2.0 */
/* p2p_ops.h: GPU-to-GPU links of one node (issue 14 item 5), one struct of function
 * pointers per backend (gos_cuda_p2p_ops in cuda_p2p.c, gos_sim_p2p_ops in
 * sim_p2p.c), reached through gos_device_ops.p2p. Every operation takes two
 * devices of the same backend, a (the source) and b (the destination).
 *
 * Callers above the device layer use the gos_p2p_* wrappers (p2p_ops.c), which answer
 * GOS_EUNSUPPORTED when the backend lacks an operation and GOS_EINVAL for bad
 * arguments (the same device twice, devices of different backends). */
#ifndef GOS_P2P_OPS_H
#define GOS_P2P_OPS_H

#include "device/device.h"

#include <stddef.h>

struct gos_p2p_ops {
    gos_pillar_close_fn close;
    /* Whether a's kernels can access b's memory directly (peer access). */
    int (*access)(gos_device *a, gos_device *b, int *can);
    /* Copy bandwidth from a's memory into b's (GB/s = 1e9 B/s): the median of
     * `trials` timed copies of `bytes`, peer access enabled when possible. */
    int (*bandwidth)(gos_device *a, gos_device *b, size_t bytes, int trials, double *gbps);
    /* Latency of a 4-byte copy from a's memory into b's (microseconds), the median
     * of `trials` batches of back-to-back copies on one stream. */
    int (*latency)(gos_device *a, gos_device *b, int trials, double *us);
};

extern const struct gos_p2p_ops gos_cuda_p2p_ops;
extern const struct gos_p2p_ops gos_sim_p2p_ops;

int gos_p2p_access(gos_device *a, gos_device *b, int *can);
int gos_p2p_bandwidth(gos_device *a, gos_device *b, size_t bytes, int trials, double *gbps);
int gos_p2p_latency(gos_device *a, gos_device *b, int trials, double *us);

/* Opens simulated GPU `index` of a node whose GPUs are all simulated (`--sim
 * A,B`): the chip's device, told apart from its siblings by its ordinal, a UUID
 * ending in "-<index>" and the PCI bus id "sim:<index>". */
int gos_sim_open_indexed(const char *chip, int index, gos_device **out);

#endif
