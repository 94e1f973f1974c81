/* report_html.c: `gpuos dvfs report DIR --html OUT`: one self-contained HTML page
 * (inline SVG, no scripts) from an analysis directory (summary.json and the
 * per-pair CSV files), laid out as paper 000 section VII presents results:
 *   - heatmaps of the best-case (min) and worst-case (max) latency per pair,
 *     initial frequency in rows, target in columns, green (low) to red (high);
 *   - the distribution of latencies for increasing against decreasing switches
 *     (mirrored density "violins", figure 4);
 *   - table II: min/mean/max of the per-pair worst-case and best-case latencies
 *     with the transitions where the extremes occur. */
#include "dvfs/dvfs.h"

#include "common/jsonio.h"
#include "report/svg.h"
#include "stats/stats.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int init, target;
    double min, mean, max;
    size_t n;
    double *lat; /* kept latencies */
    size_t n_lat;
} rpair;

/* green (t = 0) -> yellow -> red (t = 1) */
static void color(double t, char *buf, size_t len)
{
    if (!isfinite(t))
        t = 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    int r = t < 0.5 ? (int)(2 * t * 230) : 230, g = t < 0.5 ? 190 : (int)(190 * (1 - 2 * (t - 0.5)));
    snprintf(buf, len, "rgb(%d,%d,70)", r, g + 20);
}

static int read_latencies(const char *path, rpair *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gos_fail(GOS_EIO, "cannot read %s", path);
    char line[256];
    size_t cap = 64;
    p->lat = malloc(cap * sizeof *p->lat);
    p->n_lat = 0;
    if (!p->lat || !fgets(line, sizeof line, f) || strncmp(line, "measurement,latency_ms,outlier,cluster", 38)) {
        fclose(f);
        return gos_fail(GOS_EINVAL, "%s: not a per-pair latency file (header)", path);
    }
    int lineno = 1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        int k, out, cl;
        double ms;
        if (sscanf(line, "%d,%lf,%d,%d", &k, &ms, &out, &cl) != 4) {
            fclose(f);
            return gos_fail(GOS_EINVAL, "%s:%d: expected measurement,latency_ms,outlier,cluster", path, lineno);
        }
        if (out)
            continue;
        if (p->n_lat == cap) {
            double *nl = realloc(p->lat, (cap *= 2) * sizeof *nl);
            if (!nl) {
                fclose(f);
                return gos_fail(GOS_ENOMEM, "out of memory");
            }
            p->lat = nl;
        }
        p->lat[p->n_lat++] = ms;
    }
    fclose(f);
    return GOS_OK;
}

static void heatmap(FILE *f, const char *title, const rpair *ps, int np, const int *fr, int nf, int worst)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < np; i++) {
        double v = worst ? ps[i].max : ps[i].min;
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    fprintf(f, "<h2>%s</h2>\n<table class=hm><tr><th>init \\ target [MHz]</th>", title);
    for (int j = 0; j < nf; j++)
        fprintf(f, "<th>%d</th>", fr[j]);
    fprintf(f, "</tr>\n");
    for (int i = 0; i < nf; i++) {
        fprintf(f, "<tr><th>%d</th>", fr[i]);
        for (int j = 0; j < nf; j++) {
            const rpair *p = NULL;
            for (int k = 0; k < np; k++)
                if (ps[k].init == fr[i] && ps[k].target == fr[j])
                    p = &ps[k];
            if (!p) {
                fprintf(f, "<td class=na>%s</td>", i == j ? "" : "&ndash;");
                continue;
            }
            double v = worst ? p->max : p->min;
            char c[32];
            color(hi > lo ? (v - lo) / (hi - lo) : 0, c, sizeof c);
            fprintf(f, "<td style=\"background:%s\" title=\"n=%zu\">%.2f</td>", c, p->n, v);
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
    /* the colour scale: green (fastest) to red (slowest) over the map's range */
    char c0[32], c1[32], c2[32];
    color(0, c0, sizeof c0), color(0.5, c1, sizeof c1), color(1, c2, sizeof c2);
    fprintf(f, "<svg class=legend xmlns=\"http://www.w3.org/2000/svg\" width=\"360\" height=\"34\" "
               "font-family=\"sans-serif\" font-size=\"11\"><defs><linearGradient id=\"g%d\">"
               "<stop offset=\"0\" stop-color=\"%s\"/><stop offset=\"0.5\" stop-color=\"%s\"/>"
               "<stop offset=\"1\" stop-color=\"%s\"/></linearGradient></defs>"
               "<rect x=\"60\" y=\"2\" width=\"240\" height=\"14\" fill=\"url(#g%d)\" stroke=\"#888\"/>"
               "<line x1=\"60\" y1=\"16\" x2=\"60\" y2=\"19\" stroke=\"#888\"/><line x1=\"300\" y1=\"16\" x2=\"300\" "
               "y2=\"19\" stroke=\"#888\"/>"
               "<text x=\"56\" y=\"13\" text-anchor=\"end\">%.2f ms</text>"
               "<text x=\"304\" y=\"13\">%.2f ms</text>"
               "<text x=\"180\" y=\"30\" text-anchor=\"middle\">%s latency of the pair (colour scale)</text></svg>\n",
            worst, c0, c1, c2, worst, isfinite(lo) ? lo : 0, isfinite(hi) ? hi : 0, worst ? "worst" : "best");
}

static void distributions(FILE *f, const rpair *ps, int np)
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
    fprintf(f, "<h2>Increasing vs decreasing switches</h2>\n<p>Every kept measurement (outliers "
               "removed); bar: mean. Increasing: %zu measurements over %zu pairs; decreasing: %zu over "
               "%zu pairs.",
            a, wa, b, wb);
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

static void table2(FILE *f, const rpair *ps, int np)
{
    fprintf(f, "<h2>Summary (paper 000, table II layout)</h2>\n<table class=t2>\n");
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
        const rpair *a = &ps[imin], *b = &ps[imax];
        fprintf(f, "<tr><th colspan=2>The %s-case latencies</th></tr>\n", worst ? "worst" : "best");
        fprintf(f, "<tr><td>Min [ms]</td><td>%.3f</td></tr><tr><td>transition [MHz]</td><td>(%d&rarr;%d)</td></tr>\n",
                worst ? a->max : a->min, a->init, a->target);
        fprintf(f, "<tr><td>Mean [ms]</td><td>%.3f</td></tr>\n", sum / np);
        fprintf(f, "<tr><td>Max [ms]</td><td>%.3f</td></tr><tr><td>transition [MHz]</td><td>(%d&rarr;%d)</td></tr>\n",
                worst ? b->max : b->min, b->init, b->target);
    }
    fprintf(f, "</table>\n");
}

static int cmp_desc(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

int gos_dvfs_report(const char *dir, const char *html)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *s;
    int rc = gos_json_load(path, &s), np = 0, nf = 0, fr[GOS_DVFS_MAX_FREQS];
    if (rc)
        return rc;
    json_t *pairs = json_object_get(s, "pairs"), *jf = json_object_get(s, "freqs_mhz");
    if (!json_is_array(pairs) || !json_is_array(jf) ||
        strcmp(json_string_value(json_object_get(s, "schema")) ? json_string_value(json_object_get(s, "schema")) : "",
               "gpuos.dvfs-summary/1")) {
        json_decref(s);
        return gos_fail(GOS_EINVAL, "%s: not a gpuos.dvfs-summary/1 file (run gpuos dvfs analyze)", path);
    }
    for (size_t i = 0; i < json_array_size(jf) && nf < GOS_DVFS_MAX_FREQS; i++)
        fr[nf++] = (int)json_integer_value(json_array_get(jf, i));
    qsort(fr, nf, sizeof *fr, cmp_desc);
    rpair *ps = calloc(json_array_size(pairs) + 1, sizeof *ps);
    if (!ps) {
        json_decref(s);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < json_array_size(pairs) && !rc; i++) {
        json_t *p = json_array_get(pairs, i);
        json_t *file = json_object_get(p, "file");
        if (!json_is_string(file) || !json_is_number(json_object_get(p, "min_ms")))
            continue;
        rpair *r = &ps[np];
        r->init = (int)json_integer_value(json_object_get(p, "init_mhz"));
        r->target = (int)json_integer_value(json_object_get(p, "target_mhz"));
        r->min = json_number_value(json_object_get(p, "min_ms"));
        r->mean = json_number_value(json_object_get(p, "mean_ms"));
        r->max = json_number_value(json_object_get(p, "max_ms"));
        r->n = (size_t)json_integer_value(json_object_get(p, "n"));
        char fp[4400];
        snprintf(fp, sizeof fp, "%s/%s", dir, json_string_value(file));
        rc = read_latencies(fp, r);
        np++;
    }
    FILE *f = NULL;
    if (!rc && np == 0)
        rc = gos_fail(GOS_EINVAL, "%s: no pair has measurements to report", path);
    if (!rc && !(f = fopen(html, "w")))
        rc = gos_fail(GOS_EIO, "cannot write %s", html);
    if (!rc) {
        json_t *dev = json_object_get(s, "device");
        const char *name = json_string_value(json_object_get(dev, "name"));
        fprintf(f, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>gpuos dvfs report</title>\n"
                   "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
                   "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:4px 8px;"
                   "text-align:right}td.na{background:#eee}.t2 td:first-child{text-align:left}</style>"
                   "</head><body>\n<h1>SM frequency switching latency</h1>\n<p>");
        gos_html_escape(f, name ? name : "unknown device");
        if (json_is_true(json_object_get(dev, "simulated")))
            fprintf(f, " (<b>simulated</b>)");
        fprintf(f, ", host ");
        gos_html_escape(f, json_string_value(json_object_get(s, "host")) ? json_string_value(json_object_get(s, "host")) : "?");
        fprintf(f, ", run ");
        gos_html_escape(f, json_string_value(json_object_get(s, "run")) ? json_string_value(json_object_get(s, "run")) : "?");
        fprintf(f, ". Latencies after DBSCAN outlier filtering (paper 000, algorithm 3); %d pairs with "
                   "measurements, %zu excluded in calibration.</p>\n",
                np, json_array_size(json_object_get(s, "excluded_pairs")));
        heatmap(f, "Best-case (minimum) switching latency [ms]", ps, np, fr, nf, 0);
        heatmap(f, "Worst-case (maximum) switching latency [ms]", ps, np, fr, nf, 1);
        distributions(f, ps, np);
        table2(f, ps, np);
        fprintf(f, "</body></html>\n");
        if (fclose(f))
            rc = gos_fail(GOS_EIO, "cannot write %s", html);
    }
    for (int i = 0; i < np; i++)
        free(ps[i].lat);
    free(ps);
    json_decref(s);
    return rc;
}
