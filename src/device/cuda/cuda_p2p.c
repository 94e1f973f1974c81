/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_p2p.c: GPU-to-GPU links between real GPUs (p2p_ops.h): peer access as the
 * driver reports it, copy bandwidth and latency measured with cuMemcpyPeerAsync
 * between events on a stream of the source GPU's context (as CUDA's
 * p2pBandwidthLatencyTest sample does for copies). Peer access is enabled
 * (both directions) when the driver allows it; otherwise the driver stages the
 * copy through the host and the bandwidth shows it. */
#include "device/cuda/cuda_internal.h"
#include "device/p2p_ops.h"

#include "common/status.h"

#include <stdlib.h>

static int cuda_access(gos_device *a, gos_device *b, int *can)
{
    struct gos_cuda *ca = a->priv, *cb = b->priv;
    return CU_CALL(cuDeviceCanAccessPeer, can, ca->dev, cb->dev);
}

/* Enables a's access to b's memory in a's context (idempotent). */
static int enable_peer(gos_device *a, gos_device *b)
{
    int can = 0, rc = cuda_access(a, b, &can);
    if (rc || !can)
        return rc;
    struct gos_cuda *cb = b->priv;
    if ((rc = gos_cuda_enter(a)))
        return rc;
    if (!GOS_CU(cuCtxEnablePeerAccess))
        return gos_cu_missing("cuCtxEnablePeerAccess");
    CUresult r = GOS_CU(cuCtxEnablePeerAccess)(cb->ctx, 0);
    return r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? GOS_OK : gos_cu_check(r, "cuCtxEnablePeerAccess");
}

static int cmp_double(const void *x, const void *y)
{
    double p = *(const double *)x, q = *(const double *)y;
    return (p > q) - (p < q);
}

/* Times `trials` batches of `per_batch` copies of `bytes` from a to b; ms[t] per batch. */
static int time_copies(gos_device *a, gos_device *b, size_t bytes, int trials, int per_batch, double *ms)
{
    struct gos_cuda *ca = a->priv, *cb = b->priv;
    CUdeviceptr src = 0, dst = 0;
    CUstream st = NULL;
    CUevent e0 = NULL, e1 = NULL;
    int rc;
    if ((rc = enable_peer(a, b)) || (rc = enable_peer(b, a)))
        return rc;
    if ((rc = gos_cuda_enter(b)) || (rc = CU_CALL(cuMemAlloc, &dst, bytes)))
        goto fail;
    if ((rc = gos_cuda_enter(a)) || (rc = CU_CALL(cuMemAlloc, &src, bytes)) ||
        (rc = CU_CALL(cuMemsetD8, src, 0x5a, bytes)) ||
        (rc = CU_CALL(cuStreamCreate, &st, CU_STREAM_NON_BLOCKING)) ||
        (rc = CU_CALL(cuEventCreate, &e0, CU_EVENT_DEFAULT)) || (rc = CU_CALL(cuEventCreate, &e1, CU_EVENT_DEFAULT)))
        goto fail;
    /* warm-up: the first copy maps the peer's memory */
    if ((rc = CU_CALL(cuMemcpyPeerAsync, dst, cb->ctx, src, ca->ctx, bytes, st)) ||
        (rc = CU_CALL(cuStreamSynchronize, st)))
        goto fail;
    for (int t = 0; t < trials; t++) {
        float f = 0;
        if ((rc = CU_CALL(cuEventRecord, e0, st)))
            goto fail;
        for (int k = 0; k < per_batch; k++)
            if ((rc = CU_CALL(cuMemcpyPeerAsync, dst, cb->ctx, src, ca->ctx, bytes, st)))
                goto fail;
        if ((rc = CU_CALL(cuEventRecord, e1, st)) || (rc = CU_CALL(cuEventSynchronize, e1)) ||
            (rc = CU_CALL(cuEventElapsedTime, &f, e0, e1)))
            goto fail;
        ms[t] = f;
    }
fail:
    if (e1)
        CU_CALL(cuEventDestroy, e1);
    if (e0)
        CU_CALL(cuEventDestroy, e0);
    if (st)
        CU_CALL(cuStreamDestroy, st);
    if (src)
        CU_CALL(cuMemFree, src);
    if (dst && !gos_cuda_enter(b))
        CU_CALL(cuMemFree, dst);
    return rc;
}

static int cuda_bandwidth(gos_device *a, gos_device *b, size_t bytes, int trials, double *gbps)
{
    double *ms = calloc((size_t)trials, sizeof *ms);
    if (!ms)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = time_copies(a, b, bytes, trials, 1, ms);
    if (!rc) {
        qsort(ms, (size_t)trials, sizeof *ms, cmp_double);
        double med = ms[trials / 2];
        rc = med > 0 ? GOS_OK : gos_fail(GOS_EDEVICE, "p2p bandwidth: a copy took no measurable time");
        *gbps = rc ? 0 : (double)bytes / (med * 1e-3) / 1e9;
    }
    free(ms);
    return rc;
}

static int cuda_latency(gos_device *a, gos_device *b, int trials, double *us)
{
    enum { PER_BATCH = 100 };
    double *ms = calloc((size_t)trials, sizeof *ms);
    if (!ms)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = time_copies(a, b, 4, trials, PER_BATCH, ms);
    if (!rc) {
        qsort(ms, (size_t)trials, sizeof *ms, cmp_double);
        *us = ms[trials / 2] * 1e3 / PER_BATCH;
    }
    free(ms);
    return rc;
}

const struct gos_p2p_ops gos_cuda_p2p_ops = {
    .close = NULL,
    .access = cuda_access,
    .bandwidth = cuda_bandwidth,
    .latency = cuda_latency,
};
