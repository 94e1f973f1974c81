/* main.c: the gpuos command table. Unambiguous prefixes are accepted
 * ("gpuos pro" = "gpuos probe"), as iproute2 does. Every command is a plain
 * extern (cli.h): a missing cmd_NAME.c is a link error, not a run-time gap. */
#include "cli/cli.h"
#include "common/status.h"
#include "common/version.h"

#include <stdio.h>
#include <string.h>

struct cmd_entry {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
};

static const struct cmd_entry commands[] = {
    {"info", cmd_info, "list GPUs (real or simulated) and their facts"},
    {"probe", cmd_probe, "chart the chip: topology | numa | memory | all"},
    {"report", cmd_report, "render a chip file as a self-contained HTML page"},
    {"dvfs", cmd_dvfs, "SM frequency-switching latency: run | analyze | report"},
    {"serve", cmd_serve, "the daemon that owns the GPU and hosts virtual GPUs"},
    {"vgpu", cmd_vgpu, "list virtual GPUs or change their shares at run time"},
    {"labels", cmd_labels, "node-feature-discovery labels from a chip file"},
    {"node", cmd_node, "every GPU of this node and the links between them"},
    {"place", cmd_place, "SM sets that fit the tenant (green contexts, cluster sizes)"},
    {"run", cmd_run, "run an unmodified CUDA program on a virtual GPU"},
    {"cdi", cmd_cdi, "a CDI specification: a vGPU for containers (podman, Kubernetes)"},
    {"shm", cmd_shm, "list shared device memory segments (like ipcs -m)"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuos COMMAND [ARGS] (gpuos COMMAND --help for details)\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-8s %s\n", "version", "print the version (also --version)");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("gpuos %s\n", GOS_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "executor")) /* hidden: the daemon's executor processes */
        return cmd_executor(argc - 1, argv + 1);
    const struct cmd_entry *hit = NULL;
    size_t len = strlen(argv[1]);
    for (int i = 0; i < N_COMMANDS; i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            hit = &commands[i];
            break;
        }
        if (len && !strncmp(argv[1], commands[i].name, len)) {
            if (hit) {
                fprintf(stderr, "gpuos: \"%s\" is ambiguous (%s, %s, ...)\n", argv[1], hit->name,
                        commands[i].name);
                return 2;
            }
            hit = &commands[i];
        }
    }
    if (!hit) {
        fprintf(stderr, "gpuos: unknown command \"%s\"; see gpuos --help\n", argv[1]);
        return 2;
    }
    argv[1] = (char *)hit->name;
    return hit->fn(argc - 1, argv + 1);
}
