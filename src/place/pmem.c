/* SPDX-License-Identifier: Apache-2.0 */
/* pmem.c: partition-local allocation (include/gpuos/pmem.h, paper 001 section
 * 7.1 and appendix E, without the paper's driver change). Runs in the
 * executor (exec_pmem.c; the daemon too under isolation = none) and programs
 * linking libgpuos-pmem.a (include/gpuos/pmem.h, bench/placement_bench.c).
 *
 * The paper reads physical addresses from a modified driver. We have what
 * `probe numa` charts: the in-page hash bits, and one parity per 2 MB page for
 * the physical bits above, measured by latency when the memory is allocated
 * (gos_numa_map_build: four line probes per 2 MB page, all pages in one sweep).
 * The views and their remap are in gpuos/pmem_core.h; this file allocates,
 * probes, uploads the parity table (a 2 MB device page of its own: one byte per
 * 2 MB page covers 4 TB) and moves data in and out of views. */
#include "place/place.h"
#include "common/env.h"

#include "common/clock.h"
#include "common/status.h"
#include "device/place_ops.h"

#include <stdlib.h>
#include <string.h>

#define COPY_BATCH (1u << 18) /* units per scattered copy call */

struct gos_pmem {
    gos_device *d;
    int own_dev;
    gos_numa_model model;
    gos_mem_buf *buf, *meta;
    uint8_t *parity;          /* host copy, one byte per 2 MB page, GOS_PMEM_EXT_BYTES
                               * after its gos_pmem_ext (as on the device) */
    uint64_t n_pages2m;
    uint64_t view_bytes;
    uint32_t mask, shift;
    int n_parts, k;          /* 2 and 1, or 2^k partitions of k parities */
    uint32_t masks[GOS_PMEM_MAX_PARITIES];
    uint8_t sel[GOS_PMEM_MAX_PARITIES], inv[1 << GOS_PMEM_MAX_PARITIES];
    int scrambled;            /* meta holds the scrambled table at offset 1 MB */
    double t_alloc_s, t_parity_s;
};

const char *gos_pmem_error(void) { return gos_last_error(); }

/* N partitions: k selector bits, ascending, whose columns in the parities'
 * masks are independent (lowest first), and the inverse of that k x k matrix
 * as a table code -> selector value. 0, or a one-line error. */
static int selectors(const uint32_t *masks, int k, uint8_t *sel, uint8_t *inv, const char *what)
{
    int n = 0;
    uint32_t col[GOS_PMEM_MAX_PARITIES];
    for (int b = GOS_HASH_LO; b <= GOS_HASH_HI && n < k; b++) {
        uint32_t c = 0;
        for (int j = 0; j < k; j++)
            c |= (masks[j] >> b & 1u) << j;
        /* independent of the columns chosen: no combination of them gives c */
        int dep = c == 0;
        for (uint32_t t = 1; !dep && t < 1u << n; t++) {
            uint32_t x = 0;
            for (int i = 0; i < n; i++)
                if (t >> i & 1)
                    x ^= col[i];
            dep = x == c;
        }
        if (!dep) {
            sel[n] = (uint8_t)b;
            col[n++] = c;
        }
    }
    if (n < k)
        return gos_fail(GOS_EINVAL, "%s: the %d parities' in-page bits do not reach all %d partitions in a "
                                    "2 MB page: no partition-local views", what, k, 1 << k);
    for (uint32_t t = 0; t < 1u << k; t++) { /* selector value t moves the code by A t */
        uint32_t x = 0;
        for (int i = 0; i < k; i++)
            if (t >> i & 1)
                x ^= col[i];
        inv[x] = (uint8_t)t;
    }
    return GOS_OK;
}

static int chart_check(const gos_chip *c, const char *what)
{
    if (c->n_parts > 2 && c->n_parities >= 2 && c->n_parts == 1 << c->n_parities) {
        uint32_t m[GOS_PMEM_MAX_PARITIES];
        uint8_t sel[GOS_PMEM_MAX_PARITIES], inv[1 << GOS_PMEM_MAX_PARITIES];
        for (int j = 0; j < c->n_parities; j++)
            m[j] = c->parity[j].in_page;
        return selectors(m, c->n_parities, sel, inv, what);
    }
    if (c->n_parts != 2)
        return gos_fail(GOS_EINVAL, "%s: the chart has %d memory partitions, placement needs 2, or 2^k "
                                    "with k hash parities (chart this GPU with `gpuos probe numa --json FILE`)",
                        what, c->n_parts);
    if (c->n_in_page_bits < 1)
        return gos_fail(GOS_EINVAL, "%s: the chart has no in-page hash bits (numa.hash.in_page_bits); "
                                    "chart this GPU with `gpuos probe numa --json FILE`", what);
    int lo = 64;
    for (int i = 0; i < c->n_in_page_bits; i++) {
        int b = c->in_page_bits[i];
        if (b < GOS_HASH_LO || b > GOS_HASH_HI)
            return gos_fail(GOS_EINVAL, "%s: in-page hash bit %d outside %d..%d", what, b, GOS_HASH_LO,
                            GOS_HASH_HI);
        lo = b < lo ? b : lo;
    }
    if (c->hash_granularity && c->hash_granularity != (1ull << lo))
        return gos_fail(GOS_EINVAL, "%s: hash granularity %llu B disagrees with the lowest hash bit %d",
                        what, (unsigned long long)c->hash_granularity, lo);
    return GOS_OK;
}

int gos_pmem_chart_load(const char *path, gos_chip **out)
{
    if (!path || !*path)
        path = gos_env(GOS_ENV_CHIP);
    if (!path || !*path)
        return gos_fail(GOS_EINVAL, "no chart of this GPU: pass one (`gpuos probe numa --json FILE` "
                                    "writes it) or set GPUOS_CHIP");
    gos_chip *c;
    int rc = gos_chip_load(path, &c);
    if (rc)
        return rc;
    if ((rc = chart_check(c, path))) {
        gos_chip_free(c);
        return rc;
    }
    *out = c;
    return GOS_OK;
}

static int upload_table(gos_pmem *pm, uint64_t off, const uint8_t *t)
{
    uint64_t a = pm->meta->base + off;
    return gos_place_copy_units(pm->d, 1, &a, 1, (uint32_t)pm->n_pages2m, (void *)t);
}

/* The main table with its gos_pmem_ext in front (device: at the meta page's
 * start, the table GOS_PMEM_EXT_BYTES in). */
static int upload_main(gos_pmem *pm)
{
    uint64_t a = pm->meta->base;
    int rc = gos_place_copy_units(pm->d, 1, &a, 1, GOS_PMEM_EXT_BYTES, pm->parity - GOS_PMEM_EXT_BYTES);
    return rc ? rc : upload_table(pm, GOS_PMEM_EXT_BYTES, pm->parity);
}

int gos_pmem_create(gos_device *d, const gos_chip *chart, uint64_t bytes, gos_pmem **out)
{
    int rc = chart_check(chart, "chart");
    if (rc)
        return rc;
    if (chart->device.sm_count != d->info.sm_count)
        return gos_fail(GOS_EINVAL, "the chart is of a GPU with %d SMs, this one has %d: chart this GPU",
                        chart->device.sm_count, d->info.sm_count);
    if (chart->device.uuid[0] && d->info.uuid[0] && strcmp(chart->device.uuid, d->info.uuid))
        return gos_fail(GOS_EINVAL, "the chart is of %s, this GPU is %s: chart this GPU "
                                    "(`gpuos probe numa --json FILE`)", chart->device.uuid, d->info.uuid);
    if (bytes == 0)
        return gos_fail(GOS_EINVAL, "cannot allocate 0 bytes per view");
    uint32_t mask = 0;
    int np = chart->n_parts, k = np > 2 ? chart->n_parities : 1;
    uint32_t masks[GOS_PMEM_MAX_PARITIES] = {0};
    if (np > 2)
        for (int j = 0; j < k; j++)
            mask |= masks[j] = chart->parity[j].in_page;
    else
        for (int i = 0; i < chart->n_in_page_bits; i++)
            mask |= 1u << chart->in_page_bits[i];
    masks[0] = np > 2 ? masks[0] : mask;
    uint32_t shift = (uint32_t)__builtin_ctz(mask);
    uint64_t unit = 1ull << shift;
    if (bytes > d->info.mem_bytes / (uint64_t)np)
        return gos_fail(GOS_EINVAL, "%llu bytes per view need %llu bytes of device memory; the GPU has %llu",
                        (unsigned long long)bytes, (unsigned long long)np * bytes,
                        (unsigned long long)d->info.mem_bytes);
    uint64_t units = (bytes + unit - 1) / unit;
    uint64_t total = ((uint64_t)np * units * unit + GOS_PAGE_2M - 1) / GOS_PAGE_2M * GOS_PAGE_2M;
    gos_pmem *pm = calloc(1, sizeof *pm);
    if (!pm)
        return gos_fail(GOS_ENOMEM, "out of memory");
    pm->d = d;
    pm->mask = mask;
    pm->shift = shift;
    pm->n_parts = np;
    pm->k = k;
    memcpy(pm->masks, masks, sizeof masks);
    if (np > 2 && (rc = selectors(masks, k, pm->sel, pm->inv, "chart"))) {
        free(pm);
        return rc;
    }
    pm->view_bytes = bytes;
    gos_numa_map *map = NULL;
    if ((rc = gos_numa_model_from_chip(chart, &pm->model)))
        goto fail;
    double t0 = gos_now_s();
    if ((rc = gos_mem_alloc(d, total, &pm->buf)) || (rc = gos_mem_alloc(d, GOS_PAGE_2M, &pm->meta)))
        goto fail;
    pm->t_alloc_s = gos_now_s() - t0;
    pm->n_pages2m = pm->buf->bytes / GOS_PAGE_2M;
    uint8_t *tab = calloc(1, GOS_PMEM_EXT_BYTES + pm->n_pages2m);
    if (!tab) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto fail;
    }
    pm->parity = tab + GOS_PMEM_EXT_BYTES;
    gos_pmem_ext *ext = (gos_pmem_ext *)tab;
    memcpy(ext->masks, pm->masks, sizeof ext->masks);
    memcpy(ext->sel, pm->sel, sizeof ext->sel);
    memcpy(ext->inv, pm->inv, sizeof ext->inv);
    /* Pages whose probes were inconclusive are probed again (three tries). */
    memset(pm->parity, 0xff, pm->n_pages2m);
    uint64_t unknown = pm->n_pages2m;
    for (int tries = 0; tries < 3 && unknown; tries++) {
        if ((rc = gos_numa_map_build(d, &pm->model, pm->buf, &map)))
            goto fail;
        unknown = 0;
        for (uint64_t p = 0; p < pm->n_pages2m; p++) {
            if (pm->parity[p] == 0xff)
                pm->parity[p] = map->parity[p];
            unknown += pm->parity[p] == 0xff;
        }
        gos_numa_map_free(map);
        map = NULL;
    }
    if (unknown) {
        rc = gos_fail(GOS_EAMBIGUOUS, "%llu of %llu 2 MB pages gave no clear parity in three probes: "
                                      "is the chart of this GPU?",
                      (unsigned long long)unknown, (unsigned long long)pm->n_pages2m);
        goto fail;
    }
    pm->t_parity_s = gos_now_s() - t0 - pm->t_alloc_s;
    if ((rc = upload_main(pm)))
        goto fail;
    *out = pm;
    return GOS_OK;
fail:
    gos_numa_map_free(map);
    gos_pmem_close(pm);
    return rc;
}

int gos_pmem_open(const gos_pmem_opts *o, uint64_t bytes, gos_pmem **out)
{
    gos_chip *chart = NULL;
    gos_device *d = NULL;
    gos_device_spec spec = {.sim = o ? o->sim : NULL, .ordinal = o ? o->device : 0};
    int rc = gos_pmem_chart_load(o ? o->chart : NULL, &chart);
    if (rc || (rc = gos_device_open(&spec, &d)) || (rc = gos_pmem_create(d, chart, bytes, out))) {
        gos_chip_free(chart);
        if (d)
            gos_device_close(d);
        return rc;
    }
    gos_chip_free(chart);
    (*out)->own_dev = 1;
    return GOS_OK;
}

void gos_pmem_close(gos_pmem *pm)
{
    if (!pm)
        return;
    gos_mem_free(pm->d, pm->meta);
    gos_mem_free(pm->d, pm->buf);
    gos_numa_model_free(&pm->model);
    free(pm->parity ? pm->parity - GOS_PMEM_EXT_BYTES : NULL);
    if (pm->own_dev)
        gos_device_close(pm->d);
    free(pm);
}

gos_device *gos_pmem_device(const gos_pmem *pm) { return pm->d; }
const gos_numa_model *gos_pmem_model(const gos_pmem *pm) { return &pm->model; }
const gos_mem_buf *gos_pmem_buffer(const gos_pmem *pm) { return pm->buf; }
uint64_t gos_pmem_view_bytes(const gos_pmem *pm) { return pm->view_bytes; }
int gos_pmem_sm_count(const gos_pmem *pm) { return pm->d->info.sm_count; }

void gos_pmem_times(const gos_pmem *pm, double *alloc_s, double *parity_s)
{
    *alloc_s = pm->t_alloc_s;
    *parity_s = pm->t_parity_s;
}

static gos_pmem_view make_view(const gos_pmem *pm, int part, uint64_t parity)
{
    gos_pmem_view v = {.base = pm->buf->base, .bytes = pm->view_bytes, .parity = parity,
                       .mask = pm->mask, .shift = pm->shift, .part = (uint32_t)part};
    if (pm->n_parts > 2)
        v.n_parities = (uint32_t)pm->k; /* its tables in front of the parity table */
    return v;
}

int gos_pmem_n_parts(const gos_pmem *pm) { return pm ? pm->n_parts : 0; }

int gos_pmem_get_view(const gos_pmem *pm, int part, gos_pmem_view *out)
{
    if (!pm || part < 0 || part >= pm->n_parts)
        return gos_fail(GOS_EINVAL, "no view of partition %d (0..%d)", part, pm ? pm->n_parts - 1 : 1);
    *out = make_view(pm, part, pm->meta->base + GOS_PMEM_EXT_BYTES);
    return GOS_OK;
}

int gos_pmem_scrambled_views(gos_pmem *pm, gos_pmem_view out[2])
{
    if (pm->n_parts != 2)
        return gos_fail(GOS_EUNSUPPORTED, "scrambled views: two partitions only (this chart has %d)", pm->n_parts);
    if (!pm->scrambled) {
        uint8_t *t = malloc(pm->n_pages2m);
        if (!t)
            return gos_fail(GOS_ENOMEM, "out of memory");
        for (uint64_t p = 0; p < pm->n_pages2m; p++)
            t[p] = pm->parity[p] ^ (uint8_t)(p & 1);
        int rc = pm->n_pages2m <= GOS_PAGE_2M / 2 ? upload_table(pm, GOS_PAGE_2M / 2, t)
                                                   : gos_fail(GOS_EINVAL, "allocation too large to scramble");
        free(t);
        if (rc)
            return rc;
        pm->scrambled = 1;
    }
    for (int p = 0; p < 2; p++)
        out[p] = make_view(pm, p, pm->meta->base + GOS_PAGE_2M / 2);
    return GOS_OK;
}

/* Copies [off, off + n) of view `part` unit by unit (whole units batched). */
static int copy(gos_pmem *pm, int to_device, int part, uint64_t off, uint8_t *h, uint64_t n)
{
    if (!pm || part < 0 || part >= pm->n_parts)
        return gos_fail(GOS_EINVAL, "no view of partition %d (0..%d)", part, pm ? pm->n_parts - 1 : 1);
    if (off > pm->view_bytes || n > pm->view_bytes - off)
        return gos_fail(GOS_EINVAL, "bytes %llu..%llu are outside the view (%llu bytes)",
                        (unsigned long long)off, (unsigned long long)(off + n),
                        (unsigned long long)pm->view_bytes);
    if (n && !h)
        return gos_fail(GOS_EINVAL, "no host buffer");
    gos_pmem_view v = make_view(pm, part, (uint64_t)(uintptr_t)pm->parity);
    uint64_t unit = 1ull << pm->shift;
    uint64_t *a = malloc((n / unit < COPY_BATCH ? n / unit + 1 : COPY_BATCH) * sizeof *a);
    if (!a)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = GOS_OK;
    while (n && !rc) {
        uint64_t in = off & (unit - 1);
        if (in || n < unit) { /* a partial unit on its own */
            uint64_t k = unit - in < n ? unit - in : n;
            a[0] = gos_pmem_addr(&v, off);
            rc = gos_place_copy_units(pm->d, to_device, a, 1, (uint32_t)k, h);
            off += k;
            h += k;
            n -= k;
            continue;
        }
        uint64_t k = n / unit < COPY_BATCH ? n / unit : COPY_BATCH;
        for (uint64_t i = 0; i < k; i++)
            a[i] = gos_pmem_addr(&v, off + i * unit);
        rc = gos_place_copy_units(pm->d, to_device, a, k, (uint32_t)unit, h);
        off += k * unit;
        h += k * unit;
        n -= k * unit;
    }
    free(a);
    return rc;
}

int gos_pmem_write(gos_pmem *pm, int part, uint64_t off, const void *src, uint64_t n)
{
    return copy(pm, 1, part, off, (uint8_t *)(uintptr_t)src, n);
}

int gos_pmem_read(gos_pmem *pm, int part, uint64_t off, void *dst, uint64_t n)
{
    return copy(pm, 0, part, off, dst, n);
}

int gos_pmem_runtime(const gos_pmem *pm, const int *idle, int n_idle, uint32_t n_tasks, int split,
                     gos_prt_table *t)
{
    if (!pm || (split != GOS_PMEM_SPLIT_SMS && split != GOS_PMEM_SPLIT_EQUAL) || n_idle < 0 ||
        (n_idle && !idle))
        return gos_fail(GOS_EINVAL, "runtime table: bad arguments");
    int n = pm->d->info.sm_count;
    if (n > GOS_PRT_MAX_SMS)
        return gos_fail(GOS_EUNSUPPORTED, "more than %d SMs", GOS_PRT_MAX_SMS);
    memset(t, 0, sizeof *t);
    for (int s = 0; s < GOS_PRT_MAX_SMS; s++)
        t->part_of_sm[s] = (int8_t)(s < n ? pm->model.part_of[s] : -1);
    int r = gos_prt_finish(t, n, idle, n_idle, n_tasks, split == GOS_PMEM_SPLIT_EQUAL);
    if (r > 0)
        return gos_fail(GOS_EINVAL, "idle SM %d out of range 0..%d", idle[r - 1], n - 1);
    if (r < 0)
        return gos_fail(GOS_EINVAL, "runtime table: every SM is idle");
    return GOS_OK;
}

int gos_pmem_truth_part(gos_pmem *pm, int p, uint64_t *units, uint64_t *in_target)
{
    int ref = -1; /* an SM of partition p: truth says 0 for lines local to it */
    for (int s = 0; s < pm->model.sm_count && ref < 0; s++)
        if (pm->model.part_of[s] == p)
            ref = s;
    if (ref < 0)
        return gos_fail(GOS_EINVAL, "truth: the chart has no SM in partition %d", p);
    uint64_t unit = 1ull << pm->shift, n = (pm->view_bytes + unit - 1) / unit;
    uint64_t batch = n < COPY_BATCH ? n : COPY_BATCH;
    uint64_t *a = malloc(batch * sizeof *a);
    uint8_t *h = malloc(batch);
    int rc = a && h ? GOS_OK : gos_fail(GOS_ENOMEM, "out of memory");
    gos_pmem_view v = make_view(pm, p, (uint64_t)(uintptr_t)pm->parity);
    *units = n;
    *in_target = 0;
    for (uint64_t j = 0; j < n && !rc; j += batch) {
        uint64_t k = n - j < batch ? n - j : batch;
        for (uint64_t i = 0; i < k; i++)
            a[i] = gos_pmem_addr(&v, (j + i) * unit);
        if ((rc = gos_place_truth(pm->d, a, k, ref, h)))
            break;
        for (uint64_t i = 0; i < k; i++)
            *in_target += h[i] == 0;
    }
    free(a);
    free(h);
    return rc;
}

int gos_pmem_truth(gos_pmem *pm, uint64_t units[2], uint64_t in_target[2])
{
    int rc = GOS_OK;
    for (int p = 0; p < 2 && !rc; p++)
        rc = gos_pmem_truth_part(pm, p, &units[p], &in_target[p]);
    return rc;
}
