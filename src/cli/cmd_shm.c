/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_shm.c: `gpuos shm list`, the shared device memory segments of a running
 * daemon as `ipcs -m` shows System V segments (issue 10; docs/readme-shm.md):
 * key, id, owner, permissions, bytes, attachments, status ("dest": removed,
 * destroyed at its last detach) and the vGPU charged. Only segments the caller
 * may read are listed (root: all). `gpuos shm rm ID | --key K | --vgpu V`, as
 * ipcrm, for the operator (root or the daemon's owner; issue 23.4). */
#include "cli/cli.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "serve/config.h"
#include "vmem/segtable.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEGS 256

static void help(FILE *f)
{
    fprintf(f, "usage: gpuos shm list [--vgpu NAME] [--socket PATH] [--json FILE|-]\n"
               "       gpuos shm rm ID | --key KEY | --vgpu NAME [--socket PATH]\n"
               "\n"
               "Shared device memory segments (gpuos_shm_get / attach / detach / ctl), like\n"
               "ipcs -m: key, id, owner, permissions, bytes, attachments, status, vGPU charged.\n"
               "rm: like ipcrm, marks removed the segment of that id or key, or every segment\n"
               "charged to the vGPU, whoever owns them (root or the daemon's owner only);\n"
               "each is destroyed at its last detach. A deleted vGPU (gpuos vgpu delete) keeps\n"
               "its name here while its segments keep its slot: list and rm find it by name.\n"
               "  --key KEY        rm: the segment of that key\n"
               "  --vgpu NAME      list, rm: the segments charged to that vGPU (or a deleted one)\n"
               CLI_HELP_SOCKET CLI_HELP_JSON("the segments (gpuos.shm-list/1)"));
}

/* An id or key: decimal, 0x hex or 0 octal, within int32 (a key may be negative). */
static int parse_int32(const char *s, int *out)
{
    char *e;
    errno = 0;
    long long v = strtoll(s, &e, 0);
    if (!*s || *e || errno || v < INT32_MIN || v > UINT32_MAX)
        return -1;
    *out = (int)(int32_t)(uint32_t)v;
    return 0;
}

static int shm_rm(const char *sock, int by, const char *arg)
{
    int value = 0, n = 0;
    if (gos_serve_text_check("rm: argument", arg))
        return cli_usage("shm", "%s", gos_last_error());
    if (by != GPUOS_SHM_RM_VGPU && parse_int32(arg, &value))
        return cli_usage("shm", "\"%s\" is not a segment %s", arg, by == GPUOS_SHM_RM_ID ? "id" : "key");
    if (gpuos_admin_shm_rm(sock, by, value, by == GPUOS_SHM_RM_VGPU ? arg : NULL, &n))
        return cli_fail();
    printf("%d segment%s marked removed (destroyed at the last detach)\n", n, n == 1 ? "" : "s");
    return 0;
}

int cmd_shm(int argc, char **argv)
{
    const char *sock = NULL, *sub = NULL, *json = NULL, *rm_arg = NULL;
    int rm_by = -1;
    enum { O_KEY = 1000, O_VGPU };
    static const struct option opts[] = {CLI_OPT_HELP, CLI_OPT_SOCKET, CLI_OPT_JSON,
                                         {"key", required_argument, NULL, O_KEY},
                                         {"vgpu", required_argument, NULL, O_VGPU}, CLI_OPT_END};
    cli_args a = CLI_ARGS("shm", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': help(stdout); return 0;
        case CLI_SOCKET: sock = optarg; break;
        case CLI_JSON: json = optarg; break;
        case O_KEY:
        case O_VGPU:
            if (rm_arg)
                return cli_usage("shm", "rm takes one of ID, --key KEY, --vgpu NAME");
            rm_by = o == O_KEY ? GPUOS_SHM_RM_KEY : GPUOS_SHM_RM_VGPU;
            rm_arg = optarg;
            break;
        case CLI_STOP: return a.rc;
        }
    if (optind < argc)
        sub = argv[optind];
    if (sub && !strcmp(sub, "rm")) {
        if (optind + 1 < argc) {
            if (rm_arg || optind + 2 < argc)
                return cli_usage("shm", "rm takes one of ID, --key KEY, --vgpu NAME");
            rm_by = GPUOS_SHM_RM_ID;
            rm_arg = argv[optind + 1];
        }
        if (!rm_arg)
            return cli_usage("shm", "rm needs ID, --key KEY or --vgpu NAME");
        if (json)
            return cli_usage("shm", "rm takes no --json");
        return shm_rm(cli_socket(sock), rm_by, rm_arg);
    }
    if (rm_arg && rm_by != GPUOS_SHM_RM_VGPU)
        return cli_usage("shm", "--key belongs to rm");
    if (rm_arg && gos_serve_text_check("list: --vgpu", rm_arg))
        return cli_usage("shm", "%s", gos_last_error());
    if (optind + 1 < argc)
        return cli_usage("shm", "unexpected argument \"%s\"", argv[optind + 1]);
    if (sub && strcmp(sub, "list") && strcmp(sub, "ls"))
        return cli_usage("shm", "unknown subcommand \"%s\" (list, rm)", sub);
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
    int kept = 0; /* list --vgpu NAME: only that vGPU's (a deleted one's too) */
    for (int i = 0; i < n; i++)
        if (!rm_arg || !strcmp(names[i], rm_arg)) {
            ds[kept] = ds[i];
            ds[kept].vgpu = kept;
            names[kept] = names[i];
            kept++;
        }
    n = kept;
    if (json) {
        json_t *root = gos_shm_json(ds, n, names, n);
        int rc = root ? gos_json_save_atomic(root, json) : gos_fail(GOS_ENOMEM, "out of memory");
        json_decref(root);
        return rc ? cli_fail() : 0;
    }
    gos_shm_print(stdout, ds, n, names, n);
    return 0;
}
