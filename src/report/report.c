/* report.c: one self-contained HTML page for a gpuos.chip/1 file (no scripts, no
 * external resources): the floor plan coloured by memory partition, the HBM and
 * L2 latency histograms, the bandwidth-versus-working-set curve, the hash, the
 * verification, and our figures beside paper 001's (sections 6.1, 6.2). Every
 * picture is drawn only from what the chart holds; a missing section says so. */
#include "report/report.h"

#include "common/jsonio.h"
#include "common/status.h"
#include "report/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *part_color[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

static double num(json_t *o, const char *path)
{
    /* "a.b.c" */
    char key[64];
    const char *p = path;
    while (o && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof key)
            return NAN;
        memcpy(key, p, n);
        key[n] = 0;
        o = json_object_get(o, key);
        p = dot ? dot + 1 : p + n;
    }
    return json_is_number(o) ? json_number_value(o) : NAN;
}

static void floor_plan(FILE *f, const gos_chip *c)
{
    int part_of[GOS_MAX_SMS];
    for (int s = 0; s < GOS_MAX_SMS; s++)
        part_of[s] = -1;
    for (int p = 0; p < c->n_parts; p++)
        for (int i = 0; i < c->parts[p].n_sms; i++)
            part_of[c->parts[p].sms[i]] = p;
    const int cell = 34, gap = 4, left = 90;
    int rows = c->n_gpcs ? c->n_gpcs : (c->device.sm_count + 19) / 20, cols = 20;
    for (int g = 0; g < c->n_gpcs; g++)
        cols = c->gpcs[g].n_sms > cols ? c->gpcs[g].n_sms : cols;
    int w = left + cols * (cell + gap) + 10, h = 30 + rows * (cell + gap) + 30;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
            w, h, w, h, w, h);
    fprintf(f, "<text x=\"4\" y=\"18\" font-size=\"13\" font-weight=\"bold\">Floor plan: SMs by %s, coloured by memory partition</text>\n",
            c->n_gpcs ? "GPC" : "id");
    for (int r = 0; r < rows; r++) {
        int y = 30 + r * (cell + gap);
        int n = c->n_gpcs ? c->gpcs[r].n_sms : (c->device.sm_count - r * 20 < 20 ? c->device.sm_count - r * 20 : 20);
        fprintf(f, "<text x=\"4\" y=\"%d\">%s %d (%d)</text>\n", y + cell / 2 + 4, c->n_gpcs ? "GPC" : "SMs",
                c->n_gpcs ? r : r * 20, n);
        for (int i = 0; i < n; i++) {
            int s = c->n_gpcs ? c->gpcs[r].sms[i] : r * 20 + i, fl = 0;
            if (c->n_gpcs) {
                fl = 1;
                for (int k = 0; k < c->gpcs[r].n_cluster; k++)
                    fl &= c->gpcs[r].cluster_sms[k] != s;
            }
            int x = left + i * (cell + gap);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\" fill=\"%s\" stroke=\"#222\"%s>"
                       "<title>SM %d, partition %d%s</title></rect>"
                       "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#fff\">%d</text>\n",
                    x, y, cell, cell, part_of[s] >= 0 ? part_color[part_of[s]] : "#999",
                    fl ? " stroke-dasharray=\"4,3\" stroke-width=\"2.5\"" : "", s, part_of[s],
                    fl ? ", free-floating" : "", x + cell / 2, y + cell / 2 + 4, s);
        }
    }
    int y = h - 12, x = 4;
    for (int p = 0; p < c->n_parts; p++, x += 170)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">"
                   "partition %d: %d SMs</text>\n",
                x, y - 9, part_color[p], x + 16, y, p, c->parts[p].n_sms);
    if (c->n_gpcs)
        fprintf(f, "<text x=\"%d\" y=\"%d\">dashed outline: free-floating SM</text>\n", x, y);
    fprintf(f, "</svg>\n");
}

/* Series from a gos_hist_json object; x/y arrays owned by the caller. */
static int hist_series(json_t *h, double **x, double **y, double *bin)
{
    json_t *counts = json_object_get(h, "counts");
    int n = (int)json_array_size(counts);
    if (!n)
        return 0;
    *bin = num(h, "bin_cycles");
    double start = num(h, "start");
    *x = malloc(n * sizeof **x);
    *y = malloc(n * sizeof **y);
    if (!*x || !*y || isnan(*bin) || isnan(start))
        return 0;
    for (int i = 0; i < n; i++) {
        (*x)[i] = start + i * *bin;
        (*y)[i] = (double)json_integer_value(json_array_get(counts, i));
    }
    return n;
}

static void hbm_histogram(FILE *f, json_t *numa)
{
    double *x = NULL, *y = NULL, bin = 1;
    int n = hist_series(json_object_get(numa, "hbm_histogram"), &x, &y, &bin);
    if (!n) {
        fprintf(f, "<p>No HBM latency histogram in this chart (numa section not probed).</p>\n");
    } else {
        char lab[64];
        snprintf(lab, sizeof lab, "threshold %.0f", num(numa, "threshold_cycles"));
        gos_svg_series s = {"HBM, reference SM", "#1f77b4", x, y, n};
        gos_svg_frame fr = {"HBM access latency from one SM (C.1)", "cycles", "samples", 820, 300,
                            num(numa, "threshold_cycles"), lab, 0, NULL};
        gos_svg_histogram(f, &fr, &s, 1, bin);
    }
    free(x);
    free(y);
}

static void l2_histograms(FILE *f, json_t *mem)
{
    json_t *l2 = json_object_get(mem, "l2_latency_cycles");
    double *x[2] = {0}, *y[2] = {0}, bin = 1, bin2 = 1;
    int n0 = hist_series(json_object_get(l2, "local_histogram"), &x[0], &y[0], &bin);
    int n1 = hist_series(json_object_get(l2, "remote_histogram"), &x[1], &y[1], &bin2);
    if (!n0 || !n1) {
        fprintf(f, "<p>No L2 latency histograms in this chart (memory section not probed).</p>\n");
    } else {
        gos_svg_series s[2] = {{"local L2 hit", "#1f77b4", x[0], y[0], n0},
                               {"remote L2 hit", "#ff7f0e", x[1], y[1], n1}};
        gos_svg_frame fr = {"L2 hit latency, local and remote (C.2)", "cycles", "samples", 820, 300, 0, NULL, 0, NULL};
        gos_svg_histogram(f, &fr, s, 2, bin);
    }
    for (int i = 0; i < 2; i++) {
        free(x[i]);
        free(y[i]);
    }
}

/* Curve "l2_curve" + sfx of the memory object as MB / GB/s arrays (owned). */
static int curve_series(json_t *mem, const char *sfx, double **x, double **y)
{
    char key[32];
    snprintf(key, sizeof key, "l2_curve%s", sfx);
    json_t *cv = json_object_get(mem, key);
    json_t *ws = json_object_get(cv, "working_set_bytes"), *gb = json_object_get(cv, "gbps");
    int n = (int)json_array_size(ws);
    if (!n || (int)json_array_size(gb) != n)
        return 0;
    *x = malloc(n * sizeof **x);
    *y = malloc(n * sizeof **y);
    if (!*x || !*y)
        return 0;
    for (int i = 0; i < n; i++) {
        (*x)[i] = json_number_value(json_array_get(ws, i)) / (1 << 20);
        (*y)[i] = json_number_value(json_array_get(gb, i));
    }
    return n;
}

static void l2_curve(FILE *f, json_t *mem, double l2_bytes)
{
    double *x[2] = {0}, *y[2] = {0};
    int n0 = curve_series(mem, "", &x[0], &y[0]), n1 = curve_series(mem, "_shared", &x[1], &y[1]);
    if (!n0 && !n1) {
        fprintf(f, "<p>No bandwidth curve in this chart.</p>\n");
        return;
    }
    char lab[2][96], k[64], p[64];
    double e0 = num(mem, "l2_effective_bytes"), e1 = num(mem, "l2_effective_bytes_shared");
    snprintf(lab[0], sizeof lab[0], "each page one SM (eff. %.1f MB)", e0 / (1 << 20));
    snprintf(lab[1], sizeof lab[1], "every SM all pages (eff. %.1f MB)", e1 / (1 << 20));
    gos_svg_series s[2];
    int ns = 0;
    if (n0)
        s[ns++] = (gos_svg_series){lab[0], "#2ca02c", x[0], y[0], n0};
    if (n1)
        s[ns++] = (gos_svg_series){lab[1], "#9467bd", x[1], y[1], n1};
    double knee = !isnan(e1) ? e1 : e0;
    snprintf(k, sizeof k, "effective L2 %.1f MB", knee / (1 << 20));
    snprintf(p, sizeof p, "physical L2 %.0f MB", l2_bytes / (1 << 20));
    gos_svg_frame fr = {"Read bandwidth against working-set size (6.2.1)", "working set (MB)", "GB/s", 820, 320,
                        isnan(knee) ? 0 : knee / (1 << 20), k, l2_bytes / (1 << 20), p};
    gos_svg_lines(f, &fr, s, ns);
    for (int i = 0; i < 2; i++) {
        free(x[i]);
        free(y[i]);
    }
}

/* One table row, HTML or Markdown. */
static void cells(FILE *f, int md, const char *a, const char *b, const char *c, const char *d, const char *e)
{
    const char *v[5] = {a, b, c, d, e};
    fputs(md ? "|" : "<tr>", f);
    for (int i = 0; i < 5; i++) {
        fputs(md ? " " : "<td>", f);
        if (md)
            fputs(v[i], f);
        else
            gos_html_escape(f, v[i]);
        fputs(md ? " |" : "</td>", f);
    }
    fputs(md ? "\n" : "</tr>\n", f);
}

static void row(FILE *f, int md, const char *what, double ours, const char *unit, double paper,
                const char *paper_txt, const char *note)
{
    char o[64] = "-", d[32] = "";
    if (!isnan(ours))
        snprintf(o, sizeof o, "%.4g %s", ours, unit);
    if (!isnan(ours) && paper > 0)
        snprintf(d, sizeof d, "%+.1f %%", 100 * (ours / paper - 1));
    cells(f, md, what, o, paper_txt, d, note);
}

static void paper_table(FILE *f, int md, const gos_chip *c, json_t *root)
{
    json_t *numa = json_object_get(root, "numa"), *mem = json_object_get(root, "memory");
    if (md)
        fprintf(f, "| figure | this chip | paper 001 (H200) | difference | note |\n|---|---|---|---|---|\n");
    else
        fprintf(f, "<table><tr><th>figure</th><th>this chip</th><th>paper 001 (H200)</th><th>difference</th><th>note</th></tr>\n");
    row(f, md, "HBM latency, local", c->has_latency ? c->lat_hbm_local : NAN, "cycles", 490,
        "~490 cycles (Fig. 4)", "median of the near tier");
    row(f, md, "HBM latency, remote", c->has_latency ? c->lat_hbm_remote : NAN, "cycles", 655,
        "~655 cycles (Fig. 4)", "median of the far tier");
    row(f, md, "L2 hit latency, local", c->has_latency ? c->lat_l2_local : NAN, "cycles", 309,
        "~309 cycles (Fig. 5)", "median");
    row(f, md, "L2 hit latency, remote", c->has_latency ? c->lat_l2_remote : NAN, "cycles", 466,
        "~466 cycles (Fig. 5)", "median");
    double fs = num(mem, "l2_effective_fraction_shared"), fp = num(mem, "l2_effective_fraction");
    row(f, md, "effective L2, every SM reads every page", isnan(fs) ? NAN : 100 * fs, "%", 65.8,
        "65.8 % of 60 MB (Fig. 7)", "the paper's setting; onset of the bandwidth cliff");
    row(f, md, "effective L2, each page read by one SM", isnan(fp) ? NAN : 100 * fp, "%", 0,
        "(not measured)", "no line is read from both partitions");
    double bl = num(mem, "hbm_bandwidth_gbps.local"), br = num(mem, "hbm_bandwidth_gbps.remote");
    row(f, md, "HBM read bandwidth, local pages", bl, "GB/s", 0, "above remote (Fig. 8)",
        "SMs of one partition on pages of their own");
    char gap[96] = "";
    if (!isnan(bl) && !isnan(br))
        snprintf(gap, sizeof gap, "remote = %.0f %% of local", 100 * br / bl);
    row(f, md, "HBM read bandwidth, remote pages", br, "GB/s", 0, "limited by the LTC fabric (Takeaway 8)", gap);
    row(f, md, "HBM read bandwidth, every SM, every page", num(mem, "hbm_bandwidth_gbps.all_sms_all_pages"),
        "GB/s", 0, "", "");
    row(f, md, "reload after a remote invalidation", num(mem, "replication.reload_cycles"), "cycles", 310,
        "~310 cycles: replicated (6.2.2)",
        !mem ? "" : json_is_true(json_object_get(json_object_get(mem, "replication"), "replicated"))
                        ? "local-hit time: replicated" : "not replicated");
    row(f, md, "interleave granularity", c->hash_granularity ? (double)c->hash_granularity : NAN, "B", 4096,
        "4 KB (bit 12)", "lowest in-page hash bit");
    char bits[128] = "", parts[64] = "-";
    for (int i = 0; i < c->n_in_page_bits; i++)
        snprintf(bits + strlen(bits), sizeof bits - strlen(bits), "%s%d", i ? " " : "", c->in_page_bits[i]);
    cells(f, md, "in-page hash bits", c->n_in_page_bits ? bits : "-", "16 bits in all, lowest 12", "",
          "bits above 20 are physical: one parity per 2 MB page");
    if (c->n_parts == 2)
        snprintf(parts, sizeof parts, "%d / %d", c->parts[0].n_sms, c->parts[1].n_sms);
    cells(f, md, "SMs per partition", parts, "66 / 66 on their chip; up to 12 apart", "", "");
    row(f, md, "NUMA discovery time", num(numa, "time_s.total"), "s", 10, "~10 s", "histogram, hash, affinity, L2");
    double ta = num(root, "probe.seconds");
    if (json_object_get(root, "topology") && json_object_get(root, "memory"))
        row(f, md, "whole chart (probe all)", ta, "s", 60, "under 1 min per GPU (topology)",
            "topology + NUMA + memory, module loads included");
    json_t *v = json_object_get(numa, "verification");
    if (v) {
        char txt[160], note[160];
        snprintf(txt, sizeof txt, "%.1f GB in %.1f s: %.3f %% agree", num(v, "bytes") / 1e9,
                 num(v, "time_s.total"), 100 * num(v, "agreement"));
        snprintf(note, sizeof note, "%.0f disagreeing pages probed again: %.4f %% agree after",
                 num(v, "reprobed"), 100 * num(v, "agreement_after_reprobe"));
        cells(f, md, "verification of every 4 KB page", txt, "80 GB in ~15 min", "",
              isnan(num(v, "reprobed")) ? "" : note);
    }
    json_t *rp = json_object_get(numa, "repeats");
    if (rp) {
        char txt[64];
        snprintf(txt, sizeof txt, "%d runs, %s", (int)num(rp, "runs"),
                 json_is_true(json_object_get(rp, "identical")) ? "identical" : "DIFFERENT");
        cells(f, md, "repeated discovery (partitions, hash)", txt, "", "", "");
    }
    if (!md)
        fprintf(f, "</table>\n");
}

/* Writes the page that write() prints to a memory stream, then atomically to out_path. */
static int save_page(const gos_chip *c, const char *out_path, void (*write)(FILE *, const gos_chip *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return gos_fail(GOS_ENOMEM, "out of memory");
    write(f, c);
    fclose(f);
    int rc = gos_file_save_atomic(out_path, buf, len);
    free(buf);
    return rc;
}

static void write_markdown(FILE *f, const gos_chip *c) { paper_table(f, 1, c, c->json); }

int gos_report_markdown(const gos_chip *c, const char *out_path) { return save_page(c, out_path, write_markdown); }

static void write_html(FILE *f, const gos_chip *c)
{
    json_t *root = c->json, *numa = json_object_get(root, "numa"), *mem = json_object_get(root, "memory");
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpuos chart: ");
    gos_html_escape(f, c->device.name);
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;max-width:900px;margin:20px auto;color:#222}"
               "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #bbb;padding:3px 7px;text-align:left}"
               "th{background:#eee}svg{display:block;margin:10px 0}.sim{color:#a00;font-weight:bold}</style></head><body>\n");
    fprintf(f, "<h1>");
    gos_html_escape(f, c->device.name);
    fprintf(f, "</h1>\n<p>%s", c->device.simulated ? "<span class=\"sim\">SIMULATED device</span> &middot; " : "");
    gos_html_escape(f, c->device.uuid);
    fprintf(f, " &middot; %d SMs &middot; L2 %.0f MB &middot; %.1f GB HBM</p>\n", c->device.sm_count,
            c->device.l2_bytes / 1048576.0, c->device.mem_bytes / 1e9);
    json_t *prov = json_object_get(root, "probe");
    if (!prov)
        prov = json_object_get(root, "provenance");
    if (prov) {
        fprintf(f, "<p style=\"font-size:12px\">");
        const char *k;
        json_t *v;
        json_object_foreach(prov, k, v)
        {
            gos_html_escape(f, k);
            fprintf(f, ": ");
            if (json_is_string(v))
                gos_html_escape(f, json_string_value(v));
            else if (json_is_number(v))
                fprintf(f, "%g", json_number_value(v));
            fprintf(f, " &middot; ");
        }
        fprintf(f, "</p>\n");
    }
    fprintf(f, "<h2>Compute and memory partitions</h2>\n");
    floor_plan(f, c);
    fprintf(f, "<h2>Our figures beside the paper's</h2>\n");
    paper_table(f, 0, c, root);
    fprintf(f, "<h2>Latency tiers</h2>\n");
    hbm_histogram(f, numa);
    l2_histograms(f, mem);
    fprintf(f, "<h2>Bandwidth</h2>\n");
    l2_curve(f, mem, (double)c->device.l2_bytes);
    fprintf(f, "</body></html>\n");
}

int gos_report_html(const gos_chip *c, const char *out_path) { return save_page(c, out_path, write_html); }

int gos_report_merge(gos_chip *c, const gos_chip *more, const char *what)
{
    if (strcmp(c->device.uuid, more->device.uuid))
        return gos_fail(GOS_EINVAL, "%s: another GPU (%s, the chart is of %s)", what, more->device.uuid,
                        c->device.uuid);
    json_t *from = json_object_get(more->json, "numa");
    if (!c->json)
        c->json = json_object();
    json_t *to = gos_json_child(c->json, "numa");
    static const char *keys[] = {"verification", "repeats"};
    for (int i = 0; i < 2; i++)
        if (!json_object_get(to, keys[i]) && json_object_get(from, keys[i]))
            json_object_set_new(to, keys[i], json_deep_copy(json_object_get(from, keys[i])));
    return GOS_OK;
}
