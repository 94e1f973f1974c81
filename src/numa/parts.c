/* SPDX-License-Identifier: Apache-2.0 */
/* parts.c: the memory-asymmetry discovery for N partitions, several dies and
 * several tiers (issue 26; paper 001 section 6.1 and appendix G, MI300X),
 * after the reference SM's histogram of discover.c step 1:
 *
 *   1. tiers: the histogram's peaks (peaks.c); the near tier is the lowest;
 *   2. affinity: every SM probes the same reference lines (twice, the minimum);
 *      its near set is the lines below the first threshold. Near sets of two
 *      partitions are disjoint, so SMs whose near sets overlap by 30 % or more
 *      (Jaccard) are one partition; the partitions found must be 2^k;
 *   3. tiers by partition pair: the median latency from the SMs of partition a
 *      to the lines near to partition b, put in the nearest tier; the lowest
 *      tier off the diagonal is "same die" when it groups the partitions into
 *      dies (every pair inside a group in it or below, every pair across above),
 *      the tiers above "other die"; with one tier off the diagonal, dies are not
 *      told apart ("other partition");
 *   4. hash: lines of the reference partition, bits flipped and labelled (the
 *      partition whose SM sees the line fastest), the parities by GF(2) algebra
 *      (gf2.c); partitions are renumbered so that partition p has code p;
 *   5. L2 hits per tier: lines of partition 0 warmed by the reference SM and
 *      timed by an SM of a partition in each tier.
 *
 * Address choices come from discover.c's seeded stream: the same device gives
 * the same probe pattern on every run. */
#include "common/status.h"
#include "numa/numa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* n lines probed `reps` times from SM s; the minimum per line into out. */
static int probe_min(gos_device *d, int s, const uint64_t *addrs, int n, int reps, uint32_t *out)
{
    uint64_t *a = malloc((size_t)n * reps * sizeof *a);
    uint32_t *c = malloc((size_t)n * reps * sizeof *c);
    int rc = GOS_ENOMEM;
    if (!a || !c) {
        gos_fail(rc, "out of memory");
        goto out;
    }
    for (int t = 0; t < reps; t++)
        memcpy(a + (size_t)t * n, addrs, (size_t)n * sizeof *a);
    if ((rc = gos_mem_latency(d, GOS_LAT_HBM, s, s, a, n * reps, c)))
        goto out;
    for (int i = 0; i < n; i++) {
        uint32_t x = c[i];
        for (int t = 1; t < reps; t++)
            x = c[(size_t)t * n + i] < x ? c[(size_t)t * n + i] : x;
        out[i] = x;
    }
out:
    free(a);
    free(c);
    return rc;
}

int gos_numa_label_lines(gos_device *d, const gos_numa_model *m, const uint64_t *addrs, int n, int reps,
                         int *labels)
{
    uint32_t *c = malloc((size_t)n * sizeof *c), *best = malloc((size_t)n * sizeof *best);
    int rc = c && best ? GOS_OK : gos_fail(GOS_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < n; i++)
        best[i] = GOS_LAT_NONE, labels[i] = -1;
    for (int p = 0; !rc && p < m->n_parts; p++) {
        if ((rc = probe_min(d, m->rep_sm[p], addrs, n, reps, c)))
            break;
        for (int i = 0; i < n; i++)
            if (c[i] != GOS_LAT_NONE && c[i] < best[i] && c[i] < m->tiers.threshold)
                best[i] = c[i], labels[i] = p;
    }
    free(c);
    free(best);
    return rc;
}

/* Labels of bases ^ offset, the majority over the bases (3/4 of them). */
typedef struct {
    gos_device *d;
    gos_numa_model *m;
    const uint64_t *bases;
    int n_bases;
} flip_ctx;

static int label_offsets(void *vctx, const uint64_t *offs, int n, int *labels)
{
    flip_ctx *x = vctx;
    int nb = x->n_bases, total = n * nb, rc;
    uint64_t *a = calloc((size_t)(total > 0 ? total : 1), sizeof *a);
    int *l = malloc((size_t)(total > 0 ? total : 1) * sizeof *l);
    if (!a || !l || total <= 0) {
        free(a);
        free(l);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nb; k++)
            a[(size_t)i * nb + k] = x->bases[k] ^ offs[i];
    if (!(rc = gos_numa_label_lines(x->d, x->m, a, total, 2, l)))
        for (int i = 0; i < n; i++) {
            int cnt[GOS_MAX_PARTS] = {0}, best = 0;
            for (int k = 0; k < nb; k++)
                if (l[(size_t)i * nb + k] >= 0)
                    cnt[l[(size_t)i * nb + k]]++;
            for (int p = 1; p < x->m->n_parts; p++)
                if (cnt[p] > cnt[best])
                    best = p;
            labels[i] = 4 * cnt[best] >= 3 * nb ? best : -1;
        }
    free(a);
    free(l);
    return rc;
}

/* Step 3's dies: the lowest tier off the diagonal groups partitions into dies
 * when it is an equivalence (pairs in a group at or below it, across above). */
static void find_dies(gos_numa_model *m)
{
    int np = m->n_parts, low = GOS_MAX_TIERS, high = -1;
    for (int a = 0; a < np; a++)
        for (int b = 0; b < np; b++)
            if (a != b) {
                low = m->pair_tier[a][b] < low ? m->pair_tier[a][b] : low;
                high = m->pair_tier[a][b] > high ? m->pair_tier[a][b] : high;
            }
    for (int t = 0; t < m->n_tiers; t++)
        m->tier[t].relation = t == 0 ? GOS_REL_SAME_PART : GOS_REL_OTHER_PART;
    m->n_dies = 0;
    if (high <= low)
        return;
    int die[GOS_MAX_PARTS], nd = 0;
    for (int a = 0; a < np; a++)
        die[a] = -1;
    for (int a = 0; a < np; a++) {
        if (die[a] < 0)
            die[a] = nd++;
        for (int b = 0; b < np; b++)
            if (b != a && m->pair_tier[a][b] <= low) {
                if (die[b] >= 0 && die[b] != die[a])
                    return;
                die[b] = die[a];
            }
    }
    for (int a = 0; a < np; a++)
        for (int b = 0; b < np; b++)
            if (a != b && (die[a] == die[b]) != (m->pair_tier[a][b] <= low))
                return; /* not an equivalence: relations stay unknown */
    if (nd < 2 || nd == np)
        return;
    m->n_dies = nd;
    memcpy(m->die_of_part, die, sizeof die);
    for (int t = 1; t < m->n_tiers; t++)
        m->tier[t].relation = t <= low ? GOS_REL_SAME_DIE : GOS_REL_OTHER_DIE;
}

/* The state of one discovery (gos_numa_discover_n): nref reference lines
 * probed from ns SMs, grouped into ncl partitions. */
typedef struct {
    gos_device *d;
    gos_numa_model *m;
    const gos_tiers_n *T;
    double thr;                    /* the near tier's upper threshold */
    int ns, nref, ncl;
    uint32_t *lat, *tmp;           /* lat[s * nref + i]: SM s to line i */
    unsigned char *near, *cons;    /* near[s * nref + i]; cons[c * nref + i]: partition c's near set */
    int *cl;                       /* cl[s]: SM s's partition */
    int members[GOS_MAX_PARTS], rep[GOS_MAX_PARTS];
} disc_n;

/* Step 1's tiers into the model's two-tier summary. */
static void disc_tiers(gos_numa_model *m, const gos_tiers_n *T)
{
    m->tiers.threshold = T->threshold[0];
    m->tiers.low = T->median[0];
    m->tiers.high = T->median[T->n - 1];
    m->tiers.frac_low = T->fraction[0];
    m->tiers.n = T->samples;
    m->tiers.n_outliers = T->n_outliers;
    m->hbm_local = T->median[0];
    m->hbm_remote = T->median[T->n - 1];
    m->have_tiers = 1;
}

/* Step 2's greedy clustering on the near sets; a cluster's set is its first
 * SM's, then its members' majority. */
static int disc_cluster(disc_n *x)
{
    gos_numa_model *m = x->m;
    int ns = x->ns, nref = x->nref;
    for (int s0 = 0; s0 < ns; s0++) {
        int s = (s0 + m->ref_sm) % ns, best = -1;
        double bj = 0;
        const unsigned char *p = x->near + (size_t)s * nref;
        for (int c = 0; c < x->ncl; c++) {
            const unsigned char *y = x->near + (size_t)x->rep[c] * nref;
            int inter = 0, uni = 0;
            for (int i = 0; i < nref; i++)
                inter += p[i] & y[i], uni += p[i] | y[i];
            double j = uni ? (double)inter / uni : 0;
            if (j > bj)
                bj = j, best = c;
        }
        if (best >= 0 && bj >= 0.3) { /* two partitions' near sets are disjoint */
            x->cl[s] = best;
            x->members[best]++;
            m->sm_sep[s] = bj;
            continue;
        }
        if (x->ncl == GOS_MAX_PARTS)
            return gos_fail(GOS_EAMBIGUOUS, "more than %d groups of SMs by near lines", GOS_MAX_PARTS);
        int k = 0;
        for (int i = 0; i < nref; i++)
            k += p[i];
        if (k == 0)
            return gos_fail(GOS_EAMBIGUOUS, "SM %d finds none of %d reference lines near", s, nref);
        x->rep[x->ncl] = s;
        x->cl[s] = x->ncl;
        x->members[x->ncl++] = 1;
        m->sm_sep[s] = 1;
    }
    return GOS_OK;
}

/* Step 2's partitions: each one's near set by majority, checked disjoint and
 * large enough, their count a power of two; each SM's near and far medians. */
static int disc_consensus(disc_n *x)
{
    gos_numa_model *m = x->m;
    int ns = x->ns, nref = x->nref, ncl = x->ncl;
    for (int s = 0; s < ns; s++)
        for (int i = 0; i < nref; i++)
            x->cons[(size_t)x->cl[s] * nref + i] += x->near[(size_t)s * nref + i];
    for (int c = 0; c < ncl; c++)
        for (int i = 0; i < nref; i++)
            x->cons[(size_t)c * nref + i] = 2 * x->cons[(size_t)c * nref + i] > x->members[c];
    for (int i = 0; i < nref; i++) {
        int owners = 0;
        for (int c = 0; c < ncl; c++)
            owners += x->cons[(size_t)c * nref + i];
        if (owners > 1)
            return gos_fail(GOS_EAMBIGUOUS, "reference line %d is near to %d groups of SMs: no partitions", i,
                            owners);
    }
    for (int c = 0; c < ncl; c++) {
        int k = 0;
        for (int i = 0; i < nref; i++)
            k += x->cons[(size_t)c * nref + i];
        if (k < 4)
            return gos_fail(GOS_EAMBIGUOUS, "the SMs of partition %d (SM %d) agree on %d near lines of %d: "
                                            "too few to place them", c, x->rep[c], k, nref);
    }
    for (int s = 0; s < ns; s++)
        if (m->sm_sep[s] < 0.7)
            m->ambiguous[m->n_ambiguous++] = s;
    if (ncl < 2)
        return gos_fail(GOS_EAMBIGUOUS, "every SM finds the same lines near: one partition");
    if (ncl & (ncl - 1))
        return gos_fail(GOS_EAMBIGUOUS, "%d memory partitions found: a hash of XOR parities needs 2^k "
                                        "(non-power-of-two partition counts are not modelled)", ncl);
    m->n_parts = ncl;
    for (int c = 0; c < ncl; c++)
        m->rep_sm[c] = x->rep[c];
    for (int s = 0; s < ns; s++) {
        m->part_of[s] = x->cl[s];
        int nn = 0, nf = 0;
        uint32_t *v = x->tmp, *w = x->tmp + nref;
        for (int i = 0; i < nref; i++) {
            uint32_t l = x->lat[(size_t)s * nref + i];
            if (x->cons[(size_t)x->cl[s] * nref + i])
                v[nn++] = l;
            else if (l >= x->thr)
                w[nf++] = l;
        }
        m->sm_near[s] = gos_lat_median(v, nn);
        m->sm_far[s] = gos_lat_median(w, nf);
    }
    return GOS_OK;
}

/* Step 3: the tier of each partition pair, symmetric, near only on the
 * diagonal, every tier used; then the dies. */
static int disc_pair_tiers(disc_n *x)
{
    gos_numa_model *m = x->m;
    const gos_tiers_n *T = x->T;
    int ns = x->ns, nref = x->nref, ncl = x->ncl;
    m->n_tiers = T->n;
    for (int t = 0; t < T->n; t++)
        m->tier[t] = (gos_tier){.cycles = T->median[t]};
    int used[GOS_MAX_TIERS] = {0};
    for (int p = 0; p < ncl; p++)
        for (int q = 0; q < ncl; q++) {
            int k = 0;
            for (int s = 0; s < ns; s++)
                if (x->cl[s] == p)
                    for (int i = 0; i < nref; i++)
                        if (x->cons[(size_t)q * nref + i] && x->lat[(size_t)s * nref + i] != GOS_LAT_NONE)
                            x->tmp[k++] = x->lat[(size_t)s * nref + i];
            if (!k)
                return gos_fail(GOS_EAMBIGUOUS, "no reference line is near to partition %d", q);
            double med = gos_lat_median(x->tmp, k);
            int bt = 0;
            for (int t = 1; t < T->n; t++)
                if (fabs(med - T->median[t]) < fabs(med - T->median[bt]))
                    bt = t;
            m->pair_tier[p][q] = (signed char)bt;
        }
    for (int p = 0; p < ncl; p++)
        for (int q = 0; q < ncl; q++) {
            if ((p == q) != (m->pair_tier[p][q] == 0))
                return gos_fail(GOS_EAMBIGUOUS, "partitions %d and %d: SMs of %d see %d's lines in tier %d", p, q,
                                p, q, m->pair_tier[p][q]);
            int hi = m->pair_tier[p][q] > m->pair_tier[q][p] ? m->pair_tier[p][q] : m->pair_tier[q][p];
            m->pair_tier[p][q] = m->pair_tier[q][p] = (signed char)hi;
            used[hi] = 1;
        }
    for (int t = 0; t < T->n; t++)
        if (!used[t])
            return gos_fail(GOS_EAMBIGUOUS, "latency tier %d (%.0f cycles) holds no partition pair", t,
                            T->median[t]);
    find_dies(m);
    m->have_affinity = 1;
    return GOS_OK;
}

/* Step 4's renumbering: partition index = code (code_of[p]), dies numbered by
 * first partition. */
static void disc_renumber(gos_numa_model *m, int ncl, int ns, const int *cl, const int *code_of)
{
    signed char pt[GOS_MAX_PARTS][GOS_MAX_PARTS];
    int die[GOS_MAX_PARTS], rs[GOS_MAX_PARTS];
    for (int p = 0; p < ncl; p++) {
        rs[code_of[p]] = m->rep_sm[p];
        die[code_of[p]] = m->die_of_part[p];
        for (int q = 0; q < ncl; q++)
            pt[code_of[p]][code_of[q]] = m->pair_tier[p][q];
    }
    memcpy(m->pair_tier, pt, sizeof pt);
    memcpy(m->die_of_part, die, sizeof die);
    memcpy(m->rep_sm, rs, sizeof rs);
    for (int s = 0; s < ns; s++)
        m->part_of[s] = code_of[cl[s]];
    if (m->n_dies) {
        int ren[GOS_MAX_PARTS], nd = 0;
        for (int i = 0; i < GOS_MAX_PARTS; i++)
            ren[i] = -1;
        for (int p = 0; p < ncl; p++) {
            if (ren[m->die_of_part[p]] < 0)
                ren[m->die_of_part[p]] = nd++;
            m->die_of_part[p] = ren[m->die_of_part[p]];
        }
    }
}

/* Step 4: bases are lines the reference SM found near (its partition, cluster
 * of ref); the parities by GF(2) algebra, then the renumbering. */
static int disc_hash(disc_n *x, const gos_numa_opts *o, const uint64_t *a, int n)
{
    gos_numa_model *m = x->m;
    int ncl = x->ncl, nbase = o->flip_bases > 2 * ncl ? o->flip_bases : 2 * ncl, k = 0, rc;
    uint64_t *bases = malloc(nbase * sizeof *bases);
    if (!bases)
        return gos_fail(GOS_ENOMEM, "out of memory");
    for (int i = x->nref; i < n && k < nbase; i++)
        if (m->hist_samples[i] < x->thr)
            bases[k++] = a[i];
    if (k < 3) {
        free(bases);
        return gos_fail(GOS_EAMBIGUOUS, "too few near lines for the hash (%d)", k);
    }
    flip_ctx fx = {.d = x->d, .m = m, .bases = bases, .n_bases = k};
    int code_of[GOS_MAX_PARTS], kk = 0;
    rc = gos_gf2_codes(ncl, x->cl[m->ref_sm], label_offsets, &fx, code_of, m->masks, &kk);
    free(bases);
    if (rc)
        return rc;
    m->n_parities = kk;
    m->in_page_mask = 0;
    for (int j = 0; j < kk; j++)
        m->in_page_mask |= m->masks[j];
    m->granularity = m->in_page_mask ? 1ull << __builtin_ctz(m->in_page_mask) : GOS_PAGE_2M;
    disc_renumber(m, ncl, x->ns, x->cl, code_of);
    m->have_hash = 1;
    return GOS_OK;
}

/* Step 5: L2 hits per tier, lines of partition 0 (the reference SM's near lines). */
static int disc_l2(disc_n *x, const gos_numa_opts *o, const uint64_t *a, int n)
{
    gos_numa_model *m = x->m;
    int nl = o->l2_samples, got = 0, rc = GOS_OK;
    uint64_t *l2a = malloc((size_t)nl * sizeof *l2a);
    uint32_t *l2c = malloc((size_t)nl * sizeof *l2c);
    if (!l2a || !l2c) {
        free(l2a);
        free(l2c);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n && got < nl; i++)
        if (m->hist_samples[i] < x->thr)
            l2a[got++] = a[i];
    for (int t = 0; t < m->n_tiers && got && !rc; t++) {
        int q = -1;
        for (int p = 0; p < x->ncl && q < 0; p++)
            if (m->pair_tier[p][0] == t)
                q = p;
        if (q < 0)
            continue;
        if (!(rc = gos_mem_latency(x->d, GOS_LAT_L2, m->rep_sm[q], m->ref_sm, l2a, got, l2c)))
            m->tier[t].l2_cycles = gos_lat_median(l2c, got);
    }
    free(l2a);
    free(l2c);
    if (rc)
        return rc;
    m->l2_local = m->tier[0].l2_cycles;
    m->l2_remote = m->tier[m->n_tiers - 1].l2_cycles;
    m->concurrent_agreement = -1; /* not measured on this path */
    return GOS_OK;
}

int gos_numa_discover_n(gos_device *d, const gos_numa_opts *o, const gos_mem_buf *b, const uint64_t *a,
                        int n, gos_numa_model *m)
{
    (void)b;
    const gos_tiers_n *T = &m->tiers_n;
    m->multi = 1;
    if (T->n < 2)
        return gos_fail(GOS_EAMBIGUOUS, "latencies show one tier: no local/remote split");
    disc_tiers(m, T);
    disc_n x = {.d = d, .m = m, .T = T, .thr = T->threshold[0], .ns = m->sm_count};
    int ns = x.ns, rc = GOS_OK;
    /* 2. Enough reference lines for two dozen near ones per partition. */
    int want = (int)ceil(24.0 / fmax(T->fraction[0], 0.01));
    int nref = o->affinity_per_sm > want ? o->affinity_per_sm : want;
    nref = x.nref = nref > n ? n : nref > 2048 ? 2048 : nref;
    x.lat = malloc((size_t)ns * nref * sizeof *x.lat);
    x.tmp = malloc((size_t)(ns > 2 ? ns : 2) * nref * sizeof *x.tmp);
    x.near = malloc((size_t)ns * nref);
    x.cons = calloc((size_t)GOS_MAX_PARTS, nref);
    x.cl = malloc(ns * sizeof *x.cl);
    if (!x.lat || !x.tmp || !x.near || !x.cons || !x.cl) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    for (int s = 0; s < ns; s++) {
        if ((rc = probe_min(d, s, a, nref, 2, x.lat + (size_t)s * nref)))
            goto out;
        for (int i = 0; i < nref; i++)
            x.near[(size_t)s * nref + i] = x.lat[(size_t)s * nref + i] < x.thr;
    }
    if ((rc = disc_cluster(&x)) || (rc = disc_consensus(&x)) || (rc = disc_pair_tiers(&x)) ||
        (rc = disc_hash(&x, o, a, n)))
        goto out;
    rc = disc_l2(&x, o, a, n);
out:
    free(x.lat);
    free(x.tmp);
    free(x.near);
    free(x.cons);
    free(x.cl);
    return rc;
}
