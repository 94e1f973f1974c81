/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_green.c: green contexts on a real GPU (green_ops.h).
 *
 * One split per minimum group size, kept with its CUdevResource array (the driver
 * accepts in one descriptor only groups of one split instance). Each group's SMs
 * are identified once, by launching kernels/green.cu's probe on a green context
 * of that group alone (4 blocks per SM, one block per SM at a time) until every
 * one of its smCount SMs has been seen (at most 8 launches). */
#include "device/cuda/cuda_internal.h"
#include "device/green_ops.h"

#include "common/status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPLITS 8
#define MAX_GCTX 64
#define PROBE_MAX_BLOCKS (8 * GOS_MAX_SMS)

struct cuda_split {
    struct gos_green_split info;
    CUdevResource res[GOS_GREEN_MAX_GROUPS];
};

struct cuda_green {
    pthread_mutex_t lock;
    int n_splits;
    struct cuda_split *splits[MAX_SPLITS];
    CUgreenCtx live[MAX_GCTX];
    int n_live;
    CUfunction probe;
    CUdeviceptr smids, cores, arrived;
};

static void green_close(gos_device *d)
{
    struct cuda_green *g = d->green_priv;
    if (!g)
        return;
    gos_cuda_enter(d);
    for (int i = 0; i < g->n_live; i++)
        CU_CALL(cuGreenCtxDestroy, g->live[i]);
    if (g->smids)
        CU_CALL(cuMemFree, g->smids);
    if (g->cores)
        CU_CALL(cuMemFree, g->cores);
    if (g->arrived)
        CU_CALL(cuMemFree, g->arrived);
    for (int i = 0; i < g->n_splits; i++)
        free(g->splits[i]);
    pthread_mutex_destroy(&g->lock);
    free(g);
    d->green_priv = NULL;
}

static struct cuda_green *state(gos_device *d)
{
    if (!d->green_priv) {
        struct cuda_green *g = calloc(1, sizeof *g);
        if (!g) {
            gos_fail(GOS_ENOMEM, "out of memory");
            return NULL;
        }
        pthread_mutex_init(&g->lock, NULL);
        d->green_priv = g;
    }
    return d->green_priv;
}

static int probe_state(gos_device *d, struct cuda_green *g)
{
    if (g->probe)
        return GOS_OK;
    int rc;
    if ((rc = gos_cuda_function(d, "green", "gos_green_probe", &g->probe)) ||
        (rc = CU_CALL(cuMemAlloc, &g->smids, sizeof(int) * PROBE_MAX_BLOCKS)) ||
        (rc = CU_CALL(cuMemAlloc, &g->cores, sizeof(int) * PROBE_MAX_BLOCKS)) ||
        (rc = CU_CALL(cuMemAlloc, &g->arrived, 64))) {
        g->probe = NULL;
        return rc;
    }
    return GOS_OK;
}

static int run_probe(gos_device *d, struct cuda_green *g, CUstream st, int cluster, int blocks,
                     unsigned long long timeout_ns, unsigned long long hold_ns, int *sms, int *cores)
{
    int rc = probe_state(d, g);
    if (rc)
        return rc;
    int optin = d->info.max_smem_per_block_optin;
    unsigned smem = (unsigned)(optin > 0 ? optin - 1024 : 200 * 1024);
    unsigned total = (unsigned)blocks;
    void *params[] = {&g->smids, &g->cores, &g->arrived, &total, &timeout_ns, &hold_ns};
    if ((rc = CU_CALL(cuMemsetD32Async, g->smids, 0xffffffffu, (size_t)blocks, st)) ||
        (rc = CU_CALL(cuMemsetD32Async, g->arrived, 0, 1, st)) ||
        (rc = gos_cuda_launch(g->probe, total, 32, cluster > 1 ? (unsigned)cluster : 0, smem, st, params)) ||
        (rc = CU_CALL(cuStreamSynchronize, st)) ||
        (rc = CU_CALL(cuMemcpyDtoH, sms, g->smids, sizeof(int) * (size_t)blocks)) ||
        (cores && (rc = CU_CALL(cuMemcpyDtoH, cores, g->cores, sizeof(int) * (size_t)blocks))))
        return rc;
    for (int i = 0; i < blocks; i++)
        if (sms[i] < 0 || sms[i] >= d->info.sm_count)
            return gos_fail(GOS_EDEVICE, "green probe: block %d reported SM %d", i, sms[i]);
    return GOS_OK;
}

static int make_gctx(gos_device *d, struct cuda_split *s, const int *groups, int n, CUgreenCtx *out)
{
    struct gos_cuda *c = d->priv;
    CUdevResource res[GOS_GREEN_MAX_GROUPS];
    for (int i = 0; i < n; i++)
        res[i] = s->res[groups[i]];
    CUdevResourceDesc desc;
    int rc;
    if ((rc = CU_CALL(cuDevResourceGenerateDesc, &desc, res, (unsigned)n)) ||
        (rc = CU_CALL(cuGreenCtxCreate, out, desc, c->dev, CU_GREEN_CTX_DEFAULT_STREAM)))
        return rc;
    return GOS_OK;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Finds the SMs of group k by probing a green context of it alone. */
static int identify(gos_device *d, struct cuda_green *g, struct cuda_split *s, int k)
{
    struct gos_green_group *G = &s->info.groups[k];
    int want = (int)s->res[k].sm.smCount;
    CUgreenCtx gc = NULL;
    CUstream st = NULL;
    int rc = make_gctx(d, s, &k, 1, &gc);
    if (rc)
        return gos_fail(rc, "green-context group %d (%d SMs): %s", k, want, gos_last_error());
    if ((rc = CU_CALL(cuGreenCtxStreamCreate, &st, gc, CU_STREAM_NON_BLOCKING, 0)))
        goto fail_gctx;
    unsigned char seen[GOS_MAX_SMS] = {0};
    int n_seen = 0, blocks = 4 * want;
    if (blocks > PROBE_MAX_BLOCKS)
        blocks = PROBE_MAX_BLOCKS;
    static int sms[PROBE_MAX_BLOCKS];
    for (int launch = 0; launch < 8 && n_seen < want; launch++) {
        if ((rc = run_probe(d, g, st, 1, blocks, 0, 30000, sms, NULL)))
            goto fail_stream;
        for (int i = 0; i < blocks; i++)
            if (!seen[sms[i]]) {
                seen[sms[i]] = 1;
                n_seen++;
            }
    }
    if (n_seen != want) {
        rc = gos_fail(GOS_EDEVICE, "green-context group %d has %d SMs but its kernels ran on %d "
                                   "(is another program using the GPU?)", k, want, n_seen);
        goto fail_stream;
    }
    G->n_sms = 0;
    for (int i = 0; i < GOS_MAX_SMS; i++)
        if (seen[i])
            G->sms[G->n_sms++] = i;
    qsort(G->sms, (size_t)G->n_sms, sizeof(int), cmp_int);
fail_stream:
    gos_cuda_enter(d);
    CU_CALL(cuStreamDestroy, st);
fail_gctx:
    CU_CALL(cuGreenCtxDestroy, gc);
    return rc;
}

static int green_split_locked(gos_device *d, struct cuda_green *g, int min_count,
                              const struct gos_green_split **out)
{
    struct gos_cuda *c = d->priv;
    CUdevResource all;
    int rc;
    if ((rc = gos_cuda_enter(d)) ||
        (rc = CU_CALL(cuDeviceGetDevResource, c->dev, &all, CU_DEV_RESOURCE_TYPE_SM)))
        return rc;
    unsigned min = min_count > 0 ? (unsigned)min_count : all.sm.minSmPartitionSize;
    for (int i = 0; i < g->n_splits; i++)
        if (g->splits[i]->info.min_count == (int)min) {
            *out = &g->splits[i]->info;
            return GOS_OK;
        }
    if (g->n_splits == MAX_SPLITS)
        return gos_fail(GOS_ENOMEM, "more than %d green-context splits", MAX_SPLITS);
    struct cuda_split *s = calloc(1, sizeof *s);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of memory");
    unsigned nb = 0;
    CUdevResource rem;
    memset(&rem, 0, sizeof rem);
    if ((rc = CU_CALL(cuDevSmResourceSplitByCount, NULL, &nb, &all, NULL, 0, min)))
        goto fail;
    if (nb < 1 || nb >= GOS_GREEN_MAX_GROUPS) {
        rc = gos_fail(GOS_EUNSUPPORTED, "splitting %u SMs into groups of %u gives %u groups",
                      all.sm.smCount, min, nb);
        goto fail;
    }
    if ((rc = CU_CALL(cuDevSmResourceSplitByCount, s->res, &nb, &all, &rem, 0, min)))
        goto fail;
    struct gos_green_split *I = &s->info;
    I->min_count = (int)min;
    I->min_partition = (int)all.sm.minSmPartitionSize;
    I->alignment = (int)all.sm.smCoscheduledAlignment;
    I->total_sms = (int)all.sm.smCount;
    I->n_groups = (int)nb;
    if (rem.sm.smCount > 0) {
        s->res[nb] = rem;
        I->groups[nb].remainder = 1;
        I->n_groups++;
    }
    for (int k = 0; k < I->n_groups; k++)
        if ((rc = identify(d, g, s, k)))
            goto fail;
    /* Disjointness: the driver promises it; a probe that says otherwise is wrong. */
    unsigned char owner[GOS_MAX_SMS] = {0};
    for (int k = 0; k < I->n_groups; k++)
        for (int i = 0; i < I->groups[k].n_sms; i++) {
            int sm = I->groups[k].sms[i];
            if (owner[sm]) {
                rc = gos_fail(GOS_EDEVICE, "green-context groups %d and %d both ran on SM %d",
                              owner[sm] - 1, k, sm);
                goto fail;
            }
            owner[sm] = (unsigned char)(k + 1);
        }
    g->splits[g->n_splits++] = s;
    *out = I;
    return GOS_OK;
fail:
    free(s);
    return rc;
}

static int green_split(gos_device *d, int min_count, const struct gos_green_split **out)
{
    struct cuda_green *g = state(d);
    if (!g)
        return GOS_ENOMEM;
    pthread_mutex_lock(&g->lock);
    int rc = green_split_locked(d, g, min_count, out);
    pthread_mutex_unlock(&g->lock);
    return rc;
}

static int green_create(gos_device *d, int min_count, const int *groups, int n, void **out)
{
    const struct gos_green_split *info;
    int rc = green_split(d, min_count, &info);
    if (rc)
        return rc;
    struct cuda_green *g = d->green_priv;
    pthread_mutex_lock(&g->lock);
    struct cuda_split *s = NULL;
    for (int i = 0; i < g->n_splits; i++)
        if (&g->splits[i]->info == info)
            s = g->splits[i];
    CUgreenCtx gc = NULL;
    if (g->n_live == MAX_GCTX)
        rc = gos_fail(GOS_ENOMEM, "more than %d green contexts", MAX_GCTX);
    else if (!(rc = make_gctx(d, s, groups, n, &gc)))
        g->live[g->n_live++] = gc;
    pthread_mutex_unlock(&g->lock);
    *out = gc;
    return rc;
}

static int green_destroy(gos_device *d, void *gctx)
{
    struct cuda_green *g = state(d);
    if (!g)
        return GOS_ENOMEM;
    pthread_mutex_lock(&g->lock);
    int found = -1;
    for (int i = 0; i < g->n_live; i++)
        if (g->live[i] == (CUgreenCtx)gctx)
            found = i;
    if (found >= 0)
        g->live[found] = g->live[--g->n_live];
    pthread_mutex_unlock(&g->lock);
    if (found < 0)
        return gos_fail(GOS_EINVAL, "not a live green context");
    return CU_CALL(cuGreenCtxDestroy, (CUgreenCtx)gctx);
}

static int green_stream_create(gos_device *d, void *gctx, void **stream)
{
    CUstream st = NULL;
    int rc = gos_cuda_enter(d);
    if (!rc)
        rc = CU_CALL(cuGreenCtxStreamCreate, &st, (CUgreenCtx)gctx, CU_STREAM_NON_BLOCKING, 0);
    *stream = st;
    return rc;
}

static int green_probe(gos_device *d, void *stream, int cluster, int blocks, unsigned timeout_us,
                       int *sms_out, int *cores_out)
{
    struct cuda_green *g = state(d);
    if (!g)
        return GOS_ENOMEM;
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    pthread_mutex_lock(&g->lock);
    rc = run_probe(d, g, (CUstream)stream, cluster, blocks, (unsigned long long)timeout_us * 1000ull, 0,
                   sms_out, cores_out);
    pthread_mutex_unlock(&g->lock);
    return rc;
}

const struct gos_green_ops gos_cuda_green_ops = {
    .close = green_close,
    .split = green_split,
    .create = green_create,
    .destroy = green_destroy,
    .stream_create = green_stream_create,
    .probe = green_probe,
};
