/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c: what the commands share (cli.h): messages, the option grammar, values. */
#include "cli/cli.h"
#include "common/env.h"

#include "common/status.h"
#include "gpuos/gpuos.h"
#include "proto/proto.h"
#include "serve/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

int cli_fail(void)
{
    fprintf(stderr, "gpuos: %s\n", gos_last_error()[0] ? gos_last_error() : "failed");
    return 1;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpuos %s: %s; see gpuos %s --help\n", cmd, msg, cmd);
    return 2;
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
    uint64_t v;
    if (!s || gos_serve_parse_size(s, lo, hi, &v))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_duration(const char *s, long *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10), m = 1;
    switch (*end) {
    case 0: case 's': break;
    case 'm': m = 60; break;
    case 'h': m = 3600; break;
    case 'd': m = 86400; break;
    default: return -1;
    }
    if (errno || (*end && end[1]) || v > 3650L * 86400 / m)
        return -1;
    *out = v * m;
    return 0;
}

int cli_parse_expiry(const char *cmd, const char *s, long *out)
{
    if (!cli_parse_duration(s, out))
        return 0;
    cli_usage(cmd, "--nfd-expiry wants a duration such as 24h, 7d or 0 (none), not \"%s\"", s);
    return -1;
}

_Static_assert(sizeof GOS_CLI_DEFAULT_SOCKET == sizeof GOS_DEFAULT_SOCKET, "cli.h's default socket is proto.h's");

const char *cli_socket(const char *opt)
{
    const char *e = gos_env(GOS_ENV_SOCKET);
    return opt ? opt : e && *e ? e : GOS_DEFAULT_SOCKET;
}

int cli_served_vgpus(void)
{
    gpuos_vgpu_facts v[GOS_MAX_VGPUS];
    int n = 0;
    return gpuos_admin_list(cli_socket(NULL), v, GOS_MAX_VGPUS, &n) ? -1 : n;
}

int cli_next(cli_args *a)
{
    const struct option *o = a->opts;
    int in_order = o->val == CLI_IN_ORDER;
    if (!a->started) {
        a->started = 1;
        optind = 0; /* glibc: a fresh scan (commands call each other: report runs probe) */
        size_t k = 0;
        a->shorts[k++] = in_order ? '+' : ':';
        if (in_order)
            a->shorts[k++] = ':';
        for (const struct option *p = o; p->name && k + 3 < sizeof a->shorts; p++)
            if (p->val > 0 && p->val < 128) {
                a->shorts[k++] = (char)p->val;
                if (p->has_arg == required_argument)
                    a->shorts[k++] = ':';
            }
        a->shorts[k] = 0;
        if (a->argc > 1 && !strcmp(a->argv[1], "--options")) { /* the table, for the tests */
            for (const struct option *p = o; p->name; p++)
                if (p->val != CLI_IN_ORDER)
                    printf("--%s\n", p->name);
            a->rc = 0;
            return CLI_STOP;
        }
    }
    opterr = 0;
    int c = getopt_long(a->argc, a->argv, a->shorts, in_order ? o + 1 : o, NULL);
    if (c == '?' || c == ':') {
        const char *arg = optind > 0 && optind <= a->argc ? a->argv[optind - 1] : "?";
        char shortopt[3] = {'-', (char)optopt, 0};
        if (strncmp(arg, "--", 2) && optopt > 0 && optopt < 128)
            arg = shortopt;
        if (c == ':')
            a->rc = cli_usage(a->cmd, "%s needs a value", arg);
        else if (!strncmp(arg, "--", 2) && strchr(arg, '=')) {
            const char *eq = strchr(arg, '=');
            int known = 0;
            for (const struct option *p = o; p->name; p++)
                known |= strlen(p->name) == (size_t)(eq - arg - 2) && !strncmp(p->name, arg + 2, (size_t)(eq - arg - 2));
            a->rc = known ? cli_usage(a->cmd, "%.*s takes no value", (int)(eq - arg), arg)
                          : cli_usage(a->cmd, "unknown option %s", arg);
        } else
            a->rc = cli_usage(a->cmd, "unknown option %s", arg);
        return CLI_STOP;
    }
    return c;
}

int cli_open_device(const char *sim, int ordinal, gos_device **out)
{
    gos_device_spec spec = {.sim = sim, .ordinal = ordinal};
    if (sim || ordinal >= 0)
        return gos_device_open(&spec, out);
    spec.ordinal = 0;
    int rc = gos_device_open(&spec, out);
    if (rc == GOS_OK || rc != GOS_ENODEV)
        return rc;
    fprintf(stderr, "gpuos: %s; using the built-in simulated H200 instead\n", gos_last_error());
    spec.sim = "default";
    return gos_device_open(&spec, out);
}


int cli_open_one(const char *device, const char *sim, gos_device **out)
{
    if (!device && (!sim || !strchr(sim, ',')))
        return cli_open_device(sim, -1, out);
    cli_devices sel;
    int rc = cli_select_devices(device, sim, &sel);
    if (rc)
        return rc;
    if (sel.n != 1)
        return gos_fail(GOS_EINVAL, "--device %s selects %d GPUs: this command takes one", device ? device : sim, sel.n);
    return cli_open_selected(&sel, 0, out);
}

int cli_find_libdir(const char *opt, char *out, size_t len)
{
    char exe[PATH_MAX], cand[PATH_MAX + 32];
    const char *env = gos_env(GOS_ENV_LIBDIR);
    const char *given = opt ? opt : env && *env ? env : NULL;
    if (given) {
        snprintf(cand, sizeof cand, "%s/libcuda.so.1", given);
        if (access(cand, R_OK))
            return gos_fail(GOS_ENODEV, "no gpuos libcuda.so.1 in %s (--libdir or $GPUOS_LIBDIR)", given);
        if (!realpath(given, out))
            return gos_fail(GOS_EINVAL, "%s: %s", given, strerror(errno));
        return GOS_OK;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return gos_fail(GOS_EIO, "cannot find the gpuos binary: %s", strerror(errno));
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    static const char *rel[] = {"shim", "../lib/gpuos"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s/libcuda.so.1", exe, rel[i]);
        if (!access(cand, R_OK)) {
            snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
            if (realpath(cand, out) && strlen(out) < len)
                return GOS_OK;
        }
    }
    return gos_fail(GOS_ENODEV,
                    "gpuos's libcuda.so.1 is neither in %s/shim (the build tree) nor in %s/../lib/gpuos (make "
                    "install); give --libdir (a build without cuda.h has none)",
                    exe, exe);
}
