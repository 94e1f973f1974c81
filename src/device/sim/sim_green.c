/* SPDX-License-Identifier: Apache-2.0 */
/* sim_green.c: green contexts on the simulated device (green_ops.h).
 *
 * Model of what the H200's driver returns (H200-NOTES; paper 001 section 5.3.1):
 * the minimum partition and the co-scheduling alignment are 8 SMs. Base chunks of
 * 8: per GPC, its cluster-eligible SMs (in the chart's order) cut into chunks of
 * 8, taken round-robin across GPCs (tiled, so no allocation concentrates in a few
 * GPCs); then, per GPC, chunks of 8 of what is left of it (the rest of its
 * eligible SMs with its free-floating ones); SMs left after that form the
 * remainder. A split of min_count (rounded up to a multiple of 8) concatenates
 * consecutive base chunks into groups of min_count; chunks too few for one more
 * group join the remainder. So earlier groups hold cluster-capable SMs and
 * free-floating SMs land in late groups, as the paper observed.
 *
 * Streams are the exec pillar's simulated streams (registered here with their
 * green context); the probe places blocks and clusters from the chip's truth:
 * clusters of K > 2 only on K cluster-eligible SMs of one GPC inside the green
 * context; clusters of 2 on two SMs of one GPC (sim.cluster2 "gpc") or one whole
 * TPC (otherwise) inside it. */
#include "device/exec_ops.h"
#include "device/green_ops.h"
#include "device/sim/sim_internal.h"

#include "common/status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 8
#define MAX_SPLITS 8
#define MAX_GCTX 64
#define MAX_STREAMS 256
enum { STREAM_GREEN = 11 };

struct sim_gctx {
    unsigned char in[GOS_MAX_SMS];
    int n_sms;
};

struct sim_green {
    pthread_mutex_t lock;
    gos_rng rng;
    int n_splits;
    struct gos_green_split *splits[MAX_SPLITS];
    struct sim_gctx *live[MAX_GCTX];
    int n_live;
    struct {
        void *stream;
        struct sim_gctx *g;
    } streams[MAX_STREAMS];
    int n_streams;
};

static void sg_close(gos_device *d)
{
    struct sim_green *s = d->green_priv;
    if (!s)
        return;
    for (int i = 0; i < s->n_splits; i++)
        free(s->splits[i]);
    for (int i = 0; i < s->n_live; i++)
        free(s->live[i]);
    pthread_mutex_destroy(&s->lock);
    free(s);
    d->green_priv = NULL;
}

static struct sim_green *state(gos_device *d)
{
    if (!d->green_priv) {
        struct sim_green *s = calloc(1, sizeof *s);
        if (!s) {
            gos_fail(GOS_ENOMEM, "out of memory");
            return NULL;
        }
        pthread_mutex_init(&s->lock, NULL);
        gos_sim_rng(d, &s->rng, STREAM_GREEN);
        d->green_priv = s;
    }
    return d->green_priv;
}

static int is_eligible(const gos_gpc *G, int sm)
{
    for (int j = 0; j < G->n_cluster; j++)
        if (G->cluster_sms[j] == sm)
            return 1;
    return 0;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Base chunks of ALIGN SMs in the driver's order; returns the count, the
 * remainder's SMs in rem[0..*n_rem). */
static int base_chunks(const gos_chip *c, int chunks[][ALIGN], int *rem, int *n_rem)
{
    int n = 0, used[GOS_MAX_SMS] = {0};
    int next[GOS_MAX_GPCS] = {0};
    for (int progress = 1; progress;) { /* eligible chunks, round-robin over GPCs */
        progress = 0;
        for (int g = 0; g < c->n_gpcs; g++) {
            const gos_gpc *G = &c->gpcs[g];
            if (next[g] + ALIGN <= G->n_cluster) {
                for (int i = 0; i < ALIGN; i++) {
                    chunks[n][i] = G->cluster_sms[next[g] + i];
                    used[chunks[n][i]] = 1;
                }
                next[g] += ALIGN;
                n++;
                progress = 1;
            }
        }
    }
    for (int g = 0; g < c->n_gpcs; g++) { /* the rest of each GPC */
        const gos_gpc *G = &c->gpcs[g];
        int left[GOS_MAX_SMS], nl = 0;
        for (int i = 0; i < G->n_sms; i++) /* eligible leftovers first */
            if (!used[G->sms[i]] && is_eligible(G, G->sms[i]))
                left[nl++] = G->sms[i];
        for (int i = 0; i < G->n_sms; i++)
            if (!used[G->sms[i]] && !is_eligible(G, G->sms[i]))
                left[nl++] = G->sms[i];
        int i = 0;
        for (; i + ALIGN <= nl; i += ALIGN, n++)
            for (int j = 0; j < ALIGN; j++) {
                chunks[n][j] = left[i + j];
                used[left[i + j]] = 1;
            }
    }
    *n_rem = 0;
    for (int g = 0; g < c->n_gpcs; g++)
        for (int i = 0; i < c->gpcs[g].n_sms; i++)
            if (!used[c->gpcs[g].sms[i]])
                rem[(*n_rem)++] = c->gpcs[g].sms[i];
    return n;
}

static int sg_split(gos_device *d, int min_count, const struct gos_green_split **out)
{
    const gos_chip *c = d->chip;
    if (c->n_gpcs == 0)
        return gos_fail(GOS_EUNSUPPORTED, "the simulated chip has no topology: no green-context groups");
    struct sim_green *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    int min = min_count > 0 ? (min_count + ALIGN - 1) / ALIGN * ALIGN : ALIGN;
    pthread_mutex_lock(&s->lock);
    int rc = GOS_OK;
    for (int i = 0; i < s->n_splits; i++)
        if (s->splits[i]->min_count == min) {
            *out = s->splits[i];
            goto done;
        }
    if (min > c->device.sm_count) {
        rc = gos_fail(GOS_EINVAL, "green-context groups of %d: the device has %d SMs", min, c->device.sm_count);
        goto done;
    }
    if (s->n_splits == MAX_SPLITS) {
        rc = gos_fail(GOS_ENOMEM, "more than %d green-context splits", MAX_SPLITS);
        goto done;
    }
    struct gos_green_split *I = calloc(1, sizeof *I);
    static int chunks[GOS_MAX_SMS / ALIGN + 1][ALIGN];
    int rem[GOS_MAX_SMS], n_rem;
    if (!I) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto done;
    }
    int nc = base_chunks(c, chunks, rem, &n_rem), per = min / ALIGN;
    I->min_count = min;
    I->min_partition = ALIGN;
    I->alignment = ALIGN;
    I->total_sms = c->device.sm_count;
    int k = 0;
    for (; k + per <= nc && I->n_groups < GOS_GREEN_MAX_GROUPS - 1; k += per) {
        struct gos_green_group *G = &I->groups[I->n_groups++];
        for (int j = 0; j < per; j++)
            for (int i = 0; i < ALIGN; i++)
                G->sms[G->n_sms++] = chunks[k + j][i];
    }
    struct gos_green_group *R = &I->groups[I->n_groups];
    for (; k < nc; k++)
        for (int i = 0; i < ALIGN; i++)
            R->sms[R->n_sms++] = chunks[k][i];
    for (int i = 0; i < n_rem; i++)
        R->sms[R->n_sms++] = rem[i];
    if (R->n_sms) {
        R->remainder = 1;
        I->n_groups++;
    }
    for (int g = 0; g < I->n_groups; g++)
        qsort(I->groups[g].sms, (size_t)I->groups[g].n_sms, sizeof(int), cmp_int);
    s->splits[s->n_splits++] = I;
    *out = I;
done:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int sg_create(gos_device *d, int min_count, const int *groups, int n, void **out)
{
    const struct gos_green_split *I;
    int rc = sg_split(d, min_count, &I);
    if (rc)
        return rc;
    struct sim_green *s = d->green_priv;
    struct sim_gctx *g = calloc(1, sizeof *g);
    if (!g)
        return gos_fail(GOS_ENOMEM, "out of memory");
    for (int k = 0; k < n; k++)
        for (int i = 0; i < I->groups[groups[k]].n_sms; i++) {
            g->in[I->groups[groups[k]].sms[i]] = 1;
            g->n_sms++;
        }
    pthread_mutex_lock(&s->lock);
    if (s->n_live == MAX_GCTX) {
        pthread_mutex_unlock(&s->lock);
        free(g);
        return gos_fail(GOS_ENOMEM, "more than %d green contexts", MAX_GCTX);
    }
    s->live[s->n_live++] = g;
    pthread_mutex_unlock(&s->lock);
    *out = g;
    return GOS_OK;
}

static int sg_destroy(gos_device *d, void *gctx)
{
    struct sim_green *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    int found = -1;
    for (int i = 0; i < s->n_live; i++)
        if (s->live[i] == gctx)
            found = i;
    if (found >= 0) {
        s->live[found] = s->live[--s->n_live];
        for (int i = 0; i < s->n_streams;)
            if (s->streams[i].g == gctx)
                s->streams[i] = s->streams[--s->n_streams];
            else
                i++;
    }
    pthread_mutex_unlock(&s->lock);
    if (found < 0)
        return gos_fail(GOS_EINVAL, "not a live green context");
    free(gctx);
    return GOS_OK;
}

static int sg_stream_create(gos_device *d, void *gctx, void **stream)
{
    struct sim_green *s = state(d);
    if (!s)
        return GOS_ENOMEM;
    int rc = gos_exec_init(d);
    if (rc || (rc = gos_exec_stream_create(d, stream)))
        return rc;
    pthread_mutex_lock(&s->lock);
    int slot = -1;
    for (int i = 0; i < s->n_streams; i++)
        if (s->streams[i].stream == *stream) /* a destroyed stream's address reused */
            slot = i;
    if (slot < 0 && s->n_streams < MAX_STREAMS)
        slot = s->n_streams++;
    if (slot >= 0) {
        s->streams[slot].stream = *stream;
        s->streams[slot].g = gctx;
    }
    pthread_mutex_unlock(&s->lock);
    if (slot < 0) {
        gos_exec_stream_destroy(d, *stream);
        return gos_fail(GOS_ENOMEM, "more than %d green-context streams", MAX_STREAMS);
    }
    return GOS_OK;
}

static int cluster2_gpc(const gos_chip *c)
{
    json_t *sim = c->json ? json_object_get(c->json, "sim") : NULL;
    json_t *c2 = sim ? json_object_get(sim, "cluster2") : NULL;
    return c2 && json_is_string(c2) && !strcmp(json_string_value(c2), "gpc");
}

static int sg_probe(gos_device *d, void *stream, int cluster, int blocks, unsigned timeout_us,
                    int *sms_out, int *cores_out)
{
    struct sim_green *s = state(d);
    const gos_chip *c = d->chip;
    if (!s)
        return GOS_ENOMEM;
    pthread_mutex_lock(&s->lock);
    struct sim_gctx *g = NULL;
    for (int i = 0; i < s->n_streams; i++)
        if (s->streams[i].stream == stream)
            g = s->streams[i].g;
    if (!g) {
        pthread_mutex_unlock(&s->lock);
        return gos_fail(GOS_EINVAL, "not a green-context stream");
    }
    /* Slots: one cluster each, SM lists from the truth, in a random order. */
    static int slot_sms[GOS_MAX_SMS][16]; /* under s->lock */
    int n_slots = 0;
    int gorder[GOS_MAX_GPCS];
    for (int k = 0; k < c->n_gpcs; k++)
        gorder[k] = k;
    gos_rng_shuffle(&s->rng, gorder, c->n_gpcs);
    for (int k = 0; k < c->n_gpcs; k++) {
        const gos_gpc *G = &c->gpcs[gorder[k]];
        if (cluster == 2 && !cluster2_gpc(c)) {
            for (int t = 0; t < G->n_tpcs; t++)
                if (G->tpcs[t][1] >= 0 && g->in[G->tpcs[t][0]] && g->in[G->tpcs[t][1]]) {
                    slot_sms[n_slots][0] = G->tpcs[t][0];
                    slot_sms[n_slots++][1] = G->tpcs[t][1];
                }
            continue;
        }
        for (int pass = 0; pass < (cluster <= 2 ? 2 : 1); pass++) {
            int v[GOS_MAX_SMS], nv = 0;
            for (int i = 0; i < G->n_sms; i++)
                if (g->in[G->sms[i]] && (cluster == 1 || is_eligible(G, G->sms[i]) == (pass == 0)))
                    v[nv++] = G->sms[i];
            if (cluster == 1 && pass == 1)
                nv = 0;
            gos_rng_shuffle(&s->rng, v, nv);
            for (int i = 0; i + cluster <= nv; i += cluster, n_slots++)
                for (int j = 0; j < cluster; j++)
                    slot_sms[n_slots][j] = v[i + j];
        }
    }
    int clusters = blocks / cluster;
    if (n_slots == 0) {
        pthread_mutex_unlock(&s->lock);
        return gos_fail(GOS_EUNSUPPORTED, "cluster size %d: no cluster fits on the green context's "
                                          "%d SMs", cluster, g->n_sms);
    }
    int fits = clusters <= n_slots;
    for (int b = 0; b < clusters; b++)
        for (int j = 0; j < cluster; j++) {
            sms_out[b * cluster + j] = slot_sms[b % n_slots][j];
            if (cores_out)
                cores_out[b * cluster + j] = fits || b == clusters - 1;
        }
    pthread_mutex_unlock(&s->lock);
    return GOS_OK;
}

const struct gos_green_ops gos_sim_green_ops = {
    .close = sg_close,
    .split = sg_split,
    .create = sg_create,
    .destroy = sg_destroy,
    .stream_create = sg_stream_create,
    .probe = sg_probe,
};
