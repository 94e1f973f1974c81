/* SPDX-License-Identifier: Apache-2.0 */
/* analyze.c: `gpuos dvfs analyze RUN --out DIR` (docs/contracts.md "Frequency-switching
 * traces"): phases 1 and 3 of paper 000 recomputed from the saved traces alone,
 * then outlier filtering (filter.c). Needs only the contract's files:
 *   RUN/run.json (schema, freqs_mhz; host and device used for file names),
 *   RUN/calib/<mhz>.csv, RUN/pairs/<init>-<target>/<k>.csv + <k>.json
 *   ({"t_request_ns": ...}; an optional "nvml_mhz" is checked like online).
 * Writes DIR/<init>_<target>_<host>_<gpu>.csv per valid pair with viable
 * measurements ("measurement,latency_ms,outlier,cluster") and DIR/summary.json.
 * The same functions as the online campaign are used, so re-analysing a run
 * reproduces its latencies exactly. Malformed input fails with one line naming
 * the file. */
#include "dvfs/dvfs.h"

#include "common/jsonio.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static json_t *num_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static void sanitize(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.'))
            *s = '-';
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Measurement numbers k with k.csv in dir (sorted); *n = 0 if dir is absent. */
static int list_measurements(const char *dir, int **ks, int *n)
{
    *ks = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? GOS_OK : gos_fail(GOS_EIO, "cannot read %s: %s", dir, strerror(errno));
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long k = strtol(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".csv") || k < 0 || k > 100000000)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            int *nk = realloc(*ks, cap * sizeof *nk);
            if (!nk) {
                closedir(d);
                return gos_fail(GOS_ENOMEM, "out of memory");
            }
            *ks = nk;
        }
        (*ks)[(*n)++] = (int)k;
    }
    closedir(d);
    qsort(*ks, *n, sizeof **ks, cmp_int);
    return GOS_OK;
}

static int read_request(const char *path, int64_t *t_s, int *nvml)
{
    json_t *o;
    int rc = gos_json_load(path, &o);
    if (rc)
        return rc;
    json_t *t = json_object_get(o, "t_request_ns");
    if (!json_is_integer(t) || json_integer_value(t) < 0) {
        json_decref(o);
        return gos_fail(GOS_EINVAL, "%s: \"t_request_ns\" must be a non-negative integer (GPU ns)", path);
    }
    *t_s = json_integer_value(t);
    json_t *nv = json_object_get(o, "nvml_mhz");
    *nvml = json_is_integer(nv) ? (int)json_integer_value(nv) : 0;
    json_decref(o);
    return GOS_OK;
}

/* run.json's schema and "freqs_mhz" (path names it in errors): freqs[0..*n). */
static int analyze_freqs(json_t *rj, const char *path, int *freqs, int *n)
{
    json_t *schema = json_object_get(rj, "schema"), *fr = json_object_get(rj, "freqs_mhz");
    if (!json_is_string(schema) || strcmp(json_string_value(schema), GOS_DVFS_RUN_SCHEMA))
        return gos_fail(GOS_EINVAL, "%s: \"schema\" must be \"%s\"", path, GOS_DVFS_RUN_SCHEMA);
    if (!json_is_array(fr) || json_array_size(fr) < 2 || json_array_size(fr) > GOS_DVFS_MAX_FREQS)
        return gos_fail(GOS_EINVAL, "%s: \"freqs_mhz\" must list 2..%d frequencies", path, GOS_DVFS_MAX_FREQS);
    for (size_t i = 0; i < json_array_size(fr); i++) {
        json_t *v = json_array_get(fr, i);
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100000)
            return gos_fail(GOS_EINVAL, "%s: freqs_mhz[%zu] is not a frequency in MHz", path, i);
        freqs[*n] = (int)json_integer_value(v);
        for (int j = 0; j < *n; j++)
            if (freqs[j] == freqs[*n])
                return gos_fail(GOS_EINVAL, "%s: %d MHz listed twice", path, freqs[*n]);
        (*n)++;
    }
    return GOS_OK;
}

/* The host and GPU names of the output files, from run.json, made safe. */
static void analyze_names(json_t *rj, char host[128], char gpu[128])
{
    json_t *h = json_object_get(rj, "host"), *dev = json_object_get(rj, "device");
    if (json_is_string(h) && json_string_value(h)[0])
        snprintf(host, 128, "%s", json_string_value(h));
    json_t *ord = json_object_get(dev, "ordinal"), *uuid = json_object_get(dev, "uuid");
    if (json_is_integer(ord) && json_integer_value(ord) >= 0)
        snprintf(gpu, 128, "%lld", (long long)json_integer_value(ord));
    else if (json_is_string(uuid) && json_string_value(uuid)[0])
        snprintf(gpu, 128, "%s", json_string_value(uuid));
    sanitize(host);
    sanitize(gpu);
}

/* Phase 1 from the calibration traces: cal[0..n) and the valid pairs. */
static int analyze_calib(const char *run, json_t *rj, const int *freqs, int n, gos_dvfs_calib *cal, char *valid)
{
    char path[4096];
    json_t *rcal = json_object_get(rj, "calibration");
    for (int i = 0; i < n; i++) {
        gos_dvfs_trace tr;
        snprintf(path, sizeof path, "%s/calib/%d.csv", run, freqs[i]);
        int rc = gos_dvfs_trace_read_csv(path, &tr);
        if (rc)
            return rc;
        gos_dvfs_calib_from_trace(&tr, freqs[i], &cal[i]);
        gos_dvfs_trace_free(&tr);
        if (cal[i].n < 2)
            return gos_fail(GOS_EINVAL, "%s: fewer than 2 iterations", path);
        cal[i].verified = 1;
        for (size_t k = 0; k < json_array_size(rcal); k++) { /* the campaign's verdict, if recorded */
            json_t *o = json_array_get(rcal, k);
            if (json_integer_value(json_object_get(o, "mhz")) == freqs[i] &&
                json_is_false(json_object_get(o, "verified")))
                cal[i].verified = 0;
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            valid[i * n + j] = i != j && cal[i].verified && cal[j].verified &&
                               gos_dvfs_pair_valid(&cal[i], &cal[j], NULL);
    return GOS_OK;
}

/* One pair's measurements: what analyze_pair reads and writes. */
struct an_pair {
    const char *dir;
    int *ks, nk;          /* the measurement numbers found */
    double *lat;          /* viable latencies in ms, lat[0..nv) */
    int *meas, *lab, nv;  /* their measurement numbers and cluster labels */
};

/* The viable latencies of a pair (init ri, target rt at target_mhz): p->lat, p->meas, p->nv. */
static int pair_latencies(struct an_pair *p, const gos_dvfs_ref *ri, const gos_dvfs_ref *rt, int target_mhz)
{
    int rc = GOS_OK;
    for (int q = 0; q < p->nk && !rc; q++) {
        gos_dvfs_trace tr;
        int64_t t_s = 0;
        int nvml = 0;
        char mpath[4200];
        snprintf(mpath, sizeof mpath, "%s/%d.json", p->dir, p->ks[q]);
        if ((rc = read_request(mpath, &t_s, &nvml)))
            break;
        snprintf(mpath, sizeof mpath, "%s/%d.csv", p->dir, p->ks[q]);
        if ((rc = gos_dvfs_trace_read_csv(mpath, &tr)))
            break;
        gos_dvfs_eval ev;
        gos_dvfs_evaluate(&tr, t_s, ri, rt, &ev);
        gos_dvfs_trace_free(&tr);
        if (ev.status == GOS_DVFS_OK && (nvml == 0 || abs(nvml - target_mhz) <= 8)) {
            p->lat[p->nv] = ev.latency_ns / 1e6;
            p->meas[p->nv] = p->ks[q];
            p->nv++;
        }
    }
    return rc;
}

/* The pair's CSV out/fname: one row per viable measurement. */
static int pair_csv(const struct an_pair *p, const char *out, const char *fname)
{
    size_t cap = 64 + (size_t)p->nv * 64, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return gos_fail(GOS_ENOMEM, "out of memory");
    len += (size_t)snprintf(buf + len, cap - len, "measurement,latency_ms,outlier,cluster\n");
    for (size_t q = 0; q < (size_t)p->nv; q++)
        len += (size_t)snprintf(buf + len, cap - len, "%d,%.6f,%d,%d\n", p->meas[q], p->lat[q], p->lab[q] < 0,
                                p->lab[q]);
    char fpath[4700];
    snprintf(fpath, sizeof fpath, "%s/%s", out, fname);
    int rc = gos_file_save_atomic(fpath, buf, len);
    free(buf);
    return rc;
}

/* The summary's row of a pair and its log line. */
static void pair_report(const gos_dvfs_pair_summary *s, int nk, int nv, const char *fname, json_t *pairs, FILE *log)
{
    json_t *o = json_object();
    json_object_set_new(o, "init_mhz", json_integer(s->init_mhz));
    json_object_set_new(o, "target_mhz", json_integer(s->target_mhz));
    json_object_set_new(o, "valid", json_true());
    json_object_set_new(o, "n", json_integer((json_int_t)s->n));
    json_object_set_new(o, "n_outliers", json_integer((json_int_t)s->n_outliers));
    json_object_set_new(o, "min_ms", num_or_null(s->min_ms));
    json_object_set_new(o, "mean_ms", num_or_null(s->mean_ms));
    json_object_set_new(o, "max_ms", num_or_null(s->max_ms));
    json_object_set_new(o, "median_ms", num_or_null(s->median_ms));
    json_object_set_new(o, "sd_ms", num_or_null(s->sd_ms));
    json_t *ci = json_array();
    json_array_append_new(ci, num_or_null(s->ci_lo_ms));
    json_array_append_new(ci, num_or_null(s->ci_hi_ms));
    json_object_set_new(o, "ci95_ms", ci);
    json_object_set_new(o, "n_measurements", json_integer((json_int_t)s->n_total));
    json_object_set_new(o, "n_attempts", json_integer(nk));
    json_object_set_new(o, "rse", num_or_null(s->rse));
    json_object_set_new(o, "rse_kept", num_or_null(s->rse_kept));
    json_object_set_new(o, "clusters", json_integer(s->n_clusters));
    json_object_set_new(o, "silhouette", s->has_silhouette ? json_real(s->silhouette) : json_null());
    json_object_set_new(o, "min_samples", json_integer(s->min_samples));
    json_object_set_new(o, "eps_ms", num_or_null(s->eps_ms));
    json_object_set_new(o, "file", fname[0] ? json_string(fname) : json_null());
    json_array_append_new(pairs, o);
    if (log) {
        if (nv == 0)
            fprintf(log, "%-7d %-7d %5d no viable measurement\n", s->init_mhz, s->target_mhz, nk);
        else
            fprintf(log, "%-7d %-7d %5zu %5zu %5zu %9.3f %9.3f %9.3f %6.2f %4d %5s\n", s->init_mhz, s->target_mhz,
                    s->n_total, s->n, s->n_outliers, s->min_ms, s->mean_ms, s->max_ms, 100 * s->rse_kept,
                    s->n_clusters, "");
        if (nv && s->has_silhouette)
            fprintf(log, "%60s silhouette %.2f\n", "", s->silhouette);
    }
}

/* What analyze_pair needs of the whole run. */
struct an_run {
    const char *run, *out, *host, *gpu;
    const int *freqs;
    int n;
    const gos_dvfs_calib *cal;
    json_t *pairs;
    FILE *log;
};

/* The valid pair i -> j: its latencies filtered, its CSV written, its summary
 * row; *total counts its viable measurements. */
static int analyze_pair(const struct an_run *r, int i, int j, size_t *total)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/pairs/%d-%d", r->run, r->freqs[i], r->freqs[j]);
    struct an_pair p = {.dir = dir};
    int rc = list_measurements(dir, &p.ks, &p.nk);
    if (rc)
        return rc;
    p.lat = malloc((p.nk + 1) * sizeof *p.lat);
    p.meas = malloc((p.nk + 1) * sizeof *p.meas);
    p.lab = malloc((p.nk + 1) * sizeof *p.lab);
    if (!p.lat || !p.meas || !p.lab)
        rc = gos_fail(GOS_ENOMEM, "out of memory");
    gos_dvfs_ref ri, rt;
    gos_dvfs_ref_of(r->cal, r->n, i, &ri);
    gos_dvfs_ref_of(r->cal, r->n, j, &rt);
    if (!rc)
        rc = pair_latencies(&p, &ri, &rt, r->freqs[j]);
    gos_dvfs_pair_summary s = {.init_mhz = r->freqs[i], .target_mhz = r->freqs[j]};
    if (!rc)
        rc = gos_dvfs_filter(p.lat, p.nv, p.lab, &s);
    char fname[512] = "";
    if (!rc && p.nv > 0) {
        snprintf(fname, sizeof fname, "%d_%d_%s_%s.csv", r->freqs[i], r->freqs[j], r->host, r->gpu);
        rc = pair_csv(&p, r->out, fname);
    }
    if (!rc) {
        *total += p.nv;
        pair_report(&s, p.nk, p.nv, fname, r->pairs, r->log);
    }
    free(p.ks);
    free(p.lat);
    free(p.meas);
    free(p.lab);
    return rc;
}

/* The summary's head and its calibration rows; *pairs and *excl its arrays. */
static json_t *analyze_summary(const char *run, const char *host, const char *gpu, json_t *rj, const int *freqs,
                               int n, const gos_dvfs_calib *cal, json_t **pairs, json_t **excl)
{
    json_t *summary = json_object(), *dev = json_object_get(rj, "device");
    json_object_set_new(summary, "schema", json_string("gpuos.dvfs-summary/1"));
    json_object_set_new(summary, "run", json_string(run));
    json_object_set_new(summary, "host", json_string(host));
    json_object_set_new(summary, "gpu", json_string(gpu));
    if (json_is_object(dev))
        json_object_set(summary, "device", dev);
    json_object_set(summary, "freqs_mhz", json_object_get(rj, "freqs_mhz"));
    json_t *jc = json_array();
    *pairs = json_array();
    *excl = json_array();
    json_object_set_new(summary, "calibration", jc);
    json_object_set_new(summary, "pairs", *pairs);
    json_object_set_new(summary, "excluded_pairs", *excl);
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "mhz", json_integer(freqs[i]));
        json_object_set_new(o, "mean_ns", json_real(cal[i].mean_ns));
        json_object_set_new(o, "sd_ns", json_real(cal[i].sd_ns));
        json_object_set_new(o, "n", json_integer((json_int_t)cal[i].n));
        json_object_set_new(o, "verified", json_boolean(cal[i].verified));
        json_array_append_new(jc, o);
    }
    return summary;
}

int gos_dvfs_analyze(const char *run, const char *out, FILE *log)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/run.json", run);
    json_t *rj;
    int rc = gos_json_load(path, &rj), n = 0;
    if (rc)
        return rc;
    int freqs[GOS_DVFS_MAX_FREQS];
    gos_dvfs_calib *cal = NULL;
    char *valid = NULL;
    json_t *summary = NULL;
    if ((rc = analyze_freqs(rj, path, freqs, &n)))
        goto done;
    char host[128] = "unknown", gpu[128] = "0";
    analyze_names(rj, host, gpu);

    cal = calloc(n, sizeof *cal);
    valid = calloc((size_t)n * n, 1);
    if (!cal || !valid) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = analyze_calib(run, rj, freqs, n, cal, valid)) || (rc = gos_dvfs_mkdirs(out)))
        goto done;

    json_t *pairs, *excl;
    summary = analyze_summary(run, host, gpu, rj, freqs, n, cal, &pairs, &excl);
    if (log)
        fprintf(log, "%-7s %-7s %5s %5s %5s %9s %9s %9s %6s %4s %5s\n", "init", "target", "meas", "n",
                "out", "min ms", "mean ms", "max ms", "RSE %", "clus", "silh");
    struct an_run r = {.run = run, .out = out, .host = host, .gpu = gpu, .freqs = freqs, .n = n, .cal = cal,
                       .pairs = pairs, .log = log};
    size_t total = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            if (!valid[i * n + j]) {
                json_t *e = json_array();
                json_array_append_new(e, json_integer(freqs[i]));
                json_array_append_new(e, json_integer(freqs[j]));
                json_array_append_new(excl, e);
                if (log)
                    fprintf(log, "%-7d %-7d excluded in calibration\n", freqs[i], freqs[j]);
                continue;
            }
            if ((rc = analyze_pair(&r, i, j, &total)))
                goto done;
        }
    snprintf(path, sizeof path, "%s/summary.json", out);
    rc = gos_json_save_atomic(summary, path);
    if (!rc && log)
        fprintf(log, "%zu viable measurements; wrote %s\n", total, path);
done:
    json_decref(summary);
    json_decref(rj);
    free(cal);
    free(valid);
    return rc;
}
