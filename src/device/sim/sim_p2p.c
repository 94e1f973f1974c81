/* SPDX-License-Identifier: Apache-2.0 */
/* sim_p2p.c: GPU-to-GPU links between simulated GPUs (p2p_ops.h). The link is the
 * source chip's "sim": {"p2p": {...}} section, or an NVLink-like default:
 *
 *   "p2p": {"access": true, "gbps": 350, "latency_us": 3.0, "host_gbps": 25}
 *
 * With access false, copies are staged through the host at host_gbps. The values
 * are returned exactly (no noise), so tests can compare them with the chip file. */
#include "device/p2p_ops.h"

#include "chip/chip.h"
#include "common/status.h"

#include <stdio.h>
#include <string.h>

static json_t *p2p_section(gos_device *d)
{
    return json_object_get(json_object_get(d->chip ? d->chip->json : NULL, "sim"), "p2p");
}

static double number(gos_device *d, const char *key, double dflt)
{
    json_t *v = json_object_get(p2p_section(d), key);
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : dflt;
}

static int sim_access(gos_device *a, gos_device *b, int *can)
{
    json_t *v = json_object_get(p2p_section(a), "access");
    *can = v ? json_is_true(v) : 1;
    return GOS_OK;
}

static int sim_bandwidth(gos_device *a, gos_device *b, size_t bytes, int trials, double *gbps)
{
    int can;
    sim_access(a, b, &can);
    *gbps = can ? number(a, "gbps", 350) : number(a, "host_gbps", 25);
    return GOS_OK;
}

static int sim_latency(gos_device *a, gos_device *b, int trials, double *us)
{
    *us = number(a, "latency_us", 3.0);
    return GOS_OK;
}

const struct gos_p2p_ops gos_sim_p2p_ops = {
    .close = NULL,
    .access = sim_access,
    .bandwidth = sim_bandwidth,
    .latency = sim_latency,
};

int gos_sim_open_indexed(const char *chip, int index, gos_device **out)
{
    gos_device *d;
    int rc = gos_sim_open(chip, &d);
    if (rc)
        return rc;
    gos_device_info *I = &d->info;
    char uuid[sizeof I->uuid];
    snprintf(uuid, sizeof uuid, "%.80s-%d", I->uuid, index);
    memcpy(I->uuid, uuid, sizeof uuid);
    snprintf(I->pci_bus_id, sizeof I->pci_bus_id, "sim:%d", index);
    I->ordinal = index;
    *out = d;
    return GOS_OK;
}
