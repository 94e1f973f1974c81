/* SPDX-License-Identifier: Apache-2.0 */
/* nvml.c: NVML through dlopen, read-only queries for gos_device_info. Types are
 * declared in nvml.h (no vendor header needed). Versioned entry points are tried
 * newest first; an absent one leaves its group marked invalid. */
#include "device/cuda/nvml.h"

#include "common/status.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t nvml_lock = PTHREAD_MUTEX_INITIALIZER;
static void *nvml_lib;
static int nvml_rc = 1;
static char nvml_msg[200];

void *gos_nvml_sym(const char *name) { return nvml_lib ? dlsym(nvml_lib, name) : NULL; }

typedef nvmlReturn_t (*nvml_void_fn)(void);
typedef const char *(*nvml_errstr_fn)(nvmlReturn_t);

int gos_nvml_check(nvmlReturn_t r, const char *call)
{
    if (r == GOS_NVML_SUCCESS)
        return GOS_OK;
    nvml_errstr_fn es = (nvml_errstr_fn)gos_nvml_sym("nvmlErrorString");
    const char *msg = es ? es(r) : "NVML error";
    int code = r == GOS_NVML_ERROR_NO_PERMISSION  ? GOS_EPERM
               : r == GOS_NVML_ERROR_NOT_SUPPORTED ? GOS_EUNSUPPORTED
                                                   : GOS_EDEVICE;
    return gos_fail(code, "%s: %s (NVML error %d)", call, msg, r);
}

int gos_nvml_load(void)
{
    pthread_mutex_lock(&nvml_lock);
    if (nvml_rc == 1) {
        nvml_lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!nvml_lib) {
            nvml_rc = GOS_ENODEV;
            snprintf(nvml_msg, sizeof nvml_msg, "NVML unavailable (libnvidia-ml.so.1 not found)");
        } else {
            nvml_void_fn init = (nvml_void_fn)dlsym(nvml_lib, "nvmlInit_v2");
            if (!init)
                init = (nvml_void_fn)dlsym(nvml_lib, "nvmlInit");
            nvml_rc = init ? gos_nvml_check(init(), "nvmlInit") : GOS_ENODEV;
            snprintf(nvml_msg, sizeof nvml_msg, "%s", init ? gos_last_error() : "NVML has no nvmlInit");
        }
    }
    int rc = nvml_rc;
    pthread_mutex_unlock(&nvml_lock);
    return rc ? gos_fail(rc, "%s", nvml_msg) : GOS_OK;
}

int gos_nvml_device(const char *uuid, nvmlDevice_t *out)
{
    int rc = gos_nvml_load();
    if (rc)
        return rc;
    typedef nvmlReturn_t (*fn_t)(const char *, nvmlDevice_t *);
    fn_t f = (fn_t)gos_nvml_sym("nvmlDeviceGetHandleByUUID");
    if (!f)
        return gos_fail(GOS_EUNSUPPORTED, "NVML lacks nvmlDeviceGetHandleByUUID");
    return gos_nvml_check(f(uuid, out), "nvmlDeviceGetHandleByUUID");
}

void gos_nvml_fill_info(gos_device_info *I)
{
    nvmlDevice_t dev;
    I->has_clocks = I->has_throttle = I->has_temp = I->has_power = 0;
    if (gos_nvml_device(I->uuid, &dev))
        return;
    typedef nvmlReturn_t (*str_fn)(char *, unsigned);
    typedef nvmlReturn_t (*clk_fn)(nvmlDevice_t, int, unsigned *);
    typedef nvmlReturn_t (*sup_fn)(nvmlDevice_t, unsigned, unsigned *, unsigned *);
    typedef nvmlReturn_t (*u64_fn)(nvmlDevice_t, unsigned long long *);
    typedef nvmlReturn_t (*u32_fn)(nvmlDevice_t, unsigned *);
    str_fn drv = (str_fn)gos_nvml_sym("nvmlSystemGetDriverVersion");
    if (drv && drv(I->driver_version, sizeof I->driver_version) != GOS_NVML_SUCCESS)
        I->driver_version[0] = 0;
    clk_fn clk = (clk_fn)gos_nvml_sym("nvmlDeviceGetClockInfo");
    clk_fn maxclk = (clk_fn)gos_nvml_sym("nvmlDeviceGetMaxClockInfo");
    unsigned sm = 0, mem = 0, mx = 0;
    if (clk && clk(dev, GOS_NVML_CLOCK_SM, &sm) == GOS_NVML_SUCCESS &&
        clk(dev, GOS_NVML_CLOCK_MEM, &mem) == GOS_NVML_SUCCESS) {
        I->has_clocks = 1;
        I->sm_clock_mhz = (int)sm;
        I->mem_clock_mhz = (int)mem;
        if (maxclk && maxclk(dev, GOS_NVML_CLOCK_SM, &mx) == GOS_NVML_SUCCESS)
            I->max_sm_clock_mhz = (int)mx;
        sup_fn sup = (sup_fn)gos_nvml_sym("nvmlDeviceGetSupportedGraphicsClocks");
        unsigned count = GOS_MAX_CLOCKS, clocks[GOS_MAX_CLOCKS];
        I->n_supported_sm_clocks = 0;
        if (sup && sup(dev, mem, &count, clocks) == GOS_NVML_SUCCESS)
            for (unsigned i = 0; i < count && i < GOS_MAX_CLOCKS; i++)
                I->supported_sm_clocks_mhz[I->n_supported_sm_clocks++] = (int)clocks[i];
    }
    u64_fn reasons = (u64_fn)gos_nvml_sym("nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons)
        reasons = (u64_fn)gos_nvml_sym("nvmlDeviceGetCurrentClocksThrottleReasons");
    unsigned long long r = 0;
    if (reasons && reasons(dev, &r) == GOS_NVML_SUCCESS) {
        I->has_throttle = 1;
        I->throttle_reasons = r;
    }
    typedef nvmlReturn_t (*temp_fn)(nvmlDevice_t, int, unsigned *);
    temp_fn temp = (temp_fn)gos_nvml_sym("nvmlDeviceGetTemperature");
    unsigned t = 0;
    if (temp && temp(dev, 0, &t) == GOS_NVML_SUCCESS) {
        I->has_temp = 1;
        I->temp_c = (int)t;
    }
    u32_fn power = (u32_fn)gos_nvml_sym("nvmlDeviceGetPowerUsage");
    unsigned mw = 0;
    if (power && power(dev, &mw) == GOS_NVML_SUCCESS) {
        I->has_power = 1;
        I->power_w = mw / 1000.0;
    }
}
