/* SPDX-License-Identifier: Apache-2.0 */
/* check.c: is each view's memory really in the view's partition? Runs in the
 * executor (exec_pmem.c; the daemon too under isolation = none) and programs
 * linking libgpuos-pmem.a (include/gpuos/pmem.h, bench/placement_bench.c). (SPEC
 * numbers to beat: ">= 99.7 % of pages local".) Checked by latency,
 * independently of the hash that built the views: every unit of the allocation
 * is classified by a sweep (numa's classification: min of a few HBM probes of
 * one line, judged against the measuring SM's own tiers), then each logical unit
 * of each view is remapped with gos_pmem_addr (the code under test) and looked
 * up. Units found elsewhere are probed again, 7 times from an SM of the view's
 * partition, and count as misplaced only when the median still says so (a slow
 * sample is not a misplaced page). */
#include "place/place.h"

#include "common/clock.h"
#include "common/status.h"
#include "device/place_ops.h"

#include <stdlib.h>
#include <string.h>

#define BATCH (1ull << 22)
#define MAX_REPROBE (1u << 18)
#define REPS 7

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Re-probes the units at offs[0..n) of view p; *found = how many the median puts
 * in partition p. */
static int reprobe(gos_pmem *pm, int p, const uint64_t *offs, int n, uint64_t *found)
{
    gos_device *d = gos_pmem_device(pm);
    const gos_numa_model *m = gos_pmem_model(pm);
    int sm = -1;
    for (int s = 0; s < m->sm_count && sm < 0; s++)
        if (m->part_of[s] == p)
            sm = s;
    if (sm < 0)
        return gos_fail(GOS_EINVAL, "no SM in partition %d", p);
    uint64_t *a = malloc((size_t)n * REPS * sizeof *a);
    uint32_t *c = malloc((size_t)n * REPS * sizeof *c);
    int rc = GOS_OK;
    if (!a || !c) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    for (int t = 0; t < REPS; t++)
        for (int i = 0; i < n; i++)
            a[(size_t)t * n + i] = gos_pmem_buffer(pm)->base + offs[i];
    if ((rc = gos_mem_latency(d, GOS_LAT_HBM, sm, sm, a, n * REPS, c)))
        goto out;
    for (int i = 0; i < n; i++) {
        uint32_t x[REPS];
        for (int t = 0; t < REPS; t++)
            x[t] = c[(size_t)t * n + i];
        qsort(x, REPS, sizeof x[0], cmp_u32);
        if (x[REPS / 2] == GOS_LAT_NONE)
            continue;
        uint32_t w = (x[REPS / 2] > 0xfffe ? 0xfffe : x[REPS / 2]) | ((uint32_t)sm << 16);
        *found += gos_numa_classify(m, w) == p;
    }
out:
    free(a);
    free(c);
    return rc;
}

int gos_pmem_check(gos_pmem *pm, int samples, gos_pmem_check_result *r)
{
    memset(r, 0, sizeof *r);
    gos_device *d = gos_pmem_device(pm);
    const gos_numa_model *m = gos_pmem_model(pm);
    const gos_mem_buf *b = gos_pmem_buffer(pm);
    gos_pmem_view v[2];
    if (samples < 1 || samples > 16)
        return gos_fail(GOS_EINVAL, "check: samples %d outside 1..16", samples);
    if (gos_pmem_n_parts(pm) != 2) /* gos_pmem_truth_part checks N views on a simulated chip */
        return gos_fail(GOS_EUNSUPPORTED, "check: two partitions only (the chart has %d)", gos_pmem_n_parts(pm));
    int rc = gos_pmem_get_view(pm, 0, &v[0]);
    if (rc || (rc = gos_pmem_get_view(pm, 1, &v[1])))
        return rc;
    uint64_t unit = 1ull << v[0].shift, n_units = b->bytes / unit;
    r->unit_bytes = unit;
    int8_t *cls = malloc(n_units);
    uint32_t *s = malloc((n_units < BATCH ? n_units : BATCH) * sizeof *s);
    uint64_t *redo = malloc(MAX_REPROBE * sizeof *redo);
    if (!cls || !s || !redo) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    double t0 = gos_now_s();
    int sms[GOS_MAX_SMS], nsm = gos_numa_probers(m, sms);
    for (uint64_t first = 0; first < n_units; first += BATCH) {
        uint64_t n = n_units - first < BATCH ? n_units - first : BATCH;
        if ((rc = gos_mem_sweep(d, sms, nsm, b->base + first * unit, n, unit, samples, s)))
            goto out;
        for (uint64_t i = 0; i < n; i++)
            cls[first + i] = (int8_t)gos_numa_classify(m, s[i]);
    }
    r->t_sweep_s = gos_now_s() - t0;
    t0 = gos_now_s();
    /* Host copies of the views' parity tables: the remap runs here as on the GPU. */
    const uint8_t *par = NULL;
    uint8_t *host_par = malloc(b->bytes / GOS_PAGE_2M);
    if (!host_par) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t meta = v[0].parity;
    rc = gos_place_copy_units(d, 0, &meta, 1, (uint32_t)(b->bytes / GOS_PAGE_2M), host_par);
    par = host_par;
    for (int p = 0; p < 2 && !rc; p++) {
        gos_pmem_view hv = v[p];
        hv.parity = (uint64_t)(uintptr_t)par;
        uint64_t units = (hv.bytes + unit - 1) / unit;
        int n_redo = 0;
        r->units[p] = units;
        for (uint64_t j = 0; j < units; j++) {
            uint64_t u = (gos_pmem_addr(&hv, j * unit) - b->base) / unit;
            int got = cls[u];
            if (got == p) {
                r->first_pass[p]++;
                continue;
            }
            if (got < 0)
                r->unclassified[p]++;
            if (n_redo < (int)MAX_REPROBE)
                redo[n_redo++] = gos_sweep_offset(u, unit); /* the line the sweep probed */
        }
        r->in_target[p] = r->first_pass[p];
        r->reprobed[p] = (uint64_t)n_redo;
        for (int k = 0; k < n_redo && !rc; k += 65536)
            rc = reprobe(pm, p, redo + k, n_redo - k < 65536 ? n_redo - k : 65536, &r->in_target[p]);
        r->frac[p] = units ? (double)r->in_target[p] / (double)units : 0;
    }
    free(host_par);
    r->t_reprobe_s = gos_now_s() - t0;
out:
    free(cls);
    free(s);
    free(redo);
    return rc;
}
