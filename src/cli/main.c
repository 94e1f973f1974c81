/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: the gpuos command table. Unambiguous prefixes are accepted
 * ("gpuos pro" = "gpuos probe"), as iproute2 does; an ambiguous one is refused
 * with every command it starts ("gpuos v": vgpu and version). Every command is a plain
 * extern (cli.h): a missing cmd_NAME.c is a link error, not a run-time gap. */
#include "cli/cli.h"
#include "common/status.h"
#include "common/version.h"

#include <stdio.h>
#include <string.h>

#ifndef GOS_SYSCONFDIR /* mk/install.mk passes make install's */
#define GOS_SYSCONFDIR "/usr/local/etc"
#endif
const char cli_default_config[] = GOS_SYSCONFDIR "/gpuos/gpuos.conf";

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
    {"doctor", cmd_doctor, "can a user reach the GPU past the daemon? the daemon's socket?"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuos COMMAND [ARGS] (gpuos COMMAND --help for details)\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-8s %s\n", "help", "gpuos help COMMAND: the command's help (as gpuos COMMAND --help)");
    fprintf(f, "  %-8s %s\n", "version", "print the version (also --version)");
}

/* The command argv[1] names: its exact name or an unambiguous prefix of one,
 * "version" and "help" counted too ("gpuos v" is vgpu or version: refused with
 * both named). NULL with the reason said on stderr. */
static const char *const builtins[] = {"version", "help"};
#define N_BUILTINS (int)(sizeof builtins / sizeof builtins[0])

static const char *resolve(const char *word)
{
    const char *names[N_COMMANDS + N_BUILTINS];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    for (int i = 0; i < N_BUILTINS; i++)
        names[N_COMMANDS + i] = builtins[i];
    size_t len = strlen(word);
    int n = 0;
    const char *hit = NULL;
    for (int i = 0; i < N_COMMANDS + N_BUILTINS; i++) {
        if (!strcmp(word, names[i]))
            return names[i];
        if (len && !strncmp(word, names[i], len))
            hit = names[i], n++;
    }
    if (n == 1)
        return hit;
    if (!n) {
        fprintf(stderr, "gpuos: unknown command \"%s\"; see gpuos --help\n", word);
        return NULL;
    }
    fprintf(stderr, "gpuos: \"%s\" is ambiguous (", word);
    for (int i = 0, k = 0; i < N_COMMANDS + N_BUILTINS; i++)
        if (!strncmp(word, names[i], len))
            fprintf(stderr, "%s%s", k++ ? ", " : "", names[i]);
    fprintf(stderr, "); type more of it\n");
    return NULL;
}

static int run(const char *name, int argc, char **argv)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) {
            argv[0] = (char *)name;
            return commands[i].fn(argc, argv);
        }
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("gpuos %s\n", GOS_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "executor")) /* hidden: the daemon's executor processes */
        return cmd_executor(argc - 1, argv + 1);
    const char *name = resolve(argv[1]);
    if (!name)
        return 2;
    if (!strcmp(name, "version")) {
        printf("gpuos %s\n", GOS_VERSION);
        return 0;
    }
    if (!strcmp(name, "help")) { /* gpuos help [COMMAND]: the command's own --help */
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        if (argc > 3) {
            fprintf(stderr, "gpuos help: one command at a time (gpuos help COMMAND)\n");
            return 2;
        }
        const char *cmd = resolve(argv[2]);
        if (!cmd)
            return 2;
        if (!strcmp(cmd, "help") || !strcmp(cmd, "version")) {
            usage(stdout);
            return 0;
        }
        char *help_argv[] = {(char *)cmd, "--help", NULL};
        return run(cmd, 2, help_argv);
    }
    return run(name, argc - 1, argv + 1);
}
