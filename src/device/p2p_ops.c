/* SPDX-License-Identifier: Apache-2.0 */
/* p2p_ops.c: checked wrappers of the GPU-to-GPU link operations (p2p_ops.h). */
#include "device/p2p_ops.h"

#include "common/status.h"

static int check(gos_device *a, gos_device *b, int has_op, const char *what)
{
    if (!a || !b)
        return gos_fail(GOS_EINVAL, "p2p %s: a device is missing", what);
    if (a == b)
        return gos_fail(GOS_EINVAL, "p2p %s: source and destination are the same device", what);
    if (a->ops != b->ops)
        return gos_fail(GOS_EINVAL, "p2p %s: %s and %s are devices of different backends", what,
                        a->info.uuid, b->info.uuid);
    if (!a->ops->p2p || !has_op)
        return gos_fail(GOS_EUNSUPPORTED, "the %s backend cannot measure GPU-to-GPU %s", a->ops->name, what);
    return GOS_OK;
}

int gos_p2p_access(gos_device *a, gos_device *b, int *can)
{
    int rc = check(a, b, a && a->ops->p2p && a->ops->p2p->access, "access");
    if (rc)
        return rc;
    if (!can)
        return gos_fail(GOS_EINVAL, "p2p access: no output");
    return a->ops->p2p->access(a, b, can);
}

int gos_p2p_bandwidth(gos_device *a, gos_device *b, size_t bytes, int trials, double *gbps)
{
    int rc = check(a, b, a && a->ops->p2p && a->ops->p2p->bandwidth, "bandwidth");
    if (rc)
        return rc;
    if (!gbps || bytes < 4096 || trials < 1 || trials > 1000)
        return gos_fail(GOS_EINVAL, "p2p bandwidth: needs at least 4 KB and 1..1000 trials");
    return a->ops->p2p->bandwidth(a, b, bytes, trials, gbps);
}

int gos_p2p_latency(gos_device *a, gos_device *b, int trials, double *us)
{
    int rc = check(a, b, a && a->ops->p2p && a->ops->p2p->latency, "latency");
    if (rc)
        return rc;
    if (!us || trials < 1 || trials > 1000)
        return gos_fail(GOS_EINVAL, "p2p latency: needs 1..1000 trials");
    return a->ops->p2p->latency(a, b, trials, us);
}
