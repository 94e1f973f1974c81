/* SPDX-License-Identifier: Apache-2.0 */
/* report_input.c: one GPU's switching latencies for the report (dvfs_report.h), from
 * an analysis directory (summary.json + the per-pair CSV files of gpuos dvfs
 * analyze) or from a run directory (run.json + traces, docs/contracts.md),
 * which is analysed first into a temporary directory, removed afterwards.
 * Strict: a pair file that disagrees with summary.json (kept count, outlier
 * flag against cluster label) is an error, never a silently different figure. */
#include "dvfs/dvfs_report.h"

#include "common/env.h"
#include "common/jsonio.h"
#include "stats/stats.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *str_or(json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && s[0] ? s : dflt;
}

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static int read_points(const char *path, gos_dvfs_rpair *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gos_fail(GOS_EIO, "cannot read %s: %s", path, strerror(errno));
    char line[256];
    size_t cap = 0;
    int rc = GOS_OK, lineno = 1;
    if (!fgets(line, sizeof line, f) || strcmp(line, "measurement,latency_ms,outlier,cluster\n")) {
        fclose(f);
        return gos_fail(GOS_EINVAL, "%s:1: header is not \"measurement,latency_ms,outlier,cluster\"", path);
    }
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n')
            continue;
        int k, out, cl, used = 0;
        double ms;
        if (sscanf(line, "%d,%lf,%d,%d%n", &k, &ms, &out, &cl, &used) != 4 || (line[used] && line[used] != '\n') ||
            k < 0 || !isfinite(ms) || ms < 0 || (out != 0 && out != 1) || cl < -1 || out != (cl < 0)) {
            rc = gos_fail(GOS_EINVAL, "%s:%d: expected measurement,latency_ms,outlier (0/1),cluster (-1 for an outlier)",
                          path, lineno);
            break;
        }
        if (p->n_pts == cap) {
            cap = cap ? 2 * cap : 64;
            gos_dvfs_rpoint *np = realloc(p->pts, cap * sizeof *np);
            double *nl = realloc(p->lat, cap * sizeof *nl);
            if (np)
                p->pts = np;
            if (nl)
                p->lat = nl;
            if (!np || !nl) {
                rc = gos_fail(GOS_ENOMEM, "out of memory");
                break;
            }
        }
        p->pts[p->n_pts++] = (gos_dvfs_rpoint){k, ms, cl};
        if (!out)
            p->lat[p->n_lat++] = ms;
    }
    fclose(f);
    if (!rc && p->n_lat != p->n)
        rc = gos_fail(GOS_EINVAL, "%s: %zu kept measurements, but summary.json says n = %zu", path, p->n_lat, p->n);
    if (!rc)
        gos_sort_doubles(p->lat, p->n_lat);
    return rc;
}

static int load_summary(const char *dir, gos_dvfs_rgpu *g)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *s;
    int rc = gos_json_load(path, &s);
    if (rc)
        return rc;
    json_t *pairs = json_object_get(s, "pairs"), *jf = json_object_get(s, "freqs_mhz"),
           *dev = json_object_get(s, "device");
    if (strcmp(str_or(s, "schema", ""), "gpuos.dvfs-summary/1") || !json_is_array(pairs) || !json_is_array(jf) ||
        json_array_size(jf) > GOS_DVFS_MAX_FREQS) {
        json_decref(s);
        return gos_fail(GOS_EINVAL, "%s: not a gpuos.dvfs-summary/1 file (run gpuos dvfs analyze)", path);
    }
    for (size_t i = 0; i < json_array_size(jf); i++) {
        json_t *v = json_array_get(jf, i);
        if (!json_is_integer(v)) {
            json_decref(s);
            return gos_fail(GOS_EINVAL, "%s: freqs_mhz[%zu] is not an integer", path, i);
        }
        g->fr[g->nf++] = (int)json_integer_value(v);
    }
    qsort(g->fr, g->nf, sizeof *g->fr, cmp_desc);
    snprintf(g->uuid, sizeof g->uuid, "%s", str_or(dev, "uuid", ""));
    snprintf(g->name, sizeof g->name, "%s", str_or(dev, "name", "unknown device"));
    snprintf(g->host, sizeof g->host, "%s", str_or(s, "host", "?"));
    snprintf(g->run, sizeof g->run, "%s", str_or(s, "run", "?"));
    g->simulated = json_is_true(json_object_get(dev, "simulated"));
    g->n_excluded = json_array_size(json_object_get(s, "excluded_pairs"));
    g->ps = calloc(json_array_size(pairs) + 1, sizeof *g->ps);
    if (!g->ps) {
        json_decref(s);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < json_array_size(pairs) && !rc; i++) {
        json_t *p = json_array_get(pairs, i), *file = json_object_get(p, "file");
        json_t *ji = json_object_get(p, "init_mhz"), *jt = json_object_get(p, "target_mhz");
        if (!json_is_string(file) || (json_is_null(json_object_get(p, "min_ms")) &&
                                      json_integer_value(json_object_get(p, "n")) == 0))
            continue; /* a valid pair without a viable (kept) measurement */
        const char *fn = json_string_value(file);
        int init = (int)json_integer_value(ji), target = (int)json_integer_value(jt), in = 0, tn = 0;
        for (int k = 0; k < g->nf; k++)
            in |= g->fr[k] == init, tn |= g->fr[k] == target;
        if (!json_is_integer(ji) || !json_is_integer(jt) || !in || !tn || init == target || !fn[0] ||
            strchr(fn, '/') || !json_is_number(json_object_get(p, "min_ms")) ||
            !json_is_number(json_object_get(p, "max_ms")) || !json_is_integer(json_object_get(p, "n"))) {
            rc = gos_fail(GOS_EINVAL, "%s: pairs[%zu] needs init_mhz and target_mhz of freqs_mhz, n, min_ms, max_ms "
                                      "and a file name", path, i);
            break;
        }
        if (gos_dvfs_rgpu_pair(g, init, target)) {
            rc = gos_fail(GOS_EINVAL, "%s: pair %d -> %d listed twice", path, init, target);
            break;
        }
        gos_dvfs_rpair *r = &g->ps[g->np++];
        r->init = init;
        r->target = target;
        r->min = json_number_value(json_object_get(p, "min_ms"));
        r->mean = json_number_value(json_object_get(p, "mean_ms"));
        r->max = json_number_value(json_object_get(p, "max_ms"));
        r->n = (size_t)json_integer_value(json_object_get(p, "n"));
        r->clusters = (int)json_integer_value(json_object_get(p, "clusters"));
        json_t *sil = json_object_get(p, "silhouette");
        r->has_silhouette = json_is_number(sil);
        r->silhouette = json_number_value(sil);
        char fp[4400];
        snprintf(fp, sizeof fp, "%s/%s", dir, fn);
        rc = read_points(fp, r);
    }
    if (!rc && g->np == 0)
        rc = gos_fail(GOS_EINVAL, "%s: no pair has measurements to report", path);
    json_decref(s);
    return rc;
}

/* Removes the files analyze wrote into tmp, then tmp. */
static void remove_tmp(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (d) {
        struct dirent *e;
        char p[4400];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", tmp, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(tmp);
}

int gos_dvfs_rgpu_load(const char *dir, gos_dvfs_rgpu *g)
{
    memset(g, 0, sizeof *g);
    snprintf(g->dir, sizeof g->dir, "%s", dir);
    struct stat st;
    char path[4096];
    if (stat(dir, &st))
        return gos_fail(GOS_EIO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gos_fail(GOS_EINVAL, "%s: not a directory (a dvfs run or analysis directory is needed)", dir);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (!access(path, F_OK))
        return load_summary(dir, g);
    snprintf(path, sizeof path, "%s/run.json", dir);
    if (access(path, F_OK))
        return gos_fail(GOS_EINVAL, "%s: neither a dvfs run directory (no run.json) nor an analysis directory "
                                    "(no summary.json)", dir);
    const char *t = gos_env(GOS_ENV_SYS_TMPDIR);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/gpuos-dvfs-report-XXXXXX", t && t[0] ? t : "/tmp");
    if (!mkdtemp(tmp))
        return gos_fail(GOS_EIO, "cannot create a temporary directory %s: %s", tmp, strerror(errno));
    int rc = gos_dvfs_analyze(dir, tmp, NULL);
    if (!rc && (rc = load_summary(tmp, g))) /* not expected: analyze wrote it */
        rc = gos_fail(rc, "%s (analysed): %s", dir, gos_last_error());
    remove_tmp(tmp);
    g->from_run = 1;
    snprintf(g->run, sizeof g->run, "%s", dir);
    return rc;
}

void gos_dvfs_rgpu_free(gos_dvfs_rgpu *g)
{
    for (int i = 0; g->ps && i < g->np; i++) {
        free(g->ps[i].pts);
        free(g->ps[i].lat);
    }
    free(g->ps);
    g->ps = NULL;
    g->np = 0;
}

const gos_dvfs_rpair *gos_dvfs_rgpu_pair(const gos_dvfs_rgpu *g, int init, int target)
{
    for (int i = 0; i < g->np; i++)
        if (g->ps[i].init == init && g->ps[i].target == target)
            return &g->ps[i];
    return NULL;
}
