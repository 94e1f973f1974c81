/* SPDX-License-Identifier: Apache-2.0 */
/* simulate.h: a discrete-event simulator of vGPU clients sharing one GPU through the
 * scheduler (sched.h), in virtual time. Pure and deterministic: the same config and
 * seed give the same numbers on every machine; no clock, no threads, no GPU.
 *
 * Model. Each vGPU has one or more streams; a stream is a closed-loop client: it
 * submits a request, waits for its completion, "thinks" for think_ns (its own CPU
 * work and the round trip through the daemon), and submits the next. A cycle is an
 * optional copy followed by a kernel (each waits for the previous). After `burst`
 * cycles a stream pauses burst_gap_ns (bursty work, paper 002, section 5.2). Task
 * lengths are the given means times a uniform factor in [1 - jitter, 1 + jitter].
 * Engines run one task at a time (the scheduler's model); a task's GPU time is its
 * length, reported to gos_sched_done() on completion. An idle engine asks
 * gos_sched_next() after every submit and completion and at every wake time.
 *
 * Fairness is measured on what the scheduler shares: engine time allocated to each
 * vGPU, i.e. its GPU time plus the time BAND held the engine idle waiting for its
 * next request (a hold is charged to that vGPU by the scheduler, so it is part of
 * what the vGPU was given; FIFO and Credit never hold); with band_free_hold, GPU
 * time alone. achieved_i = vGPU i's allocated time on a resource /
 * all vGPUs' allocated time on it; target_i = share_i / sum of shares (of the vGPUs
 * that submit that kind of work); error = |achieved - target| in percentage points.
 * gpu_pct (GPU time only) and busy_pct show what the holds cost. The shares can only
 * be met when every vGPU's demand exceeds its share (a client that thinks longer
 * than it computes cannot use 50 % of a GPU); the tests' workloads satisfy this. */
#ifndef GOS_SCHED_SIMULATE_H
#define GOS_SCHED_SIMULATE_H

#include "sched/sched.h"

#include <stdint.h>

#define GOS_SIM_MAX_VGPUS 16
#define GOS_SIM_MAX_STREAMS 8 /* per vGPU */
#define GOS_SIM_ALL (-1)      /* "both kinds" for gos_sim_result_between (SDQ) */

typedef struct {
    int compute_share, copy_share; /* percent (1..100) */
    uint64_t kernel_ns;            /* mean kernel length; 0: no kernels */
    uint64_t copy_ns;              /* mean copy before each kernel; 0: no copies */
    double jitter;                 /* 0..0.9 */
    uint64_t think_ns;             /* between a completion and the next submit */
    int burst;                     /* cycles per burst; 0 or 1: no pauses */
    uint64_t burst_gap_ns;         /* pause after each burst */
    int streams;                   /* closed loops of this vGPU; 0 means 1 */
    int split;                     /* nonzero: kernels and copies come from separate
                                      closed loops (`streams` of each), not from
                                      copy-then-kernel cycles; a cycle is one task */
    int priority;                  /* priority of its tasks */
} gos_sim_vgpu;

typedef struct {
    const char *policy;   /* "fifo" | "credit" | "band" */
    int mode;             /* GOS_SCHED_MRQ | GOS_SCHED_SDQ */
    uint64_t period_ns;   /* 0: default */
    int64_t band_wait_ns; /* < 0: default */
    int band_free_hold;   /* nonzero: gos_sched_set_band_charge_hold(s, false) */
    uint64_t seed;
    int nvgpus;
    gos_sim_vgpu vgpu[GOS_SIM_MAX_VGPUS];
} gos_sim_config;

typedef struct gos_sim gos_sim;

/* Cumulative counters at one instant (GPU time includes the executed part of tasks
 * still running). */
typedef struct {
    uint64_t now;
    int nvgpus;
    uint64_t busy_ns[GOS_SIM_MAX_VGPUS][2]; /* [vgpu][kind] */
    uint64_t held_ns[GOS_SIM_MAX_VGPUS][2]; /* [vgpu][resource]: BAND holds (ended ones) */
    uint64_t cycles[GOS_SIM_MAX_VGPUS];     /* completed copy+kernel cycles */
} gos_sim_snapshot;

typedef struct {
    int nvgpus;
    double achieved_pct[GOS_SIM_MAX_VGPUS]; /* share of allocated engine time */
    double target_pct[GOS_SIM_MAX_VGPUS];
    double gpu_pct[GOS_SIM_MAX_VGPUS];      /* share of GPU time (holds left out) */
    double util_pct[GOS_SIM_MAX_VGPUS];     /* GPU time / elapsed time */
    double held_pct;                        /* held idle time / elapsed time */
    double cycles_per_s[GOS_SIM_MAX_VGPUS];
    double total_cycles_per_s;
    double busy_pct;        /* sum of util_pct (can exceed 100 for GOS_SIM_ALL in MRQ) */
    double max_error_pct;   /* max over vGPUs of |achieved - target| */
} gos_sim_result;

/* Builds the scheduler (vGPU i gets id i) and the clients at virtual time 0.
 * GOS_EINVAL on a bad config (also the scheduler's own errors), GOS_ENOMEM. */
int gos_sim_new(const gos_sim_config *cfg, gos_sim **out);
void gos_sim_free(gos_sim *sim);

/* Runs the event loop until virtual time t_ns (no-op if already there). */
int gos_sim_run_until(gos_sim *sim, uint64_t t_ns);

/* Changes vGPU i's shares at the current virtual time (gos_sched_vgpu_set_shares). */
int gos_sim_set_shares(gos_sim *sim, int i, int compute_share, int copy_share);

void gos_sim_snapshot_get(const gos_sim *sim, gos_sim_snapshot *out);
uint64_t gos_sim_now(const gos_sim *sim);
gos_sched *gos_sim_sched(gos_sim *sim);

/* Fairness between two snapshots for one kind (GOS_SCHED_COMPUTE, GOS_SCHED_COPY) or
 * GOS_SIM_ALL (both kinds together, targets from the compute shares, as SDQ
 * accounts). vGPUs without work of that kind are left out of the error. */
void gos_sim_result_between(const gos_sim *sim, const gos_sim_snapshot *a,
                            const gos_sim_snapshot *b, int kind, gos_sim_result *out);

/* The fairness workload of the tests and of bench/sched_sim.c ("bursty-10x"):
 * n vGPUs with the given shares (compute = copy), closed-loop clients in bursts of
 * 8 kernels, 20 us think time, 200 us pause between bursts, lengths jittered by
 * +-20 %; even vGPUs run 100 us kernels, odd ones 1 ms (10x). Seed 42, default
 * period and BAND wait. n <= GOS_SIM_MAX_VGPUS. */
void gos_sim_bursty_config(gos_sim_config *c, const char *policy, int mode, int n,
                           const int *shares);

/* Convenience: new, run warmup_ns, measure for duration_ns, free. */
int gos_sim_run(const gos_sim_config *cfg, uint64_t warmup_ns, uint64_t duration_ns,
                int kind, gos_sim_result *out);

#endif
