/* SPDX-License-Identifier: Apache-2.0 */
/* svg.h: the few inline-SVG pictures of the report, written to a stream. No
 * scripts, no external resources: the page must render the same offline. */
#ifndef GOS_SVG_H
#define GOS_SVG_H

#include "stats/stats.h"

#include <stdio.h>

#define GOS_SVG_MAX_SERIES 4
#define GOS_SVG_MAX_GROUPS 64 /* legend entries of a scatter or box plot */

typedef struct {
    const char *label;
    const char *color;
    const double *x, *y; /* line charts: points; histograms: x = bin start */
    int n;
} gos_svg_series;

typedef struct {
    const char *title, *xlabel, *ylabel;
    int width, height;
    double marker_x;          /* vertical dashed line (threshold, knee); <= 0: none */
    const char *marker_label;
    double marker2_x;         /* a second one (e.g. the physical L2); <= 0: none */
    const char *marker2_label;
} gos_svg_frame;

/* Histograms as bars (series of equal bin width `bin`), overlaid, with legend. */
void gos_svg_histogram(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns, double bin);
/* Line chart with point markers. */
void gos_svg_lines(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns);
/* A heat map: rows x cols values (NAN: no value, drawn grey with "-"), a
 * light-to-dark blue scale over [vmin, vmax] (vmin >= vmax: the data's range;
 * widened to cover any value outside it, as a note under the scale says; the
 * <svg> carries data-scale-lo/-hi, each cell's <rect> its data-v),
 * each value printed in its cell with fmt ("%.2f" when NULL), an optional red
 * outline on cell (r, mark_col[r]) explained by mark_label. */
typedef struct {
    const char *title, *col_label;
    int rows, cols;
    const double *v;
    const char *const *row_names, *const *col_names;
    const int *mark_col;
    const char *mark_label;
    double vmin, vmax;
    const char *fmt;
} gos_svg_heat;
void gos_svg_heatmap(FILE *f, const gos_svg_heat *h);
/* The heat maps' sequential scale, light to dark blue (readable without telling
 * red from green), t in [0, 1] clamped, as "#rrggbb"; *dark: white text on it. */
void gos_svg_heat_color(double t, char *out, size_t len, int *dark);

/* Distributions side by side, one mirrored Gaussian-kernel density ("violin")
 * per series of the values s[i].y[0..n) (x unused), each with a bar at its mean
 * and its label below; the y axis spans all values (fr->ylabel). */
void gos_svg_violins(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns);
/* A scatter of points (x[i], y[i]) coloured by group[i] (0..n_groups-1 from
 * the palette, -1 an "outlier" drawn as a hollow red ring), the y axis padded
 * around the values, a legend row (group_labels, outlier_label) under the
 * plot. Every point is a <circle class="pt"> with data-x and data-y holding
 * its values, so that a test can match the picture with its data. */
typedef struct {
    const char *title, *xlabel, *ylabel;
    int width, height;
    const double *x, *y;
    const int *group;
    int n, n_groups;
    const char *const *group_labels; /* n_groups entries */
    const char *outlier_label;       /* NULL: "outlier" */
    const char *id;                  /* data-figure attribute of the <svg>, or NULL */
} gos_svg_scatter_t;
void gos_svg_scatter(FILE *f, const gos_svg_scatter_t *s);

/* Box plots in groups (e.g. one group per frequency pair, one box per GPU of
 * it): box[g * n_series + s] summarises v[g * n_series + s][0..n) (sorted
 * ascending; n == 0: no box). The statistics are the caller's (gos_boxplot_sorted);
 * values beyond the whiskers are drawn as fliers. Each box is a <g class="box">
 * with data-group, data-series, data-n, data-q1, data-median, data-q3, data-lo,
 * data-hi; series colours and labels form the legend under the plot. */
typedef struct {
    const char *title, *ylabel;
    int height;
    int n_groups, n_series;
    const char *const *group_labels, *const *series_labels, *const *series_colors;
    const gos_box *box;           /* n_groups x n_series */
    const double *const *v;       /* the sorted values behind each box */
    const char *id;
} gos_svg_boxes_t;
void gos_svg_boxplot(FILE *f, const gos_svg_boxes_t *b);

/* Horizontal range bars, one row per label: a bar from lo[r] to hi[r] (<rect
 * class="range" data-lo data-hi>) with a tick per value ticks[off[r]..off[r+1])
 * (<line class="tick">), a shared x axis (xlabel) from 0. */
typedef struct {
    const char *title, *xlabel, *color;
    int width, rows;
    const char *const *labels;
    const double *lo, *hi;
    const double *ticks;
    const int *off; /* rows + 1 offsets into ticks, or NULL */
    const char *id;
} gos_svg_ranges_t;
void gos_svg_ranges(FILE *f, const gos_svg_ranges_t *r);

/* The palette of series and groups (10 colours, cycled). */
const char *gos_svg_color(int i);

/* Writes s with &, <, >, " escaped. */
void gos_html_escape(FILE *f, const char *s);

#endif
