/* SPDX-License-Identifier: Apache-2.0 */
/* nvml.h: the few NVML declarations gpuos needs (no vendor header is required to
 * build: types are declared here, libnvidia-ml.so.1 is opened with dlopen). Every
 * query says whether it answered; nothing here changes the GPU's settings. */
#ifndef GOS_NVML_H
#define GOS_NVML_H

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlReturn_t; /* 0 = NVML_SUCCESS */

#define GOS_NVML_SUCCESS 0
#define GOS_NVML_ERROR_NO_PERMISSION 4
#define GOS_NVML_ERROR_NOT_SUPPORTED 3
#define GOS_NVML_CLOCK_GRAPHICS 0
#define GOS_NVML_CLOCK_SM 1
#define GOS_NVML_CLOCK_MEM 2

/* Loads and initialises NVML once; GOS_ENODEV with a reason if unavailable. */
int gos_nvml_load(void);
/* Entry point by exact exported name ("nvmlDeviceGetClockInfo"), NULL if absent. */
void *gos_nvml_sym(const char *name);
/* GOS_OK, or GOS_EDEVICE / GOS_EPERM / GOS_EUNSUPPORTED with "call: message". */
int gos_nvml_check(nvmlReturn_t r, const char *call);
/* Device handle by UUID string ("GPU-..."). */
int gos_nvml_device(const char *uuid, nvmlDevice_t *out);

#include "device/device.h"
/* Fills the NVML part of info (driver version, clocks, supported clocks, throttle
 * reasons, temperature, power); each group's validity flag says if it answered. */
void gos_nvml_fill_info(gos_device_info *info);

#endif
