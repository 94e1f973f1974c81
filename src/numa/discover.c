/* SPDX-License-Identifier: Apache-2.0 */
/* discover.c: the memory-asymmetry discovery on a device (paper 001 section 6.1,
 * appendix C), from nothing but latency probes:
 *
 *   1. HBM latency distribution from the reference SM over random lines of a
 *      1 GB buffer of 2 MB pages -> two tiers and the threshold (tiers.c);
 *   2. bit flips 7..20 around random base lines -> in-page hash bits and the
 *      interleave granularity (hash.c);
 *   3. the samples of step 1, now explained by the in-page hash, give each 2 MB
 *      page's parity (the unseen physical bits above the page);
 *   4. every SM in turn probes the same reference lines, labelled near or far
 *      by the reference SM; an SM is in the reference SM's partition when the
 *      near-labelled lines are its fast ones (comparing medians, so no global
 *      threshold is assumed to hold for every SM). A diagnostic repeats the
 *      decision with all SMs probing at once, on lines predicted by the hash;
 *   5. L2-hit latency, local and remote (appendix C.2).
 *
 * Address choices are seeded with a constant: the same device gives the same
 * probe pattern on every run. */
#include "common/jsonio.h"
#include "common/clock.h"
#include "numa/numa.h"

#include "common/rng.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gos_numa_opts_default(gos_numa_opts *o)
{
    *o = (gos_numa_opts){.hist_samples = 16384, .flip_bases = 16, .affinity_per_sm = 64, .l2_samples = 512,
                         .buf_bytes = 1ull << 30};
}

void gos_numa_model_free(gos_numa_model *m)
{
    free(m->hist_samples);
    free(m->l2_samples[0]);
    free(m->l2_samples[1]);
    m->hist_samples = m->l2_samples[0] = m->l2_samples[1] = NULL;
}

static uint64_t rand_line(gos_rng *r, uint64_t bytes)
{
    return (gos_rng_u64(r) % (bytes / GOS_LINE)) * GOS_LINE;
}

/* Near (1) / far (0) / unknown (-1) from the reference SM's threshold. */
static signed char near_of(uint32_t c, double thr)
{
    return c == GOS_LAT_NONE ? -1 : c < thr;
}

/* Median of three samples (GOS_LAT_NONE sorts last, as "unknown"). */
static uint32_t med3(uint32_t a, uint32_t b, uint32_t c)
{
    if (a > b) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    if (b > c)
        b = c;
    return a > b ? a : b;
}

/* Step 2: per base, the base and its 14 flips, each probed three times (median). */
static int find_hash(gos_device *d, const gos_mem_buf *b, gos_rng *r, int n_base, int ref,
                     double thr, uint32_t *mask, double *frac)
{
    const int nb = GOS_HASH_HI - GOS_HASH_LO + 1, per = nb + 1, reps = 3;
    int n = n_base * per;
    uint64_t *a = malloc((size_t)n * reps * sizeof *a);
    uint32_t *c = malloc((size_t)n * reps * sizeof *c);
    signed char *nr = malloc(n_base), *fl = malloc((size_t)nb * n_base);
    int rc = GOS_ENOMEM;
    if (!a || !c || !nr || !fl) {
        gos_fail(rc, "out of memory");
        goto out;
    }
    for (int k = 0; k < n_base; k++) {
        uint64_t off = rand_line(r, b->bytes);
        a[k * per] = b->base + off;
        for (int j = 0; j < nb; j++)
            a[k * per + 1 + j] = b->base + (off ^ (1ull << (GOS_HASH_LO + j)));
    }
    for (int t = 1; t < reps; t++)
        memcpy(a + (size_t)t * n, a, (size_t)n * sizeof *a);
    if ((rc = gos_mem_latency(d, GOS_LAT_HBM, ref, ref, a, n * reps, c)))
        goto out;
    for (int i = 0; i < n; i++) /* median of the three: robust both ways */
        c[i] = med3(c[i], c[(size_t)n + i], c[2 * (size_t)n + i]);
    for (int k = 0; k < n_base; k++) {
        nr[k] = near_of(c[k * per], thr);
        for (int j = 0; j < nb; j++)
            fl[j * n_base + k] = near_of(c[k * per + 1 + j], thr);
    }
    rc = gos_hash_from_flips(nr, fl, n_base, mask, frac);
out:
    free(a);
    free(c);
    free(nr);
    free(fl);
    return rc;
}

/* Step 3: majority parity of each 2 MB page from the histogram samples
 * (0xff where a page had no sample or a tie). */
static uint8_t *page_parity(const gos_mem_buf *b, const uint64_t *addrs, const uint32_t *c, int n,
                            double thr, uint32_t mask)
{
    uint64_t np = b->bytes / GOS_PAGE_2M;
    int *vote = calloc(np, sizeof *vote);
    uint8_t *par = malloc(np);
    if (!vote || !par) {
        free(vote);
        free(par);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        signed char nr = near_of(c[i], thr);
        if (nr < 0)
            continue;
        uint64_t off = addrs[i] - b->base;
        int part = nr ? 0 : 1;
        vote[off / GOS_PAGE_2M] += (part ^ gos_hash_in_page(mask, off)) ? 1 : -1;
    }
    for (uint64_t p = 0; p < np; p++)
        par[p] = vote[p] > 0 ? 1 : vote[p] < 0 ? 0 : 0xff;
    free(vote);
    return par;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static double median_of(uint32_t *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_u32);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

/* Step 4a: reference lines, labelled by the reference SM itself (median of
 * three probes): up to n/2 clearly near and n/2 clearly far lines of step 1. */
static int ref_lines(gos_device *d, const uint64_t *ha, const uint32_t *hc, int nh, int n,
                     gos_numa_model *m, uint64_t *lines, signed char *label, int *n_out)
{
    double thr = m->tiers.threshold, gap = m->tiers.high - m->tiers.low;
    int k = 0, cnt[2] = {0, 0};
    for (int i = 0; i < nh && k < n; i++) {
        if (hc[i] == GOS_LAT_NONE)
            continue;
        int near = hc[i] < thr - 0.25 * gap, far = hc[i] > thr + 0.25 * gap && hc[i] < m->tiers.high + gap;
        if ((near && cnt[1] < n / 2) || (far && cnt[0] < n / 2)) {
            lines[k++] = ha[i];
            cnt[near ? 1 : 0]++;
        }
    }
    uint64_t *a = malloc(3 * (size_t)k * sizeof *a);
    uint32_t *c = malloc(3 * (size_t)k * sizeof *c);
    if (!a || !c) {
        free(a);
        free(c);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (int t = 0; t < 3; t++)
        memcpy(a + (size_t)t * k, lines, k * sizeof *a);
    int rc = gos_mem_latency(d, GOS_LAT_HBM, m->ref_sm, m->ref_sm, a, 3 * k, c);
    for (int i = 0; !rc && i < k; i++)
        label[i] = near_of(med3(c[i], c[(size_t)k + i], c[2 * (size_t)k + i]), thr);
    free(a);
    free(c);
    *n_out = k;
    return rc;
}

/* Step 4b: SM s probes the reference lines `reps` times (min per line); its
 * separation is (median of far-labelled - median of near-labelled) / gap:
 * about +1 for an SM of the reference SM's partition, -1 for the other. */
static int sm_separation(gos_device *d, int s, const uint64_t *lines, const signed char *label,
                         int k, int reps, const gos_numa_model *m, double *near_med, double *far_med,
                         double *sep)
{
    uint64_t *a = malloc((size_t)reps * k * sizeof *a);
    uint32_t *c = malloc((size_t)reps * k * sizeof *c), *v[2] = {malloc(k * 4), malloc(k * 4)};
    int rc = GOS_ENOMEM, nv[2] = {0, 0};
    if (!a || !c || !v[0] || !v[1]) {
        gos_fail(rc, "out of memory");
        goto out;
    }
    for (int t = 0; t < reps; t++)
        memcpy(a + (size_t)t * k, lines, k * sizeof *a);
    if ((rc = gos_mem_latency(d, GOS_LAT_HBM, s, s, a, reps * k, c)))
        goto out;
    for (int i = 0; i < k; i++) {
        uint32_t x = c[i];
        for (int t = 1; t < reps; t++)
            x = c[(size_t)t * k + i] < x ? c[(size_t)t * k + i] : x;
        if (label[i] >= 0 && x != GOS_LAT_NONE)
            v[label[i]][nv[label[i]]++] = x;
    }
    if (nv[0] < 3 || nv[1] < 3) {
        rc = gos_fail(GOS_EAMBIGUOUS, "SM %d: too few labelled reference lines (%d far, %d near)", s,
                      nv[0], nv[1]);
        goto out;
    }
    *near_med = median_of(v[1], nv[1]);
    *far_med = median_of(v[0], nv[0]);
    double gap = m->tiers.high - m->tiers.low;
    *sep = (*far_med - *near_med) / (gap > 0 ? gap : 1);
out:
    free(a);
    free(c);
    free(v[0]);
    free(v[1]);
    return rc;
}

/* Step 4: every SM, one at a time, on the same reference lines (one launch per
 * SM: no SM disturbs another's lines). An SM whose separation stays under 0.3
 * after a second, longer try is listed as ambiguous (its partition is the sign). */
static int find_affinity(gos_device *d, const uint64_t *ha, const uint32_t *hc, int nh, int n_ref,
                         gos_numa_model *m)
{
    uint64_t *lines = malloc(n_ref * sizeof *lines);
    signed char *label = malloc(n_ref);
    int k = 0, rc;
    if (!lines || !label) {
        free(lines);
        free(label);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    if ((rc = ref_lines(d, ha, hc, nh, n_ref, m, lines, label, &k)))
        goto out;
    for (int s = 0; s < m->sm_count; s++) {
        double nm, fm, sep;
        if ((rc = sm_separation(d, s, lines, label, k, 2, m, &nm, &fm, &sep)))
            goto out;
        if (fabs(sep) < 0.3 && (rc = sm_separation(d, s, lines, label, k, 6, m, &nm, &fm, &sep)))
            goto out;
        m->sm_sep[s] = sep;
        m->part_of[s] = sep > 0 ? 0 : 1;
        m->sm_near[s] = sep > 0 ? nm : fm; /* the SM's own near tier */
        m->sm_far[s] = sep > 0 ? fm : nm;
        if (fabs(sep) < 0.3)
            m->ambiguous[m->n_ambiguous++] = s;
    }
    if (m->part_of[m->ref_sm] != 0)
        rc = gos_fail(GOS_EAMBIGUOUS, "the reference SM %d disagrees with its own histogram", m->ref_sm);
out:
    free(lines);
    free(label);
    return rc;
}

/* Diagnostic: the same decision with every SM probing lines of its own at the
 * same time (partitions predicted from the hash and page parities). The share
 * of SMs on which it agrees with step 4 tells whether concurrent probing (the
 * sweeps) disturbs latencies. */
static int concurrent_check(gos_device *d, const gos_mem_buf *b, const uint8_t *par, int per_sm,
                            gos_numa_model *m)
{
    int ns = d->info.sm_count, rc = GOS_ENOMEM, agree = 0;
    size_t n = (size_t)ns * per_sm;
    uint64_t lines = b->bytes / GOS_LINE;
    int *sms = malloc(ns * sizeof *sms);
    uint64_t *a = malloc(n * sizeof *a);
    uint32_t *c = malloc(n * sizeof *c), *v[2] = {malloc(per_sm * sizeof(uint32_t)),
                                                   malloc(per_sm * sizeof(uint32_t))};
    signed char *pred = malloc(n);
    if (!sms || !a || !c || !v[0] || !v[1] || !pred) {
        gos_fail(rc, "out of memory");
        goto out;
    }
    for (int s = 0; s < ns; s++)
        sms[s] = s;
    /* Line k * P mod lines is distinct for distinct k (P an odd prime, not a
     * factor of the line count). Lines whose page parity is unknown are skipped. */
    for (size_t k = 0; k < n; k++) {
        uint64_t off = ((uint64_t)(k + 7) * 1000003ull % lines) * GOS_LINE;
        a[k] = b->base + off;
        uint8_t p = par[off / GOS_PAGE_2M];
        pred[k] = p == 0xff ? -1 : (signed char)(p ^ gos_hash_in_page(m->in_page_mask, off));
    }
    if ((rc = gos_mem_latency_multi(d, sms, ns, a, per_sm, c)))
        goto out;
    for (int s = 0; s < ns; s++) {
        int nv[2] = {0, 0};
        for (int j = 0; j < per_sm; j++) {
            size_t k = (size_t)s * per_sm + j;
            if (pred[k] >= 0 && c[k] != GOS_LAT_NONE)
                v[pred[k]][nv[pred[k]]++] = c[k];
        }
        if (nv[0] && nv[1])
            agree += (median_of(v[0], nv[0]) < median_of(v[1], nv[1]) ? 0 : 1) == m->part_of[s];
    }
    m->concurrent_agreement = (double)agree / ns;
    rc = GOS_OK;
out:
    free(sms);
    free(a);
    free(c);
    free(v[0]);
    free(v[1]);
    free(pred);
    return rc;
}

/* Step 5: lines of partition 0 warmed by the reference SM, timed by itself
 * (local hit) and by an SM of partition 1 (remote hit). Lines are picked by
 * the page parities and the in-page hash found so far. */
typedef struct {
    const gos_mem_buf *b;
    const uint8_t *par;
    gos_rng *r;
    uint32_t in_page_mask;
} l2_pick;

static int pick_by_parity(void *ctx, int q, int n, uint64_t *out)
{
    const l2_pick *k = ctx;
    for (int i = 0, tries = 0; i < n; tries++) {
        if (tries > 1000 * n)
            return gos_fail(GOS_EAMBIGUOUS, "no page parity known: cannot pick partition-%d lines", q);
        uint64_t off = rand_line(k->r, k->b->bytes);
        uint8_t p = k->par[off / GOS_PAGE_2M];
        if (p != 0xff && (p ^ gos_hash_in_page(k->in_page_mask, off)) == q)
            out[i++] = k->b->base + off;
    }
    return GOS_OK;
}

static int find_l2(gos_device *d, const gos_mem_buf *b, const uint8_t *par, gos_rng *r, int n,
                   gos_numa_model *m)
{
    int sm[2] = {m->ref_sm, -1};
    for (int s = 0; s < m->sm_count && sm[1] < 0; s++)
        if (m->part_of[s] == 1)
            sm[1] = s;
    if (sm[1] < 0)
        return gos_fail(GOS_EAMBIGUOUS, "no SM is in the second partition");
    l2_pick k = {.b = b, .par = par, .r = r, .in_page_mask = m->in_page_mask};
    int rc = gos_l2_hits(d, sm, 1, n, pick_by_parity, &k, m->l2_samples, &m->l2_local, &m->l2_remote);
    if (!rc)
        m->n_l2 = n;
    return rc;
}

/* Which path the histogram calls for. Two tiers with a near share of 35..65 %
 * (Otsu, as always) are two partitions, unless the histogram's peaks show three
 * or more tiers of at least 10 % each: a real H200's slow tail is lumpy (peaks
 * of 2-5 % above the far tier, seen in every committed chart), never a tier of
 * its own. Anything else with two or more peaks: N partitions (parts.c). */
static int use_n_path(gos_numa_model *m, int n)
{
    gos_tiers two;
    int otsu = gos_tiers_find(m->hist_samples, n, &two) == GOS_OK && two.frac_low >= 0.35 && two.frac_low <= 0.65;
    if (gos_tiers_find_n(m->hist_samples, n, &m->tiers_n) != GOS_OK || m->tiers_n.n < 2)
        return 0;
    if (!otsu)
        return 1;
    int big = 0;
    for (int t = 0; t < m->tiers_n.n; t++)
        big += m->tiers_n.fraction[t] >= 0.10;
    return big >= 3 && big == m->tiers_n.n;
}

/* The two-partition model in the N-partition fields: one parity, two tiers. */
static void two_as_n(gos_numa_model *m)
{
    m->n_parts = 2;
    m->n_parities = 1;
    m->masks[0] = m->in_page_mask;
    m->rep_sm[0] = m->rep_sm[1] = -1;
    for (int s = 0; s < m->sm_count; s++)
        if (m->rep_sm[m->part_of[s] & 1] < 0)
            m->rep_sm[m->part_of[s] & 1] = s;
    m->n_tiers = 2;
    m->tier[0] = (gos_tier){.cycles = m->hbm_local, .l2_cycles = m->l2_local, .relation = GOS_REL_SAME_PART};
    m->tier[1] = (gos_tier){.cycles = m->hbm_remote, .l2_cycles = m->l2_remote, .relation = GOS_REL_OTHER_PART};
    m->pair_tier[0][0] = m->pair_tier[1][1] = 0;
    m->pair_tier[0][1] = m->pair_tier[1][0] = 1;
    m->n_dies = 0;
}

/* One discovery, its addresses drawn from `seed`. */
static int discover_once(gos_device *d, const gos_numa_opts *o, uint64_t seed, gos_numa_model *m)
{
    memset(m, 0, sizeof *m);
    memset(m->pair_tier, -1, sizeof m->pair_tier);
    m->sm_count = d->info.sm_count;
    m->ref_sm = 0;
    double t0 = gos_now_s(), t;
    gos_mem_buf *b = NULL;
    uint64_t *a = NULL;
    uint8_t *par = NULL;
    gos_rng r;
    gos_rng_seed(&r, seed);
    if (o->flip_bases < 3 || o->hist_samples < 100 || o->affinity_per_sm < 8 || o->l2_samples < 1)
        return gos_fail(GOS_EINVAL, "numa discovery options too small");
    uint64_t want = o->buf_bytes;
    if (d->info.mem_bytes && want > d->info.mem_bytes / 4) /* small devices */
        want = d->info.mem_bytes / 4 / GOS_PAGE_2M * GOS_PAGE_2M;
    if (want < 16 * GOS_PAGE_2M)
        want = 16 * GOS_PAGE_2M;
    int rc = gos_mem_alloc(d, want, &b);
    if (rc)
        return rc;
    int n = o->hist_samples;
    a = malloc((size_t)n * sizeof *a);
    m->hist_samples = malloc((size_t)n * sizeof(uint32_t));
    if (!a || !m->hist_samples) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto fail;
    }
    /* 1. */
    t = gos_now_s();
    for (int i = 0; i < n; i++)
        a[i] = b->base + rand_line(&r, b->bytes);
    if ((rc = gos_mem_latency(d, GOS_LAT_HBM, m->ref_sm, m->ref_sm, a, n, m->hist_samples)))
        goto fail;
    m->n_hist = n;
    if (use_n_path(m, n)) {
        m->t_hist_s = gos_now_s() - t;
        t = gos_now_s();
        rc = gos_numa_discover_n(d, o, b, a, n, m);
        m->t_affinity_s = gos_now_s() - t;
        free(a);
        gos_mem_free(d, b);
        m->t_total_s = gos_now_s() - t0;
        return rc;
    }
    if ((rc = gos_tiers_find(m->hist_samples, n, &m->tiers))) {
        m->t_hist_s = gos_now_s() - t;
        goto fail;
    }
    m->hbm_local = m->tiers.low;
    m->hbm_remote = m->tiers.high;
    m->have_tiers = 1;
    m->t_hist_s = gos_now_s() - t;
    /* 2. */
    t = gos_now_s();
    /* An unclear bit (between 25 % and 75 % of pairs changed) is usually a few
     * misclassified samples among 16 bases (seen once in three runs on an H200,
     * bit 20 at 25 %): ask again with four times the bases before giving up. */
    rc = find_hash(d, b, &r, o->flip_bases, m->ref_sm, m->tiers.threshold, &m->in_page_mask, m->flip_frac);
    if (rc == GOS_EAMBIGUOUS)
        rc = find_hash(d, b, &r, 4 * o->flip_bases, m->ref_sm, m->tiers.threshold, &m->in_page_mask,
                       m->flip_frac);
    if (rc)
        goto fail;
    m->granularity = m->in_page_mask ? 1ull << __builtin_ctz(m->in_page_mask) : GOS_PAGE_2M;
    m->have_hash = 1;
    m->t_hash_s = gos_now_s() - t;
    /* 3., 4. */
    t = gos_now_s();
    if (!(par = page_parity(b, a, m->hist_samples, n, m->tiers.threshold, m->in_page_mask))) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = find_affinity(d, a, m->hist_samples, n, o->affinity_per_sm, m)))
        goto fail;
    m->have_affinity = 1;
    if ((rc = concurrent_check(d, b, par, o->affinity_per_sm, m)))
        goto fail;
    m->t_affinity_s = gos_now_s() - t;
    /* 5. */
    t = gos_now_s();
    if ((rc = find_l2(d, b, par, &r, o->l2_samples, m)))
        goto fail;
    m->t_l2_s = gos_now_s() - t;
    free(a);
    free(par);
    gos_mem_free(d, b);
    m->t_total_s = gos_now_s() - t0;
    two_as_n(m);
    return GOS_OK;
fail:
    free(a);
    free(par);
    gos_mem_free(d, b);
    m->t_total_s = gos_now_s() - t0;
    return rc;
}

/* A discovery that is ambiguous (tiers that overlap, an unclear hash bit, SMs
 * that agree on no partition) is measured once more before it fails, on other
 * lines and with twice the histogram: a transient (another tenant, clocks
 * ramping) or an unlucky draw of lines should not fail a chart (issue 44). The
 * model says so (remeasured, first_try). */
int gos_numa_discover(gos_device *d, const gos_numa_opts *o, gos_numa_model *m)
{
    int rc = discover_once(d, o, 0x6e756d61u, m);
    if (rc != GOS_EAMBIGUOUS)
        return rc;
    char first[sizeof m->first_try];
    snprintf(first, sizeof first, "%s", gos_last_error());
    gos_numa_opts again = *o;
    again.hist_samples = 2 * o->hist_samples;
    gos_numa_model_free(m);
    rc = discover_once(d, &again, 0x6e756d62u, m);
    m->remeasured = 1;
    snprintf(m->first_try, sizeof m->first_try, "%s", first);
    if (rc)
        return gos_fail(rc, "%s (measured twice; the first try: %s)", gos_last_error(), first);
    return GOS_OK;
}

/* ---- the model in the chart ------------------------------------------------- */

int gos_numa_model_to_chip(const gos_numa_model *m, gos_chip *c)
{
    int np = m->n_parts >= 2 ? m->n_parts : 2;
    c->n_parts = np;
    for (int p = 0; p < np; p++) {
        c->parts[p].n_sms = 0;
        for (int s = 0; s < m->sm_count; s++)
            if (m->part_of[s] == p)
                c->parts[p].sms[c->parts[p].n_sms++] = s;
    }
    gos_parity par[GOS_MAX_PARITIES] = {{0}};
    int kp = m->n_parities ? m->n_parities : 1;
    for (int j = 0; j < kp; j++)
        par[j].in_page = m->n_parities ? m->masks[j] : m->in_page_mask;
    gos_chip_set_parities(c, par, kp, 0); /* physical bits are never measurable */
    c->hash_granularity = m->granularity;
    c->has_latency = np == 2;
    c->lat_hbm_local = m->hbm_local;
    c->lat_hbm_remote = m->hbm_remote;
    c->lat_l2_local = m->l2_local;
    c->lat_l2_remote = m->l2_remote;
    c->n_tiers = m->n_tiers;
    memcpy(c->tiers, m->tier, sizeof c->tiers);
    memset(c->pair_tier, -1, sizeof c->pair_tier);
    for (int p = 0; p < np && m->n_tiers; p++)
        for (int q = 0; q < np; q++)
            c->pair_tier[p][q] = m->pair_tier[p][q];
    c->n_dies = m->n_dies;
    memcpy(c->die_of_part, m->die_of_part, sizeof c->die_of_part);
    if (!c->json)
        c->json = json_object();
    json_t *numa = gos_json_child(c->json, "numa");
    json_object_del(gos_json_child(numa, "hash"), "physical_bits"); /* never measurable */
    if (m->multi)
        json_object_set_new(numa, "tier_thresholds_cycles", gos_json_reals(m->tiers_n.threshold, m->tiers_n.n - 1));
    else
        json_object_del(numa, "tier_thresholds_cycles");
    const gos_tiers *T = &m->tiers;
    GOS_JSON_PUT(numa, GOS_JI("reference_sm", m->ref_sm), GOS_JR("threshold_cycles", T->threshold),
                 GOS_JO("hbm_tiers",
                        GOS_JSON_OBJ(GOS_JR("near_median", T->low), GOS_JR("far_median", T->high),
                                     GOS_JR("near_mad", T->low_spread), GOS_JR("far_mad", T->high_spread),
                                     GOS_JR("near_fraction", T->frac_low), GOS_JI("samples", T->n),
                                     GOS_JI("outliers", T->n_outliers))));
    if (m->hist_samples)
        json_object_set_new(numa, "hbm_histogram", gos_hist_json(m->hist_samples, m->n_hist, 4));
    json_t *ev = json_object();
    for (int b = GOS_HASH_LO; b <= GOS_HASH_HI; b++) {
        char k[8];
        snprintf(k, sizeof k, "%d", b);
        json_object_set_new(ev, k, json_real(m->flip_frac[b]));
    }
    GOS_JSON_PUT(numa,
                 GOS_JO("sm_hbm_cycles", GOS_JSON_OBJ(GOS_JO("near", gos_json_reals(m->sm_near, m->sm_count)),
                                                      GOS_JO("far", gos_json_reals(m->sm_far, m->sm_count)),
                                                      GOS_JO("separation", gos_json_reals(m->sm_sep, m->sm_count)))),
                 GOS_JO("ambiguous_sms", gos_json_ints(m->ambiguous, m->n_ambiguous)),
                 GOS_JO("hash_flip_fraction", ev),
                 GOS_JO("time_s", GOS_JSON_OBJ(GOS_JR("histogram", m->t_hist_s), GOS_JR("hash", m->t_hash_s),
                                               GOS_JR("affinity", m->t_affinity_s), GOS_JR("l2", m->t_l2_s),
                                               GOS_JR("total", m->t_total_s))));
    if (!m->multi)
        json_object_set_new(numa, "concurrent_probe_agreement", json_real(m->concurrent_agreement));
    else
        json_object_del(numa, "concurrent_probe_agreement");
    if (m->remeasured)
        json_object_set_new(numa, "remeasured", GOS_JSON_OBJ(GOS_JS("first_try", m->first_try),
                                                             GOS_JI("hist_samples", m->n_hist)));
    else
        json_object_del(numa, "remeasured");
    return GOS_OK;
}

int gos_numa_model_from_chip(const gos_chip *c, gos_numa_model *m)
{
    memset(m, 0, sizeof *m);
    memset(m->pair_tier, -1, sizeof m->pair_tier);
    int multi = c->n_parts > 2;
    if (c->n_parts < 2 || (multi && (c->n_parities < 2 || c->n_parts != 1 << c->n_parities)))
        return gos_fail(GOS_EINVAL, "chip has %d memory partitions; the NUMA model needs 2, or 2^k with "
                                    "k hash parities (numa.hash.parities)", c->n_parts);
    m->multi = multi;
    m->n_parts = c->n_parts;
    m->sm_count = c->device.sm_count;
    for (int s = 0; s < GOS_MAX_SMS; s++)
        m->part_of[s] = 0;
    for (int p = 0; p < c->n_parts; p++)
        m->rep_sm[p] = c->parts[p].n_sms ? c->parts[p].sms[0] : 0;
    for (int p = 0; p < c->n_parts; p++)
        for (int i = 0; i < c->parts[p].n_sms; i++)
            m->part_of[c->parts[p].sms[i]] = p;
    if (multi) {
        m->n_parities = c->n_parities;
        for (int j = 0; j < c->n_parities; j++)
            m->in_page_mask |= m->masks[j] = c->parity[j].in_page;
    } else {
        for (int i = 0; i < c->n_in_page_bits; i++)
            m->in_page_mask |= 1u << c->in_page_bits[i];
        m->n_parities = 1;
        m->masks[0] = m->in_page_mask;
    }
    m->granularity = c->hash_granularity;
    m->n_tiers = c->n_tiers;
    memcpy(m->tier, c->tiers, sizeof m->tier);
    for (int p = 0; p < c->n_parts; p++)
        for (int q = 0; q < c->n_parts; q++)
            m->pair_tier[p][q] = (signed char)gos_chip_tier_of(c, p, q);
    m->n_dies = c->n_dies;
    memcpy(m->die_of_part, c->die_of_part, sizeof m->die_of_part);
    json_t *numa = json_object_get(c->json, "numa");
    json_t *thr = json_object_get(numa, "threshold_cycles");
    if (json_is_number(thr))
        m->tiers.threshold = json_number_value(thr);
    else if (c->n_tiers >= 2)
        m->tiers.threshold = 0.5 * (c->tiers[0].cycles + c->tiers[1].cycles);
    else if (c->has_latency)
        m->tiers.threshold = 0.5 * (c->lat_hbm_local + c->lat_hbm_remote);
    else
        return gos_fail(GOS_EINVAL, "chip has no HBM latency threshold");
    json_t *st = json_object_get(numa, "sm_hbm_cycles");
    json_t *near = json_object_get(st, "near"), *far = json_object_get(st, "far");
    for (int s = 0; s < m->sm_count; s++) {
        json_t *a = json_array_get(near, s), *b = json_array_get(far, s);
        if (json_is_number(a) && json_is_number(b)) {
            m->sm_near[s] = json_number_value(a);
            m->sm_far[s] = json_number_value(b);
        }
    }
    if (c->has_latency) {
        m->tiers.low = m->hbm_local = c->lat_hbm_local;
        m->tiers.high = m->hbm_remote = c->lat_hbm_remote;
        m->l2_local = c->lat_l2_local;
        m->l2_remote = c->lat_l2_remote;
    } else if (c->n_tiers >= 2) {
        m->tiers.low = m->hbm_local = c->tiers[0].cycles;
        m->tiers.high = m->hbm_remote = c->tiers[c->n_tiers - 1].cycles;
        m->l2_local = c->tiers[0].l2_cycles;
        m->l2_remote = c->tiers[c->n_tiers - 1].l2_cycles;
    }
    return GOS_OK;
}
