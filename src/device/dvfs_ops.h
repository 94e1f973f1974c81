/* SPDX-License-Identifier: Apache-2.0 */
/* dvfs_ops.h: the pillar-1c primitives of the device layer (SM frequency
 * switching latency, paper 000 section V), one struct of function pointers per
 * backend: gos_cuda_dvfs_ops (cuda_dvfs.c: kernels/dvfs.cu + NVML locked clocks)
 * and gos_sim_dvfs_ops (sim_dvfs.c: the chip's sim.dvfs model on a virtual clock).
 *
 * Time: every primitive speaks two clocks. The host clock is gos_now_ns (common/clock.h)
 * on a real machine and a virtual clock on the simulated device (so a whole
 * campaign, waits of ten seconds included, runs in seconds): callers above the
 * device layer must take host time and sleep only through host_now/host_sleep.
 * The GPU clock is %globaltimer ns ("GPU timebase"); timer_exchange relates the
 * two (src/dvfs/timesync.c turns exchanges into an offset and its uncertainty).
 *
 * Safety: set_clock and reset_clock change a system-wide setting. Nothing in the
 * device layer calls them on its own; src/dvfs/clockguard.c arms a guard that
 * resets the clock on every exit path before the first set_clock. Their return
 * code is never trusted: the campaign verifies every clock by NVML (status) and
 * by measured iteration time. */
#ifndef GOS_DVFS_OPS_H
#define GOS_DVFS_OPS_H

#include "common/status.h"
#include "device/device.h"

#include <stdint.h>
#include <stdlib.h>

/* Per-SM iteration timestamps of one workload kernel, CSR layout: SM sm[k]'s
 * iterations are [off[k], off[k+1]) of start_ns/end_ns, in iteration order.
 * Timestamps are GPU timebase ns (%globaltimer at the first and last
 * instruction of each iteration, paper 000 section V). */
typedef struct {
    int n_sms;
    int *sm;         /* [n_sms] SM ids */
    size_t *off;     /* [n_sms + 1] */
    int64_t *start_ns, *end_ns;
} gos_dvfs_trace;

/* One launch of the timing workload: one block per SM on every SM of the
 * device (all SMs load the chip), each iteration `work` dependent FMAs per
 * thread; the timestamps of the SMs in record_sms[0..n_record) are kept. */
typedef struct {
    int iters;             /* iterations per SM */
    int work;              /* dependent FMAs per iteration (>= 1) */
    int n_record;          /* 1..sm_count */
    const int *record_sms; /* SM ids */
} gos_dvfs_workload;

/* NVML clocks-event ("throttle") reason bits, as nvmlDeviceGetCurrentClocksEventReasons. */
#define GOS_THR_IDLE 0x1ull
#define GOS_THR_APP_CLOCKS 0x2ull
#define GOS_THR_SW_POWER 0x4ull
#define GOS_THR_HW_SLOWDOWN 0x8ull
#define GOS_THR_SYNC_BOOST 0x10ull
#define GOS_THR_SW_THERMAL 0x20ull
#define GOS_THR_HW_THERMAL 0x40ull
#define GOS_THR_HW_POWER_BRAKE 0x80ull
#define GOS_THR_DISPLAY 0x100ull
/* The groups the campaign acts on (paper 000 section VI): thermal -> drop the
 * last 5 measurements and wait 10 s; power -> skip the pair. HW slowdown can be
 * either; it is treated as thermal (the cautious choice: wait, do not skip). */
#define GOS_THR_THERMAL (GOS_THR_SW_THERMAL | GOS_THR_HW_THERMAL | GOS_THR_HW_SLOWDOWN)
#define GOS_THR_POWER (GOS_THR_SW_POWER | GOS_THR_HW_POWER_BRAKE)

/* Dynamic state; every group says whether it answered. */
typedef struct {
    int has_clock;
    int sm_clock_mhz;
    int has_reasons;
    uint64_t reasons; /* GOS_THR_* bits */
    int has_temp;
    int temp_c;
    int has_power;
    double power_w;
} gos_dvfs_status;

struct gos_dvfs_ops {
    gos_pillar_close_fn close; /* releases d->dvfs_priv (never touches clocks) */

    /* Host clock in ns (monotonic; virtual on the simulated device). */
    int64_t (*host_now)(gos_device *d);
    /* Sleeps `ns` of host time; returns early (GOS_OK) when a signal arrives. */
    int (*host_sleep)(gos_device *d, int64_t ns);

    /* Launches the workload asynchronously and returns once it is queued; at
     * most one is outstanding. workload_wait blocks until it ends and fills
     * *tr (arrays allocated here; release with gos_dvfs_trace_free). */
    int (*workload_start)(gos_device *d, const gos_dvfs_workload *w);
    int (*workload_wait)(gos_device *d, gos_dvfs_trace *tr);

    /* n CPU-GPU timer exchanges (IEEE 1588 style two-way): for each i the GPU
     * read its timer at gpu[i] (GPU timebase) between host_before[i] and
     * host_after[i] (host clock). */
    int (*timer_exchange)(gos_device *d, int n, int64_t *host_before, int64_t *gpu,
                          int64_t *host_after);

    /* Locks the SM clock at mhz (min = max); GOS_EPERM with one line when not
     * permitted. reset_clock returns the device to its default clock policy. */
    int (*set_clock)(gos_device *d, int mhz);
    int (*reset_clock)(gos_device *d);

    /* Current SM clock, clocks-event reasons, temperature, power. */
    int (*status)(gos_device *d, gos_dvfs_status *st);
};

/* Checked wrappers for callers above the device layer (dvfs_ops.c): a missing
 * operation answers GOS_EUNSUPPORTED with one line, bad arguments GOS_EINVAL.
 * gos_dvfs_host_now answers 0 (and sets the error) when missing; callers check
 * gos_dvfs_check first, which succeeds when the device has every primitive a
 * campaign needs (all but set_clock / reset_clock). */
int gos_dvfs_check(gos_device *d);
/* GOS_OK when SM clocks may be changed: always on a device whose clocks are not
 * a system-wide setting (no GOS_CAP_SYSTEM_CLOCKS), otherwise only when the user
 * allowed it (--allow-clock-changes); GOS_EPERM with one line else. */
int gos_dvfs_clock_permission(const gos_device *d, int allowed);
int64_t gos_dvfs_host_now(gos_device *d);
int gos_dvfs_host_sleep(gos_device *d, int64_t ns);
int gos_dvfs_workload_start(gos_device *d, const gos_dvfs_workload *w);
int gos_dvfs_workload_wait(gos_device *d, gos_dvfs_trace *tr);
int gos_dvfs_timer_exchange(gos_device *d, int n, int64_t *host_before, int64_t *gpu, int64_t *host_after);
int gos_dvfs_set_clock(gos_device *d, int mhz);
int gos_dvfs_reset_clock(gos_device *d);
int gos_dvfs_read_status(gos_device *d, gos_dvfs_status *st);

static inline void gos_dvfs_trace_free(gos_dvfs_trace *tr)
{
    free(tr->sm);
    free(tr->off);
    free(tr->start_ns);
    free(tr->end_ns);
    tr->sm = NULL;
    tr->off = NULL;
    tr->start_ns = tr->end_ns = NULL;
    tr->n_sms = 0;
}

/* Allocates a trace of n_sms SMs with `iters` iterations each (off filled). */
static inline int gos_dvfs_trace_alloc(gos_dvfs_trace *tr, int n_sms, size_t iters)
{
    tr->n_sms = n_sms;
    tr->sm = calloc(n_sms ? (size_t)n_sms : 1, sizeof *tr->sm);
    tr->off = calloc((size_t)n_sms + 1, sizeof *tr->off);
    size_t total = (size_t)n_sms * iters;
    tr->start_ns = malloc((total ? total : 1) * sizeof *tr->start_ns);
    tr->end_ns = malloc((total ? total : 1) * sizeof *tr->end_ns);
    if (!tr->sm || !tr->off || !tr->start_ns || !tr->end_ns) {
        gos_dvfs_trace_free(tr);
        return gos_fail(GOS_ENOMEM, "out of memory for a trace of %d SMs x %zu iterations", n_sms, iters);
    }
    for (int k = 0; k <= n_sms; k++)
        tr->off[k] = (size_t)k * iters;
    return GOS_OK;
}

#endif
