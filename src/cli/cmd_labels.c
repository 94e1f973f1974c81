/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_labels.c: `gpuos labels CHIP.json... [--nfd FILE]`: the node-feature-discovery
 * labels of existing charts, without probing (src/topology/labels.h). */
#include "cli/cli.h"
#include "common/status.h"
#include "topology/labels.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: gpuos labels CHIP.json [MORE.json...] [--nfd FILE] [--nfd-expiry DURATION]\n"
    "Writes the scheduling facts of charts (gpuos probe --json) as node-feature-discovery\n"
    "labels, key=value lines: GPC configuration, clusters of 2/4/8/16 at once, largest\n"
    "cluster, free-floating SMs, partition sizes, hash granularity. Several charts are\n"
    "the GPUs of one node in index order: per-GPU labels (gpuos.io/gpu-N.*) and node\n"
    "labels holding the worst GPU. Without --nfd the labels go to standard output; with\n"
    "it, into FILE atomically (e.g. /etc/kubernetes/node-feature-discovery/features.d/gpuos).\n"
    "When a gpuos daemon answers at $GPUOS_SOCKET (else /run/gpuos/gpuos.sock) the node is\n"
    "labelled as sharing its GPUs: gpuos.io/shared=true, gpuos.io/vgpus=N.\n"
    "  --nfd FILE             the feature file (written through .FILE.tmp.PID beside it)\n"
    "  --nfd-expiry DURATION  NFD drops the labels this long after the file was written\n"
    "                         unless it is rewritten (default 24h; s, m, h, d; 0: never)\n";

int cmd_labels(int argc, char **argv)
{
    const char *nfd = NULL;
    const char *paths[64];
    int n = 0;
    long expiry = GOS_NFD_EXPIRY_S;
    enum { O_NFD = CLI_FIRST_OWN, O_EXPIRY };
    static const struct option opts[] = {CLI_OPT_HELP, {"nfd", required_argument, NULL, O_NFD},
                                         {"nfd-expiry", required_argument, NULL, O_EXPIRY}, CLI_OPT_END};
    cli_args a = CLI_ARGS("labels", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': fputs(usage_text, stdout); return 0;
        case O_NFD: nfd = optarg; break;
        case O_EXPIRY:
            if (cli_parse_expiry("labels", optarg, &expiry))
                return 2;
            break;
        case CLI_STOP: return a.rc;
        }
    for (int i = optind; i < argc; i++) {
        if (n == 64)
            return cli_usage("labels", "at most 64 charts");
        paths[n++] = argv[i];
    }
    if (!n)
        return cli_usage("labels", "a chart (CHIP.json) is required");
    gos_chip *chips[64] = {0};
    int rc = GOS_OK;
    for (int i = 0; i < n && !rc; i++)
        rc = gos_chip_load(paths[i], &chips[i]);
    if (!rc)
        rc = nfd ? gos_labels_save((const gos_chip *const *)chips, n, expiry, cli_served_vgpus(), nfd)
                 : gos_labels_write((const gos_chip *const *)chips, n, expiry, cli_served_vgpus(), stdout);
    for (int i = 0; i < n; i++)
        gos_chip_free(chips[i]);
    return rc ? cli_fail() : 0;
}
