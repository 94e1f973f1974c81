/* SPDX-License-Identifier: Apache-2.0 */
/* launch.c: kernel launches and occupancy of gpuos's libcuda.so.1 (in the CUDA
 * program's process). The kernel's parameters are packed here from its layout
 * in the cubin (image.c) into one buffer, the daemon's launch request; every
 * launch is queued in the client's one queue. */
#include "cudashim/driver.h"
#include "device/gpc_clusters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Occupancy from the kernel's registers and shared memory (cc 9.x limits). */
static int occupancy(const struct CUfunc_st *f, int threads, size_t dyn)
{
    if (threads <= 0)
        return 0;
    int warps = (threads + 31) / 32, by_threads = 2048 / (warps * 32), by_blocks = 32;
    int regs = f->k.regs ? f->k.regs : 32;
    int regs_per_warp = ((regs * 32) + 255) & ~255;
    int by_regs = 65536 / (regs_per_warp * warps);
    size_t smem = (size_t)f->k.shared_bytes + dyn + 1024;
    int by_smem = (int)(233472 / smem);
    int n = by_threads < by_blocks ? by_threads : by_blocks;
    n = by_regs < n ? by_regs : n;
    return by_smem < n ? by_smem : n;
}

E CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t dyn)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *n = occupancy(f, threads, dyn);
    if (shim_trace() >= 2)
        shim_log("cuOccupancyMaxActiveBlocksPerMultiprocessor %.80s, %d threads, %zu dynamic = %d", f->name, threads,
                 dyn, *n);
    return CUDA_SUCCESS;
}
E CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f, int threads, size_t dyn,
                                                                 unsigned int flags)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, threads, dyn);
}
E CUresult cuOccupancyMaxPotentialBlockSize(int *grid, int *block, CUfunction f, CUoccupancyB2DSize fn, size_t dyn,
                                            int limit)
{
    if (!grid || !block)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    int best = 0, best_b = 32;
    int maxb = limit > 0 && limit < 1024 ? limit : 1024;
    for (int b = 32; b <= maxb; b += 32) {
        size_t d = fn ? fn(b) : dyn;
        int occ = occupancy(f, b, d) * b;
        if (occ > best) {
            best = occ;
            best_b = b;
        }
    }
    *block = best_b;
    *grid = occupancy(f, best_b, fn ? fn(best_b) : dyn) * shim_proc.dev.sm_count;
    if (shim_trace() >= 2)
        shim_log("cuOccupancyMaxPotentialBlockSize %.80s = grid %d block %d", f->name, *grid, *block);
    return CUDA_SUCCESS;
}
E CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *grid, int *block, CUfunction f, CUoccupancyB2DSize fn,
                                                     size_t dyn, int limit, unsigned int flags)
{
    return cuOccupancyMaxPotentialBlockSize(grid, block, f, fn, dyn, limit);
}
E CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dyn, CUfunction f, int blocks, int threads)
{
    if (!dyn || blocks <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    size_t per = 233472 / (size_t)blocks;
    *dyn = per > (size_t)f->k.shared_bytes + 1024 ? per - (size_t)f->k.shared_bytes - 1024 : 0;
    if (shim_trace() >= 2)
        shim_log("cuOccupancyAvailableDynamicSMemPerBlock %.80s, %d blocks = %zu", f->name, blocks, *dyn);
    return CUDA_SUCCESS;
}

CUresult shim_launch(CUfunction f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                       unsigned smem, CUstream s, void **params, void **extra)
{
    NEED_CTX();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult lazy = shim_func_resolve(f);
    if (lazy)
        return lazy;
    if ((unsigned long long)block[0] * block[1] * block[2] > 1024 || !grid[0] || !grid[1] || !grid[2] || !block[0] ||
        !block[1] || !block[2])
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char buf[GOS_PARAM_BUF];
    size_t len = 0;
    if (extra) {
        void *ptr = NULL;
        size_t n = 0;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                ptr = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                n = *(size_t *)extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (n > sizeof buf || (n && !ptr))
            return CUDA_ERROR_INVALID_VALUE;
        if (n)
            memcpy(buf, ptr, n);
        len = n;
    } else if (f->k.nparams > 0) {
        if (!f->k.found) {
            shim_log("%s: parameter layout unknown: %s", f->name, f->why);
            return shim_unsupported("cuLaunchKernel (kernel parameters without a cubin layout)");
        }
        if (!params)
            return CUDA_ERROR_INVALID_VALUE;
        /* the whole parameter bank as the cubin sizes it (padding zeroed) */
        size_t bank = f->k.param_bytes > 0 && (size_t)f->k.param_bytes <= sizeof buf ? (size_t)f->k.param_bytes : 0;
        memset(buf, 0, bank);
        len = bank;
        for (int i = 0; i < f->k.nparams; i++) {
            size_t end = (size_t)f->k.off[i] + f->k.size[i];
            if (end > sizeof buf)
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(buf + f->k.off[i], params[i], f->k.size[i]);
            if (end > len)
                len = end;
        }
    } else if (!f->k.found && f->k.nparams == 0 && !f->mod->builtin && f->why[0] && params) {
        shim_log("%s: parameter layout unknown: %s", f->name, f->why);
        return shim_unsupported("cuLaunchKernel (kernel parameters without a cubin layout)");
    }
    gpuos_launch_config c = {.shared_mem = smem};
    for (int i = 0; i < 3; i++) {
        c.grid[i] = grid[i];
        c.block[i] = block[i];
        c.cluster[i] = cluster ? cluster[i] : 0;
    }
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        c.priority = -s->priority; /* CUDA: lower number = higher priority */
    if (shim_trace() && !__atomic_exchange_n(&f->traced, 1, __ATOMIC_RELAXED)) { /* its first launch */
        char hex[2 * 96 + 1] = "";
        for (size_t i = 0; i < len && i < 96; i++)
            snprintf(hex + 2 * i, 3, "%02x", buf[i]);
        shim_log("launch %s: grid %u,%u,%u block %u,%u,%u cluster %u,%u,%u smem %u; %d parameters (%s), %zu bytes: %s%s",
                 f->name, grid[0], grid[1], grid[2], block[0], block[1], block[2], c.cluster[0], c.cluster[1],
                 c.cluster[2], smem, f->k.nparams, extra ? "packed by the caller" : f->k.found ? "cubin layout" : "none",
                 len, hex, len > 96 ? "..." : "");
    }
    if (shim_capturing(s))
        return shim_capture_kernel(f->h, &c, buf, len);
    shim_hf_before(1);
    return map_rc(queued_one(gpuos_launch(shim_proc.g, f->h, &c, buf, len)), "cuLaunchKernel");
}

E CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return shim_launch(f, g, b, NULL, smem, s, params, extra);
}
/* cuLaunchKernelEx: clusters and priority are carried out; the hints that only
 * allow overlap or tune caches (programmatic serialization, sync domains,
 * access policy, carve-out) are safe to drop with one ordered queue; the
 * events a launch triggers are recorded after it (later than CUDA may, never
 * earlier). A cooperative launch needs the daemon's driver to launch it so. */
E CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    if (!cfg || (cfg->numAttrs && !cfg->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned g[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
    unsigned b[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ}, cl[3] = {0, 0, 0};
    CUevent after[2] = {NULL, NULL};
    for (unsigned i = 0; i < cfg->numAttrs; i++) {
        const CUlaunchAttribute *a = &cfg->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            cl[0] = a->value.clusterDim.x;
            cl[1] = a->value.clusterDim.y;
            cl[2] = a->value.clusterDim.z;
            break;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: after[0] = a->value.programmaticEvent.event; break;
        case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: after[1] = a->value.launchCompletionEvent.event; break;
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            if (a->value.cooperative)
                return shim_unsupported("cuLaunchKernelEx (cooperative launch: grid-wide sync needs the daemon to launch it so)");
            break;
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
            break;
        default: return shim_unsupported("cuLaunchKernelEx (this launch attribute)");
        }
    }
    CUresult r = shim_launch(f, g, b, cl, cfg->sharedMemBytes, cfg->hStream, params, extra);
    for (int i = 0; i < 2 && !r; i++)
        if (after[i])
            r = cuEventRecord(after[i], cfg->hStream);
    return r;
}


/* ------------------------------------------------------------------ */
/* The CUDA 4 execution control API (deprecated, still exported): the block
 * shape, the dynamic shared memory and the parameter buffer are kept with the
 * function until cuLaunch / cuLaunchGrid[Async], which launch it with that
 * buffer as the packed parameters (CU_LAUNCH_PARAM_BUFFER_POINTER). */

E CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z)
{
    NEED_INIT();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (x <= 0 || y <= 0 || z <= 0 || (long long)x * y * z > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    f->block[0] = x;
    f->block[1] = y;
    f->block[2] = z;
    return CUDA_SUCCESS;
}

E CUresult cuFuncSetSharedSize(CUfunction f, unsigned int bytes)
{
    NEED_INIT();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    f->shared = bytes;
    return CUDA_SUCCESS;
}

E CUresult cuParamSetSize(CUfunction f, unsigned int bytes)
{
    NEED_INIT();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (bytes > sizeof f->params)
        return CUDA_ERROR_INVALID_VALUE;
    f->param_size = bytes;
    return CUDA_SUCCESS;
}

E CUresult cuParamSetv(CUfunction f, int offset, void *ptr, unsigned int bytes)
{
    NEED_INIT();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (offset < 0 || (!ptr && bytes) || (size_t)offset + bytes > sizeof f->params)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(f->params + offset, ptr, bytes);
    return CUDA_SUCCESS;
}

E CUresult cuParamSeti(CUfunction f, int offset, unsigned int value) { return cuParamSetv(f, offset, &value, sizeof value); }
E CUresult cuParamSetf(CUfunction f, int offset, float value) { return cuParamSetv(f, offset, &value, sizeof value); }

E CUresult cuParamSetTexRef(CUfunction f, int texunit, CUtexref t)
{
    return shim_unsupported("cuParamSetTexRef (texture references: the vGPU has no texture units to bind)");
}

static CUresult launch_grid(CUfunction f, int w, int h, CUstream s)
{
    NEED_CTX();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    if (w <= 0 || h <= 0 || !f->block[0])
        return CUDA_ERROR_INVALID_VALUE; /* no cuFuncSetBlockShape before */
    size_t n = f->param_size;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, f->params, CU_LAUNCH_PARAM_BUFFER_SIZE, &n, CU_LAUNCH_PARAM_END};
    const unsigned g[3] = {(unsigned)w, (unsigned)h, 1};
    const unsigned b[3] = {(unsigned)f->block[0], (unsigned)f->block[1], (unsigned)f->block[2]};
    return shim_launch(f, g, b, NULL, f->shared, s, NULL, extra);
}

E CUresult cuLaunch(CUfunction f) { return launch_grid(f, 1, 1, NULL); }
E CUresult cuLaunchGrid(CUfunction f, int w, int h) { return launch_grid(f, w, h, NULL); }
E CUresult cuLaunchGridAsync(CUfunction f, int w, int h, CUstream s) { return launch_grid(f, w, h, s); }

E CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig c)
{
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    return (unsigned)c <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Clusters: the cluster size in the launch configuration's attributes (-1
 * when none). */
static long config_cluster(const CUlaunchConfig *cfg)
{
    for (unsigned i = 0; cfg->attrs && i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            return (long)cfg->attrs[i].value.clusterDim.x * cfg->attrs[i].value.clusterDim.y *
                   cfg->attrs[i].value.clusterDim.z;
    return -1;
}

/* How many clusters of the configuration's size can run at once: the GPCs'
 * sizes from the table of clusters at one block per SM that the daemon's
 * device measured (GPUOS_ATTR_CLUSTERS, 1..GPUOS_ATTR_CLUSTERS_MAX blocks),
 * then floor(k g / cs) clusters in each GPC of g >= cs SMs at k blocks per SM
 * (device/gpc_clusters.h). cuBLAS reads the GPCs' sizes from the answers at
 * 3..32 blocks before its first GEMM and picks its kernels' cluster shapes by
 * them. 0 when the table is not known or of no set of GPCs (an old daemon). */
_Static_assert(CU_DEVICE_ATTRIBUTE_MAX <= GPUOS_ATTR_CLUSTERS, "CUDA's attribute numbers reach the clusters table");
static int clusters_measured(int cs, int per_sm, int *n)
{
    int32_t t[GPUOS_ATTR_CLUSTERS_MAX];
    int h[GPUOS_ATTR_CLUSTERS_MAX + 1];
    for (int c = 1; c <= GPUOS_ATTR_CLUSTERS_MAX; c++) {
        int v;
        if (shim_ext_attribute(shim_proc.g, GPUOS_ATTR_CLUSTERS + c - 1, &v) || v < 0)
            return 0;
        t[c - 1] = v;
    }
    if (!gos_gpc_sizes(t, GPUOS_ATTR_CLUSTERS_MAX, h))
        return 0;
    *n = (int)gos_gpc_clusters(h, GPUOS_ATTR_CLUSTERS_MAX, cs, per_sm);
    return 1;
}

E CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *cfg)
{
    if (!n || !cfg)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    /* As driver 580 answers on an H200 (tests/gpu/progs/drv_answers.c, which
     * cuBLAS's probing of every cluster shape before its first GEMM depends on):
     * no cluster in the configuration (and none required by the kernel, which
     * gpuos does not read): 0; an empty one: an error; above 8 blocks without
     * the non-portable size allowed: an error; with it, as many as the GPCs
     * hold, also above 16 (2 of 17 and 18 blocks on an H200: its two GPCs of
     * 18 SMs); at most 8 blocks of a cluster on one SM. */
    long cs = config_cluster(cfg);
    int threads = (int)(cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ);
    if (cs < 0) {
        *n = 0;
        return CUDA_SUCCESS;
    }
    if (!cs || threads <= 0 || (cs > 8 && !f->nonportable))
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    int per_sm = occupancy(f, threads, cfg->sharedMemBytes);
    per_sm = per_sm > 8 ? 8 : per_sm;
    if (cs > GPUOS_ATTR_CLUSTERS_MAX) {
        *n = 0; /* no GPC is that large */
    } else if (!clusters_measured((int)cs, per_sm, n)) {
        int sms = shim_proc.dev.sm_count > 0 ? shim_proc.dev.sm_count : 1, gpcs = (sms + 15) / 16,
            sm_per_gpc = sms / gpcs;
        *n = gpcs * (per_sm * sm_per_gpc / (int)cs);
    }
    if (shim_trace() >= 2)
        shim_log("cuOccupancyMaxActiveClusters %.80s, cluster %ld, %d threads = %d", f->name, cs, threads, *n);
    return CUDA_SUCCESS;
}

E CUresult cuOccupancyMaxPotentialClusterSize(int *size, CUfunction f, const CUlaunchConfig *cfg)
{
    if (!size || !cfg)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (!func_ok(f))
        return CUDA_ERROR_INVALID_HANDLE;
    *size = shim_proc.dev.cc_major >= 9 ? (f->nonportable ? 16 : 8) : 1; /* 16 needs the non-portable size allowed */
    return CUDA_SUCCESS;
}
