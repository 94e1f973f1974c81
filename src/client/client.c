/* client.c: libgpuos (include/gpuos/gpuos.h), the client side of proto.h.
 *
 * A handle is one connection to the daemon plus a staging region (memfd shared
 * with the daemon, which pins it) cut into `depth` slots of `chunk` bytes: the
 * bounce buffers of the copy pipeline (paper 002, section 4.1). Every wait on the
 * daemon has a timeout ($GPUOS_TIMEOUT_MS, default 120 s), so a dead or stuck
 * daemon yields GPUOS_ETIMEDOUT, never a hang. */
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

const char *gpuos_error(void) { return gos_last_error(); }

static int timeout_ms(void)
{
    const char *t = getenv("GPUOS_TIMEOUT_MS");
    long v = t ? strtol(t, NULL, 10) : 0;
    return v > 0 ? (int)(v < 86400000 ? v : 86400000) : 120000;
}

/* Connects within timeout_ms (issue 15.3): a daemon that does not accept (its
 * backlog full: a flood, or a daemon stuck) makes a blocking connect() wait
 * forever, so the socket is non-blocking while connecting; a Unix socket
 * answers EAGAIN when the backlog is full, tried again until the deadline.
 * Sends then block at most timeout_ms (SO_SNDTIMEO) like the replies. */
static int connect_to(const char *path, int tmo_ms, int *out)
{
    if (!path)
        path = getenv("GPUOS_SOCKET");
    if (!path || !*path)
        path = "/tmp/gpuos.sock";
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return gos_fail(GOS_EINVAL, "socket path %s is too long", path);
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return gos_fail(GOS_EIO, "socket: %s", strerror(errno));
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned us = 1000;; us = us < 50000 ? 2 * us : 50000) {
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            break;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EINPROGRESS) { /* not on Unix sockets today; handled anyway */
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int err = 0;
            socklen_t el = sizeof err;
            if (poll(&pf, 1, tmo_ms) == 1 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) && !err)
                break;
            close(fd);
            return gos_fail(err ? GOS_EIO : GOS_ETIMEDOUT, "cannot reach gpuos serve at %s: %s", path,
                            err ? strerror(err) : "no connection within the timeout");
        }
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms = (long)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (e != EAGAIN || ms >= tmo_ms) {
            close(fd);
            if (e == EAGAIN)
                return gos_fail(GOS_ETIMEDOUT, "gpuos serve at %s accepted no connection within %d ms "
                                "($GPUOS_TIMEOUT_MS): it is overloaded or stuck", path, tmo_ms);
            return gos_fail(e == EACCES ? GOS_EPERM : GOS_EIO, "cannot reach gpuos serve at %s: %s%s", path,
                            strerror(e), e == EACCES ? " (the socket's permissions exclude you)" : "");
        }
        usleep(us);
    }
    int fl = fcntl(fd, F_GETFL);
    struct timeval tv = {.tv_sec = tmo_ms / 1000, .tv_usec = (tmo_ms % 1000) * 1000};
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)) {
        int e = errno;
        close(fd);
        return gos_fail(GOS_EIO, "socket setup: %s", strerror(e));
    }
    *out = fd;
    return GOS_OK;
}

/* How long a caller waiting for a reply polls its socket before sleeping
 * ($GPUOS_SPIN_US). A synchronous request through the daemon takes a few tens of
 * microseconds; sleeping adds the wake-up of this thread to each of them (as a
 * blocking cuStreamSynchronize would; the CUDA driver itself spins by default).
 * Off on machines of fewer than 4 CPUs, where the poller would take the CPU the
 * daemon needs to answer. */
#define DEFAULT_SPIN_US 100
static unsigned spin_us(void)
{
    const char *t = getenv("GPUOS_SPIN_US");
    if (t && *t) {
        long v = strtol(t, NULL, 10);
        return v > 0 ? (unsigned)(v < 1000000 ? v : 1000000) : 0;
    }
    return sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? DEFAULT_SPIN_US : 0;
}

/* Turns a received REPLY into (rc, message, body). */
static int parse_reply(const struct gos_msg_hdr *h, const void *p, const void **body, size_t *blen)
{
    struct gos_rep_hdr r;
    memcpy(&r, p, sizeof r);
    if (r.status) {
        gos_fail(r.status, "%s", (const char *)p + sizeof r);
        return r.status;
    }
    if (body)
        *body = (const char *)p + sizeof r;
    if (blen)
        *blen = h->len - sizeof r;
    return GOS_OK;
}

static void part_of(const struct copy_pool *p, int i, size_t *off, size_t *len)
{
    size_t per = (p->len / (size_t)p->parts + 4095) & ~(size_t)4095;
    *off = per * (size_t)i;
    *len = *off >= p->len ? 0 : (p->len - *off < per ? p->len - *off : per);
}

static void *copy_worker(void *arg)
{
    struct copy_arg *a = arg;
    struct copy_pool *p = &a->g->pool;
    int me = a->idx;
    pthread_mutex_lock(&p->m);
    unsigned seen = a->gen0;
    for (;;) {
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->go, &p->m);
        if (p->stop)
            break;
        seen = p->gen;
        size_t off, len;
        part_of(p, me, &off, &len);
        pthread_mutex_unlock(&p->m);
        if (len)
            memcpy(p->dst + off, p->src + off, len);
        pthread_mutex_lock(&p->m);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->m);
    return NULL;
}

static void par_memcpy(gpuos_vgpu *g, void *dst, const void *src, size_t len)
{
    struct copy_pool *p = &g->pool;
    int want = g->copy_threads;
    if (want <= 1 || len < (1u << 20)) {
        memcpy(dst, src, len);
        return;
    }
    pthread_mutex_lock(&p->m);
    while (p->n < want - 1) {
        p->args[p->n].g = g;
        p->args[p->n].idx = p->n + 1; /* part 0 is the caller's */
        p->args[p->n].gen0 = p->gen;
        if (pthread_create(&p->th[p->n], NULL, copy_worker, &p->args[p->n]))
            break;
        p->n++;
    }
    if (p->n == 0) {
        pthread_mutex_unlock(&p->m);
        memcpy(dst, src, len);
        return;
    }
    p->dst = dst;
    p->src = src;
    p->len = len;
    p->parts = p->n + 1;
    p->pending = p->n;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->m);
    size_t off, l;
    part_of(p, 0, &off, &l);
    if (l)
        memcpy((char *)dst + off, (const char *)src + off, l);
    pthread_mutex_lock(&p->m);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->m);
    pthread_mutex_unlock(&p->m);
}

static void pool_stop(gpuos_vgpu *g)
{
    struct copy_pool *p = &g->pool;
    pthread_mutex_lock(&p->m);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    int n = p->n;
    pthread_mutex_unlock(&p->m);
    for (int i = 0; i < n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->m);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
}

static int broken(gpuos_vgpu *g, int rc)
{
    g->broken = 1;
    return rc;
}

/* Waits for the reply to `seq` (other replies are kept in g->done). The body,
 * if any, is left in g->rx after the reply header. */
static int wait_reply(gpuos_vgpu *g, uint32_t seq, uint16_t type, const void **body, size_t *blen)
{
    for (int i = 0; i < g->n_done; i++)
        if (g->done[i].seq == seq) {
            int rc = g->done[i].rc;
            if (rc)
                gos_fail(rc, "%s", g->done[i].msg);
            g->done[i] = g->done[--g->n_done];
            return rc;
        }
    if (g->broken)
        return gos_fail(GOS_EIO, "the connection to gpuos serve is broken");
    for (;;) {
        struct gos_msg_hdr h;
        int rc = gos_wire_recv_spin(g->fd, &h, g->rx, NULL, g->timeout_ms, g->spin_us);
        if (rc) {
            if (rc == GOS_EPROTO && strstr(gos_last_error(), "protocol version")) {
                char why[256];
                snprintf(why, sizeof why, "%s", gos_last_error());
                gos_fail(rc, "gpuos serve speaks another protocol: %s", why);
            }
            return broken(g, rc);
        }
        if (h.type != GOS_MSG_REPLY)
            return broken(g, gos_fail(GOS_EPROTO, "daemon sent %s, expected a reply", gos_proto_name(h.type)));
        struct gos_rep_hdr r;
        memcpy(&r, g->rx, sizeof r);
        if (h.seq == 0 && r.status != GOS_OK) {
            /* A connection-level error (the daemon refused the connection: a
             * limit): the connection is over. */
            gos_fail(r.status, "%s", (const char *)g->rx + sizeof r);
            return broken(g, r.status);
        }
        if (h.seq == seq) {
            if (r.req_type != type)
                return broken(g, gos_fail(GOS_EPROTO, "reply to %s for a %s request",
                                          gos_proto_name(r.req_type), gos_proto_name(type)));
            return parse_reply(&h, g->rx, body, blen);
        }
        if (g->n_done == 64)
            return broken(g, gos_fail(GOS_EPROTO, "too many unclaimed replies"));
        struct done_rec *d = &g->done[g->n_done++];
        d->seq = h.seq;
        d->rc = r.status;
        snprintf(d->msg, sizeof d->msg, "%s", r.status ? (const char *)g->rx + sizeof r : "");
    }
}

static int send_req(gpuos_vgpu *g, uint16_t type, const void *a, size_t alen, const void *b, size_t blen,
                    int fd, uint32_t *seq)
{
    *seq = ++g->seq;
    if (!*seq) /* sequence 0 is the daemon's connection-level errors */
        *seq = ++g->seq;
    if (g->broken)
        return gos_fail(GOS_EIO, "the connection to gpuos serve is broken");
    int rc = gos_wire_send(g->fd, type, *seq, a, alen, b, blen, fd);
    if (rc == GOS_EIO) {
        /* The daemon may have refused the connection (a limit) and closed it
         * before this request went out: its reason is waiting to be read. */
        struct gos_msg_hdr h;
        struct gos_rep_hdr r;
        char why[GOS_MSG_TEXT_MAX];
        snprintf(why, sizeof why, "%s", gos_last_error());
        if (!gos_wire_recv(g->fd, &h, g->rx, NULL, 100) && h.type == GOS_MSG_REPLY && h.seq == 0) {
            memcpy(&r, g->rx, sizeof r);
            if (r.status != GOS_OK)
                return broken(g, gos_fail(r.status, "%s", (const char *)g->rx + sizeof r));
        }
        gos_fail(rc, "%s", why);
    }
    return rc ? broken(g, rc) : GOS_OK;
}

/* One request, one reply; the reply body is copied to out (exactly outlen). */
static int call(gpuos_vgpu *g, uint16_t type, const void *req, size_t reqlen, int fd, void *out, size_t outlen)
{
    uint32_t seq = 0;
    const void *body = NULL;
    size_t blen = 0;
    int rc = send_req(g, type, req, reqlen, NULL, 0, fd, &seq);
    if (!rc)
        rc = wait_reply(g, seq, type, &body, &blen);
    if (!rc && out) {
        if (blen != outlen)
            return broken(g, gos_fail(GOS_EPROTO, "reply body of %zu bytes, expected %zu", blen, outlen));
        memcpy(out, body, outlen);
    }
    return rc;
}

static int make_memfd(size_t bytes, void **ptr, int *fdout)
{
    int fd = memfd_create("gpuos", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return gos_fail(GOS_ENOMEM, "memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)bytes) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        int e = errno;
        close(fd);
        return gos_fail(GOS_ENOMEM, "shared buffer of %zu bytes: %s", bytes, strerror(e));
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return gos_fail(GOS_ENOMEM, "mapping %zu bytes: %s", bytes, strerror(e));
    }
    *ptr = p;
    *fdout = fd;
    return GOS_OK;
}

/* Creates and registers a shared region. */
static int region_new(gpuos_vgpu *g, size_t bytes, void **ptr, uint32_t *region)
{
    int fd = -1, rc = make_memfd(bytes, ptr, &fd);
    if (rc)
        return rc;
    struct gos_msg_region_add m = {.bytes = bytes};
    struct gos_rep_region_add r;
    rc = call(g, GOS_MSG_REGION_ADD, &m, sizeof m, fd, &r, sizeof r);
    close(fd);
    if (rc) {
        munmap(*ptr, bytes);
        return rc;
    }
    *region = r.region;
    return GOS_OK;
}

static int region_del(gpuos_vgpu *g, uint32_t region)
{
    struct gos_msg_region_del m = {.region = region};
    return call(g, GOS_MSG_REGION_DEL, &m, sizeof m, -1, NULL, 0);
}

/* Sets the pipeline's shape; the staging region itself is created on the first
 * pageable copy (stage_ready), so clients that never need it pay nothing. */
static int stage_setup(gpuos_vgpu *g, size_t chunk, int depth)
{
    int rc;
    if (g->stage) {
        if ((rc = region_del(g, g->stage_region)))
            return rc;
        munmap(g->stage, g->stage_bytes);
        g->stage = NULL;
    }
    g->chunk = chunk;
    g->depth = depth;
    g->stage_bytes = chunk * (size_t)depth;
    return GOS_OK;
}

static int stage_ready(gpuos_vgpu *g)
{
    if (g->stage)
        return GOS_OK;
    int rc = region_new(g, g->stage_bytes, &g->stage, &g->stage_region);
    if (rc)
        g->stage = NULL;
    return rc;
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    double x = strtod(v, &end);
    size_t m = *end == 'K' || *end == 'k' ? 1u << 10 : *end == 'M' || *end == 'm' ? 1u << 20 : 1;
    return x > 0 ? (size_t)(x * (double)m) : dflt;
}

int gpuos_open(const char *socket_path, const char *vgpu, gpuos_vgpu **out)
{
    if (!vgpu || !*vgpu || strlen(vgpu) >= GOS_NAME_MAX || !out)
        return gos_fail(GOS_EINVAL, "gpuos_open needs a vGPU name of 1..%d characters", GOS_NAME_MAX - 1);
    gpuos_vgpu *g = calloc(1, sizeof *g);
    if (!g || !(g->rx = malloc(GOS_PROTO_MAX_PAYLOAD))) {
        free(g);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->pool.m, NULL);
    pthread_cond_init(&g->pool.go, NULL);
    pthread_cond_init(&g->pool.done, NULL);
    g->copy_threads = (int)env_size("GPUOS_COPY_THREADS", 4);
    if (g->copy_threads > MAX_COPY_THREADS)
        g->copy_threads = MAX_COPY_THREADS;
    g->timeout_ms = timeout_ms();
    g->spin_us = spin_us();
    int rc = connect_to(socket_path, g->timeout_ms, &g->fd);
    if (rc) {
        pool_stop(g);
        free(g->rx);
        free(g);
        return rc;
    }
    struct gos_msg_hello m = {.version = GOS_PROTOCOL_VERSION, .pid = (uint32_t)getpid()};
    strcpy(m.vgpu, vgpu);
    struct gos_rep_hello r;
    rc = call(g, GOS_MSG_HELLO, &m, sizeof m, -1, &r, sizeof r);
    if (!rc) {
        g->vgpu_id = r.vgpu_id;
        g->client_id = r.client_id;
        size_t chunk = env_size("GPUOS_CHUNK", DEFAULT_CHUNK);
        int depth = (int)env_size("GPUOS_DEPTH", DEFAULT_DEPTH);
        if (chunk < 4096 || chunk > (1u << 30))
            chunk = DEFAULT_CHUNK;
        if (depth < 1 || depth > MAX_DEPTH)
            depth = DEFAULT_DEPTH;
        g->small = env_size("GPUOS_SMALL", DEFAULT_SMALL);
        rc = stage_setup(g, chunk, depth);
    }
    if (rc) {
        close(g->fd);
        pool_stop(g);
        free(g->rx);
        free(g);
        return rc;
    }
    *out = g;
    return GOS_OK;
}

void gpuos_close(gpuos_vgpu *g)
{
    if (!g)
        return;
    if (!g->broken) {
        gpuos_synchronize(g);
        uint32_t seq = 0;
        send_req(g, GOS_MSG_BYE, NULL, 0, NULL, 0, -1, &seq);
    }
    close(g->fd);
    if (g->stage)
        munmap(g->stage, g->stage_bytes);
    for (int i = 0; i < MAX_HOSTBUFS; i++)
        if (g->hb[i].ptr)
            munmap(g->hb[i].ptr, g->hb[i].bytes);
    pthread_mutex_destroy(&g->lock);
    pool_stop(g);
    free(g->rx);
    free(g);
}

#define LOCKED(g, expr)                                                                          \
    do {                                                                                         \
        if (!(g))                                                                                \
            return gos_fail(GOS_EINVAL, "NULL gpuos handle");                                    \
        pthread_mutex_lock(&(g)->lock);                                                          \
        int rc_ = (expr);                                                                        \
        pthread_mutex_unlock(&(g)->lock);                                                        \
        return rc_;                                                                              \
    } while (0)

static int mem_alloc(gpuos_vgpu *g, size_t bytes, gpuos_dptr *out)
{
    if (!bytes || !out)
        return gos_fail(GOS_EINVAL, "gpuos_mem_alloc of 0 bytes");
    struct gos_msg_mem_alloc m = {.bytes = bytes};
    struct gos_rep_mem_alloc r;
    int rc = call(g, GOS_MSG_MEM_ALLOC, &m, sizeof m, -1, &r, sizeof r);
    if (!rc)
        *out = r.dptr;
    return rc;
}
int gpuos_mem_alloc(gpuos_vgpu *g, size_t bytes, gpuos_dptr *out) { LOCKED(g, mem_alloc(g, bytes, out)); }

static int mem_free(gpuos_vgpu *g, gpuos_dptr p)
{
    struct gos_msg_mem_free m = {.dptr = p};
    return call(g, GOS_MSG_MEM_FREE, &m, sizeof m, -1, NULL, 0);
}
int gpuos_mem_free(gpuos_vgpu *g, gpuos_dptr p) { LOCKED(g, mem_free(g, p)); }

static int host_alloc(gpuos_vgpu *g, size_t bytes, void **out)
{
    int slot = -1;
    for (int i = 0; i < MAX_HOSTBUFS; i++)
        if (!g->hb[i].ptr) {
            slot = i;
            break;
        }
    if (!bytes || !out)
        return gos_fail(GOS_EINVAL, "gpuos_host_alloc of 0 bytes");
    if (slot < 0)
        return gos_fail(GOS_EBUSY, "more than %d shared host buffers", MAX_HOSTBUFS);
    int rc = region_new(g, bytes, &g->hb[slot].ptr, &g->hb[slot].region);
    if (rc) {
        g->hb[slot].ptr = NULL;
        return rc;
    }
    g->hb[slot].bytes = bytes;
    *out = g->hb[slot].ptr;
    return GOS_OK;
}
int gpuos_host_alloc(gpuos_vgpu *g, size_t bytes, void **out) { LOCKED(g, host_alloc(g, bytes, out)); }

static int host_free(gpuos_vgpu *g, void *p)
{
    for (int i = 0; i < MAX_HOSTBUFS; i++)
        if (p && g->hb[i].ptr == p) {
            int rc = region_del(g, g->hb[i].region);
            munmap(g->hb[i].ptr, g->hb[i].bytes);
            g->hb[i].ptr = NULL;
            return rc;
        }
    return gos_fail(GOS_EINVAL, "%p was not allocated with gpuos_host_alloc", p);
}
int gpuos_host_free(gpuos_vgpu *g, void *p) { LOCKED(g, host_free(g, p)); }

/* The shared buffer holding [p, p+n), or NULL. */
static struct hostbuf *hostbuf_of(gpuos_vgpu *g, const void *p, size_t n)
{
    for (int i = 0; i < MAX_HOSTBUFS; i++) {
        struct hostbuf *b = &g->hb[i];
        if (b->ptr && (const char *)p >= (const char *)b->ptr &&
            (size_t)((const char *)p - (const char *)b->ptr) + n <= b->bytes)
            return b;
    }
    return NULL;
}

static int send_copy(gpuos_vgpu *g, uint32_t dir, uint32_t region, uint64_t off, uint64_t dptr, uint64_t src,
                     uint64_t n, int async, uint32_t *seq)
{
    struct gos_msg_copy m = {.dir = dir, .region = region, .offset = off, .dptr = dptr, .dptr_src = src,
                             .bytes = n, .flags = async ? GOS_F_ASYNC : 0};
    if (g->small_n > 0 && n <= g->small)
        m.flags |= GOS_F_DIRECT;
    return send_req(g, GOS_MSG_COPY, &m, sizeof m, NULL, 0, -1, seq);
}

/* Zero-copy: the host side is shared memory; split into chunk-sized requests
 * (the scheduler's granularity; the daemon runs consecutive ones as one batch)
 * sent back to back. At most WINDOW synchronous requests are unanswered at a
 * time: the daemon drops a client whose unread replies fill its socket. */
#define WINDOW 32
/* Waits for the reply to copy request seq. A failed copy is remembered (the
 * first one, its code in *first_rc and message in msg[GOS_MSG_TEXT_MAX]) and the
 * rest still waited for; returns non-zero only when the connection broke. */
static int wait_copy(gpuos_vgpu *g, uint32_t seq, int *first_rc, char *msg)
{
    int rc = wait_reply(g, seq, GOS_MSG_COPY, NULL, NULL);
    if (rc && g->broken)
        return rc;
    if (rc && !*first_rc) {
        *first_rc = rc;
        snprintf(msg, GOS_MSG_TEXT_MAX, "%s", gos_last_error());
    }
    return GOS_OK;
}

static int copy_shared(gpuos_vgpu *g, uint32_t dir, struct hostbuf *b, const void *host, gpuos_dptr d, size_t n,
                       int async)
{
    uint64_t off = (uint64_t)((const char *)host - (const char *)b->ptr);
    uint32_t first = 0, last = 0, seq = 0, waited = 0;
    int rc = GOS_OK, nreq = 0;
    int first_rc = GOS_OK;
    char msg[GOS_MSG_TEXT_MAX] = "";
    for (size_t done = 0; done < n; done += g->chunk) {
        size_t len = n - done < g->chunk ? n - done : g->chunk;
        if (!async && nreq >= WINDOW) {
            /* requests are numbered consecutively: the oldest unanswered one */
            rc = wait_copy(g, first + waited, &first_rc, msg);
            waited++;
            if (rc)
                return rc;
        }
        if ((rc = send_copy(g, dir, b->region, off + done, d + done, 0, len, async, &seq)))
            return rc;
        if (!nreq++)
            first = seq;
        last = seq;
    }
    if (async)
        return GOS_OK;
    for (uint32_t s = first + waited; s - first <= last - first; s++)
        if ((rc = wait_copy(g, s, &first_rc, msg)))
            return rc;
    return first_rc ? gos_fail(first_rc, "%s", msg) : GOS_OK;
}

/* The piece a pageable copy of n bytes is cut into: the configured chunk, but
 * small enough for four pieces (of at least 1 MB), so that the host-side copy
 * of one piece overlaps the DMA of the previous one even when n is below a
 * chunk (a 4 MB copy in one 16 MB-chunk piece ran at 65 % of native on the
 * H200). Slots stay g->chunk apart in the staging area. */
static size_t pipe_chunk(const gpuos_vgpu *g, size_t n)
{
    size_t c = (n / 4 + 4095) & ~(size_t)4095;
    if (c < (1u << 20))
        c = 1u << 20;
    return c < g->chunk ? c : g->chunk;
}

/* Pageable host-to-device: fill slot i while the daemon moves slot i-1. */
static int htod_pipeline(gpuos_vgpu *g, gpuos_dptr d, const void *src, size_t n)
{
    const size_t chunk = pipe_chunk(g, n);
    uint32_t busy[MAX_DEPTH] = {0};
    int first_rc = GOS_OK;
    char msg[GOS_MSG_TEXT_MAX] = "";
    size_t i = 0;
    for (size_t done = 0; done < n; done += chunk, i++) {
        size_t len = n - done < chunk ? n - done : chunk;
        int slot = (int)(i % (size_t)g->depth);
        if (busy[slot]) {
            int rc = wait_copy(g, busy[slot], &first_rc, msg);
            busy[slot] = 0;
            if (rc)
                return rc;
        }
        par_memcpy(g, (char *)g->stage + (size_t)slot * g->chunk, (const char *)src + done, len);
        int rc = send_copy(g, GOS_COPY_HTOD, g->stage_region, (uint64_t)slot * g->chunk, d + done, 0, len, 0,
                           &busy[slot]);
        if (rc)
            return rc;
    }
    for (int s = 0; s < g->depth; s++)
        if (busy[s]) {
            /* oldest first is not needed: replies are kept until claimed */
            int rc = wait_copy(g, busy[s], &first_rc, msg);
            if (rc)
                return rc;
        }
    return first_rc ? gos_fail(first_rc, "%s", msg) : GOS_OK;
}

/* Pageable device-to-host: the daemon fills slots ahead; we drain in order. */
static int dtoh_pipeline(gpuos_vgpu *g, void *dst, gpuos_dptr d, size_t n)
{
    const size_t chunk = pipe_chunk(g, n);
    size_t nchunks = (n + chunk - 1) / chunk, issued = 0;
    uint32_t seqs[MAX_DEPTH] = {0};
    int rc;
    for (; issued < nchunks && issued < (size_t)g->depth; issued++) {
        size_t off = issued * chunk, len = n - off < chunk ? n - off : chunk;
        if ((rc = send_copy(g, GOS_COPY_DTOH, g->stage_region, (uint64_t)(issued % (size_t)g->depth) * g->chunk,
                            d + off, 0, len, 0, &seqs[issued % (size_t)g->depth])))
            return rc;
    }
    int first_rc = GOS_OK;
    char msg[GOS_MSG_TEXT_MAX] = "";
    for (size_t i = 0; i < nchunks; i++) {
        int slot = (int)(i % (size_t)g->depth);
        size_t off = i * chunk, len = n - off < chunk ? n - off : chunk;
        if ((rc = wait_copy(g, seqs[slot], &first_rc, msg)))
            return rc;
        par_memcpy(g, (char *)dst + off, (char *)g->stage + (size_t)slot * g->chunk, len);
        if (issued < nchunks) {
            size_t o2 = issued * chunk, l2 = n - o2 < chunk ? n - o2 : chunk;
            if ((rc = send_copy(g, GOS_COPY_DTOH, g->stage_region, (uint64_t)slot * g->chunk, d + o2, 0, l2, 0,
                                &seqs[slot])))
                return rc;
            issued++;
        }
    }
    return first_rc ? gos_fail(first_rc, "%s", msg) : GOS_OK;
}

/* A copy between device memory d and host memory (src for HTOD, dst for DTOH):
 * through a registered host buffer when host lies in one, else staged. */
static int host_copy(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, void *dst, const void *src, size_t n, int async)
{
    const void *host = dir == GOS_COPY_HTOD ? src : dst;
    if (!n)
        return GOS_OK;
    if (!host)
        return gos_fail(GOS_EINVAL, "NULL host pointer");
    struct hostbuf *b = hostbuf_of(g, host, n);
    g->small_n = n <= g->small;
    int rc = b ? copy_shared(g, dir, b, host, d, n, async) : stage_ready(g);
    if (!b && !rc)
        rc = dir == GOS_COPY_HTOD ? htod_pipeline(g, d, src, n) : dtoh_pipeline(g, dst, d, n);
    g->small_n = 0;
    return rc;
}

static int htod(gpuos_vgpu *g, gpuos_dptr d, const void *src, size_t n, int async)
{
    return host_copy(g, GOS_COPY_HTOD, d, NULL, src, n, async);
}

static int dtoh(gpuos_vgpu *g, void *dst, gpuos_dptr d, size_t n, int async)
{
    return host_copy(g, GOS_COPY_DTOH, d, dst, NULL, n, async);
}

static int dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n, int async)
{
    if (!n)
        return GOS_OK;
    uint32_t seq = 0;
    int rc = send_copy(g, GOS_COPY_DTOD, 0, 0, dst, src, n, async, &seq);
    if (rc || async)
        return rc;
    return wait_reply(g, seq, GOS_MSG_COPY, NULL, NULL);
}

int gpuos_memcpy_htod(gpuos_vgpu *g, gpuos_dptr dst, const void *src, size_t n) { LOCKED(g, htod(g, dst, src, n, 0)); }
int gpuos_memcpy_dtoh(gpuos_vgpu *g, void *dst, gpuos_dptr src, size_t n) { LOCKED(g, dtoh(g, dst, src, n, 0)); }
int gpuos_memcpy_dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n) { LOCKED(g, dtod(g, dst, src, n, 0)); }
int gpuos_memcpy_htod_async(gpuos_vgpu *g, gpuos_dptr dst, const void *src, size_t n)
{
    LOCKED(g, htod(g, dst, src, n, 1));
}
int gpuos_memcpy_dtoh_async(gpuos_vgpu *g, void *dst, gpuos_dptr src, size_t n)
{
    LOCKED(g, dtoh(g, dst, src, n, 1));
}
int gpuos_memcpy_dtod_async(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n)
{
    LOCKED(g, dtod(g, dst, src, n, 1));
}

static int module_load(gpuos_vgpu *g, const void *image, size_t bytes, const char *name, gpuos_module *out)
{
    struct gos_msg_module_load m = {0};
    struct gos_rep_handle r;
    void *p = NULL;
    int rc;
    if (!out)
        return gos_fail(GOS_EINVAL, "NULL module output");
    if (name) {
        if (!*name || strlen(name) >= sizeof m.name)
            return gos_fail(GOS_EINVAL, "module name of 1..%zu characters", sizeof m.name - 1);
        strcpy(m.name, name);
        rc = call(g, GOS_MSG_MODULE_LOAD, &m, sizeof m, -1, &r, sizeof r);
    } else {
        if (!image || !bytes)
            return gos_fail(GOS_EINVAL, "empty module image");
        uint32_t region;
        if ((rc = region_new(g, bytes, &p, &region)))
            return rc;
        memcpy(p, image, bytes);
        m.region = region;
        m.bytes = bytes;
        rc = call(g, GOS_MSG_MODULE_LOAD, &m, sizeof m, -1, &r, sizeof r);
        int rc2 = region_del(g, region);
        munmap(p, bytes);
        if (!rc)
            rc = rc2;
    }
    if (!rc)
        *out = r.handle;
    return rc;
}
int gpuos_module_load(gpuos_vgpu *g, const void *image, size_t bytes, gpuos_module *out)
{
    LOCKED(g, module_load(g, image, bytes, NULL, out));
}
int gpuos_module_load_builtin(gpuos_vgpu *g, const char *name, gpuos_module *out)
{
    LOCKED(g, module_load(g, NULL, 0, name ? name : "", out));
}
static int module_unload(gpuos_vgpu *g, gpuos_module m)
{
    struct gos_msg_module_unload u = {.module = m};
    return call(g, GOS_MSG_MODULE_UNLOAD, &u, sizeof u, -1, NULL, 0);
}
int gpuos_module_unload(gpuos_vgpu *g, gpuos_module m) { LOCKED(g, module_unload(g, m)); }

static int module_function(gpuos_vgpu *g, gpuos_module m, const char *name, gpuos_function *out)
{
    struct gos_msg_func_get f = {.module = m};
    struct gos_rep_handle r;
    if (!name || !*name || strlen(name) >= sizeof f.name || !out)
        return gos_fail(GOS_EINVAL, "kernel name of 1..%zu characters", sizeof f.name - 1);
    strcpy(f.name, name);
    int rc = call(g, GOS_MSG_FUNC_GET, &f, sizeof f, -1, &r, sizeof r);
    if (!rc)
        *out = r.handle;
    return rc;
}
int gpuos_module_function(gpuos_vgpu *g, gpuos_module m, const char *name, gpuos_function *out)
{
    LOCKED(g, module_function(g, m, name, out));
}

void gpuos_params_init(gpuos_params *p) { p->len = 0; }

int gpuos_params_add(gpuos_params *p, const void *value, size_t size)
{
    size_t align = size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
    size_t off = (p->len + align - 1) & ~(align - 1);
    if (!size || off + size > sizeof p->buf)
        return gos_fail(GOS_EINVAL, "kernel parameters exceed %zu bytes", sizeof p->buf);
    memcpy(p->buf + off, value, size);
    p->len = off + size;
    return GOS_OK;
}

static int launch(gpuos_vgpu *g, gpuos_function f, const gpuos_launch_config *c, const void *params, size_t pb)
{
    if (!c)
        return gos_fail(GOS_EINVAL, "NULL launch configuration");
    if (pb > GOS_PARAM_MAX || (pb && !params))
        return gos_fail(GOS_EINVAL, "kernel parameters of %zu bytes (at most %d)", pb, GOS_PARAM_MAX);
    struct gos_msg_launch m = {.func = f, .smem = c->shared_mem, .flags = GOS_F_ASYNC, .priority = c->priority,
                               .param_bytes = (uint32_t)pb};
    int cl = c->cluster[0] || c->cluster[1] || c->cluster[2];
    for (int i = 0; i < 3; i++) {
        m.grid[i] = c->grid[i] ? c->grid[i] : 1;
        m.block[i] = c->block[i] ? c->block[i] : 1;
        m.cluster[i] = cl ? (c->cluster[i] ? c->cluster[i] : 1) : 0;
    }
    uint32_t seq = 0;
    return send_req(g, GOS_MSG_LAUNCH, &m, sizeof m, params, pb, -1, &seq);
}
int gpuos_launch(gpuos_vgpu *g, gpuos_function f, const gpuos_launch_config *cfg, const void *params,
                 size_t param_bytes)
{
    LOCKED(g, launch(g, f, cfg, params, param_bytes));
}

static int sync_(gpuos_vgpu *g) { return call(g, GOS_MSG_SYNC, NULL, 0, -1, NULL, 0); }
int gpuos_synchronize(gpuos_vgpu *g) { LOCKED(g, sync_(g)); }

static void facts_from(gpuos_vgpu_facts *o, const struct gos_vgpu_rec *r)
{
    memset(o, 0, sizeof *o);
    memcpy(o->name, r->name, sizeof o->name);
    o->name[sizeof o->name - 1] = 0;
    o->id = (int)r->id;
    o->device = (int)r->device;
    o->compute_share = (int)r->compute_share;
    o->copy_share = (int)r->copy_share;
    o->mem_share = (int)r->mem_share;
    o->clients = (int)r->clients;
    o->mem_quota = r->mem_quota;
    o->mem_used = r->mem_used;
    o->compute_util = r->compute_util;
    o->copy_util = r->copy_util;
    o->compute_ns = r->compute_ns;
    o->copy_ns = r->copy_ns;
    o->tasks = r->tasks;
    memcpy(o->policy, r->policy, sizeof o->policy);
    o->policy[sizeof o->policy - 1] = 0;
    memcpy(o->queue, r->queue, sizeof o->queue);
    o->queue[sizeof o->queue - 1] = 0;
    o->compute_held = r->compute_held;
    o->copy_held = r->copy_held;
    o->compute_held_ns = r->compute_held_ns;
    o->faults = r->faults;
    snprintf(o->isolation, sizeof o->isolation, "%s", r->isolation);
    o->mem_resident = r->mem_resident;
    o->mem_swapped = r->mem_swapped;
    o->evictions = r->evictions;
    o->restores = r->restores;
    o->copy_held_ns = r->copy_held_ns;
}

static int device_info(gpuos_vgpu *g, gpuos_device_facts *o)
{
    struct gos_rep_device_info r;
    int rc = call(g, GOS_MSG_DEVICE_INFO, NULL, 0, -1, &r, sizeof r);
    if (rc)
        return rc;
    memset(o, 0, sizeof *o);
    memcpy(o->name, r.name, sizeof o->name - 1);
    memcpy(o->uuid, r.uuid, sizeof o->uuid - 1);
    memcpy(o->backend, r.backend, sizeof o->backend - 1);
    o->cc_major = (int)r.cc_major;
    o->cc_minor = (int)r.cc_minor;
    o->sm_count = (int)r.sm_count;
    o->simulated = (int)r.simulated;
    o->mem_bytes = r.mem_bytes;
    return GOS_OK;
}
int gpuos_device_info(gpuos_vgpu *g, gpuos_device_facts *out) { LOCKED(g, device_info(g, out)); }

static int vgpu_info(gpuos_vgpu *g, gpuos_vgpu_facts *o)
{
    struct gos_vgpu_rec r;
    int rc = call(g, GOS_MSG_VGPU_INFO, NULL, 0, -1, &r, sizeof r);
    if (!rc)
        facts_from(o, &r);
    return rc;
}
int gpuos_vgpu_info(gpuos_vgpu *g, gpuos_vgpu_facts *out) { LOCKED(g, vgpu_info(g, out)); }

int gpuos_mem_info(gpuos_vgpu *g, uint64_t *used, uint64_t *quota, uint64_t *total)
{
    gpuos_vgpu_facts f;
    gpuos_device_facts d;
    int rc = gpuos_vgpu_info(g, &f);
    if (!rc)
        rc = gpuos_device_info(g, &d);
    if (rc)
        return rc;
    if (used)
        *used = f.mem_used;
    if (quota)
        *quota = f.mem_quota;
    if (total)
        *total = d.mem_bytes;
    return GOS_OK;
}

static int set_copy(gpuos_vgpu *g, size_t chunk, int depth)
{
    if (chunk && (chunk < 4096 || chunk > (1u << 30)))
        return gos_fail(GOS_EINVAL, "chunk of %zu bytes outside 4 KB..1 GB", chunk);
    if (depth && (depth < 1 || depth > MAX_DEPTH))
        return gos_fail(GOS_EINVAL, "pipeline depth %d outside 1..%d", depth, MAX_DEPTH);
    int rc = sync_(g); /* nothing may still use the old slots */
    if (rc)
        return rc;
    return stage_setup(g, chunk ? chunk : g->chunk, depth ? depth : g->depth);
}
int gpuos_set_copy_params(gpuos_vgpu *g, size_t chunk, int depth) { LOCKED(g, set_copy(g, chunk, depth)); }

int gpuos_set_copy_small(gpuos_vgpu *g, size_t bytes)
{
    if (!g)
        return gos_fail(GOS_EINVAL, "NULL gpuos handle");
    pthread_mutex_lock(&g->lock);
    g->small = bytes;
    pthread_mutex_unlock(&g->lock);
    return GOS_OK;
}

size_t gpuos_get_copy_small(gpuos_vgpu *g) { return g->small; }

void gpuos_get_copy_params(gpuos_vgpu *g, size_t *chunk, int *depth)
{
    if (chunk)
        *chunk = g->chunk;
    if (depth)
        *depth = g->depth;
}

/* Administration: a bare connection without HELLO. */
static int admin_open(const char *path, gpuos_vgpu *g)
{
    memset(g, 0, sizeof *g);
    g->timeout_ms = timeout_ms();
    if (!(g->rx = malloc(GOS_PROTO_MAX_PAYLOAD)))
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = connect_to(path, g->timeout_ms, &g->fd);
    if (rc)
        free(g->rx);
    return rc;
}

int gpuos_admin_list(const char *socket_path, gpuos_vgpu_facts *out, int max, int *n)
{
    if (!n || max < 0 || (max > 0 && !out))
        return gos_fail(GOS_EINVAL, "gpuos_admin_list needs an output array of max entries and a count");
    gpuos_vgpu g;
    int rc = admin_open(socket_path, &g);
    if (rc)
        return rc;
    uint32_t seq = 0;
    const void *body;
    size_t blen;
    rc = send_req(&g, GOS_MSG_ADMIN_LIST, NULL, 0, NULL, 0, -1, &seq);
    if (!rc)
        rc = wait_reply(&g, seq, GOS_MSG_ADMIN_LIST, &body, &blen);
    if (!rc) {
        struct gos_rep_admin_list l;
        memcpy(&l, body, sizeof l);
        int k = 0;
        for (uint32_t i = 0; i < l.n && k < max; i++, k++) {
            struct gos_vgpu_rec r;
            memcpy(&r, (const char *)body + sizeof l + i * sizeof r, sizeof r);
            facts_from(&out[k], &r);
        }
        *n = k;
    }
    close(g.fd);
    free(g.rx);
    return rc;
}

static void shm_ds_from(gpuos_shm_ds *o, const struct gos_shm_rec *r)
{
    memset(o, 0, sizeof *o);
    o->id = r->id;
    o->key = r->key;
    o->uid = r->uid;
    o->gid = r->gid;
    o->cuid = r->cuid;
    o->cgid = r->cgid;
    o->mode = r->mode;
    o->nattch = r->nattch;
    o->bytes = r->bytes;
    o->removed = (int)r->removed;
    o->cpid = r->cpid;
    o->lpid = r->lpid;
    memcpy(o->vgpu, r->vgpu, sizeof o->vgpu);
    o->vgpu[sizeof o->vgpu - 1] = 0;
}

static int shm_get(gpuos_vgpu *g, int key, size_t bytes, int flags, int *id)
{
    if (!id)
        return gos_fail(GOS_EINVAL, "gpuos_shm_get needs an id to fill");
    if (flags & ~(GPUOS_SHM_CREAT | GPUOS_SHM_EXCL | 0777))
        return gos_fail(GOS_EINVAL, "gpuos_shm_get: unknown flags 0%o", (unsigned)flags);
    struct gos_msg_shm_get m = {.key = key, .flags = (uint32_t)flags, .bytes = bytes};
    struct gos_rep_shm_get r = {0};
    int rc = call(g, GOS_MSG_SHM_GET, &m, sizeof m, -1, &r, sizeof r);
    if (!rc)
        *id = r.id;
    return rc;
}
int gpuos_shm_get(gpuos_vgpu *g, int key, size_t bytes, int flags, int *id)
{
    LOCKED(g, shm_get(g, key, bytes, flags, id));
}

static int shm_attach(gpuos_vgpu *g, int id, gpuos_dptr *out)
{
    if (!out)
        return gos_fail(GOS_EINVAL, "gpuos_shm_attach needs an address to fill");
    struct gos_msg_shm_at m = {.id = id};
    struct gos_rep_shm_at r = {0};
    int rc = call(g, GOS_MSG_SHM_AT, &m, sizeof m, -1, &r, sizeof r);
    if (!rc)
        *out = r.dptr;
    return rc;
}
int gpuos_shm_attach(gpuos_vgpu *g, int id, gpuos_dptr *out) { LOCKED(g, shm_attach(g, id, out)); }

static int shm_detach(gpuos_vgpu *g, gpuos_dptr p)
{
    struct gos_msg_shm_dt m = {.dptr = p};
    return call(g, GOS_MSG_SHM_DT, &m, sizeof m, -1, NULL, 0);
}
int gpuos_shm_detach(gpuos_vgpu *g, gpuos_dptr p) { LOCKED(g, shm_detach(g, p)); }

static int shm_ctl(gpuos_vgpu *g, int id, int cmd, gpuos_shm_ds *buf)
{
    if (cmd < GPUOS_SHM_STAT || cmd > GPUOS_SHM_RMID)
        return gos_fail(GOS_EINVAL, "gpuos_shm_ctl: unknown command %d", cmd);
    if (cmd != GPUOS_SHM_RMID && !buf)
        return gos_fail(GOS_EINVAL, "gpuos_shm_ctl: STAT and SET need a buffer");
    struct gos_msg_shm_ctl m = {.id = id, .cmd = (uint32_t)cmd};
    if (cmd == GPUOS_SHM_SET) {
        m.uid = buf->uid;
        m.gid = buf->gid;
        m.mode = buf->mode;
    }
    if (cmd != GPUOS_SHM_STAT)
        return call(g, GOS_MSG_SHM_CTL, &m, sizeof m, -1, NULL, 0);
    struct gos_shm_rec r;
    int rc = call(g, GOS_MSG_SHM_CTL, &m, sizeof m, -1, &r, sizeof r);
    if (!rc)
        shm_ds_from(buf, &r);
    return rc;
}
int gpuos_shm_ctl(gpuos_vgpu *g, int id, int cmd, gpuos_shm_ds *buf) { LOCKED(g, shm_ctl(g, id, cmd, buf)); }

int gpuos_admin_shm_list(const char *socket_path, gpuos_shm_ds *out, int max, int *n)
{
    if (!n || max < 0 || (max > 0 && !out))
        return gos_fail(GOS_EINVAL, "gpuos_admin_shm_list needs an output array of max entries and a count");
    gpuos_vgpu g;
    int rc = admin_open(socket_path, &g);
    if (rc)
        return rc;
    uint32_t seq = 0;
    const void *body;
    size_t blen;
    rc = send_req(&g, GOS_MSG_ADMIN_SHM_LIST, NULL, 0, NULL, 0, -1, &seq);
    if (!rc)
        rc = wait_reply(&g, seq, GOS_MSG_ADMIN_SHM_LIST, &body, &blen);
    if (!rc) {
        struct gos_rep_shm_list l;
        memcpy(&l, body, sizeof l);
        int k = 0;
        for (uint32_t i = 0; i < l.n && k < max; i++, k++) {
            struct gos_shm_rec r;
            memcpy(&r, (const char *)body + sizeof l + i * sizeof r, sizeof r);
            shm_ds_from(&out[k], &r);
        }
        *n = k;
    }
    close(g.fd);
    free(g.rx);
    return rc;
}

int gpuos_admin_set(const char *socket_path, const char *vgpu, const char *key, const char *value)
{
    struct gos_msg_admin_set m = {0};
    if (!vgpu || !key || !value || !*vgpu || !*key || !*value || strlen(vgpu) >= sizeof m.vgpu ||
        strlen(key) >= sizeof m.key || strlen(value) >= sizeof m.value)
        return gos_fail(GOS_EINVAL, "vgpu set needs NAME key=value (short strings)");
    strcpy(m.vgpu, vgpu);
    strcpy(m.key, key);
    strcpy(m.value, value);
    gpuos_vgpu g;
    int rc = admin_open(socket_path, &g);
    if (rc)
        return rc;
    rc = call(&g, GOS_MSG_ADMIN_SET, &m, sizeof m, -1, NULL, 0);
    close(g.fd);
    free(g.rx);
    return rc;
}
