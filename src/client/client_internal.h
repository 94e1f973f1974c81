/* SPDX-License-Identifier: Apache-2.0 */
/* client_internal.h: libgpuos's rooms (issue 9): connection.c (socket, wire,
 * replies, open/close, administration), copies.c (shared regions, bounce
 * buffers, the copy pipeline and its host threads, every memcpy), api.c
 * (memory, modules, launches, synchronise, facts). Not installed.
 *
 * A handle is one connection to the daemon plus a staging region (memfd shared
 * with the daemon, which pins it) cut into `depth` slots of `chunk` bytes: the
 * bounce buffers of the copy pipeline (paper 002, section 4.1). Every wait on the
 * daemon has a timeout ($GPUOS_TIMEOUT_MS, default 120 s), so a dead or stuck
 * daemon yields GPUOS_ETIMEDOUT, never a hang.
 * Process: a client program (libgpuos; the shim too). */
#ifndef GOS_CLIENT_INTERNAL_H
#define GOS_CLIENT_INTERNAL_H

#include "gpuos/gpuos.h"

#include "common/status.h"
#include "proto/proto.h"
#include "proto/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Measured on the H200 (bench/vgpu.sh; results/GPU-73bc0027-.../vgpu-bench.json):
 * 16 MB chunks, 2 in flight gave the best pageable htod + dtoh through the
 * daemon (27.9 + 23.4 GB/s at 256 MB); the small-copy path was as fast or faster
 * than the pipelined one at every size up to 1 MB, the largest measured. */
#define DEFAULT_CHUNK (16u << 20)
#define DEFAULT_DEPTH 2
#define DEFAULT_SMALL (1u << 20)
#define MAX_DEPTH 16
#define MAX_HOSTBUFS 62
/* Freed host buffers kept, still shared with the executor, for the next
 * gpuos_host_alloc of about their size (JAX allocates and frees one pinned
 * buffer per call, and a new region costs a round trip and the executor's
 * mapping and pinning: 0.37 ms against 8 us natively on an H200,
 * results/GPU-9b85fe9e-.../jaxtrace-9ddae02): at most HOST_CACHE_N of at most
 * HOST_CACHE_MAX bytes each; GPUOS_HOST_CACHE=0 keeps none. */
#define HOST_CACHE_N 4
#define HOST_CACHE_MAX (8u << 20)

struct hostbuf {
    void *ptr;
    size_t bytes;
    uint32_t region;
    uint32_t flags; /* GOS_REGION_F_*: the daemon's answer */
};

/* A device range this handle allocated (or looked up: a module global), sorted
 * by address: copies inside one need no question to the daemon before host
 * memory is touched (copies.c, issue 23.5). */
struct gcl_known {
    uint64_t p, n;
};

struct done_rec {
    uint32_t seq;
    int rc;
    char msg[GOS_MSG_TEXT_MAX];
};

/* Host-side copy helpers: one thread's memcpy (~8-10 GB/s) is the slow stage of
 * the pageable pipeline on a PCIe 5 GPU, so large chunks are copied by several
 * threads ($GPUOS_COPY_THREADS, default 4, including the caller). */
#define MAX_COPY_THREADS 16
struct copy_pool {
    int n; /* helper threads started */
    pthread_t th[MAX_COPY_THREADS];
    struct copy_arg {
        struct gpuos_vgpu *g;
        int idx;
        unsigned gen0; /* the generation before the worker's first job */
    } args[MAX_COPY_THREADS];
    pthread_mutex_t m;
    pthread_cond_t go, done;
    unsigned gen;
    int pending, stop, parts;
    char *dst;
    const char *src;
    size_t len;
};

struct gpuos_vgpu {
    struct copy_pool pool;
    int copy_threads;
    int fd;
    uint32_t seq;
    pthread_mutex_t lock;
    int timeout_ms;
    unsigned spin_us; /* polling for a reply before sleeping */
    void *rx;
    /* staging */
    void *stage;
    size_t stage_bytes, chunk, small;
    int small_n; /* the size of the whole copy is <= small: take the small path */
    int depth;
    uint32_t stage_region;
    struct hostbuf hb[MAX_HOSTBUFS];
    struct hostbuf hcache[HOST_CACHE_N]; /* freed, kept (ptr NULL: an empty place) */
    int hcache_off;                      /* GPUOS_HOST_CACHE=0 */
    struct gcl_known *known;
    int n_known, cap_known;
    /* replies that arrived while waiting for another */
    struct done_rec done[64];
    int n_done;
    int broken; /* the connection is unusable */
    uint32_t vgpu_id, client_id;
    /* the fast path (issue 9.4; fastpath.c, proto/ring_shm.h) */
    void *ring;                  /* NULL: none (isolation = none, GPUOS_RING=0) */
    uint32_t ring_tail;          /* entries submitted */
    uint32_t ring_checked;       /* entries whose completion was looked at */
    size_t ring_inline;          /* copies up to this size go inline in a slot */
    unsigned ring_wait_us;       /* a wait for an answer spins this long before it sleeps (GPUOS_RING_WAIT_US) */
    size_t ring_piece;           /* staged copies through the ring: piece size (0: the socket path's) */
    size_t par_min;              /* host copies from this size on use the copy threads */
    int ring_off;                /* stopped for good (executor gone, timeout) */
    int exec_hidden;             /* the daemon and its executors are outside this process's pid
                                  * namespace (a container): no /proc/PID of theirs to watch */
    int ring_replaying;          /* sending revoked entries over the socket */
    int sock_async;              /* asynchronous socket requests not synchronised yet */
    int ring_sticky;             /* first error of an asynchronous ring entry */
    char ring_sticky_msg[GOS_MSG_TEXT_MAX];
    uint64_t ring_next_check;
    struct gcl_ring_res *ring_res; /* per slot: the result of the entry last completed there */
};

#define LOCKED(g, expr)                                                                          \
    do {                                                                                         \
        if (!(g))                                                                                \
            return gos_fail(GOS_EINVAL, "NULL gpuos handle");                                    \
        pthread_mutex_lock(&(g)->lock);                                                          \
        int rc_ = (expr);                                                                        \
        pthread_mutex_unlock(&(g)->lock);                                                        \
        return rc_;                                                                              \
    } while (0)

/* Device ranges of this handle (copies.c): add (a failure to remember costs only
 * a question to the daemon later, never correctness), forget by base. */
void gcl_known_add(gpuos_vgpu *g, uint64_t p, uint64_t n);
void gcl_known_del(gpuos_vgpu *g, uint64_t p);
/* Forgets every range whose base lies in [p, p + n) (VMM mappings unmapped). */
void gcl_known_del_within(gpuos_vgpu *g, uint64_t p, uint64_t n);
int gcl_timeout_ms(void);
int gcl_connect_to(const char *path, int tmo_ms, int *out);
unsigned gcl_spin_us(void);
int gcl_parse_reply(const struct gos_msg_hdr *h, const void *p, const void **body, size_t *blen);
void gcl_par_memcpy(gpuos_vgpu *g, void *dst, const void *src, size_t len);
void gcl_pool_stop(gpuos_vgpu *g);
int gcl_broken(gpuos_vgpu *g, int rc);
int gcl_wait_reply(gpuos_vgpu *g, uint32_t seq, uint16_t type, const void **body, size_t *blen);
int gcl_send_req(gpuos_vgpu *g, uint16_t type, const void *a, size_t alen, const void *b, size_t blen,
                    int fd, uint32_t *seq);
int gcl_call(gpuos_vgpu *g, uint16_t type, const void *req, size_t reqlen, int fd, void *out, size_t outlen);
int gcl_make_memfd(size_t bytes, void **ptr, int *fdout);
int gcl_region_new(gpuos_vgpu *g, size_t bytes, void **ptr, uint32_t *region);
/* The same, asking that the client's kernels reach it at *ptr (host_alloc);
 * *flags: GOS_REGION_F_* answered. */
int gcl_region_new_mapped(gpuos_vgpu *g, size_t bytes, void **ptr, uint32_t *region, uint32_t *flags);
int gcl_region_del(gpuos_vgpu *g, uint32_t region);
int gcl_stage_setup(gpuos_vgpu *g, size_t chunk, int depth);
int gcl_stage_ready(gpuos_vgpu *g);
void gcl_facts_from(gpuos_vgpu_facts *o, const struct gos_vgpu_rec *r);
void gcl_shm_ds_from(gpuos_shm_ds *o, const struct gos_shm_rec *r); /* shm_api.c */
int gcl_sync(gpuos_vgpu *g);
/* fastpath.c: the fast path (issue 9.4). open at connect (no ring is no error);
 * ok: requests may go through it now (attached, granted, working); drain: every
 * submitted entry completed and revoked ones sent over the socket (before any
 * socket request that touches the device); the rest run one request through it. */
void gcl_ring_open(gpuos_vgpu *g);
void gcl_ring_close(gpuos_vgpu *g);
int gcl_ring_ok(gpuos_vgpu *g);
int gcl_ring_drain(gpuos_vgpu *g);
int gcl_ring_copy(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, void *dst, const void *src, size_t n, int async,
                  int region, uint64_t off);
int gcl_ring_dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n, int async);
int gcl_ring_launch(gpuos_vgpu *g, const struct gos_msg_launch *m, const void *params);
int gcl_ring_fence(gpuos_vgpu *g);
/* A GATE entry (proto/ring_shm.h): later entries wait until *word >= value; word
 * lies at offset off of region (memory of gpuos_host_alloc). */
int gcl_ring_gate(gpuos_vgpu *g, const uint64_t *word, uint64_t value, uint32_t region, uint64_t off);
/* copies.c: the socket path, for the ring's replays */
int gcl_sock_copy_region(gpuos_vgpu *g, uint32_t dir, uint32_t region, uint64_t off, gpuos_dptr d, size_t n, int async);
int gcl_sock_copy_host(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, void *dst, const void *src, size_t n);
int gcl_sock_dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n, int async);
size_t gcl_pipe_chunk(const gpuos_vgpu *g, size_t n);
int gcl_hostbuf_region(gpuos_vgpu *g, const void *p, size_t n, uint32_t *region, uint64_t *off);

#endif
