/* svg.h: the few inline-SVG pictures of the report, written to a stream. No
 * scripts, no external resources: the page must render the same offline. */
#ifndef GOS_SVG_H
#define GOS_SVG_H

#include <stdio.h>

#define GOS_SVG_MAX_SERIES 4

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
 * light-to-dark blue scale over [vmin, vmax] (vmin >= vmax: the data's range),
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

/* Distributions side by side, one mirrored Gaussian-kernel density ("violin")
 * per series of the values s[i].y[0..n) (x unused), each with a bar at its mean
 * and its label below; the y axis spans all values (fr->ylabel). */
void gos_svg_violins(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns);
/* Writes s with &, <, >, " escaped. */
void gos_html_escape(FILE *f, const char *s);

#endif
