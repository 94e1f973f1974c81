/* cmd_labels.c: `gpuos labels CHIP.json... [--nfd FILE]`: the node-feature-discovery
 * labels of existing charts, without probing (src/topology/labels.h). */
#include "cli/cli.h"
#include "common/status.h"
#include "topology/labels.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: gpuos labels CHIP.json [MORE.json...] [--nfd FILE]\n"
    "Writes the scheduling facts of charts (gpuos probe --json) as node-feature-discovery\n"
    "labels, key=value lines: GPC configuration, clusters of 2/4/8/16 at once, largest\n"
    "cluster, free-floating SMs, partition sizes, hash granularity. Several charts are\n"
    "the GPUs of one node in index order: per-GPU labels (gpuos.io/gpu-N.*) and node\n"
    "labels holding the worst GPU. Without --nfd the labels go to standard output; with\n"
    "it, into FILE atomically (e.g. /etc/kubernetes/node-feature-discovery/features.d/gpuos).\n";

int cmd_labels(int argc, char **argv)
{
    const char *nfd = NULL;
    const char *paths[64];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--nfd")) {
            if (i + 1 >= argc)
                return cli_usage("labels", "--nfd needs an output file");
            nfd = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage("labels", "unexpected argument \"%s\"", argv[i]);
        else if (n == 64)
            return cli_usage("labels", "at most 64 charts");
        else
            paths[n++] = argv[i];
    }
    if (!n)
        return cli_usage("labels", "a chart (CHIP.json) is required");
    gos_chip *chips[64] = {0};
    int rc = GOS_OK;
    for (int i = 0; i < n && !rc; i++)
        rc = gos_chip_load(paths[i], &chips[i]);
    if (!rc)
        rc = nfd ? gos_labels_save((const gos_chip *const *)chips, n, nfd)
                 : gos_labels_write((const gos_chip *const *)chips, n, stdout);
    for (int i = 0; i < n; i++)
        gos_chip_free(chips[i]);
    return rc ? cli_fail() : 0;
}
