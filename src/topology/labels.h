/* SPDX-License-Identifier: Apache-2.0 */
/* labels.h: a chart's scheduling facts as node-feature-discovery labels.
 *
 * NFD's "local" source reads feature files (features.d/NAME) of `key=value` lines
 * and turns each into a node label. The labels let a scheduler keep jobs that
 * need many large thread-block clusters off ragged chips:
 *
 *   gpuos.io/gpc-config=1x12_3x16_4x18   GPC sizes (SMs), smallest first
 *   gpuos.io/clusters-8=15               clusters of 8 that fit at once (also -2, -4, -16)
 *   gpuos.io/max-cluster-size=16         largest cluster the chip launches
 *   gpuos.io/free-floating-sms=8         SMs never in clusters larger than 2
 *   gpuos.io/partition-sms=66_66         SMs per memory partition
 *   gpuos.io/hash-granularity=4096       bytes the address hash keeps together
 *
 * With several GPUs every label is also written per GPU index (gpuos.io/gpu-1.clusters-8)
 * and the unindexed numeric labels hold the worst GPU (the minimum of clusters and
 * cluster sizes, the maximum of free-floating SMs), so "clusters-16 >= 7" holds on
 * every GPU of the node. Only facts the chart knows are written; a simulated
 * chart says so (gpuos.io/simulated=true). A node whose GPUs a gpuos daemon
 * shares says that too (gpuos.io/shared=true, gpuos.io/vgpus=N: its vGPUs). What NVIDIA's GPU feature discovery
 * publishes (nvidia.com/gpu.product, gpu.count, memory, compute capability) is
 * not repeated here. */
#ifndef GOS_TOPOLOGY_LABELS_H
#define GOS_TOPOLOGY_LABELS_H

#include "chip/chip.h"

#include <stdio.h>

#define GOS_NFD_PREFIX "gpuos.io/"

/* Clusters of k blocks (one per SM) that fit at once: larger than 2 only on
 * cluster-eligible SMs, never across GPCs; 0 when k exceeds the chip's largest
 * cluster (when known). */
int gos_labels_concurrent_clusters(const gos_chip *c, int k);

/* Writes the labels of charts[0..n) to f, with NFD's "# +expiry-time=" line
 * expiry_s seconds from now (none when expiry_s <= 0); vgpus >= 0: a gpuos daemon
 * shares the node's GPUs with that many vGPUs (-1: none answered). GOS_EINVAL
 * when n < 1 or a chart knows no topology. */
int gos_labels_write(const gos_chip *const *charts, int n, long expiry_s, int vgpus, FILE *f);

/* Same into `path` atomically (temporary file .NAME.tmp.PID beside it, a dot-file
 * NFD's watcher ignores, then rename: NFD never reads half a file). */
int gos_labels_save(const gos_chip *const *charts, int n, long expiry_s, int vgpus, const char *path);

/* The default lifetime of a feature file: NFD removes its labels a day after it
 * was written unless it is written again (gpuos probe --nfd from a timer). */
#define GOS_NFD_EXPIRY_S (24L * 3600)

#endif
