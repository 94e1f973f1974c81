/* SPDX-License-Identifier: Apache-2.0 */
/* gpc_clusters.h: how many thread-block clusters a GPU runs at once, from its
 * GPCs' sizes. A cluster's blocks run in one GPC, each on an SM of its own, so
 * a GPC of g SMs with room for k blocks per SM holds floor(k g / cs) clusters
 * of cs blocks when cs <= g and none when cs > g: what driver 580 answers to
 * cuOccupancyMaxActiveClusters on an H200 (tests/test_gpc_clusters.c checks
 * the model against its answers). At one block per SM this is the table the
 * device layer measures (GOS_ATTR_CLUSTERS of device/info.h):
 *   t(cs) = sum over GPCs of floor(g / cs),  cs = 1..max
 * from which the GPCs' sizes follow, largest first: t(cs) counts each GPC of
 * exactly cs SMs once and every larger one floor(g / cs) times. Used by gpuos's
 * libcuda in the CUDA program's process (src/cudashim/launch.c); no CUDA here. */
#ifndef GOS_GPC_CLUSTERS_H
#define GOS_GPC_CLUSTERS_H

#include <stdint.h>

/* t[cs - 1] = t(cs) for cs = 1..max; h[g] (g = 1..max, h has max + 1 entries)
 * receives how many GPCs have exactly g SMs. Returns 1, or 0 when no set of
 * GPCs of at most max SMs gives the table (h is then unspecified). */
int gos_gpc_sizes(const int32_t *t, int max, int *h);

/* How many clusters of cs blocks run at once with per_sm blocks per SM, on
 * the GPCs h[1..max] (0 for cs or per_sm below 1). */
long gos_gpc_clusters(const int *h, int max, int cs, int per_sm);

#endif
