/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_node.c: `gpuos node`: every GPU of this node and the links between every
 * pair (peer access, copy bandwidth, copy latency), through the device layer's
 * p2p operations (src/device/p2p_ops.h). */
#include "cli/cli.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "common/provenance.h"
#include "device/p2p_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: gpuos node [--device SEL] [--sim CHIP,CHIP,...] [--bytes SIZE] [--trials N] [--json FILE|-]\n"
    "Every GPU of this node and the links between every ordered pair: whether the\n"
    "source can access the destination's memory (peer access), the copy bandwidth\n"
    "(GB/s, median of N copies of SIZE, default 256M x 5) and the latency of a 4-byte\n"
    "copy (us, median of N batches of 100).\n" CLI_HELP_DEVICE "                   (default: all)\n" CLI_HELP_SIM
    "  --bytes SIZE     bytes per bandwidth copy, 4K..16G (e.g. 1.5G)\n"
    "  --trials N       copies and latency batches per pair (default 5)\n" CLI_HELP_JSON("the view (gpuos.node/1)");

struct link {
    int can;
    double gbps, us;
};

int cmd_node(int argc, char **argv)
{
    const char *device = NULL, *sim = NULL, *json_out = NULL;
    unsigned long long bytes = 256ull << 20;
    long trials = 5;
    enum { O_BYTES = CLI_FIRST_OWN, O_TRIALS };
    static const struct option opts[] = {CLI_OPT_HELP, CLI_OPT_DEVICE, CLI_OPT_SIM, CLI_OPT_JSON,
                                         {"bytes", required_argument, NULL, O_BYTES},
                                         {"trials", required_argument, NULL, O_TRIALS}, CLI_OPT_END};
    cli_args args = CLI_ARGS("node", argc, argv, opts);
    for (int o; (o = cli_next(&args)) != -1;)
        switch (o) {
        case 'h': fputs(usage_text, stdout); return 0;
        case CLI_DEVICE: device = optarg; break;
        case CLI_SIM: sim = optarg; break;
        case CLI_JSON: json_out = optarg; break;
        case O_BYTES:
            if (cli_parse_size(optarg, 4096, 16ull << 30, &bytes))
                return cli_usage("node", "--bytes needs a size from 4K to 16G: %s", gos_last_error());
            break;
        case O_TRIALS:
            if (cli_parse_int(optarg, 1, 1000, &trials))
                return cli_usage("node", "--trials needs a count 1..1000");
            break;
        case CLI_STOP: return args.rc;
        }
    if (optind < argc)
        return cli_usage("node", "unexpected argument \"%s\"", argv[optind]);
    cli_devices sel;
    int rc = cli_select_devices(device ? device : "all", sim, &sel);
    if (rc == GOS_ENODEV && !device && !sim) {
        fprintf(stderr, "gpuos: %s; showing the built-in simulated H200 instead\n", gos_last_error());
        rc = cli_select_devices(NULL, "default", &sel);
    }
    if (rc)
        return cli_fail();
    int n = sel.n, quiet = json_out && !strcmp(json_out, "-");
    gos_device **dev = calloc((size_t)n, sizeof *dev);
    struct link *L = calloc((size_t)n * (size_t)n, sizeof *L);
    json_t *doc = NULL;
    if (!dev || !L) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++)
        if ((rc = cli_open_selected(&sel, i, &dev[i])))
            goto done;
    int simulated = 0;
    for (int i = 0; i < n; i++)
        simulated |= dev[i]->info.simulated;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            struct link *l = &L[a * n + b];
            if ((rc = gos_p2p_access(dev[a], dev[b], &l->can)) ||
                (rc = gos_p2p_bandwidth(dev[a], dev[b], (size_t)bytes, (int)trials, &l->gbps)) ||
                (rc = gos_p2p_latency(dev[a], dev[b], (int)trials, &l->us)))
                goto done;
        }
    if (!quiet) {
        printf("Node: %d %sGPU%s\n", n, simulated ? "simulated " : "", n == 1 ? "" : "s");
        for (int i = 0; i < n; i++)
            printf("GPU %d: %s (UUID: %s) PCI %s%s\n", i, dev[i]->info.name, dev[i]->info.uuid,
                   dev[i]->info.pci_bus_id, dev[i]->info.simulated ? " [simulated]" : "");
        if (n < 2)
            printf("One GPU: no GPU-to-GPU links\n");
        const char *title[3] = {"Peer access", "Copy bandwidth, GB/s", "Copy latency, us"};
        for (int t = 0; t < 3 && n > 1; t++) {
            printf("%s (row: source, column: destination)\n%-8s", title[t], "");
            for (int b = 0; b < n; b++) {
                char h[16];
                snprintf(h, sizeof h, "GPU %d", b);
                printf(" %10s", h);
            }
            printf("\n");
            for (int a = 0; a < n; a++) {
                printf("GPU %-4d", a);
                for (int b = 0; b < n; b++) {
                    const struct link *l = &L[a * n + b];
                    if (a == b)
                        printf(" %10s", "-");
                    else if (t == 0)
                        printf(" %10s", l->can ? "yes" : "no");
                    else
                        printf(" %10.1f", t == 1 ? l->gbps : l->us);
                }
                printf("\n");
            }
        }
    }
    if (json_out) {
        char cmd[1024];
        gos_command_line(cmd, sizeof cmd, "gpuos", argc, argv);
        json_t *gpus = json_array(), *links = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:s, s:b}", "index", i, "name",
                                                  dev[i]->info.name, "uuid", dev[i]->info.uuid, "pci_bus_id",
                                                  dev[i]->info.pci_bus_id, "simulated", dev[i]->info.simulated));
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                if (a != b)
                    json_array_append_new(links, json_pack("{s:i, s:i, s:b, s:f, s:f}", "src", a, "dst", b,
                                                           "peer_access", L[a * n + b].can, "gbps",
                                                           L[a * n + b].gbps, "latency_us", L[a * n + b].us));
        doc = json_pack("{s:s, s:o, s:o, s:{s:I, s:i}, s:o}", "schema", "gpuos.node/1", "gpus", gpus, "links",
                        links, "method", "bytes", (json_int_t)bytes, "trials", (int)trials, "provenance",
                        gos_provenance(cmd, n ? dev[0]->info.driver_version : NULL));
        rc = doc ? gos_json_save_atomic(doc, json_out) : gos_fail(GOS_ENOMEM, "out of memory");
    }
done:
    json_decref(doc);
    for (int i = 0; dev && i < n; i++)
        if (dev[i])
            gos_device_close(dev[i]);
    free(dev);
    free(L);
    return rc ? cli_fail() : 0;
}
