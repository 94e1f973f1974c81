/* SPDX-License-Identifier: Apache-2.0 */
/* section_topology.c: the topology section of the chart (pillar 1a). */
#include "common/jsonio.h"
#include "chart/chart.h"
#include "common/status.h"
#include "topology/topology.h"

#include <stdio.h>
#include <string.h>

/* Clusters of k blocks (one per SM) that fit at once: larger than 2 only on
 * cluster-eligible SMs, never across GPCs. */
static int concurrent_clusters(const gos_chip *c, int k)
{
    int n = 0;
    for (int g = 0; g < c->n_gpcs; g++)
        n += (k <= 2 ? c->gpcs[g].n_sms : c->gpcs[g].n_cluster) / k;
    return n;
}

/* Extra figures of the probe, beside the contract's gpcs list. */
static json_t *topology_extras(const gos_topo_result *r, const char *product, const char *summary)
{
    int exact;
    const char *match = gos_topo_paper_match(product, summary, &exact);
    if (!exact)
        match = NULL;
    json_t *t = GOS_JSON_OBJ(GOS_JS("summary", summary),
                             GOS_JO("paper_match", match ? json_string(match) : json_null()),
                             GOS_JO("free_floating_sms", gos_json_ints(r->free_sms, r->n_free)),
                             GOS_JS("tpcs_from", r->tpcs_known == 1   ? "clusters-of-2"
                                                 : r->tpcs_known == 2 ? "l2-contention"
                                                                      : "unobservable"));
    if (!r->tpcs_known && r->tpc_contention_ratio > 0)
        json_object_set_new(t, "tpc_contention_worst_ratio", json_real(r->tpc_contention_ratio));
    GOS_JSON_PUT(t, GOS_JR("cluster2_top_partner_share", r->pair_top_share),
                 GOS_JI("max_cluster_size", r->max_cluster_chip));
    /* Clusters of k the chip can run at once: whole clusters per GPC (paper
     * 001 section 5.2.2: 15 clusters of 8 on its H200, as CUTLASS assumes). */
    json_t *conc = json_object();
    for (int k = 2; k <= 16; k *= 2) {
        char key[8];
        snprintf(key, sizeof key, "%d", k);
        json_object_set_new(conc, key, json_integer(concurrent_clusters(r->chip, k)));
    }
    json_object_set_new(t, "max_concurrent_clusters", conc);
    json_object_set_new(t, "groups_merged_by_contention", json_integer(r->n_merged));
    json_t *pl = json_array();
    for (int i = 0; i < r->n_place; i++) {
        const gos_topo_placement *p = &r->place[i];
        json_t *o = GOS_JSON_OBJ(GOS_JO("sms", gos_json_ints(p->sms, p->n_sms)), GOS_JI("gpc", p->gpc),
                                 GOS_JS("how", p->how), GOS_JR("margin", p->margin), GOS_JR("noise", p->noise),
                                 GOS_JB("ambiguous", p->ambiguous), GOS_JI("cluster2_votes", p->votes));
        if (p->votes)
            GOS_JSON_PUT(o, GOS_JI("cluster2_gpc", p->vote_gpc), GOS_JR("cluster2_share", p->vote_share));
        GOS_JSON_PUT(o, GOS_JR("lone_gbps", p->lone_gbps),
                     GOS_JO("gain_vs_lone_per_gpc", gos_json_reals(p->gain, r->chip->n_gpcs)));
        json_array_append_new(pl, o);
    }
    json_object_set_new(t, "placements", pl);
    GOS_JSON_PUT(t, GOS_JO("gpc_l2_gbps", gos_json_reals(r->gpc_gbps, r->chip->n_gpcs)),
                 GOS_JR("lone_tpc_l2_gbps", r->lone_tpc_gbps));
    json_t *pr = json_array();
    for (int a = 0; a < r->chip->n_gpcs; a++) {
        json_t *row = json_array();
        for (int b = 0; b < r->chip->n_gpcs; b++)
            json_array_append_new(row, a == b ? json_null() : json_real(r->pair_ratio[a][b]));
        json_array_append_new(pr, row);
    }
    json_object_set_new(t, "gpc_pair_bw_ratio", pr);
    json_t *xg = json_array();
    for (int k = 0; k < r->n_xbar_groups; k++)
        json_array_append_new(xg, gos_json_ints(r->xbar_group[k], r->xbar_size[k]));
    GOS_JSON_PUT(t, GOS_JO("crossbar_groups", xg), GOS_JS("confidence", r->ambiguous ? "ambiguous" : "unambiguous"));
    if (r->ambiguous)
        json_object_set_new(t, "ambiguity", json_string(r->ambiguity));
    return GOS_JSON_PUT(t, GOS_JI("cluster_launches", r->cluster_launches),
                        GOS_JI("bandwidth_measurements", r->bw_measurements), GOS_JR("seconds", r->seconds));
}

int gos_chart_topology(gos_chart_ctx *ctx)
{
    gos_topo_opts o;
    gos_topo_default_opts(&o);
    gos_topo_result r;
    int rc = gos_topo_probe(ctx->dev, &o, &r);
    if (rc)
        return rc;
    gos_chip *c = ctx->chip;
    c->n_gpcs = r.chip->n_gpcs;
    memcpy(c->gpcs, r.chip->gpcs, sizeof c->gpcs);
    char summary[128];
    gos_topo_summary(c, summary, sizeof summary);
    json_t *topo = json_object_get(c->json, "topology");
    if (!json_is_object(topo)) {
        topo = json_object();
        json_object_set_new(c->json, "topology", topo);
    }
    json_t *extra = topology_extras(&r, ctx->dev->info.name, summary);
    json_object_update(topo, extra);
    json_decref(extra);
    if (ctx->out) {
        FILE *f = ctx->out;
        fprintf(f, "Topology of %s%s (%d SMs): %d GPCs, %s\n", gos_dev_label(ctx->dev), ctx->dev->info.name,
                c->device.sm_count, c->n_gpcs, summary);
        gos_topo_print_floorplan(f, c, r.free_sms, r.n_free);
        if (r.tpcs_known)
            fprintf(f, "[a b] = TPC of SMs a and b; {a b} = free-floating TPC (never in clusters > 2)\n");
        else
            fprintf(f, "[a] = SM a; {a} = free-floating SM (never in clusters > 2)\n");
        int exact;
        const char *note = gos_topo_paper_match(ctx->dev->info.name, summary, &exact);
        if (!note) /* nothing known of this product: nothing said */
            fprintf(f, "Imbalance: %s\n", summary);
        else
            fprintf(f, exact ? "Imbalance: %s = %s\n" : "Imbalance: %s (%s)\n", summary, note);
        for (int i = 0; i < r.n_place; i++) {
            const gos_topo_placement *p = &r.place[i];
            char sms[32];
            if (p->n_sms == 2)
                snprintf(sms, sizeof sms, "SMs %d+%d", p->sms[0], p->sms[1]);
            else
                snprintf(sms, sizeof sms, "SM %d", p->sms[0]);
            fprintf(f, "  %s -> GPC %d by %s: L2 gain %.2f of its lone %.0f GB/s there, >= %.2f elsewhere "
                       "(margin %.2f +- %.3f)", sms, p->gpc, p->how, p->gain[p->gpc], p->lone_gbps,
                    p->margin + p->gain[p->gpc], p->margin, p->noise);
            if (p->votes)
                fprintf(f, "; %d clusters of 2, %.0f%% with GPC %d", p->votes, 100 * p->vote_share, p->vote_gpc);
            fprintf(f, "%s\n", p->ambiguous ? "  AMBIGUOUS" : "");
        }
        fprintf(f, "Clusters at once: %d of 4, %d of 8, %d of 16 (largest cluster %d)\n",
                concurrent_clusters(c, 4), concurrent_clusters(c, 8), concurrent_clusters(c, 16),
                r.max_cluster_chip);
        if (r.n_xbar_groups) {
            fprintf(f, "Sharing above the GPC: GPC groups");
            for (int k = 0; k < r.n_xbar_groups; k++) {
                fprintf(f, " {");
                for (int i = 0; i < r.xbar_size[k]; i++)
                    fprintf(f, "%s%d", i ? "," : "", r.xbar_group[k][i]);
                fprintf(f, "}");
            }
            double in_lo = 9, in_hi = 0, out_lo = 9, out_hi = 0;
            for (int a = 0; a < c->n_gpcs; a++)
                for (int b = a + 1; b < c->n_gpcs; b++) {
                    int same = 0;
                    for (int k = 0; k < r.n_xbar_groups; k++) {
                        int ia = 0, ib = 0;
                        for (int i = 0; i < r.xbar_size[k]; i++)
                            ia |= r.xbar_group[k][i] == a, ib |= r.xbar_group[k][i] == b;
                        same |= ia && ib;
                    }
                    double q = r.pair_ratio[a][b];
                    if (same)
                        in_lo = q < in_lo ? q : in_lo, in_hi = q > in_hi ? q : in_hi;
                    else
                        out_lo = q < out_lo ? q : out_lo, out_hi = q > out_hi ? q : out_hi;
                }
            fprintf(f, ": two GPCs of a group read together reach %.2f-%.2f of their summed\n"
                       "      bandwidth, of different groups %.2f-%.2f\n", in_lo, in_hi, out_lo, out_hi);
        } else
            fprintf(f, "Sharing above the GPC: none visible (GPC pairs add up; largest gap %.2f)\n", r.xbar_gap);
        if (r.n_merged)
            fprintf(f, "Note: %d cluster groups were merged because their L2 bandwidth saturates like one GPC\n", r.n_merged);
        if (r.tpcs_known == 2)
            fprintf(f, "TPC pairs: clusters of 2 are not bound to TPCs here (median top-partner share %.2f);\n"
                       "           pairs found by L2 contention between the two SMs of a TPC\n", r.pair_top_share);
        else if (!r.tpcs_known)
            fprintf(f, "TPC pairs: not observable: clusters of 2 are not bound to TPCs here (median top-partner\n"
                       "           share %.2f) and no SM pair contends (worst lowest/median pair %.2f);\n"
                       "           cells are single SMs, free-floating SMs are placed one by one\n",
                    r.pair_top_share, r.tpc_contention_ratio);
        if (r.ambiguous)
            fprintf(f, "Confidence: AMBIGUOUS: %s\n", r.ambiguity);
        else
            fprintf(f, "Confidence: unambiguous (every placement clear by its margin)\n");
        fprintf(f, "Topology probe: %.2f s (%d cluster launches, %d bandwidth measurements, clusters up to %d)\n",
                r.seconds, r.cluster_launches, r.bw_measurements, r.max_cluster_chip);
    }
    gos_topo_result_free(&r);
    return GOS_OK;
}
