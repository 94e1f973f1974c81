/* cmd_serve.c: `gpuos serve`, the daemon that owns the GPU(s) and hosts virtual
 * GPUs (pillar 3). See src/serve/config.h for the configuration file. */
#include "cli/cli.h"
#include "common/status.h"
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: gpuos serve --config FILE [--socket PATH] [--sim CHIP] [--verbose]\n"
            "\n"
            "Owns the GPU(s) named in FILE and hosts its virtual GPUs: clients (libgpuos,\n"
            "include/gpuos/gpuos.h) connect to the Unix socket, whose file permissions\n"
            "(socket_mode) decide who may use the GPU. Every copy and launch is scheduled\n"
            "against the vGPU's compute and copy shares (policies fifo, credit, band; queues\n"
            "mrq or sdq); allocations past a vGPU's memory share fail. SIGTERM or SIGINT\n"
            "shut down cleanly.\n"
            "\n"
            "  --config FILE   devices and vGPUs (format: src/serve/config.h)\n"
            "  --socket PATH   overrides the file's socket (default /tmp/gpuos.sock)\n"
            "  --sim CHIP      run every device on the simulated chip (\"default\" or a file)\n"
            "  --verbose       log client arrivals and departures\n"
            "\n"
            "example configuration:\n"
            "  socket = /tmp/gpuos.sock\n"
            "  socket_mode = 0660\n"
            "  [device 0]\n"
            "  policy = band\n"
            "  queue = mrq\n"
            "  [vgpu alice]\n"
            "  compute = 70\n"
            "  copy = 50\n"
            "  memory = 40%%\n"
            "  [vgpu bob]\n"
            "  compute = 30\n"
            "  copy = 50\n"
            "  memory = 8G\n");
}

int cmd_serve(int argc, char **argv)
{
    const char *config = NULL, *sock = NULL, *sim = NULL;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a))
            return help(stdout), 0;
        else if (!strcmp(a, "--config") && i + 1 < argc) {
            config = argv[++i];
        } else if (!strcmp(a, "--socket") && i + 1 < argc) {
            sock = argv[++i];
        } else if (!strcmp(a, "--sim") && i + 1 < argc) {
            sim = argv[++i];
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            verbose = 1;
        } else {
            return cli_usage("serve", "unknown or incomplete argument \"%s\"", a);
        }
    }
    if (!config)
        return cli_usage("serve", "--config FILE is required");
    struct srv *s = calloc(1, sizeof *s);
    if (!s) {
        gos_fail(GOS_ENOMEM, "out of memory");
        return cli_fail();
    }
    int rc = gos_serve_config_load(config, &s->cfg);
    if (!rc && sock) {
        if (strlen(sock) >= sizeof s->cfg.socket)
            rc = gos_fail(GOS_EINVAL, "socket path too long");
        else
            strcpy(s->cfg.socket, sock);
    }
    if (!rc && !s->cfg.socket[0])
        strcpy(s->cfg.socket, getenv("GPUOS_SOCKET") ? getenv("GPUOS_SOCKET") : "/tmp/gpuos.sock");
    s->verbose = verbose;
    if (!rc)
        rc = srv_run(s, sim);
    if (!s->leaked) /* else threads that were abandoned may still look at it until the exit */
        free(s);
    return rc ? cli_fail() : 0;
}
