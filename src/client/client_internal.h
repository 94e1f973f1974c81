/* client_internal.h: libgpuos's rooms (issue 9): connection.c (socket, wire,
 * replies, open/close, administration), copies.c (shared regions, bounce
 * buffers, the copy pipeline and its host threads, every memcpy), api.c
 * (memory, modules, launches, synchronise, facts). Not installed.
 *
 * A handle is one connection to the daemon plus a staging region (memfd shared
 * with the daemon, which pins it) cut into `depth` slots of `chunk` bytes: the
 * bounce buffers of the copy pipeline (paper 002, section 4.1). Every wait on the
 * daemon has a timeout ($GPUOS_TIMEOUT_MS, default 120 s), so a dead or stuck
 * daemon yields GPUOS_ETIMEDOUT, never a hang. */
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

struct hostbuf {
    void *ptr;
    size_t bytes;
    uint32_t region;
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
    /* replies that arrived while waiting for another */
    struct done_rec done[64];
    int n_done;
    int broken; /* the connection is unusable */
    uint32_t vgpu_id, client_id;
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
int gcl_region_del(gpuos_vgpu *g, uint32_t region);
int gcl_stage_setup(gpuos_vgpu *g, size_t chunk, int depth);
int gcl_stage_ready(gpuos_vgpu *g);
size_t gcl_env_size(const char *name, size_t dflt);
void gcl_facts_from(gpuos_vgpu_facts *o, const struct gos_vgpu_rec *r);
void gcl_shm_ds_from(gpuos_shm_ds *o, const struct gos_shm_rec *r); /* shm.c */
int gcl_sync(gpuos_vgpu *g);

#endif
