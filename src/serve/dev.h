/* SPDX-License-Identifier: Apache-2.0 */
/* dev.h: one scheduler of the daemon (struct srv_dev: a device, or an SM set
 * of one, serve/spatial.c), its engines' threads and the length of its grants
 * (grant.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_DEV_H
#define GOS_SERVE_DEV_H

#include "device/device.h"
#include "proto/xproto.h"
#include "sched/sched.h"
#include "serve/executor.h"
#include "vmem/swap_policy.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct srv;
struct srv_task;
struct srv_swpool;

/* isolation = process: a batch is one grant to one executor, and the GPU pays
 * ~140 us to switch between two processes' contexts (H200-NOTES), so grants are
 * longer by default (grant_us; issue 9). */
#define SRV_GRANT_PROCESS_NS 4000000ull
/* grant_us = auto (the default with executors): the daemon measures what a
 * switch between two executors costs (a batch's exchange time beyond its GPU
 * time, when the batch before it on the device was another executor's) and
 * makes grants SRV_GRANT_AUTO_DIV times that long, so switching costs at most
 * 1/SRV_GRANT_AUTO_DIV (1 %) of the GPU, within [SRV_GRANT_PROCESS_NS,
 * SRV_GRANT_AUTO_MAX_NS]: the longest a busy neighbour makes a client wait. */
/* (40, 2.5 %, until stop 29: two tenants synchronising after every 1 ms kernel kept
 * 95.5 % of an H200 busy with the 4 ms grants that gave, 97.5 % with 16 ms ones,
 * results/GPU-e7c90608-.../stop29b-f653c8d) */
#define SRV_GRANT_AUTO_DIV 100u
#define SRV_GRANT_AUTO_MAX_NS 16000000ull
#define SRV_SWITCH_SAMPLE_MAX_NS 2000000ull /* one sample counts at most this (a stall is no switch) */
/* A batch may exceed its grant by this fraction of it: an op's time is measured
 * with jitter, and a grant of four 1 ms kernels must take the fourth */
#define SRV_GRANT_SLACK_DIV 8u

struct srv_dev {
    struct srv *srv;
    int index;
    gos_device *dev;
    gos_sched *sched;
    int n_engines;
    pthread_t threads[GOS_SCHED_MAX_ENGINES];
    /* Per engine: the dispatcher's wake-up, the instant it sleeps until (0: awake),
     * and a task handed to it by another thread, already taken from the policy
     * (in flight), whose ops are already issued when handed_issued is set. */
    pthread_cond_t cond[GOS_SCHED_MAX_ENGINES];
    uint64_t sleep_until[GOS_SCHED_MAX_ENGINES];
    struct srv_task *handed[GOS_SCHED_MAX_ENGINES];
    int handed_issued[GOS_SCHED_MAX_ENGINES];
    void *streams[GOS_SCHED_MAX_ENGINES];
    void *ev[GOS_SCHED_MAX_ENGINES][2];
    uint64_t mem_total;
    /* An SM set's scheduler (serve/spatial.c): shares `dev` with the device it
     * came from (not closed here), its compute engine's stream is on gctx. */
    int shared_dev;
    void *gctx;
    struct srv_dev_attrs attrs; /* its attributes (DEVICE_ATTRS), read once at start */
    gos_device_info info; /* the device's facts (from a probe executor under process / mps:
                           * the daemon then holds no device context at all, dev == NULL) */
    int isolation;  /* GOS_ISOLATION_* */
    int executor_per_vgpu; /* executor = per-vgpu (process / mps) */
    int overlap;           /* overlap = pairs (mps; ring_pair.c) */
    int handover;          /* 1: a latency grant starts beside the batch grant (companion_now, ring.c) */
    int latency_sms;       /* mps: percent of the SMs batch executors leave to latency vGPUs (0: none) */
    int latency_priority;  /* mps: GOS_LATPRIO_* bits (stream / MPS client priorities by class) */
    char mps_dir[64]; /* isolation = mps on a GPU: the MPS server's pipe/log directory ("" none) */
    uint64_t mps_restarted_ns; /* clients born before belong to the previous server */
    uint64_t grant_ns; /* a batch's expected GPU time at most (grant_us) */
    uint64_t grant_min_ns; /* a credit-capped grant at least (grant_min_us; 0: auto, by share) */
    int grant_auto;    /* grant_us = auto: grant_ns follows switch_ns (dispatch.c) */
    uint64_t switch_ns; /* measured cost of a switch between executors (moving average), 0: none yet */
    uint64_t preemptions; /* batch grants ended early for a latency vGPU (issue 41) */
    uint64_t companions;  /* latency grants run at once beside a batch grant (mps; issue 41) */
    uint64_t switches;  /* batches that followed another executor's */
    pid_t last_pid;     /* the executor process of the device's last batch (0: none yet);
                         * clients sharing one (executor = per-vgpu) switch nothing */
    char sim[256];  /* the executors' device: a chip, or "" for the GPU of ordinal */
    gos_swap *sw; /* swapping on this device (swap.c, issue 10.2); NULL: off */
    int ordinal;
    struct srv_swpool *swp; /* its host swap pool (swap.c): one memfd, offsets */
    /* rings (issue 22; ring.c): the doorbell its executors ring when an entry
     * waits for a grant (an eventfd), and the thread that answers it */
    int bell_fd;
    pthread_t bell_thread;
    int bell_started;
    int clients_now; /* clients on it that have asked for it (srv_ring_rotation): a lone one's
                      * grants are of any kind and never yield to nobody */
};

/* grant.c: the expected GPU time a batch may reach (the grant and its slack);
 * grant_us = auto learns a switch's cost from an executor's batch (lock held). */
uint64_t srv_grant_limit(const struct srv_dev *d);
uint64_t srv_grant_for(struct srv_dev *d, uint32_t vgpu_id);
/* The shortest grant srv_grant_for gives a vGPU over its share (grant_min_us
 * = auto: the least of its share-scaled grant). */
#define SRV_GRANT_SHARE_MIN_NS 2000000ull
void srv_grant_learn(struct srv_dev *d, pid_t executor, uint64_t wall_ns, uint64_t gpu_ns);

/* An executor on d's device (its chip or GPU ordinal, under its MPS server
 * where it has one), as cls says (NULL: as any): srv_exec_spawn. */
static inline int srv_dev_exec_spawn(const struct srv_dev *d, const struct srv_exec_class *cls,
                                     struct srv_exec **out)
{
    return srv_exec_spawn(d->sim[0] ? d->sim : NULL, d->ordinal, d->mps_dir[0] ? d->mps_dir : NULL, cls, out);
}

/* spatial.c: spatial vGPUs (issue 13). After the devices are open: gives every
 * vGPU with `sms` an SM set (vGPUs naming one smset share it) and a scheduler of
 * its own on it (an extra srv_dev sharing the device, its compute stream on the
 * set's green context); the vGPU's device index then names that scheduler. */
int srv_spatial_open(struct srv *s);
/* Releases an SM set's green context (its streams destroyed first). */
void srv_spatial_close(struct srv_dev *d);

#endif
