/* SPDX-License-Identifier: Apache-2.0 */
/* executor.h: the daemon's side of an executor process (issue 9; xproto.h).
 * Calls on one executor are serialised by its own lock (never the daemon's);
 * a dead executor (faulted, killed, channel broken) answers every later call
 * with GOS_EDEVICE and the reason.
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_EXECUTOR_H
#define GOS_SERVE_EXECUTOR_H

#include "proto/xproto.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* OOM scores chosen on purpose (issue 23.3; hostmem.c): an executor holds one
 * tenant's context, the daemon everyone's, so the kernel takes an executor first. */
#define SRV_OOM_DAEMON (-500)
#define SRV_OOM_EXECUTOR 500
#define SRV_OOM_EXECUTOR_STR "500"
/* executor = per-vgpu: what the channels of one shared executor know of its end.
 * The executor answers the faulting client's request, then exits: its other
 * clients' channels may break a moment before the daemon reads that answer. */
struct srv_exec_share {
    pthread_mutex_t lock;
    int lost;      /* a channel saw a device fault */
    int by_exit;   /* only the executor's exit status told it (why has no error name yet) */
    char why[400]; /* the reason, for the others */
    char vgpu[64];
};

struct srv_exec {
    pid_t pid;
    int sock;
    pthread_mutex_t lock;
    int dead;      /* set once; read without the lock as a hint */
    int faulted;   /* dead by a device fault (X_FAULTED), not by a broken channel */
    char why[400]; /* why it is dead */
    char fate[400]; /* set before the daemon kills it (srv_exec_fail) */
    int fated;
    void *buf;
    size_t cap;
    uint64_t mem_total;
    gos_device_info info; /* the device's facts, as the executor opened it */
    struct srv_dev_attrs attrs; /* its attributes (DEVICE_ATTRS) */
    int shared; /* a client's channel to a shared executor (executor = per-vgpu): closing it
                 * ends that client's part there, not the process */
    struct srv_exec_share *share; /* set with shared: a broken channel waits for a sibling's fault */
};

/* Opens the daemon's own binary for later spawns (at start: a binary replaced
 * on disk while the daemon runs is not the one its executors run). */
int srv_exec_prepare(void);
/* How an executor runs beside the others of an MPS server (issue 41: a batch
 * vGPU's beside a latency vGPU's; srv_vgpu_exec_class). All zero: as any. */
struct srv_exec_class {
    int sm_pct;  /* at most this % of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, latency_sms); 0: no limit */
    int prio;    /* its queues at the least (< 0) or greatest (> 0) stream priority; 0: the default */
    int mps_low; /* an MPS client of below-normal priority (CUDA_MPS_CLIENT_PRIORITY=1) */
};
/* Spawns `gpuos executor` on the device (sim: a chip, or NULL for the GPU of that
 * ordinal) and waits for it to open the device; under MPS (mps_dir) as cls
 * says (NULL: as any). */
int srv_exec_spawn(const char *sim, int ordinal, const char *mps_dir, const struct srv_exec_class *cls,
                   struct srv_exec **out);
/* executor = per-vgpu: a channel for one more client to the shared executor
 * whose control channel is ctl (it serves it from a thread of its own). */
int srv_exec_adopt(struct srv_exec *ctl, struct srv_exec **out);
/* Whether x's process is gone (its channel hung up; a hint, no exchange). */
int srv_exec_hungup(struct srv_exec *x);
/* Records x's loss seen from outside an exchange (faulted: by a device fault). */
void srv_exec_lost(struct srv_exec *x, int faulted, const char *why);
/* Ends x because of something outside it (another MPS client's fault): its
 * callers get GPUOS_EDEVICE with why. */
void srv_exec_fail(struct srv_exec *x, const char *why);
/* A dead x whose channel merely broke (not faulted) gets the daemon's reason
 * instead of the bare one (a shared executor lost to another client's fault). */
void srv_exec_refate(struct srv_exec *x, const char *why);
/* One request, its answer's payload copied into rep (at most repn bytes). */
int srv_exec_call(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, void *rep, size_t repn);
/* The same, for a request whose answer carries a descriptor (*rfd, -1 if none). */
int srv_exec_call_fd(struct srv_exec *x, uint32_t type, const void *req, uint32_t n, int fd, void *rep, size_t repn,
                     int *rfd);
/* A grant: ops (struct x_op, each followed by its params) run back to back on the
 * engine; rcs[i] each op's result, msg the first error's text, *gpu_ns the time. */
int srv_exec_run(struct srv_exec *x, int engine, const void *ops, uint32_t bytes, uint32_t n, int32_t *rcs,
                 char *msg, size_t msgcap, uint64_t *gpu_ns);
/* Ends the process (SIGKILL: its context and memory go with it) and frees x;
 * a shared executor's client channel (x->shared) is closed instead: the
 * executor releases what that client held and serves the others on. */
void srv_exec_close(struct srv_exec *x);
/* Kills the process now (kill -9 semantics), keeping x for its callers. */
void srv_exec_kill(struct srv_exec *x);

#endif
