/* SPDX-License-Identifier: Apache-2.0 */
/* policy.h: internals shared by the scheduler core (sched.c) and its policies
 * (policy_fifo.c, policy_credit.c, policy_band.c). Not a public header.
 *
 * A policy is a vtable in Gdev's style (gdev_vsched_*: schedule, select_next,
 * replenish, ...). The core owns the queues, the vGPU table, the engines and the
 * accounting; a policy only decides which vGPU an idle engine serves next.
 *
 * "Resource" (res) is what a share applies to: in MRQ res 0 is compute and res 1
 * copy (res == engine == kind); in SDQ there is only res 0 (the device). */
#ifndef GOS_SCHED_POLICY_H
#define GOS_SCHED_POLICY_H

#include "sched/sched.h"

#include <stdbool.h>
#include <stddef.h>

/* Sliding-window utilisation: GOS_SCHED_NBUCKETS buckets of period/NBUCKETS each. */
#define GOS_SCHED_NBUCKETS 16

typedef struct {
    uint64_t idx[GOS_SCHED_NBUCKETS + 1]; /* absolute bucket index held by each slot */
    uint64_t ns[GOS_SCHED_NBUCKETS + 1];
} gos_sched_window;

typedef struct {
    gos_sched_task *head, *tail; /* sorted: priority desc, then seq asc */
    uint32_t queued;
    int share, cap;              /* percent; cap 0 = none */
    int64_t credit;              /* ns; credit and band */
    uint64_t used_period;        /* GPU ns accounted in the current period */
    uint64_t last_dispatch;      /* dispatch counter value (round-robin order) */
    int in_flight;               /* tasks of this vGPU on this resource's engine */
    uint64_t longest;            /* its longest task lately on that engine, decaying
                                  * as the engine's does (BAND's hold, policy_band.c) */
} gos_sched_res;

typedef struct gos_vgpu {
    uint32_t id;
    bool used;
    uint64_t order;                     /* insertion order, for gos_sched_vgpu_ids */
    gos_sched_res res[GOS_SCHED_MAX_ENGINES];
    gos_sched_window win[2];            /* GPU time, per task kind */
    uint64_t kind_ns[2], kind_done[2];  /* per task kind */
    gos_sched_window held_win[GOS_SCHED_MAX_ENGINES]; /* BAND holds, per resource */
    uint64_t held_ns[GOS_SCHED_MAX_ENGINES];
    uint64_t latency_ns; /* its work must start within this (0: a batch vGPU; issue 41) */
    /* A latency vGPU's GPU time per engine, decayed with a time constant of
     * GOS_SCHED_LATENCY_HORIZON periods (ns), and when last decayed: its use
     * over the spacing of its requests, not over one period (sched.c,
     * gos_sched_latency_util) */
    double lat_use[GOS_SCHED_MAX_ENGINES];
    uint64_t lat_t[GOS_SCHED_MAX_ENGINES];
    bool lat_over[GOS_SCHED_MAX_ENGINES]; /* over its share until back under GOS_SCHED_LATENCY_RESUME of it */
} gos_vgpu;

typedef struct gos_sched_policy {
    const char *name;
    /* on_arrival: a task of v was queued on res (Gdev's schedule_*). May be NULL. */
    void (*schedule)(gos_sched *s, gos_vgpu *v, int res, uint64_t now);
    /* The vGPU whose queue head an idle engine of res runs now, or NULL; on NULL
     * *wake is the time to ask again (GOS_SCHED_NEVER if only an event can help).
     * Only vGPUs with queued tasks on res and not capped may be returned
     * (gos_sched_eligible). */
    gos_vgpu *(*select_next)(gos_sched *s, int res, uint64_t now, uint64_t *wake);
    /* At a period boundary, after the core closed the period (Gdev's replenish_*).
     * period_used: GPU ns all vGPUs used on res in the period that ended. */
    void (*replenish)(gos_sched *s, int res, uint64_t period_used);
    /* Task t of v (v NULL if its vGPU was removed) completed on res after gpu_ns
     * (on_completion). The core has already accounted the time. May be NULL. */
    void (*complete)(gos_sched *s, gos_vgpu *v, int res, const gos_sched_task *t,
                     uint64_t gpu_ns, uint64_t now);
    /* v is being removed (drop references to it). May be NULL. */
    void (*forget)(gos_sched *s, gos_vgpu *v);
    /* v used gpu_ns of res outside a task's completion (gos_sched_charge: a
     * running ring grant's time as it goes, issue 22). The core has already
     * accounted the time. May be NULL. */
    void (*charge)(gos_sched *s, gos_vgpu *v, int res, uint64_t gpu_ns, uint64_t now);
    /* Whether the vGPU of res's running task would be served before every vGPU
     * with work queued on res, were its task queued again now (a ring grant at
     * its deadline goes on instead of being handed back to the same vGPU). May be
     * NULL: never. */
    bool (*keeps)(gos_sched *s, int res, uint64_t now);
    /* Whether v (latency_ns set) is in the latency class on res now, served
     * before every batch vGPU (issue 41; gos_sched_preempts). May be NULL: the
     * policy has no classes (FIFO). */
    bool (*latency_first)(gos_sched *s, gos_vgpu *v, int res, uint64_t now);
} gos_sched_policy;

extern const gos_sched_policy gos_sched_policy_fifo;
extern const gos_sched_policy gos_sched_policy_credit;
extern const gos_sched_policy gos_sched_policy_band;

/* BAND's hold of an engine for one vGPU (Gdev's wait_for_short). By default the
 * engine time a hold reserves is charged to that vGPU like GPU time (credit,
 * utilisation, period use): the vGPU whose request the engine waits for pays for
 * the wait, so a hold can never push the others below their shares. Only the part
 * during which another vGPU's work was kept waiting counts (and is reported as
 * held): an engine nobody else wanted costs nobody anything. Without the charge
 * (gos_sched_set_band_charge_hold(s, false)) shares are of GPU time alone. */
typedef struct {
    uint32_t vgpu, client; /* the vGPU waited for, and the client whose task ended */
    bool active;
    bool blocking;         /* another vGPU's work has been kept waiting */
    uint64_t start, until;
    uint64_t blocking_since;
} gos_sched_hold;

struct gos_sched {
    const gos_sched_policy *policy;
    int mode, nres;
    uint64_t period, band_wait;
    bool band_charge_hold; /* holds count as the held vGPU's time (default) */
    uint64_t now, period_start;
    uint64_t seq, dispatches, vgpu_order;
    gos_vgpu vgpus[GOS_SCHED_MAX_VGPUS];
    gos_sched_task *running[GOS_SCHED_MAX_ENGINES];
    gos_sched_hold hold[GOS_SCHED_MAX_ENGINES];
    /* the longest task lately on each engine (its start to its end: a ring
     * grant charged in pieces counts whole), decaying towards the newer ones:
     * credit's bound (policy_credit.c) */
    uint64_t longest[GOS_SCHED_MAX_ENGINES];
    uint32_t total_queued;
};

/* Helpers for policies (sched.c). */
gos_vgpu *gos_sched_find(gos_sched *s, uint32_t id);
/* The resource a kind of task is charged to. */
int gos_sched_res_of(const gos_sched *s, int kind);
/* True if v has queued work on res and its cap allows it to run now. */
bool gos_sched_eligible(const gos_sched *s, const gos_vgpu *v, int res);
/* True if v's cap blocks it in the current period. */
bool gos_sched_capped(const gos_sched *s, const gos_vgpu *v, int res);
/* Active on res: queued work, a task in flight, or GPU time in the current period. */
bool gos_sched_active(const gos_sched *s, const gos_vgpu *v, int res);
/* Sum of the shares on res of the active vGPUs. */
int gos_sched_active_share_sum(const gos_sched *s, int res);
/* The longest task lately on res: the engine's, or the longest of an active
 * vGPU's own when that is longer (a vGPU's own decays only with its own tasks:
 * a dozen short grants of one vGPU forget the engine's 50 ms kernel of
 * another before that one's next). Credit's bound (policy_credit.c). */
uint64_t gos_sched_longest_active(const gos_sched *s, int res);
/* Starts a hold of engine res for v (after a task of `client`) from now until `until`. */
void gos_sched_hold_begin(gos_sched *s, int res, gos_vgpu *v, uint32_t client, uint64_t now,
                          uint64_t until);
/* Notes that the hold of engine res keeps another vGPU's work waiting from now on. */
void gos_sched_hold_blocks(gos_sched *s, int res, uint64_t now);
/* Ends the hold of engine res (if any) at min(now, its end): the time it kept others
 * waiting is recorded as held time of its vGPU (if it still exists) and, if holds
 * are charged, debited like GPU time. */
void gos_sched_hold_end(gos_sched *s, int res, uint64_t now);
/* v's GPU time (plus held time if holds are charged) on res over the last period
 * ending at now, as a fraction of the period. */
double gos_sched_util(const gos_sched *s, const gos_vgpu *v, int res, uint64_t now);
/* A latency vGPU's use of res over GOS_SCHED_LATENCY_HORIZON periods, decayed to
 * now, as a fraction of the engine (0 for a batch vGPU). */
double gos_sched_latency_util(const gos_sched *s, const gos_vgpu *v, int res, uint64_t now);


/* Credit accounting shared by credit and band (policy_credit.c): every active
 * vGPU receives period_used * share / sum of active shares (credit is redistributed,
 * never created from idle time), then credit is clamped to [-bound, +bound], bound
 * the period or the longest task lately on that engine, whichever is longer.
 * Inactive vGPUs keep no positive credit (no banking: credits are not over-granted). */
void gos_sched_credit_replenish(gos_sched *s, int res, uint64_t period_used);
/* Debit measured GPU time. */
void gos_sched_credit_charge(gos_sched *s, gos_vgpu *v, int res, uint64_t gpu_ns, uint64_t now);
void gos_sched_credit_complete(gos_sched *s, gos_vgpu *v, int res, const gos_sched_task *t,
                               uint64_t gpu_ns, uint64_t now);

#endif
