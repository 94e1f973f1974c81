/* SPDX-License-Identifier: Apache-2.0 */
/* topo_ops.c: the checked wrappers of device/topo_ops.h (pillar 1a). */
#include "device/topo_ops.h"

#include "common/status.h"

#define TOPO(d) ((d)->ops->topo)

int gos_topo_cluster_probe(gos_device *d, int cluster_size, int *sms_out, int max_blocks, int *n_blocks)
{
    if (!TOPO(d) || !TOPO(d)->cluster_probe)
        return gos_dev_missing(d, "cluster probing");
    if (cluster_size < 1 || cluster_size > GOS_TOPO_MAX_CLUSTER)
        return gos_fail(GOS_EINVAL, "cluster size %d outside 1..%d", cluster_size, GOS_TOPO_MAX_CLUSTER);
    return TOPO(d)->cluster_probe(d, cluster_size, sms_out, max_blocks, n_blocks);
}

int gos_topo_l2_bandwidth(gos_device *d, const int *sms, int n, double *gbps)
{
    if (!TOPO(d) || !TOPO(d)->l2_bandwidth)
        return gos_dev_missing(d, "L2 bandwidth probing");
    if (n < 1)
        return gos_fail(GOS_EINVAL, "L2 bandwidth needs at least one SM");
    for (int i = 0; i < n; i++)
        if (sms[i] < 0 || sms[i] >= d->info.sm_count)
            return gos_fail(GOS_EINVAL, "SM %d out of range 0..%d", sms[i], d->info.sm_count - 1);
    return TOPO(d)->l2_bandwidth(d, sms, n, gbps);
}
