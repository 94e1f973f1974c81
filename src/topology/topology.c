/* SPDX-License-Identifier: Apache-2.0 */
/* topology.c: the two-phase SM-to-GPC inference (see topology.h). */
#include "common/clock.h"
#include "topology/topology.h"

#include "common/status.h"
#include "device/topo_ops.h"
#include "stats/stats.h"
#include "topology/unionfind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

void gos_topo_default_opts(gos_topo_opts *o)
{
    *o = (gos_topo_opts){.launches = 20, .min_cluster = 2, .max_cluster = 16, .repeats = 7, .threshold = 0.9,
                         .check_merge = 1, .tpc_by_contention = 1, .crossbar_groups = 1};
}

void gos_topo_fill_device(gos_chip *c, const gos_device *d)
{
    const gos_device_info *I = &d->info;
    snprintf(c->device.name, sizeof c->device.name, "%s", I->name);
    snprintf(c->device.uuid, sizeof c->device.uuid, "%s", I->uuid);
    c->device.cc_major = I->cc_major;
    c->device.cc_minor = I->cc_minor;
    c->device.sm_count = I->sm_count;
    c->device.l2_bytes = I->l2_bytes;
    c->device.mem_bytes = I->mem_bytes;
    c->device.sm_clock_mhz = I->has_clocks ? I->sm_clock_mhz : 0;
    c->device.simulated = I->simulated;
}

/* Median (numpy's linear interpolation, src/stats). */
static double median(const double *v, int n) { return gos_quantile(v, (size_t)n, 0.5); }

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Median bandwidth of a set over `repeats` measurements. */
static int bw_median(gos_device *d, const int *sms, int n, int repeats, double *out, int *count)
{
    double v[64];
    if (repeats > 64)
        repeats = 64;
    for (int r = 0; r < repeats; r++) {
        int rc = gos_topo_l2_bandwidth(d, sms, n, &v[r]);
        if (rc)
            return rc;
        (*count)++;
    }
    *out = median(v, repeats);
    return GOS_OK;
}

/* Paired measurement of the gain of adding `u` to `base`: median over repeats of
 * bw(base + u) - bw(base), each pair measured back to back so drift cancels. */
static int bw_gain(gos_device *d, const int *base, int nb, const int *u, int nu, int repeats,
                   double *gain, double *spread, int *count)
{
    int set[GOS_MAX_SMS];
    memcpy(set, base, sizeof(int) * nb);
    memcpy(set + nb, u, sizeof(int) * nu);
    double diff[64];
    if (repeats > 64)
        repeats = 64;
    for (int r = 0; r < repeats; r++) {
        double a, b;
        int rc;
        if ((rc = gos_topo_l2_bandwidth(d, base, nb, &a)) || (rc = gos_topo_l2_bandwidth(d, set, nb + nu, &b)))
            return rc;
        *count += 2;
        diff[r] = b - a;
    }
    *gain = median(diff, repeats);
    /* Robust spread of the median: 1.4826 MAD / sqrt(n). */
    for (int r = 0; r < repeats; r++)
        diff[r] = fabs(diff[r] - *gain);
    *spread = 1.4826 * median(diff, repeats) / sqrt((double)repeats);
    return GOS_OK;
}

typedef struct {
    int n;
    int sms[GOS_MAX_SMS];
    int max_cs;
} group_t;

static int group_key(const group_t *g) { return g->sms[0]; }

static void add_reason(gos_topo_result *r, int sm, const char *why)
{
    size_t len = strlen(r->ambiguity);
    if (len + 80 < sizeof r->ambiguity)
        snprintf(r->ambiguity + len, sizeof r->ambiguity - len, "%sSM %d: %s", len ? "; " : "", sm, why);
    r->ambiguous = 1;
}

/* Measures the gain of unit p against every group (see topology.h) and fills
 * p->gain, p->gpc, p->margin, p->noise. The base of each GPC is its cluster SMs
 * plus the free units already placed there, so small GPCs saturate as well as
 * they can. */
static int place_unit(gos_device *d, const group_t *groups, int ng, gos_topo_result *r,
                      gos_topo_placement *p, int repeats)
{
    double lo = 1e300, lo2 = 1e300, se[GOS_MAX_GPCS] = {0};
    int best = -1, second = -1;
    for (int g = 0; g < ng; g++) {
        double gain, spread;
        int base[GOS_MAX_SMS], nb = groups[g].n;
        memcpy(base, groups[g].sms, sizeof(int) * nb);
        for (int k = 0; k < r->n_place && &r->place[k] != p; k++)
            if (r->place[k].gpc == g && !r->place[k].ambiguous)
                for (int j = 0; j < r->place[k].n_sms; j++)
                    base[nb++] = r->place[k].sms[j];
        int rc = bw_gain(d, base, nb, p->sms, p->n_sms, repeats, &gain, &spread, &r->bw_measurements);
        if (rc)
            return rc;
        se[g] = spread / p->lone_gbps;
        p->gain[g] = gain / p->lone_gbps;
        if (p->gain[g] < lo)
            lo2 = lo, second = best, lo = p->gain[g], best = g;
        else if (p->gain[g] < lo2)
            lo2 = p->gain[g], second = g;
    }
    p->gpc = best;
    p->margin = ng > 1 ? lo2 - lo : 1.0 - lo;
    p->noise = second >= 0 ? sqrt(se[best] * se[best] + se[second] * se[second]) : se[best];
    return GOS_OK;
}

/* NULL when p's placement is clear, else why not. Elsewhere a unit adds its
 * whole lone bandwidth (gain 1.0); in its own GPC clearly less. Clear means:
 * the lowest gain under the threshold, and the runner-up above it by at least
 * 0.15 and by three times the measured noise of the two. */
static const char *judge(const gos_topo_placement *p, int ng, double threshold)
{
    double lo = p->gain[p->gpc];
    if (lo >= threshold)
        return "no GPC contends with it";
    if (ng > 1 && (p->margin < 0.15 || p->margin < 3 * p->noise))
        return "two GPCs contend with it (margin too small)";
    return NULL;
}

/* Places unit p by L2 contention (escalating the repeats x2, x4, x8 while only
 * noise stands between it and a clear answer) and combines that with its
 * clusters-of-2 evidence; sets p->gpc, p->how, p->ambiguous, p->why. */
static int decide_unit(gos_device *d, const gos_topo_opts *o, const group_t *groups, int ng,
                       gos_topo_result *r, gos_topo_placement *p)
{
    const char *why = NULL;
    for (int reps = o->repeats;; reps *= 2) {
        int rc = place_unit(d, groups, ng, r, p, reps);
        if (rc)
            return rc;
        why = judge(p, ng, o->threshold);
        if (!why || reps * 2 > 64 || p->margin >= 0.15 + 3 * p->noise)
            break;
    }
    int vote_clear = p->votes >= 3 && p->vote_share >= 0.95;
    p->ambiguous = 0;
    p->why = NULL;
    if (!why && vote_clear && p->gpc != p->vote_gpc) {
        p->ambiguous = 1;
        p->how = "conflict";
        p->why = "clusters of 2 and L2 contention disagree";
    } else if (!why) {
        p->how = vote_clear ? "clusters-of-2+l2-contention" : "l2-contention";
    } else if (vote_clear) {
        p->gpc = p->vote_gpc;
        p->how = "clusters-of-2";
    } else {
        p->ambiguous = 1;
        p->how = "none";
        p->why = why;
    }
    return GOS_OK;
}

/* TPC pairs from L2 contention, for chips whose clusters of 2 are not bound to
 * TPCs: within each GPC, every pair of SMs is measured; an SM's TPC partner is
 * the SM with which it reaches clearly less than with the others (below 0.9x
 * its median pair), mutually. All-or-nothing: unless every SM has a clear mutual
 * partner (but one lone SM in a GPC of odd size), no TPC is claimed. */
static int tpcs_by_contention(gos_device *d, const int *gpc_of, int nsm, int ng, int *partner,
                              double (*bw)[GOS_MAX_SMS], gos_topo_result *r)
{
    int cand[GOS_MAX_SMS];
    for (int s = 0; s < nsm; s++)
        cand[s] = -1;
    double worst = 0;
    for (int g = 0; g < ng; g++) {
        int m[GOS_MAX_SMS], n = 0;
        for (int s = 0; s < nsm; s++)
            if (gpc_of[s] == g)
                m[n++] = s;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                int pr[2] = {m[i], m[j]};
                double v;
                int rc = bw_median(d, pr, 2, 3, &v, &r->bw_measurements);
                if (rc)
                    return rc;
                bw[m[i]][m[j]] = bw[m[j]][m[i]] = v;
            }
        for (int i = 0; i < n; i++) {
            double row[GOS_MAX_SMS], lo = 1e300;
            int k = 0, best = -1;
            for (int j = 0; j < n; j++)
                if (j != i) {
                    row[k++] = bw[m[i]][m[j]];
                    if (bw[m[i]][m[j]] < lo)
                        lo = bw[m[i]][m[j]], best = m[j];
                }
            if (k < 2)
                return GOS_OK;
            double med = median(row, k), ratio = lo / med;
            if (ratio > worst)
                worst = ratio;
            if (ratio < 0.9)
                cand[m[i]] = best;
        }
    }
    r->tpc_contention_ratio = worst;
    int lone[GOS_MAX_GPCS] = {0}, size[GOS_MAX_GPCS] = {0};
    for (int s = 0; s < nsm; s++) {
        size[gpc_of[s]]++;
        if (cand[s] < 0)
            lone[gpc_of[s]]++;
        else if (cand[cand[s]] != s)
            return GOS_OK;
    }
    for (int g = 0; g < ng; g++)
        if (lone[g] > size[g] % 2)
            return GOS_OK;
    for (int s = 0; s < nsm; s++)
        partner[s] = cand[s];
    r->tpcs_known = 2;
    return GOS_OK;
}

/* Every pair of groups read together: ratio[a][b] = bw(a+b) / (bw(a) + bw(b)).
 * Near 1 for distinct GPCs, near max/sum for two halves of one GPC (phase 1b),
 * in between for GPCs that share a path above their own ports. */
static int measure_pairs(gos_device *d, const group_t *groups, int ng, const double *gbw,
                         int repeats, double ratio[GOS_MAX_GPCS][GOS_MAX_GPCS], int *count)
{
    for (int a = 0; a < ng; a++)
        for (int b = a + 1; b < ng; b++) {
            int set[GOS_MAX_SMS];
            memcpy(set, groups[a].sms, sizeof(int) * groups[a].n);
            memcpy(set + groups[a].n, groups[b].sms, sizeof(int) * groups[b].n);
            double both;
            int rc = bw_median(d, set, groups[a].n + groups[b].n, repeats, &both, count);
            if (rc)
                return rc;
            ratio[a][b] = ratio[b][a] = both / (gbw[a] + gbw[b]);
        }
    return GOS_OK;
}

/* Sharing above the GPC: two saturated GPCs read together reach the sum of
 * their bandwidths when nothing else is shared, less when they sit behind one
 * common path (on the H200 a free-floating SM adds ~0.6 of its bandwidth to a
 * saturated GPC of its own L2 partition, 1.0 to one of the other). GPCs joined
 * by pair ratios (r->pair_ratio) clearly below the rest form r->xbar_group; no
 * group is claimed unless the ratios split with a clear gap. */
static void crossbar_groups(int ng, gos_topo_result *r)
{
    double hi = 0, v[GOS_MAX_GPCS * GOS_MAX_GPCS];
    int nv = 0;
    for (int a = 0; a < ng; a++)
        for (int b = a + 1; b < ng; b++) {
            v[nv++] = r->pair_ratio[a][b];
            hi = r->pair_ratio[a][b] > hi ? r->pair_ratio[a][b] : hi;
        }
    r->n_xbar_groups = 0;
    if (nv < 2)
        return;
    /* The largest gap between sorted ratios splits "shared" from "not shared". */
    gos_sort_doubles(v, (size_t)nv);
    double gap = 0, cut = 0;
    for (int i = 1; i < nv; i++)
        if (v[i] - v[i - 1] > gap)
            gap = v[i] - v[i - 1], cut = 0.5 * (v[i] + v[i - 1]);
    r->xbar_gap = gap;
    if (gap < 0.1 || hi < 0.9) /* no clear split, or everything shared */
        return;
    gos_uf uf;
    gos_uf_init(&uf);
    for (int a = 0; a < ng; a++)
        for (int b = a + 1; b < ng; b++)
            if (r->pair_ratio[a][b] < cut)
                gos_uf_union(&uf, a, b);
    for (int a = 0; a < ng; a++) {
        int k = 0;
        while (k < r->n_xbar_groups && gos_uf_find(&uf, r->xbar_group[k][0]) != gos_uf_find(&uf, a))
            k++;
        if (k == r->n_xbar_groups)
            r->xbar_size[r->n_xbar_groups++] = 0;
        r->xbar_group[k][r->xbar_size[k]++] = a;
    }
    /* Consistent only if every pair inside a group is below the cut and every
     * pair across groups above it (a transitive chain alone is not enough). */
    for (int a = 0; a < ng; a++)
        for (int b = a + 1; b < ng; b++) {
            int same = gos_uf_find(&uf, a) == gos_uf_find(&uf, b);
            if (same != (r->pair_ratio[a][b] < cut)) {
                r->n_xbar_groups = 0;
                return;
            }
        }
    if (r->n_xbar_groups == ng) /* all singletons: nothing shared */
        r->n_xbar_groups = 0;
}

/* The state of one probe, from phase to phase (heap-allocated: the pair and
 * bandwidth matrices are large; nothing is static, so probes are reentrant). */
typedef struct {
    gos_device *d;
    const gos_topo_opts *o;
    gos_topo_result *r;
    int nsm;
    int *blocks, max_blocks;                         /* one cluster launch */
    unsigned short pair[GOS_MAX_SMS][GOS_MAX_SMS];  /* clusters of 2 shared */
    int pair_total[GOS_MAX_SMS];
    gos_uf uf;                                       /* clusters of >= 3 */
    unsigned char eligible[GOS_MAX_SMS];             /* seen in a cluster of >= 3 */
    int max_cs_of[GOS_MAX_SMS];                      /* largest cluster each SM was seen in */
    int partner[GOS_MAX_SMS];                        /* TPC partner or -1 */
    group_t groups[GOS_MAX_SMS];                     /* cluster-eligible groups (GPCs) */
    int ng, gid[GOS_MAX_SMS];                        /* group of each eligible SM, -1 */
    double gbw[GOS_MAX_SMS];                         /* saturated bandwidth of each group */
    double ratio[GOS_MAX_GPCS][GOS_MAX_GPCS];        /* pair ratios (measure_pairs) */
    int pairs_known;                                 /* ratio matches the current groups */
    int ffgpc[GOS_MAX_SMS];                          /* GPC of each free SM, -1 */
    double sm_pair_bw[GOS_MAX_SMS][GOS_MAX_SMS];     /* phase 3 work matrix */
} topo_run;

/* Phase 1: cluster probing, every size from min_cluster up to the largest the
 * device accepts. Clusters of 2 count pairs; larger ones join their SMs. */
static int phase_clusters(topo_run *t)
{
    const gos_topo_opts *o = t->o;
    gos_topo_result *r = t->r;
    r->max_cluster_chip = 0;
    for (int cs = o->min_cluster; cs <= o->max_cluster; cs++) {
        int ok = 0;
        for (int l = 0; l < o->launches; l++) {
            int nb = 0;
            int rc = gos_topo_cluster_probe(t->d, cs, t->blocks, t->max_blocks, &nb);
            if (rc == GOS_EUNSUPPORTED)
                break;
            if (rc)
                return rc;
            ok = 1;
            r->cluster_launches++;
            for (int i = 0; i + cs <= nb; i += cs) {
                const int *cl = t->blocks + i;
                if (cs == 2) {
                    if (cl[0] != cl[1]) {
                        t->pair[cl[0]][cl[1]]++;
                        t->pair[cl[1]][cl[0]]++;
                        t->pair_total[cl[0]]++;
                        t->pair_total[cl[1]]++;
                    }
                    continue;
                }
                for (int j = 0; j < cs; j++) {
                    t->eligible[cl[j]] = 1;
                    if (cs > t->max_cs_of[cl[j]])
                        t->max_cs_of[cl[j]] = cs;
                    gos_uf_union(&t->uf, cl[0], cl[j]);
                }
            }
        }
        if (!ok)
            break;
        r->max_cluster_chip = cs;
    }
    return GOS_OK;
}

/* TPC pairs: each SM's most frequent cluster-of-2 partner, if mutual and
 * dominant (>= 90 % of its pairings). */
static void phase_tpc_pairs(topo_run *t)
{
    gos_topo_result *r = t->r;
    int nsm = t->nsm, tpcs_ok = 1, any_pairs = 0, ns = 0;
    double share[GOS_MAX_SMS];
    for (int s = 0; s < nsm; s++) {
        t->partner[s] = -1;
        int best = -1, bc = 0;
        for (int u = 0; u < nsm; u++)
            if (t->pair[s][u] > bc)
                bc = t->pair[s][u], best = u;
        if (best >= 0 && bc * 10 >= t->pair_total[s] * 9)
            t->partner[s] = best;
        else if (t->pair_total[s])
            tpcs_ok = 0;
        any_pairs |= t->pair_total[s] > 0;
        if (t->pair_total[s])
            share[ns++] = (double)bc / t->pair_total[s];
    }
    for (int s = 0; s < nsm; s++)
        if (t->partner[s] >= 0 && t->partner[t->partner[s]] != s)
            tpcs_ok = 0;
    r->tpcs_known = tpcs_ok && any_pairs;
    r->pair_top_share = ns ? median(share, ns) : 0;
    if (!r->tpcs_known)
        for (int s = 0; s < nsm; s++)
            t->partner[s] = -1;
}

/* Groups of cluster-eligible SMs (one union-find set each). */
static int phase_groups(topo_run *t)
{
    t->ng = 0;
    for (int s = 0; s < t->nsm; s++)
        t->gid[s] = -1;
    for (int s = 0; s < t->nsm; s++) {
        if (!t->eligible[s])
            continue;
        int root = gos_uf_find(&t->uf, s), g = -1;
        for (int k = 0; k < t->ng; k++)
            if (gos_uf_find(&t->uf, t->groups[k].sms[0]) == root)
                g = k;
        if (g < 0)
            g = t->ng++;
        group_t *G = &t->groups[g];
        G->sms[G->n++] = s;
        if (t->max_cs_of[s] > G->max_cs)
            G->max_cs = t->max_cs_of[s];
    }
    if (t->ng == 0)
        return gos_fail(GOS_EUNSUPPORTED, "no cluster of 3 or more blocks ever ran: cannot chart GPCs");
    if (t->ng > GOS_MAX_GPCS)
        return gos_fail(GOS_EAMBIGUOUS, "cluster probing found %d groups, more than %d GPCs", t->ng,
                        GOS_MAX_GPCS);
    return GOS_OK;
}

/* Phase 1b: groups that contend like one GPC are one GPC. Every pair of
 * groups is read together once; the same ratios later show sharing above
 * the GPC (crossbar_groups). After a merge the pairs are measured again. */
static int phase_merge(topo_run *t)
{
    const gos_topo_opts *o = t->o;
    gos_topo_result *r = t->r;
    group_t *groups = t->groups;
    double *gbw = t->gbw;
    int rc;
    for (int g = 0; g < t->ng; g++)
        if ((rc = bw_median(t->d, groups[g].sms, groups[g].n, o->repeats, &gbw[g], &r->bw_measurements)))
            return rc;
    t->pairs_known = 0;
    while (t->ng > 1 && (o->check_merge || o->crossbar_groups)) {
        int ng = t->ng;
        if ((rc = measure_pairs(t->d, groups, ng, gbw, o->repeats, t->ratio, &r->bw_measurements)))
            return rc;
        t->pairs_known = 1;
        int ma = -1, mb = -1;
        for (int a = 0; o->check_merge && a < ng && ma < 0; a++)
            for (int b = a + 1; b < ng && ma < 0; b++) {
                /* Distinct GPCs add up; one GPC stays near the larger of the two. */
                double both = t->ratio[a][b] * (gbw[a] + gbw[b]);
                double lo = gbw[a] > gbw[b] ? gbw[a] : gbw[b], hi = gbw[a] + gbw[b];
                if (both < lo + 0.35 * (hi - lo))
                    ma = a, mb = b;
            }
        if (ma < 0)
            break;
        for (int i = 0; i < groups[mb].n; i++)
            groups[ma].sms[groups[ma].n++] = groups[mb].sms[i];
        if (groups[mb].max_cs > groups[ma].max_cs)
            groups[ma].max_cs = groups[mb].max_cs;
        qsort(groups[ma].sms, groups[ma].n, sizeof(int), cmp_int);
        groups[mb] = groups[ng - 1];
        gbw[mb] = gbw[ng - 1];
        t->ng--;
        r->n_merged++;
        t->pairs_known = 0;
        if ((rc = bw_median(t->d, groups[ma].sms, groups[ma].n, o->repeats, &gbw[ma], &r->bw_measurements)))
            return rc;
    }
    return GOS_OK;
}

/* Orders the groups by their lowest SM, carrying bandwidths and ratios into
 * the result, then finds the sharing above the GPC. */
static void phase_order(topo_run *t)
{
    gos_topo_result *r = t->r;
    int ng = t->ng, order[GOS_MAX_GPCS];
    for (int g = 0; g < ng; g++)
        order[g] = g;
    for (int i = 1; i < ng; i++)
        for (int k = i; k > 0 && group_key(&t->groups[order[k]]) < group_key(&t->groups[order[k - 1]]); k--) {
            int x = order[k];
            order[k] = order[k - 1];
            order[k - 1] = x;
        }
    group_t sorted[GOS_MAX_GPCS];
    for (int g = 0; g < ng; g++) {
        sorted[g] = t->groups[order[g]];
        r->gpc_gbps[g] = t->gbw[order[g]];
        for (int h = 0; h < ng; h++)
            r->pair_ratio[g][h] = t->pairs_known && g != h ? t->ratio[order[g]][order[h]] : 0;
    }
    memcpy(t->groups, sorted, (size_t)ng * sizeof *sorted);
    for (int g = 0; g < ng; g++) {
        t->gbw[g] = r->gpc_gbps[g];
        for (int i = 0; i < t->groups[g].n; i++)
            t->gid[t->groups[g].sms[i]] = g;
    }
    if (t->o->crossbar_groups && t->pairs_known)
        crossbar_groups(ng, r);
}

/* Free-floating units: a free SM and its free TPC partner form a unit of
 * two, otherwise a free SM is a unit of one. Two independent kinds of
 * evidence place a unit: clusters of 2 it shared with cluster-eligible SMs
 * (a cluster never spans GPCs), and L2-bandwidth contention. */
static int phase_free_units(topo_run *t)
{
    const gos_topo_opts *o = t->o;
    gos_topo_result *r = t->r;
    int nsm = t->nsm, ng = t->ng, rc, n_lone = 0;
    unsigned char done[GOS_MAX_SMS] = {0};
    double lone_all[GOS_MAX_SMS];
    for (int s = 0; s < nsm; s++) {
        t->ffgpc[s] = -1;
        if (!t->eligible[s])
            r->free_sms[r->n_free++] = s;
    }
    for (int i = 0; i < r->n_free; i++) {
        int s = r->free_sms[i];
        if (done[s])
            continue;
        gos_topo_placement *p = &r->place[r->n_place++];
        memset(p, 0, sizeof *p);
        p->sms[0] = s;
        p->n_sms = 1;
        p->vote_gpc = -1;
        done[s] = 1;
        int q = t->partner[s];
        if (q >= 0 && !t->eligible[q]) {
            p->sms[1] = q;
            p->n_sms = 2;
            done[q] = 1;
        }
        /* Evidence 1: clusters of 2 shared with cluster-eligible SMs. */
        int votes[GOS_MAX_SMS] = {0};
        for (int k = 0; k < p->n_sms; k++)
            for (int u = 0; u < nsm; u++)
                if (t->eligible[u] && t->pair[p->sms[k]][u]) {
                    votes[t->gid[u]] += t->pair[p->sms[k]][u];
                    p->votes += t->pair[p->sms[k]][u];
                }
        for (int g = 0; g < ng; g++)
            if (p->vote_gpc < 0 || votes[g] > votes[p->vote_gpc])
                p->vote_gpc = g;
        p->vote_share = p->votes ? (double)votes[p->vote_gpc] / p->votes : 0;
        /* Evidence 2: L2 contention (decide_unit combines both). */
        if ((rc = bw_median(t->d, p->sms, p->n_sms, o->repeats, &p->lone_gbps, &r->bw_measurements)))
            return rc;
        lone_all[n_lone++] = p->lone_gbps;
        if ((rc = decide_unit(t->d, o, t->groups, ng, r, p)))
            return rc;
    }
    /* A unit of a small GPC may not saturate its port on the first pass; once
     * its GPC's other free units are placed the base is larger: retry. */
    for (int round = 0, progress = 1; round < 3 && progress; round++) {
        progress = 0;
        for (int i = 0; i < r->n_place; i++) {
            gos_topo_placement *p = &r->place[i];
            if (!p->ambiguous)
                continue;
            p->ambiguous = 0;
            if ((rc = decide_unit(t->d, o, t->groups, ng, r, p)))
                return rc;
            progress |= !p->ambiguous;
        }
    }
    r->ambiguous = 0;
    r->ambiguity[0] = 0;
    for (int i = 0; i < r->n_place; i++)
        if (r->place[i].ambiguous)
            add_reason(r, r->place[i].sms[0], r->place[i].why);
    r->lone_tpc_gbps = n_lone ? median(lone_all, n_lone) : 0;
    for (int i = 0; i < r->n_place; i++)
        for (int k = 0; k < r->place[i].n_sms; k++)
            t->ffgpc[r->place[i].sms[k]] = r->place[i].gpc;
    return GOS_OK;
}

/* Phase 3: where clusters of 2 did not reveal TPCs, try L2 contention
 * between the two SMs of a pair (a TPC may share its crossbar attach). */
static int phase_tpc_contention(topo_run *t)
{
    if (t->r->tpcs_known || !t->o->tpc_by_contention)
        return GOS_OK;
    int tpc_gpc_of[GOS_MAX_SMS];
    for (int s = 0; s < t->nsm; s++)
        tpc_gpc_of[s] = t->eligible[s] ? t->gid[s] : t->ffgpc[s];
    return tpcs_by_contention(t->d, tpc_gpc_of, t->nsm, t->ng, t->partner, t->sm_pair_bw, t->r);
}

/* GPC g holds SM s: one of its cluster SMs or a free SM placed there. */
static int in_gpc(const topo_run *t, int s, int g)
{
    return t->gid[s] == g || (!t->eligible[s] && t->ffgpc[s] == g);
}

/* The chip of the result: device facts, and each GPC's SMs in TPC order. */
static int assemble_chip(topo_run *t)
{
    gos_topo_result *r = t->r;
    /* An unplaced free SM (no GPC at all) makes the chart invalid: say so. */
    for (int i = 0; i < r->n_free; i++)
        if (t->ffgpc[r->free_sms[i]] < 0)
            return gos_fail(GOS_EAMBIGUOUS, "free-floating SM %d could not be placed in any GPC", r->free_sms[i]);
    gos_chip *c = gos_chip_new();
    if (!c)
        return gos_fail(GOS_ENOMEM, "out of memory");
    gos_topo_fill_device(c, t->d);
    c->n_gpcs = t->ng;
    for (int g = 0; g < t->ng; g++) {
        gos_gpc *G = &c->gpcs[g];
        G->max_cluster = t->groups[g].max_cs;
        unsigned char used[GOS_MAX_SMS] = {0};
        for (int s = 0; s < t->nsm; s++) {
            if (!in_gpc(t, s, g) || used[s])
                continue;
            used[s] = 1;
            int q = t->partner[s], tp[2] = {s, -1};
            if (q >= 0 && in_gpc(t, q, g) && !used[q]) {
                tp[1] = q;
                used[q] = 1;
            }
            G->tpcs[G->n_tpcs][0] = tp[0];
            G->tpcs[G->n_tpcs][1] = tp[1];
            G->n_tpcs++;
            for (int k = 0; k < 2; k++)
                if (tp[k] >= 0) {
                    G->sms[G->n_sms++] = tp[k];
                    if (t->eligible[tp[k]])
                        G->cluster_sms[G->n_cluster++] = tp[k];
                }
        }
    }
    c->json = json_object();
    r->chip = c;
    return GOS_OK;
}

int gos_topo_probe(gos_device *d, const gos_topo_opts *o, gos_topo_result *r)
{
    double t0 = gos_now_s();
    memset(r, 0, sizeof *r);
    int nsm = d->info.sm_count, rc;
    if (nsm < 1 || nsm > GOS_MAX_SMS)
        return gos_fail(GOS_EINVAL, "device reports %d SMs", nsm);
    topo_run *t = calloc(1, sizeof *t);
    if (!t)
        return gos_fail(GOS_ENOMEM, "out of memory");
    t->d = d, t->o = o, t->r = r, t->nsm = nsm;
    t->max_blocks = 8 * nsm + 64;
    gos_uf_init(&t->uf);
    if (!(t->blocks = malloc(sizeof(int) * t->max_blocks))) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = phase_clusters(t)))
        goto out;
    phase_tpc_pairs(t);
    if ((rc = phase_groups(t)) || (rc = phase_merge(t)))
        goto out;
    phase_order(t);
    if ((rc = phase_free_units(t)) || (rc = phase_tpc_contention(t)) || (rc = assemble_chip(t)))
        goto out;
    r->seconds = gos_now_s() - t0;
    rc = gos_chip_validate(r->chip, "probed topology");
out:
    free(t->blocks);
    free(t);
    if (rc && r->chip) {
        gos_chip_free(r->chip);
        r->chip = NULL;
    }
    return rc;
}

void gos_topo_result_free(gos_topo_result *r)
{
    gos_chip_free(r->chip);
    r->chip = NULL;
}

void gos_topo_summary(const gos_chip *c, char *buf, int len)
{
    int sizes[GOS_MAX_GPCS];
    for (int g = 0; g < c->n_gpcs; g++)
        sizes[g] = c->gpcs[g].n_sms;
    qsort(sizes, c->n_gpcs, sizeof(int), cmp_int);
    int pos = 0;
    buf[0] = 0;
    for (int g = 0; g < c->n_gpcs;) {
        int k = g;
        while (k < c->n_gpcs && sizes[k] == sizes[g])
            k++;
        pos += snprintf(buf + pos, pos < len ? len - pos : 0, "%s%dx%d", g ? " + " : "", k - g, sizes[g]);
        g = k;
    }
}

const char *gos_topo_paper_match(const char *product, const char *summary, int *exact)
{
    static const struct {
        const char *product, *summary, *note; /* summary NULL: any configuration of the product */
    } known[] = {
        {"H200", "6x16 + 2x18", "the paper's most common H200 configuration (23 of 28 chips)"},
        {"H200", "1x12 + 3x16 + 4x18", "a configuration the paper saw on 3 of 28 H200s"},
        {"H200", "1x14 + 4x16 + 3x18", "a configuration the paper saw on 1 of 28 H200s"},
        {"H200", "1x10 + 2x16 + 5x18", "a configuration the paper saw on 1 of 28 H200s"},
        {"H200", NULL, "not among the paper's 28 H200s' configurations"},
        {"H100 PCIe", NULL, "the paper charted one H100 PCIe: 114 SMs in 7 GPCs, six of at least 16 SMs "
                            "and one of at least 14"},
    };
    for (size_t i = 0; product && i < sizeof known / sizeof known[0]; i++)
        if (strstr(product, known[i].product) && (!known[i].summary || !strcmp(summary, known[i].summary))) {
            if (exact)
                *exact = known[i].summary != NULL;
            return known[i].note;
        }
    if (exact)
        *exact = 0;
    return NULL;
}
