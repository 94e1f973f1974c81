/* SPDX-License-Identifier: Apache-2.0 */
/* smset.c: the SM-set allocator (src/place/smset.h has the rules). Runs in the
 * cli (gpuos place) and the daemon (serve/spatial.c, spatial vGPUs). */
#include "place/smset.h"

#include "chip/chip.h"
#include "common/status.h"
#include "device/green_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(GOS_SMSET_MAX_SMS >= GOS_MAX_SMS, "a set may hold every SM of a chip");

struct gos_smset_pool {
    int n_gpcs;
    int gpc_of[GOS_MAX_SMS];   /* -1: not in the chart */
    unsigned char elig[GOS_MAX_SMS];
    int part_of[GOS_MAX_SMS];  /* -1: unknown */
    int n_parts;
    int gpc_size[GOS_MAX_GPCS];
    int gpc_max_cluster[GOS_MAX_GPCS]; /* 0: unknown */
    int n_groups;
    int gn[GOS_SMSET_MAX_GROUPS];
    int gsms[GOS_SMSET_MAX_GROUPS][GOS_MAX_SMS];
    int owner[GOS_SMSET_MAX_GROUPS];
    int next_id;
    int max_cluster; /* largest cluster a set's green context accepts */
    int min_count; /* the green-context split the groups came from (0: none) */
};

/* ---- capability of an SM membership vector ---- */

static void caps(const gos_smset_pool *p, const unsigned char *in, int cl[GOS_SMSET_MAX_CLUSTER + 1])
{
    int e[GOS_MAX_GPCS] = {0}, f[GOS_MAX_GPCS] = {0}, n = 0;
    for (int s = 0; s < GOS_MAX_SMS; s++)
        if (in[s] && p->gpc_of[s] >= 0) {
            n++;
            if (p->elig[s])
                e[p->gpc_of[s]]++;
            else
                f[p->gpc_of[s]]++;
        }
    memset(cl, 0, sizeof(int) * (GOS_SMSET_MAX_CLUSTER + 1));
    cl[1] = n;
    for (int g = 0; g < p->n_gpcs; g++) {
        cl[2] += e[g] / 2 + f[g] / 2;
        for (int k = 3; k <= p->max_cluster; k++)
            if (!p->gpc_max_cluster[g] || k <= p->gpc_max_cluster[g])
                cl[k] += e[g] / k;
    }
}

static int usable(const gos_smset_pool *p, const unsigned char *in, int k)
{
    int cl[GOS_SMSET_MAX_CLUSTER + 1];
    caps(p, in, cl);
    return k * cl[k];
}

/* ---- pool ---- */

int gos_smset_pool_new(const gos_chip *c, int n_groups, const int *group_n, const int *const *group_sms,
                       gos_smset_pool **out)
{
    if (!c || c->n_gpcs == 0)
        return gos_fail(GOS_EINVAL, "the SM-set allocator needs a chart with a topology section "
                                    "(gpuos probe topology)");
    if (n_groups < 1 || n_groups > GOS_SMSET_MAX_GROUPS)
        return gos_fail(GOS_EINVAL, "%d green-context groups: 1..%d supported", n_groups, GOS_SMSET_MAX_GROUPS);
    gos_smset_pool *p = calloc(1, sizeof *p);
    if (!p)
        return gos_fail(GOS_ENOMEM, "out of memory");
    p->n_gpcs = c->n_gpcs;
    for (int s = 0; s < GOS_MAX_SMS; s++)
        p->gpc_of[s] = p->part_of[s] = -1;
    for (int g = 0; g < c->n_gpcs; g++) {
        const gos_gpc *G = &c->gpcs[g];
        p->gpc_size[g] = G->n_sms;
        p->gpc_max_cluster[g] = G->max_cluster;
        for (int i = 0; i < G->n_sms; i++)
            p->gpc_of[G->sms[i]] = g;
        for (int i = 0; i < G->n_cluster; i++)
            p->elig[G->cluster_sms[i]] = 1;
    }
    p->n_parts = c->n_parts;
    for (int q = 0; q < c->n_parts; q++)
        for (int i = 0; i < c->parts[q].n_sms; i++)
            p->part_of[c->parts[q].sms[i]] = q;
    int rc = GOS_OK;
    unsigned char seen[GOS_MAX_SMS] = {0};
    for (int g = 0; g < n_groups; g++) {
        if (group_n[g] < 1 || group_n[g] > GOS_MAX_SMS) {
            rc = gos_fail(GOS_EINVAL, "green-context group %d has %d SMs", g, group_n[g]);
            goto fail;
        }
        for (int i = 0; i < group_n[g]; i++) {
            int s = group_sms[g][i];
            if (s < 0 || s >= GOS_MAX_SMS || p->gpc_of[s] < 0) {
                rc = gos_fail(GOS_EINVAL, "the chart does not describe this device: SM %d of "
                                          "green-context group %d is in no GPC of the chart", s, g);
                goto fail;
            }
            if (seen[s]) {
                rc = gos_fail(GOS_EINVAL, "SM %d is in two green-context groups", s);
                goto fail;
            }
            seen[s] = 1;
            p->gsms[g][i] = s;
        }
        p->gn[g] = group_n[g];
    }
    p->n_groups = n_groups;
    p->next_id = 1;
    p->max_cluster = GOS_SMSET_MAX_CLUSTER;
    *out = p;
    return GOS_OK;
fail:
    free(p);
    return rc;
}

int gos_smset_pool_open(struct gos_device *d, const gos_chip *chart, gos_smset_pool **out)
{
    const struct gos_green_split *s;
    int rc = gos_green_split(d, 0, &s);
    if (rc)
        return rc;
    int n[GOS_SMSET_MAX_GROUPS];
    const int *v[GOS_SMSET_MAX_GROUPS];
    if (s->n_groups > GOS_SMSET_MAX_GROUPS)
        return gos_fail(GOS_EUNSUPPORTED, "%d green-context groups: at most %d supported", s->n_groups,
                        GOS_SMSET_MAX_GROUPS);
    for (int g = 0; g < s->n_groups; g++) {
        n[g] = s->groups[g].n_sms;
        v[g] = s->groups[g].sms;
    }
    gos_smset_pool *p;
    if ((rc = gos_smset_pool_new(chart, s->n_groups, n, v, &p)))
        return rc;
    p->min_count = s->min_count;
    /* The driver guarantees co-scheduling on one GPC only within its alignment
     * (H200: 8 SMs): a green context refuses larger clusters
     * (CUDA_ERROR_INVALID_CLUSTER_SIZE for 16 on the H200, measured). */
    if (s->alignment >= 2 && s->alignment < p->max_cluster)
        p->max_cluster = s->alignment;
    *out = p;
    return GOS_OK;
}

void gos_smset_pool_free(gos_smset_pool *p) { free(p); }

int gos_smset_pool_groups(const gos_smset_pool *p) { return p->n_groups; }

int gos_smset_pool_max_cluster(const gos_smset_pool *p) { return p->max_cluster; }

int gos_smset_pool_parts(const gos_smset_pool *p) { return p->n_parts; }

int gos_smset_pool_group(const gos_smset_pool *p, int g, int *sms, int max, int *owner)
{
    if (g < 0 || g >= p->n_groups)
        return gos_fail(GOS_EINVAL, "group %d outside 0..%d", g, p->n_groups - 1);
    for (int i = 0; i < p->gn[g] && i < max; i++)
        sms[i] = p->gsms[g][i];
    if (owner)
        *owner = p->owner[g];
    return p->gn[g];
}

/* ---- describing a set ---- */

static void describe_in(const gos_smset_pool *p, const unsigned char *in, gos_smset *o)
{
    o->n_sms = o->n_gpcs = o->n_free_floating = 0;
    int per[GOS_MAX_GPCS] = {0}, part = -2;
    for (int s = 0; s < GOS_MAX_SMS; s++)
        if (in[s]) {
            o->sms[o->n_sms++] = s;
            per[p->gpc_of[s]]++;
            o->n_free_floating += !p->elig[s];
            int q = p->part_of[s];
            part = part == -2 ? q : part == q ? part : -1;
        }
    o->partition = part < 0 ? -1 : part;
    for (int g = 0; g < p->n_gpcs; g++)
        if (per[g]) {
            o->gpcs[o->n_gpcs] = g;
            o->gpc_sms[o->n_gpcs++] = per[g];
        }
    caps(p, in, o->clusters);
}

int gos_smset_describe(const gos_smset_pool *p, const int *sms, int n, gos_smset *out)
{
    unsigned char in[GOS_MAX_SMS] = {0};
    for (int i = 0; i < n; i++) {
        if (sms[i] < 0 || sms[i] >= GOS_MAX_SMS || p->gpc_of[sms[i]] < 0)
            return gos_fail(GOS_EINVAL, "SM %d is in no GPC of the chart", sms[i]);
        in[sms[i]] = 1;
    }
    memset(out, 0, sizeof *out);
    out->partition = -1;
    describe_in(p, in, out);
    return GOS_OK;
}

/* ---- allocation ---- */

/* A unit is what the allocator takes at once: one group, or (GPC alignment) all
 * groups of one GPC. */
struct unit {
    int n_groups;
    int groups[GOS_SMSET_MAX_GROUPS];
    int n_sms, n_free;
};

static void add_unit(const gos_smset_pool *p, unsigned char *in, const struct unit *u, int v)
{
    for (int i = 0; i < u->n_groups; i++)
        for (int j = 0; j < p->gn[u->groups[i]]; j++)
            in[p->gsms[u->groups[i]][j]] = (unsigned char)v;
}

/* What taking u out of the free pool `pool` costs the pool, as a vector to be
 * compared lexicographically: lost SMs able to run clusters of 8, then 4, then
 * 16, then its cluster-eligible SMs. */
static void unit_cost(const gos_smset_pool *p, const unsigned char *pool, const struct unit *u, int cost[4])
{
    static const int ks[3] = {8, 4, 16};
    unsigned char rest[GOS_MAX_SMS];
    memcpy(rest, pool, sizeof rest);
    add_unit(p, rest, u, 0);
    for (int i = 0; i < 3; i++)
        cost[i] = usable(p, pool, ks[i]) - usable(p, rest, ks[i]);
    cost[3] = u->n_sms - u->n_free;
}

static int cost_cmp(const int *a, const int *b)
{
    for (int i = 0; i < 4; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int build_units(const gos_smset_pool *p, const gos_smset_req *r, struct unit *units)
{
    int cand[GOS_SMSET_MAX_GROUPS] = {0}, n = 0;
    for (int g = 0; g < p->n_groups; g++) {
        if (p->owner[g])
            continue;
        int ok = 1;
        if (r->partition >= 0)
            for (int i = 0; i < p->gn[g] && ok; i++)
                ok = p->part_of[p->gsms[g][i]] == r->partition;
        cand[g] = ok;
    }
    if (!r->gpc_align) {
        for (int g = 0; g < p->n_groups; g++)
            if (cand[g]) {
                struct unit *u = &units[n++];
                memset(u, 0, sizeof *u);
                u->n_groups = 1;
                u->groups[0] = g;
            }
    } else {
        for (int G = 0; G < p->n_gpcs; G++) {
            struct unit u;
            memset(&u, 0, sizeof u);
            int covered = 0, ok = 1;
            for (int g = 0; g < p->n_groups && ok; g++) {
                int inside = 0;
                for (int i = 0; i < p->gn[g]; i++)
                    inside += p->gpc_of[p->gsms[g][i]] == G;
                if (!inside)
                    continue;
                if (inside != p->gn[g] || !cand[g])
                    ok = 0; /* a group spanning GPCs, taken, or outside the partition */
                else {
                    u.groups[u.n_groups++] = g;
                    covered += inside;
                }
            }
            if (ok && u.n_groups && covered == p->gpc_size[G])
                units[n++] = u;
        }
    }
    for (int i = 0; i < n; i++) {
        units[i].n_sms = units[i].n_free = 0;
        for (int j = 0; j < units[i].n_groups; j++)
            for (int k = 0; k < p->gn[units[i].groups[j]]; k++) {
                units[i].n_sms++;
                units[i].n_free += !p->elig[p->gsms[units[i].groups[j]][k]];
            }
    }
    return n;
}

int gos_smset_alloc(gos_smset_pool *p, const gos_smset_req *r, gos_smset *out)
{
    if (!p || !r || !out)
        return gos_fail(GOS_EINVAL, "SM-set allocation without a pool, request or result");
    if (r->sms < 1 || r->sms > GOS_MAX_SMS)
        return gos_fail(GOS_EINVAL, "SM count %d outside 1..%d", r->sms, GOS_MAX_SMS);
    if (r->cluster < 1 || r->cluster > GOS_SMSET_MAX_CLUSTER)
        return gos_fail(GOS_EINVAL, "cluster size %d outside 1..%d", r->cluster, GOS_SMSET_MAX_CLUSTER);
    if (r->partition >= 0 && p->n_parts == 0)
        return gos_fail(GOS_EINVAL, "memory partition %d asked for, but the chart has no numa section "
                                    "(gpuos probe numa)", r->partition);
    if (r->partition >= p->n_parts || r->partition < -1)
        return gos_fail(GOS_EINVAL, "memory partition %d outside 0..%d", r->partition, p->n_parts - 1);
    if (r->cluster > p->max_cluster)
        return gos_fail(GOS_EUNSUPPORTED, "clusters of %d: green contexts made of the driver's groups run "
                                          "clusters of at most %d (its co-scheduling alignment)", r->cluster,
                        p->max_cluster);
    const int K = r->cluster, N = r->sms;
    struct unit *units = calloc(GOS_SMSET_MAX_GROUPS, sizeof *units);
    if (!units)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int nu = build_units(p, r, units);
    unsigned char in[GOS_MAX_SMS] = {0}, pool[GOS_MAX_SMS] = {0}, all[GOS_MAX_SMS] = {0};
    int taken[GOS_SMSET_MAX_GROUPS] = {0};
    for (int g = 0; g < p->n_groups; g++)
        if (!p->owner[g])
            for (int i = 0; i < p->gn[g]; i++)
                pool[p->gsms[g][i]] = 1;
    for (int i = 0; i < nu; i++)
        add_unit(p, all, &units[i], 1);
    int most = usable(p, all, K);
    if (most < N) {
        char where[64] = "";
        if (r->partition >= 0)
            snprintf(where, sizeof where, " in memory partition %d", r->partition);
        free(units);
        return gos_fail(GOS_ENOMEM, "cannot give %d SMs that run clusters of %d%s%s: the free "
                                    "green-context groups%s can run at most %d SMs (%d clusters of %d)",
                        N, K, where, r->gpc_align ? " on whole GPCs" : "", r->gpc_align ? " of free whole GPCs" : "",
                        most, most / K, K);
    }
    while (usable(p, in, K) < N) {
        int have = usable(p, in, K), best = -1, best_gain = 0, best_cost[4] = {0};
        for (int i = 0; i < nu; i++) {
            if (taken[i])
                continue;
            add_unit(p, in, &units[i], 1);
            int gain = usable(p, in, K) - have;
            add_unit(p, in, &units[i], 0);
            if (gain <= 0)
                continue;
            int cost[4];
            if (K <= 2) {
                unit_cost(p, pool, &units[i], cost);
            } else { /* most clusters of K per SM, then fewest free-floating */
                cost[0] = -(int)(1000.0 * gain / units[i].n_sms);
                cost[1] = units[i].n_free;
                cost[2] = units[i].n_sms;
                cost[3] = 0;
            }
            if (best < 0 || cost_cmp(cost, best_cost) < 0) {
                best = i;
                best_gain = gain;
                memcpy(best_cost, cost, sizeof cost);
            }
        }
        if (best < 0) { /* no unit helps alone (a cluster needs SMs of two groups):
                           take everything, the trim below gives back the rest */
            for (int i = 0; i < nu; i++)
                if (!taken[i]) {
                    taken[i] = 1;
                    add_unit(p, in, &units[i], 1);
                }
            break;
        }
        (void)best_gain;
        taken[best] = 1;
        add_unit(p, in, &units[best], 1);
        add_unit(p, pool, &units[best], 0);
    }
    /* Trim: give back units the request does not need, the costliest to others
     * (K <= 2) or the least useful (K > 2) first. */
    for (int changed = 1; changed;) {
        changed = 0;
        int worst = -1, worst_cost[4] = {0};
        unsigned char freepool[GOS_MAX_SMS];
        for (int s = 0; s < GOS_MAX_SMS; s++)
            freepool[s] = pool[s] | in[s];
        for (int i = 0; i < nu; i++) {
            if (!taken[i])
                continue;
            add_unit(p, in, &units[i], 0);
            int still = usable(p, in, K) >= N;
            add_unit(p, in, &units[i], 1);
            if (!still)
                continue;
            int cost[4];
            if (K <= 2)
                unit_cost(p, freepool, &units[i], cost);
            else {
                cost[0] = units[i].n_free;
                cost[1] = units[i].n_sms;
                cost[2] = cost[3] = 0;
            }
            if (worst < 0 || cost_cmp(cost, worst_cost) > 0) {
                worst = i;
                memcpy(worst_cost, cost, sizeof cost);
            }
        }
        if (worst >= 0) {
            taken[worst] = 0;
            add_unit(p, in, &units[worst], 0);
            add_unit(p, pool, &units[worst], 1);
            changed = 1;
        }
    }
    memset(out, 0, sizeof *out);
    out->id = p->next_id++;
    out->req = *r;
    for (int i = 0; i < nu; i++)
        if (taken[i])
            for (int j = 0; j < units[i].n_groups; j++)
                p->owner[units[i].groups[j]] = out->id;
    for (int g = 0; g < p->n_groups; g++)
        if (p->owner[g] == out->id)
            out->groups[out->n_groups++] = g;
    describe_in(p, in, out);
    free(units);
    return GOS_OK;
}

int gos_smset_release(gos_smset_pool *p, int id)
{
    int n = 0;
    for (int g = 0; g < p->n_groups; g++)
        if (id > 0 && p->owner[g] == id) {
            p->owner[g] = 0;
            n++;
        }
    return n ? GOS_OK : gos_fail(GOS_EINVAL, "no SM set %d", id);
}

int gos_smset_green(struct gos_device *d, const gos_smset_pool *p, const gos_smset *s, void **gctx)
{
    if (!p->min_count)
        return gos_fail(GOS_EINVAL, "this SM-set pool was not built from a device's green-context groups");
    if (s->n_groups < 1)
        return gos_fail(GOS_EINVAL, "an empty SM set has no green context");
    return gos_green_create(d, p->min_count, s->groups, s->n_groups, gctx);
}

int gos_smset_verify(struct gos_device *d, const gos_smset_pool *p, const gos_smset *s, gos_smset_check *out)
{
    void *g = NULL, *st = NULL;
    int *sms = calloc(8 * GOS_MAX_SMS, sizeof(int)), *co = calloc(8 * GOS_MAX_SMS, sizeof(int));
    unsigned char in[GOS_MAX_SMS] = {0}, hit[GOS_MAX_SMS] = {0};
    const unsigned timeout_us = 200000;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < s->n_sms; i++)
        in[s->sms[i]] = 1;
    int rc = !sms || !co ? gos_fail(GOS_ENOMEM, "out of memory") : gos_smset_green(d, p, s, &g);
    if (rc)
        goto fail_mem;
    if ((rc = gos_green_stream_create(d, g, &st)))
        goto fail_green;
    if ((rc = gos_green_probe(d, st, 1, s->n_sms, timeout_us, sms, co)))
        goto fail_stream;
    out->all_at_once = 1;
    for (int i = 0; i < s->n_sms; i++) {
        out->outside += !in[sms[i]];
        out->sms_seen += !hit[sms[i]];
        hit[sms[i]] = 1;
        out->all_at_once &= co[i];
    }
    int K = s->req.cluster, C = s->clusters[K];
    out->cluster = K;
    out->promised = C;
    if (K > 1 && C > 0) {
        if ((rc = gos_green_probe(d, st, K, C * K, timeout_us, sms, co)))
            goto fail_stream;
        out->promised_fit = 1;
        for (int i = 0; i < C * K; i++) {
            out->outside += !in[sms[i]];
            out->promised_fit &= co[i];
        }
        if ((C + 1) * K <= 8 * GOS_MAX_SMS) {
            if ((rc = gos_green_probe(d, st, K, (C + 1) * K, timeout_us, sms, co)))
                goto fail_stream;
            out->one_more_fits = 1;
            for (int i = 0; i < (C + 1) * K; i++) {
                out->outside += !in[sms[i]];
                out->one_more_fits &= co[i];
            }
        }
    } else
        out->promised_fit = 1;
fail_stream:
    gos_green_stream_destroy(d, st);
fail_green:
    gos_green_destroy(d, g);
fail_mem:
    free(sms);
    free(co);
    return rc;
}
