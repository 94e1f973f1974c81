/* SPDX-License-Identifier: Apache-2.0 */
/* report_html.c: `gpuos dvfs report DIR... --html OUT`: one self-contained HTML
 * page (inline SVG, no scripts) from analysis directories (summary.json and the
 * per-pair CSV files) or run directories (analysed on the fly, report_input.c),
 * laid out as paper 000 section VII presents results, per GPU:
 *   - heatmaps of the best-case (min) and worst-case (max) latency per pair,
 *     initial frequency in rows, target in columns, light (low) to dark blue (high);
 *   - the distribution of latencies for increasing against decreasing switches
 *     (mirrored density "violins", figure 4);
 *   - table II: min/mean/max of the per-pair worst-case and best-case latencies
 *     with the transitions where the extremes occur;
 *   - every measured switch of each pair (figures_scatter.c, figures 5, 6).
 * With several directories (one GPU each, told apart by the UUID in their
 * metadata; the same GPU twice is an error) the page opens with the fleet view
 * (figures_fleet.c, figures 7-9), then each GPU's section. */
#include "dvfs/dvfs_report.h"

#include "common/jsonio.h"
#include "report/svg.h"
#include "stats/stats.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void heatmap(FILE *f, int hl, int gi, const char *title, const gos_dvfs_rpair *ps, int np, const int *fr, int nf,
                    int worst)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < np; i++) {
        double v = worst ? ps[i].max : ps[i].min;
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    fprintf(f, "<h%d>%s</h%d>\n<table class=hm><tr><th>init \\ target [MHz]</th>", hl, title, hl);
    for (int j = 0; j < nf; j++)
        fprintf(f, "<th>%d</th>", fr[j]);
    fprintf(f, "</tr>\n");
    for (int i = 0; i < nf; i++) {
        fprintf(f, "<tr><th>%d</th>", fr[i]);
        for (int j = 0; j < nf; j++) {
            const gos_dvfs_rpair *p = NULL;
            for (int k = 0; k < np; k++)
                if (ps[k].init == fr[i] && ps[k].target == fr[j])
                    p = &ps[k];
            if (!p) {
                fprintf(f, "<td class=na>%s</td>", i == j ? "" : "&ndash;");
                continue;
            }
            double v = worst ? p->max : p->min;
            char c[32];
            int dark;
            gos_svg_heat_color(hi > lo ? (v - lo) / (hi - lo) : 0, c, sizeof c, &dark);
            fprintf(f, "<td style=\"background:%s%s\" title=\"n=%zu\">%.2f</td>", c, dark ? ";color:#fff" : "", p->n, v);
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
    /* the colour scale: light (fastest) to dark blue (slowest) over the map's range */
    char c0[32], c1[32], c2[32];
    int dark;
    gos_svg_heat_color(0, c0, sizeof c0, &dark), gos_svg_heat_color(0.5, c1, sizeof c1, &dark),
        gos_svg_heat_color(1, c2, sizeof c2, &dark);
    fprintf(f, "<svg class=legend xmlns=\"http://www.w3.org/2000/svg\" width=\"360\" height=\"34\" "
               "font-family=\"sans-serif\" font-size=\"11\"><defs><linearGradient id=\"g%d_%d\">"
               "<stop offset=\"0\" stop-color=\"%s\"/><stop offset=\"0.5\" stop-color=\"%s\"/>"
               "<stop offset=\"1\" stop-color=\"%s\"/></linearGradient></defs>"
               "<rect x=\"60\" y=\"2\" width=\"240\" height=\"14\" fill=\"url(#g%d_%d)\" stroke=\"#888\"/>"
               "<line x1=\"60\" y1=\"16\" x2=\"60\" y2=\"19\" stroke=\"#888\"/><line x1=\"300\" y1=\"16\" x2=\"300\" "
               "y2=\"19\" stroke=\"#888\"/>"
               "<text x=\"56\" y=\"13\" text-anchor=\"end\">%.2f ms</text>"
               "<text x=\"304\" y=\"13\">%.2f ms</text>"
               "<text x=\"180\" y=\"30\" text-anchor=\"middle\">%s latency of the pair (colour scale)</text></svg>\n",
            gi, worst, c0, c1, c2, gi, worst, isfinite(lo) ? lo : 0, isfinite(hi) ? hi : 0, worst ? "worst" : "best");
}

static void distributions(FILE *f, int hl, const gos_dvfs_rpair *ps, int np)
{
    size_t ni = 0, nd = 0;
    for (int i = 0; i < np; i++)
        *(ps[i].init < ps[i].target ? &ni : &nd) += ps[i].n_lat;
    double *inc = malloc((ni + 1) * sizeof *inc), *dec = malloc((nd + 1) * sizeof *dec);
    double *winc = malloc((np + 1) * sizeof *winc), *wdec = malloc((np + 1) * sizeof *wdec);
    if (!inc || !dec || !winc || !wdec)
        goto out;
    size_t a = 0, b = 0, wa = 0, wb = 0;
    for (int i = 0; i < np; i++) {
        for (size_t k = 0; k < ps[i].n_lat; k++) {
            double v = ps[i].lat[k];
            if (ps[i].init < ps[i].target)
                inc[a++] = v;
            else
                dec[b++] = v;
        }
        if (ps[i].init < ps[i].target)
            winc[wa++] = ps[i].max;
        else
            wdec[wb++] = ps[i].max;
    }
    fprintf(f, "<h%d>Increasing vs decreasing switches</h%d>\n<p>Every kept measurement (outliers "
               "removed); bar: mean. Increasing: %zu measurements over %zu pairs; decreasing: %zu over "
               "%zu pairs.",
            hl, hl, a, wa, b, wb);
    if (wa)
        fprintf(f, " Mean worst case per pair: increasing %.2f ms", gos_mean(winc, wa));
    if (wb)
        fprintf(f, ", decreasing %.2f ms", gos_mean(wdec, wb));
    fprintf(f, ".</p>\n");
    gos_svg_series vs[2] = {{.label = "increasing (init < target)", .color = "#7fb3d5", .y = inc, .n = (int)a},
                            {.label = "decreasing (init > target)", .color = "#f5b041", .y = dec, .n = (int)b}};
    gos_svg_frame fr = {.title = "Switching latency by direction", .ylabel = "latency [ms]", .width = 460,
                        .height = 340};
    gos_svg_violins(f, &fr, vs, 2);
out:
    free(inc);
    free(dec);
    free(winc);
    free(wdec);
}

static void table2(FILE *f, int hl, const gos_dvfs_rpair *ps, int np)
{
    fprintf(f, "<h%d>Summary (paper 000, table II layout)</h%d>\n<table class=t2>\n", hl, hl);
    for (int worst = 1; worst >= 0; worst--) {
        int imin = 0, imax = 0;
        double sum = 0;
        for (int i = 0; i < np; i++) {
            double v = worst ? ps[i].max : ps[i].min;
            sum += v;
            if (v < (worst ? ps[imin].max : ps[imin].min))
                imin = i;
            if (v > (worst ? ps[imax].max : ps[imax].min))
                imax = i;
        }
        const gos_dvfs_rpair *a = &ps[imin], *b = &ps[imax];
        fprintf(f, "<tr><th colspan=2>The %s-case latencies</th></tr>\n", worst ? "worst" : "best");
        fprintf(f, "<tr><td>Min [ms]</td><td>%.3f</td></tr><tr><td>transition [MHz]</td><td>(%d&rarr;%d)</td></tr>\n",
                worst ? a->max : a->min, a->init, a->target);
        fprintf(f, "<tr><td>Mean [ms]</td><td>%.3f</td></tr>\n", sum / np);
        fprintf(f, "<tr><td>Max [ms]</td><td>%.3f</td></tr><tr><td>transition [MHz]</td><td>(%d&rarr;%d)</td></tr>\n",
                worst ? b->max : b->min, b->init, b->target);
    }
    fprintf(f, "</table>\n");
}

/* One GPU: where its numbers come from, its heat maps, distributions, table II
 * and every measured switch; headings at level hl. */
static void gpu_section(FILE *f, const gos_dvfs_rgpu *g, int gi, int hl)
{
    fprintf(f, "<p>");
    gos_html_escape(f, g->name);
    if (g->simulated)
        fprintf(f, " (<b>simulated</b>)");
    if (g->uuid[0]) {
        fprintf(f, " <code>");
        gos_html_escape(f, g->uuid);
        fprintf(f, "</code>");
    }
    fprintf(f, ", host ");
    gos_html_escape(f, g->host);
    fprintf(f, ", run ");
    gos_html_escape(f, g->run);
    fprintf(f, "%s. Latencies after DBSCAN outlier filtering (paper 000, algorithm 3); %d pairs with "
               "measurements, %zu excluded in calibration.</p>\n",
            g->from_run ? " (analysed for this page)" : "", g->np, g->n_excluded);
    heatmap(f, hl, gi, "Best-case (minimum) switching latency [ms]", g->ps, g->np, g->fr, g->nf, 0);
    heatmap(f, hl, gi, "Worst-case (maximum) switching latency [ms]", g->ps, g->np, g->fr, g->nf, 1);
    distributions(f, hl, g->ps, g->np);
    table2(f, hl, g->ps, g->np);
    gos_dvfs_fig_scatter(f, g, hl);
}

static void fleet_table(FILE *f, const gos_dvfs_rgpu *gs, int n)
{
    fprintf(f, "<table class=t2><tr><th>GPU (UUID)</th><th>name</th><th>host</th><th>directory</th>"
               "<th>pairs</th><th>switches kept</th><th>best case [ms]</th><th>worst case [ms]</th></tr>\n");
    for (int g = 0; g < n; g++) {
        size_t kept = 0;
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < gs[g].np; i++) {
            kept += gs[g].ps[i].n_lat;
            lo = fmin(lo, gs[g].ps[i].min);
            hi = fmax(hi, gs[g].ps[i].max);
        }
        fprintf(f, "<tr><td><a href=\"#gpu%d\">", g);
        gos_html_escape(f, gs[g].uuid);
        fprintf(f, "</a></td><td>");
        gos_html_escape(f, gs[g].name);
        fprintf(f, "%s</td><td>", gs[g].simulated ? " (simulated)" : "");
        gos_html_escape(f, gs[g].host);
        fprintf(f, "</td><td>");
        gos_html_escape(f, gs[g].dir);
        fprintf(f, "</td><td>%d</td><td>%zu</td><td>%.3f</td><td>%.3f</td></tr>\n", gs[g].np, kept, lo, hi);
    }
    fprintf(f, "</table>\n");
}

int gos_dvfs_report(const char *const *dirs, int n, const char *html)
{
    if (n < 1)
        return gos_fail(GOS_EINVAL, "no directory to report");
    gos_dvfs_rgpu *gs = calloc((size_t)n, sizeof *gs);
    if (!gs)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = GOS_OK;
    for (int i = 0; i < n && !rc; i++) {
        if ((rc = gos_dvfs_rgpu_load(dirs[i], &gs[i])))
            break;
        if (n > 1 && !gs[i].uuid[0])
            rc = gos_fail(GOS_EINVAL, "%s: no device uuid in its metadata (run.json \"device\"): the GPUs of a "
                                      "fleet are told apart by it", dirs[i]);
        for (int j = 0; j < i && !rc; j++)
            if (n > 1 && !strcmp(gs[i].uuid, gs[j].uuid))
                rc = gos_fail(GOS_EINVAL, "%s: GPU %s is already in the report (from %s)", dirs[i], gs[i].uuid,
                              dirs[j]);
    }
    FILE *f = NULL;
    if (!rc && !(f = fopen(html, "w")))
        rc = gos_fail(GOS_EIO, "cannot write %s", html);
    if (!rc) {
        fprintf(f, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>gpuos dvfs report</title>\n"
                   "<style>body{font-family:sans-serif;margin:2em;max-width:1300px}"
                   "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:4px 8px;"
                   "text-align:right}td.na{background:#eee}.t2 td:first-child{text-align:left}"
                   ".figs{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}</style>"
                   "</head><body>\n");
        if (n == 1) {
            fprintf(f, "<h1>SM frequency switching latency</h1>\n");
            gpu_section(f, &gs[0], 0, 2);
        } else {
            fprintf(f, "<h1>SM frequency switching latency: fleet of %d GPUs</h1>\n", n);
            fleet_table(f, gs, n);
            gos_dvfs_fig_fleet(f, gs, n);
            for (int g = 0; g < n; g++) {
                fprintf(f, "<section id=\"gpu%d\" data-gpu=\"", g);
                gos_html_escape(f, gs[g].uuid);
                fprintf(f, "\">\n<h2>GPU ");
                gos_html_escape(f, gs[g].uuid);
                fprintf(f, "</h2>\n");
                gpu_section(f, &gs[g], g, 3);
                fprintf(f, "</section>\n");
            }
        }
        fprintf(f, "</body></html>\n");
        if (fclose(f))
            rc = gos_fail(GOS_EIO, "cannot write %s", html);
    }
    for (int i = 0; i < n; i++) /* zeroed or (partly) loaded */
        gos_dvfs_rgpu_free(&gs[i]);
    free(gs);
    return rc;
}
