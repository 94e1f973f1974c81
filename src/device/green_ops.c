/* SPDX-License-Identifier: Apache-2.0 */
/* green_ops.c: checked wrappers of the green-context primitives (green_ops.h). */
#include "device/green_ops.h"

#include "common/status.h"
#include "device/exec_ops.h"

#define MISSING(d, op) gos_dev_missing(d, "green contexts (" op ")")

static const struct gos_green_ops *ops(gos_device *d)
{
    return d && d->ops ? d->ops->green : NULL;
}

int gos_green_split(gos_device *d, int min_count, const struct gos_green_split **split)
{
    const struct gos_green_ops *g = ops(d);
    if (!g || !g->split)
        return MISSING(d, "split");
    if (min_count < 0 || min_count > d->info.sm_count)
        return gos_fail(GOS_EINVAL, "green-context group size %d outside 0..%d", min_count, d->info.sm_count);
    return g->split(d, min_count, split);
}

int gos_green_create(gos_device *d, int min_count, const int *groups, int n, void **gctx)
{
    const struct gos_green_ops *g = ops(d);
    if (!g || !g->create)
        return MISSING(d, "create");
    if (n < 1 || n > GOS_GREEN_MAX_GROUPS)
        return gos_fail(GOS_EINVAL, "a green context needs 1..%d groups, not %d", GOS_GREEN_MAX_GROUPS, n);
    const struct gos_green_split *s;
    int rc = gos_green_split(d, min_count, &s);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++) {
        if (groups[i] < 0 || groups[i] >= s->n_groups)
            return gos_fail(GOS_EINVAL, "green-context group %d outside 0..%d", groups[i], s->n_groups - 1);
        for (int j = 0; j < i; j++)
            if (groups[j] == groups[i])
                return gos_fail(GOS_EINVAL, "green-context group %d named twice", groups[i]);
    }
    return g->create(d, min_count, groups, n, gctx);
}

int gos_green_destroy(gos_device *d, void *gctx)
{
    const struct gos_green_ops *g = ops(d);
    if (!g || !g->destroy)
        return MISSING(d, "destroy");
    if (!gctx)
        return gos_fail(GOS_EINVAL, "no green context to destroy");
    return g->destroy(d, gctx);
}

int gos_green_stream_create(gos_device *d, void *gctx, void **stream)
{
    const struct gos_green_ops *g = ops(d);
    if (!g || !g->stream_create)
        return MISSING(d, "streams");
    if (!gctx)
        return gos_fail(GOS_EINVAL, "a green-context stream needs a green context");
    return g->stream_create(d, gctx, stream);
}

int gos_green_stream_destroy(gos_device *d, void *stream)
{
    return gos_exec_stream_destroy(d, stream);
}

int gos_green_probe(gos_device *d, void *stream, int cluster, int blocks, unsigned timeout_us,
                    int *sms_out, int *coresident_out)
{
    const struct gos_green_ops *g = ops(d);
    if (!g || !g->probe)
        return MISSING(d, "probe");
    if (cluster < 1 || cluster > 16)
        return gos_fail(GOS_EINVAL, "cluster size %d outside 1..16", cluster);
    if (blocks < cluster || blocks % cluster || blocks > 8 * GOS_MAX_SMS)
        return gos_fail(GOS_EINVAL, "probe of %d blocks: not a positive multiple of the cluster "
                                    "size %d up to %d", blocks, cluster, 8 * GOS_MAX_SMS);
    if (!stream)
        return gos_fail(GOS_EINVAL, "the green-context probe needs a stream");
    return g->probe(d, stream, cluster, blocks, timeout_us, sms_out, coresident_out);
}
