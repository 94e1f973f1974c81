/* SPDX-License-Identifier: Apache-2.0 */
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
    int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, too_old;
    void *p = shim_proc_lookup(symbol, version, ptds, &too_old);
    if (shim_trace())
        shim_log("cuGetProcAddress %s version %d flags %llu -> %s", symbol, version, (unsigned long long)flags,
                 p ? "found" : too_old ? "newer than that version" : "not found");
    *pfn = p;
    if (status)
        *status = p ? CU_GET_PROC_ADDRESS_SUCCESS
                    : too_old ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
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
