/* SPDX-License-Identifier: Apache-2.0 */
/* sim.c: the simulated backend's core: a chip read from a gpuos.chip/1 file, its
 * facts (d->info) and the backend's ops table (the noise streams the pillars
 * share are sim_internal.h's). The pillars' primitives are in sim_topo.c, sim_mem.c,
 * sim_dvfs.c, sim_exec.c. */
#include "device/sim/sim_internal.h"
#include "device/dvfs_ops.h"
#include "device/exec_ops.h"
#include "device/mem_ops.h"
#include "device/topo_ops.h"

#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct gos_topo_ops gos_sim_topo_ops;
extern const struct gos_mem_ops gos_sim_mem_ops;
extern const struct gos_dvfs_ops gos_sim_dvfs_ops;
extern const struct gos_exec_ops gos_sim_exec_ops;
extern const struct gos_place_ops gos_sim_place_ops;
extern const struct gos_p2p_ops gos_sim_p2p_ops;
extern const struct gos_green_ops gos_sim_green_ops;
extern const struct gos_vmm_ops gos_sim_vmm_ops;

static void sim_close(gos_device *d)
{
    gos_device_close_pillars(d);
    gos_chip_free(d->chip);
    free(d);
}

static int sim_refresh(gos_device *d) { return GOS_OK; }

static const struct gos_device_ops sim_ops = {
    .name = "sim",
    .close = sim_close,
    .refresh = sim_refresh,
    .topo = &gos_sim_topo_ops,
    .mem = &gos_sim_mem_ops,
    .dvfs = &gos_sim_dvfs_ops,
    .exec = &gos_sim_exec_ops,
    .place = &gos_sim_place_ops,
    .p2p = &gos_sim_p2p_ops,
    .green = &gos_sim_green_ops,
    .vmm = &gos_sim_vmm_ops,
};

int gos_sim_open(const char *chip_path, gos_device **out)
{
    gos_chip *chip;
    int rc = gos_chip_load(chip_path, &chip);
    if (rc)
        return rc;
    if (!chip->n_gpcs) {
        gos_chip_free(chip);
        return gos_fail(GOS_EINVAL, "%s: a simulated chip needs a topology section", chip_path);
    }
    if (!chip->has_sim) { /* defaults, as parse_sim would give */
        chip->has_sim = 1;
        chip->sim_seed = 1;
        chip->sim_jitter = 0.03;
        chip->sim_l2_gbps_per_sm = 180;
        chip->sim_l2_gbps_per_gpc = 1300;
    }
    chip->device.simulated = 1;
    /* A chip file may leave memory sizes out (only sm_count is required): the
     * simulated device then has an H200's L2 and 16 GiB of memory. */
    if (!chip->device.mem_bytes)
        chip->device.mem_bytes = 16ull << 30;
    if (!chip->device.l2_bytes)
        chip->device.l2_bytes = 60ull << 20;
    gos_device *d = calloc(1, sizeof *d);
    if (!d) {
        gos_chip_free(chip);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    d->ops = &sim_ops;
    d->chip = chip;
    if ((rc = gos_sim_topo_open(d, chip_path))) {
        gos_chip_free(chip);
        free(d);
        return rc;
    }

    gos_device_info *I = &d->info;
    snprintf(I->backend, sizeof I->backend, "sim");
    I->ordinal = -1;
    I->simulated = 1;
    I->caps = GOS_CAP_VIRTUAL_TIME; /* clock changes are the model's, not the machine's */
    snprintf(I->name, sizeof I->name, "%s", chip->device.name[0] ? chip->device.name : "Simulated GPU");
    snprintf(I->uuid, sizeof I->uuid, "%s", chip->device.uuid[0] ? chip->device.uuid : "SIM-unnamed");
    snprintf(I->pci_bus_id, sizeof I->pci_bus_id, "sim");
    I->cc_major = chip->device.cc_major ? chip->device.cc_major : 9;
    I->cc_minor = chip->device.cc_minor;
    I->sm_count = chip->device.sm_count;
    I->l2_bytes = chip->device.l2_bytes;
    I->mem_bytes = chip->device.mem_bytes;
    I->max_smem_per_block_optin = 232448;
    I->max_threads_per_sm = 2048;
    snprintf(I->driver_version, sizeof I->driver_version, "simulated");
    I->has_clocks = chip->device.sm_clock_mhz > 0;
    I->sm_clock_mhz = I->max_sm_clock_mhz = chip->device.sm_clock_mhz;
    json_t *freqs = json_object_get(json_object_get(json_object_get(chip->json, "sim"), "dvfs"), "freqs_mhz");
    for (size_t i = 0; i < json_array_size(freqs) && i < GOS_MAX_CLOCKS; i++)
        if (json_is_integer(json_array_get(freqs, i)))
            I->supported_sm_clocks_mhz[I->n_supported_sm_clocks++] =
                (int)json_integer_value(json_array_get(freqs, i));
    I->has_throttle = 1;
    I->throttle_reasons = 0;
    *out = d;
    return GOS_OK;
}
