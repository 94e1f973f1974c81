/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_topo.c: the pillar-1a primitives on a real GPU (topo_ops.h, kernels/topology.cu).
 *
 * cluster_probe: one launch of gos_cluster_probe with the requested cluster size
 * and as many co-resident clusters as the occupancy API allows, twice over (the
 * second wave lands where the first wave's clusters finish first, which varies).
 * l2_bandwidth: one launch of gos_l2_bandwidth over a 16 MiB L2-resident buffer:
 * the chosen SMs read during one common 200 us window; bandwidth = their bytes /
 * window. (An earlier version gave every SM a fixed amount of work and divided by
 * first start to last end: the slowest SM then sets the window and SMs that could
 * go faster appear to add nothing.) */
#include "device/cuda/cuda_internal.h"
#include "device/topo_ops.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#define L2BW_BYTES (16u << 20)
#define L2BW_THREADS 1024
#define L2BW_LEAD_NS 30000ull
#define L2BW_WINDOW_NS 200000ull

struct cuda_topo {
    CUfunction probe, bw;
    CUdeviceptr smids;    /* int[max blocks] */
    CUdeviceptr buf;      /* L2BW_BYTES */
    CUdeviceptr bytes;    /* u64[256] bytes per SM, then u64 t_start */
    CUdeviceptr sink;
    int max_blocks;
    unsigned launches;
};

static void topo_close(gos_device *d)
{
    struct cuda_topo *t = d->topo_priv;
    if (!t)
        return;
    CUdeviceptr ptrs[] = {t->smids, t->buf, t->bytes, t->sink};
    gos_cuda_free_ptrs(ptrs, sizeof ptrs / sizeof ptrs[0]);
    free(t);
    d->topo_priv = NULL;
}

static int topo_state(gos_device *d, struct cuda_topo **out)
{
    int fresh, rc = gos_cuda_pillar_state(d, &d->topo_priv, sizeof(struct cuda_topo), &fresh);
    struct cuda_topo *t = d->topo_priv;
    if (rc || !fresh) {
        *out = t;
        return rc;
    }
    t->max_blocks = 4 * d->info.sm_count + 64;
    if ((rc = gos_cuda_function(d, "topology", "gos_cluster_probe", &t->probe)) ||
        (rc = gos_cuda_function(d, "topology", "gos_l2_bandwidth", &t->bw)) ||
        (rc = CU_CALL(cuMemAlloc, &t->smids, sizeof(int) * (size_t)t->max_blocks)) ||
        (rc = CU_CALL(cuMemAlloc, &t->buf, L2BW_BYTES)) ||
        (rc = CU_CALL(cuMemAlloc, &t->bytes, sizeof(unsigned long long) * 257)) ||
        (rc = CU_CALL(cuMemAlloc, &t->sink, 64)) ||
        (rc = CU_CALL(cuMemsetD32, t->buf, 0x5a5a5a5a, L2BW_BYTES / 4))) {
        topo_close(d);
        return rc;
    }
    *out = t;
    return GOS_OK;
}

/* Dynamic shared memory that leaves room for exactly one block per SM. */
static unsigned one_block_smem(gos_device *d)
{
    int optin = d->info.max_smem_per_block_optin;
    return (unsigned)(optin > 0 ? optin - 1024 : 200 * 1024);
}

static int cuda_cluster_probe(gos_device *d, int cs, int *sms_out, int max_blocks, int *n_blocks)
{
    struct cuda_topo *t;
    int rc = topo_state(d, &t);
    if (rc)
        return rc;
    unsigned smem = one_block_smem(d);
    if ((rc = CU_CALL(cuFuncSetAttribute, t->probe, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem)))
        return rc;
    if (cs > 8 && (rc = CU_CALL(cuFuncSetAttribute, t->probe,
                                CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)))
        return rc;
    int clusters = d->info.sm_count / cs;
    if (cs > 1) {
        CUlaunchAttribute a;
        memset(&a, 0, sizeof a);
        a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a.value.clusterDim.x = (unsigned)cs;
        a.value.clusterDim.y = a.value.clusterDim.z = 1;
        CUlaunchConfig cfg = {0};
        cfg.gridDimX = (unsigned)(cs * clusters);
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 32;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.sharedMemBytes = smem;
        cfg.attrs = &a;
        cfg.numAttrs = 1;
        int active = 0;
        if ((rc = CU_CALL(cuOccupancyMaxActiveClusters, &active, t->probe, &cfg)))
            return gos_fail(rc, "clusters of %d: %s", cs, gos_last_error());
        if (active < 1)
            return gos_fail(GOS_EUNSUPPORTED, "the GPU cannot host clusters of %d blocks", cs);
        clusters = active;
    }
    int blocks = 2 * clusters * cs;
    if (blocks > t->max_blocks)
        blocks = t->max_blocks / cs * cs;
    if (blocks > max_blocks)
        blocks = max_blocks / cs * cs;
    if (blocks < cs)
        return gos_fail(GOS_EINVAL, "no room for one cluster of %d", cs);
    unsigned long long spin = 20000;
    unsigned seed = ++t->launches * 7919u + (unsigned)cs;
    void *params[] = {&t->smids, &spin, &seed};
    if ((rc = CU_CALL(cuMemsetD32, t->smids, 0xffffffffu, (size_t)blocks)) ||
        (rc = gos_cuda_launch(t->probe, (unsigned)blocks, 32, cs > 1 ? (unsigned)cs : 0, smem, NULL, params)) ||
        (rc = CU_CALL(cuCtxSynchronize)) ||
        (rc = CU_CALL(cuMemcpyDtoH, sms_out, t->smids, sizeof(int) * (size_t)blocks)))
        return rc;
    for (int i = 0; i < blocks; i++)
        if (sms_out[i] < 0 || sms_out[i] >= d->info.sm_count)
            return gos_fail(GOS_EDEVICE, "cluster probe: block %d reported SM %d", i, sms_out[i]);
    *n_blocks = blocks;
    return GOS_OK;
}

static int cuda_l2_bandwidth(gos_device *d, const int *sms, int n, double *gbps)
{
    struct cuda_topo *t;
    int rc = topo_state(d, &t);
    if (rc)
        return rc;
    struct {
        unsigned w[8];
    } mask = {{0}};
    for (int i = 0; i < n; i++)
        mask.w[sms[i] >> 5] |= 1u << (sms[i] & 31);
    unsigned n_chunks = L2BW_BYTES / (16 * 8 * L2BW_THREADS);
    unsigned long long lead = L2BW_LEAD_NS, window = L2BW_WINDOW_NS;
    CUdeviceptr t_start = t->bytes + 256 * sizeof(unsigned long long);
    void *params[] = {&t->buf, &n_chunks, &mask, &lead, &window, &t_start, &t->bytes, &t->sink};
    unsigned long long bytes[256];
    if ((rc = CU_CALL(cuMemsetD32, t->bytes, 0, 257 * 2)) ||
        (rc = gos_cuda_launch(t->bw, (unsigned)d->info.sm_count, L2BW_THREADS, 0,
                              one_block_smem(d), NULL, params)) ||
        (rc = CU_CALL(cuCtxSynchronize)) ||
        (rc = CU_CALL(cuMemcpyDtoH, bytes, t->bytes, sizeof bytes)))
        return rc;
    double total = 0;
    for (int i = 0; i < n; i++) {
        if (!bytes[sms[i]])
            return gos_fail(GOS_EDEVICE, "L2 bandwidth: SM %d read nothing in the window (one block "
                                         "per SM was not achieved: is another program using the GPU?)", sms[i]);
        total += (double)bytes[sms[i]];
    }
    *gbps = total / (double)L2BW_WINDOW_NS;
    return GOS_OK;
}

const struct gos_topo_ops gos_cuda_topo_ops = {
    .close = topo_close,
    .cluster_probe = cuda_cluster_probe,
    .l2_bandwidth = cuda_l2_bandwidth,
};
