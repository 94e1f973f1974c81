/* SPDX-License-Identifier: Apache-2.0 */
/* sim_topo.c: the pillar-1a primitives on the simulated device (topo_ops.h):
 * cluster co-scheduling and L2 bandwidth from the chip's known topology.
 *
 * Model (README.md, "Compute topology"): clusters of size 2 occupy one TPC anywhere
 * (free-floating TPCs included), or, with sim.cluster2 = "gpc" (what the lent
 * H200 does), any two SMs of one GPC, cluster-eligible and free-floating SMs
 * apart; larger clusters only among one GPC's cluster-eligible SMs, tiled by the
 * hardware in an order that varies from launch to launch. L2 bandwidth of an SM
 * set: each SM reads at sim.l2_gbps_per_sm until its TPC saturates at
 * sim.l2_gbps_per_tpc (optional) and its GPC's crossbar port at
 * sim.l2_gbps_per_gpc, and, optionally, the GPCs of one memory partition
 * together at sim.l2_gbps_per_partition (soft knees), times noise
 * 1 + jitter N(0,1). */
#include "device/sim/sim_internal.h"
#include "device/topo_ops.h"

#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STREAM_CLUSTER = 1, STREAM_L2BW = 2 };

/* d->topo_priv */
struct sim_topo {
    gos_rng cluster_rng, l2_rng;
    int tpc_of[GOS_MAX_SMS]; /* index of the SM's TPC, chip-wide */
    int cluster2_gpc;        /* sim.cluster2 == "gpc" */
    double per_tpc;          /* sim.l2_gbps_per_tpc, 0 = no TPC limit */
    double per_part;         /* sim.l2_gbps_per_partition, 0 = no partition limit */
    int part_of_gpc[GOS_MAX_GPCS]; /* majority memory partition of each GPC, or 0 */
};

/* Soft saturation of demand x at capacity c (knee sharpness 6). */
static double soft_cap(double x, double c) { return x / pow(1.0 + pow(x / c, 6.0), 1.0 / 6.0); }

static void topo_close(gos_device *d)
{
    free(d->topo_priv);
    d->topo_priv = NULL;
}

int gos_sim_topo_open(gos_device *d, const char *chip_path)
{
    const gos_chip *chip = d->chip;
    json_t *simj = json_object_get(chip->json, "sim");
    json_t *c2 = json_object_get(simj, "cluster2"), *pt = json_object_get(simj, "l2_gbps_per_tpc");
    json_t *pp = json_object_get(simj, "l2_gbps_per_partition");
    if (c2 && (!json_is_string(c2) || (strcmp(json_string_value(c2), "tpc") && strcmp(json_string_value(c2), "gpc"))))
        return gos_fail(GOS_EINVAL, "%s: sim.cluster2 must be \"tpc\" or \"gpc\"", chip_path);
    if (pt && (!json_is_number(pt) || json_number_value(pt) < 0))
        return gos_fail(GOS_EINVAL, "%s: sim.l2_gbps_per_tpc must be a non-negative number", chip_path);
    if (pp && (!json_is_number(pp) || json_number_value(pp) < 0))
        return gos_fail(GOS_EINVAL, "%s: sim.l2_gbps_per_partition must be a non-negative number", chip_path);
    struct sim_topo *s = calloc(1, sizeof *s);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    gos_sim_rng(d, &s->cluster_rng, STREAM_CLUSTER);
    gos_sim_rng(d, &s->l2_rng, STREAM_L2BW);
    for (int g = 0, t = 0; g < chip->n_gpcs; g++)
        for (int k = 0; k < chip->gpcs[g].n_tpcs; k++, t++)
            for (int j = 0; j < 2; j++)
                if (chip->gpcs[g].tpcs[k][j] >= 0)
                    s->tpc_of[chip->gpcs[g].tpcs[k][j]] = t;
    s->per_part = pp ? json_number_value(pp) : 0;
    for (int g = 0; g < chip->n_gpcs; g++) {
        int count[GOS_MAX_PARTS] = {0}, best = 0;
        for (int i = 0; i < chip->gpcs[g].n_sms; i++)
            for (int p = 0; p < chip->n_parts; p++)
                for (int k = 0; k < chip->parts[p].n_sms; k++)
                    count[p] += chip->parts[p].sms[k] == chip->gpcs[g].sms[i];
        for (int p = 1; p < chip->n_parts; p++)
            if (count[p] > count[best])
                best = p;
        s->part_of_gpc[g] = best;
    }
    s->cluster2_gpc = c2 && !strcmp(json_string_value(c2), "gpc");
    s->per_tpc = pt ? json_number_value(pt) : 0;
    d->topo_priv = s;
    return GOS_OK;
}

/* order[0..n) = 0..n-1 in a launch-dependent order. */
static void random_order(struct sim_topo *s, int *order, int n)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    gos_rng_shuffle(&s->cluster_rng, order, n);
}

static int sim_cluster_probe(gos_device *d, int cs, int *sms_out, int max_blocks, int *n_blocks)
{
    struct sim_topo *s = d->topo_priv;
    const gos_chip *c = d->chip;
    int n = 0;
    if (cs == 1) {
        int all[GOS_MAX_SMS];
        random_order(s, all, c->device.sm_count);
        for (int i = 0; i < c->device.sm_count && n < max_blocks; i++)
            sms_out[n++] = all[i];
    } else if (cs == 2 && s->cluster2_gpc) {
        /* Any two SMs of a GPC: eligible ones among themselves, free ones too. */
        int gorder[GOS_MAX_GPCS];
        random_order(s, gorder, c->n_gpcs);
        for (int k = 0; k < c->n_gpcs; k++) {
            const gos_gpc *G = &c->gpcs[gorder[k]];
            for (int pass = 0; pass < 2; pass++) {
                int v[GOS_MAX_SMS], nv = 0;
                for (int i = 0; i < G->n_sms; i++) {
                    int el = 0;
                    for (int j = 0; j < G->n_cluster; j++)
                        el |= G->cluster_sms[j] == G->sms[i];
                    if (el == (pass == 0))
                        v[nv++] = G->sms[i];
                }
                gos_rng_shuffle(&s->cluster_rng, v, nv);
                for (int i = 0; i + 2 <= nv && n + 2 <= max_blocks; i += 2) {
                    sms_out[n++] = v[i];
                    sms_out[n++] = v[i + 1];
                }
            }
        }
    } else if (cs == 2) {
        /* One cluster per complete TPC, in a random order, random rank order. */
        int pairs[GOS_MAX_SMS][2], np = 0;
        for (int g = 0; g < c->n_gpcs; g++)
            for (int t = 0; t < c->gpcs[g].n_tpcs; t++)
                if (c->gpcs[g].tpcs[t][1] >= 0) {
                    int flip = gos_rng_below(&s->cluster_rng, 2);
                    pairs[np][0] = c->gpcs[g].tpcs[t][flip];
                    pairs[np][1] = c->gpcs[g].tpcs[t][1 - flip];
                    np++;
                }
        int order[GOS_MAX_SMS];
        random_order(s, order, np);
        for (int i = 0; i < np && n + 2 <= max_blocks; i++) {
            sms_out[n++] = pairs[order[i]][0];
            sms_out[n++] = pairs[order[i]][1];
        }
    } else {
        /* Per GPC: its cluster-eligible SMs in a launch-dependent order, tiled
         * into clusters of cs; the remainder stays idle this launch. */
        int gorder[GOS_MAX_GPCS];
        random_order(s, gorder, c->n_gpcs);
        for (int k = 0; k < c->n_gpcs; k++) {
            const gos_gpc *G = &c->gpcs[gorder[k]];
            int v[GOS_MAX_SMS];
            memcpy(v, G->cluster_sms, sizeof(int) * G->n_cluster);
            gos_rng_shuffle(&s->cluster_rng, v, G->n_cluster);
            for (int i = 0; i + cs <= G->n_cluster && n + cs <= max_blocks; i += cs)
                for (int j = 0; j < cs; j++)
                    sms_out[n++] = v[i + j];
        }
    }
    if (n == 0)
        return gos_fail(GOS_EUNSUPPORTED, "no GPC of the simulated chip can host clusters of %d", cs);
    *n_blocks = n;
    return GOS_OK;
}

static int sim_l2_bandwidth(gos_device *d, const int *sms, int n, double *gbps)
{
    struct sim_topo *s = d->topo_priv;
    const gos_chip *c = d->chip;
    int per_tpc[GOS_MAX_SMS] = {0};
    unsigned char seen[GOS_MAX_SMS] = {0};
    for (int i = 0; i < n; i++) {
        if (seen[sms[i]]++)
            return gos_fail(GOS_EINVAL, "SM %d listed twice", sms[i]);
        per_tpc[s->tpc_of[sms[i]]]++;
    }
    /* Demand per TPC (capped by the TPC), summed per GPC (capped by the port). */
    double demand[GOS_MAX_GPCS] = {0}, total = 0;
    for (int g = 0, t = 0; g < c->n_gpcs; g++)
        for (int k = 0; k < c->gpcs[g].n_tpcs; k++, t++) {
            if (!per_tpc[t])
                continue;
            double x = per_tpc[t] * c->sim_l2_gbps_per_sm;
            demand[g] += s->per_tpc > 0 ? soft_cap(x, s->per_tpc) : x;
        }
    /* GPC outputs, capped per memory partition when the chip says so. */
    double part[GOS_MAX_PARTS] = {0};
    for (int g = 0; g < c->n_gpcs; g++)
        if (demand[g] > 0) {
            double x = soft_cap(demand[g], c->sim_l2_gbps_per_gpc);
            if (s->per_part > 0)
                part[s->part_of_gpc[g]] += x;
            else
                total += x;
        }
    for (int p = 0; s->per_part > 0 && p < GOS_MAX_PARTS; p++)
        if (part[p] > 0)
            total += soft_cap(part[p], s->per_part);
    *gbps = total * gos_sim_noise(d, &s->l2_rng);
    return GOS_OK;
}

const struct gos_topo_ops gos_sim_topo_ops = {
    .close = topo_close,
    .cluster_probe = sim_cluster_probe,
    .l2_bandwidth = sim_l2_bandwidth,
};
