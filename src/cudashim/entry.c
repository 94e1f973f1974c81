/* entry.c: how programs find the entry points of gpuos's libcuda.so.1 (in the
 * CUDA program's process): cuGetProcAddress (the table of procaddr.c, generated
 * from cuda.h), cuGetExportTable (the runtime's private tables, exports.c), and
 * the entry points that have nothing to do on a vGPU (profiler, RDMA flush). */
#include "cudashim/driver.h"

#include <string.h>

E CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    void *p = shim_proc_lookup(symbol, ptds);
    /* The table holds the newest version of each name; where an older one has
     * another signature, a caller built for an older CUDA gets the older one. */
    if (!strcmp(symbol, "cuCtxCreate") && version < 12050)
        p = version < 11040 ? (void *)cuCtxCreate_v2 : (void *)cuCtxCreate_v3;
    else if (!strcmp(symbol, "cuGetProcAddress") && version < 12000)
        p = (void *)cuGetProcAddress;
    else if (!strcmp(symbol, "cuGraphInstantiate") && version < 12000)
        p = (void *)cuGraphInstantiate_v2;
    else if (!strcmp(symbol, "cuMemcpyBatchAsync") && version < 13000)
        p = ptds ? (void *)cuMemcpyBatchAsync_ptsz : (void *)cuMemcpyBatchAsync; /* with failIdx */
    else if (!strcmp(symbol, "cuStreamGetCaptureInfo") && version < 12030)
        p = version < 11030 ? (ptds ? (void *)cuStreamGetCaptureInfo_ptsz : (void *)cuStreamGetCaptureInfo)
                            : (ptds ? (void *)cuStreamGetCaptureInfo_v2_ptsz : (void *)cuStreamGetCaptureInfo_v2);
    if (shim_trace())
        shim_log("cuGetProcAddress %s version %d flags %llu -> %s", symbol, version, (unsigned long long)flags,
                 p ? "found" : "not found");
    *pfn = p;
    if (status)
        *status = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
E CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

E CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    return shim_export_table(table, (const unsigned char *)id->bytes);
}

E CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget t, CUflushGPUDirectRDMAWritesScope s)
{
    return CUDA_SUCCESS;
}

E CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
E CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }
/* cudaProfiler.h (not included): the mode is an enum, passed as an int */
E CUresult cuProfilerInitialize(const char *config, const char *out, int mode) { return CUDA_SUCCESS; }
