#include "cli/cli.h"

#include "common/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cli_parse_size(const char *s, unsigned long long *out)
{
    if (!s || !*s || *s == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 0: break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b' || (*end == 'i' && end[1] == 'B' && end++ && end++))
        end += (*end == 'B' || *end == 'b');
    if (*end)
        return -1;
    if (shift && v > (~0ULL >> shift))
        return -1;
    *out = v << shift;
    return 0;
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

int cli_is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }
