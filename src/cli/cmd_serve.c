/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_serve.c: `gpuos serve`, the daemon that owns the GPU(s) and hosts virtual
 * GPUs (pillar 3). The configuration file: gpuos.conf(5), src/serve/config.h. */
#include "cli/cli.h"
#include "common/env.h"
#include "common/status.h"
#include "serve/config.h"
#include "serve/daemon.h"
#include "serve/server.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: gpuos serve [--config FILE] [--socket PATH] [--sim CHIP] [--log-level LEVEL] [--verbose]\n"
            "       gpuos serve --check [--config FILE]\n"
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
            "  --config FILE    devices and vGPUs (gpuos.conf(5); default %s)\n"
            "  --check          check FILE and exit (0: valid; 1: the daemon's file:line error),\n"
            "                   starting nothing: no socket, no GPU\n" CLI_HELP_SOCKET
            "                   (the file's socket = comes before $GPUOS_SOCKET; the directory is\n"
            "                   created if absent)\n"
            "  --sim CHIP       run every device on the simulated chip (\"default\" or a file)\n"
            "  --log-level L    err, warning, notice, info (default) or debug\n"
            "  --verbose, -v    the same as --log-level debug (client departures too)\n"
            "\n"
            "example configuration:\n"
            "  socket_mode = 0660\n"
            "  metrics_listen = 127.0.0.1:" GOS_METRICS_PORT_STR "\n"
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
            "(every key: gpuos.conf(5); the daemon: gpuos-serve(8))\n",
            cli_default_config);
}

/* --check: the file as the daemon reads it at start, before any device is
 * opened (memory shares against the devices' sizes wait for the devices). */
static int check(const char *config)
{
    struct gos_serve_config *c = calloc(1, sizeof *c);
    if (!c) {
        gos_fail(GOS_ENOMEM, "out of memory");
        return cli_fail();
    }
    int rc = gos_serve_config_load(config, c);
    if (rc) {
        free(c);
        return cli_fail();
    }
    for (int i = 0; i < c->n_warn; i++)
        fprintf(stderr, "gpuos serve: warning: %s\n", c->warn[i]);
    printf("%s: valid (%d device%s, %d vGPU%s)\n", config, c->n_devs, c->n_devs == 1 ? "" : "s", c->n_vgpus,
           c->n_vgpus == 1 ? "" : "s");
    free(c);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    const char *config = NULL, *sock = NULL, *sim = NULL;
    int verbose = 0, level = LOG_INFO, check_only = 0;
    enum { O_CONFIG = CLI_FIRST_OWN, O_LEVEL, O_CHECK };
    static const struct option opts[] = {CLI_OPT_HELP, {"config", required_argument, NULL, O_CONFIG},
                                         {"check", no_argument, NULL, O_CHECK}, CLI_OPT_SOCKET,
                                         CLI_OPT_SIM, {"log-level", required_argument, NULL, O_LEVEL},
                                         {"verbose", no_argument, NULL, 'v'}, CLI_OPT_END};
    cli_args a = CLI_ARGS("serve", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': help(stdout); return 0;
        case O_CONFIG: config = optarg; break;
        case O_CHECK: check_only = 1; break;
        case CLI_SOCKET: sock = optarg; break;
        case CLI_SIM: sim = optarg; break;
        case 'v':
            verbose = 1;
            level = LOG_DEBUG;
            break;
        case O_LEVEL:
            if (gos_log_parse_level(optarg, &level))
                return cli_usage("serve", "%s", gos_last_error());
            break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        return cli_usage("serve", "unexpected argument \"%s\"", argv[optind]);
    if (!config && access(cli_default_config, F_OK)) {
        gos_fail(GOS_EINVAL, "no configuration at %s, the default (copy %s.example there and edit it, or name one "
                             "with --config FILE)", cli_default_config, cli_default_config);
        return cli_fail();
    }
    if (!config)
        config = cli_default_config;
    if (check_only)
        return sock || sim ? cli_usage("serve", "--check reads the file alone: no --socket or --sim") : check(config);
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
    if (!rc && !sock && !s->cfg.socket[0] && gos_env(GOS_ENV_SOCKET) && gos_env(GOS_ENV_SOCKET)[0])
        sock = gos_env(GOS_ENV_SOCKET);
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
