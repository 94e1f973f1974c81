/* SPDX-License-Identifier: Apache-2.0 */
/* section_memory.c: the memory section of the chart (pillar 1b costs):
 * local and remote L2-hit latency, local and remote HBM bandwidth, the effective
 * L2 capacity from the bandwidth-versus-working-set curve, and the replication
 * test of paper 001 section 6.2.2. Uses the partitions and hash the numa section
 * put in the chart; run alone, it discovers them first (without charting them).
 * Figures go to a top-level "memory" object; the L2 latencies also refine the
 * chart's numa.latency_cycles when the numa section ran. */
#include "common/jsonio.h"
#include "chart/chart.h"
#include "common/status.h"
#include "numa/figures.h"

#include <stdlib.h>

int gos_chart_memory(gos_chart_ctx *ctx)
{
    gos_numa_model m;
    int rc;
    if (ctx->chip->n_parts == 2)
        rc = gos_numa_model_from_chip(ctx->chip, &m);
    else {
        gos_numa_opts o;
        gos_numa_opts_default(&o);
        rc = gos_numa_discover(ctx->dev, &o, &m);
    }
    if (rc)
        return rc;
    if (m.remeasured && ctx->out)
        fprintf(ctx->out, "memory: the NUMA discovery's first try was ambiguous (%s): measured again\n",
                m.first_try);
    gos_memory_figures f;
    rc = gos_memory_measure(ctx->dev, &m, &f);
    gos_numa_model_free(&m);
    if (rc)
        return rc;
    uint64_t l2 = ctx->dev->info.l2_bytes;
    if (!ctx->chip->json)
        ctx->chip->json = json_object();
    json_object_set_new(ctx->chip->json, "memory", gos_memory_json(&f, l2));
    if (ctx->chip->has_latency) {
        ctx->chip->lat_l2_local = f.l2_local;
        ctx->chip->lat_l2_remote = f.l2_remote;
        gos_json_child(json_object_get(ctx->chip->json, "numa"), "latency_cycles");
    }
    FILE *out = ctx->out;
    if (out) {
        fprintf(out, "Memory (%s%s)\n", gos_dev_label(ctx->dev), ctx->dev->info.name);
        fprintf(out, "  L2-hit latency (cycles): local %.0f, remote %.0f (%d samples each)\n",
                f.l2_local, f.l2_remote, f.n_l2);
        fprintf(out, "  local L2 hit:\n");
        gos_hist_print(out, f.l2_samples[0], f.n_l2, 8, 40, 0);
        fprintf(out, "  remote L2 hit:\n");
        gos_hist_print(out, f.l2_samples[1], f.n_l2, 8, 40, 0);
        fprintf(out, "  replication (6.2.2): reload after a remote invalidation %.0f cycles -> %s\n",
                f.reload, f.replicated ? "replicated in the local L2 (like a local hit)"
                                       : "not replicated (like a remote HBM access)");
        if (f.has_bw)
            fprintf(out,
                    "  HBM read bandwidth (GB/s): local %.0f / %.0f, remote %.0f / %.0f "
                    "(partition 0 / 1 SMs), all SMs all pages %.0f\n",
                    f.bw_local[0], f.bw_local[1], f.bw_remote[0], f.bw_remote[1], f.bw_all);
        else
            fprintf(out, "  HBM local/remote bandwidth: not measured (granularity below 4 KB)\n");
        fprintf(out, "  L2 curves, GB/s by working set (private: all SMs, each page one reader;\n"
                     "  shared: every SM reads every page, as in the paper's benchmark;\n"
                     "  one-part: only partition 0's SMs read, each page one reader):\n");
        fprintf(out, "    %9s %9s %9s %9s\n", "MB", "private", "shared", "one-part");
        const gos_l2_curve *cp = &f.curve[0];
        int j[3] = {0, 0, 0};
        for (int i = 0; i < cp->n; i += 2) {
            fprintf(out, "    %9.1f %9.0f", cp->ws[i] / (1 << 20), cp->gbps[i]);
            for (int k = 1; k < 3; k++) {
                const gos_l2_curve *c = &f.curve[k];
                while (j[k] < c->n && c->ws[j[k]] < cp->ws[i])
                    j[k]++;
                if (j[k] < c->n && c->ws[j[k]] == cp->ws[i])
                    fprintf(out, " %9.0f", c->gbps[j[k]]);
                else
                    fprintf(out, " %9s", "");
            }
            fputc('\n', out);
        }
        static const char *const names[3] = {"private", "shared", "one partition's SMs"};
        for (int k = 0; k < 3; k++) {
            const gos_l2_curve *c = &f.curve[k];
            if (c->has_knee)
                fprintf(out, "  effective L2 (%s): %.1f MB = %.1f %% of %.1f MB (plateau %.0f, floor %.0f GB/s)\n",
                        names[k], c->eff_bytes / (1 << 20),
                        l2 ? 100 * c->eff_bytes / l2 : 0, l2 / (double)(1 << 20), c->plateau,
                        c->floor_gbps);
            else
                fprintf(out, "  effective L2 (%s): no clear knee in the curve\n", names[k]);
        }
        fprintf(out, "  time: %.3f s\n", f.t_total_s);
    }
    gos_memory_figures_free(&f);
    return GOS_OK;
}
