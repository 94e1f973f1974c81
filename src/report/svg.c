/* SPDX-License-Identifier: Apache-2.0 */
/* svg.c: histogram and line-chart pictures as inline SVG (see svg.h): axes with
 * "nice" ticks, overlaid series with a legend, optional dashed markers. */
#include "report/svg.h"

#include "stats/stats.h"

#include <math.h>
#include <string.h>

#define ML 64 /* margins */
#define MR 16
#define MT 30
#define MB 44

void gos_html_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* One escaped text label at (x, y), anchored "start", "middle" or "end"; a
 * whole coordinate is written as an integer, another with one decimal. */
static void label(FILE *f, double x, double y, const char *anchor, const char *text)
{
    fprintf(f, x == (double)(long)x ? "<text x=\"%.0f\"" : "<text x=\"%.1f\"", x);
    fprintf(f, y == (double)(long)y ? " y=\"%.0f\"" : " y=\"%.1f\"", y);
    fprintf(f, " text-anchor=\"%s\">", anchor);
    gos_html_escape(f, text);
    fprintf(f, "</text>\n");
}

static double nice_step(double span, int want)
{
    double raw = span / want, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* h: the plot's height; the legend (one row per series) goes below it, so that
 * it never covers a curve, a bar or a marker's label. */
typedef struct {
    double x0, x1, y0, y1;
    int w, h, legend_rows;
    int ml; /* left margin, wider than ML where a y tick label needs it (fit_margin); 0: ML */
} frame_t;

#define LEGEND_ROW 16
/* Width of a label in the 11 px sans-serif font, generously (0.62 em per glyph). */
static double text_w(const char *s) { return 6.9 * (s ? (double)strlen(s) : 0); }

#define LM(t) ((t)->ml ? (t)->ml : ML)
static double X(const frame_t *t, double x) { return LM(t) + (x - t->x0) / (t->x1 - t->x0) * (t->w - LM(t) - MR); }
static double Y(const frame_t *t, double y) { return t->h - MB - (y - t->y0) / (t->y1 - t->y0) * (t->h - MT - MB); }

/* The y ticks' labels ("%g", the tick next to 0 written 0), one at a time: v is
 * the tick, buf its label; returns 0 past the last. */
static int y_tick(const frame_t *t, int i, double *v, char *buf, size_t len)
{
    double sy = nice_step(t->y1 - t->y0, 5);
    *v = (ceil(t->y0 / sy) + i) * sy;
    if (!(*v <= t->y1 + 1e-9 * sy))
        return 0;
    snprintf(buf, len, "%g", fabs(*v) < 1e-9 * sy ? 0 : *v);
    return 1;
}

/* Widens the left margin so that the widest y tick label, right-aligned 4 px
 * left of the plot, keeps clear of the rotated y axis label (x 8..20). */
static void fit_margin(frame_t *t)
{
    double v, w = 0;
    char b[32];
    for (int i = 0; i < 64 && y_tick(t, i, &v, b, sizeof b); i++)
        w = fmax(w, text_w(b));
    t->ml = (int)ceil(w) + 26 > ML ? (int)ceil(w) + 26 : ML;
}

/* The y grid lines and tick labels, and the rotated y axis label. */
static void y_ticks(FILE *f, const frame_t *t, const char *ylabel)
{
    double v;
    char b[32];
    for (int i = 0; i < 64 && y_tick(t, i, &v, b, sizeof b); i++)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                LM(t), Y(t, v), t->w - MR, Y(t, v), LM(t) - 4, Y(t, v) + 4, b);
    fprintf(f, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 14 %d)\">",
            (t->h + MT - MB) / 2, (t->h + MT - MB) / 2);
    gos_html_escape(f, ylabel);
    fprintf(f, "</text>\n");
}

static void axes(FILE *f, const gos_svg_frame *fr, const frame_t *t)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", t->w, t->h + LEGEND_ROW * t->legend_rows,
            t->w, t->h + LEGEND_ROW * t->legend_rows);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", t->w,
            t->h + LEGEND_ROW * t->legend_rows);
    fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"bold\">", ML);
    gos_html_escape(f, fr->title);
    fprintf(f, "</text>\n");
    double sx = nice_step(t->x1 - t->x0, 6);
    for (double v = ceil(t->x0 / sx) * sx; v <= t->x1 + 1e-9; v += sx)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                X(t, v), MT, X(t, v), t->h - MB, X(t, v), t->h - MB + 14, v);
    y_ticks(f, t, fr->ylabel);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", LM(t), MT,
            t->w - LM(t) - MR, t->h - MT - MB);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (t->w + LM(t) - MR) / 2, t->h - 8);
    gos_html_escape(f, fr->xlabel);
    fprintf(f, "</text>\n");
}

/* A dashed vertical marker; its label sits on its own row (row 0, 1: two markers
 * never share a line), right of the line, or left of it where it would leave the
 * plot, on a white halo so that a curve under it does not hide it. */
static void marker(FILE *f, const frame_t *t, double x, const char *label, int row)
{
    if (x <= 0 || x < t->x0 || x > t->x1)
        return;
    double lx = X(t, x) + 4, w = text_w(label);
    const char *anchor = "start";
    if (lx + w > t->w - MR - 2)
        lx = X(t, x) - 4, anchor = "end";
    if (*anchor == 'e' && lx - w < LM(t) + 2) /* fits on neither side: as far right as it fits */
        lx = fmax(LM(t) + 2, t->w - MR - 2 - w), anchor = "start";
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c00\" stroke-dasharray=\"5,4\"/>"
               "<text x=\"%.1f\" y=\"%d\" fill=\"#c00\" text-anchor=\"%s\" stroke=\"#fff\" stroke-width=\"3\" "
               "paint-order=\"stroke\">",
            X(t, x), MT, X(t, x), t->h - MB, lx, MT + 12 + 16 * row, anchor);
    gos_html_escape(f, label);
    fprintf(f, "</text>\n");
}

static void legend(FILE *f, const frame_t *t, const gos_svg_series *s, int ns)
{
    for (int i = 0; i < ns; i++) {
        int y = t->h + 2 + LEGEND_ROW * i;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">",
                ML, y, s[i].color, ML + 16, y + 9);
        gos_html_escape(f, s[i].label);
        fprintf(f, "</text>\n");
    }
}

static void bounds(const gos_svg_series *s, int ns, double xpad, frame_t *t)
{
    t->x0 = 1e300, t->x1 = -1e300, t->y0 = 0, t->y1 = -1e300;
    for (int i = 0; i < ns; i++)
        for (int k = 0; k < s[i].n; k++) {
            t->x0 = fmin(t->x0, s[i].x[k]);
            t->x1 = fmax(t->x1, s[i].x[k] + xpad);
            t->y1 = fmax(t->y1, s[i].y[k]);
        }
    if (t->x0 > t->x1)
        t->x0 = 0, t->x1 = 1;
    if (t->x1 == t->x0)
        t->x1 = t->x0 + 1;
    if (t->y1 <= 0)
        t->y1 = 1;
    t->y1 *= 1.08;
}

void gos_svg_histogram(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns, double bin)
{
    frame_t t = {.w = fr->width, .h = fr->height, .legend_rows = ns};
    bounds(s, ns, bin, &t);
    double pad = 0.04 * (t.x1 - t.x0);
    t.x0 -= pad, t.x1 += pad;
    if (fr->marker_x > 0)
        t.x0 = fmin(t.x0, fr->marker_x - pad), t.x1 = fmax(t.x1, fr->marker_x + pad);
    fit_margin(&t);
    axes(f, fr, &t);
    for (int i = 0; i < ns; i++)
        for (int k = 0; k < s[i].n; k++) {
            if (s[i].y[k] <= 0)
                continue;
            double x0 = X(&t, s[i].x[k]), x1 = X(&t, s[i].x[k] + bin);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.75\"/>\n",
                    x0, Y(&t, s[i].y[k]), fmax(x1 - x0, 0.8), Y(&t, 0) - Y(&t, s[i].y[k]), s[i].color);
        }
    marker(f, &t, fr->marker_x, fr->marker_label, 0);
    marker(f, &t, fr->marker2_x, fr->marker2_label, 1);
    legend(f, &t, s, ns);
    fprintf(f, "</svg>\n");
}

void gos_svg_lines(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns)
{
    frame_t t = {.w = fr->width, .h = fr->height, .legend_rows = ns};
    bounds(s, ns, 0, &t);
    t.x0 = 0;
    if (fr->marker2_x > t.x1)
        t.x1 = fr->marker2_x * 1.05;
    fit_margin(&t);
    axes(f, fr, &t);
    for (int i = 0; i < ns; i++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[i].color);
        for (int k = 0; k < s[i].n; k++)
            fprintf(f, "%.1f,%.1f ", X(&t, s[i].x[k]), Y(&t, s[i].y[k]));
        fprintf(f, "\"/>\n");
        for (int k = 0; k < s[i].n; k++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", X(&t, s[i].x[k]),
                    Y(&t, s[i].y[k]), s[i].color);
    }
    marker(f, &t, fr->marker_x, fr->marker_label, 0);
    marker(f, &t, fr->marker2_x, fr->marker2_label, 1);
    legend(f, &t, s, ns);
    fprintf(f, "</svg>\n");
}

void gos_svg_heat_color(double t, char *out, size_t len, int *dark)
{
    static const double c0[3] = {247, 251, 255}, c1[3] = {8, 48, 107};
    t = !(t >= 0) ? 0 : t > 1 ? 1 : t; /* NAN: the light end */
    snprintf(out, len, "#%02x%02x%02x", (int)(c0[0] + t * (c1[0] - c0[0])), (int)(c0[1] + t * (c1[1] - c0[1])),
             (int)(c0[2] + t * (c1[2] - c0[2])));
    *dark = t > 0.5;
}

/* The heat map's colour scale at (sx, y): ten swatches between its end labels a
 * and b, the outline's key (h->mark_label), and the note saying what it spans. */
static void heat_legend(FILE *f, const gos_svg_heat *h, int sx, int y, const char *a, const char *b,
                        const char *note)
{
    for (int i = 0; i < 10; i++) {
        char col[16];
        int dark;
        gos_svg_heat_color(i / 9.0, col, sizeof col, &dark);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", sx + i * 14, y, col);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text><text x=\"%d\" y=\"%d\">%s</text>\n",
            sx - 4, y + 9, a, sx + 144, y + 9, b);
    if (h->mark_label) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"none\" stroke=\"#d62728\" "
                   "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">",
                sx + 144 + (int)text_w(b) + 14, y, sx + 144 + (int)text_w(b) + 32, y + 9);
        gos_html_escape(f, h->mark_label);
        fprintf(f, "</text>\n");
    }
    label(f, sx, y + 25, "start", note);
}

/* The data's range of h's values into *dlo, *dhi (+-1e300 reversed: no value). */
static void heat_range(const gos_svg_heat *h, double *dlo, double *dhi)
{
    *dlo = 1e300, *dhi = -1e300;
    for (int i = 0; i < h->rows * h->cols; i++)
        if (!isnan(h->v[i]))
            *dlo = fmin(*dlo, h->v[i]), *dhi = fmax(*dhi, h->v[i]);
}

void gos_svg_heatmap(FILE *f, const gos_svg_heat *h)
{
    const int cw = 50, ch = 22, top = 60;
    double lw = 0, lo = h->vmin, hi = h->vmax, dlo, dhi;
    for (int r = 0; r < h->rows; r++)
        lw = fmax(lw, text_w(h->row_names[r]));
    int left = (int)lw + 12, widened = 0;
    heat_range(h, &dlo, &dhi);
    if (!(hi > lo)) { /* range of the data */
        lo = dlo, hi = dhi;
        if (!(hi > lo))
            hi = lo + 1;
    } else if (dlo < lo || dhi > hi) { /* a given scale widened to cover every cell */
        lo = fmin(lo, dlo), hi = fmax(hi, dhi), widened = 1;
    }
    char note[96];
    if (widened)
        snprintf(note, sizeof note, "colour scale widened from %g..%g to the data's range", h->vmin, h->vmax);
    else
        snprintf(note, sizeof note, h->vmax > h->vmin ? "colour scale %g..%g" : "colour scale: the data's range",
                 h->vmin, h->vmax);
    char a[32], b[32];
    snprintf(a, sizeof a, h->fmt ? h->fmt : "%.2f", lo);
    snprintf(b, sizeof b, h->fmt ? h->fmt : "%.2f", hi);
    /* the scale starts where its low end's label, right-aligned before it, fits */
    int sx = left > (int)text_w(a) + 8 ? left : (int)text_w(a) + 8;
    int w = left + h->cols * cw + 16, tw = (int)(1.25 * text_w(h->title)) + 10,
        cl = left + (int)text_w(h->col_label) + 10, nw = sx + (int)text_w(note) + 10,
        kw = sx + 144 + (int)text_w(b) + (h->mark_label ? 32 + (int)text_w(h->mark_label) : 0) + 10;
    w = w > tw ? w : tw;
    w = w > cl ? w : cl;
    w = w > nw ? w : nw;
    w = w > kw ? w : kw;
    int ht = top + h->rows * ch + 52;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\" data-scale-lo=\"%.17g\" data-scale-hi=\"%.17g\">\n"
               "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
            w, ht, w, ht, lo, hi, w, ht);
    fprintf(f, "<text x=\"4\" y=\"16\" font-size=\"13\" font-weight=\"bold\">");
    gos_html_escape(f, h->title);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"%d\">", left, top - 22);
    gos_html_escape(f, h->col_label);
    fprintf(f, "</text>\n");
    for (int c = 0; c < h->cols; c++) {
        label(f, left + c * cw + cw / 2, top - 6, "middle", h->col_names[c]);
    }
    for (int r = 0; r < h->rows; r++) {
        int y = top + r * ch;
        label(f, left - 6, y + ch / 2 + 4, "end", h->row_names[r]);
        for (int c = 0; c < h->cols; c++) {
            double v = h->v[r * h->cols + c];
            int x = left + c * cw, dark = 0;
            char col[16] = "#eeeeee", txt[32] = "-", dv[48] = "";
            if (!isnan(v)) {
                snprintf(dv, sizeof dv, " data-v=\"%.17g\"", v);
                gos_svg_heat_color((v - lo) / (hi - lo), col, sizeof col, &dark);
                snprintf(txt, sizeof txt, h->fmt ? h->fmt : "%.2f", v);
            }
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#fff\"%s/>"
                       "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                    x, y, cw, ch, col, dv, x + cw / 2, y + ch / 2 + 4, dark ? "#fff" : "#222", txt);
        }
        if (h->mark_col && h->mark_col[r] >= 0 && h->mark_col[r] < h->cols)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#d62728\" "
                       "stroke-width=\"2.5\"/>\n",
                    left + h->mark_col[r] * cw + 1, y + 1, cw - 2, ch - 2);
    }
    heat_legend(f, h, sx, top + h->rows * ch + 12, a, b, note);
    fprintf(f, "</svg>\n");
}

/* Mirrored Gaussian-kernel density of v[0..n) (Silverman's bandwidth) around
 * x = cx, half width half_w at the densest point, in frame t. */
/* Silverman's rule of thumb: the Gaussian kernel's width for n values. */
static double kernel_width(const double *v, int n)
{
    if (n <= 0)
        return 0;
    double sd = n >= 2 ? gos_sd(v, (size_t)n, 1) : 1;
    return 1.06 * (sd > 0 ? sd : 1) * pow((double)n, -0.2);
}

static void violin(FILE *f, const frame_t *t, const double *v, int n, double cx, double half_w, const char *fill)
{
    if (n <= 0)
        return;
    double h = kernel_width(v, n);
    enum { STEPS = 80 };
    double dens[STEPS + 1], mx = 0;
    for (int s = 0; s <= STEPS; s++) {
        double x = t->y0 + (t->y1 - t->y0) * s / STEPS, acc = 0;
        for (int i = 0; i < n; i++) {
            double z = (x - v[i]) / h;
            acc += exp(-0.5 * z * z);
        }
        dens[s] = acc;
        mx = fmax(mx, acc);
    }
    fprintf(f, "<path fill=\"%s\" stroke=\"#333\" d=\"", fill);
    for (int s = 0; s <= 2 * STEPS + 1; s++) { /* up the left side, down the right */
        int k = s <= STEPS ? s : 2 * STEPS + 1 - s;
        double y = Y(t, t->y0 + (t->y1 - t->y0) * k / STEPS), w = half_w * dens[k] / (mx > 0 ? mx : 1);
        fprintf(f, "%s%.1f %.1f ", s ? "L" : "M", s <= STEPS ? cx - w : cx + w, y);
    }
    fprintf(f, "Z\"/>\n");
    double ym = Y(t, gos_mean(v, (size_t)n));
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-width=\"2\"/>\n",
            cx - half_w / 3, cx + half_w / 3, ym, ym);
}

void gos_svg_violins(FILE *f, const gos_svg_frame *fr, const gos_svg_series *s, int ns)
{
    frame_t t = {.x0 = 0, .x1 = ns > 0 ? ns : 1, .y0 = INFINITY, .y1 = -INFINITY, .w = fr->width, .h = fr->height};
    double reach = 0, lo = INFINITY; /* each density's tails: 3 kernel widths past its values */
    for (int i = 0; i < ns; i++) {
        for (int k = 0; k < s[i].n; k++)
            t.y0 = fmin(t.y0, s[i].y[k]), t.y1 = fmax(t.y1, s[i].y[k]);
        reach = fmax(reach, 3 * kernel_width(s[i].y, s[i].n));
    }
    lo = t.y0;
    if (!(t.y1 > t.y0))
        t.y0 = (isfinite(t.y0) ? t.y0 : 0) - 1, t.y1 = t.y0 + 2;
    double pad = 0.05 * (t.y1 - t.y0);
    t.y0 -= fmax(pad, reach), t.y1 += fmax(pad, reach);
    if (lo >= 0 && t.y0 < 0) /* latencies: no axis below 0 */
        t.y0 = 0;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n", t.w, t.h, t.w, t.h);
    fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"bold\">", ML);
    gos_html_escape(f, fr->title);
    fprintf(f, "</text>\n");
    fit_margin(&t);
    y_ticks(f, &t, fr->ylabel);
    double half_w = 0.4 * (X(&t, 1) - X(&t, 0));
    for (int i = 0; i < ns; i++) {
        double cx = X(&t, i + 0.5);
        violin(f, &t, s[i].y, s[i].n, cx, half_w, s[i].color);
        label(f, cx, t.h - MB + 16, "middle", s[i].label);
    }
    fprintf(f, "</svg>\n");
}

/* ---- scatter, box plots, range bars (the DVFS figures of paper 000) ---- */

/* no green beside the outliers' red (red-green colour-blind readers) */
static const char *const palette[] = {"#1f77b4", "#e69f00", "#9467bd", "#8c564b", "#e377c2",
                                      "#17becf", "#bcbd22", "#7f7f7f", "#56b4e9", "#aec7e8"};
#define OUTLIER_COLOR "#d62728"

const char *gos_svg_color(int i) { return palette[((i % 10) + 10) % 10]; }

/* Legend entries side by side, wrapped into rows of the picture's width. */
typedef struct {
    const char *label, *color;
    int ring; /* a hollow ring (outliers, fliers) instead of a swatch */
} lentry;

static double lentry_w(const lentry *e) { return 16 + text_w(e->label) + 14; }

static int hlegend_rows(const lentry *e, int n, int left, int w)
{
    int rows = n > 0;
    double x = left;
    for (int i = 0; i < n; i++) {
        if (x > left && x + lentry_w(&e[i]) > w - MR)
            rows++, x = left;
        x += lentry_w(&e[i]);
    }
    return rows;
}

static void hlegend(FILE *f, const lentry *e, int n, int left, int w, int y0)
{
    double x = left;
    int y = y0;
    for (int i = 0; i < n; i++) {
        if (x > left && x + lentry_w(&e[i]) > w - MR)
            y += LEGEND_ROW, x = left;
        if (e[i].ring)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"/>",
                    x + 6, y + 5, e[i].color);
        else
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/>", x, y, e[i].color);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x + 16, y + 9);
        gos_html_escape(f, e[i].label);
        fprintf(f, "</text>\n");
        x += lentry_w(&e[i]);
    }
}

/* Opens an <svg> with title, y grid and labels, the plot's outline and the y
 * label; no x axis (the caller's). total_h: the picture's height. */
static void y_axes(FILE *f, const char *title, const char *ylabel, const char *id, const frame_t *t, int total_h)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\"",
            t->w, total_h, t->w, total_h);
    if (id) {
        fprintf(f, " data-figure=\"");
        gos_html_escape(f, id);
        fprintf(f, "\"");
    }
    fprintf(f, ">\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", t->w, total_h);
    fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"bold\">", ML);
    gos_html_escape(f, title);
    fprintf(f, "</text>\n");
    y_ticks(f, t, ylabel);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", LM(t), MT,
            t->w - LM(t) - MR, t->h - MT - MB);
}

/* y range over [lo, hi] padded by 8 % (no axis below 0 for values >= 0) */
static void pad_y(frame_t *t, double lo, double hi)
{
    if (!(hi >= lo))
        lo = 0, hi = 1;
    double pad = hi > lo ? 0.08 * (hi - lo) : fmax(0.05 * fabs(hi), 0.5);
    t->y0 = lo - pad, t->y1 = hi + pad;
    if (lo >= 0 && t->y0 < 0)
        t->y0 = 0;
    fit_margin(t);
}

/* width of a bold 13 px title, with its left margin */
static int title_w(const char *s) { return ML + (int)(1.2 * text_w(s)) + 10; }

void gos_svg_scatter(FILE *f, const gos_svg_scatter_t *s)
{
    frame_t t = {.w = s->width, .h = s->height, .x0 = INFINITY, .x1 = -INFINITY};
    t.w = t.w > title_w(s->title) ? t.w : title_w(s->title);
    double lo = INFINITY, hi = -INFINITY;
    int n_out = 0;
    for (int i = 0; i < s->n; i++) {
        t.x0 = fmin(t.x0, s->x[i]), t.x1 = fmax(t.x1, s->x[i]);
        lo = fmin(lo, s->y[i]), hi = fmax(hi, s->y[i]);
        n_out += s->group[i] < 0;
    }
    if (!(t.x1 >= t.x0))
        t.x0 = 0, t.x1 = 1;
    double xp = t.x1 > t.x0 ? 0.03 * (t.x1 - t.x0) : 1;
    t.x0 -= xp, t.x1 += xp;
    pad_y(&t, lo, hi);
    lentry e[GOS_SVG_MAX_GROUPS + 1];
    int ne = 0;
    for (int g = 0; g < s->n_groups && g < GOS_SVG_MAX_GROUPS; g++)
        e[ne++] = (lentry){s->group_labels[g], gos_svg_color(g), 0};
    if (n_out)
        e[ne++] = (lentry){s->outlier_label ? s->outlier_label : "outlier", OUTLIER_COLOR, 1};
    int rows = hlegend_rows(e, ne, ML, t.w), total = t.h + LEGEND_ROW * rows + 4;
    y_axes(f, s->title, s->ylabel, s->id, &t, total);
    double sx = nice_step(t.x1 - t.x0, 6);
    for (double v = ceil(t.x0 / sx) * sx; v <= t.x1 + 1e-9 * sx; v += sx)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                X(&t, v), MT, X(&t, v), t.h - MB, X(&t, v), t.h - MB + 14, fabs(v) < 1e-9 * sx ? 0 : v);
    label(f, (t.w + LM(&t) - MR) / 2, t.h - 12, "middle", s->xlabel);
    for (int i = 0; i < s->n; i++) {
        int g = s->group[i];
        if (g < 0)
            fprintf(f, "<circle class=\"pt outlier\" cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"none\" stroke=\"%s\" "
                       "stroke-width=\"1.5\" data-x=\"%.9g\" data-y=\"%.9g\"/>\n",
                    X(&t, s->x[i]), Y(&t, s->y[i]), OUTLIER_COLOR, s->x[i], s->y[i]);
        else
            fprintf(f, "<circle class=\"pt\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.6\" fill=\"%s\" fill-opacity=\"0.8\" "
                       "data-x=\"%.9g\" data-y=\"%.9g\"/>\n",
                    X(&t, s->x[i]), Y(&t, s->y[i]), gos_svg_color(g), s->x[i], s->y[i]);
    }
    hlegend(f, e, ne, ML, t.w, t.h + 2);
    fprintf(f, "</svg>\n");
}

void gos_svg_boxplot(FILE *f, const gos_svg_boxes_t *b)
{
    int ns = b->n_series > 0 ? b->n_series : 1;
    double gw = ns * 30 + 24, lo = INFINITY, hi = -INFINITY;
    for (int g = 0; g < b->n_groups; g++)
        gw = fmax(gw, text_w(b->group_labels[g]) + 16);
    for (int i = 0; i < b->n_groups * b->n_series; i++)
        if (b->box[i].n)
            lo = fmin(lo, b->v[i][0]), hi = fmax(hi, b->v[i][b->box[i].n - 1]);
    frame_t t = {.x0 = 0, .x1 = b->n_groups > 0 ? b->n_groups : 1, .h = b->height};
    t.w = ML + (int)ceil(gw * t.x1) + MR;
    t.w = t.w > title_w(b->title) ? t.w : title_w(b->title);
    lentry e[GOS_SVG_MAX_GROUPS];
    int ne = 0;
    for (int s = 0; s < b->n_series && ne < GOS_SVG_MAX_GROUPS; s++, ne++) {
        e[ne] = (lentry){b->series_labels[s], b->series_colors[s], 0};
        t.w = t.w > ML + (int)lentry_w(&e[ne]) + MR ? t.w : ML + (int)lentry_w(&e[ne]) + MR;
    }
    pad_y(&t, lo, hi);
    int rows = hlegend_rows(e, ne, ML, t.w), total = t.h + LEGEND_ROW * rows + 4;
    y_axes(f, b->title, b->ylabel, b->id, &t, total);
    double span = (X(&t, 1) - X(&t, 0)) * 0.8 / ns, hw = fmin(12, 0.35 * span);
    for (int g = 0; g < b->n_groups; g++) {
        if (g)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\" stroke-dasharray=\"3,3\"/>\n",
                    X(&t, g), MT, X(&t, g), t.h - MB);
        label(f, X(&t, g + 0.5), t.h - MB + 16, "middle", b->group_labels[g]);
        for (int s = 0; s < b->n_series; s++) {
            const gos_box *x = &b->box[g * b->n_series + s];
            const double *v = b->v[g * b->n_series + s];
            if (!x->n)
                continue;
            double cx = X(&t, g + 0.1) + span * (s + 0.5);
            const char *col = b->series_colors[s];
            fprintf(f, "<g class=\"box\" data-group=\"%d\" data-series=\"%d\" data-n=\"%zu\" data-q1=\"%.9g\" "
                       "data-median=\"%.9g\" data-q3=\"%.9g\" data-lo=\"%.9g\" data-hi=\"%.9g\">\n",
                    g, s, x->n, x->q1, x->median, x->q3, x->lo, x->hi);
            fprintf(f, "<line class=\"whisker\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>"
                       "<line class=\"whisker\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n",
                    cx, Y(&t, x->lo), cx, Y(&t, x->q1), cx, Y(&t, x->q3), cx, Y(&t, x->hi));
            fprintf(f, "<line class=\"cap\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>"
                       "<line class=\"cap\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n",
                    cx - hw / 2, Y(&t, x->lo), cx + hw / 2, Y(&t, x->lo), cx - hw / 2, Y(&t, x->hi), cx + hw / 2,
                    Y(&t, x->hi));
            fprintf(f, "<rect class=\"iqr\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                       "fill-opacity=\"0.6\" stroke=\"#333\"/>\n",
                    cx - hw, Y(&t, x->q3), 2 * hw, fmax(Y(&t, x->q1) - Y(&t, x->q3), 0), col);
            fprintf(f, "<line class=\"median\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\" "
                       "stroke-width=\"2\"/>\n",
                    cx - hw, Y(&t, x->median), cx + hw, Y(&t, x->median));
            for (size_t k = 0; k < x->n; k++)
                if (k < x->n_low || k >= x->n - x->n_high)
                    fprintf(f, "<circle class=\"flier\" cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"none\" "
                               "stroke=\"%s\" data-y=\"%.9g\"/>\n",
                            cx, Y(&t, v[k]), col, v[k]);
            fprintf(f, "</g>\n");
        }
    }
    hlegend(f, e, ne, ML, t.w, t.h + 2);
    fprintf(f, "</svg>\n");
}

void gos_svg_ranges(FILE *f, const gos_svg_ranges_t *r)
{
    enum { ROW = 26, TOP = 34, BOT = 40 };
    double lw = 0, hi = 0;
    for (int i = 0; i < r->rows; i++) {
        lw = fmax(lw, text_w(r->labels[i]));
        if (isfinite(r->hi[i]))
            hi = fmax(hi, r->hi[i]);
    }
    int left = (int)lw + 14, w = r->width, h = TOP + ROW * r->rows + BOT;
    w = w > left + 240 ? w : left + 240;
    w = w > title_w(r->title) ? w : title_w(r->title);
    double x1 = hi > 0 ? hi : 1, sx = nice_step(x1, 6);
    x1 = ceil(x1 * 1.02 / sx) * sx;
#define RX(v) (left + (v) / x1 * (w - left - MR))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\"",
            w, h, w, h);
    if (r->id) {
        fprintf(f, " data-figure=\"");
        gos_html_escape(f, r->id);
        fprintf(f, "\"");
    }
    fprintf(f, ">\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", w, h);
    fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"bold\">", ML);
    gos_html_escape(f, r->title);
    fprintf(f, "</text>\n");
    int yb = TOP + ROW * r->rows;
    for (double v = 0; v <= x1 + 1e-9 * sx; v += sx)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                RX(v), TOP, RX(v), yb, RX(v), yb + 14, fabs(v) < 1e-9 * sx ? 0 : v);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", left, TOP,
            w - left - MR, ROW * r->rows);
    label(f, (w + left - MR) / 2, h - 6, "middle", r->xlabel);
    for (int i = 0; i < r->rows; i++) {
        int y = TOP + ROW * i;
        label(f, left - 6, y + ROW / 2 + 4, "end", r->labels[i]);
        if (!isfinite(r->lo[i]) || !isfinite(r->hi[i]))
            continue;
        fprintf(f, "<rect class=\"range\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"12\" fill=\"%s\" "
                   "fill-opacity=\"0.45\" stroke=\"%s\" data-lo=\"%.9g\" data-hi=\"%.9g\"/>\n",
                RX(r->lo[i]), y + ROW / 2 - 6, fmax(RX(r->hi[i]) - RX(r->lo[i]), 1.5), r->color, r->color, r->lo[i],
                r->hi[i]);
        if (r->off)
            for (int k = r->off[i]; k < r->off[i + 1]; k++)
                fprintf(f, "<line class=\"tick\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#222\" "
                           "data-v=\"%.9g\"/>\n",
                        RX(r->ticks[k]), y + ROW / 2 - 8, RX(r->ticks[k]), y + ROW / 2 + 8, r->ticks[k]);
    }
#undef RX
    fprintf(f, "</svg>\n");
}
