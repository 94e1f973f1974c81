/* device.c: choosing a backend and the checked wrappers of device.h. */
#include "device/device.h"

#include "common/status.h"

#include <stdlib.h>

int gos_device_open(const gos_device_spec *spec, gos_device **out)
{
    if (spec->sim)
        return gos_sim_open(spec->sim, out);
    return gos_cuda_open(spec->ordinal < 0 ? 0 : spec->ordinal, out);
}

void gos_device_close(gos_device *d)
{
    if (d && d->ops && d->ops->close)
        d->ops->close(d);
}

static void close_pillar(gos_device *d, const void *ops)
{
    if (ops) {
        gos_pillar_close_fn f = *(const gos_pillar_close_fn *)ops;
        if (f)
            f(d);
    }
}

void gos_device_close_pillars(gos_device *d)
{
    close_pillar(d, d->ops->green);
    close_pillar(d, d->ops->exec);
    close_pillar(d, d->ops->dvfs);
    close_pillar(d, d->ops->mem);
}

const char *gos_dev_label(const gos_device *d) { return d->info.simulated ? "simulated " : ""; }

#define MISSING(d, op)                                                                           \
    gos_fail(GOS_EUNSUPPORTED, "the %s device does not support %s", (d)->ops->name, op)

int gos_dev_cluster_probe(gos_device *d, int cluster_size, int *sms_out, int max_blocks, int *n_blocks)
{
    if (!d->ops->cluster_probe)
        return MISSING(d, "cluster probing");
    if (cluster_size < 1 || cluster_size > 16)
        return gos_fail(GOS_EINVAL, "cluster size %d outside 1..16", cluster_size);
    return d->ops->cluster_probe(d, cluster_size, sms_out, max_blocks, n_blocks);
}

int gos_dev_l2_bandwidth(gos_device *d, const int *sms, int n, double *gbps)
{
    if (!d->ops->l2_bandwidth)
        return MISSING(d, "L2 bandwidth probing");
    if (n < 1)
        return gos_fail(GOS_EINVAL, "L2 bandwidth needs at least one SM");
    for (int i = 0; i < n; i++)
        if (sms[i] < 0 || sms[i] >= d->info.sm_count)
            return gos_fail(GOS_EINVAL, "SM %d out of range 0..%d", sms[i], d->info.sm_count - 1);
    return d->ops->l2_bandwidth(d, sms, n, gbps);
}
