/* SPDX-License-Identifier: Apache-2.0 */
/* devsel.c: which devices a command runs on (cli.h: cli_select_devices), as
 * nvidia-smi's -i selects them: an ordinal, a comma-separated list, "all", a UUID
 * (or a unique prefix of one) or a PCI bus id; --sim A,B,... simulates one GPU per
 * chip. */
#include "cli/cli.h"
#include "common/status.h"
#include "device/p2p_ops.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_number(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* PCI bus ids compare without the domain's leading zeros and case:
 * "00000000:17:00.0" = "0000:17:00.0" = "17:00.0". */
static int parse_pci(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
    char tail;
    if (sscanf(s, "%x:%x:%x.%x%c", dom, bus, dev, fn, &tail) == 4)
        return 1;
    *dom = 0;
    return sscanf(s, "%x:%x.%x%c", bus, dev, fn, &tail) == 3;
}

static int same_pci(const char *a, const char *b)
{
    unsigned d1, b1, v1, f1, d2, b2, v2, f2;
    if (!strncmp(a, "sim:", 4) || !strncmp(b, "sim:", 4))
        return !strcmp(a, b);
    return parse_pci(a, &d1, &b1, &v1, &f1) && parse_pci(b, &d2, &b2, &v2, &f2) && d1 == d2 && b1 == b2 &&
           v1 == v2 && f1 == f2;
}

static int add(cli_devices *s, const char *sim, int ordinal)
{
    for (int i = 0; i < s->n; i++)
        if (s->ordinal[i] == ordinal && (s->sim[i] == NULL) == (sim == NULL) && ordinal >= 0)
            return GOS_OK; /* named twice */
    if (s->n == CLI_MAX_DEVICES)
        return gos_fail(GOS_EINVAL, "more than %d devices selected", CLI_MAX_DEVICES);
    s->sim[s->n] = sim;
    s->ordinal[s->n++] = ordinal;
    return GOS_OK;
}

/* The devices whose UUID starts with `id` or whose PCI bus id is `id`. */
static int add_matching(cli_devices *s, const cli_devices *pool, const char *id)
{
    int hit = -1;
    for (int i = 0; i < pool->n; i++) {
        gos_device *d;
        int rc = cli_open_selected(pool, i, &d);
        if (rc)
            return rc;
        int match = !strncasecmp(d->info.uuid, id, strlen(id)) || same_pci(d->info.pci_bus_id, id);
        int exact = !strcasecmp(d->info.uuid, id);
        gos_device_close(d);
        if (match && exact) {
            hit = i;
            break;
        }
        if (match) {
            if (hit >= 0)
                return gos_fail(GOS_EINVAL, "--device %s: matches more than one GPU", id);
            hit = i;
        }
    }
    if (hit < 0)
        return gos_fail(GOS_ENODEV, "--device %s: no GPU with this UUID or PCI bus id", id);
    return add(s, pool->sim[hit], pool->ordinal[hit]);
}

/* Each item of a --device list has one of the selector forms, before any
 * device is looked at (a typo says so, not "no GPU"). */
static int selector_ok(const char *device)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", device);
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!is_number(t) && strcmp(t, "all") && strncasecmp(t, "GPU-", 4) && strncasecmp(t, "MIG-", 4) &&
            strncasecmp(t, "SIM-", 4) && !strchr(t, ':'))
            return gos_fail(GOS_EINVAL,
                            "--device \"%s\": not an ordinal, 'all', a UUID (GPU-...) or a PCI bus id (0000:17:00.0)", t);
    return *device ? GOS_OK : gos_fail(GOS_EINVAL, "--device needs a GPU selector");
}

int cli_select_devices(const char *device, const char *sim, cli_devices *out)
{
    memset(out, 0, sizeof *out);
    if (device && selector_ok(device))
        return GOS_EINVAL;
    cli_devices pool;
    memset(&pool, 0, sizeof pool);
    if (sim) {
        if (strlen(sim) >= sizeof out->buf)
            return gos_fail(GOS_EINVAL, "--sim: list too long");
        strcpy(pool.buf, sim);
        int n = 0;
        for (char *save, *t = strtok_r(pool.buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (n < CLI_MAX_DEVICES)
                pool.sim[n] = t, pool.ordinal[n] = n, n++;
        if (!n)
            return gos_fail(GOS_EINVAL, "--sim needs a chip file or 'default'");
        pool.n = n;
        if (n == 1)
            pool.ordinal[0] = -1; /* a lone simulated GPU keeps the chip's own UUID */
    } else {
        if (!device) /* GPU 0, or the simulated H200 when there is no GPU */
            return add(out, NULL, -1);
        int n = gos_cuda_device_count();
        if (n == 0 && (!strcmp(device, "all") || !is_number(device)))
            return gos_fail(GOS_ENODEV, "%s (--sim default,default simulates two GPUs)", gos_last_error());
        for (int i = 0; i < n && i < CLI_MAX_DEVICES; i++)
            pool.sim[i] = NULL, pool.ordinal[i] = i;
        pool.n = n < CLI_MAX_DEVICES ? n : CLI_MAX_DEVICES;
    }
    if (!device || !strcmp(device, "all")) {
        *out = pool;
        if (sim) /* the pointers point into pool's buffer: keep them in out's */
            for (int i = 0; i < out->n; i++)
                out->sim[i] = out->buf + (pool.sim[i] - pool.buf);
        return GOS_OK;
    }
    char list[512];
    if (strlen(device) >= sizeof list)
        return gos_fail(GOS_EINVAL, "--device: list too long");
    strcpy(list, device);
    int rc = GOS_OK;
    for (char *save, *t = strtok_r(list, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (is_number(t)) {
            long k = strtol(t, NULL, 10);
            if (sim)
                rc = k < pool.n ? add(out, pool.sim[k], pool.ordinal[k])
                                : gos_fail(GOS_ENODEV, "--device %ld: only %d simulated GPUs", k, pool.n);
            else
                rc = k < 64 ? add(out, NULL, (int)k) : gos_fail(GOS_EINVAL, "--device %ld: at most 64 GPUs", k);
        } else
            rc = add_matching(out, &pool, t);
    }
    /* simulated entries point into pool.buf: move them into out->buf */
    if (sim) {
        memcpy(out->buf, pool.buf, sizeof out->buf);
        for (int i = 0; i < out->n; i++)
            out->sim[i] = out->buf + (out->sim[i] - pool.buf);
    }
    return rc;
}

int cli_open_selected(const cli_devices *s, int i, gos_device **out)
{
    if (i < 0 || i >= s->n)
        return gos_fail(GOS_EINVAL, "no device %d selected", i);
    if (s->sim[i] && s->ordinal[i] >= 0)
        return gos_sim_open_indexed(s->sim[i], s->ordinal[i], out);
    return cli_open_device(s->sim[i], s->sim[i] ? -1 : s->ordinal[i], out);
}
