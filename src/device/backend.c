/* SPDX-License-Identifier: Apache-2.0 */
/* backend.c: choosing a backend (cuda/, sim/), closing a device, labels
 * (device.h). The pillars' close hooks and gos_dev_missing are in pillars.c,
 * their checked wrappers in topo_ops.c, mem_ops.c, ... (P_ops.h + P_ops.c) */
#include "device/device.h"

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

const char *gos_dev_label(const gos_device *d) { return d->info.simulated ? "simulated " : ""; }
