/* SPDX-License-Identifier: Apache-2.0 */
/* verify.c: `gpuos probe numa --verify SIZE|all` (pillar 1b, paper 001
 * section 6.1.2: "verifying 80 GB takes about 15 min").
 *
 * Allocate, build the parity map (one parity per 2 MB page), then classify every
 * 4 KB unit of the allocation by latency (a sweep over every SM: the minimum of a
 * few probes of one pseudo-random line of the unit, judged against the measuring
 * SM's own tiers) and compare with the map's prediction for that line. The
 * agreement rate is over the units that could be classified. The units that
 * disagreed are probed again, more often, from one SM: a unit whose careful
 * probe matches was a noisy sample, one that still disagrees a wrong prediction
 * (or a page that keeps answering slowly). */
#include "common/clock.h"
#include "common/jsonio.h"
#include "numa/numa.h"

#include "common/status.h"

#include <stdlib.h>
#include <time.h>

#define UNIT 4096ull
#define BATCH (1ull << 22) /* units per sweep call: 16 MB of results */
#define MAX_REPROBE (1u << 20)
#define REPROBE_REPS 7

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Units that disagreed: REPROBE_REPS probes each from the reference SM, the
 * median judged against that SM's own tiers. */
static int reprobe(gos_device *d, const gos_numa_model *m, const gos_numa_map *map, uint64_t base,
                   const uint64_t *off, int n, gos_numa_verify *v)
{
    uint64_t *a = malloc((size_t)n * REPROBE_REPS * sizeof *a);
    uint32_t *c = malloc((size_t)n * REPROBE_REPS * sizeof *c);
    int rc = GOS_OK;
    if (!a || !c) {
        free(a);
        free(c);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (int t = 0; t < REPROBE_REPS; t++)
        for (int i = 0; i < n; i++)
            a[(size_t)t * n + i] = base + off[i];
    if (!(rc = gos_mem_latency(d, GOS_LAT_HBM, m->ref_sm, m->ref_sm, a, n * REPROBE_REPS, c))) {
        for (int i = 0; i < n; i++) {
            uint32_t x[REPROBE_REPS];
            for (int t = 0; t < REPROBE_REPS; t++)
                x[t] = c[(size_t)t * n + i];
            qsort(x, REPROBE_REPS, sizeof x[0], cmp_u32);
            uint32_t med = x[REPROBE_REPS / 2];
            if (med == GOS_LAT_NONE)
                continue;
            uint32_t word = (med > 0xfffe ? 0xfffe : med) | ((uint32_t)m->ref_sm << 16);
            v->resolved += gos_numa_agrees(m, word, gos_numa_partition_of(map, off[i])) == 1;
        }
        v->reprobed = (uint64_t)n;
    }
    free(a);
    free(c);
    return rc;
}

int gos_numa_verify_run(gos_device *d, const gos_numa_model *m, uint64_t bytes, int samples,
                        gos_numa_verify *v)
{
    double t0 = gos_now_s();
    gos_mem_buf *b = NULL;
    gos_numa_map *map = NULL;
    uint32_t *s = NULL;
    uint64_t *redo = NULL;
    *v = (gos_numa_verify){0};
    int rc = gos_mem_alloc(d, bytes, &b);
    if (rc)
        return rc;
    v->t_alloc_s = gos_now_s() - t0;
    v->bytes = b->bytes;
    v->unit_bytes = UNIT;
    v->units = b->bytes / UNIT;
    if ((rc = gos_numa_map_build(d, m, b, &map)))
        goto out;
    v->t_parity_s = map->t_probe_s;
    v->parity_unknown = map->n_unknown;
    if (!(s = malloc((v->units < BATCH ? v->units : BATCH) * sizeof *s))) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    int sms[GOS_MAX_SMS], nsm = gos_numa_probers(m, sms);
    v->probers = nsm;
    redo = malloc(MAX_REPROBE * sizeof *redo);
    int n_redo = 0;
    if (!redo) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    double t1 = gos_now_s();
    for (uint64_t first = 0; first < v->units; first += BATCH) {
        uint64_t n = v->units - first < BATCH ? v->units - first : BATCH;
        /* Unit first + i of the whole buffer is unit i of a sweep based at first * UNIT. */
        if ((rc = gos_mem_sweep(d, sms, nsm, b->base + first * UNIT, n, UNIT, samples, s)))
            goto out;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t off = first * UNIT + gos_sweep_offset(i, UNIT);
            int want = gos_numa_partition_of(map, off);
            int ok = want < 0 ? -1 : gos_numa_agrees(m, s[i], want);
            if (ok < 0)
                v->unknown++;
            else
                v->classified++;
            if (ok == 1)
                v->agree++;
            else if (want >= 0 && n_redo < (int)MAX_REPROBE)
                redo[n_redo++] = off;
        }
    }
    v->t_sweep_s = gos_now_s() - t1;
    v->agreement = v->classified ? (double)v->agree / v->classified : 0;
    t1 = gos_now_s();
    if (n_redo && (rc = reprobe(d, m, map, b->base, redo, n_redo, v)))
        goto out;
    v->t_reprobe_s = gos_now_s() - t1;
    v->agreement_after = v->units ? (double)(v->agree + v->resolved) / v->units : 0;
    v->t_total_s = gos_now_s() - t0;
out:
    free(redo);
    free(s);
    gos_numa_map_free(map);
    gos_mem_free(d, b);
    return rc;
}

json_t *gos_numa_verify_json(const gos_numa_verify *v)
{
    return GOS_JSON_OBJ(
        GOS_JI("bytes", v->bytes), GOS_JI("unit_bytes", v->unit_bytes), GOS_JI("units", v->units),
        GOS_JI("classified", v->classified), GOS_JI("agree", v->agree), GOS_JI("unknown", v->unknown),
        GOS_JR("agreement", v->agreement), GOS_JI("reprobed", v->reprobed), GOS_JI("resolved_by_reprobe", v->resolved),
        GOS_JR("agreement_after_reprobe", v->agreement_after), GOS_JI("probing_sms", v->probers),
        GOS_JI("parity_unknown_pages", v->parity_unknown),
        GOS_JO("time_s", GOS_JSON_OBJ(GOS_JR("alloc", v->t_alloc_s), GOS_JR("parity_probe", v->t_parity_s),
                                      GOS_JR("sweep", v->t_sweep_s), GOS_JR("reprobe", v->t_reprobe_s),
                                      GOS_JR("total", v->t_total_s))));
}
