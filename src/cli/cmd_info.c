/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_info.c: `gpuos info [--device SEL] [--sim CHIP] [--json FILE|-]`: the devices of this machine
 * like `nvidia-smi -L`, with the facts the device layer knows. Without a GPU it
 * says why and lists the built-in simulated chip, labelled as simulated. */
#include "cli/cli.h"
#include "common/jsonio.h"
#include "common/status.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void print_info(const gos_device_info *I, int index)
{
    printf("GPU %d: %s (UUID: %s)%s\n", index, I->name, I->uuid, I->simulated ? " [simulated]" : "");
    printf("    compute capability %d.%d, %d SMs, L2 %.1f MiB, memory %.1f GiB", I->cc_major,
           I->cc_minor, I->sm_count, I->l2_bytes / 1048576.0, I->mem_bytes / 1073741824.0);
    if (I->pci_bus_id[0] && !I->simulated)
        printf(", PCI %s", I->pci_bus_id);
    printf("\n    driver %s", I->driver_version[0] ? I->driver_version : "(NVML unavailable)");
    if (I->driver_cuda_version)
        printf(", CUDA %d.%d", I->driver_cuda_version / 1000, I->driver_cuda_version % 1000 / 10);
    printf("\n");
    if (I->has_clocks) {
        printf("    SM clock %d MHz (max %d)", I->sm_clock_mhz, I->max_sm_clock_mhz);
        if (I->mem_clock_mhz)
            printf(", memory clock %d MHz", I->mem_clock_mhz);
        if (I->n_supported_sm_clocks)
            printf(", %d supported SM clocks %d..%d MHz", I->n_supported_sm_clocks,
                   I->supported_sm_clocks_mhz[I->n_supported_sm_clocks - 1], I->supported_sm_clocks_mhz[0]);
        printf("\n");
    } else
        printf("    clocks: not available (no NVML)\n");
    if (I->has_throttle)
        printf("    clock-event reasons 0x%llx%s\n", (unsigned long long)I->throttle_reasons,
               I->throttle_reasons == 0 ? " (none)" : I->throttle_reasons == 1 ? " (idle)" : "");
    if (I->has_temp || I->has_power) {
        printf("   ");
        if (I->has_temp)
            printf(" temperature %d C", I->temp_c);
        if (I->has_power)
            printf(" power %.0f W", I->power_w);
        printf("\n");
    }
}

static json_t *info_json(const gos_device_info *I)
{
    json_t *o = json_pack("{s:s, s:i, s:b, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:s}", "backend",
                          I->backend, "ordinal", I->ordinal, "simulated", I->simulated, "name", I->name,
                          "uuid", I->uuid, "pci_bus_id", I->pci_bus_id, "cc", "", "sm_count",
                          I->sm_count, "l2_bytes", (json_int_t)I->l2_bytes, "mem_bytes",
                          (json_int_t)I->mem_bytes, "driver", I->driver_version);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", I->cc_major, I->cc_minor);
    json_object_set_new(o, "cc", json_string(cc));
    if (I->driver_cuda_version)
        json_object_set_new(o, "driver_cuda_version", json_integer(I->driver_cuda_version));
    if (I->has_clocks) {
        json_t *clk = json_pack("{s:i, s:i, s:i}", "sm_mhz", I->sm_clock_mhz, "mem_mhz",
                                I->mem_clock_mhz, "max_sm_mhz", I->max_sm_clock_mhz);
        json_t *sup = json_array();
        for (int i = 0; i < I->n_supported_sm_clocks; i++)
            json_array_append_new(sup, json_integer(I->supported_sm_clocks_mhz[i]));
        json_object_set_new(clk, "supported_sm_mhz", sup);
        json_object_set_new(o, "clocks", clk);
    }
    if (I->has_throttle)
        json_object_set_new(o, "clock_event_reasons", json_integer((json_int_t)I->throttle_reasons));
    if (I->has_temp)
        json_object_set_new(o, "temperature_c", json_integer(I->temp_c));
    if (I->has_power)
        json_object_set_new(o, "power_w", json_real(I->power_w));
    return o;
}

int cmd_info(int argc, char **argv)
{
    const char *sim = NULL, *json_out = NULL, *device = NULL;
    static const struct option opts[] = {CLI_OPT_HELP, CLI_OPT_DEVICE, CLI_OPT_SIM, CLI_OPT_JSON, CLI_OPT_END};
    cli_args a = CLI_ARGS("info", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h':
            printf("usage: gpuos info [--device SEL] [--sim CHIP[,CHIP...]] [--json FILE|-]\n"
                   "Lists the GPUs of this machine (name, UUID, compute capability, SMs, L2,\n"
                   "memory, driver, clocks, clock-event reasons). Without a GPU, says why and\n"
                   "lists the built-in simulated H200.\n" CLI_HELP_DEVICE CLI_HELP_SIM CLI_HELP_JSON(
                       "the list (schema gpuos.info/1)"));
            return 0;
        case CLI_SIM: sim = optarg; break;
        case CLI_DEVICE: device = optarg; break;
        case CLI_JSON: json_out = optarg; break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        return cli_usage("info", "unexpected argument \"%s\"", argv[optind]);
    json_t *list = json_array();
    int n = 0;
    if (!sim) {
        n = gos_cuda_device_count();
        if (n == 0) {
            fprintf(stderr, "gpuos: %s; listing the built-in simulated H200\n", gos_last_error());
            sim = "default";
        }
    }
    int rc = GOS_OK;
    if (device || (sim && strchr(sim, ','))) { /* a selection: devsel.c */
        cli_devices sel;
        if ((rc = cli_select_devices(device, sim, &sel)))
            goto fail;
        sim = NULL;
        n = 0;
        for (int i = 0; i < sel.n; i++) {
            gos_device *d;
            if ((rc = cli_open_selected(&sel, i, &d)))
                goto fail;
            if (!json_out || strcmp(json_out, "-"))
                print_info(&d->info, d->info.ordinal >= 0 ? d->info.ordinal : i);
            json_array_append_new(list, info_json(&d->info));
            gos_device_close(d);
        }
    }
    if (sim) {
        gos_device *d;
        if ((rc = cli_open_device(sim, -1, &d)))
            goto fail;
        if (!json_out || strcmp(json_out, "-"))
            print_info(&d->info, 0);
        json_array_append_new(list, info_json(&d->info));
        gos_device_close(d);
    }
    for (int i = 0; i < n; i++) {
        gos_device *d;
        if ((rc = cli_open_device(NULL, i, &d)))
            goto fail;
        if (!json_out || strcmp(json_out, "-"))
            print_info(&d->info, i);
        json_array_append_new(list, info_json(&d->info));
        gos_device_close(d);
    }
    if (json_out) {
        json_t *doc = json_pack("{s:s, s:o}", "schema", "gpuos.info/1", "devices", list);
        rc = gos_json_save_atomic(doc, json_out);
        json_decref(doc);
        return rc ? cli_fail() : 0;
    }
    json_decref(list);
    return 0;
fail:
    json_decref(list);
    return cli_fail();
}
