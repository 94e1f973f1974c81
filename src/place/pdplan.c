/* SPDX-License-Identifier: Apache-2.0 */
/* pdplan.c: the prefill/decode multiplexing plan (pdplan.h; issue 45, paper 001
 * section 7.2): three placements of two SM sets over the SM-set allocator.
 * Process: the pd_multiplex bench (bench/pd_multiplex.cu) and the unit tests;
 * no gpuos process calls it. */
#include "place/pdplan.h"

#include "common/status.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[GOS_PD_KINDS] = {"cluster-aware", "cluster-mismatched", "partition-aware"};

const char *gos_pd_kind_name(int kind)
{
    return kind >= 0 && kind < GOS_PD_KINDS ? kind_names[kind] : NULL;
}

static int check_req(const gos_pd_req *r)
{
    if (!r || r->sms[0] < 1 || r->sms[1] < 1 || r->cluster < 2 || r->cluster > GOS_SMSET_MAX_CLUSTER)
        return gos_fail(GOS_EINVAL, "prefill/decode plan: SM counts must be >= 1 and the cluster size 2..%d",
                        GOS_SMSET_MAX_CLUSTER);
    return GOS_OK;
}

/* Both sets with the given clusters and partitions; on failure nothing stays allocated. */
static int alloc_pair(gos_smset_pool *p, const gos_pd_req *r, int cluster, const int part[2], gos_pd_plan *pl)
{
    for (int ph = 0; ph < 2; ph++) {
        gos_smset_req q = {.sms = r->sms[ph], .cluster = cluster, .partition = part[ph], .gpc_align = 0};
        int rc = gos_smset_alloc(p, &q, &pl->set[ph]);
        if (rc) {
            if (ph)
                gos_smset_release(p, pl->set[0].id);
            memset(&pl->set[0], 0, sizeof pl->set[0]);
            return rc;
        }
    }
    pl->part[0] = part[0];
    pl->part[1] = part[1];
    return GOS_OK;
}

int gos_pd_plan_make(gos_smset_pool *p, const gos_pd_req *req, gos_pd_kind kind, gos_pd_plan *out)
{
    if (!p || !out || check_req(req))
        return p && out ? GOS_EINVAL : gos_fail(GOS_EINVAL, "prefill/decode plan without a pool or result");
    if (kind < 0 || kind >= GOS_PD_KINDS)
        return gos_fail(GOS_EINVAL, "prefill/decode placement %d outside 0..%d", (int)kind, GOS_PD_KINDS - 1);
    memset(out, 0, sizeof *out);
    out->kind = kind;
    const int any[2] = {-1, -1};
    int rc = GOS_ENOMEM;
    if (kind == GOS_PD_CLUSTER_AWARE)
        rc = alloc_pair(p, req, req->cluster, any, out);
    else if (kind == GOS_PD_CLUSTER_MISMATCHED)
        rc = alloc_pair(p, req, 2, any, out);
    else {
        const int n = gos_smset_pool_parts(p);
        if (n < 2)
            return gos_fail(GOS_EINVAL, "partition-aware placement needs a chart of two or more memory "
                                        "partitions (gpuos probe numa); this one has %d", n);
        for (int a = 0; a < n && rc; a++)
            for (int b = 0; b < n && rc; b++)
                if (a != b) {
                    const int part[2] = {a, b};
                    rc = alloc_pair(p, req, req->cluster, part, out);
                }
    }
    if (rc) {
        char why[256];
        snprintf(why, sizeof why, "%s", gos_last_error());
        return gos_fail(rc, "%s placement: cannot place prefill on %d SMs and decode on %d SMs (clusters of %d): "
                            "%s", kind_names[kind], req->sms[0], req->sms[1], req->cluster, why);
    }
    for (int ph = 0; ph < 2; ph++)
        out->mismatched |= out->set[ph].clusters[req->cluster] * req->cluster < out->set[ph].n_sms;
    if (kind != GOS_PD_PARTITION_AWARE)
        out->part[0] = out->part[1] = -1;
    return GOS_OK;
}

void gos_pd_release(gos_smset_pool *p, gos_pd_plan *pl)
{
    for (int ph = 0; p && pl && ph < 2; ph++)
        if (pl->set[ph].id > 0) {
            gos_smset_release(p, pl->set[ph].id);
            pl->set[ph].id = 0;
        }
}

/* Whether every placement can be given r on the (empty) pool p. */
static int fits_all(gos_smset_pool *p, const gos_pd_req *r)
{
    for (int kind = 0; kind < GOS_PD_KINDS; kind++) {
        gos_pd_plan pl;
        if (gos_pd_plan_make(p, r, (gos_pd_kind)kind, &pl))
            return 0;
        gos_pd_release(p, &pl);
    }
    return 1;
}

int gos_pd_fit(gos_smset_pool *p, const gos_pd_req *req, gos_pd_req *fit)
{
    if (!p || !fit || check_req(req))
        return p && fit ? GOS_EINVAL : gos_fail(GOS_EINVAL, "prefill/decode fit without a pool or result");
    const int k = req->cluster;
    /* s steps taken off in all, prefill's first (the paper gives prefill more) */
    for (int s = 0; s < (req->sms[0] + req->sms[1]) / k; s++)
        for (int a = s; a >= 0; a--) {
            gos_pd_req r = *req;
            r.sms[0] -= a * k;
            r.sms[1] -= (s - a) * k;
            if (r.sms[0] >= 1 && r.sms[1] >= 1 && fits_all(p, &r)) {
                *fit = r;
                return GOS_OK;
            }
        }
    char why[256];
    snprintf(why, sizeof why, "%s", gos_last_error());
    return gos_fail(GOS_ENOMEM, "no SM counts of prefill %d and decode %d lowered in steps of %d fit every "
                                "placement: %s", req->sms[0], req->sms[1], k, why);
}

int gos_pd_idle(const gos_pd_plan *pl, int phase, int sm_count, int *idle)
{
    if (!pl || !idle || phase < 0 || phase > 1 || sm_count < 1 || sm_count > GOS_SMSET_MAX_SMS)
        return gos_fail(GOS_EINVAL, "idle list: bad plan, phase or SM count");
    unsigned char in[GOS_SMSET_MAX_SMS] = {0};
    const gos_smset *s = &pl->set[phase];
    for (int i = 0; i < s->n_sms; i++)
        if (s->sms[i] >= 0 && s->sms[i] < GOS_SMSET_MAX_SMS)
            in[s->sms[i]] = 1;
    int n = 0;
    for (int sm = 0; sm < sm_count; sm++)
        if (!in[sm])
            idle[n++] = sm;
    return n;
}
