/* SPDX-License-Identifier: Apache-2.0 */
/* numa_map.c: the placement API of pillar 1b: which partition holds any 4 KB
 * page of a device allocation (paper 001 section 6.1.2 and appendix E).
 *
 * The hash is the parity of physical bits. Inside a 2 MB page the in-page bits
 * are known from discovery; the bits above are physical and invisible, but they
 * are the same for the whole page, so they contribute one parity per 2 MB page.
 * That parity is measured once when the map is built: four line probes per 2 MB
 * page (a majority, ties broken by the clearest sample), all pages in one sweep
 * over every SM. Afterwards a query is O(1): page parity XOR in-page parity. */
#include "common/clock.h"
#include "common/env.h"
#include "numa/numa.h"

#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#define PROBES_PER_PAGE 4

/* Threshold of the SM that measured a sample: midpoint of its own tiers when
 * known, else the reference threshold. */
static double sm_threshold(const gos_numa_model *m, int sm)
{
    if (m->multi) /* the SM's far median mixes tiers: the near tier's own threshold */
        return m->tiers.threshold;
    if (sm >= 0 && sm < GOS_MAX_SMS && m->sm_near[sm] > 0 && m->sm_far[sm] > m->sm_near[sm])
        return 0.5 * (m->sm_near[sm] + m->sm_far[sm]);
    return m->tiers.threshold;
}

int gos_numa_classify(const gos_numa_model *m, uint32_t sample)
{
    if (sample == GOS_LAT_NONE)
        return -1;
    int sm = (int)(sample >> 16), lat = (int)(sample & 0xffff);
    if (sm >= m->sm_count || lat == 0xffff)
        return -1;
    int near = lat < sm_threshold(m, sm);
    if (m->multi)
        return near ? m->part_of[sm] : -2;
    return near ? m->part_of[sm] : 1 - m->part_of[sm];
}

int gos_numa_agrees(const gos_numa_model *m, uint32_t sample, int want)
{
    int got = gos_numa_classify(m, sample);
    if (got == -1)
        return -1;
    if (!m->multi)
        return got == want;
    int sm = (int)(sample >> 16);
    return (got >= 0) == (want == m->part_of[sm]);
}

/* How far a sample sits from its SM's threshold, in units of the tier gap. */
static double margin(const gos_numa_model *m, uint32_t sample)
{
    int sm = (int)(sample >> 16);
    double thr = sm_threshold(m, sm), gap = m->tiers.high - m->tiers.low;
    return fabs((double)(sample & 0xffff) - thr) / (gap > 0 ? gap : 1);
}

int gos_numa_probers(const gos_numa_model *m, int sms[GOS_MAX_SMS])
{
    int want = 16;
    const char *e = gos_env(GOS_ENV_SWEEP_SMS);
    if (e && atoi(e) > 0)
        want = atoi(e);
    if (want >= m->sm_count) {
        for (int s = 0; s < m->sm_count; s++)
            sms[s] = s;
        return m->sm_count;
    }
    /* want / 2 per partition, evenly spaced through each partition's SMs. */
    int n = 0, np = m->n_parts > 2 ? m->n_parts : 2;
    for (int p = 0; p < np; p++) {
        int list[GOS_MAX_SMS], k = 0;
        for (int s = 0; s < m->sm_count; s++)
            if (m->part_of[s] == p)
                list[k++] = s;
        int take = p < np - 1 ? want / np : want - (np - 1) * (want / np);
        if (take < 1)
            take = 1;
        if (take > k)
            take = k;
        for (int j = 0; j < take; j++)
            sms[n++] = list[(int)((long)j * k / take)];
    }
    if (n == 0)
        sms[n++] = m->ref_sm;
    return n;
}

/* N partitions: three lines of each 2 MB page, each labelled by the partition
 * whose SM sees it fastest (gos_numa_label_lines); the page's code is the
 * majority of label ^ in-page code. */
static int build_n(gos_device *d, const gos_numa_model *m, const gos_mem_buf *b, gos_numa_map *map)
{
    enum { L = 3 };
    uint64_t np = map->n_pages2m, n = np * L;
    uint64_t *a = malloc((n ? n : 1) * sizeof *a);
    int *lab = malloc((n ? n : 1) * sizeof *lab), rc;
    if (!a || !lab || n > 0x7fffffff) {
        free(a);
        free(lab);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < n; i++)
        a[i] = b->base + gos_sweep_offset(i, GOS_PAGE_2M / L) / GOS_LINE * GOS_LINE;
    if (!(rc = gos_numa_label_lines(d, m, a, (int)n, 2, lab)))
        for (uint64_t p = 0; p < np; p++) {
            int v[L], nv = 0;
            for (int k = 0; k < L; k++) {
                uint64_t i = p * L + k;
                if (lab[i] >= 0)
                    v[nv++] = lab[i] ^ gos_numa_code_in_page(map->masks, map->n_parities, a[i] - b->base);
            }
            int best = -1;
            for (int x = 0; x < nv && best < 0; x++) {
                int c = 0;
                for (int y = 0; y < nv; y++)
                    c += v[y] == v[x];
                if (2 * c > nv || (nv == 1))
                    best = v[x];
            }
            map->parity[p] = best < 0 ? 0xff : (uint8_t)best;
            map->n_unknown += best < 0;
        }
    free(a);
    free(lab);
    return rc;
}

int gos_numa_map_build(gos_device *d, const gos_numa_model *m, const gos_mem_buf *b,
                       gos_numa_map **out)
{
    double t0 = gos_now_s();
    gos_numa_map *map = calloc(1, sizeof *map);
    uint64_t np = b->bytes / GOS_PAGE_2M, n = np * PROBES_PER_PAGE;
    uint32_t *s = malloc(n * sizeof *s);
    if (!map || !s || !(map->parity = malloc(np ? np : 1))) {
        free(s);
        gos_numa_map_free(map);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    map->base = b->base;
    map->bytes = b->bytes;
    map->n_pages2m = np;
    map->in_page_mask = m->in_page_mask;
    map->n_parities = m->n_parities ? m->n_parities : 1;
    for (int j = 0; j < map->n_parities; j++)
        map->masks[j] = m->n_parities ? m->masks[j] : m->in_page_mask;
    if (m->multi) {
        free(s);
        int rc = build_n(d, m, b, map);
        if (rc) {
            gos_numa_map_free(map);
            return rc;
        }
        map->t_probe_s = gos_now_s() - t0;
        *out = map;
        return GOS_OK;
    }
    const uint64_t stride = GOS_PAGE_2M / PROBES_PER_PAGE;
    int sms[GOS_MAX_SMS], nsm = gos_numa_probers(m, sms);
    int rc = gos_mem_sweep(d, sms, nsm, b->base, n, stride, 2, s);
    if (rc) {
        free(s);
        gos_numa_map_free(map);
        return rc;
    }
    for (uint64_t p = 0; p < np; p++) {
        int vote = 0;
        double best = -1;
        int best_par = -1;
        for (int k = 0; k < PROBES_PER_PAGE; k++) {
            uint64_t i = p * PROBES_PER_PAGE + k;
            int part = gos_numa_classify(m, s[i]);
            if (part < 0)
                continue;
            int par = part ^ gos_hash_in_page(m->in_page_mask, gos_sweep_offset(i, stride));
            vote += par ? 1 : -1;
            double mg = margin(m, s[i]);
            if (mg > best) {
                best = mg;
                best_par = par;
            }
        }
        map->parity[p] = vote > 0 ? 1 : vote < 0 ? 0 : best_par < 0 ? 0xff : (uint8_t)best_par;
        map->n_unknown += map->parity[p] == 0xff;
    }
    free(s);
    map->t_probe_s = gos_now_s() - t0;
    *out = map;
    return GOS_OK;
}

void gos_numa_map_free(gos_numa_map *map)
{
    if (map)
        free(map->parity);
    free(map);
}

int gos_numa_partition_of(const gos_numa_map *map, uint64_t offset)
{
    if (offset >= map->bytes)
        return -1;
    uint8_t p = map->parity[offset / GOS_PAGE_2M];
    if (p == 0xff)
        return -1;
    if (map->n_parities > 1)
        return p ^ gos_numa_code_in_page(map->masks, map->n_parities, offset);
    return p ^ gos_hash_in_page(map->in_page_mask, offset);
}
