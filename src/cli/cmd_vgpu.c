/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_vgpu.c: `gpuos vgpu list | set NAME key=value | create NAME key=value... |
 * delete NAME [--force]`, the runtime view that Gdev kept in /proc (paper 002,
 * section 6): shares, utilisation of the last period, memory, clients; shares
 * changeable while clients run; vGPUs made and removed at run time (issue 25:
 * what dist/slurm/'s prolog and epilog use). */
#include "cli/cli.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "gpuos/gpuos.h"
#include "proto/proto.h"
#include "serve/config.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f, "usage: gpuos vgpu list [--socket PATH] [--json FILE|- | --bytes]\n"
               "       gpuos vgpu set NAME key=value... [--socket PATH]\n"
               "       gpuos vgpu create NAME device=D compute=PCT memory=PCT%%|SIZE [copy=PCT]\n"
               "                         [users=U,...] [groups=G,...] [cgroup=PATH] [latency_ms=N]\n"
               "                         [--socket PATH]\n"
               "       gpuos vgpu delete NAME [--force] [--socket PATH]\n"
               "\n"
               "list: every virtual GPU of the daemon: shares (compute, copy, memory), measured\n"
               "      compute and copy utilisation over the last scheduling period, engine time\n"
               "      BAND held idle waiting for it (HELD), memory used, clients, its latency\n"
               "      class (LATENCY: \"batch\", or the latency_ms bound). Memory in\n"
               "      KiB/MiB/GiB (powers of 1024); --bytes prints bytes; --json (raw bytes, as\n"
               "      always; gpuos.vgpu-list/1) adds the cumulative GPU time.\n"
               "set:  change a share at run time; keys: compute=PCT, copy=PCT, memory=PCT%%|SIZE.\n"
               "      Only the daemon's owner or root may. The daemon keeps the change in its\n"
               "      state file: it survives a restart until the configuration file's value\n"
               "      for that key changes. A warning says when a device's shares add up past\n"
               "      100 %%.\n"
               "create: a vGPU at run time, with the keys of a [vgpu NAME] section (copy defaults\n"
               "      to compute; users/groups: names or ids; cgroup: only processes in that\n"
               "      cgroup or below it; latency_ms: the latency class, gpuos.conf(5); device\n"
               "      may be left out on a daemon of one device). Kept in the state file: it\n"
               "      survives a restart and reloads\n"
               "      until the configuration file names it (then the file's section wins).\n"
               "delete: removes a vGPU made by create; refused while clients are attached\n"
               "      unless --force, which ends them (their calls fail naming the deletion).\n"
               "      create and delete: the daemon's owner or root only.\n"
               "\n" CLI_HELP_SOCKET CLI_HELP_JSON("list: the vGPUs")
               "  --bytes          list: memory in bytes\n");
}

/* 1536 -> "1.5 KiB": powers of 1024, one decimal, bytes below 1 KiB. */
static const char *human(uint64_t b, char *out, size_t n)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (b < 1024) {
        snprintf(out, n, "%llu B", (unsigned long long)b);
        return out;
    }
    double x = (double)b / 1024;
    int u = 0;
    while (x >= 1024 && u < 4) {
        x /= 1024;
        u++;
    }
    snprintf(out, n, "%.1f %s", x, unit[u]);
    return out;
}

static int list(const char *sock, const char *json, int bytes)
{
    gpuos_vgpu_facts v[GOS_MAX_VGPUS];
    int n = 0;
    if (gpuos_admin_list(sock, v, GOS_MAX_VGPUS, &n))
        return cli_fail();
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                arr, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:i, s:s, s:s,"
                               " s:f, s:f, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:i, s:I, s:f}",
                               "name", v[i].name, "id", v[i].id, "device", v[i].device, "compute_share",
                               v[i].compute_share, "copy_share", v[i].copy_share, "mem_share", v[i].mem_share,
                               "mem_quota", (json_int_t)v[i].mem_quota, "mem_used", (json_int_t)v[i].mem_used,
                               "compute_util", v[i].compute_util, "copy_util", v[i].copy_util, "compute_ns",
                               (json_int_t)v[i].compute_ns, "copy_ns", (json_int_t)v[i].copy_ns, "tasks",
                               (json_int_t)v[i].tasks, "clients", v[i].clients, "policy", v[i].policy, "queue",
                               v[i].queue, "compute_held", v[i].compute_held, "copy_held", v[i].copy_held,
                               "compute_held_ns", (json_int_t)v[i].compute_held_ns, "copy_held_ns",
                               (json_int_t)v[i].copy_held_ns, "faults", (json_int_t)v[i].faults, "isolation",
                               v[i].isolation, "mem_resident", (json_int_t)v[i].mem_resident, "mem_swapped",
                               (json_int_t)v[i].mem_swapped, "evictions", (json_int_t)v[i].evictions, "restores",
                               (json_int_t)v[i].restores, "latency_ms", v[i].latency_ms, "swap_turns",
                               (json_int_t)v[i].swap_turns, "swap_seconds", (double)v[i].swap_ns * 1e-9));
        json_t *root = json_pack("{s:s, s:o}", "schema", "gpuos.vgpu-list/1", "vgpus", arr);
        int rc = root ? gos_json_save_atomic(root, json) : gos_fail(GOS_ENOMEM, "out of memory");
        json_decref(root);
        return rc ? cli_fail() : 0;
    }
    printf("%-12s %3s %-6s %-4s %7s %7s %7s %8s %8s %8s %12s %12s %12s %12s %6s %8s %7s %6s %-9s %7s\n", "VGPU",
           "DEV", "POLICY", "Q", "COMPUTE", "COPY", "MEM", "UTIL-C", "UTIL-X", "HELD", "MEM-USED", "MEM-QUOTA",
           "RESIDENT", "SWAPPED", "TURNS", "SWAP-S", "CLIENTS", "FAULTS", "ISOLATION", "LATENCY");
    for (int i = 0; i < n; i++) {
        char used[32], quota[32], res[32], swp[32];
        if (bytes) {
            snprintf(used, sizeof used, "%llu", (unsigned long long)v[i].mem_used);
            snprintf(quota, sizeof quota, "%llu", (unsigned long long)v[i].mem_quota);
            snprintf(res, sizeof res, "%llu", (unsigned long long)v[i].mem_resident);
            snprintf(swp, sizeof swp, "%llu", (unsigned long long)v[i].mem_swapped);
        } else {
            human(v[i].mem_used, used, sizeof used);
            human(v[i].mem_quota, quota, sizeof quota);
            human(v[i].mem_resident, res, sizeof res);
            human(v[i].mem_swapped, swp, sizeof swp);
        }
        char lat[16] = "batch";
        if (v[i].latency_ms)
            snprintf(lat, sizeof lat, "%d ms", v[i].latency_ms);
        printf("%-12s %3d %-6s %-4s %6d%% %6d%% %6d%% %7.1f%% %7.1f%% %7.1f%% %12s %12s %12s %12s %6llu %8.2f %7d %6llu "
               "%-9s %7s\n",
               v[i].name, v[i].device, v[i].policy, v[i].queue, v[i].compute_share, v[i].copy_share, v[i].mem_share,
               100 * v[i].compute_util, 100 * v[i].copy_util, 100 * (v[i].compute_held + v[i].copy_held), used,
               quota, res, swp, (unsigned long long)v[i].swap_turns, (double)v[i].swap_ns * 1e-9, v[i].clients,
               (unsigned long long)v[i].faults, v[i].isolation, lat);
    }
    return 0;
}

/* After a set: a warning when the vGPU's device is now oversubscribed (the
 * daemon logs it too). */
static void warn_oversubscribed(const char *sock, const char *name)
{
    gpuos_vgpu_facts v[GOS_MAX_VGPUS];
    int n = 0, dev = -1, comp = 0, copy = 0;
    if (gpuos_admin_list(sock, v, GOS_MAX_VGPUS, &n))
        return;
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            dev = (int)v[i].device;
    for (int i = 0; i < n; i++)
        if ((int)v[i].device == dev) {
            comp += (int)v[i].compute_share;
            copy += (int)v[i].copy_share;
        }
    if (comp > 100 || copy > 100)
        fprintf(stderr,
                "gpuos: warning: device %d: compute shares sum to %d %%, copy shares to %d %%: oversubscribed, "
                "each vGPU gets its share in proportion (less than written)\n",
                dev, comp, copy);
}

/* A NAME or key=value argument of subcommand sub holding a control character
 * is refused, one line (issue 44.7: "users=1000\ncompute=100" added a key). */
static int arg_refused(const char *sub, const char *a)
{
    char what[48];
    snprintf(what, sizeof what, "%s: argument", sub);
    return gos_serve_text_check(what, a) ? cli_usage("vgpu", "%s", gos_last_error()) : 0;
}

/* The arguments of create/delete (the subcommand at argv[at]): --socket, --force
 * (delete), NAME, key=value (create). */
static int sub_args(int argc, char **argv, int at, int is_create, const char **sock, const char **name,
                    char *keys, size_t cap, int *force)
{
    size_t w = 0;
    keys[0] = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i == at)
            continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help(stdout);
            return 1;
        } else if (!strcmp(a, "--socket") && i + 1 < argc) {
            *sock = argv[++i];
        } else if (!strncmp(a, "--socket=", 9)) {
            *sock = a + 9;
        } else if (!is_create && !strcmp(a, "--force")) {
            *force = 1;
        } else if (a[0] == '-') {
            return cli_usage("vgpu", "unknown option \"%s\"", a);
        } else if (arg_refused(argv[at], a)) {
            return 2;
        } else if (!*name && !strchr(a, '=')) {
            *name = a;
        } else if (is_create && strchr(a, '=') && strchr(a, '=') != a && strchr(a, '=')[1]) {
            int n = snprintf(keys + w, cap - w, "%s\n", a);
            if (n < 0 || (size_t)n >= cap - w)
                return cli_usage("vgpu", "create: keys too long");
            w += (size_t)n;
        } else {
            return cli_usage("vgpu", "%s: unexpected argument \"%s\"", argv[at], a);
        }
    }
    if (!*name)
        return cli_usage("vgpu", "%s needs NAME", argv[at]);
    if (is_create && !w)
        return cli_usage("vgpu", "create needs NAME device=D compute=PCT memory=PCT%%|SIZE");
    return 0;
}

static int vgpu_create(int argc, char **argv, int at)
{
    const char *sock = NULL, *name = NULL;
    char keys[GOS_ADMIN_KEYS_MAX];
    int force = 0, rc = sub_args(argc, argv, at, 1, &sock, &name, keys, sizeof keys, &force);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (gpuos_admin_create(sock, name, keys))
        return cli_fail();
    warn_oversubscribed(sock, name);
    return 0;
}

static int vgpu_delete(int argc, char **argv, int at)
{
    const char *sock = NULL, *name = NULL;
    char keys[8];
    int force = 0, rc = sub_args(argc, argv, at, 0, &sock, &name, keys, sizeof keys, &force);
    if (rc)
        return rc == 1 ? 0 : rc;
    return gpuos_admin_delete(sock, name, force) ? cli_fail() : 0;
}

int cmd_vgpu(int argc, char **argv)
{
    int at = 1;
    while (at < argc && (!strcmp(argv[at], "--socket") || !strncmp(argv[at], "--socket=", 9)))
        at += argv[at][8] == '=' ? 1 : 2;
    if (at < argc && (!strcmp(argv[at], "create") || !strcmp(argv[at], "delete")))
        return argv[at][0] == 'c' ? vgpu_create(argc, argv, at) : vgpu_delete(argc, argv, at);

    const char *sock = NULL, *sub = NULL, *name = NULL, *json = NULL;
    const char *kv[16];
    int nkv = 0, bytes = 0;
    enum { O_BYTES = CLI_FIRST_OWN };
    static const struct option opts[] = {CLI_OPT_HELP, CLI_OPT_SOCKET, CLI_OPT_JSON,
                                         {"bytes", no_argument, NULL, O_BYTES}, CLI_OPT_END};
    cli_args a = CLI_ARGS("vgpu", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': help(stdout); return 0;
        case CLI_SOCKET: sock = optarg; break;
        case CLI_JSON: json = optarg; break;
        case O_BYTES: bytes = 1; break;
        case CLI_STOP: return a.rc;
        }
    sock = cli_socket(sock);
    for (int i = optind; i < argc; i++) {
        const char *arg = argv[i];
        if (arg_refused(sub ? sub : "vgpu", arg))
            return 2;
        if (!sub)
            sub = arg;
        else if (!name && !strchr(arg, '='))
            name = arg;
        else if (strchr(arg, '=') && nkv < 16)
            kv[nkv++] = arg;
        else
            return cli_usage("vgpu", "unexpected argument \"%s\"", arg);
    }
    if (!sub || !strcmp(sub, "list") || !strcmp(sub, "ls")) {
        if (name || nkv)
            return cli_usage("vgpu", "list takes no arguments");
        if (json && bytes)
            return cli_usage("vgpu", "--json is in bytes already: --bytes is for the table");
        return list(sock, json, bytes);
    }
    if (strcmp(sub, "set"))
        return cli_usage("vgpu", "unknown subcommand \"%s\" (list, set, create, delete)", sub);
    if (!name || !nkv)
        return cli_usage("vgpu", "set needs NAME key=value");
    for (int i = 0; i < nkv; i++) {
        char key[64];
        const char *eq = strchr(kv[i], '=');
        if ((size_t)(eq - kv[i]) >= sizeof key || eq == kv[i] || !eq[1])
            return cli_usage("vgpu", "bad key=value \"%s\"", kv[i]);
        memcpy(key, kv[i], (size_t)(eq - kv[i]));
        key[eq - kv[i]] = 0;
        if (gpuos_admin_set(sock, name, key, eq + 1))
            return cli_fail();
    }
    warn_oversubscribed(sock, name);
    return 0;
}
