/* SPDX-License-Identifier: Apache-2.0 */
/* device.h: the device layer, one interface over two backends (docs/CONTRIBUTING.md, "Layout").
 *
 *   cuda: a real GPU through dlopen(libcuda.so.1) and dlopen(libnvidia-ml.so.1),
 *         running the kernels embedded in the binary;
 *   sim : a simulated chip described by a gpuos.chip/1 file, emulating the same
 *         measurement primitives from the chip's known truth plus seeded noise.
 *
 * Everything above this layer (probes, schedulers, the daemon) calls only what is
 * declared here and in the pillar headers, and never knows which backend runs:
 * where behaviour must differ it asks a capability (info.caps), never
 * info.simulated (a fact for labels: gos_dev_label). An operation a backend
 * lacks is a NULL pointer: callers use the checked wrappers, which turn that
 * into GOS_EUNSUPPORTED with a message instead of a crash.
 *
 * The operations are grouped per pillar; each group has its own header
 * (topo_ops.h, mem_ops.h, dvfs_ops.h, exec_ops.h), its wrappers (topo_ops.c, ...)
 * and its own implementation files per backend, a folder each (cuda/cuda_topo.c /
 * sim/sim_topo.c, ...), so that pillars do not collide. */
#ifndef GOS_DEVICE_H
#define GOS_DEVICE_H

#include <stddef.h>
#include <stdint.h>

struct gos_chip;
typedef struct gos_device gos_device;

#include "device/info.h"

/* Every pillar ops struct (topo_ops.h, mem_ops.h, dvfs_ops.h, exec_ops.h) starts
 * with a member of this type (may be NULL): the backend's close calls it first
 * (gos_device_close_pillars), so a pillar can release its state (d->mem_priv,
 * ...) without the backend knowing it. */
typedef void (*gos_pillar_close_fn)(gos_device *d);

/* One convention for every pillar <p>: src/device/<p>_ops.h declares struct
 * gos_<p>_ops and the checked wrappers gos_<p>_*() (src/device/<p>_ops.c), which
 * answer GOS_EUNSUPPORTED when the backend lacks an operation and GOS_EINVAL for
 * bad arguments; the backends' instances are gos_cuda_<p>_ops (cuda/cuda_<p>.c) and
 * gos_sim_<p>_ops (sim/sim_<p>.c). Callers above the layer use only the wrappers. */
struct gos_topo_ops; /* topo_ops.h: pillar 1a primitives */
struct gos_mem_ops;  /* mem_ops.h: pillar 1b primitives */
struct gos_dvfs_ops; /* dvfs_ops.h: pillar 1c primitives */
struct gos_exec_ops; /* exec_ops.h: pillar 3 execution (daemon) primitives */
struct gos_place_ops; /* place_ops.h: pillar 2 placement primitives */
struct gos_p2p_ops;  /* p2p_ops.h: GPU-to-GPU links of a node */
struct gos_green_ops; /* green_ops.h: green contexts, SM partitions (issue 13) */
struct gos_vmm_ops;  /* vmm_ops.h: device virtual memory (shared memory, swapping) */

struct gos_device_ops {
    const char *name;
    void (*close)(gos_device *d);
    /* Refreshes the dynamic part of d->info (clocks, throttle, temperature). */
    int (*refresh)(gos_device *d);

    const struct gos_topo_ops *topo;
    const struct gos_mem_ops *mem;
    const struct gos_dvfs_ops *dvfs;
    const struct gos_exec_ops *exec;
    const struct gos_place_ops *place;
    const struct gos_p2p_ops *p2p;
    const struct gos_green_ops *green;
    const struct gos_vmm_ops *vmm;
};

struct gos_device {
    const struct gos_device_ops *ops;
    gos_device_info info;
    struct gos_chip *chip; /* sim: the chip's truth (owned); cuda: NULL */
    void *priv;            /* backend state */
    void *topo_priv, *mem_priv, *dvfs_priv, *exec_priv, *place_priv; /* per-pillar backend state */
    void *green_priv, *vmm_priv;
};

/* Which device to open. */
typedef struct {
    const char *sim;   /* NULL: a real GPU; "default" or a chip file: simulated */
    int ordinal;       /* real GPU ordinal; -1: first one */
} gos_device_spec;

/* Opens a device. For a real GPU, fails with GOS_ENODEV and a one-line reason
 * (no driver, no GPU, ordinal out of range). */
int gos_device_open(const gos_device_spec *spec, gos_device **out);
void gos_device_close(gos_device *d);

/* Number of real CUDA devices (0 with a reason in gos_last_error() when the
 * driver cannot be loaded). Never fails hard. */
int gos_cuda_device_count(void);

/* Backend constructors (backend.c picks one). */
int gos_sim_open(const char *chip_path, gos_device **out);
int gos_cuda_open(int ordinal, gos_device **out);

/* For backends' close (pillars.c): runs each pillar's close hook (green, vmm,
 * place, exec, dvfs, mem, topo), so the pillars release their state before the
 * backend tears down. */
void gos_device_close_pillars(gos_device *d);

/* For the checked wrappers (src/device/<p>_ops.c; pillars.c): GOS_EUNSUPPORTED with "the
 * <backend> device does not support <what>". */
int gos_dev_missing(const gos_device *d, const char *what);

/* "simulated " or "" for labelling everything printed or written. */
const char *gos_dev_label(const gos_device *d);

#endif
