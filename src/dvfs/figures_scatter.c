/* SPDX-License-Identifier: Apache-2.0 */
/* figures_scatter.c: every measured switch of each pair as a scatter (paper
 * 000, section VII-B, figures 5 and 6): x the measurement number, y its
 * latency, one colour per DBSCAN cluster, the outliers the filter removed as
 * red rings. One small picture per pair, in the heat maps' order (initial
 * frequency, then target, descending). */
#include "dvfs/dvfs_report.h"

#include "report/svg.h"

#include <stdio.h>
#include <stdlib.h>

static void one(FILE *f, const gos_dvfs_rgpu *g, const gos_dvfs_rpair *p)
{
    size_t n = p->n_pts, n_out = 0;
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    int *grp = malloc((n + 1) * sizeof *grp), ng = 0;
    if (!x || !y || !grp)
        goto out;
    for (size_t i = 0; i < n; i++) {
        x[i] = p->pts[i].measurement;
        y[i] = p->pts[i].ms;
        grp[i] = p->pts[i].cluster;
        if (grp[i] >= GOS_SVG_MAX_GROUPS)
            grp[i] = GOS_SVG_MAX_GROUPS - 1; /* beyond the legend: one colour */
        ng = grp[i] + 1 > ng ? grp[i] + 1 : ng;
        n_out += grp[i] < 0;
    }
    char labels[GOS_SVG_MAX_GROUPS][48], out_label[48], title[160], id[200];
    const char *lp[GOS_SVG_MAX_GROUPS];
    for (int c = 0; c < ng; c++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            k += grp[i] == c;
        if (ng == 1)
            snprintf(labels[c], sizeof labels[c], "kept: %zu", k);
        else
            snprintf(labels[c], sizeof labels[c], "cluster %d: %zu", c + 1, k);
        lp[c] = labels[c];
    }
    snprintf(out_label, sizeof out_label, "outliers (filtered): %zu", n_out);
    int len = snprintf(title, sizeof title, "%d \xe2\x86\x92 %d MHz: %zu switches", p->init, p->target, n);
    if (p->has_silhouette && len > 0 && (size_t)len < sizeof title)
        snprintf(title + len, sizeof title - len, ", silhouette %.2f", p->silhouette);
    snprintf(id, sizeof id, "scatter %s %d-%d", g->uuid[0] ? g->uuid : "-", p->init, p->target);
    gos_svg_scatter_t s = {.title = title, .xlabel = "measurement", .ylabel = "latency [ms]", .width = 420,
                           .height = 250, .x = x, .y = y, .group = grp, .n = (int)n, .n_groups = ng,
                           .group_labels = lp, .outlier_label = out_label, .id = id};
    gos_svg_scatter(f, &s);
out:
    free(x);
    free(y);
    free(grp);
}

void gos_dvfs_fig_scatter(FILE *f, const gos_dvfs_rgpu *g, int h)
{
    size_t total = 0;
    for (int i = 0; i < g->np; i++)
        total += g->ps[i].n_pts;
    fprintf(f, "<h%d>Every measured switch (paper 000, figures 5 and 6)</h%d>\n<p>One point per viable "
               "measurement (%zu over %d pairs): x the measurement number, y its latency; a colour per DBSCAN "
               "cluster, red rings the outliers the filter removed.</p>\n<div class=figs>\n",
            h, h, total, g->np);
    for (int a = 0; a < g->nf; a++)
        for (int b = 0; b < g->nf; b++) {
            const gos_dvfs_rpair *p = gos_dvfs_rgpu_pair(g, g->fr[a], g->fr[b]);
            if (p)
                one(f, g, p);
        }
    fprintf(f, "</div>\n");
}
