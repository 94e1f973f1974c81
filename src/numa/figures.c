/* SPDX-License-Identifier: Apache-2.0 */
/* figures.c: the memory costs of pillar 1b measured on a device, given the
 * partitions and hash of a NUMA model (paper 001 sections 6.2.1, 6.2.2, C.2).
 *
 * One buffer (4 GB, less on small devices) with its parity map; every line and
 * page below is chosen by the map's prediction, so "local" and "remote" mean
 * the partition of the data relative to the partition of the SM.
 *   L2 latency: lines of partition q loaded by an SM of q, then timed by that SM
 *     (local hit) or by an SM of the other partition (remote hit), q = 0, 1;
 *   replication: an SM of 0 loads lines of 1, an SM of 1 discards them, the SM
 *     of 0 reloads: a local-L2-hit time means the first load left a replica;
 *   HBM bandwidth: SMs of partition p read only local or only remote 4 KB pages
 *     (half the buffer each, far beyond L2);
 *   L2 curves: every SM reads a working set of W bytes again and again, W from
 *     5 % to 200 % of the physical L2; the knee is the effective capacity. Two
 *     curves: "private", each page always read by the same SM, and "shared", the
 *     reader moving from pass to pass so every SM reads every page (the paper's
 *     benchmark): cross-partition replication can only cost capacity in the
 *     second. */
#include "common/clock.h"
#include "common/jsonio.h"
#include "numa/figures.h"

#include "common/rng.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define L2_SAMPLES 1024 /* per direction and partition */

void gos_memory_figures_free(gos_memory_figures *f)
{
    free(f->l2_samples[0]);
    free(f->l2_samples[1]);
    f->l2_samples[0] = f->l2_samples[1] = NULL;
}

/* The two partitions the figures compare: 0 and 1, or with N partitions 0 and
 * one in the farthest tier from it (the "remote" of a local/remote pair). */
static void pair_of(const gos_numa_model *m, int side[2])
{
    side[0] = 0;
    side[1] = 1;
    if (m->n_parts <= 2)
        return;
    for (int q = 1; q < m->n_parts; q++)
        if (m->pair_tier[0][q] > m->pair_tier[0][side[1]])
            side[1] = q;
}

/* 0 / 1: which side of the pair partition p is, -1 neither. */
static int side_of(const int side[2], int p) { return p == side[0] ? 0 : p == side[1] ? 1 : -1; }

/* n random lines of buffer whose predicted partition is side q of the pair. */
typedef struct {
    const gos_numa_map *map;
    gos_rng *r;
    int side[2];
} line_pick;

static int pick_lines(void *ctx, int q, int n, uint64_t *out)
{
    const line_pick *k = ctx;
    q = k->side[q & 1];
    for (int i = 0, tries = 0; i < n; tries++) {
        if (tries > 1000 * n + 1000)
            return gos_fail(GOS_EAMBIGUOUS, "no lines of partition %d in the buffer", q);
        uint64_t off = (gos_rng_u64(k->r) % (k->map->bytes / GOS_LINE)) * GOS_LINE;
        if (gos_numa_partition_of(k->map, off) == q)
            out[i++] = k->map->base + off;
    }
    return GOS_OK;
}

static int first_sm(const gos_numa_model *m, int p)
{
    for (int s = 0; s < m->sm_count; s++)
        if (m->part_of[s] == p)
            return s;
    return -1;
}

/* L2 latency with lines of both partitions (l2_hits.c), then the replication
 * test of section 6.2.2: SM of 0 loads lines of 1, SM of 1 discards, SM of 0 reloads. */
static int l2_latency(gos_device *d, const gos_numa_model *m, const gos_numa_map *map, gos_rng *r,
                      gos_memory_figures *f)
{
    line_pick k = {.map = map, .r = r};
    pair_of(m, k.side);
    int n = L2_SAMPLES, sm[2] = {first_sm(m, k.side[0]), first_sm(m, k.side[1])};
    int rc = gos_l2_hits(d, sm, 2, n, pick_lines, &k, f->l2_samples, &f->l2_local, &f->l2_remote);
    if (rc)
        return rc;
    f->n_l2 = 2 * n;
    uint64_t *a = malloc((size_t)n * sizeof *a);
    uint32_t *c = malloc((size_t)n * sizeof *c);
    if (!a || !c) {
        free(a);
        free(c);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    if (!(rc = pick_lines(&k, 1, n, a)))
        rc = gos_mem_latency(d, GOS_LAT_REPLICA, sm[0], sm[1], a, n, c);
    if (!rc) {
        f->reload = gos_lat_median(c, n);
        f->hbm_remote_ref = m->hbm_remote;
        f->replicated = fabs(f->reload - f->l2_local) < fabs(f->reload - m->hbm_remote);
    }
    free(c);
    free(a);
    return rc;
}

static int hbm_bandwidth(gos_device *d, const gos_numa_model *m, const gos_numa_map *map,
                         const gos_mem_buf *b, gos_memory_figures *f)
{
    uint64_t np = b->bytes / 4096;
    uint32_t *pg[2] = {malloc(np * sizeof(uint32_t)), malloc(np * sizeof(uint32_t))};
    int *sms[2] = {malloc(m->sm_count * sizeof(int)), malloc(m->sm_count * sizeof(int))};
    int npg[2] = {0, 0}, nsm[2] = {0, 0}, rc = GOS_OK;
    if (!pg[0] || !pg[1] || !sms[0] || !sms[1]) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    int side[2];
    pair_of(m, side);
    for (uint64_t i = 0; i < np; i++) {
        int p = side_of(side, gos_numa_partition_of(map, i * 4096));
        if (p >= 0)
            pg[p][npg[p]++] = (uint32_t)i;
    }
    for (int s = 0; s < m->sm_count; s++) {
        int p = side_of(side, m->part_of[s]);
        if (p >= 0)
            sms[p][nsm[p]++] = s;
    }
    f->bw_ws_bytes = 4096ull * (npg[0] < npg[1] ? npg[0] : npg[1]);
    for (int p = 0; p < 2; p++) {
        if (!nsm[p] || !npg[0] || !npg[1]) {
            rc = gos_fail(GOS_EAMBIGUOUS, "bandwidth: a partition has no SMs or no pages");
            goto out;
        }
        int n = npg[0] < npg[1] ? npg[0] : npg[1];
        if ((rc = gos_mem_read_bw(d, sms[p], nsm[p], b, pg[p], n, 3, 0, &f->bw_local[p])) ||
            (rc = gos_mem_read_bw(d, sms[p], nsm[p], b, pg[1 - p], n, 3, 0, &f->bw_remote[p])))
            goto out;
    }
    /* Every SM, every page. */
    for (uint64_t i = 0; i < np; i++)
        pg[0][i] = (uint32_t)i;
    for (int s = 0; s < m->sm_count; s++)
        sms[0][s] = s;
    rc = gos_mem_read_bw(d, sms[0], m->sm_count, b, pg[0], (int)np, 3, 0, &f->bw_all);
    f->has_bw = rc == GOS_OK;
out:
    free(pg[0]);
    free(pg[1]);
    free(sms[0]);
    free(sms[1]);
    return rc;
}

/* One read of the first np pages by the n SMs sms[]; enough passes to read
 * >= 2 GB so launch costs vanish. */
static int curve_point(gos_device *d, const int *sms, int n, const gos_mem_buf *b, const uint32_t *pg,
                       int np, int shared, double *g)
{
    int passes = (int)((2ull << 30) / ((uint64_t)np * 4096)) + 1;
    return gos_mem_read_bw(d, sms, n, b, pg, np, passes, shared, g);
}

static void curve_insert(gos_l2_curve *c, double ws, double g)
{
    int k = c->n;
    while (k > 0 && c->ws[k - 1] > ws) {
        c->ws[k] = c->ws[k - 1];
        c->gbps[k] = c->gbps[k - 1];
        k--;
    }
    c->ws[k] = ws;
    c->gbps[k] = g;
    c->n++;
}

/* The curve read by the SMs of partition `part` only (-1: every SM). */
static int l2_curve(gos_device *d, const gos_numa_model *m, int part, const gos_mem_buf *b,
                    int shared, gos_l2_curve *c)
{
    uint64_t l2 = d->info.l2_bytes ? d->info.l2_bytes : (60ull << 20);
    int *sms = malloc(d->info.sm_count * sizeof(int));
    uint64_t maxpg = 2 * l2 / 4096 + 1;
    uint32_t *pg = malloc(maxpg * sizeof *pg);
    if (!sms || !pg) {
        free(sms);
        free(pg);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    int n = 0;
    for (int s = 0; s < d->info.sm_count; s++)
        if (part < 0 || (s < m->sm_count && m->part_of[s] == part))
            sms[n++] = s;
    for (uint64_t i = 0; i < maxpg; i++)
        pg[i] = (uint32_t)i;
    int rc = GOS_OK;
    memset(c, 0, sizeof *c);
    for (int k = 0; k < 40 && !rc; k++) {
        int np = (int)(l2 * (uint64_t)(k + 1) / 20 / 4096); /* 5 % .. 200 % of L2 */
        double g;
        if ((uint64_t)np * 4096 > b->bytes || np < 1)
            break;
        if (!(rc = curve_point(d, sms, n, b, pg, np, shared, &g)))
            curve_insert(c, (double)np * 4096, g);
    }
    /* Refine: eight more points around the knee, so it does not depend on the
     * coarse grid. */
    double knee;
    if (!rc && gos_l2_knee(c->ws, c->gbps, c->n, &knee, &c->plateau, &c->floor_gbps) == GOS_OK) {
        double step = (double)l2 / 20;
        for (int j = 1; j <= 8 && !rc && c->n < 64; j++) {
            int np = (int)((knee - step + j * (2 * step / 9)) / 4096);
            double g;
            if (np < 1 || (uint64_t)np * 4096 > b->bytes || (uint64_t)np > maxpg)
                continue;
            if (!(rc = curve_point(d, sms, n, b, pg, np, shared, &g)))
                curve_insert(c, (double)np * 4096, g);
        }
    }
    free(sms);
    free(pg);
    if (rc)
        return rc;
    c->has_knee = gos_l2_knee(c->ws, c->gbps, c->n, &c->eff_bytes, &c->plateau, &c->floor_gbps) == GOS_OK;
    return GOS_OK;
}

int gos_memory_measure(gos_device *d, const gos_numa_model *m, gos_memory_figures *f)
{
    memset(f, 0, sizeof *f);
    double t0 = gos_now_s();
    if (first_sm(m, 0) < 0 || first_sm(m, 1) < 0)
        return gos_fail(GOS_EAMBIGUOUS, "memory figures need SMs in both partitions");
    uint64_t bytes = 4ull << 30;
    if (d->info.mem_bytes && bytes > d->info.mem_bytes / 4)
        bytes = d->info.mem_bytes / 4 / GOS_PAGE_2M * GOS_PAGE_2M;
    uint64_t l2 = d->info.l2_bytes ? d->info.l2_bytes : (60ull << 20);
    if (bytes < 3 * l2 && (!d->info.mem_bytes || 3 * l2 < d->info.mem_bytes / 2))
        bytes = (3 * l2 + GOS_PAGE_2M - 1) / GOS_PAGE_2M * GOS_PAGE_2M; /* the L2 curve needs 2 x L2 */
    gos_mem_buf *b = NULL;
    gos_numa_map *map = NULL;
    gos_rng r;
    gos_rng_seed(&r, 0x6d656d6fu);
    int rc = gos_mem_alloc(d, bytes, &b);
    if (rc)
        return rc;
    if ((rc = gos_numa_map_build(d, m, b, &map)) || (rc = l2_latency(d, m, map, &r, f)))
        goto out;
    /* Local/remote pages need whole 4 KB pages in one partition. */
    if (m->granularity >= 4096 && (rc = hbm_bandwidth(d, m, map, b, f)))
        goto out;
    if ((rc = l2_curve(d, m, -1, b, 0, &f->curve[0])) || (rc = l2_curve(d, m, -1, b, 1, &f->curve[1])) ||
        (rc = l2_curve(d, m, 0, b, 0, &f->curve[2])))
        goto out;
    f->t_total_s = gos_now_s() - t0;
out:
    gos_numa_map_free(map);
    gos_mem_free(d, b);
    if (rc)
        gos_memory_figures_free(f);
    return rc;
}

json_t *gos_memory_json(const gos_memory_figures *f, uint64_t l2_bytes)
{
    json_t *o = GOS_JSON_OBJ(
        GOS_JO("l2_latency_cycles",
               GOS_JSON_OBJ(GOS_JR("local", f->l2_local), GOS_JR("remote", f->l2_remote), GOS_JI("samples", f->n_l2),
                            GOS_JO("local_histogram", gos_hist_json(f->l2_samples[0], f->n_l2, 4)),
                            GOS_JO("remote_histogram", gos_hist_json(f->l2_samples[1], f->n_l2, 4)))),
        GOS_JO("replication", GOS_JSON_OBJ(GOS_JR("reload_cycles", f->reload), GOS_JR("l2_local_cycles", f->l2_local),
                                           GOS_JR("hbm_remote_cycles", f->hbm_remote_ref),
                                           GOS_JB("replicated", f->replicated))));
    if (f->has_bw)
        json_object_set_new(
            o, "hbm_bandwidth_gbps",
            GOS_JSON_OBJ(GOS_JR("local", 0.5 * (f->bw_local[0] + f->bw_local[1])),
                         GOS_JR("remote", 0.5 * (f->bw_remote[0] + f->bw_remote[1])),
                         GOS_JR("partition0_local", f->bw_local[0]), GOS_JR("partition0_remote", f->bw_remote[0]),
                         GOS_JR("partition1_local", f->bw_local[1]), GOS_JR("partition1_remote", f->bw_remote[1]),
                         GOS_JR("all_sms_all_pages", f->bw_all), GOS_JI("working_set_bytes", f->bw_ws_bytes)));
    /* Private (each page one reader) keeps the historical key names; shared (the
     * paper's setting) gets a "_shared" suffix, one partition's SMs "_one_partition". */
    for (int k = 0; k < 3; k++) {
        const gos_l2_curve *c = &f->curve[k];
        static const char *const sfxs[3] = {"", "_shared", "_one_partition"};
        static const char *const modes[3] = {"private", "shared", "one_partition"};
        const char *sfx = sfxs[k];
        char key[64];
        json_t *ws = json_array();
        for (int i = 0; i < c->n; i++)
            json_array_append_new(ws, json_integer((json_int_t)c->ws[i]));
        snprintf(key, sizeof key, "l2_curve%s", sfx);
        json_object_set_new(o, key, GOS_JSON_OBJ(GOS_JS("mode", modes[k]), GOS_JO("working_set_bytes", ws),
                                                 GOS_JO("gbps", gos_json_reals(c->gbps, c->n))));
        if (!c->has_knee)
            continue;
        snprintf(key, sizeof key, "l2_effective_bytes%s", sfx);
        json_object_set_new(o, key, json_integer((json_int_t)c->eff_bytes));
        snprintf(key, sizeof key, "l2_effective_fraction%s", sfx);
        json_object_set_new(o, key, json_real(l2_bytes ? c->eff_bytes / (double)l2_bytes : 0));
        snprintf(key, sizeof key, "l2_plateau_gbps%s", sfx);
        json_object_set_new(o, key, json_real(c->plateau));
        snprintf(key, sizeof key, "hbm_floor_gbps%s", sfx);
        json_object_set_new(o, key, json_real(c->floor_gbps));
    }
    json_object_set_new(o, "time_s", json_real(f->t_total_s));
    return o;
}
