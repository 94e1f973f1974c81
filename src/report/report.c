/* SPDX-License-Identifier: Apache-2.0 */
/* report.c: one self-contained HTML page for a gpuos.chip/1 file (no scripts, no
 * external resources): the floor plan coloured by memory partition, the HBM and
 * L2 latency histograms, the bandwidth-versus-working-set curve, the hash, the
 * verification, and our figures beside paper 001's (sections 6.1, 6.2). Every
 * picture is drawn only from what the chart holds; a missing section says so. */
#include "report/report.h"

#include "common/jsonio.h"
#include "common/status.h"
#include "report/svg.h"
#include "stats/stats.h"
#include "topology/labels.h"
#include "topology/topology.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* colour-blind safe: no red beside a green (Okabe and Ito's blues, orange, purple) */
static const char *part_color[] = {"#1f77b4", "#ff7f0e", "#56b4e9", "#cc79a7",
                                   "#9467bd", "#8c564b", "#e6c229", "#7f7f7f"};

/* Partition p's colour: the table for up to 8 partitions (H200 charts keep
 * theirs), else hues spread evenly (returns a static buffer of 8 slots). */
static const char *part_colour(int p, int n)
{
    static char buf[8][8];
    if (n <= 8)
        return part_color[p & 7];
    double h = 6.0 * p / n, x = 1 - fabs(fmod(h, 2) - 1), rgb[3] = {0};
    int i = (int)h % 6;
    static const int at[6][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}};
    rgb[at[i][0]] = 1, rgb[at[i][1]] = x, rgb[at[i][2]] = 0;
    char *b = buf[p & 7];
    snprintf(b, 8, "#%02x%02x%02x", (int)(40 + 150 * rgb[0]), (int)(40 + 150 * rgb[1]), (int)(40 + 150 * rgb[2]));
    return b;
}

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
    int w = left + cols * (cell + gap) + 10;
    /* legend items of 170 px, wrapped to the picture's width */
    int per_row = (w - 4) / 170 > 0 ? (w - 4) / 170 : 1, items = c->n_parts + (c->n_gpcs ? 1 : 0);
    int legend_rows = items ? (items + per_row - 1) / per_row : 0;
    int h = 30 + rows * (cell + gap) + 8 + 16 * legend_rows;
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
                    x, y, cell, cell, part_of[s] >= 0 ? part_colour(part_of[s], c->n_parts) : "#999",
                    fl ? " stroke-dasharray=\"4,3\" stroke-width=\"2.5\"" : "", s, part_of[s],
                    fl ? ", free-floating" : "", x + cell / 2, y + cell / 2 + 4, s);
        }
    }
    int y0 = 30 + rows * (cell + gap) + 18;
    for (int p = 0; p <= c->n_parts; p++) {
        int x = 4 + (p % per_row) * 170, y = y0 + 16 * (p / per_row);
        if (p < c->n_parts)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">"
                       "partition %d: %d SMs</text>\n",
                    x, y - 9, part_colour(p, c->n_parts), x + 16, y, p, c->parts[p].n_sms);
        else if (c->n_gpcs)
            fprintf(f, "<text x=\"%d\" y=\"%d\">dashed outline: free-floating SM</text>\n", x, y);
    }
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
        /* the headline: the near and far tiers' medians beside the paper's */
        json_t *tiers = json_object_get(numa, "hbm_tiers");
        double near = num(tiers, "near_median"), far = num(tiers, "far_median");
        char lab[96], l1[96], l2[96];
        snprintf(lab, sizeof lab, "HBM, reference SM (tiers split at %.0f cycles)", num(numa, "threshold_cycles"));
        snprintf(l1, sizeof l1, "local median %.0f (paper ~490, Fig. 4)", near);
        snprintf(l2, sizeof l2, "remote median %.0f (paper ~655, Fig. 4)", far);
        gos_svg_series s = {lab, "#1f77b4", x, y, n};
        gos_svg_frame fr = {"HBM access latency from one SM (paper 001 C.1, Fig. 4)", "cycles", "samples", 820, 300,
                            isnan(near) ? 0 : near, l1, isnan(far) ? 0 : far, l2};
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
        double lo = num(l2, "local"), re = num(l2, "remote");
        char l1[96], l2t[96];
        snprintf(l1, sizeof l1, "local median %.0f (paper ~309, Fig. 5)", lo);
        snprintf(l2t, sizeof l2t, "remote median %.0f (paper ~466, Fig. 5)", re);
        gos_svg_frame fr = {"L2 hit latency, local and remote (paper 001 C.2, Fig. 5)", "cycles", "samples", 820, 300,
                            isnan(lo) ? 0 : lo, l1, isnan(re) ? 0 : re, l2t};
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
    double *x[3] = {0}, *y[3] = {0};
    int n0 = curve_series(mem, "", &x[0], &y[0]), n1 = curve_series(mem, "_shared", &x[1], &y[1]),
        n2 = curve_series(mem, "_one_partition", &x[2], &y[2]);
    if (!n0 && !n1 && !n2) {
        fprintf(f, "<p>No bandwidth curve in this chart.</p>\n");
        return;
    }
    char lab[3][128], k[160], p[64];
    double e0 = num(mem, "l2_effective_bytes"), e1 = num(mem, "l2_effective_bytes_shared"),
           e2 = num(mem, "l2_effective_bytes_one_partition");
    /* MiB throughout (the L2 of a datasheet's "60 MB" is 60 MiB); GB/s decimal */
    snprintf(lab[0], sizeof lab[0], "each page read by one SM (knee %.1f MiB)", e0 / (1 << 20));
    snprintf(lab[1], sizeof lab[1], "every SM reads every page (knee %.1f MiB)", e1 / (1 << 20));
    snprintf(lab[2], sizeof lab[2], "one partition's SMs read every page (knee %.1f MiB)", e2 / (1 << 20));
    gos_svg_series s[3];
    int ns = 0;
    if (n0)
        s[ns++] = (gos_svg_series){lab[0], "#0072b2", x[0], y[0], n0};
    if (n1)
        s[ns++] = (gos_svg_series){lab[1], "#9467bd", x[1], y[1], n1};
    if (n2)
        s[ns++] = (gos_svg_series){lab[2], "#e69f00", x[2], y[2], n2};
    /* The marker is the headline: the knee of one partition's SMs reading every
     * page, the capacity replication leaves; without that curve, the
     * one-reader-per-page knee, the whole L2. The every-SM curve's knee is no
     * capacity (neighbours hit each other's lines) and is not marked. The
     * paper's 65.8 % (001 6.2.1, Fig. 7) is of every SM reading every page: it
     * is compared with that curve's knee in the table, never with this one. */
    double knee = !isnan(e2) ? e2 : e0;
    if (!isnan(e2))
        snprintf(k, sizeof k, "one partition: %.1f MiB = %.1f %% of L2 (no paper figure)",
                 e2 / (1 << 20), 100 * e2 / l2_bytes);
    else
        snprintf(k, sizeof k, "knee %.1f MiB = %.1f %% of L2 (one reader per page)", e0 / (1 << 20), 100 * e0 / l2_bytes);
    snprintf(p, sizeof p, "physical L2 %.0f MiB", l2_bytes / (1 << 20));
    gos_svg_frame fr = {"Read bandwidth against working-set size (paper 001 6.2.1)", "working set (MiB)", "GB/s", 820,
                        320, isnan(knee) ? 0 : knee / (1 << 20), k, l2_bytes / (1 << 20), p};
    gos_svg_lines(f, &fr, s, ns);
    for (int i = 0; i < 3; i++) {
        free(x[i]);
        free(y[i]);
    }
}

/* The evidence behind the topology: for each free-floating SM (or TPC), the L2
 * bandwidth it adds beside each GPC's SMs (a fraction of its lone bandwidth: low
 * where it shares that GPC's path, so its GPC), and the GPC-pair matrix (two GPCs
 * reading together over the sum of each alone: below 1 where they share a path
 * above the GPC). Drawn only from what the chart holds. */
static void topology_evidence(FILE *f, const gos_chip *c, json_t *topo)
{
    json_t *pl = json_object_get(topo, "placements"), *pr = json_object_get(topo, "gpc_pair_bw_ratio");
    int np = (int)json_array_size(pl), ng = c->n_gpcs;
    char (*rn)[32] = NULL, (*cn)[16] = NULL;
    const char **rp = NULL, **cp = NULL;
    double *v = NULL;
    int *mark = NULL;
    if (!ng || (!np && json_array_size(pr) != (size_t)ng)) {
        fprintf(f, "<p>No topology evidence in this chart (L2-contention placements and GPC pairs not measured).</p>\n");
        return;
    }
    int rows = np > ng ? np : ng;
    rn = calloc((size_t)rows, sizeof *rn);
    cn = calloc((size_t)ng, sizeof *cn);
    rp = calloc((size_t)rows, sizeof *rp);
    cp = calloc((size_t)ng, sizeof *cp);
    v = calloc((size_t)rows * ng, sizeof *v);
    mark = calloc((size_t)rows, sizeof *mark);
    if (!rn || !cn || !rp || !cp || !v || !mark)
        goto done;
    for (int g = 0; g < ng; g++)
        snprintf(cn[g], sizeof cn[g], "GPC %d", g), cp[g] = cn[g];
    if (np) {
        for (int i = 0; i < np; i++) {
            json_t *o = json_array_get(pl, i), *sms = json_object_get(o, "sms"),
                   *gain = json_object_get(o, "gain_vs_lone_per_gpc");
            if (json_array_size(sms) == 2)
                snprintf(rn[i], sizeof rn[i], "SMs %d+%d", (int)json_integer_value(json_array_get(sms, 0)),
                         (int)json_integer_value(json_array_get(sms, 1)));
            else
                snprintf(rn[i], sizeof rn[i], "SM %d", (int)json_integer_value(json_array_get(sms, 0)));
            rp[i] = rn[i];
            json_t *gi = json_object_get(o, "gpc");
            mark[i] = json_is_integer(gi) ? (int)json_integer_value(gi) : -1;
            for (int g = 0; g < ng; g++) {
                json_t *x = json_array_get(gain, g);
                v[i * ng + g] = json_is_number(x) ? json_number_value(x) : NAN;
            }
        }
        gos_svg_heat h = {"L2 contention of each free-floating SM: bandwidth it adds beside a GPC's SMs",
                          "fraction of its lone L2 bandwidth added when it reads together with the GPC",
                          np, ng, v, rp, cp, mark, "placed there (lowest gain)", 0, 1, "%.2f"};
        gos_svg_heatmap(f, &h);
    } else
        fprintf(f, "<p>No free-floating SM in this chart: every SM was seen in large clusters.</p>\n");
    if (json_array_size(pr) == (size_t)ng) {
        for (int a = 0; a < ng; a++) {
            rp[a] = cn[a];
            mark[a] = -1;
            for (int b = 0; b < ng; b++) {
                json_t *x = json_array_get(json_array_get(pr, a), b);
                v[a * ng + b] = json_is_number(x) ? json_number_value(x) : NAN;
            }
        }
        gos_svg_heat h = {"GPC pairs: L2 bandwidth of two GPCs reading together / the sum of each alone",
                          "second GPC", ng, ng, v, rp, cp, NULL, NULL, 0, 0, "%.2f"};
        gos_svg_heatmap(f, &h);
    } else
        fprintf(f, "<p>No GPC-pair bandwidth matrix in this chart.</p>\n");
done:
    free(rn);
    free(cn);
    free(rp);
    free(cp);
    free(v);
    free(mark);
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
    if (!md && isnan(ours))
        return; /* the page shows what the chart measured, no empty rows */
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
    /* Without the /1 pair (N partitions), the lowest and the highest tier. */
    int tn = !c->has_latency && c->n_tiers >= 2;
    double hl = c->has_latency ? c->lat_hbm_local : tn ? c->tiers[0].cycles : NAN;
    double hr = c->has_latency ? c->lat_hbm_remote : tn ? c->tiers[c->n_tiers - 1].cycles : NAN;
    double ll = c->has_latency ? c->lat_l2_local : tn && c->tiers[0].l2_cycles > 0 ? c->tiers[0].l2_cycles : NAN;
    double lr = c->has_latency ? c->lat_l2_remote
                : tn && c->tiers[c->n_tiers - 1].l2_cycles > 0 ? c->tiers[c->n_tiers - 1].l2_cycles : NAN;
    row(f, md, "HBM latency, local", hl, "cycles", 490, "~490 cycles (Fig. 4)", "median of the near tier");
    row(f, md, "HBM latency, remote", hr, "cycles", 655, "~655 cycles (Fig. 4)",
        tn ? "median of the farthest tier" : "median of the far tier");
    row(f, md, "L2 hit latency, local", ll, "cycles", 309, "~309 cycles (Fig. 5)", "median");
    row(f, md, "L2 hit latency, remote", lr, "cycles", 466, "~466 cycles (Fig. 5)", "median");
    if (c->n_parts > 2 || c->n_tiers > 2 || c->n_dies) { /* gpuos.chip/2: N partitions, dies, tiers */
        char txt[512] = "", dz[64] = "-";
        for (int t = 0; t < c->n_tiers; t++)
            snprintf(txt + strlen(txt), sizeof txt - strlen(txt), "%s%.0f (%s)", t ? ", " : "", c->tiers[t].cycles,
                     gos_relation_name(c->tiers[t].relation));
        cells(f, md, "latency tiers", c->n_tiers ? txt : "-", "2 tiers on H200 and B200, 3 on MI300X (App. G)", "",
              "HBM cycles by SM-to-memory relation");
        if (c->n_dies)
            snprintf(dz, sizeof dz, "%d dies of %d partitions", c->n_dies, c->n_parts);
        else
            snprintf(dz, sizeof dz, "%d partitions, dies not told apart", c->n_parts);
        cells(f, md, "memory partitions", dz, "B200: the boundary between dies", "", "");
        txt[0] = 0;
        for (int j = 0; j < c->n_parities; j++) {
            snprintf(txt + strlen(txt), sizeof txt - strlen(txt), "%s{", j ? " " : "");
            for (int b = 7, first = 1; b <= 20; b++)
                if (c->parity[j].in_page >> b & 1) {
                    snprintf(txt + strlen(txt), sizeof txt - strlen(txt), "%s%d", first ? "" : " ", b);
                    first = 0;
                }
            snprintf(txt + strlen(txt), sizeof txt - strlen(txt), "}");
        }
        cells(f, md, "hash parities (in-page bits)", c->n_parities ? txt : "-", "one parity on H200", "",
              "partition code bit j = parity j");
    }
    double fs = num(mem, "l2_effective_fraction_shared"), fp = num(mem, "l2_effective_fraction");
    row(f, md, "effective L2, every SM reads every page", isnan(fs) ? NAN : 100 * fs, "%", 65.8,
        "65.8 % of 60 MB (Fig. 7)", "the paper's setting; onset of the bandwidth cliff");
    row(f, md, "effective L2, each page read by one SM", isnan(fp) ? NAN : 100 * fp, "%", 0,
        "(not measured)", "no line is read from both partitions");
    double f1 = num(mem, "l2_effective_fraction_one_partition");
    if (!md || !isnan(f1))
        row(f, md, "effective L2, one partition's SMs read every page", isnan(f1) ? NAN : 100 * f1, "%", 0,
            "(not measured)", "replicas of remote lines cost near-L2 capacity");
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
    if (md || c->n_in_page_bits)
        cells(f, md, "in-page hash bits", c->n_in_page_bits ? bits : "-", "16 bits in all, lowest 12", "",
              "bits above 20 are physical: one parity per 2 MB page");
    if (c->n_parts == 2)
        snprintf(parts, sizeof parts, "%d / %d", c->parts[0].n_sms, c->parts[1].n_sms);
    if (md || c->n_parts == 2)
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
    fprintf(f, " &middot; %d SMs &middot; L2 %.0f MiB &middot; %.1f GB HBM</p>\n", c->device.sm_count,
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
    fprintf(f, "<h2>Topology evidence</h2>\n");
    topology_evidence(f, c, json_object_get(root, "topology"));
    fprintf(f, "<h2>Our figures beside the paper's</h2>\n");
    {
        char *tb = NULL;
        size_t tlen = 0;
        FILE *t = open_memstream(&tb, &tlen);
        if (t) {
            paper_table(t, 0, c, root);
            fclose(t);
            int n_rows = 0;
            for (const char *q = tb; (q = strstr(q, "<tr>")); q++)
                n_rows++;
            if (n_rows > 1)
                fputs(tb, f);
            else
                fprintf(f, "<p>No memory figures in this chart (numa and memory sections not probed).</p>\n");
            free(tb);
        }
    }
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

/* ---- the fleet page: several GPUs side by side ---- */

#define FLEET_COLS 13

/* Column k of the comparison table for chart c, into buf ("" when unknown). */
static void fleet_cell(const gos_chip *c, int k, char *buf, size_t len)
{
    json_t *root = c->json, *topo = json_object_get(root, "topology"), *mem = json_object_get(root, "memory");
    double v;
    buf[0] = 0;
    switch (k) {
    case 0: {
        const char *d = json_string_value(json_object_get(json_object_get(root, "probe"), "date"));
        snprintf(buf, len, "%.10s", d ? d : "");
        break;
    }
    case 1:
        if (c->n_gpcs)
            gos_topo_summary(c, buf, (int)len);
        break;
    case 2: { /* free-floating SMs -> GPC, grouped by GPC, runs as ranges */
        json_t *pl = json_object_get(topo, "placements");
        size_t pos = 0;
        for (int g = 0; g < c->n_gpcs && pos < len; g++) {
            int sms[GOS_MAX_SMS], m = 0;
            for (size_t i = 0; i < json_array_size(pl); i++) {
                json_t *o = json_array_get(pl, i), *s = json_object_get(o, "sms");
                if (json_integer_value(json_object_get(o, "gpc")) == g)
                    for (size_t j = 0; j < json_array_size(s) && m < GOS_MAX_SMS; j++)
                        sms[m++] = (int)json_integer_value(json_array_get(s, j));
            }
            for (int a = 0; a < m; a++) /* sort: placements come one or two at a time */
                for (int b = a + 1; b < m; b++)
                    if (sms[b] < sms[a]) {
                        int t = sms[a];
                        sms[a] = sms[b], sms[b] = t;
                    }
            for (int a = 0; a < m && pos < len;) {
                int b = a;
                while (b + 1 < m && sms[b + 1] == sms[b] + 1)
                    b++;
                pos += snprintf(buf + pos, len - pos, b > a ? "%s%d-%d" : "%s%d", a ? ", " : (pos ? "; " : ""),
                                sms[a], sms[b]);
                a = b + 1;
            }
            if (m && pos < len)
                pos += snprintf(buf + pos, len - pos, " &#8594; GPC %d", g);
        }
        if (!pos && c->n_gpcs && json_is_array(pl))
            snprintf(buf, len, "none");
        break;
    }
    case 3:
        if (c->n_gpcs)
            snprintf(buf, len, "%d / %d", gos_labels_concurrent_clusters(c, 8), gos_labels_concurrent_clusters(c, 16));
        break;
    case 4:
        if (!isnan(v = num(topo, "max_cluster_size")))
            snprintf(buf, len, "%.0f", v);
        break;
    case 5:
        for (int p = 0; p < c->n_parts; p++)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", p ? " / " : "", c->parts[p].n_sms);
        break;
    case 6:
        if (c->has_latency)
            snprintf(buf, len, "%.0f / %.0f", c->lat_hbm_local, c->lat_hbm_remote);
        break;
    case 7:
        if (c->has_latency)
            snprintf(buf, len, "%.0f / %.0f", c->lat_l2_local, c->lat_l2_remote);
        break;
    case 8:
        if (!isnan(v = num(mem, "l2_effective_fraction_shared")))
            snprintf(buf, len, "%.1f %%", 100 * v);
        break;
    case 9:
        if (!isnan(v = num(mem, "l2_effective_fraction_one_partition")))
            snprintf(buf, len, "%.1f %%", 100 * v);
        break;
    case 10:
        if (!isnan(v = num(mem, "hbm_bandwidth_gbps.local")) && !isnan(num(mem, "hbm_bandwidth_gbps.remote")))
            snprintf(buf, len, "%.0f / %.0f", v, num(mem, "hbm_bandwidth_gbps.remote"));
        break;
    case 11:
        if (c->hash_granularity)
            snprintf(buf, len, "%llu B", (unsigned long long)c->hash_granularity);
        break;
    case 12:
        if (!isnan(v = num(root, "probe.seconds")))
            snprintf(buf, len, "%.2f s", v);
        break;
    }
}

static const char *fleet_head[FLEET_COLS] = {
    "date", "GPCs (SMs each)", "free-floating SMs &#8594; GPC", "clusters of 8 / 16 at once", "largest cluster", "SMs per partition", "HBM latency local / remote (cycles)",
    "L2 latency local / remote (cycles)", "effective L2, every SM", "effective L2, one partition",
    "HBM GB/s local / remote pages", "hash granularity", "probe time"};

/* The fleet's summary measures: one number of chart c each (NAN: not measured). */
#define FLEET_SUMMARY 8
static const char *summary_head[FLEET_SUMMARY] = {
    "HBM latency, local (cycles)", "HBM latency, remote (cycles)", "L2 latency, local (cycles)",
    "L2 latency, remote (cycles)", "effective L2, every SM (%)", "HBM GB/s, local pages", "HBM GB/s, remote pages",
    "probe time (s)"};

static double summary_num(const gos_chip *c, int k)
{
    json_t *mem = json_object_get(c->json, "memory");
    switch (k) {
    case 0: return c->has_latency ? c->lat_hbm_local : NAN;
    case 1: return c->has_latency ? c->lat_hbm_remote : NAN;
    case 2: return c->has_latency ? c->lat_l2_local : NAN;
    case 3: return c->has_latency ? c->lat_l2_remote : NAN;
    case 4: return 100 * num(mem, "l2_effective_fraction_shared");
    case 5: return num(mem, "hbm_bandwidth_gbps.local");
    case 6: return num(mem, "hbm_bandwidth_gbps.remote");
    default: return num(c->json, "probe.seconds");
    }
}

/* The page's first table: how many GPUs, how many configurations, and each
 * measure's median and range over the GPUs that measured it. */
static void fleet_summary(FILE *f, const gos_chip *const *charts, int n, int n_configs)
{
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return;
    fprintf(f, "<h2>Summary</h2>\n<table class=\"summary\"><tr><th>measure</th><th>GPUs</th><th>min</th>"
               "<th>median</th><th>max</th></tr>\n<tr><td>GPUs charted</td><td>%d</td><td colspan=3>%d GPC "
               "configuration%s</td></tr>\n",
            n, n_configs, n_configs == 1 ? "" : "s");
    for (int k = 0; k < FLEET_SUMMARY; k++) {
        size_t m = 0;
        for (int i = 0; i < n; i++)
            if (!isnan(v[m] = summary_num(charts[i], k)))
                m++;
        if (!m)
            continue;
        int prec = k == 7 ? 2 : k == 4 ? 1 : 0;
        fprintf(f, "<tr><td>%s</td><td>%zu</td><td>%.*f</td><td>%.*f</td><td>%.*f</td></tr>\n", summary_head[k], m,
                prec, gos_quantile(v, m, 0), prec, gos_quantile(v, m, 0.5), prec, gos_quantile(v, m, 1));
    }
    fprintf(f, "</table>\n");
    free(v);
}

/* One floor plan per distinct picture, headed by every GPU that has it (a
 * fleet of like chips is one picture, not one per GPU). */
static void fleet_floor_plans(FILE *f, const gos_chip *const *charts, int n)
{
    char **svg = calloc((size_t)n, sizeof *svg);
    size_t len;
    for (int i = 0; svg && i < n; i++) {
        FILE *m = open_memstream(&svg[i], &len);
        if (m)
            floor_plan(m, charts[i]), fclose(m);
    }
    for (int i = 0; svg && i < n; i++) {
        int first = 1;
        for (int j = 0; j < i && first; j++)
            first = !(svg[i] && svg[j] && !strcmp(svg[i], svg[j]));
        if (!first)
            continue;
        fprintf(f, "<h3>");
        for (int j = i; j < n; j++) {
            if (j > i && !(svg[i] && svg[j] && !strcmp(svg[i], svg[j])))
                continue;
            fprintf(f, "%s<span id=\"gpu%d\">", j > i ? "<br>" : "", j);
            gos_html_escape(f, charts[j]->device.name);
            fprintf(f, " &middot; ");
            gos_html_escape(f, charts[j]->device.uuid);
            fprintf(f, "%s</span>", charts[j]->device.simulated ? " <span class=\"sim\">SIMULATED</span>" : "");
        }
        fprintf(f, "</h3>\n%s", svg[i] ? svg[i] : "");
    }
    for (int i = 0; svg && i < n; i++)
        free(svg[i]);
    free(svg);
}

/* The configurations and how many chips have each (the paper: 23 of 28 H200s
 * ...) as a table; returns how many configurations. */
static int fleet_configs(FILE *f, const gos_chip *const *charts, int n)
{
    int n_configs = 0;
    fprintf(f, "<h2>GPC configurations</h2>\n<table><tr><th>configuration</th><th>chips</th><th>paper 001</th></tr>\n");
    int *done = calloc((size_t)n, sizeof *done);
    for (int i = 0; done && i < n; i++) {
        if (done[i] || !charts[i]->n_gpcs)
            continue;
        char si[128], sj[128];
        gos_topo_summary(charts[i], si, sizeof si);
        int count = 0;
        n_configs++;
        for (int j = i; j < n; j++) {
            if (!charts[j]->n_gpcs)
                continue;
            gos_topo_summary(charts[j], sj, sizeof sj);
            if (!strcmp(si, sj))
                done[j] = 1, count++;
        }
        const char *m = gos_topo_paper_match(charts[i]->device.name, si, NULL);
        fprintf(f, "<tr><td>%s</td><td>%d of %d</td><td>", si, count, n);
        gos_html_escape(f, m ? m : "");
        fprintf(f, "</td></tr>\n");
    }
    free(done);
    fprintf(f, "</table>\n");
    return n_configs;
}

int gos_report_fleet_html(const gos_chip *const *charts, int n, const char *out_path)
{
    if (n < 1)
        return gos_fail(GOS_EINVAL, "no chart for the fleet page");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int n_sim = 0, used[FLEET_COLS] = {0};
    char cell[512];
    for (int i = 0; i < n; i++) {
        n_sim += charts[i]->device.simulated;
        for (int k = 0; k < FLEET_COLS; k++) {
            fleet_cell(charts[i], k, cell, sizeof cell);
            used[k] |= cell[0] != 0;
        }
    }
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpuos fleet: %d GPUs</title>\n"
               "<style>body{font-family:sans-serif;max-width:1200px;margin:20px auto;color:#222}"
               "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #bbb;padding:3px 6px;text-align:left;"
               "vertical-align:top}th{background:#eee}svg{display:block;margin:10px 0}.sim{color:#a00;font-weight:bold}"
               "</style></head><body>\n<h1>Fleet: %d GPUs</h1>\n",
            n, n);
    if (n_sim)
        fprintf(f, "<p><span class=\"sim\">%d of %d charts are of SIMULATED devices</span></p>\n", n_sim, n);
    char *cbuf = NULL;
    size_t clen = 0;
    FILE *cf = open_memstream(&cbuf, &clen);
    int n_configs = cf ? fleet_configs(cf, charts, n) : 0;
    if (cf)
        fclose(cf);
    fleet_summary(f, charts, n, n_configs);
    fputs(cbuf ? cbuf : "", f);
    free(cbuf);
    fprintf(f, "<h2>Side by side</h2>\n<table><tr><th>GPU</th>");
    for (int k = 0; k < FLEET_COLS; k++)
        if (used[k])
            fprintf(f, "<th>%s</th>", fleet_head[k]);
    fprintf(f, "</tr>\n");
    for (int i = 0; i < n; i++) {
        fprintf(f, "<tr><td><a href=\"#gpu%d\">", i);
        gos_html_escape(f, charts[i]->device.name);
        fprintf(f, "</a><br><span title=\"");
        gos_html_escape(f, charts[i]->device.uuid);
        fprintf(f, "\">%.12s...</span>", charts[i]->device.uuid);
        fprintf(f, "%s</td>", charts[i]->device.simulated ? "<br><span class=\"sim\">SIMULATED</span>" : "");
        for (int k = 0; k < FLEET_COLS; k++) {
            if (!used[k])
                continue;
            fleet_cell(charts[i], k, cell, sizeof cell);
            fprintf(f, "<td>%s</td>", cell[0] ? cell : "-");
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n<h2>Floor plans</h2>\n");
    fleet_floor_plans(f, charts, n);
    fprintf(f, "</body></html>\n");
    fclose(f);
    int rc = gos_file_save_atomic(out_path, buf, len);
    free(buf);
    return rc;
}
