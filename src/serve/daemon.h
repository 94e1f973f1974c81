/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.h: the daemon's state as a whole (pillar 3; paper 002, sections 5 and 6).
 *
 * Threads:
 *   main         accepts connections, waits for SIGTERM/SIGINT;
 *   one per client reads and answers its messages (client.c);
 *   one per engine and device runs the scheduled tasks (dispatch.c).
 * Whoever finds an engine idle asks the policy for its next task: a client's
 * reader that has just queued work runs what the policy picks itself (no hand-off
 * to another thread on the path of a synchronous request) and waits for it when
 * it is expected to be short; everything else goes to the engine's dispatcher.
 * One lock (srv->lock) guards everything shared: the vGPU table, every client's
 * bookkeeping and every device's scheduler (sched.h is not thread-safe). Device
 * calls (copies, launches, waits) run outside it. Replies from dispatch threads
 * are sent without blocking (a client that does not read them is dropped).
 *
 * Rooms (issue 9): calls go down, never up, and no cycle spans more than 3
 * files (tools/serve_layers.py --layers prints the layers from the objects;
 * docs/CONTRIBUTING.md names them): server.c -> client.c (a connection's
 * reader: validate() and msg_table, one row per message type, whose handlers
 * live beside their domain's logic) -> dispatch.c <-> ring.c (engines, tasks,
 * grants) -> session.c <-> swap.c (a client's executor loss and its end) ->
 * the domains (shm.c, pmem_cl.c, vmm_cl.c, vgpu*.c, state.c, region.c, ...)
 * -> executor.c + xwire.c (executor processes; their own side is
 * exec_main.c, `gpuos executor`), reply.c, conds.c, ring_page.c. Each file
 * includes the headers of what it uses: this one (struct srv, struct
 * srv_vgpu), dev.h (struct srv_dev), session.h (struct srv_client),
 * dispatch.h (tasks), and one header per file of the others (ring.h for
 * ring*.c, vgpu.h for vgpu*.c and peercg.c).
 *
 * Ownership: a client is freed when its reader thread has ended AND no task of it
 * is queued or in flight (refs), so that a client dying mid-copy releases its
 * memory only after the device stopped touching it.
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_DAEMON_H
#define GOS_SERVE_DAEMON_H

#include "serve/config.h"
#include "serve/dev.h"
#include "proto/proto.h"
#include "vmem/segtable.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct srv_client;
struct srv_xshare;
struct gos_chip;

/* A runtime override of one key of a vGPU (`gpuos vgpu set`), persisted in the
 * state file (state.c) with the configuration file's value it replaced: when the
 * file's value changes later, the file wins and the override is dropped. */
enum { SRV_OV_COMPUTE, SRV_OV_COPY, SRV_OV_MEMORY, SRV_OV_N };
struct srv_override {
    int set;
    char value[32]; /* canonical: "30", "25%", "1073741824" */
    char base[32];  /* the file's value when it was set, same form */
};

struct srv_vgpu {
    struct gos_serve_vgpucfg cfg;  /* in force: the file's values + overrides */
    struct gos_serve_vgpucfg file; /* as the configuration file says */
    struct srv_override ov[SRV_OV_N];
    uint32_t id;
    uint64_t mem_quota, mem_used;
    int clients;
    int removed; /* gone from the configuration at a reload: no new clients */
    int created; /* made by `vgpu create` (vgpu_life.c): kept in the state file */
    int deleted; /* by `vgpu delete` (removed too): never listed, found or revived; its
                  * slot is reused once nothing refers to it and it left the scheduler */
    int unscheduled;
    uint64_t tasks;
    uint64_t faults; /* executors of its clients lost to a device fault or a kill */
    uint64_t ring_ns; /* time its clients' executors spent on their rings (issue 9.4) */
    /* ring grants issued to its clients, and the switch time at their start
     * (ring_free: the GPU's switch from another executor) it was not charged
     * for (issue 41; metrics gpuos_vgpu_grants_total, ..._switch_free_...) */
    uint64_t grants, switch_free_ns;
    /* executor = per-vgpu: the executor its clients share (NULL: none yet, or
     * it died and the next client starts another); xshare_busy while one
     * client joins it (the daemon's lock is dropped meanwhile) */
    struct srv_xshare *xshare;
    int xshare_busy;
};

struct srv {
    struct gos_serve_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t idle; /* signalled when a client is freed */
    int stop;
    int listen_fd;
    dev_t sock_dev; /* the socket file bound (unlinked at exit only while it is still this one) */
    ino_t sock_ino;
    uid_t uid;
    int n_devs;
    struct srv_dev devs[GOS_SERVE_MAX_DEVICES];
    gos_shm_table shm; /* shared device memory segments (shm.c, issue 10) */
    int n_vgpus;
    struct srv_vgpu vgpus[GOS_MAX_VGPUS];
    struct srv_client *clients;
    int n_clients;
    uint32_t next_client_id;
    int verbose;
    unsigned spin_us;  /* readers poll this long for the next request */
    int max_spinners;  /* readers polling at once, at most */
    int spinners;      /* atomic */

    /* Operation (reload.c, state.c, metrics.c). */
    char config_path[4096]; /* reread on SIGHUP */
    char state_path[4200];  /* "" no persistence */
    int sock_from_cli;      /* --socket or $GPUOS_SOCKET: not the file's */
    uint64_t reloads, reload_failures;
    uint64_t refused; /* connections refused at their HELLO (metrics) */
    double last_reload_s;   /* wall clock of the last successful load */
    int last_reload_ok;
    struct gos_chip *chips[GOS_SERVE_MAX_DEVICES]; /* chip = files, NULL none */
    void *metrics;          /* the HTTP daemon, NULL when off */
    int reserve_fd;    /* given up at the descriptor limit to refuse a connection */
    unsigned long n_refused; /* connections refused (limits, descriptors) */
    int leaked;        /* srv_run gave up on threads that still run: do not free */
    uint64_t next_vmm_handle; /* VMM handles are the daemon's, never reused (vmm_cl.c) */
};

/* conds.c: a device's engine condition variables (gos_cond_init: monotonic waits). */
void srv_dev_init_conds(struct srv_dev *d);

/* conds.c: waits on the daemon's idle condition (a client freed, a join done) for at
 * most ns (lock held). */
void srv_idle_wait(struct srv *s, uint64_t ns);

#endif
