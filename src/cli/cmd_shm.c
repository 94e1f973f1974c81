/* cmd_shm.c: `gpuos shm list`, the shared device memory segments of a running
 * daemon as `ipcs -m` shows System V segments (issue 10; docs/readme-shm.md):
 * key, id, owner, permissions, bytes, attachments, status ("dest": removed,
 * destroyed at its last detach) and the vGPU charged. Only segments the caller
 * may read are listed (root: all). */
#include "cli/cli.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "vmem/shm.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEGS 256

static void help(FILE *f)
{
    fprintf(f, "usage: gpuos shm list [--socket PATH] [--json FILE|-]\n"
               "\n"
               "Shared device memory segments (gpuos_shm_get / attach / detach / ctl), like\n"
               "ipcs -m: key, id, owner, permissions, bytes, attachments, status, vGPU charged.\n"
               CLI_HELP_SOCKET CLI_HELP_JSON("the segments (gpuos.shm-list/1)"));
}

int cmd_shm(int argc, char **argv)
{
    const char *sock = NULL, *sub = NULL, *json = NULL;
    static const struct option opts[] = {CLI_OPT_HELP, CLI_OPT_SOCKET, CLI_OPT_JSON, CLI_OPT_END};
    cli_args a = CLI_ARGS("shm", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': help(stdout); return 0;
        case CLI_SOCKET: sock = optarg; break;
        case CLI_JSON: json = optarg; break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        sub = argv[optind];
    if (optind + 1 < argc)
        return cli_usage("shm", "unexpected argument \"%s\"", argv[optind + 1]);
    if (sub && strcmp(sub, "list") && strcmp(sub, "ls"))
        return cli_usage("shm", "unknown subcommand \"%s\" (list)", sub);
    static gpuos_shm_ds seg[MAX_SEGS];
    static gos_shm_ds ds[MAX_SEGS];
    static const char *names[MAX_SEGS];
    int n = 0;
    if (gpuos_admin_shm_list(cli_socket(sock), seg, MAX_SEGS, &n))
        return cli_fail();
    for (int i = 0; i < n; i++) {
        memset(&ds[i], 0, sizeof ds[i]);
        ds[i].id = seg[i].id;
        ds[i].key = seg[i].key;
        ds[i].uid = seg[i].uid;
        ds[i].gid = seg[i].gid;
        ds[i].cuid = seg[i].cuid;
        ds[i].cgid = seg[i].cgid;
        ds[i].mode = seg[i].mode;
        ds[i].bytes = seg[i].bytes;
        ds[i].nattch = seg[i].nattch;
        ds[i].removed = seg[i].removed;
        ds[i].cpid = seg[i].cpid;
        ds[i].lpid = seg[i].lpid;
        ds[i].vgpu = i;
        names[i] = seg[i].vgpu;
    }
    if (json) {
        json_t *root = gos_shm_json(ds, n, names, n);
        int rc = root ? gos_json_save_atomic(root, json) : gos_fail(GOS_ENOMEM, "out of memory");
        json_decref(root);
        return rc ? cli_fail() : 0;
    }
    gos_shm_print(stdout, ds, n, names, n);
    return 0;
}
