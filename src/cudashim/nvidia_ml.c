/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia_ml.c: gpuos's libnvidia-ml.so.1 for tenants (docs/readme-cudashim.md).
 *
 * A program run with `gpuos run` that asks NVML about "its GPU" gets its vGPU:
 * one device, named as the real one, whose memory total is the vGPU's memory
 * share, memory used what the vGPU holds, and utilisation the vGPU's compute and
 * copy utilisation as the daemon measured them over its last scheduling period
 * (gpu = compute, memory = copy engine; NVML's own "memory" is the memory
 * controller's busy time, which the daemon does not measure per vGPU). The NVML
 * types are declared here from NVML's documented ABI (no nvml.h is needed). Other
 * queries programs commonly make return NVML_ERROR_NOT_SUPPORTED and name
 * themselves once on stderr. Nothing here loads NVIDIA's library. */
#include "common/env.h"
#include "common/log.h"
#include "cudashim/shim.h"
#include "gpuos/gpuos.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define E SHIM_EXPORT

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
};
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

struct nvmlDevice_st {
    int index;
};

static struct {
    pthread_mutex_t m;
    int refs;
    gpuos_vgpu *g;
    gpuos_device_facts dev;
    struct nvmlDevice_st d0;
} N = {.m = PTHREAD_MUTEX_INITIALIZER};

/* The NVML library's lines go through the one log (common/log.h), named once. */
__attribute__((constructor)) static void nvml_log_name(void)
{
    gos_log_name("gpuos libnvidia-ml");
}

static int nvml_unsupported(const char *name)
{
    static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
    static char said[64][64];
    static int n;
    pthread_mutex_lock(&l);
    int seen = 0;
    for (int i = 0; i < n; i++)
        seen |= !strcmp(said[i], name);
    if (!seen) {
        if (n < 64)
            snprintf(said[n++], sizeof said[0], "%s", name);
        gos_log(LOG_NOTICE, "%s is not supported", name);
    }
    pthread_mutex_unlock(&l);
    return NVML_ERROR_NOT_SUPPORTED;
}

E nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    pthread_mutex_lock(&N.m);
    nvmlReturn_t r = NVML_SUCCESS;
    if (!N.refs) {
        const char *v = gos_env(GOS_ENV_VGPU);
        int rc = gpuos_open(NULL, v && *v ? v : "default", &N.g);
        if (!rc)
            rc = gpuos_device_info(N.g, &N.dev);
        if (rc) {
            gos_log(LOG_NOTICE, "nvmlInit: %s", gpuos_error());
            if (N.g)
                gpuos_close(N.g);
            N.g = NULL;
            r = NVML_ERROR_DRIVER_NOT_LOADED;
        }
    }
    if (!r)
        N.refs++;
    pthread_mutex_unlock(&N.m);
    return r;
}
E nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
E nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

E nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&N.m);
    nvmlReturn_t r = NVML_SUCCESS;
    if (!N.refs)
        r = NVML_ERROR_UNINITIALIZED;
    else if (!--N.refs) {
        gpuos_close(N.g);
        N.g = NULL;
    }
    pthread_mutex_unlock(&N.m);
    return r;
}

E const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

#define NEED()                                                                                                         \
    do {                                                                                                               \
        if (!N.refs)                                                                                                   \
            return NVML_ERROR_UNINITIALIZED;                                                                           \
    } while (0)
#define NEED_DEV(d)                                                                                                    \
    do {                                                                                                               \
        NEED();                                                                                                        \
        if ((d) != &N.d0)                                                                                              \
            return NVML_ERROR_INVALID_ARGUMENT;                                                                        \
    } while (0)

static nvmlReturn_t copy_str(char *dst, unsigned int len, const char *s)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

/* The kernel driver's version as NVIDIA's NVML gives it ("580.159.04"; XLA
 * parses it), from the driver's own /proc file; NOT_SUPPORTED without one. */
E nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len)
{
    NEED();
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    char line[256], ver[32] = "";
    const char *path = gos_env(GOS_ENV_NVIDIA_VERSION_FILE);
    FILE *f = fopen(path && *path ? path : "/proc/driver/nvidia/version", "r");
    if (f) {
        /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..." */
        if (fgets(line, sizeof line, f))
            for (char *t = strtok(line, " \t\n"); t && !ver[0]; t = strtok(NULL, " \t\n"))
                if (t[0] >= '0' && t[0] <= '9' && strchr(t, '.') && strspn(t, "0123456789.") == strlen(t) &&
                    strlen(t) < sizeof ver)
                    snprintf(ver, sizeof ver, "%s", t);
        fclose(f);
    }
    return ver[0] ? copy_str(v, len, ver) : NVML_ERROR_NOT_SUPPORTED;
}
E nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = 13000;
    return NVML_SUCCESS;
}
E nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

E nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    NEED();
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = 1;
    return NVML_SUCCESS;
}
E nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return nvmlDeviceGetCount_v2(n); }

E nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    NEED();
    if (!d || i != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &N.d0;
    return NVML_SUCCESS;
}
E nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d)
{
    return nvmlDeviceGetHandleByIndex_v2(i, d);
}
E nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    NEED();
    if (!uuid || !d || strcmp(uuid, N.dev.uuid))
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &N.d0;
    return NVML_SUCCESS;
}

E nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i)
{
    NEED_DEV(d);
    if (!i)
        return NVML_ERROR_INVALID_ARGUMENT;
    *i = 0;
    return NVML_SUCCESS;
}

E nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len)
{
    NEED_DEV(d);
    return copy_str(name, len, N.dev.name);
}

E nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len)
{
    NEED_DEV(d);
    return copy_str(uuid, len, N.dev.uuid);
}

/* A vGPU is not a MIG instance, and shows no MIG mode (XLA asks). */
E nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
    NEED_DEV(d);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = 0; /* NVML_DEVICE_MIG_DISABLE */
    return NVML_SUCCESS;
}

E nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
    NEED_DEV(d);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *major = N.dev.cc_major;
    *minor = N.dev.cc_minor;
    return NVML_SUCCESS;
}

static nvmlReturn_t mem(unsigned long long *total, unsigned long long *used)
{
    uint64_t u = 0, q = 0;
    if (gpuos_mem_info(N.g, &u, &q, NULL)) {
        gos_log(LOG_NOTICE, "%s", gpuos_error());
        return NVML_ERROR_GPU_IS_LOST;
    }
    *total = q;
    *used = u;
    return NVML_SUCCESS;
}

E nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    NEED_DEV(d);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = mem(&m->total, &m->used);
    if (!r)
        m->free = m->total > m->used ? m->total - m->used : 0;
    return r;
}

E nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    NEED_DEV(d);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = mem(&m->total, &m->used);
    if (!r) {
        m->reserved = 0;
        m->free = m->total > m->used ? m->total - m->used : 0;
    }
    return r;
}

E nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    NEED_DEV(d);
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    gpuos_vgpu_facts f;
    if (gpuos_vgpu_info(N.g, &f)) {
        gos_log(LOG_NOTICE, "%s", gpuos_error());
        return NVML_ERROR_GPU_IS_LOST;
    }
    double c = f.compute_util * 100 + 0.5, x = f.copy_util * 100 + 0.5;
    u->gpu = c > 100 ? 100 : (unsigned)c;
    u->memory = x > 100 ? 100 : (unsigned)x;
    return NVML_SUCCESS;
}

/* PCI: the daemon's device's domain, bus and device numbers (its attributes),
 * as cuDeviceGetPCIBusId formats them. */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

static void pci_numbers(unsigned *domain, unsigned *bus, unsigned *dev)
{
    int32_t v[51] = {0};
    unsigned char ok[51] = {0};
    *domain = *bus = *dev = 0;
    if (!gpuos_device_attributes(N.g, v, ok, 51)) { /* 50 domain, 33 bus, 34 device (cuda.h) */
        *domain = ok[50] ? (unsigned)v[50] : 0;
        *bus = ok[33] ? (unsigned)v[33] : 0;
        *dev = ok[34] ? (unsigned)v[34] : 0;
    }
}

static nvmlReturn_t pci_info(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    NEED_DEV(d);
    if (!p)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    pci_numbers(&p->domain, &p->bus, &p->device);
    snprintf(p->busId, sizeof p->busId, "%08x:%02x:%02x.0", p->domain, p->bus, p->device);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04x:%02x:%02x.0", p->domain & 0xffff, p->bus, p->device);
    return NVML_SUCCESS;
}
E nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) { return pci_info(d, p); }
E nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p) { return pci_info(d, p); }
E nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p) { return pci_info(d, p); }

/* One device: any bus id names it (the CUDA side formats it from the same
 * numbers; PyTorch maps its device to NVML's this way). */
E nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d)
{
    NEED();
    if (!bus || !d)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &N.d0;
    return NVML_SUCCESS;
}
E nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus, nvmlDevice_t *d)
{
    return nvmlDeviceGetHandleByPciBusId_v2(bus, d);
}

/* Processes on the device: a tenant sees itself only (with what its vGPU holds),
 * never the other tenants. `entry` is the size of the caller's struct version
 * (v1: pid, memory; v2/v3: and two instance ids). */
static nvmlReturn_t processes(nvmlDevice_t d, unsigned int *count, void *infos, size_t entry)
{
    NEED_DEV(d);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned have = *count;
    *count = 1;
    if (have < 1 || !infos)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned long long total = 0, used = 0;
    nvmlReturn_t r = mem(&total, &used);
    if (r)
        return r;
    unsigned char *e = infos;
    memset(e, 0, entry);
    unsigned pid = (unsigned)getpid(), none = 0xffffffffu;
    memcpy(e, &pid, sizeof pid);
    memcpy(e + 8, &used, sizeof used);
    if (entry > 16) {
        memcpy(e + 16, &none, sizeof none);
        memcpy(e + 20, &none, sizeof none);
    }
    return NVML_SUCCESS;
}
E nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, void *p)
{
    return processes(d, n, p, 24);
}
E nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *n, void *p)
{
    return processes(d, n, p, 24);
}
E nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *n, void *p)
{
    return processes(d, n, p, 16);
}

/* Queries monitoring tools commonly make that a vGPU does not answer. */
E nvmlReturn_t nvmlDeviceGetTemperature(void) { return nvml_unsupported("nvmlDeviceGetTemperature"); }
E nvmlReturn_t nvmlDeviceGetPowerUsage(void) { return nvml_unsupported("nvmlDeviceGetPowerUsage"); }
E nvmlReturn_t nvmlDeviceGetClockInfo(void) { return nvml_unsupported("nvmlDeviceGetClockInfo"); }
E nvmlReturn_t nvmlDeviceGetMaxClockInfo(void) { return nvml_unsupported("nvmlDeviceGetMaxClockInfo"); }
E nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void) { return nvml_unsupported("nvmlDeviceGetGraphicsRunningProcesses_v3"); }
E nvmlReturn_t nvmlDeviceGetFanSpeed(void) { return nvml_unsupported("nvmlDeviceGetFanSpeed"); }
E nvmlReturn_t nvmlDeviceGetPerformanceState(void) { return nvml_unsupported("nvmlDeviceGetPerformanceState"); }
E nvmlReturn_t nvmlDeviceGetPowerManagementLimit(void) { return nvml_unsupported("nvmlDeviceGetPowerManagementLimit"); }
E nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void) { return nvml_unsupported("nvmlDeviceGetEnforcedPowerLimit"); }
E nvmlReturn_t nvmlDeviceGetPersistenceMode(void) { return nvml_unsupported("nvmlDeviceGetPersistenceMode"); }
E nvmlReturn_t nvmlDeviceGetComputeMode(void) { return nvml_unsupported("nvmlDeviceGetComputeMode"); }
E nvmlReturn_t nvmlDeviceGetEccMode(void) { return nvml_unsupported("nvmlDeviceGetEccMode"); }
E nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(void) { return nvml_unsupported("nvmlDeviceGetBAR1MemoryInfo"); }
E nvmlReturn_t nvmlDeviceGetSerial(void) { return nvml_unsupported("nvmlDeviceGetSerial"); }
E nvmlReturn_t nvmlDeviceGetMinorNumber(void) { return nvml_unsupported("nvmlDeviceGetMinorNumber"); }
E nvmlReturn_t nvmlDeviceGetBrand(void) { return nvml_unsupported("nvmlDeviceGetBrand"); }
E nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void) { return nvml_unsupported("nvmlDeviceGetCurrentClocksEventReasons"); }
E nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(void) { return nvml_unsupported("nvmlDeviceGetCurrentClocksThrottleReasons"); }
E nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(void) { return nvml_unsupported("nvmlDeviceGetTotalEnergyConsumption"); }
E nvmlReturn_t nvmlDeviceGetNvLinkState(void) { return nvml_unsupported("nvmlDeviceGetNvLinkState"); }
E nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(void) { return nvml_unsupported("nvmlDeviceGetTopologyCommonAncestor"); }
E nvmlReturn_t nvmlDeviceGetAttributes_v2(void) { return nvml_unsupported("nvmlDeviceGetAttributes_v2"); }
E nvmlReturn_t nvmlDeviceGetArchitecture(void) { return nvml_unsupported("nvmlDeviceGetArchitecture"); }
E nvmlReturn_t nvmlDeviceGetCpuAffinity(void) { return nvml_unsupported("nvmlDeviceGetCpuAffinity"); }
E nvmlReturn_t nvmlDeviceGetMemoryAffinity(void) { return nvml_unsupported("nvmlDeviceGetMemoryAffinity"); }
E nvmlReturn_t nvmlDeviceGetNumGpuCores(void) { return nvml_unsupported("nvmlDeviceGetNumGpuCores"); }
E nvmlReturn_t nvmlSystemGetNVMLVersion(void) { return nvml_unsupported("nvmlSystemGetNVMLVersion"); }
E nvmlReturn_t nvmlSystemGetProcessName(void) { return nvml_unsupported("nvmlSystemGetProcessName"); }
E nvmlReturn_t nvmlDeviceGetProcessUtilization(void) { return nvml_unsupported("nvmlDeviceGetProcessUtilization"); }
E nvmlReturn_t nvmlDeviceGetSamples(void) { return nvml_unsupported("nvmlDeviceGetSamples"); }
E nvmlReturn_t nvmlDeviceGetFieldValues(void) { return nvml_unsupported("nvmlDeviceGetFieldValues"); }
E nvmlReturn_t nvmlEventSetCreate(void) { return nvml_unsupported("nvmlEventSetCreate"); }
E nvmlReturn_t nvmlDeviceGetSupportedEventTypes(void) { return nvml_unsupported("nvmlDeviceGetSupportedEventTypes"); }
E nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(void) { return nvml_unsupported("nvmlDeviceGetNvLinkRemoteDeviceType"); }
E nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(void) { return nvml_unsupported("nvmlDeviceGetNvLinkRemotePciInfo_v2"); }
E nvmlReturn_t nvmlDeviceGetNvLinkCapability(void) { return nvml_unsupported("nvmlDeviceGetNvLinkCapability"); }
E nvmlReturn_t nvmlDeviceGetP2PStatus(void) { return nvml_unsupported("nvmlDeviceGetP2PStatus"); }
