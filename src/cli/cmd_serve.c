/* cmd_serve.c: `gpuos serve`, the daemon that owns the GPU(s) and hosts virtual
 * GPUs (pillar 3). See src/serve/config.h for the configuration file. */
#include "cli/cli.h"
#include "common/env.h"
#include "common/status.h"
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: gpuos serve --config FILE [--socket PATH] [--sim CHIP] [--log-level LEVEL] [--verbose]\n"
            "\n"
            "Owns the GPU(s) named in FILE and hosts its virtual GPUs: clients (libgpuos,\n"
            "include/gpuos/gpuos.h) connect to the Unix socket, whose file permissions\n"
            "(socket_mode) decide who may use the GPU. Every copy and launch is scheduled\n"
            "against the vGPU's compute and copy shares (policies fifo, credit, band; queues\n"
            "mrq or sdq); allocations past a vGPU's memory share fail. SIGTERM or SIGINT\n"
            "shut down cleanly; SIGHUP rereads FILE and applies it without dropping clients\n"
            "(an invalid file is rejected and the running configuration kept). Under systemd\n"
            "(Type=notify) it reports readiness, reloads and stopping with sd_notify, and its\n"
            "log lines carry syslog priorities. `gpuos vgpu set` changes are kept in a state\n"
            "file (state = PATH) and survive a restart. Without a GPU it stops and says so:\n"
            "pass --sim default to serve the simulated chip.\n"
            "\n"
            "  --config FILE   devices and vGPUs (format: src/serve/config.h)\n"
            "  --socket PATH   overrides the file's socket (else $GPUOS_SOCKET, else\n"
            "                  " GOS_DEFAULT_SOCKET "; its directory is created if absent)\n"
            "  --sim CHIP      run every device on the simulated chip (\"default\" or a file)\n"
            "  --log-level L   err, warning, notice, info (default) or debug\n"
            "  --verbose       the same as --log-level debug (client departures too)\n"
            "\n"
            "example configuration:\n"
            "  socket_mode = 0660\n"
            "  metrics_listen = 127.0.0.1:9400\n"
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
            "  memory = 8G\n"
            "  users = bob\n"
            "(every key: docs/readme-vgpu.md, \"Configuration keys\")\n");
}

int cmd_serve(int argc, char **argv)
{
    const char *config = NULL, *sock = NULL, *sim = NULL;
    int verbose = 0, level = LOG_INFO;
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
            level = LOG_DEBUG;
        } else if (!strcmp(a, "--log-level") && i + 1 < argc) {
            if (gos_log_parse_level(argv[++i], &level))
                return cli_usage("serve", "%s", gos_last_error());
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
    gos_log_name("gpuos serve");
    gos_log_init(level);
    /* Kept absolute: SIGHUP rereads it. */
    char *abs = realpath(config, NULL);
    snprintf(s->config_path, sizeof s->config_path, "%s", abs ? abs : config);
    free(abs);
    int rc = gos_serve_config_load(config, &s->cfg);
    if (!rc && !sock && !s->cfg.socket[0] && getenv(GOS_ENV_SOCKET) && getenv(GOS_ENV_SOCKET)[0])
        sock = getenv(GOS_ENV_SOCKET);
    if (!rc && sock) {
        if (strlen(sock) >= sizeof s->cfg.socket)
            rc = gos_fail(GOS_EINVAL, "socket path too long");
        else
            strcpy(s->cfg.socket, sock);
        s->sock_from_cli = 1;
    }
    if (!rc && !s->cfg.socket[0])
        strcpy(s->cfg.socket, GOS_DEFAULT_SOCKET);
    s->verbose = verbose;
    if (!rc)
        rc = srv_run(s, sim);
    if (!s->leaked) /* else threads that were abandoned may still look at it until the exit */
        free(s);
    if (rc && gos_log_journal()) { /* the reason, with its priority, in the journal */
        gos_log(LOG_ERR, "%s", gos_last_error()[0] ? gos_last_error() : "failed");
        return 1;
    }
    return rc ? cli_fail() : 0;
}
