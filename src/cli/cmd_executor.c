/* cmd_executor.c: `gpuos executor --fd N [--sim CHIP] [--ordinal N]`, the hidden
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
    int fd = -1, ordinal = 0;
    const char *sim = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fd") && i + 1 < argc)
            fd = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sim") && i + 1 < argc)
            sim = argv[++i];
        else if (!strcmp(argv[i], "--ordinal") && i + 1 < argc)
            ordinal = atoi(argv[++i]);
        else
            return cli_usage("executor", "unknown argument \"%s\" (spawned by gpuos serve only)", argv[i]);
    }
    if (fd < 0)
        return cli_usage("executor", "--fd N is required (spawned by gpuos serve only)");
    if (gos_executor_main(fd, sim, ordinal))
        return cli_fail();
    return 0;
}
