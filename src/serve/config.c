/* SPDX-License-Identifier: Apache-2.0 */
/* config.c: parsing the `gpuos serve` configuration file (config.h).
 * Process: the daemon (gpuos serve). */
#include "serve/config.h"

#include "common/status.h"
#include "vmem/segtable.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *gos_serve_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

int gos_serve_text_check(const char *what, const char *s)
{
    const char *bad = s;
    while (*bad && (unsigned char)*bad >= 0x20 && *bad != 0x7f)
        bad++;
    if (!*bad)
        return GOS_OK;
    char shown[160];
    size_t w = 0;
    const char *p = s;
    for (; *p && w + 8 < sizeof shown; p++) {
        unsigned char c = (unsigned char)*p;
        const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\\' ? "\\\\" : NULL;
        if (e)
            w += (size_t)snprintf(shown + w, sizeof shown - w, "%s", e);
        else if (c < 0x20 || c == 0x7f)
            w += (size_t)snprintf(shown + w, sizeof shown - w, "\\x%02x", c);
        else
            shown[w++] = (char)c;
    }
    shown[w] = 0;
    return gos_fail(GOS_EINVAL, "%s \"%s%s\": control character 0x%02x at byte %d refused (a newline would add keys)",
                    what, shown, *p ? "..." : "", (unsigned char)*bad, (int)(bad - s));
}

/* Validation, one function per kind of value (issue 15.6): each takes the text
 * and the allowed range and accepts only what it can honour exactly. */

/* Sizes: digits with an optional fraction, an optional K/M/G/T and B. No sign,
 * no exponent, no "nan"/"inf", nothing that overflows 64 bits. */
int gos_serve_parse_size(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *p = v;
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
        return gos_fail(GOS_EINVAL, "\"%s\" is not a size (digits with K, M, G or T)", v);
    while (isdigit((unsigned char)*p) || *p == '.')
        p++;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end != p || errno == ERANGE || !isfinite(x) || x < 0)
        return gos_fail(GOS_EINVAL, "\"%s\" is not a size", v);
    double m = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': m = 0x1p10; end++; break;
    case 'M': m = 0x1p20; end++; break;
    case 'G': m = 0x1p30; end++; break;
    case 'T': m = 0x1p40; end++; break;
    default: break;
    }
    if (toupper((unsigned char)*end) == 'B')
        end++;
    if (*end)
        return gos_fail(GOS_EINVAL, "\"%s\" is not a size (unknown suffix \"%s\")", v, end);
    double b = x * m;
    if (!(b < 0x1p64) || (uint64_t)b < lo || (uint64_t)b > hi)
        return gos_fail(GOS_EINVAL, "size %s is outside %llu..%llu bytes", v, (unsigned long long)lo,
                        (unsigned long long)hi);
    *out = (uint64_t)b;
    return GOS_OK;
}

/* Integers: decimal, within [lo, hi]. */
static int parse_int(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

/* A key of two words: *out 0 for the first, 1 for the second; -1 otherwise. */
static int parse_two(const char *v, const char *w0, const char *w1, int *out)
{
    if (strcmp(v, w0) && strcmp(v, w1))
        return -1;
    *out = !strcmp(v, w1);
    return 0;
}

/* Percentages of a share: a finite number in (0, 100]. */
static int parse_pct(const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || end[strspn(end, "%")] || strlen(end) > 1 || errno || !isfinite(x) || !(x > 0 && x <= 100))
        return -1;
    *out = x;
    return 0;
}

/* Octal permission bits, non-empty. */
static int parse_mode(const char *v, unsigned *out)
{
    char *end;
    if (!*v || strspn(v, "01234567") != strlen(v))
        return -1;
    errno = 0;
    unsigned long m = strtoul(v, &end, 8);
    if (*end || errno || m > 0777)
        return -1;
    *out = (unsigned)m;
    return 0;
}

int gos_serve_parse_mem(const char *v, double *pct, uint64_t *bytes)
{
    size_t n = strlen(v);
    *pct = 0;
    *bytes = 0;
    if (n > 1 && v[n - 1] == '%') {
        if (parse_pct(v, pct))
            return gos_fail(GOS_EINVAL, "memory share \"%s\" is not a percentage in (0, 100]", v);
        return GOS_OK;
    }
    if (gos_serve_parse_size(v, 1, UINT64_MAX, bytes))
        return gos_fail(GOS_EINVAL, "memory share \"%s\" is neither N%% nor a size of at least 1 byte", v);
    return GOS_OK;
}

uint64_t gos_serve_mem_quota(double pct, uint64_t bytes, uint64_t mem_total)
{
    if (pct > 0) {
        double q = pct / 100.0 * (double)mem_total;
        return q >= (double)mem_total ? mem_total : (uint64_t)q;
    }
    return bytes;
}

int gos_serve_config_check_memory(const struct gos_serve_config *c, const uint64_t *mem_total, char *warn,
                                  size_t warn_cap)
{
    if (warn && warn_cap)
        warn[0] = 0;
    for (int i = 0; i < c->n_vgpus; i++) {
        const struct gos_serve_vgpucfg *g = &c->vgpus[i];
        uint64_t total = mem_total[g->device];
        if (g->mem_bytes > total)
            return gos_fail(GOS_EINVAL, "%s:%d: vGPU %s: memory of %llu bytes is larger than device %s (%llu bytes)",
                            c->path, g->mem_line, g->name, (unsigned long long)g->mem_bytes, c->devs[g->device].label,
                            (unsigned long long)total);
    }
    for (int d = 0; d < c->n_devs; d++) {
        double sum = 0;
        int last = -1;
        for (int i = 0; i < c->n_vgpus; i++)
            if (c->vgpus[i].device == d) {
                const struct gos_serve_vgpucfg *g = &c->vgpus[i];
                sum += g->mem_pct > 0 ? g->mem_pct : 100.0 * (double)g->mem_bytes / (double)mem_total[d];
                last = i;
            }
        if (sum > 100.0 + 1e-9 && last >= 0) {
            if (!c->memory_oversubscribe)
                return gos_fail(GOS_EINVAL, "%s:%d: memory shares of device %s sum to %.1f %% (over 100 %%; set "
                                "memory_oversubscribe = 1 to allow it)", c->path, c->vgpus[last].mem_line
                                ? c->vgpus[last].mem_line : c->vgpus[last].line, c->devs[d].label, sum);
            if (warn && warn_cap)
                snprintf(warn, warn_cap, "memory shares of device %s sum to %.1f %%: oversubscribed "
                         "(memory_oversubscribe = 1); allocations fail when the device is full", c->devs[d].label, sum);
        }
    }
    return GOS_OK;
}

/* The turn keys of swapping (issue 42): 1 for a key it does not know. */
static int swap_key(struct gos_serve_devcfg *d, const char *k, const char *v)
{
    long x;
    if (!strcmp(k, "swap_turn_ms")) {
        if (!strcmp(v, "auto"))
            d->swap_turn_ms = 0; /* by the measured swap time (serve/swap.c) */
        else if (parse_int(v, 10, 3600000, &x))
            return gos_fail(GOS_EINVAL, "swap_turn_ms must be auto or 10..3600000");
        else
            d->swap_turn_ms = (uint64_t)x;
    } else if (!strcmp(k, "swap_wait_s")) {
        if (parse_int(v, 1, 86400, &x))
            return gos_fail(GOS_EINVAL, "swap_wait_s must be 1..86400");
        d->swap_wait_s = (uint32_t)x;
    } else if (!strcmp(k, "swap_host_wait_s")) {
        if (parse_int(v, 0, 3600, &x))
            return gos_fail(GOS_EINVAL, "swap_host_wait_s must be 0..3600 (and below the clients' GPUOS_TIMEOUT_MS)");
        d->swap_host_wait_s = (uint32_t)x;
    } else if (!strcmp(k, "swap_helper")) {
        if (parse_int(v, 0, 1, &x))
            return gos_fail(GOS_EINVAL, "swap_helper must be 0 or 1");
        d->swap_helper = (int)x;
    } else if (!strcmp(k, "swap_prefault")) {
        if (!strcmp(v, "auto"))
            d->swap_prefault = GOS_SWAP_PREFAULT_AUTO;
        else if (parse_int(v, 0, 1, &x))
            return gos_fail(GOS_EINVAL, "swap_prefault must be 0, 1 or auto");
        else
            d->swap_prefault = (int)x;
    } else {
        return 1;
    }
    return GOS_OK;
}

#define BAD(...) (gos_fail(GOS_EINVAL, "%s:%d: " FIRST(__VA_ARGS__), what, line REST(__VA_ARGS__)))
#define FIRST(a, ...) a
#define REST(a, ...) , ##__VA_ARGS__

/* The defaults before the first line is read. */
static void config_defaults(struct gos_serve_config *c, const char *what)
{
    memset(c, 0, sizeof *c);
    c->socket_mode = 0660;
    c->socket_gid = -1;
    c->chunk = 0; /* 0: the client library's measured default */
    c->depth = 0;
    c->spin_us = -1; /* by the number of CPUs (server.c) */
    snprintf(c->path, sizeof c->path, "%s", what);
    c->max_clients = 1024;
    c->max_clients_per_vgpu = 256;
    c->max_queued_requests = 4096;
    c->max_queued_bytes = 64ull << 20;
    c->max_allocations = 65536;
    c->hello_timeout_ms = 10000;
    c->shutdown_grace_ms = 10000;
    c->shm_segments_per_vgpu = 32;
    c->shm_segments_per_user = 64;
}

/* [device LABEL]: a new device with its defaults; *idx becomes its index. */
static int config_device_section(struct gos_serve_config *c, const char *label, const char *what, int line,
                                 int *idx)
{
    if (c->n_devs == GOS_SERVE_MAX_DEVICES)
        return BAD("more than %d devices", GOS_SERVE_MAX_DEVICES);
    for (int i = 0; i < c->n_devs; i++)
        if (!strcmp(c->devs[i].label, label))
            return BAD("device %s defined twice", label);
    *idx = c->n_devs++;
    struct gos_serve_devcfg *d = &c->devs[*idx];
    if (strlen(label) >= sizeof d->label)
        return BAD("device label too long");
    memcpy(d->label, label, strlen(label) + 1);
    long o;
    d->ordinal = parse_int(label, 0, 63, &o) ? -1 : (int)o;
    strcpy(d->policy, "band");
    strcpy(d->queue, "mrq");
    d->period_ns = 30000000ull;
    d->band_wait_ns = 500000ull;
    d->band_charge_hold = 1;
    d->grant_min_us = 0; /* auto (grant.c): by share, at least SRV_GRANT_SHARE_MIN_NS */
    d->spatial_of = -1;
    d->overlap = -1; /* unset: pairs under mps, off otherwise */
    d->handover = -1; /* unset: beside where overlap is pairs (mps), preempt otherwise */
    d->swap_wait_s = 120;
    d->swap_host_wait_s = 60;
    d->swap_prefault = GOS_SWAP_PREFAULT_AUTO;
    d->swap_helper = 1;
    d->latency_priority = -1; /* unset: both under mps, off otherwise */
    return GOS_OK;
}

/* [vgpu NAME]: a new vGPU on the last device above; *idx becomes its index. */
static int config_vgpu_section(struct gos_serve_config *c, const char *label, const char *what, int line, int *idx)
{
    if (c->n_vgpus == GOS_MAX_VGPUS)
        return BAD("more than %d vGPUs", GOS_MAX_VGPUS);
    if (strlen(label) >= GOS_NAME_MAX)
        return BAD("vGPU name too long");
    for (int i = 0; i < c->n_vgpus; i++)
        if (!strcmp(c->vgpus[i].name, label))
            return BAD("vGPU %s defined twice", label);
    *idx = c->n_vgpus++;
    struct gos_serve_vgpucfg *v = &c->vgpus[*idx];
    memcpy(v->name, label, strlen(label) + 1);
    v->device = c->n_devs ? c->n_devs - 1 : -1;
    v->line = line;
    v->compute = v->copy = 0;
    v->mem_pct = 0;
    return GOS_OK;
}

/* A section header line "[kind label]" (s starts at '['): sets *sect (1 device,
 * 2 vgpu) and *idx. */
static int config_section(struct gos_serve_config *c, char *s, const char *what, int line, int *sect, int *idx)
{
    char *e = strchr(s, ']');
    char kind[16], label[GOS_NAME_MAX + 1];
    if (!e || e[1])
        return BAD("section header without ']'");
    *e = 0;
    int used = 0;
    if (sscanf(s + 1, "%15s %64s %n", kind, label, &used) != 2 || s[1 + used])
        return BAD("section must be [device LABEL] or [vgpu NAME] (one word each)");
    int rc;
    if (!strcmp(kind, "device")) {
        if ((rc = config_device_section(c, label, what, line, idx)) != GOS_OK)
            return rc;
        *sect = 1;
    } else if (!strcmp(kind, "vgpu")) {
        if ((rc = config_vgpu_section(c, label, what, line, idx)) != GOS_OK)
            return rc;
        *sect = 2;
    } else {
        return BAD("unknown section [%s]", kind);
    }
    return GOS_OK;
}

/* The line a key handler reads: the configuration so far, the current
 * section's index, and where the line is (for the message). */
struct key_at {
    struct gos_serve_config *c;
    int idx;
    const char *what;
    int line;
};
#define XBAD(...) (gos_fail(GOS_EINVAL, "%s:%d: " FIRST(__VA_ARGS__), x->what, x->line REST(__VA_ARGS__)))
#define XDEV (&x->c->devs[x->idx])
#define XVG (&x->c->vgpus[x->idx])

/* The global keys that are not plain integers. */
static int key_socket(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (!*v)
        return XBAD("socket path is empty");
    if (strlen(v) >= sizeof x->c->socket)
        return XBAD("socket path longer than %zu", sizeof x->c->socket - 1);
    strcpy(x->c->socket, v);
    return GOS_OK;
}

static int key_socket_mode(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (parse_mode(v, &x->c->socket_mode))
        return XBAD("socket_mode must be octal like 0660, not \"%s\"", v);
    return GOS_OK;
}

static int key_chunk(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (gos_serve_parse_size(v, 4096, 1ull << 30, &x->c->chunk))
        return XBAD("chunk must be a size between 4K and 1G");
    return GOS_OK;
}

static int key_max_queued_bytes(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (gos_serve_parse_size(v, 4096, 1ull << 40, &x->c->max_queued_bytes))
        return XBAD("max_queued_bytes must be a size between 4K and 1T");
    return GOS_OK;
}

static int key_shm_bytes_per_user(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    uint64_t u;
    if (strcmp(v, "0") && gos_serve_parse_size(v, 4096, 1ull << 50, &u))
        return XBAD("shm_bytes_per_user must be 0 (no limit) or a size between 4K and 1024T");
    x->c->shm_bytes_per_user = strcmp(v, "0") ? u : 0;
    return GOS_OK;
}

/* The [device] keys (the swap_ turn keys: swap_key). */
static int key_sim(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (!*v)
        return XBAD("sim needs a chip (\"default\" or a file)");
    if (strlen(v) >= sizeof XDEV->sim)
        return XBAD("sim path too long");
    strcpy(XDEV->sim, v);
    return GOS_OK;
}

static int key_policy(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (strcmp(v, "fifo") && strcmp(v, "credit") && strcmp(v, "band"))
        return XBAD("policy must be fifo, credit or band");
    strcpy(XDEV->policy, v);
    return GOS_OK;
}

/* A key of microseconds, 100..100000, or auto (0). */
static int auto_us(const struct key_at *x, const char *k, const char *v, uint64_t *out)
{
    long n;
    if (!strcmp(v, "auto"))
        *out = 0;
    else if (parse_int(v, 100, 100000, &n))
        return XBAD("%s must be auto or 100..100000", k);
    else
        *out = (uint64_t)n;
    return GOS_OK;
}

/* grant_us: 0 (auto) by the measured switch cost (grant.c) */
static int key_grant_us(const struct key_at *x, const char *k, const char *v)
{
    return auto_us(x, k, v, &XDEV->grant_us);
}

/* grant_min_us: 0 (auto) by share (grant.c) */
static int key_grant_min_us(const struct key_at *x, const char *k, const char *v)
{
    return auto_us(x, k, v, &XDEV->grant_min_us);
}

static int key_isolation(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (!strcmp(v, "process"))
        XDEV->isolation = GOS_ISOLATION_PROCESS;
    else if (!strcmp(v, "none"))
        XDEV->isolation = GOS_ISOLATION_NONE;
    else if (!strcmp(v, "mps"))
        XDEV->isolation = GOS_ISOLATION_MPS;
    else
        return XBAD("isolation must be process, mps or none");
    return GOS_OK;
}

static int key_overlap(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (parse_two(v, "off", "pairs", &XDEV->overlap))
        return XBAD("overlap must be off or pairs");
    return GOS_OK;
}

static int key_handover(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (parse_two(v, "preempt", "beside", &XDEV->handover))
        return XBAD("handover must be preempt or beside");
    return GOS_OK;
}

static int key_latency_priority(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    static const char *const names[] = {"off", "stream", "client", "both"}; /* GOS_LATPRIO_* bits */
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, names[i])) {
            XDEV->latency_priority = i;
            return GOS_OK;
        }
    return XBAD("latency_priority must be off, stream, client or both");
}

static int key_executor(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (parse_two(v, "per-client", "per-vgpu", &XDEV->executor_per_vgpu))
        return XBAD("executor must be per-client or per-vgpu");
    return GOS_OK;
}

static int key_queue(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (strcmp(v, "mrq") && strcmp(v, "sdq"))
        return XBAD("queue must be mrq or sdq");
    strcpy(XDEV->queue, v);
    return GOS_OK;
}

/* swap and swap_pool: sizes. */
static int key_swap(const struct key_at *x, const char *k, const char *v)
{
    uint64_t sz;
    if (gos_serve_parse_size(v, 2ull << 20, 1ull << 50, &sz))
        return XBAD("%s must be a size of 2M..1P", k);
    if (k[4])
        XDEV->swap_pool = sz;
    else
        XDEV->swap_bytes = sz;
    return GOS_OK;
}

/* The [vgpu] keys. */
static int key_vgpu_device(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    struct gos_serve_vgpucfg *g = XVG;
    g->device = -1;
    for (int i = 0; i < x->c->n_devs; i++)
        if (!strcmp(x->c->devs[i].label, v))
            g->device = i;
    if (g->device < 0)
        return XBAD("no [device %s] above", v);
    return GOS_OK;
}

static int key_memory(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    struct gos_serve_vgpucfg *g = XVG;
    g->mem_line = x->line;
    if (gos_serve_parse_mem(v, &g->mem_pct, &g->mem_bytes)) {
        char why[256];
        snprintf(why, sizeof why, "%s", gos_last_error());
        return XBAD("%s", why);
    }
    return GOS_OK;
}

static int key_smset(const struct key_at *x, const char *k, const char *v)
{
    (void)k;
    if (!*v || strlen(v) >= sizeof XVG->smset)
        return XBAD("smset needs a name of 1..%zu characters", sizeof XVG->smset - 1);
    strcpy(XVG->smset, v);
    return GOS_OK;
}

/* The key table: one row per key, by section (0 global, 1 device, 2 vgpu):
 * a parse function, or (fn NULL) a number in lo..hi stored at off: in the
 * global section an int of the configuration; in a [device] or [vgpu] an int
 * of the section's (scale 0) or a uint64_t, the number times scale, with
 * range the message's words for lo..hi (label: the message's name of the
 * key, where not the key). */
struct key_row {
    int sect;
    const char *name;
    int (*fn)(const struct key_at *x, const char *k, const char *v);
    size_t off;
    long lo, hi;
    uint64_t scale;
    const char *range, *label;
};
#define IK(n, lo, hi) {0, #n, NULL, offsetof(struct gos_serve_config, n), lo, hi, 0, NULL, NULL}
#define DK(n, f, lo, hi, scale, range) {1, n, NULL, offsetof(struct gos_serve_devcfg, f), lo, hi, scale, range, NULL}
#define VK(n, lo, hi, range, label) {2, #n, NULL, offsetof(struct gos_serve_vgpucfg, n), lo, hi, 0, range, label}
#define FK(s, n, f) {s, n, f, 0, 0, 0, 0, NULL, NULL}
static const struct key_row key_rows[] = {
    IK(depth, 1, 16),
    IK(spin_us, 0, 100000),
    IK(max_clients, 1, 1000000),
    IK(max_clients_per_vgpu, 1, 1000000),
    IK(max_queued_requests, 1, 10000000),
    IK(max_allocations, 1, 100000000),
    IK(hello_timeout_ms, 1, 3600000),
    IK(shutdown_grace_ms, 0, 3600000),
    IK(memory_oversubscribe, 0, 1),
    IK(shm_segments_per_vgpu, 1, GOS_SHM_SLOTS),
    IK(shm_segments_per_user, 1, GOS_SHM_SLOTS),
    FK(0, "socket", key_socket),
    FK(0, "socket_mode", key_socket_mode),
    FK(0, "chunk", key_chunk),
    FK(0, "max_queued_bytes", key_max_queued_bytes),
    FK(0, "shm_bytes_per_user", key_shm_bytes_per_user),
    FK(1, "sim", key_sim),
    FK(1, "policy", key_policy),
    FK(1, "grant_us", key_grant_us),
    FK(1, "grant_min_us", key_grant_min_us),
    FK(1, "isolation", key_isolation),
    FK(1, "overlap", key_overlap),
    FK(1, "handover", key_handover),
    FK(1, "latency_priority", key_latency_priority),
    FK(1, "executor", key_executor),
    FK(1, "queue", key_queue),
    DK("period_ms", period_ns, 1, 10000, 1000000, "1..10000"),
    DK("band_wait_us", band_wait_ns, 0, 1000000, 1000, "0..1000000"),
    DK("band_charge_hold", band_charge_hold, 0, 1, 0, "0 or 1"),
    DK("latency_sms", latency_sms, 0, 90, 0, "0..90 (percent of the SMs)"),
    FK(1, "swap", key_swap),
    FK(1, "swap_pool", key_swap),
    FK(2, "device", key_vgpu_device),
    VK(compute, 1, 100, "1..100 (percent)", "compute share"),
    VK(copy, 1, 100, "1..100 (percent)", "copy share"),
    FK(2, "memory", key_memory),
    VK(sms, 1, 256, "1..256 (SMs)", NULL),
    VK(cluster, 1, 16, "1..16 (blocks per cluster)", NULL),
    FK(2, "smset", key_smset),
};

/* A key of the current section: its row in the table, else (in [device]) a
 * swap_ turn key. */
static int config_key(const struct key_at *x, int sect, const char *k, const char *v)
{
    for (size_t i = 0; i < sizeof key_rows / sizeof key_rows[0]; i++) {
        const struct key_row *r = &key_rows[i];
        if (r->sect != sect || strcmp(k, r->name))
            continue;
        if (r->fn)
            return r->fn(x, k, v);
        long n;
        if (sect == 0 && parse_int(v, r->lo, r->hi, &n))
            return XBAD("%s must be an integer in %ld..%ld, not \"%s\"", k, r->lo, r->hi, v);
        if (sect == 0) {
            *(int *)((char *)x->c + r->off) = (int)n;
            return GOS_OK;
        }
        if (parse_int(v, r->lo, r->hi, &n))
            return XBAD("%s must be %s", r->label ? r->label : k, r->range);
        char *field = (sect == 1 ? (char *)XDEV : (char *)XVG) + r->off;
        if (r->scale)
            *(uint64_t *)field = (uint64_t)n * r->scale;
        else
            *(int *)field = (int)n;
        return GOS_OK;
    }
    if (sect == 1 && !strncmp(k, "swap_", 5)) {
        int rc = swap_key(XDEV, k, v);
        if (rc != GOS_OK)
            return rc == 1 ? XBAD("unknown device key \"%s\"", k) : XBAD("%s", gos_last_error());
        return GOS_OK;
    }
    return XBAD("unknown %skey \"%s\"", sect == 0 ? "" : sect == 1 ? "device " : "vgpu ", k);
}

/* A "key = value" line (s trimmed, not a section): the extension keys first,
 * then the keys of the current section. */
static int config_key_line(struct gos_serve_config *c, char *s, const char *what, int line, int sect, int idx)
{
    char *eq = strchr(s, '=');
    if (!eq)
        return BAD("expected key = value");
    *eq = 0;
    char *k = gos_serve_trim(s), *v = gos_serve_trim(eq + 1);
    char ewhy[256];
    int ext = gos_serve_config_ext_key(c, sect, idx, k, v, ewhy, sizeof ewhy);
    if (ext < 0)
        return BAD("%s", ewhy);
    if (ext > 0)
        return GOS_OK;
    struct key_at x = {c, idx, what, line};
    return config_key(&x, sect, k, v);
}

/* After the last line: every vGPU has a device, a consistent spatial shape and
 * its shares filled in. */
static int config_finish(struct gos_serve_config *c, const char *what)
{
    int line = 0;
    if (c->n_vgpus == 0 && c->n_devs == 0) /* devices alone: vGPUs come from `vgpu create` (issue 25) */
        return BAD("no [device LABEL] section");
    for (int i = 0; i < c->n_vgpus; i++) {
        struct gos_serve_vgpucfg *g = &c->vgpus[i];
        if (g->device < 0)
            return gos_fail(GOS_EINVAL, "%s: vGPU %s has no device (add a [device] section above it)", what, g->name);
        if ((g->cluster || g->smset[0]) && !g->sms)
            return gos_fail(GOS_EINVAL, "%s: vGPU %s: cluster and smset describe a spatial vGPU: give sms = N too",
                            what, g->name);
        if (g->sms && !g->cluster)
            g->cluster = 1;
        for (int j = 0; j < i && g->smset[0]; j++) {
            const struct gos_serve_vgpucfg *h = &c->vgpus[j];
            if (!strcmp(h->smset, g->smset) &&
                (h->device != g->device || h->sms != g->sms || h->cluster != g->cluster))
                return gos_fail(GOS_EINVAL, "%s: vGPUs %s and %s share smset %s but ask for different devices, sms or "
                                "cluster", what, h->name, g->name, g->smset);
        }
        if (!g->compute)
            g->compute = 100 / c->n_vgpus ? 100 / c->n_vgpus : 1;
        if (!g->copy)
            g->copy = g->compute;
        if (!g->mem_pct && !g->mem_bytes)
            g->mem_pct = 100.0 / c->n_vgpus;
    }
    return GOS_OK;
}

int gos_serve_config_parse(const char *text, const char *what, struct gos_serve_config *out)
{
    struct gos_serve_config c;
    config_defaults(&c, what);
    int line = 0, sect = 0, idx = -1; /* sect: 0 global, 1 device, 2 vgpu */
    char *copy = strdup(text);
    if (!copy)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = GOS_OK;
    for (char *ln = copy, *nx; ln && rc == GOS_OK; ln = nx) {
        nx = strchr(ln, '\n');
        if (nx)
            *nx++ = 0;
        line++;
        char *hash = strchr(ln, '#');
        if (hash)
            *hash = 0;
        char *s = gos_serve_trim(ln);
        if (!*s)
            continue;
        if (*s == '[')
            rc = config_section(&c, s, what, line, &sect, &idx);
        else
            rc = config_key_line(&c, s, what, line, sect, idx);
    }
    if (rc == GOS_OK)
        rc = config_finish(&c, what);
    /* Oversubscribed compute or copy shares are honoured in proportion: a
     * warning, not an error, logged by the daemon at start, reload and `vgpu set`
     * (srv_check_oversubscription, docs/readme-vgpu.md). */
    if (rc == GOS_OK)
        *out = c;
    free(copy);
    return rc;
}

#define CONFIG_MAX_BYTES (1 << 20)

int gos_serve_config_load(const char *path, struct gos_serve_config *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gos_fail(GOS_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        int dir = S_ISDIR(st.st_mode);
        fclose(f);
        return gos_fail(GOS_EIO, "cannot read %s: %s", path, dir ? "it is a directory" : "not a regular file");
    }
    if (st.st_size >= CONFIG_MAX_BYTES) {
        fclose(f);
        return gos_fail(GOS_EINVAL, "%s: %lld bytes, larger than the limit of %d for a configuration", path,
                        (long long)st.st_size, CONFIG_MAX_BYTES - 1);
    }
    char *text = malloc(CONFIG_MAX_BYTES + 1);
    if (!text) {
        fclose(f);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    size_t n = fread(text, 1, CONFIG_MAX_BYTES, f);
    int bad = ferror(f), e = errno;
    fclose(f);
    if (bad || n >= CONFIG_MAX_BYTES) {
        free(text);
        return bad ? gos_fail(GOS_EIO, "cannot read %s: %s", path, strerror(e))
                   : gos_fail(GOS_EINVAL, "%s is larger than the limit of %d bytes", path, CONFIG_MAX_BYTES - 1);
    }
    text[n] = 0;
    if (memchr(text, 0, n)) {
        free(text);
        return gos_fail(GOS_EINVAL, "%s contains a NUL byte: not a text file", path);
    }
    int rc = gos_serve_config_parse(text, path, out);
    free(text);
    return rc;
}
