/* SPDX-License-Identifier: Apache-2.0 */
/* info.h: the device layer's facts about a device (gos_device_info), a plain
 * data type with no operations: the daemon-executor wire (proto/xproto.h)
 * carries it without knowing the device interface (device.h). */
#ifndef GOS_DEVICE_INFO_H
#define GOS_DEVICE_INFO_H

#include <stdint.h>

#define GOS_MAX_CLOCKS 256

/* Static and dynamic facts about a device; every optional group has a validity
 * flag ("not measured" is never a sentinel value). */
typedef struct {
    char backend[8]; /* "cuda" or "sim" */
    int ordinal;     /* CUDA ordinal; -1 for a simulated device */
    int simulated;   /* a fact for labels and records (gos_dev_label), never a branch: see caps */
    char name[128];
    char uuid[96]; /* "GPU-..." for real devices, "SIM-..." for simulated */
    char pci_bus_id[32];
    int cc_major, cc_minor;
    int sm_count;
    uint64_t l2_bytes;
    uint64_t mem_bytes;
    int max_smem_per_block_optin; /* bytes */
    int max_threads_per_sm;
    int driver_cuda_version; /* e.g. 13000; 0 unknown */
    char driver_version[32]; /* NVML's string, e.g. "580.159.04"; "" unknown */

    int has_clocks; /* NVML answered */
    int sm_clock_mhz, mem_clock_mhz, max_sm_clock_mhz;
    int n_supported_sm_clocks; /* at the current memory clock, highest first */
    int supported_sm_clocks_mhz[GOS_MAX_CLOCKS];

    int has_throttle;
    uint64_t throttle_reasons; /* NVML clocks-event reason bits */

    int has_temp;
    int temp_c;
    int has_power;
    double power_w;

    unsigned caps; /* GOS_CAP_* bits */
} gos_device_info;

/* gos_exec_device_attributes answers CUDA's attribute numbers (all below
 * GOS_ATTR_CLUSTERS) and, above them, value[GOS_ATTR_CLUSTERS + cs - 1] for
 * cs = 1..GOS_ATTR_CLUSTERS_MAX: how many clusters of cs blocks run at once at
 * one block per SM (cuOccupancyMaxActiveClusters of a kernel holding all of an
 * SM's shared memory, non-portable sizes allowed), the GPCs' shape, which cuBLAS
 * probes before its first GEMM and divides by. The same numbers are the public
 * GPUOS_ATTR_CLUSTERS* of gpuos_device_attributes (gpuos.h). */
#define GOS_ATTR_CLUSTERS 224
#define GOS_ATTR_CLUSTERS_MAX 32

/* Backend capabilities (gos_device_info.caps): what callers above the device
 * layer ask instead of which backend runs. */
/* set_clock changes a real, system-wide setting of the machine: a campaign needs
 * the user's permission (--allow-clock-changes), see gos_dvfs_clock_permission. */
#define GOS_CAP_SYSTEM_CLOCKS 0x1u
/* The dvfs host clock is virtual (a campaign's seconds are not wall seconds). */
#define GOS_CAP_VIRTUAL_TIME 0x2u

#endif
