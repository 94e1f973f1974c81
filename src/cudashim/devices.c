/* SPDX-License-Identifier: Apache-2.0 */
/* devices.c: devices and their attributes (gpuos's libcuda.so.1, in the CUDA
 * program's process). Device 0 is the vGPU's device: its name, UUID and compute
 * capability are the daemon's device's, its memory total the vGPU's share;
 * attributes come from the daemon's device (DEVICE_ATTRS, daemon_ext.c), the
 * compute capability 9.x table answering the rest. */
#include "cudashim/driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

E CUresult cuDeviceGetCount(int *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *n = 1;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    snprintf(name, (size_t)len, "%s", shim_proc.dev.name);
    return CUDA_SUCCESS;
}

static void parse_uuid(const char *s, unsigned char out[16])
{
    memset(out, 0, 16);
    if (!strncmp(s, "GPU-", 4))
        s += 4;
    for (int i = 0; i < 16 && *s;) {
        if (*s == '-') {
            s++;
            continue;
        }
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[i++] = (unsigned char)v;
        s += 2;
    }
}

E CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    if (!u)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    parse_uuid(shim_proc.dev.uuid, (unsigned char *)u->bytes);
    return CUDA_SUCCESS;
}

E CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *bytes = shim_proc.quota;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice d)
{
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    *major = shim_proc.dev.cc_major;
    *minor = shim_proc.dev.cc_minor;
    return CUDA_SUCCESS;
}

/* Attributes: those libgpuos reports (compute capability, SMs), the rest the
 * documented values of compute capability 9.x (Hopper; H100/H200 SXM). The real
 * device's values need a daemon message (daemon_ext.c: shim_ext_attribute). */
static int attr_value(CUdevice_attribute a, int *v)
{
    int smem_optin = 232448, smem_sm = 233472;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = shim_proc.dev.sm_count; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 6144; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 3; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = shim_proc.dev.cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = shim_proc.dev.cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = smem_sm; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: *v = 2; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = smem_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *v = 82444288; break;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *v = 134213632; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = shim_proc.dev.cc_major >= 9; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: *v = 4; break;
    default:
        *v = 0;
        return 0;
    }
    return 1;
}

/* Attributes of what the vGPU offers rather than of the chip: answered here
 * whatever the daemon's device says (its device can do more than a tenant in
 * another process may: map this process's memory, managed memory, VMM, IPC,
 * cooperative launches). */
static int vgpu_attr(CUdevice_attribute a, int *v)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: /* vmm.c refuses export */
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        *v = 0;
        return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: /* bookkeeping only (memory.c) */
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:  /* pool.c */
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: /* vmm.c */
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:     /* DEVICEMAP: at the host's address where the executor maps it there */
        *v = 1;
        return 1;
    default:
        return 0;
    }
}

E CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    if ((int)a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (!vgpu_attr(a, v) && shim_ext_attribute(shim_proc.g, (int)a, v))
        attr_value(a, v);
    if (shim_trace() >= 2)
        shim_log("cuDeviceGetAttribute %d = %d", (int)a, *v);
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetProperties(CUdevprop *p, CUdevice d)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    memset(p, 0, sizeof *p);
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->sharedMemPerBlock = 49152;
    p->totalConstantMemory = 65536;
    p->SIMDWidth = 32;
    p->memPitch = 2147483647;
    p->regsPerBlock = 65536;
    p->clockRate = 1980000;
    p->textureAlign = 512;
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d)
{
    if (!bus || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    CHECK_DEV(d);
    int dom = 0, b = 0, dv = 0; /* the daemon's device's, 0 where it answers none (simulated) */
    cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    cuDeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    cuDeviceGetAttribute(&dv, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    snprintf(bus, (size_t)len, "%04x:%02x:%02x.0", (unsigned)dom, (unsigned)b, (unsigned)dv);
    return CUDA_SUCCESS;
}

E CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *bus)
{
    if (!d || !bus)
        return CUDA_ERROR_INVALID_VALUE;
    NEED_INIT();
    *d = 0;
    return CUDA_SUCCESS;
}
