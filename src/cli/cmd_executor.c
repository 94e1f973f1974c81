/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_executor.c: `gpuos executor --fd N [--sim CHIP] [--ordinal N] [--priority
 * low|high]`, the hidden
 * subcommand the daemon spawns for each client's device work (issue 9;
 * src/exec/exec_main.c). Not meant to be run by hand. */
#include "cli/cli.h"

#include "common/status.h"
#include "exec/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_executor(int argc, char **argv)
{
    long fd = -1, ordinal = 0;
    int prio = 0;
    const char *sim = NULL;
    enum { O_FD = CLI_FIRST_OWN, O_ORDINAL, O_PRIORITY };
    static const struct option opts[] = {CLI_OPT_HELP, {"fd", required_argument, NULL, O_FD}, CLI_OPT_SIM,
                                         {"ordinal", required_argument, NULL, O_ORDINAL},
                                         {"priority", required_argument, NULL, O_PRIORITY}, CLI_OPT_END};
    cli_args a = CLI_ARGS("executor", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h':
            printf("usage: gpuos executor --fd N [--ordinal N] [--sim CHIP] [--priority low|high]\n"
                   "Not a command to run by hand: gpuos serve spawns one executor process per\n"
                   "client (or per vGPU) to carry out its device work in a context of its own\n"
                   "(isolation = process | mps; see gpuos-serve(8) and gpuos.conf(5)).\n"
                   "  --fd N        the daemon's end of the executor channel\n"
                   "  --ordinal N   the CUDA device\n"
                   "  --sim CHIP    the simulated chip instead of a GPU\n"
                   "  --priority P  its queues at the least (low) or greatest (high) stream\n"
                   "                priority (latency_priority)\n");
            return 0;
        case O_FD:
            if (cli_parse_int(optarg, 0, 1 << 20, &fd))
                return cli_usage("executor", "--fd wants a descriptor number, not \"%s\"", optarg);
            break;
        case O_ORDINAL:
            if (cli_parse_int(optarg, 0, 1023, &ordinal))
                return cli_usage("executor", "--ordinal wants a GPU ordinal, not \"%s\"", optarg);
            break;
        case O_PRIORITY:
            if (strcmp(optarg, "low") && strcmp(optarg, "high"))
                return cli_usage("executor", "--priority wants low or high, not \"%s\"", optarg);
            prio = !strcmp(optarg, "high") ? 1 : -1;
            break;
        case CLI_SIM: sim = optarg; break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        return cli_usage("executor", "unexpected argument \"%s\" (spawned by gpuos serve only)", argv[optind]);
    if (fd < 0)
        return cli_usage("executor", "--fd N is required (spawned by gpuos serve only)");
    if (gos_executor_main((int)fd, sim, (int)ordinal, prio))
        return cli_fail();
    return 0;
}
