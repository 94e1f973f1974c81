/* SPDX-License-Identifier: Apache-2.0 */
/* copies.c: libgpuos's copies: shared regions (sealed memfds), the staging
 * bounce buffers and their pipeline, the host-side copy threads, every memcpy.
 * Process: a client program (libgpuos; the shim too). */
#include "client/client_internal.h"
#include "common/clock.h"
#include "common/grow.h"
#include "common/range.h"

#include "proto/ring_shm.h"

#include <time.h>

static void part_of(const struct copy_pool *p, int i, size_t *off, size_t *len)
{
    size_t per = (p->len / (size_t)p->parts + 4095) & ~(size_t)4095;
    *off = per * (size_t)i;
    *len = *off >= p->len ? 0 : (p->len - *off < per ? p->len - *off : per);
}

/* The copy threads and the caller spin this long for the next job (or the
 * helpers' last part) before they sleep on the condition variable: a wake-up
 * costs tens of microseconds on a virtual machine, a fifth of a 1 MB copy. */
#define POOL_SPIN_NS 200000ull

static uint64_t pool_now_ns(void) { return gos_now_ns(); }

/* Spins until *w != v (or stop is raised) for at most POOL_SPIN_NS. */
static void pool_spin(const unsigned *w, unsigned v, const int *stop)
{
    uint64_t end = pool_now_ns() + POOL_SPIN_NS;
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == v && !__atomic_load_n(stop, __ATOMIC_ACQUIRE) &&
           pool_now_ns() < end)
        gos_ring_relax();
}

static void *copy_worker(void *arg)
{
    struct copy_arg *a = arg;
    struct copy_pool *p = &a->g->pool;
    int me = a->idx;
    unsigned seen = a->gen0;
    for (;;) {
        pool_spin(&p->gen, seen, &p->stop);
        pthread_mutex_lock(&p->m);
        while (__atomic_load_n(&p->gen, __ATOMIC_RELAXED) == seen && !p->stop)
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
        if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_RELEASE) == 0)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->m);
    }
    pthread_mutex_unlock(&p->m);
    return NULL;
}

void gcl_par_memcpy(gpuos_vgpu *g, void *dst, const void *src, size_t len)
{
    struct copy_pool *p = &g->pool;
    int want = g->copy_threads;
    if (want <= 1 || len < (g->par_min ? g->par_min : (1u << 20))) {
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
    __atomic_store_n(&p->pending, p->n, __ATOMIC_RELAXED);
    __atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE); /* spinning helpers start here */
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->m);
    size_t off, l;
    part_of(p, 0, &off, &l);
    if (l)
        memcpy((char *)dst + off, (const char *)src + off, l);
    uint64_t end = pool_now_ns() + POOL_SPIN_NS;
    while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) > 0 && pool_now_ns() < end)
        gos_ring_relax();
    pthread_mutex_lock(&p->m);
    while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) > 0)
        pthread_cond_wait(&p->done, &p->m);
    pthread_mutex_unlock(&p->m);
}

void gcl_pool_stop(gpuos_vgpu *g)
{
    struct copy_pool *p = &g->pool;
    pthread_mutex_lock(&p->m);
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->go);
    int n = p->n;
    pthread_mutex_unlock(&p->m);
    for (int i = 0; i < n; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->m);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
}

int gcl_make_memfd(size_t bytes, void **ptr, int *fdout)
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
static int region_new(gpuos_vgpu *g, size_t bytes, void **ptr, uint32_t *region, int mapped, uint32_t *flags)
{
    int fd = -1, rc = gcl_make_memfd(bytes, ptr, &fd);
    if (rc)
        return rc;
    struct gos_msg_region_add m = {.bytes = bytes, .addr = mapped ? (uint64_t)(uintptr_t)*ptr : 0};
    struct gos_rep_region_add r = {0};
    rc = gcl_call(g, GOS_MSG_REGION_ADD, &m, sizeof m, fd, &r, sizeof r);
    close(fd);
    if (rc) {
        munmap(*ptr, bytes);
        return rc;
    }
    *region = r.region;
    if (flags)
        *flags = r.flags;
    return GOS_OK;
}
int gcl_region_new(gpuos_vgpu *g, size_t bytes, void **ptr, uint32_t *region)
{
    return region_new(g, bytes, ptr, region, 0, NULL);
}
int gcl_region_new_mapped(gpuos_vgpu *g, size_t bytes, void **ptr, uint32_t *region, uint32_t *flags)
{
    return region_new(g, bytes, ptr, region, 1, flags);
}

int gcl_region_del(gpuos_vgpu *g, uint32_t region)
{
    struct gos_msg_region_del m = {.region = region};
    return gcl_call(g, GOS_MSG_REGION_DEL, &m, sizeof m, -1, NULL, 0);
}

/* Sets the pipeline's shape; the staging region itself is created on the first
 * pageable copy (stage_ready), so clients that never need it pay nothing. */
int gcl_stage_setup(gpuos_vgpu *g, size_t chunk, int depth)
{
    int rc;
    if (g->stage) {
        if ((rc = gcl_region_del(g, g->stage_region)))
            return rc;
        munmap(g->stage, g->stage_bytes);
        g->stage = NULL;
    }
    g->chunk = chunk;
    g->depth = depth;
    g->stage_bytes = chunk * (size_t)depth;
    return GOS_OK;
}

int gcl_stage_ready(gpuos_vgpu *g)
{
    if (g->stage)
        return GOS_OK;
    int rc = gcl_region_new(g, g->stage_bytes, &g->stage, &g->stage_region);
    if (rc)
        g->stage = NULL;
    return rc;
}

/* Gives a buffer back to the daemon and unmaps it (whatever the daemon said). */
static int host_release(gpuos_vgpu *g, struct hostbuf *b)
{
    int rc = gcl_region_del(g, b->region);
    munmap(b->ptr, b->bytes);
    b->ptr = NULL;
    return rc;
}

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
    struct hostbuf *b = &g->hb[slot];
    for (int i = 0; i < HOST_CACHE_N; i++) { /* a kept one of about this size (at most twice) */
        struct hostbuf *c = &g->hcache[i];
        if (c->ptr && bytes <= c->bytes && c->bytes / 2 <= bytes) {
            *b = *c;
            c->ptr = NULL;
            *out = b->ptr;
            return GOS_OK;
        }
    }
    int rc = gcl_region_new_mapped(g, bytes, &b->ptr, &b->region, &b->flags);
    if (rc == GOS_EBUSY || rc == GOS_ENOMEM) { /* the kept ones may hold the regions or memory it needs */
        int gave = 0;
        for (int i = 0; i < HOST_CACHE_N; i++)
            if (g->hcache[i].ptr) {
                host_release(g, &g->hcache[i]);
                gave = 1;
            }
        if (gave)
            rc = gcl_region_new_mapped(g, bytes, &b->ptr, &b->region, &b->flags);
    }
    if (rc) {
        b->ptr = NULL;
        return rc;
    }
    b->bytes = bytes;
    *out = b->ptr;
    return GOS_OK;
}
int gpuos_host_alloc(gpuos_vgpu *g, size_t bytes, void **out) { LOCKED(g, host_alloc(g, bytes, out)); }

/* Keeps a freed buffer for the next allocation (when all places are taken,
 * the first kept one is given back); 0 when it is not kept. */
static int host_keep(gpuos_vgpu *g, struct hostbuf *b)
{
    if (g->hcache_off || b->bytes > HOST_CACHE_MAX)
        return 0;
    int k = 0;
    while (k < HOST_CACHE_N && g->hcache[k].ptr)
        k++;
    if (k == HOST_CACHE_N) {
        host_release(g, &g->hcache[0]);
        k = 0;
    }
    g->hcache[k] = *b;
    b->ptr = NULL;
    return 1;
}

static int host_free(gpuos_vgpu *g, void *p)
{
    for (int i = 0; i < MAX_HOSTBUFS; i++)
        if (p && g->hb[i].ptr == p)
            return host_keep(g, &g->hb[i]) ? GOS_OK : host_release(g, &g->hb[i]);
    return gos_fail(GOS_EINVAL, "%p was not allocated with gpuos_host_alloc", p);
}
int gpuos_host_free(gpuos_vgpu *g, void *p) { LOCKED(g, host_free(g, p)); }

static int host_device_pointer(gpuos_vgpu *g, const void *p, gpuos_dptr *out)
{
    if (!out)
        return gos_fail(GOS_EINVAL, "gpuos_host_device_pointer without a result pointer");
    for (int i = 0; i < MAX_HOSTBUFS; i++)
        if (g->hb[i].ptr && (const char *)p >= (const char *)g->hb[i].ptr &&
            (const char *)p < (const char *)g->hb[i].ptr + g->hb[i].bytes) {
            if (!(g->hb[i].flags & GOS_REGION_F_SAME_VA))
                return gos_fail(GOS_EUNSUPPORTED, "host memory at %p: the executor could not map it at this "
                                                  "address (kernels cannot reach it)", p);
            *out = (gpuos_dptr)(uintptr_t)p;
            return GOS_OK;
        }
    return gos_fail(GOS_EINVAL, "%p was not allocated with gpuos_host_alloc", p);
}
int gpuos_host_device_pointer(gpuos_vgpu *g, const void *p, gpuos_dptr *out)
{
    LOCKED(g, host_device_pointer(g, p, out));
}

/* The first known range whose base is >= p. */
static int known_at(const gpuos_vgpu *g, uint64_t p)
{
    int lo = 0, hi = g->n_known;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (g->known[mid].p < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void gcl_known_add(gpuos_vgpu *g, uint64_t p, uint64_t n)
{
    int i = known_at(g, p);
    if (i < g->n_known && g->known[i].p == p) {
        g->known[i].n = n; /* a global looked up again */
        return;
    }
    if (gos_grow((void **)&g->known, &g->cap_known, g->n_known, sizeof *g->known, 64))
        return;
    memmove(&g->known[i + 1], &g->known[i], (size_t)(g->n_known - i) * sizeof *g->known);
    g->known[i] = (struct gcl_known){p, n};
    g->n_known++;
}

void gcl_known_del(gpuos_vgpu *g, uint64_t p)
{
    int i = known_at(g, p);
    if (i < g->n_known && g->known[i].p == p) {
        memmove(&g->known[i], &g->known[i + 1], (size_t)(g->n_known - i - 1) * sizeof *g->known);
        g->n_known--;
    }
}

void gcl_known_del_within(gpuos_vgpu *g, uint64_t p, uint64_t n)
{
    int i = known_at(g, p), j = i;
    while (j < g->n_known && g->known[j].p - p < n)
        j++;
    memmove(&g->known[i], &g->known[j], (size_t)(g->n_known - j) * sizeof *g->known);
    g->n_known -= j - i;
}

/* Whether [p, p + n) lies inside one known range (the one with the largest base <= p). */
static int known(const gpuos_vgpu *g, uint64_t p, uint64_t n)
{
    int i = known_at(g, p + 1) - 1;
    return i >= 0 && gos_range_within(g->known[i].p, g->known[i].n, p, n);
}

/* Issue 23.5: a copy's sizes against overflow and its device ranges against the
 * client's memory, before a host byte is touched (a copy of 2^40 bytes from a 4
 * KB buffer must be GPUOS_EINVAL, as the driver's CUDA_ERROR_INVALID_VALUE, not
 * a crash in the staging; SIZE_MAX must not wrap into "nothing to copy").
 * Ranges this handle allocated are checked here; any other (a segment
 * attachment, memory of another kind) is asked of the daemon, whose checks
 * every piece meets again anyway. */
static int copy_args(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, gpuos_dptr s, const void *host, size_t n)
{
    if ((uint64_t)n > GOS_COPY_MAX)
        return gos_fail(GOS_EINVAL, "copy of %zu bytes: larger than any device (at most 2^40)", n);
    if ((uint64_t)n > UINT64_MAX - d || (dir == GOS_OP_DTOD && (uint64_t)n > UINT64_MAX - s))
        return gos_fail(GOS_EINVAL, "copy of %zu bytes at 0x%llx: the device range wraps", n,
                        (unsigned long long)(dir == GOS_OP_DTOD && (uint64_t)n > UINT64_MAX - s ? s : d));
    if (host && n > UINTPTR_MAX - (uintptr_t)host)
        return gos_fail(GOS_EINVAL, "copy of %zu bytes at host %p: the host range wraps", n, host);
    if (known(g, d, n) && (dir != GOS_OP_DTOD || known(g, s, n)))
        return GOS_OK;
    struct gos_msg_copy m = {.op = dir, .dptr = d, .dptr2 = s, .bytes = n};
    return gcl_call(g, GOS_MSG_COPY_CHECK, &m, sizeof m, -1, NULL, 0);
}

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
    struct gos_msg_copy m = {.op = dir, .region = region, .offset = off, .dptr = dptr, .dptr2 = src,
                             .bytes = n, .flags = async ? GOS_F_ASYNC : 0};
    if (g->small_n > 0 && n <= g->small)
        m.flags |= GOS_F_DIRECT;
    return gcl_send_req(g, GOS_MSG_COPY, &m, sizeof m, NULL, 0, -1, seq);
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
    int rc = gcl_wait_reply(g, seq, GOS_MSG_COPY, NULL, NULL);
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

size_t gcl_pipe_chunk(const gpuos_vgpu *g, size_t n) { return pipe_chunk(g, n); }

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
        gcl_par_memcpy(g, (char *)g->stage + (size_t)slot * g->chunk, (const char *)src + done, len);
        int rc = send_copy(g, GOS_OP_HTOD, g->stage_region, (uint64_t)slot * g->chunk, d + done, 0, len, 0,
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
    size_t nchunks = n / chunk + (n % chunk != 0), issued = 0; /* (n + chunk - 1) would wrap near SIZE_MAX */
    uint32_t seqs[MAX_DEPTH] = {0};
    int rc;
    for (; issued < nchunks && issued < (size_t)g->depth; issued++) {
        size_t off = issued * chunk, len = n - off < chunk ? n - off : chunk;
        if ((rc = send_copy(g, GOS_OP_DTOH, g->stage_region, (uint64_t)(issued % (size_t)g->depth) * g->chunk,
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
        gcl_par_memcpy(g, (char *)dst + off, (char *)g->stage + (size_t)slot * g->chunk, len);
        if (issued < nchunks) {
            size_t o2 = issued * chunk, l2 = n - o2 < chunk ? n - o2 : chunk;
            if ((rc = send_copy(g, GOS_OP_DTOH, g->stage_region, (uint64_t)slot * g->chunk, d + o2, 0, l2, 0,
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
    const void *host = dir == GOS_OP_HTOD ? src : dst;
    if (!n)
        return GOS_OK;
    if (!host)
        return gos_fail(GOS_EINVAL, "NULL host pointer");
    int rc = copy_args(g, dir, d, 0, host, n);
    if (rc)
        return rc;
    struct hostbuf *b = hostbuf_of(g, host, n);
    if (gcl_ring_ok(g)) /* the fast path (issue 9.4; fastpath.c) */
        return gcl_ring_copy(g, dir, d, dst, src, n, async, b ? (int)b->region : -1,
                             b ? (uint64_t)((const char *)host - (const char *)b->ptr) : 0);
    g->small_n = n <= g->small;
    rc = b ? copy_shared(g, dir, b, host, d, n, async) : gcl_stage_ready(g);
    if (!b && !rc)
        rc = dir == GOS_OP_HTOD ? htod_pipeline(g, d, src, n) : dtoh_pipeline(g, dst, d, n);
    g->small_n = 0;
    return rc;
}

static int htod(gpuos_vgpu *g, gpuos_dptr d, const void *src, size_t n, int async)
{
    return host_copy(g, GOS_OP_HTOD, d, NULL, src, n, async);
}

static int dtoh(gpuos_vgpu *g, void *dst, gpuos_dptr d, size_t n, int async)
{
    return host_copy(g, GOS_OP_DTOH, d, dst, NULL, n, async);
}

/* The socket path alone, for the ring's replays (fastpath.c). */
int gcl_sock_copy_region(gpuos_vgpu *g, uint32_t dir, uint32_t region, uint64_t off, gpuos_dptr d, size_t n, int async)
{
    uint32_t seq = 0;
    int rc = send_copy(g, dir, region, off, d, 0, n, async, &seq);
    if (rc || async)
        return rc;
    return gcl_wait_reply(g, seq, GOS_MSG_COPY, NULL, NULL);
}

int gcl_sock_copy_host(gpuos_vgpu *g, uint32_t dir, gpuos_dptr d, void *dst, const void *src, size_t n)
{
    int rc = gcl_stage_ready(g);
    if (rc || !n)
        return rc;
    return dir == GOS_OP_HTOD ? htod_pipeline(g, d, src, n) : dtoh_pipeline(g, dst, d, n);
}

static int dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n, int async)
{
    if (!n)
        return GOS_OK;
    int rc = copy_args(g, GOS_OP_DTOD, dst, src, NULL, n);
    if (rc)
        return rc;
    if (gcl_ring_ok(g))
        return gcl_ring_dtod(g, dst, src, n, async);
    return gcl_sock_dtod(g, dst, src, n, async);
}

int gcl_sock_dtod(gpuos_vgpu *g, gpuos_dptr dst, gpuos_dptr src, size_t n, int async)
{
    uint32_t seq = 0;
    int rc = send_copy(g, GOS_OP_DTOD, 0, 0, dst, src, n, async, &seq);
    if (rc || async)
        return rc;
    return gcl_wait_reply(g, seq, GOS_MSG_COPY, NULL, NULL);
}

static int gate(gpuos_vgpu *g, const uint64_t *word, uint64_t value)
{
    struct hostbuf *b = word ? hostbuf_of(g, word, sizeof *word) : NULL;
    if (!b || (uintptr_t)word % 8)
        return gos_fail(GOS_EINVAL, "a gate's word must be 8-aligned memory of gpuos_host_alloc");
    if (!gcl_ring_ok(g))
        return gos_fail(GOS_EUNSUPPORTED, "gates need the ring (isolation = process or mps, GPUOS_RING on)");
    return gcl_ring_gate(g, word, value, b->region, (uint64_t)((const char *)word - (const char *)b->ptr));
}
int gpuos_gate(gpuos_vgpu *g, const uint64_t *word, uint64_t value) { LOCKED(g, gate(g, word, value)); }

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

static int set_copy(gpuos_vgpu *g, size_t chunk, int depth)
{
    if (chunk && (chunk < 4096 || chunk > (1u << 30)))
        return gos_fail(GOS_EINVAL, "chunk of %zu bytes outside 4 KB..1 GB", chunk);
    if (depth && (depth < 1 || depth > MAX_DEPTH))
        return gos_fail(GOS_EINVAL, "pipeline depth %d outside 1..%d", depth, MAX_DEPTH);
    int rc = gcl_sync(g); /* nothing may still use the old slots */
    if (rc)
        return rc;
    return gcl_stage_setup(g, chunk ? chunk : g->chunk, depth ? depth : g->depth);
}
int gpuos_set_copy_params(gpuos_vgpu *g, size_t chunk, int depth) { LOCKED(g, set_copy(g, chunk, depth)); }

int gpuos_set_copy_small(gpuos_vgpu *g, size_t bytes)
{
    if (!g)
        return gos_fail(GOS_EINVAL, "NULL gpuos handle");
    pthread_mutex_lock(&g->lock);
    g->small = bytes;
    /* through the ring (issue 9.4) the small path is the slot itself */
    g->ring_inline = bytes < GOS_RING_DATA ? bytes : GOS_RING_DATA;
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
