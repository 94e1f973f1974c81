/* SPDX-License-Identifier: Apache-2.0 */
/* labels.c: node-feature-discovery labels of charts (labels.h). */
#include "topology/labels.h"

#include "common/status.h"
#include "topology/topology.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int gos_labels_concurrent_clusters(const gos_chip *c, int k)
{
    int mc = gos_chip_max_cluster(c);
    if (k < 1 || (mc && k > mc))
        return 0;
    int n = 0;
    for (int g = 0; g < c->n_gpcs; g++)
        n += (k <= 2 ? c->gpcs[g].n_sms : c->gpcs[g].n_cluster) / k;
    return n;
}

/* Label values: [A-Za-z0-9._-], at most 63 characters, alphanumeric at both ends. */
static void label_value(const char *in, char *out, size_t len)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < len && j < 63; i++) {
        unsigned char ch = (unsigned char)in[i];
        char o = isalnum(ch) || ch == '.' || ch == '_' || ch == '-' ? (char)ch : '-';
        if (o == '-' && j && out[j - 1] == '-')
            continue;
        out[j++] = o;
    }
    while (j && !isalnum((unsigned char)out[j - 1]))
        j--;
    out[j] = 0;
    size_t s = 0;
    while (out[s] && !isalnum((unsigned char)out[s]))
        s++;
    memmove(out, out + s, j - s + 1);
}

/* The facts of one chart; -1 = unknown. */
struct facts {
    int sm_count, gpcs, sms_min, sms_max, ragged, clusters[4], max_cluster, free_sms, cluster_sms;
    int parts, dies, tiers, part_min, part_max;
    long long granularity;
    char config[96], part_sms[64]; /* "" when the SM counts do not fit a label value */
    int simulated;
};

static int facts_of(const gos_chip *c, struct facts *f)
{
    if (!c->n_gpcs)
        return gos_fail(GOS_EINVAL, "the chart of %s has no topology: nothing to label",
                        c->device.uuid[0] ? c->device.uuid : "the GPU");
    memset(f, 0, sizeof *f);
    f->sm_count = c->device.sm_count;
    f->gpcs = c->n_gpcs;
    f->sms_min = 1 << 30;
    int eligible0 = c->gpcs[0].n_cluster;
    for (int g = 0; g < c->n_gpcs; g++) {
        const gos_gpc *G = &c->gpcs[g];
        f->sms_min = G->n_sms < f->sms_min ? G->n_sms : f->sms_min;
        f->sms_max = G->n_sms > f->sms_max ? G->n_sms : f->sms_max;
        f->ragged |= G->n_cluster != eligible0;
        f->free_sms += G->n_sms - G->n_cluster;
        f->cluster_sms += G->n_cluster;
    }
    for (int i = 0; i < 4; i++)
        f->clusters[i] = gos_labels_concurrent_clusters(c, 1 << (i + 1));
    f->max_cluster = gos_chip_max_cluster(c);
    char summary[128], *p;
    gos_topo_summary(c, summary, sizeof summary);
    while ((p = strstr(summary, " + ")))
        memmove(p, p + 2, strlen(p + 2) + 1), *p = '_';
    label_value(summary, f->config, sizeof f->config);
    f->parts = c->n_parts;
    f->part_sms[0] = 0;
    f->part_min = 1 << 30;
    f->part_max = 0;
    int pos = 0;
    for (int i = 0; i < c->n_parts; i++) {
        pos += snprintf(f->part_sms + pos, pos < (int)sizeof f->part_sms ? sizeof f->part_sms - pos : 0,
                        "%s%d", i ? "_" : "", c->parts[i].n_sms);
        f->part_min = c->parts[i].n_sms < f->part_min ? c->parts[i].n_sms : f->part_min;
        f->part_max = c->parts[i].n_sms > f->part_max ? c->parts[i].n_sms : f->part_max;
    }
    if (pos > 63) /* a label value holds 63 characters: then min and max only */
        f->part_sms[0] = 0;
    f->dies = c->n_dies;
    f->tiers = c->n_tiers;
    f->granularity = (long long)c->hash_granularity;
    f->simulated = c->device.simulated;
    return GOS_OK;
}

static void write_facts(FILE *out, const char *pre, const struct facts *f)
{
    if (f->simulated)
        fprintf(out, "%s%ssimulated=true\n", GOS_NFD_PREFIX, pre);
    fprintf(out, "%s%ssm-count=%d\n", GOS_NFD_PREFIX, pre, f->sm_count);
    fprintf(out, "%s%sgpc-count=%d\n", GOS_NFD_PREFIX, pre, f->gpcs);
    fprintf(out, "%s%sgpc-config=%s\n", GOS_NFD_PREFIX, pre, f->config);
    fprintf(out, "%s%sgpc-sms-min=%d\n", GOS_NFD_PREFIX, pre, f->sms_min);
    fprintf(out, "%s%sgpc-sms-max=%d\n", GOS_NFD_PREFIX, pre, f->sms_max);
    fprintf(out, "%s%sragged=%s\n", GOS_NFD_PREFIX, pre, f->ragged ? "true" : "false");
    for (int i = 0; i < 4; i++)
        fprintf(out, "%s%sclusters-%d=%d\n", GOS_NFD_PREFIX, pre, 1 << (i + 1), f->clusters[i]);
    if (f->max_cluster)
        fprintf(out, "%s%smax-cluster-size=%d\n", GOS_NFD_PREFIX, pre, f->max_cluster);
    fprintf(out, "%s%scluster-sms=%d\n", GOS_NFD_PREFIX, pre, f->cluster_sms);
    fprintf(out, "%s%sfree-floating-sms=%d\n", GOS_NFD_PREFIX, pre, f->free_sms);
    if (f->parts) {
        fprintf(out, "%s%spartitions=%d\n", GOS_NFD_PREFIX, pre, f->parts);
        if (f->part_sms[0])
            fprintf(out, "%s%spartition-sms=%s\n", GOS_NFD_PREFIX, pre, f->part_sms);
        if (f->parts > 2) { /* gpuos.chip/2: N partitions */
            fprintf(out, "%s%spartition-sms-min=%d\n", GOS_NFD_PREFIX, pre, f->part_min);
            fprintf(out, "%s%spartition-sms-max=%d\n", GOS_NFD_PREFIX, pre, f->part_max);
        }
    }
    if (f->dies)
        fprintf(out, "%s%sdies=%d\n", GOS_NFD_PREFIX, pre, f->dies);
    if (f->tiers > 2)
        fprintf(out, "%s%slatency-tiers=%d\n", GOS_NFD_PREFIX, pre, f->tiers);
    if (f->granularity)
        fprintf(out, "%s%shash-granularity=%lld\n", GOS_NFD_PREFIX, pre, f->granularity);
}

int gos_labels_write(const gos_chip *const *charts, int n, long expiry_s, int vgpus, FILE *out)
{
    if (n < 1)
        return gos_fail(GOS_EINVAL, "no chart to label");
    struct facts *f = calloc((size_t)n, sizeof *f);
    if (!f)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = GOS_OK;
    for (int i = 0; i < n; i++)
        if ((rc = facts_of(charts[i], &f[i])))
            goto done;
    fprintf(out, "# gpuos node-feature-discovery labels (gpuos labels / gpuos probe --nfd)\n");
    if (expiry_s > 0) { /* NFD drops the labels after this time unless the file is rewritten */
        char when[32];
        time_t t = time(NULL) + expiry_s;
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        fprintf(out, "# +expiry-time=%s\n", when);
    }
    if (vgpus >= 0) /* the node's GPUs are shared through gpuos: a scheduler's selector */
        fprintf(out, "%sshared=true\n%svgpus=%d\n", GOS_NFD_PREFIX, GOS_NFD_PREFIX, vgpus);
    if (n == 1) {
        write_facts(out, "", &f[0]);
        goto done;
    }
    /* the node: the worst GPU for every number a job could need */
    struct facts w = f[0];
    for (int i = 1; i < n; i++) {
        w.sm_count = f[i].sm_count < w.sm_count ? f[i].sm_count : w.sm_count;
        w.gpcs = f[i].gpcs < w.gpcs ? f[i].gpcs : w.gpcs;
        w.sms_min = f[i].sms_min < w.sms_min ? f[i].sms_min : w.sms_min;
        w.sms_max = f[i].sms_max < w.sms_max ? f[i].sms_max : w.sms_max;
        w.ragged |= f[i].ragged;
        for (int k = 0; k < 4; k++)
            w.clusters[k] = f[i].clusters[k] < w.clusters[k] ? f[i].clusters[k] : w.clusters[k];
        w.max_cluster = f[i].max_cluster < w.max_cluster ? f[i].max_cluster : w.max_cluster;
        w.cluster_sms = f[i].cluster_sms < w.cluster_sms ? f[i].cluster_sms : w.cluster_sms;
        w.free_sms = f[i].free_sms > w.free_sms ? f[i].free_sms : w.free_sms;
        w.simulated |= f[i].simulated;
        if (strcmp(f[i].config, w.config))
            snprintf(w.config, sizeof w.config, "mixed");
        if (f[i].parts != w.parts || strcmp(f[i].part_sms, w.part_sms) || f[i].part_min != w.part_min ||
            f[i].part_max != w.part_max)
            w.parts = 0;
        if (f[i].dies != w.dies)
            w.dies = 0;
        if (f[i].tiers != w.tiers)
            w.tiers = 0;
        if (f[i].granularity != w.granularity)
            w.granularity = 0;
    }
    write_facts(out, "", &w);
    for (int i = 0; i < n; i++) {
        char pre[32];
        snprintf(pre, sizeof pre, "gpu-%d.", i);
        write_facts(out, pre, &f[i]);
    }
done:
    free(f);
    return rc;
}

int gos_labels_save(const gos_chip *const *charts, int n, long expiry_s, int vgpus, const char *path)
{
    /* NFD's watcher reads every file of features.d but dot-files: the temporary
     * one is .NAME.tmp.PID beside it */
    char tmp[4096];
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.tmp.%d", dir, path, path + dir, (int)getpid()) >= (int)sizeof tmp)
        return gos_fail(GOS_EINVAL, "path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return gos_fail(GOS_EIO, "cannot write %s: %m", path);
    int rc = gos_labels_write(charts, n, expiry_s, vgpus, f);
    if (fclose(f) && !rc)
        rc = gos_fail(GOS_EIO, "cannot write %s: %m", path);
    if (!rc && rename(tmp, path))
        rc = gos_fail(GOS_EIO, "cannot write %s: %m", path);
    if (rc)
        unlink(tmp);
    return rc;
}
