/* cmd_shm.c: `gpuos shm list`, the shared device memory segments of a running
 * daemon as `ipcs -m` shows System V segments (issue 10; docs/readme-shm.md):
 * key, id, owner, permissions, bytes, attachments, status ("dest": removed,
 * destroyed at its last detach) and the vGPU charged. Only segments the caller
 * may read are listed (root: all). `gpuos shm rm ID | --key K | --vgpu V`, as
 * ipcrm, for the operator (root or the daemon's owner; issue 23.4). */
#include "cli/cli.h"
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "vmem/shm.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEGS 256

static void help(FILE *f)
{
    fprintf(f, "usage: gpuos shm list [--socket PATH] [--json]\n"
               "       gpuos shm rm ID | --key KEY | --vgpu NAME [--socket PATH]\n"
               "\n"
               "list: shared device memory segments (gpuos_shm_get / attach / detach / ctl),\n"
               "like ipcs -m: key, id, owner, permissions, bytes, attachments, status, vGPU\n"
               "charged. --json: schema gpuos.shm-list/1.\n"
               "rm: like ipcrm, marks removed the segment of that id or key, or every segment\n"
               "charged to the vGPU, whoever owns them (root or the daemon's owner only);\n"
               "each is destroyed at its last detach.\n"
               "The socket defaults to $GPUOS_SOCKET, else /run/gpuos/gpuos.sock.\n");
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
    if (by != GPUOS_SHM_RM_VGPU && parse_int32(arg, &value))
        return cli_usage("shm", "\"%s\" is not a segment %s", arg, by == GPUOS_SHM_RM_ID ? "id" : "key");
    if (gpuos_admin_shm_rm(sock, by, value, by == GPUOS_SHM_RM_VGPU ? arg : NULL, &n))
        return cli_fail();
    printf("%d segment%s marked removed (destroyed at the last detach)\n", n, n == 1 ? "" : "s");
    return 0;
}

int cmd_shm(int argc, char **argv)
{
    const char *sock = NULL, *sub = NULL, *rm_arg = NULL;
    int json = 0, rm_by = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a))
            return help(stdout), 0;
        else if (!strcmp(a, "--socket") && i + 1 < argc)
            sock = argv[++i];
        else if (!strcmp(a, "--json"))
            json = 1;
        else if ((!strcmp(a, "--key") || !strcmp(a, "--vgpu")) && i + 1 < argc && sub && !strcmp(sub, "rm") &&
                 !rm_arg) {
            rm_by = a[2] == 'k' ? GPUOS_SHM_RM_KEY : GPUOS_SHM_RM_VGPU;
            rm_arg = argv[++i];
        } else if (a[0] == '-' && a[1])
            return cli_usage("shm", "unknown option \"%s\"", a);
        else if (!sub)
            sub = a;
        else if (!strcmp(sub, "rm") && !rm_arg) {
            rm_by = GPUOS_SHM_RM_ID;
            rm_arg = a;
        } else
            return cli_usage("shm", "unexpected argument \"%s\"", a);
    }
    if (sub && !strcmp(sub, "rm")) {
        if (!rm_arg)
            return cli_usage("shm", "rm needs ID, --key KEY or --vgpu NAME");
        if (json)
            return cli_usage("shm", "rm takes no --json");
        return shm_rm(sock, rm_by, rm_arg);
    }
    if (sub && strcmp(sub, "list") && strcmp(sub, "ls"))
        return cli_usage("shm", "unknown subcommand \"%s\" (list, rm)", sub);
    static gpuos_shm_ds seg[MAX_SEGS];
    static gos_shm_ds ds[MAX_SEGS];
    static const char *names[MAX_SEGS];
    int n = 0;
    if (gpuos_admin_shm_list(sock, seg, MAX_SEGS, &n))
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
        char *s = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
        if (!s)
            return gos_fail(GOS_ENOMEM, "out of memory"), cli_fail();
        puts(s);
        free(s);
        json_decref(root);
        return 0;
    }
    gos_shm_print(stdout, ds, n, names, n);
    return 0;
}
