/* launch.c: kernel launches and occupancy of gpuos's libcuda.so.1 (in the CUDA
 * program's process). The kernel's parameters are packed here from its layout
 * in the cubin (image.c) into one buffer, the daemon's launch request; every
 * launch is queued in the client's one queue. */
#include "cudashim/driver.h"

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
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    *n = occupancy(f, threads, dyn);
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
    if (!f || f->magic != MAGIC_FN)
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
    *grid = occupancy(f, best_b, fn ? fn(best_b) : dyn) * S.dev.sm_count;
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
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    size_t per = 233472 / (size_t)blocks;
    *dyn = per > (size_t)f->k.shared_bytes + 1024 ? per - (size_t)f->k.shared_bytes - 1024 : 0;
    return CUDA_SUCCESS;
}

CUresult shim_launch(CUfunction f, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                       unsigned smem, CUstream s, void **params, void **extra)
{
    NEED_CTX();
    if (!f || f->magic != MAGIC_FN)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!stream_ok(s))
        return CUDA_ERROR_INVALID_HANDLE;
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
    return map_rc(queued_one(gpuos_launch(S.g, f->h, &c, buf, len)), "cuLaunchKernel");
}

E CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return shim_launch(f, g, b, NULL, smem, s, params, extra);
}
E CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    if (!cfg)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned g[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
    unsigned b[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ}, cl[3] = {0, 0, 0};
    for (unsigned i = 0; i < cfg->numAttrs; i++) {
        const CUlaunchAttribute *a = &cfg->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            cl[0] = a->value.clusterDim.x;
            cl[1] = a->value.clusterDim.y;
            cl[2] = a->value.clusterDim.z;
        } else if (a->id != CU_LAUNCH_ATTRIBUTE_PRIORITY && a->id != CU_LAUNCH_ATTRIBUTE_IGNORE &&
                   a->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {
            return shim_unsupported("cuLaunchKernelEx (a launch attribute other than clusters, priority)");
        }
    }
    return shim_launch(f, g, b, cl, cfg->sharedMemBytes, cfg->hStream, params, extra);
}

