/* SPDX-License-Identifier: Apache-2.0 */
/* topo_ops.h: the pillar-1a primitives of the device layer (SM-to-GPC topology,
 * paper 001 section 5.1), one struct of function pointers per backend:
 * gos_cuda_topo_ops (cuda_topo.c: kernels/topology.cu) and gos_sim_topo_ops
 * (sim_topo.c: the chip's known topology and its sim.l2_* bandwidth model).
 *
 * Callers above the device layer use the gos_topo_* wrappers (topo_ops.c), which turn
 * a missing backend operation into GOS_EUNSUPPORTED and check the arguments. */
#ifndef GOS_TOPO_OPS_H
#define GOS_TOPO_OPS_H

#include "device/device.h"

struct gos_topo_ops {
    gos_pillar_close_fn close; /* releases d->topo_priv */

    /* One launch with thread-block clusters of `cluster_size` blocks, one block
     * per SM; block i ran on SM sms_out[i] and belongs to cluster i / cluster_size.
     * *n_blocks receives the block count (a multiple of cluster_size, at most
     * max_blocks). */
    int (*cluster_probe)(gos_device *d, int cluster_size, int *sms_out, int max_blocks,
                         int *n_blocks);

    /* Summed L2-hit read bandwidth (GB/s) of the SMs in sms[0..n) reading
     * concurrently (a working set larger than L1, smaller than L2). */
    int (*l2_bandwidth)(gos_device *d, const int *sms, int n, double *gbps);
};

/* The largest thread-block cluster a launch may have (non-portable sizes
 * allowed): what cluster probing accepts. */
#define GOS_TOPO_MAX_CLUSTER 16

/* Wrappers: cluster_size in 1..GOS_TOPO_MAX_CLUSTER; SMs in range. */
int gos_topo_cluster_probe(gos_device *d, int cluster_size, int *sms_out, int max_blocks,
                           int *n_blocks);
int gos_topo_l2_bandwidth(gos_device *d, const int *sms, int n, double *gbps);

#endif
