/* SPDX-License-Identifier: Apache-2.0 */
/* dvfs_report.h: what the pages of `gpuos dvfs report DIR... --html OUT` are made of
 * (internal to src/dvfs): one GPU's switching latencies as loaded from a run or
 * analysis directory (report_input.c), and the figures drawn from them:
 *   report_html.c       the page: per GPU heatmaps, distributions, table II;
 *   figures_scatter.c   every measured switch of each pair (paper 000, figs 5, 6);
 *   figures_fleet.c     several GPUs (figs 7-9): ranges of the best- and
 *                       worst-case latencies, box plots of the pairs that vary most. */
#ifndef GOS_DVFS_REPORT_H
#define GOS_DVFS_REPORT_H

#include "dvfs/dvfs.h"

#include <stddef.h>
#include <stdio.h>

/* One measured switch: a row of the analysis's per-pair CSV file. */
typedef struct {
    int measurement;
    double ms;
    int cluster; /* -1: outlier */
} gos_dvfs_rpoint;

typedef struct {
    int init, target;
    double min, mean, max; /* of the kept latencies (summary.json) */
    size_t n;              /* kept */
    int clusters;
    int has_silhouette;
    double silhouette;
    gos_dvfs_rpoint *pts;  /* every viable measurement, as in the file */
    size_t n_pts;
    double *lat;           /* the kept latencies, sorted ascending */
    size_t n_lat;
} gos_dvfs_rpair;

typedef struct {
    char dir[1024];        /* as given on the command line */
    char uuid[128], name[128], host[128], run[1024];
    int simulated;
    int from_run;          /* analysed from a run directory on the fly */
    int nf, fr[GOS_DVFS_MAX_FREQS]; /* descending */
    int np;
    gos_dvfs_rpair *ps;
    size_t n_excluded;
} gos_dvfs_rgpu;

/* Loads DIR: an analysis directory (summary.json, from gpuos dvfs analyze) or a
 * run directory (run.json: analysed first, into a temporary directory that is
 * removed again). Errors are one line naming DIR or the file. */
int gos_dvfs_rgpu_load(const char *dir, gos_dvfs_rgpu *g);
void gos_dvfs_rgpu_free(gos_dvfs_rgpu *g);
/* The pair init -> target of g, or NULL. */
const gos_dvfs_rpair *gos_dvfs_rgpu_pair(const gos_dvfs_rgpu *g, int init, int target);

/* Section "every measured switch": one scatter per pair; h: heading level. */
void gos_dvfs_fig_scatter(FILE *f, const gos_dvfs_rgpu *g, int h);

/* The fleet view of gs[0..n) (n >= 2): range heat maps and per-GPU range bars
 * of the best- and worst-case latencies, box plots of the (up to) 3 pairs
 * whose boundaries spread most across the GPUs. */
#define GOS_DVFS_FLEET_BOX_PAIRS 3
void gos_dvfs_fig_fleet(FILE *f, const gos_dvfs_rgpu *gs, int n);

#endif
