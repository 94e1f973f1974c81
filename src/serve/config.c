/* config.c: parsing the `gpuos serve` configuration file (config.h). */
#include "serve/config.h"

#include "common/status.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || x < 0)
        return -1;
    uint64_t m = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': m = 1ull << 10; end++; break;
    case 'M': m = 1ull << 20; end++; break;
    case 'G': m = 1ull << 30; end++; break;
    case 'T': m = 1ull << 40; end++; break;
    default: break;
    }
    if (toupper((unsigned char)*end) == 'B')
        end++;
    if (*end || x * (double)m > 1.8e19)
        return -1;
    *out = (uint64_t)(x * (double)m);
    return 0;
}

static int parse_int(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 0);
    if (end == v || *end || errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

int gos_serve_parse_mem(const char *v, double *pct, uint64_t *bytes)
{
    size_t n = strlen(v);
    *pct = 0;
    *bytes = 0;
    if (n > 1 && v[n - 1] == '%') {
        char *end;
        double x = strtod(v, &end);
        if (end != v + n - 1 || !(x > 0 && x <= 100))
            return gos_fail(GOS_EINVAL, "memory share \"%s\" is not a percentage in (0, 100]", v);
        *pct = x;
        return GOS_OK;
    }
    if (parse_u64(v, bytes) || *bytes == 0)
        return gos_fail(GOS_EINVAL, "memory share \"%s\" is neither N%% nor a size", v);
    return GOS_OK;
}

#define BAD(...) (gos_fail(GOS_EINVAL, "%s:%d: " FIRST(__VA_ARGS__), what, line REST(__VA_ARGS__)))
#define FIRST(a, ...) a
#define REST(a, ...) , ##__VA_ARGS__

int gos_serve_config_parse(const char *text, const char *what, struct gos_serve_config *out)
{
    struct gos_serve_config c;
    memset(&c, 0, sizeof c);
    c.socket_mode = 0660;
    c.chunk = 0; /* 0: the client library's measured default */
    c.depth = 0;
    c.spin_us = -1; /* by the number of CPUs (server.c) */
    int line = 0, sect = 0, idx = -1; /* sect: 0 global, 1 device, 2 vgpu */
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = GOS_OK;
    (void)save;
    for (char *ln = copy, *nx; ln; ln = nx) {
        nx = strchr(ln, '\n');
        if (nx)
            *nx++ = 0;
        line++;
        char *hash = strchr(ln, '#');
        if (hash)
            *hash = 0;
        char *s = trim(ln);
        if (!*s)
            continue;
        if (*s == '[') {
            char *e = strchr(s, ']');
            char kind[16], label[GOS_NAME_MAX + 1];
            if (!e || e[1]) {
                rc = BAD("section header without ']'");
                goto out;
            }
            *e = 0;
            if (sscanf(s + 1, "%15s %64s", kind, label) != 2) {
                rc = BAD("section must be [device LABEL] or [vgpu NAME]");
                goto out;
            }
            if (!strcmp(kind, "device")) {
                if (c.n_devs == GOS_SERVE_MAX_DEVICES) {
                    rc = BAD("more than %d devices", GOS_SERVE_MAX_DEVICES);
                    goto out;
                }
                for (int i = 0; i < c.n_devs; i++)
                    if (!strcmp(c.devs[i].label, label)) {
                        rc = BAD("device %s defined twice", label);
                        goto out;
                    }
                idx = c.n_devs++;
                struct gos_serve_devcfg *d = &c.devs[idx];
                if (strlen(label) >= sizeof d->label) {
                    rc = BAD("device label too long");
                    goto out;
                }
                memcpy(d->label, label, strlen(label) + 1);
                long o;
                d->ordinal = parse_int(label, 0, 63, &o) ? -1 : (int)o;
                strcpy(d->policy, "band");
                strcpy(d->queue, "mrq");
                d->period_ns = 30000000ull;
                d->band_wait_ns = 500000ull;
                d->band_charge_hold = 1;
                sect = 1;
            } else if (!strcmp(kind, "vgpu")) {
                if (c.n_vgpus == GOS_MAX_VGPUS) {
                    rc = BAD("more than %d vGPUs", GOS_MAX_VGPUS);
                    goto out;
                }
                if (strlen(label) >= GOS_NAME_MAX) {
                    rc = BAD("vGPU name too long");
                    goto out;
                }
                for (int i = 0; i < c.n_vgpus; i++)
                    if (!strcmp(c.vgpus[i].name, label)) {
                        rc = BAD("vGPU %s defined twice", label);
                        goto out;
                    }
                idx = c.n_vgpus++;
                struct gos_serve_vgpucfg *v = &c.vgpus[idx];
                memcpy(v->name, label, strlen(label) + 1);
                v->device = c.n_devs ? c.n_devs - 1 : -1;
                v->compute = v->copy = 0;
                v->mem_pct = 0;
                sect = 2;
            } else {
                rc = BAD("unknown section [%s]", kind);
                goto out;
            }
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = BAD("expected key = value");
            goto out;
        }
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        long x;
        uint64_t u;
        char ewhy[256];
        int ext = gos_serve_config_ext_key(&c, sect, idx, k, v, ewhy, sizeof ewhy);
        if (ext < 0) {
            rc = BAD("%s", ewhy);
            goto out;
        }
        if (ext > 0)
            continue;
        if (sect == 0) {
            if (!strcmp(k, "socket")) {
                if (strlen(v) >= sizeof c.socket) {
                    rc = BAD("socket path longer than %zu", sizeof c.socket - 1);
                    goto out;
                }
                strcpy(c.socket, v);
            } else if (!strcmp(k, "socket_mode")) {
                char *end;
                unsigned long m = strtoul(v, &end, 8);
                if (*end || m > 0777) {
                    rc = BAD("socket_mode must be octal like 0660");
                    goto out;
                }
                c.socket_mode = (unsigned)m;
            } else if (!strcmp(k, "chunk")) {
                if (parse_u64(v, &u) || u < 4096 || u > (1ull << 30)) {
                    rc = BAD("chunk must be a size between 4K and 1G");
                    goto out;
                }
                c.chunk = u;
            } else if (!strcmp(k, "depth")) {
                if (parse_int(v, 1, 16, &x)) {
                    rc = BAD("depth must be 1..16");
                    goto out;
                }
                c.depth = (int)x;
            } else if (!strcmp(k, "spin_us")) {
                if (parse_int(v, 0, 100000, &x)) {
                    rc = BAD("spin_us must be 0..100000");
                    goto out;
                }
                c.spin_us = (int)x;
            } else {
                rc = BAD("unknown key \"%s\"", k);
                goto out;
            }
        } else if (sect == 1) {
            struct gos_serve_devcfg *d = &c.devs[idx];
            if (!strcmp(k, "sim")) {
                if (strlen(v) >= sizeof d->sim) {
                    rc = BAD("sim path too long");
                    goto out;
                }
                strcpy(d->sim, v);
            } else if (!strcmp(k, "policy")) {
                if (strcmp(v, "fifo") && strcmp(v, "credit") && strcmp(v, "band")) {
                    rc = BAD("policy must be fifo, credit or band");
                    goto out;
                }
                strcpy(d->policy, v);
            } else if (!strcmp(k, "queue")) {
                if (strcmp(v, "mrq") && strcmp(v, "sdq")) {
                    rc = BAD("queue must be mrq or sdq");
                    goto out;
                }
                strcpy(d->queue, v);
            } else if (!strcmp(k, "period_ms")) {
                if (parse_int(v, 1, 10000, &x)) {
                    rc = BAD("period_ms must be 1..10000");
                    goto out;
                }
                d->period_ns = (uint64_t)x * 1000000ull;
            } else if (!strcmp(k, "band_wait_us")) {
                if (parse_int(v, 0, 1000000, &x)) {
                    rc = BAD("band_wait_us must be 0..1000000");
                    goto out;
                }
                d->band_wait_ns = (uint64_t)x * 1000ull;
            } else if (!strcmp(k, "band_charge_hold")) {
                if (parse_int(v, 0, 1, &x)) {
                    rc = BAD("band_charge_hold must be 0 or 1");
                    goto out;
                }
                d->band_charge_hold = (int)x;
            } else {
                rc = BAD("unknown device key \"%s\"", k);
                goto out;
            }
        } else {
            struct gos_serve_vgpucfg *g = &c.vgpus[idx];
            if (!strcmp(k, "device")) {
                g->device = -1;
                for (int i = 0; i < c.n_devs; i++)
                    if (!strcmp(c.devs[i].label, v))
                        g->device = i;
                if (g->device < 0) {
                    rc = BAD("no [device %s] above", v);
                    goto out;
                }
            } else if (!strcmp(k, "compute") || !strcmp(k, "copy")) {
                if (parse_int(v, 1, 100, &x)) {
                    rc = BAD("%s share must be 1..100 (percent)", k);
                    goto out;
                }
                if (!strcmp(k, "compute"))
                    g->compute = (int)x;
                else
                    g->copy = (int)x;
            } else if (!strcmp(k, "memory")) {
                if (gos_serve_parse_mem(v, &g->mem_pct, &g->mem_bytes)) {
                    char why[256];
                    snprintf(why, sizeof why, "%s", gos_last_error());
                    rc = BAD("%s", why);
                    goto out;
                }
            } else {
                rc = BAD("unknown vgpu key \"%s\"", k);
                goto out;
            }
        }
    }
    line = 0;
    if (c.n_vgpus == 0) {
        rc = BAD("no [vgpu NAME] section");
        goto out;
    }
    for (int i = 0; i < c.n_vgpus; i++) {
        struct gos_serve_vgpucfg *g = &c.vgpus[i];
        if (g->device < 0) {
            rc = gos_fail(GOS_EINVAL, "%s: vGPU %s has no device (add a [device] section above it)", what, g->name);
            goto out;
        }
        if (!g->compute)
            g->compute = 100 / c.n_vgpus ? 100 / c.n_vgpus : 1;
        if (!g->copy)
            g->copy = g->compute;
        if (!g->mem_pct && !g->mem_bytes)
            g->mem_pct = 100.0 / c.n_vgpus;
    }
    *out = c;
out:
    free(copy);
    return rc;
}

int gos_serve_config_load(const char *path, struct gos_serve_config *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gos_fail(GOS_EIO, "%s: %s", path, strerror(errno));
    char *text = malloc(1 << 20);
    if (!text) {
        fclose(f);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[n] = 0;
    int rc = gos_serve_config_parse(text, path, out);
    free(text);
    return rc;
}
