/* SPDX-License-Identifier: Apache-2.0 */
/* config.h: the configuration file of `gpuos serve`.
 *
 *   # comments and blank lines are ignored
 *   socket = /tmp/gpuos.sock     # may be overridden by --socket
 *   socket_mode = 0660           # who may connect: the socket file's permissions
 *   chunk = 4M                   # copy chunk size advertised to clients
 *   depth = 3                    # copy pipeline depth advertised to clients
 *   spin_us = 50                 # a connection's reader polls this long for the next
 *                                # request before sleeping (0: never; default 50 on
 *                                # hosts of 8 CPUs or more, else 0)
 *
 *   # limits (issue 15; docs/readme-vgpu.md "Limits"): defaults shown
 *   max_clients = 1024           # connections at once (one thread each); more are
 *                                # refused with GPUOS_ELIMIT; lowered to fit the
 *                                # descriptor limit (RLIMIT_NOFILE)
 *   max_clients_per_vgpu = 256   # clients of one vGPU at once
 *   max_queued_requests = 4096   # copies and launches one client has queued
 *   max_queued_bytes = 64M       # daemon memory one client's queued requests hold
 *   max_allocations = 65536      # device allocations of one client
 *   hello_timeout_ms = 10000     # a connection that sends no HELLO is dropped
 *   shutdown_grace_ms = 10000    # SIGTERM: running work may finish this long, then
 *                                # it is abandoned and the daemon exits
 *   memory_oversubscribe = 0     # 1: memory shares may sum past 100 % (warning)
 *   shm_segments_per_vgpu = 32   # shared segments one vGPU may hold (of 256 in all)
 *   shm_segments_per_user = 64   # shared segments one uid may have created
 *   shm_bytes_per_user = 0       # their bytes (0: only the memory shares bound them)
 *
 *   [device 0]                   # CUDA ordinal, or any label with `sim = CHIP`
 *   sim = default                # optional: a simulated chip ("default" or a file)
 *   policy = band                # fifo | credit | band
 *   queue = mrq                  # mrq | sdq
 *   period_ms = 30
 *   band_wait_us = 500
 *   band_charge_hold = 1         # 1: shares of engine time (GPU + BAND's holds),
 *                                # 0: shares of GPU time alone (Gdev's utilisation)
 *   chip = chip.json             # optional: the chip's chart (metrics, spatial vGPUs,
 *                                # partition-local memory of clients: gpuos_pmem_alloc)
 *                                # (default: the topology is charted at start)
 *   swap = 0                     # host swap space (issue 10.2): allocations become
 *                                # VMM-backed and swappable; 0: off
 *   swap_pool = 0                # what allocations may occupy on the device (0: all)
 *   swap_turn_ms = auto          # busy tenants that do not fit together take turns
 *                                # this long (auto: 10 x the turn's measured swap)
 *   swap_wait_s = 120            # a request waits this long for its turn, then fails
 *   swap_host_wait_s = 60        # ... this long for host memory another vGPU holds
 *   swap_prefault = auto         # fault the host pool in at start (background), as
 *                                # far as the vGPUs' quotas can need it (1: all of it)
 *   swap_helper = 1              # an executor of the daemon's own keeps the pool
 *                                # page-locked and makes the swap copies (0: each
 *                                # tenant's executor locks and copies its own)
 *   isolation = process          # process: each client's device work in an executor
 *                                # process of its own (own address space, faults
 *                                # contained); none: one context in the daemon for
 *                                # trusted tenants (docs/readme-vgpu.md, issue 9);
 *                                # mps: executors are clients of an MPS server the
 *                                # daemon starts (a fault reaches all of them)
 *   executor = per-client        # process / mps: an executor per client, or one
 *                                # per vGPU (per-vgpu) shared by its clients
 *                                # (cooperating processes: one address space and
 *                                # one fate among them, no switch between them)
 *   overlap = pairs              # mps (its default there): two rings of equal shares
 *                                # and alike work hold grants at once, their kernels
 *                                # overlapping (serve/ring_pair.c); off: one at a
 *                                # time (the only choice under process and none)
 *   handover = preempt           # how a latency vGPU's work (latency_ms) meets a
 *                                # busy device: preempt ends the batch grant at its
 *                                # next kernel boundary; beside starts the latency
 *                                # grant at once next to it (process: the driver
 *                                # time-slices the two executors; mps: their
 *                                # kernels share SMs). Unset: beside where overlap
 *                                # is pairs (mps), preempt otherwise
 *   latency_sms = 0              # mps, with a latency vGPU on the device: the
 *                                # batch vGPUs' executors use at most 100 - N % of
 *                                # the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), so
 *                                # the latency tenant's kernels find SMs free
 *   latency_priority = both      # mps, with a latency vGPU on the device: stream
 *                                # puts the latency executors' queues at the
 *                                # greatest stream priority (the batch ones' at
 *                                # the least), so the GPU starts their blocks
 *                                # first as SMs free up; client makes the batch
 *                                # executors MPS clients of below-normal priority
 *                                # (CUDA_MPS_CLIENT_PRIORITY=1); both, or off.
 *                                # Unset: both under mps, off otherwise
 *   grant_us = auto              # a batch of one client's queued work (one grant
 *                                # to its executor) lasts this long at most, by the
 *                                # client's recent GPU time per op; auto (the
 *                                # default with executors): 100 x the measured cost
 *                                # of a switch between executors, 4000..16000;
 *                                # 1000 with isolation = none
 *   grant_min_us = auto          # a small vGPU's credit-capped grant lasts at
 *                                # least this; auto (the default): grant_us x
 *                                # its share over the largest busy share, at
 *                                # least 2000
 *
 *   [vgpu alice]
 *   device = 0                   # the [device] section's label
 *   compute = 50                 # compute bandwidth share, percent
 *   copy = 50                    # copy bandwidth share, percent
 *   memory = 25%                 # memory share: percent of the device, or bytes (4G)
 *   sms = 64                     # optional, spatial vGPU (issue 13, serve/spatial.c):
 *   cluster = 8                  # an SM set on which 64 SMs run clusters of 8;
 *   smset = x                    # vGPUs naming the same smset share one set (BAND)
 *
 * Keys of daemon operation (parsed in config_ext.c; docs/readme-vgpu.md,
 * "Configuration keys"): global state, metrics_listen, socket_group; [device]
 * chip; [vgpu] users, groups, cgroup, latency_ms.
 *
 * Errors name the file, the line and the problem.
 * Process: the daemon (gpuos serve).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_CONFIG_H
#define GOS_SERVE_CONFIG_H

#include "proto/proto.h"

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define GOS_SERVE_MAX_DEVICES 8
/* The metrics port gpuos documents and ships in its sample configuration: not
 * dcgm-exporter's 9400, which runs beside it on GPU nodes. */
#define GOS_METRICS_PORT_STR "9841"
#define GOS_SERVE_MAX_IDS 32 /* users = / groups = entries per vGPU */
#define GOS_SERVE_CGROUP_MAX 512 /* cgroup = (peercg.c), its terminating NUL included */

struct gos_serve_devcfg {
    char label[32];
    char sim[256]; /* "" real GPU */
    int ordinal;
    char policy[16];
    char queue[8];
    uint64_t period_ns;
    uint64_t band_wait_ns;
    int band_charge_hold; /* 1: BAND charges held engine time to the vGPU it waits for */
    int isolation; /* GOS_ISOLATION_* */
    int executor_per_vgpu; /* executor = per-vgpu: a vGPU's clients share one executor */
    int overlap;           /* overlap = pairs (mps): companion grants (serve/ring_pair.c); -1 unset */
    int handover;          /* handover = beside (1): a latency vGPU's grant runs beside the batch grant; -1 unset */
    int latency_sms;       /* mps: percent of the SMs batch vGPUs' executors leave to latency vGPUs (0: none) */
    int latency_priority;  /* mps: GOS_LATPRIO_* bits (latency_priority); -1 unset */
    /* Swapping (issue 10.2; docs/readme-shm.md): host swap space in bytes (0: off;
     * allocations are then plain device memory); swap_pool: what allocations may
     * occupy on the device (0: its memory). */
    uint64_t swap_bytes, swap_pool;
    /* Turns between busy tenants whose memory does not fit together (issue 42):
     * a turn's length (0: auto, by the measured swap time), how long a request
     * waits for its turn before it fails, how long one short of host memory
     * waits for another vGPU's memory to end (0: it fails at once), and
     * whether the host pool is faulted in at start (in the background,
     * bounded by what the host can give: 0, 1 the pool, GOS_SWAP_PREFAULT_AUTO
     * what the vGPUs' quotas can have swapped). */
    uint64_t swap_turn_ms;
    uint32_t swap_wait_s, swap_host_wait_s;
    int swap_prefault;
    int swap_helper; /* 1: the swap helper (serve/swap.c) */
    uint64_t grant_us; /* 0: auto (executors) or 1000 (isolation = none) */
    /* grant_min_us (issue 41): the least a small vGPU's credit-capped grant
     * lasts (serve/grant.c); 0: auto, the grant scaled by the vGPU's share
     * over the largest busy share, at least SRV_GRANT_SHARE_MIN_NS. */
    uint64_t grant_min_us;
    char chip[256];       /* gpuos.chip/1 file describing the device ("" none) */
    int spatial_of;       /* -1; for an SM set's scheduler (serve/spatial.c): its device */
};

enum { GOS_ISOLATION_PROCESS, GOS_ISOLATION_NONE, GOS_ISOLATION_MPS };
/* latency_priority (issue 41): off 0, stream 1, client 2, both 3. */
enum { GOS_LATPRIO_STREAM = 1, GOS_LATPRIO_CLIENT = 2 };
#define GOS_SWAP_PREFAULT_AUTO 2 /* swap_prefault = auto (the default) */

struct gos_serve_vgpucfg {
    int line, mem_line; /* of the section and of its memory key (0: none), for messages */
    char name[GOS_NAME_MAX];
    int device; /* index into devs */
    int compute, copy;
    double mem_pct;     /* > 0: percent of device memory */
    uint64_t mem_bytes; /* else bytes */
    /* Who may open it (users = / groups =): none of either listed: anyone who
     * can open the socket; else the peer's uid is listed or one of its groups. */
    int n_users, n_groups;
    uid_t users[GOS_SERVE_MAX_IDS];
    gid_t groups[GOS_SERVE_MAX_IDS];
    /* cgroup = (issue 43.2, serve/peercg.c): "" any; else only processes in
     * one of these cgroups or below it (blank-separated; /PATH: the unified
     * hierarchy; CTL:/PATH: v1's). */
    char cgroup[GOS_SERVE_CGROUP_MAX];
    int sms, cluster;   /* spatial vGPU: an SM set (0: none) */
    char smset[32];     /* vGPUs naming the same set share it; "" : a set of its own */
    int latency_ms;     /* latency class: its work starts within this (0: a batch vGPU; issue 41) */
};

struct gos_serve_config {
    char socket[108];
    unsigned socket_mode;
    long socket_gid; /* socket_group = (config_ext.c): the socket file's group; -1: the daemon's */
    uint64_t chunk;
    int depth;
    int spin_us; /* -1: by the number of CPUs */
    char path[256]; /* the file, for messages */
    /* limits */
    int max_clients, max_clients_per_vgpu, max_queued_requests, max_allocations;
    uint64_t max_queued_bytes;
    int hello_timeout_ms, shutdown_grace_ms;
    int memory_oversubscribe;
    int shm_segments_per_vgpu, shm_segments_per_user; /* issue 23.4 */
    uint64_t shm_bytes_per_user;                      /* 0: no limit but the memory shares */
    /* warnings found while parsing (oversubscribed compute or copy shares): the
     * daemon prints them */
    int n_warn;
    char warn[4][200];
    int n_devs;
    struct gos_serve_devcfg devs[GOS_SERVE_MAX_DEVICES];
    int n_vgpus;
    struct gos_serve_vgpucfg vgpus[GOS_MAX_VGPUS];
    char state[256];          /* where `vgpu set` persists ("" default, "none": nowhere) */
    char metrics_listen[128]; /* Prometheus endpoint HOST:PORT ("" off) */
};

/* latency_ms's largest value: a bound longer than a second is a batch vGPU's. */
#define GOS_SERVE_LATENCY_MAX_MS 1000

/* Parses a configuration text (`what` names it in messages). */
int gos_serve_config_parse(const char *text, const char *what, struct gos_serve_config *out);
int gos_serve_config_load(const char *path, struct gos_serve_config *out);

/* The keys of config_ext.c, called by the parser for every key of section kind
 * sect (0 global, 1 device, 2 vgpu; idx: the section's index). Returns 1 when
 * the key was one of them, 0 when not, -1 on a bad value (why filled). */
int gos_serve_config_ext_key(struct gos_serve_config *c, int sect, int idx, const char *k, const char *v,
                             char *why, size_t whylen);

/* cgroup = (serve/peercg.c): 0 when v is a blank-separated list of paths a
 * vGPU may name (/PATH or CONTROLLER:/PATH), else -1 with why filled. */
int gos_serve_cgroup_check(const char *v, char *why, size_t whylen);

/* Trims blanks at both ends of s in place; returns its first non-blank. */
char *gos_serve_trim(char *s);

/* GOS_EINVAL, one line naming what and showing s escaped, when s holds a control
 * character (a newline, carriage return, tab, any byte below 0x20, or DEL): in
 * a key=value argument it would add or hide lines wherever the text becomes
 * configuration lines (issue 44.7). GOS_OK otherwise. */
int gos_serve_text_check(const char *what, const char *s);

/* Parses "HOST:PORT" (IPv4 address, [IPv6 address], "localhost" or "*"). */
int gos_serve_parse_listen(const char *v, struct sockaddr_storage *sa, socklen_t *len);

/* Parses a memory share value ("25%", "512M", "1073741824"): no NaN, infinity,
 * sign or overflow. */
int gos_serve_parse_mem(const char *v, double *pct, uint64_t *bytes);

/* Parses a size: a non-negative decimal number (fraction allowed) with an
 * optional K/M/G/T suffix and B, within [lo, hi]; GOS_EINVAL otherwise. */
int gos_serve_parse_size(const char *v, uint64_t lo, uint64_t hi, uint64_t *out);

/* The memory quota a share gives on a device of mem_total bytes. */
uint64_t gos_serve_mem_quota(double pct, uint64_t bytes, uint64_t mem_total);

/* Checks the vGPUs' memory shares against the devices' sizes (mem_total[i] for
 * devs[i]), once known: a share larger than its device, or shares of one device
 * summing past 100 % (unless memory_oversubscribe; then a warning in *warn),
 * are errors naming the file and line. */
int gos_serve_config_check_memory(const struct gos_serve_config *c, const uint64_t *mem_total, char *warn,
                                  size_t warn_cap);

#endif
