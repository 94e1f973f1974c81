/* SPDX-License-Identifier: Apache-2.0 */
/* figures_fleet.c: the fleet view of several GPUs' switching latencies (paper
 * 000, section VII-C, figures 7-9):
 *   - figures 7 and 8: per pair, the range (largest minus smallest over the
 *     GPUs that measured it) of the best-case (min) and of the worst-case (max)
 *     latency, as heat maps (initial frequency in rows, target in columns);
 *   - beside them, per GPU, the range its pairs' best-case and worst-case
 *     latencies span (a bar from the smallest to the largest, a tick per pair);
 *   - figure 9: box plots, one box per GPU, of the pairs with the highest
 *     boundary spread, max(range of min, range of max) over the GPUs (the
 *     GOS_DVFS_FLEET_BOX_PAIRS largest; pairs measured on at least two GPUs).
 *     Boxes: the kept latencies (DBSCAN outliers removed), quartiles as numpy's
 *     default (linear), whiskers at the most extreme value within 1.5 IQR
 *     (Tukey, as matplotlib/seaborn draw the paper's figures), fliers beyond. */
#include "dvfs/dvfs_report.h"

#include "report/svg.h"
#include "stats/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int init, target;
    int n_gpus;
    double range_min, range_max, spread;
} fpair;

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static int cmp_spread(const void *a, const void *b)
{
    const fpair *x = a, *y = b;
    if (x->spread != y->spread)
        return x->spread < y->spread ? 1 : -1;
    return x->init != y->init ? cmp_desc(&x->init, &y->init) : cmp_desc(&x->target, &y->target);
}

/* The union of the GPUs' frequencies, descending. */
static int union_freqs(const gos_dvfs_rgpu *gs, int n, int *fr)
{
    int nf = 0;
    for (int g = 0; g < n; g++)
        for (int k = 0; k < gs[g].nf; k++) {
            int seen = 0;
            for (int j = 0; j < nf; j++)
                seen |= fr[j] == gs[g].fr[k];
            if (!seen && nf < GOS_DVFS_MAX_FREQS)
                fr[nf++] = gs[g].fr[k];
        }
    qsort(fr, nf, sizeof *fr, cmp_desc);
    return nf;
}

static void fpair_of(const gos_dvfs_rgpu *gs, int n, int init, int target, fpair *o)
{
    double lo_min = INFINITY, hi_min = -INFINITY, lo_max = INFINITY, hi_max = -INFINITY;
    *o = (fpair){.init = init, .target = target};
    for (int g = 0; g < n; g++) {
        const gos_dvfs_rpair *p = gos_dvfs_rgpu_pair(&gs[g], init, target);
        if (!p)
            continue;
        o->n_gpus++;
        lo_min = fmin(lo_min, p->min), hi_min = fmax(hi_min, p->min);
        lo_max = fmin(lo_max, p->max), hi_max = fmax(hi_max, p->max);
    }
    o->range_min = o->n_gpus >= 2 ? hi_min - lo_min : NAN;
    o->range_max = o->n_gpus >= 2 ? hi_max - lo_max : NAN;
    o->spread = o->n_gpus >= 2 ? fmax(o->range_min, o->range_max) : -1;
}

static void range_heatmap(FILE *f, const fpair *fp, const int *fr, int nf, int worst)
{
    double *v = malloc((size_t)nf * nf * sizeof *v + 1);
    char(*names)[16] = malloc((size_t)nf * sizeof *names + 1);
    const char **np = malloc((size_t)nf * sizeof *np + 1);
    if (v && names && np) {
        for (int i = 0; i < nf; i++) {
            snprintf(names[i], sizeof names[i], "%d", fr[i]);
            np[i] = names[i];
            for (int j = 0; j < nf; j++) {
                const fpair *p = &fp[i * nf + j];
                v[i * nf + j] = i == j ? NAN : worst ? p->range_max : p->range_min;
            }
        }
        gos_svg_heat h = {.title = worst ? "Range of the worst-case latency across the GPUs [ms] (figure 8)"
                                         : "Range of the best-case latency across the GPUs [ms] (figure 7)",
                          .col_label = "initial [MHz] in rows, target [MHz] in columns",
                          .rows = nf, .cols = nf, .v = v, .row_names = np, .col_names = np};
        gos_svg_heatmap(f, &h);
    }
    free(v);
    free(names);
    free(np);
}

static void range_bars(FILE *f, const gos_dvfs_rgpu *gs, int n, int worst)
{
    size_t nt = 0;
    for (int g = 0; g < n; g++)
        nt += (size_t)gs[g].np;
    double *lo = malloc((n + 1) * sizeof *lo), *hi = malloc((n + 1) * sizeof *hi), *t = malloc((nt + 1) * sizeof *t);
    int *off = malloc((n + 1) * sizeof *off);
    const char **labels = malloc((n + 1) * sizeof *labels);
    if (lo && hi && t && off && labels) {
        int k = 0;
        for (int g = 0; g < n; g++) {
            off[g] = k;
            lo[g] = INFINITY, hi[g] = -INFINITY;
            for (int i = 0; i < gs[g].np; i++) {
                double v = worst ? gs[g].ps[i].max : gs[g].ps[i].min;
                lo[g] = fmin(lo[g], v), hi[g] = fmax(hi[g], v);
                t[k++] = v;
            }
            labels[g] = gs[g].uuid;
        }
        off[n] = k;
        char id[32];
        snprintf(id, sizeof id, "ranges %s", worst ? "worst" : "best");
        gos_svg_ranges_t r = {.title = worst ? "Worst-case (maximum) latency of each pair, per GPU [ms]"
                                             : "Best-case (minimum) latency of each pair, per GPU [ms]",
                              .xlabel = "latency [ms] (bar: the GPU's range over its pairs; tick: one pair)",
                              .color = worst ? "#e6550d" : "#3182bd", .width = 700, .rows = n, .labels = labels,
                              .lo = lo, .hi = hi, .ticks = t, .off = off, .id = id};
        gos_svg_ranges(f, &r);
    }
    free(lo);
    free(hi);
    free(t);
    free(off);
    free(labels);
}

static void boxes(FILE *f, const gos_dvfs_rgpu *gs, int n, const fpair *chosen, int nc)
{
    gos_box *b = calloc((size_t)nc * n + 1, sizeof *b);
    const double **v = calloc((size_t)nc * n + 1, sizeof *v);
    const char **gl = calloc(nc + 1, sizeof *gl), **sl = calloc(n + 1, sizeof *sl), **sc = calloc(n + 1, sizeof *sc);
    char(*gn)[48] = calloc(nc + 1, sizeof *gn);
    if (b && v && gl && sl && sc && gn) {
        for (int c = 0; c < nc; c++) {
            snprintf(gn[c], sizeof gn[c], "%d \xe2\x86\x92 %d MHz", chosen[c].init, chosen[c].target);
            gl[c] = gn[c];
            for (int g = 0; g < n; g++) {
                const gos_dvfs_rpair *p = gos_dvfs_rgpu_pair(&gs[g], chosen[c].init, chosen[c].target);
                if (p && p->n_lat) {
                    gos_boxplot_sorted(p->lat, p->n_lat, &b[c * n + g]);
                    v[c * n + g] = p->lat;
                }
            }
        }
        for (int g = 0; g < n; g++)
            sl[g] = gs[g].uuid, sc[g] = gos_svg_color(g);
        char title[96];
        snprintf(title, sizeof title, "The %d pair%s whose boundaries spread most across the GPUs (figure 9)", nc,
                 nc == 1 ? "" : "s");
        gos_svg_boxes_t bx = {.title = title, .ylabel = "latency [ms]", .height = 340, .n_groups = nc,
                              .n_series = n, .group_labels = gl, .series_labels = sl, .series_colors = sc,
                              .box = b, .v = v, .id = "boxes"};
        gos_svg_boxplot(f, &bx);
    }
    free(b);
    free(v);
    free(gl);
    free(sl);
    free(sc);
    free(gn);
}

void gos_dvfs_fig_fleet(FILE *f, const gos_dvfs_rgpu *gs, int n)
{
    int fr[GOS_DVFS_MAX_FREQS], nf = union_freqs(gs, n, fr);
    fpair *fp = calloc((size_t)nf * nf + 1, sizeof *fp), *cand = calloc((size_t)nf * nf + 1, sizeof *cand);
    if (!fp || !cand) {
        free(fp);
        free(cand);
        return;
    }
    int ncand = 0;
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < nf; j++) {
            if (i == j)
                continue;
            fpair_of(gs, n, fr[i], fr[j], &fp[i * nf + j]);
            if (fp[i * nf + j].n_gpus >= 2)
                cand[ncand++] = fp[i * nf + j];
        }
    fprintf(f, "<h2>Fleet view (paper 000, figures 7-9)</h2>\n<p>Figures 7 and 8: for each pair measured on at "
               "least two GPUs, the largest minus the smallest best-case (minimum) and worst-case (maximum) "
               "latency over the GPUs; beside them, the range each GPU's pairs span.</p>\n<div class=figs>\n");
    if (ncand) {
        range_heatmap(f, fp, fr, nf, 0);
        range_heatmap(f, fp, fr, nf, 1);
    }
    fprintf(f, "</div>\n<div class=figs>\n");
    range_bars(f, gs, n, 0);
    range_bars(f, gs, n, 1);
    fprintf(f, "</div>\n");
    qsort(cand, ncand, sizeof *cand, cmp_spread);
    int nc = ncand < GOS_DVFS_FLEET_BOX_PAIRS ? ncand : GOS_DVFS_FLEET_BOX_PAIRS;
    if (nc == 0) {
        fprintf(f, "<p>No pair was measured on two GPUs: no ranges across the GPUs, no box plots.</p>\n");
    } else {
        fprintf(f, "<p>Figure 9: the %d pair%s with the highest boundary spread, max(range of the minimum, range "
                   "of the maximum) over the GPUs:",
                nc, nc == 1 ? "" : "s");
        for (int c = 0; c < nc; c++)
            fprintf(f, "%s %d&rarr;%d MHz (%.3f ms)", c ? "," : "", cand[c].init, cand[c].target, cand[c].spread);
        fprintf(f, ". One box per GPU of the latencies the outlier filter kept: quartiles as numpy's default "
                   "(linear interpolation), whiskers at the most extreme latency within 1.5 IQR of the box "
                   "(Tukey), rings beyond them.</p>\n");
        boxes(f, gs, n, cand, nc);
    }
    free(fp);
    free(cand);
}
