/* SPDX-License-Identifier: Apache-2.0 */
/* section_numa.c: the numa section of the chart (pillar 1b): HBM latency
 * histogram, the threshold found from it, SM-to-partition affinity, the in-page
 * hash bits and interleave granularity, local/remote latencies; with --verify
 * SIZE|all, every 4 KB page of an allocation classified and compared with the
 * prediction of the in-page hash plus one parity per 2 MB page; with --repeat
 * N, N discoveries that must agree. */
#include "chart/chart.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "numa/numa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "0-15,32-47" */
static void print_sms(FILE *f, const int *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        fprintf(f, "%s%d", i ? "," : "", v[i]);
        if (j > i)
            fprintf(f, "-%d", v[j]);
        i = j + 1;
    }
}

static int same_model(const gos_numa_model *a, const gos_numa_model *b)
{
    if (a->in_page_mask != b->in_page_mask || a->n_parts != b->n_parts || a->n_parities != b->n_parities ||
        a->n_dies != b->n_dies)
        return 0;
    for (int j = 0; j < a->n_parities; j++)
        if (a->masks[j] != b->masks[j])
            return 0;
    for (int s = 0; s < a->sm_count; s++)
        if (a->part_of[s] != b->part_of[s])
            return 0;
    return 1;
}

static void print_model(FILE *f, const gos_device *d, const gos_numa_model *m, const gos_chip *c)
{
    fprintf(f, "NUMA (%s%s), reference SM %d\n", gos_dev_label(d), d->info.name, m->ref_sm);
    if (m->remeasured)
        fprintf(f, "  the first try was ambiguous (%s): measured again\n", m->first_try);
    fprintf(f, "  HBM latency from SM %d, %d lines (cycles):\n", m->ref_sm, m->n_hist);
    gos_hist_print(f, m->hist_samples, m->n_hist, 24, 50, m->tiers.threshold);
    if (m->multi) {
        fprintf(f, "  %d tiers (cycles):", m->n_tiers);
        for (int t = 0; t < m->n_tiers; t++)
            fprintf(f, "%s %.0f %s (%.1f %% of lines)", t ? "," : "", m->tier[t].cycles,
                    gos_relation_name(m->tier[t].relation), 100 * m->tiers_n.fraction[t]);
        fprintf(f, "; thresholds");
        for (int t = 0; t + 1 < m->tiers_n.n; t++)
            fprintf(f, " %.0f", m->tiers_n.threshold[t]);
        fprintf(f, ", %d outliers\n", m->tiers_n.n_outliers);
    } else
        fprintf(f, "  threshold %.0f cycles: near tier %.0f (MAD %.0f, %.1f %%), far tier %.0f (MAD %.0f), %d outliers\n",
                m->tiers.threshold, m->tiers.low, m->tiers.low_spread, 100 * m->tiers.frac_low,
                m->tiers.high, m->tiers.high_spread, m->tiers.n_outliers);
    for (int p = 0; p < c->n_parts; p++) {
        fprintf(f, "  partition %d: %3d SMs  ", p, c->parts[p].n_sms);
        print_sms(f, c->parts[p].sms, c->parts[p].n_sms);
        fputc('\n', f);
    }
    if (m->multi) {
        if (m->n_dies) {
            fprintf(f, "  dies:");
            for (int k = 0; k < m->n_dies; k++) {
                fprintf(f, "%s {", k ? "," : "");
                for (int p = 0, first = 1; p < m->n_parts; p++)
                    if (m->die_of_part[p] == k) {
                        fprintf(f, "%s%d", first ? "" : " ", p);
                        first = 0;
                    }
                fprintf(f, "}");
            }
            fputc('\n', f);
        } else
            fprintf(f, "  dies: not told apart by the tiers\n");
        fprintf(f, "  hash: %d parities (partition code bit j), in-page bits", m->n_parities);
        for (int j = 0; j < m->n_parities; j++) {
            fprintf(f, " {");
            for (int b = GOS_HASH_LO, first = 1; b <= GOS_HASH_HI; b++)
                if (m->masks[j] >> b & 1) {
                    fprintf(f, "%s%d", first ? "" : " ", b);
                    first = 0;
                }
            fprintf(f, "}");
        }
        fprintf(f, ", granularity %llu B, plus one code per 2 MB page\n", (unsigned long long)m->granularity);
    } else {
        fprintf(f, "  hash: in-page bits");
        for (int i = 0; i < c->n_in_page_bits; i++)
            fprintf(f, " %d", c->in_page_bits[i]);
        if (!c->n_in_page_bits)
            fprintf(f, " (none)");
        fprintf(f, ", granularity %llu B, plus one parity per 2 MB page\n",
                (unsigned long long)m->granularity);
    }
    fprintf(f, "  affinity: every SM on %s reference lines, one SM at a time; ", "the same");
    if (m->n_ambiguous) {
        fprintf(f, "%d ambiguous SMs (separation < 0.3):", m->n_ambiguous);
        for (int i = 0; i < m->n_ambiguous; i++)
            fprintf(f, " %d", m->ambiguous[i]);
        fputc('\n', f);
    } else {
        double lo = 1e9;
        for (int s = 0; s < m->sm_count; s++)
            lo = fabs(m->sm_sep[s]) < lo ? fabs(m->sm_sep[s]) : lo;
        if (m->multi)
            fprintf(f, "all clear (smallest near-set overlap with its partition %.2f)\n", lo);
        else
            fprintf(f, "all clear (smallest separation %.2f of the tier gap)\n", lo);
    }
    if (!m->multi)
        fprintf(f, "  all SMs probing at once agree on %.1f %% of SMs\n", 100 * m->concurrent_agreement);
    fprintf(f, "  latency (cycles): HBM local %.0f remote %.0f, L2 hit local %.0f remote %.0f\n",
            m->hbm_local, m->hbm_remote, m->l2_local, m->l2_remote);
    fprintf(f, "  time: %.3f s (histogram %.3f, hash %.3f, affinity %.3f, L2 %.3f)\n",
            m->t_total_s, m->t_hist_s, m->t_hash_s, m->t_affinity_s, m->t_l2_s);
}

/* What a failed discovery measured before it stopped. */
static void print_partial(FILE *f, const gos_numa_model *m)
{
    if (m->n_hist) {
        fprintf(f, "NUMA discovery stopped; HBM latency from SM %d, %d lines (cycles):\n", m->ref_sm,
                m->n_hist);
        gos_hist_print(f, m->hist_samples, m->n_hist, 24, 50, m->have_tiers ? m->tiers.threshold : 0);
    }
    if (m->have_tiers)
        fprintf(f, "  threshold %.0f: tiers %.0f / %.0f\n", m->tiers.threshold, m->tiers.low,
                m->tiers.high);
    if (m->have_hash || m->flip_frac[12] > 0 || m->flip_frac[13] > 0) {
        fprintf(f, "  bit flips (share of pairs that changed tier):");
        for (int b = GOS_HASH_LO; b <= GOS_HASH_HI; b++)
            fprintf(f, " %d:%.2f", b, m->flip_frac[b]);
        fputc('\n', f);
    }
}

static int run_verify(gos_chart_ctx *ctx, const gos_numa_model *m)
{
    gos_numa_verify v;
    int rc = gos_numa_verify_run(ctx->dev, m, ctx->verify_bytes, 2, &v);
    if (rc)
        return rc;
    json_object_set_new(json_object_get(ctx->chip->json, "numa"), "verification",
                        gos_numa_verify_json(&v));
    if (ctx->out)
        fprintf(ctx->out,
                "  verification: %.2f GB, %llu pages of 4 KB: %.4f %% agree with the prediction "
                "(%llu mismatches, %llu unclassified) in %.2f s (parity probe %.2f s, sweep %.2f s)\n",
                v.bytes / 1e9, (unsigned long long)v.units, 100 * v.agreement,
                (unsigned long long)(v.classified - v.agree), (unsigned long long)v.unknown,
                v.t_total_s, v.t_parity_s, v.t_sweep_s);
    if (ctx->out && v.reprobed)
        fprintf(ctx->out,
                "  re-probed the %llu disagreeing or unclassified pages (7 probes each): %llu match "
                "the prediction -> %.4f %% of all pages agree (%.2f s)\n",
                (unsigned long long)v.reprobed, (unsigned long long)v.resolved,
                100 * v.agreement_after, v.t_reprobe_s);
    return GOS_OK;
}

int gos_chart_numa(gos_chart_ctx *ctx)
{
    if (ctx->repeats > 100)
        return gos_fail(GOS_EINVAL, "numa: at most 100 repeated discoveries (asked for %d)", ctx->repeats);
    gos_numa_opts o;
    gos_numa_opts_default(&o);
    gos_numa_model m;
    int rc = gos_numa_discover(ctx->dev, &o, &m);
    if (rc) {
        if (ctx->out)
            print_partial(ctx->out, &m);
        gos_numa_model_free(&m);
        return rc;
    }
    int reps = ctx->repeats > 1 ? ctx->repeats : 1, agree = 1;
    json_t *rj = NULL;
    if (reps > 1) {
        double v[5][100]; /* per run: hbm_local, hbm_remote, l2_local, l2_remote, time */
        for (int k = 0; k < reps; k++) {
            gos_numa_model mk;
            if (k == 0)
                mk = m;
            else if ((rc = gos_numa_discover(ctx->dev, &o, &mk))) {
                gos_numa_model_free(&mk);
                gos_numa_model_free(&m);
                return rc;
            }
            agree &= same_model(&m, &mk);
            v[0][k] = mk.hbm_local, v[1][k] = mk.hbm_remote, v[2][k] = mk.l2_local, v[3][k] = mk.l2_remote;
            v[4][k] = mk.t_total_s;
            if (k)
                gos_numa_model_free(&mk);
        }
        rj = GOS_JSON_OBJ(GOS_JI("runs", reps), GOS_JB("identical", agree),
                          GOS_JO("hbm_local", gos_json_reals(v[0], reps)), GOS_JO("hbm_remote", gos_json_reals(v[1], reps)),
                          GOS_JO("l2_local", gos_json_reals(v[2], reps)), GOS_JO("l2_remote", gos_json_reals(v[3], reps)),
                          GOS_JO("time_s", gos_json_reals(v[4], reps)));
    }
    gos_numa_model_to_chip(&m, ctx->chip);
    if (rj)
        json_object_set_new(json_object_get(ctx->chip->json, "numa"), "repeats", rj);
    if (ctx->out) {
        print_model(ctx->out, ctx->dev, &m, ctx->chip);
        if (reps > 1)
            fprintf(ctx->out, "  %d runs: partitions and hash %s\n", reps,
                    agree ? "identical" : "DIFFER between runs");
    }
    if (ctx->verify_bytes)
        rc = run_verify(ctx, &m);
    gos_numa_model_free(&m);
    if (!rc && !agree)
        rc = gos_fail(GOS_EAMBIGUOUS, "numa: %d repeated discoveries disagree", reps);
    return rc;
}
