/* SPDX-License-Identifier: Apache-2.0 */
/* exec_ops.h: pillar 3 execution primitives (the daemon's view of a device).
 *
 * What `gpuos serve` needs to run its clients' work on a device and to measure
 * the GPU time each piece took (Gdev section 5: every launch and copy is charged
 * to its virtual GPU). All handles are opaque `void *` / uint64_t so that nothing
 * above the device layer sees CUDA types. Backends:
 *   cuda_exec.c: the real GPU (primary context, streams, events, cuLaunchKernelEx);
 *   sim_exec.c : device memory in host RAM, the built-in kernels' work as
 *                modelled durations, copies with modelled bandwidth and latency,
 *                in real elapsed time.
 *
 * Threads: every call may come from any thread; the backend makes its context
 * current itself. Streams execute in order; different streams may overlap.
 * Device pointers are plain uint64_t values (the daemon checks every range a
 * client names against its own allocation table before calling here). */
#ifndef GOS_EXEC_OPS_H
#define GOS_EXEC_OPS_H

#include "device/device.h"
#include "device/geom.h"
#include "gpuos/gpuos.h" /* gpuos_tmap_args */

#include <stddef.h>
#include <stdint.h>

/* Packed kernel parameters follow CUDA's layout rules (each parameter aligned to
 * its size within the buffer), passed to the driver as one buffer. */
struct gos_launch_cfg {
    GOS_GEOM_HEAD; /* grid, block, cluster ({0,0,0}: none), smem (device/geom.h) */
    const void *params;
    size_t param_bytes;
};

/* A device range a built-in kernel will read or write (launch_ranges). */
struct gos_dev_range {
    uint64_t ptr, bytes;
};
#define GOS_LAUNCH_RANGES_MAX 4

/* The built-in module's name, the same on every backend. */
#define GOS_EXEC_BUILTIN "builtin"

struct gos_exec_ops {
    gos_pillar_close_fn close;

    /* Prepares the device for execution (context, state in d->exec_priv). */
    int (*init)(gos_device *d);

    int (*mem_alloc)(gos_device *d, uint64_t bytes, uint64_t *dptr);
    int (*mem_free)(gos_device *d, uint64_t dptr);
    /* Free and total device memory in bytes. */
    int (*mem_info)(gos_device *d, uint64_t *free_b, uint64_t *total_b);

    /* Page-locks existing host memory (a client's shared region) for DMA. */
    int (*host_register)(gos_device *d, void *p, size_t bytes);
    int (*host_unregister)(gos_device *d, void *p);
    /* The device's address of registered host memory p (the same number where
     * the GPU uses the host's: unified addressing). */
    int (*host_device_ptr)(gos_device *d, void *p, uint64_t *dptr);
    /* Pinned host memory owned by the backend (bounce buffers, benchmarks). */
    int (*host_alloc)(gos_device *d, size_t bytes, void **p);
    int (*host_free)(gos_device *d, void *p);

    int (*stream_create)(gos_device *d, void **stream);
    /* A stream at the context's least (prio < 0) or greatest (prio > 0) stream
     * priority: under MPS the hardware starts the blocks of a higher-priority
     * stream's kernels first as SMs free up, across the server's clients. */
    int (*stream_create_prio)(gos_device *d, int prio, void **stream);
    int (*stream_destroy)(gos_device *d, void *stream);
    int (*stream_sync)(gos_device *d, void *stream);

    /* Asynchronous copies on a stream. */
    int (*copy_htod)(gos_device *d, uint64_t dst, const void *src, size_t n, void *stream);
    int (*copy_dtoh)(gos_device *d, void *dst, uint64_t src, size_t n, void *stream);
    int (*copy_dtod)(gos_device *d, uint64_t dst, uint64_t src, size_t n, void *stream);
    /* Synchronous copies from/to ordinary (pageable) memory, the vendor path
     * (native baselines of the benchmark). */
    int (*copy_htod_sync)(gos_device *d, uint64_t dst, const void *src, size_t n);
    int (*copy_dtoh_sync)(gos_device *d, void *dst, uint64_t src, size_t n);

    /* Loads a module from image bytes (fatbin, cubin or PTX), or the backend's
     * built-in module when image is NULL and name is GOS_EXEC_BUILTIN: the same
     * kernel names and parameter layouts on every backend (kernels/exec.cu on
     * cuda; modelled durations on sim, see sim_exec.c). */
    int (*module_load)(gos_device *d, const void *image, size_t bytes, const char *name, void **mod);
    /* The device memory a module image takes once loaded (its globals and
     * constant banks), read from the image before it is loaded (issue 44.2:
     * charged to the vGPU's memory share); GOS_EINVAL for an image the
     * backend cannot read. Optional (then nothing is charged). */
    int (*module_bytes)(gos_device *d, const void *image, size_t bytes, uint64_t *need);
    int (*module_unload)(gos_device *d, void *mod);
    int (*function)(gos_device *d, void *mod, const char *name, void **fn);
    /* A module's global (__device__ variable): its device address and size
     * (cuModuleGetGlobal). Optional. */
    int (*module_global)(gos_device *d, void *mod, const char *name, uint64_t *dptr, uint64_t *bytes);
    int (*launch)(gos_device *d, void *fn, const struct gos_launch_cfg *cfg, void *stream);
    /* For a function of the backend's built-in module: checks the launch's
     * parameters (sizes, counts, geometry, without overflow) and lists the device
     * ranges it will touch (at most GOS_LAUNCH_RANGES_MAX) in r[0..*n), so that
     * the daemon checks them against the launching client's own allocations
     * (issue 15.1). *n = -1: not a built-in kernel, its pointers are unknown.
     * GOS_EINVAL with a reason for parameters the kernel cannot run with.
     * Optional (NULL: nothing is known). */
    int (*launch_ranges)(gos_device *d, void *fn, const struct gos_launch_cfg *cfg, struct gos_dev_range *r,
                         int *n);
    /* Shutdown (issue 15.5): every wait in progress or to come (event_sync,
     * stream_sync) returns GOS_EIO at once, so that work that never ends cannot
     * hold the daemon; the device is then only fit for closing (on a GPU the
     * process exit destroys the context, which ends the kernels). Optional. */
    void (*abandon)(gos_device *d);

    /* Events for GPU time: elapsed_ns between two recorded, completed events. */
    int (*event_create)(gos_device *d, void **ev);
    int (*event_destroy)(gos_device *d, void *ev);
    int (*event_record)(gos_device *d, void *ev, void *stream);
    /* Waits for an event (spinning politely: dispatch latency matters). */
    int (*event_sync)(gos_device *d, void *ev);
    int (*event_elapsed_ns)(gos_device *d, void *start, void *end, uint64_t *ns);
    /* Optional: every device attribute by number (1..n-1): value[a], valid[a] = 1
     * when the device answers attribute a (gpuos's libcuda, issue 11). */
    int (*device_attributes)(gos_device *d, int32_t *value, uint8_t *valid, int n);
    /* Optional: a tensor map (TMA descriptor) of a's arguments into map
     * (GPUOS_TMAP_BYTES; for GPUOS_TMAP_REPLACE a->map with its address
     * replaced), as the driver's cuTensorMapEncode* answers (issue 43: the
     * tenant's process needs no driver of its own). The arguments were checked
     * (proto.c); the wrapper checks kind and rank again, the arrays' bounds.
     * GOS_EINVAL where the driver refuses them. */
    int (*tmap_encode)(gos_device *d, const gpuos_tmap_args *a, void *map);
};

/* Checked wrappers for callers above the device layer (exec_ops.c): one per
 * operation, same arguments; GOS_EUNSUPPORTED with one line when the backend
 * lacks the operation, GOS_EINVAL for a missing result pointer or argument. */
int gos_exec_init(gos_device *d);
int gos_exec_mem_alloc(gos_device *d, uint64_t bytes, uint64_t *dptr);
int gos_exec_mem_free(gos_device *d, uint64_t dptr);
int gos_exec_mem_info(gos_device *d, uint64_t *free_b, uint64_t *total_b);
int gos_exec_host_register(gos_device *d, void *p, size_t bytes);
int gos_exec_host_unregister(gos_device *d, void *p);
int gos_exec_host_device_ptr(gos_device *d, void *p, uint64_t *dptr);
int gos_exec_host_alloc(gos_device *d, size_t bytes, void **p);
int gos_exec_host_free(gos_device *d, void *p);
int gos_exec_stream_create(gos_device *d, void **stream);
/* prio 0: gos_exec_stream_create; else as the op (GOS_EUNSUPPORTED without it). */
int gos_exec_stream_create_prio(gos_device *d, int prio, void **stream);
int gos_exec_stream_destroy(gos_device *d, void *stream);
int gos_exec_stream_sync(gos_device *d, void *stream);
int gos_exec_copy_htod(gos_device *d, uint64_t dst, const void *src, size_t n, void *stream);
int gos_exec_copy_dtoh(gos_device *d, void *dst, uint64_t src, size_t n, void *stream);
int gos_exec_copy_dtod(gos_device *d, uint64_t dst, uint64_t src, size_t n, void *stream);
int gos_exec_copy_htod_sync(gos_device *d, uint64_t dst, const void *src, size_t n);
int gos_exec_copy_dtoh_sync(gos_device *d, void *dst, uint64_t src, size_t n);
int gos_exec_module_load(gos_device *d, const void *image, size_t bytes, const char *name, void **mod);
/* Issue 44.2: a module loaded only when its device memory (module_bytes) fits
 * limit bytes: the image is copied first (a client may rewrite the bytes it
 * shares meanwhile), measured, refused with GOS_EBUSY past the limit, loaded
 * from the copy; *need is what it takes (0 for a built-in module). */
int gos_exec_module_load_within(gos_device *d, const void *image, size_t bytes, const char *name, uint64_t limit,
                                void **mod, uint64_t *need);
int gos_exec_module_unload(gos_device *d, void *mod);
int gos_exec_function(gos_device *d, void *mod, const char *name, void **fn);
int gos_exec_module_global(gos_device *d, void *mod, const char *name, uint64_t *dptr, uint64_t *bytes);
int gos_exec_launch(gos_device *d, void *fn, const struct gos_launch_cfg *cfg, void *stream);
int gos_exec_event_create(gos_device *d, void **ev);
int gos_exec_event_destroy(gos_device *d, void *ev);
/* An engine: a stream (at stream priority prio, as gos_exec_stream_create_prio)
 * and the two events a batch is timed between (the daemon's engines, an
 * executor's). free takes what exists (NULL: none). */
int gos_exec_engine_new(gos_device *d, int prio, void **stream, void *ev[2]);
void gos_exec_engine_free(gos_device *d, void *stream, void *ev[2]);
int gos_exec_event_record(gos_device *d, void *ev, void *stream);
int gos_exec_event_sync(gos_device *d, void *ev);
int gos_exec_event_elapsed_ns(gos_device *d, void *start, void *end, uint64_t *ns);
/* Optional ops: launch_ranges gives *n = -1 (nothing known) and abandon does
 * nothing when the backend lacks them. */
int gos_exec_launch_ranges(gos_device *d, void *fn, const struct gos_launch_cfg *cfg, struct gos_dev_range *r,
                           int *n);
void gos_exec_abandon(gos_device *d);
int gos_exec_device_attributes(gos_device *d, int32_t *value, uint8_t *valid, int n);
int gos_exec_tmap_encode(gos_device *d, const gpuos_tmap_args *a, void *map);

#endif
