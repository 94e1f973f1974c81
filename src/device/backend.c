/* backend.c: choosing a backend, closing the pillars, labels (device.h). The
 * pillars' checked wrappers are in topo.c, mem.c, dvfs.c, exec.c. */
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
    close_pillar(d, d->ops->vmm);
    close_pillar(d, d->ops->place);
    close_pillar(d, d->ops->exec);
    close_pillar(d, d->ops->dvfs);
    close_pillar(d, d->ops->mem);
    close_pillar(d, d->ops->topo);
}

const char *gos_dev_label(const gos_device *d) { return d->info.simulated ? "simulated " : ""; }

int gos_dev_missing(const gos_device *d, const char *what)
{
    return gos_fail(GOS_EUNSUPPORTED, "the %s device does not support %s", d->ops->name, what);
}
