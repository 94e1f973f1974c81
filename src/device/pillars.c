/* SPDX-License-Identifier: Apache-2.0 */
/* pillars.c: what the pillars share below the backends (device.h): each
 * pillar's close hook, run by a backend's close, and the one "not supported"
 * message of the checked wrappers (topo_ops.c, mem_ops.c, ...). Apart from backend.c so
 * that the backends, which call these, and backend.c, which calls the
 * backends' constructors, make no circle. */
#include "device/device.h"

#include "common/status.h"

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
    close_pillar(d, d->ops->vmm);
    close_pillar(d, d->ops->place);
    close_pillar(d, d->ops->exec);
    close_pillar(d, d->ops->dvfs);
    close_pillar(d, d->ops->mem);
    close_pillar(d, d->ops->topo);
}

int gos_dev_missing(const gos_device *d, const char *what)
{
    return gos_fail(GOS_EUNSUPPORTED, "the %s device does not support %s", d->ops->name, what);
}
