/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_work.h: the workloads of bench/vgpu_bench, each one function run
 * against two backends (issue 40.5): native (this process's own context,
 * through the device layer: the CUDA driver API on a GPU) and gpuos (a vGPU
 * through libgpuos, the daemon and its executor). A backend is a table of
 * alloc / copy / launch / synchronise operations; each counts what it issued
 * (struct wl_tally), and vgpu_bench --ops FILE writes the two backends'
 * counts of every paired workload side by side (tests/vgpu_ops_check.py
 * compares them: tests/t_vgpu_work.sh, tests/gpu/vgpu_work.sh). */
#ifndef GOS_BENCH_VGPU_WORK_H
#define GOS_BENCH_VGPU_WORK_H

#include "device/device.h"
#include "device/exec_ops.h"
#include "gpuos/gpuos.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* What a backend issued: operations and bytes, [0] host to device, [1] back. */
struct wl_tally {
    long launches, syncs, waits, allocs, frees, host_allocs, host_frees, copies[2];
    uint64_t bytes[2];
};

struct wl_backend;
struct wl_ops {
    int (*alloc)(struct wl_backend *b, size_t n, uint64_t *d);
    int (*free)(struct wl_backend *b, uint64_t d);
    int (*host_alloc)(struct wl_backend *b, size_t n, void **h);
    int (*host_free)(struct wl_backend *b, void *h);
    /* a kernel of the built-in module (GOS_EXEC_BUILTIN) */
    int (*kernel)(struct wl_backend *b, const char *name, uint64_t *k);
    /* asynchronous, as cuLaunchKernel; cfg's params and param_bytes are the
     * kernel's parameters */
    int (*launch)(struct wl_backend *b, uint64_t k, const struct gos_launch_cfg *cfg);
    /* a copy; async: natively on the stream (done at copies_done), else the
     * driver's synchronous copy; gpuos's copies are synchronous either way
     * (the library picks its path by the host memory) */
    int (*copy)(struct wl_backend *b, int htod, void *host, uint64_t d, size_t n, int async);
    int (*copies_done)(struct wl_backend *b);
    int (*sync)(struct wl_backend *b); /* every launch done */
};

struct wl_backend {
    const char *name; /* "native" or "gpuos" */
    const struct wl_ops *ops;
    gos_device *dev; /* native: the device, its stream, the built-in module */
    void *stream, *mod;
    int pending;     /* native: an asynchronous copy not yet waited for */
    gpuos_vgpu *g;   /* gpuos: the handle */
    unsigned sms;    /* the GPU's SMs (launch shapes) */
    struct wl_tally tally;
};

/* A backend on this process's device d and stream st; one on handle g. */
struct wl_backend wl_native(gos_device *d, void *st);
struct wl_backend wl_gpuos(gpuos_vgpu *g, unsigned sms);

/* ---- the workloads (a failed operation ends the run: DIE) ---------------- */

/* r copies after one warm-up, each waited for; their times in t (s). */
void wl_copy_times(struct wl_backend *b, int htod, int async, void *host, uint64_t d, size_t n, double *t, int r);
/* n launches of the empty kernel back to back and one synchronise: the
 * microseconds per launch. */
double wl_launch_rate(struct wl_backend *b, int n);
/* launch + synchronise round trips of the empty kernel, warm first, then at
 * most max of them within secs (0: no limit), each one's time in t (us); how
 * many were timed. */
int wl_round_trips(struct wl_backend *b, int warm, int max, double secs, double *t);
/* kernels of k launched every at a time, then a synchronise, until `until`
 * (now()); the kernels completed, -1 on an error. */
long wl_stream(struct wl_backend *b, uint64_t k, const struct gos_launch_cfg *cfg, int every, double until);
/* one run of Gdev's standalone program kind (0 LOOP, 1 MADD, 2 MMUL, 3 CPY,
 * 4 PINCPY; paper 002, table 1), seconds; hp pageable, hpin pinned host
 * memory of `big` bytes. */
double wl_standalone(struct wl_backend *b, int kind, void *hp, void *hpin, size_t big);
/* neighbour's probe: round trips (at most 1000 or 1.5 s) and 64 MB copies
 * each way (5, at most 2 s) on pinned memory. */
struct wl_probe {
    double rt_us, rt_p90_us, htod_gbps, dtoh_gbps;
    int rounds;
};
struct wl_probe wl_probe(struct wl_backend *b);

/* ---- the operations of paired runs (--ops FILE) ------------------------- */

/* Starts recording to FILE (NULL: nothing is recorded). */
void wl_ops_open(const char *file);
/* zeroes both tallies: a paired workload starts */
void wl_begin(struct wl_backend *a, struct wl_backend *b);
/* records a pair's tallies (native's, gpuos's) under section / work */
void wl_note(const char *section, const char *work, const struct wl_tally *native, const struct wl_tally *gpuos);
/* writes the file (after every section; last: at the end, also copied for
 * GPUOS_JSON_TRACE) */
void wl_ops_save(int last);

#endif
