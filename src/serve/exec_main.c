/* exec_main.c: the executor process (issue 9; xproto.h). It opens the device
 * through the device layer (cuda or sim), so its device memory lives in its own
 * address space: a CUDA context of its own, or a simulated device of its own. It
 * maps the client's shared regions itself (descriptors passed by the daemon) and
 * runs what the daemon grants it: a batch of copies and launches between two
 * events on the engine's stream, answered with each op's result and the GPU time
 * (the daemon charges it to the vGPU). A sticky device error (an illegal address,
 * a kernel fault) is answered with X_FAULTED and ends the process: only this
 * client's context dies, the device and every other executor carry on. */
#include "serve/xproto.h"

#include "place/place.h"
#include "serve/pmem_srv.h"

#include "common/grow.h"
#include "common/status.h"
#include "device/device.h"
#include "device/exec_builtin.h"
#include "device/exec_ops.h"
#include "device/vmm_ops.h"
#include "proto/proto.h"
#include "proto/ring.h"
#include "serve/exec_ring.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XE_ENGINES 2
/* Bounded look-ahead of the ring (issue 9.4): asynchronous entries issued to the
 * device before the executor waits for them, by their expected time (at most
 * XE_RING_AHEAD_NS of work, measured per entry), 4 before anything is known. */
#define XE_RING_AHEAD 4
#define XE_RING_AHEAD_NS 1000000ull
#define XE_RING_AHEAD_MAX 64
/* Inline HtoD data is copied into one of these private pinned buffers and the
 * entry answered once its copy is issued (the slot is the client's again): the
 * host buffer may be reused and every later request sees the data, as CUDA
 * answers a small HtoD copy from pageable memory once it is staged. A buffer
 * is reused XE_BOUNCE_SLOTS asynchronous entries later, when the look-ahead
 * (at most XE_RING_AHEAD_MAX) has waited for its copy. */
#define XE_BOUNCE_SLOTS XE_RING_AHEAD_MAX
#define GOS_XE_SHM_MAX 64

struct xe_region {
    void *ptr;
    uint64_t bytes;
    int pinned;
};

struct xe {
    gos_device *dev;
    int sock;
    void *streams[XE_ENGINES];
    void *ev[XE_ENGINES][2];
    struct xe_region regions[GOS_MAX_REGIONS];
    void *modules[SRV_MAX_MODULES];
    void *funcs[SRV_MAX_FUNCS];
    int n_funcs;
    void *out;
    size_t out_cap;
    gos_vmm_buf shm[GOS_XE_SHM_MAX]; /* attached shared segments (issue 10) */
    gos_vmm_buf *vb; /* swappable allocations (X_VALLOC) */
    int n_vb, cap_vb;
    struct srv_pmem_set pmem; /* partition-local allocations (issue 12) */
    /* the daemon's swap pool (X_EVICT_POOL), mapped once */
    char *pool;
    uint64_t pool_bytes;
    dev_t pool_dev;
    ino_t pool_ino;
    unsigned char *pool_pinned; /* per X_POOL_CHUNK: 1 page-locked, 2 refused */
    /* the fast path (issue 9.4): the ring thread and the socket loop take turns
     * on the device under lock; the ring's requests are checked against this
     * client's device memory (al), functions by the client's handles (fmap) */
    pthread_mutex_t lock;
    struct xe_alloc {
        uint64_t dptr, bytes;
        int evicted;
        int module; /* a module global (MODULE_GLOBAL): its module's slot + 1; 0: memory */
        int ro;     /* a read-only attachment (SHM_RDONLY): no copy may write it */
    } *al;
    int n_al, cap_al;
    uint32_t fmap[SRV_MAX_FUNCS];     /* client's function handle - 1 -> funcs index + 1 (0: none) */
    char fbuiltin[SRV_MAX_FUNCS][32]; /* by funcs index: the built-in kernel's name ("" not built-in) */
    int mod_builtin[SRV_MAX_MODULES];
    int ring_on;
    struct xr *ring;          /* its consumer (xe_ring_stop when a shared executor's client leaves) */
    uint32_t ring_max_queued; /* the daemon's max_queued_requests, for asynchronous ring entries */
    void *ring_bounce;        /* pinned, private: XE_BOUNCE_SLOTS x GOS_RING_DATA for inline HtoD data */
    uint32_t bounce_next;     /* the next of them */
    int bounce_refused;       /* the driver would not pin them: inline HtoD entries wait */
    uint32_t ring_backlog;    /* entries submitted behind the one running (set by the ring's thread) */
    uint32_t ring_ahead;      /* asynchronous entries issued since the stream was last waited for */
    uint64_t ring_ahead_t0;   /* when the first of them was issued */
    uint64_t ring_entry_ns;   /* measured device time per asynchronous entry (0: not yet) */
};

static uint32_t ring_ahead_limit(const struct xe *x)
{
    if (!x->ring_entry_ns)
        return XE_RING_AHEAD;
    uint64_t n = XE_RING_AHEAD_NS / x->ring_entry_ns;
    return n < 1 ? 1 : n > XE_RING_AHEAD_MAX ? XE_RING_AHEAD_MAX : (uint32_t)n;
}

/* The stream was waited for with ring_ahead entries on it: learn their time. */
static void ring_ahead_done(struct xe *x)
{
    if (x->ring_ahead) {
        uint64_t per = (gos_ring_now_ns() - x->ring_ahead_t0) / x->ring_ahead;
        x->ring_entry_ns = x->ring_entry_ns ? (3 * x->ring_entry_ns + per) / 4 : per;
        if (!x->ring_entry_ns)
            x->ring_entry_ns = 1;
    }
    x->ring_ahead = 0;
}

static void al_add(struct xe *x, uint64_t dptr, uint64_t bytes)
{
    if (gos_grow((void **)&x->al, &x->cap_al, x->n_al, sizeof *x->al, 64))
        return; /* not in the table: the ring refuses it, the socket path still works */
    x->al[x->n_al++] = (struct xe_alloc){dptr, bytes, 0, 0, 0};
}

static struct xe_alloc *al_find(struct xe *x, uint64_t dptr)
{
    for (int i = 0; i < x->n_al; i++)
        if (x->al[i].dptr == dptr)
            return &x->al[i];
    return NULL;
}

static void al_del(struct xe *x, uint64_t dptr)
{
    struct xe_alloc *a = al_find(x, dptr);
    if (a)
        *a = x->al[--x->n_al];
}

/* Forgets the globals of module slot s (its unload): the ring may not reach them. */
static void al_drop_module(struct xe *x, uint32_t s)
{
    for (int i = 0; i < x->n_al;)
        if (x->al[i].module == (int)s + 1)
            x->al[i] = x->al[--x->n_al];
        else
            i++;
}

/* GOS_OK when [p, p+n) lies in one of this client's allocations; GOS_RING_REVOKED
 * when that one is swapped out (the socket path restores it first). */
static int al_check(struct xe *x, uint64_t p, uint64_t n, const char *what)
{
    for (int i = 0; i < x->n_al; i++) {
        const struct xe_alloc *a = &x->al[i];
        if (p >= a->dptr && p - a->dptr <= a->bytes && n <= a->bytes - (p - a->dptr))
            return a->evicted ? GOS_RING_REVOKED : GOS_OK;
    }
    return gos_fail(GOS_EINVAL, "%s range 0x%llx+%llu is not inside an allocation of this client", what,
                    (unsigned long long)p, (unsigned long long)n);
}

/* al_check for a range a copy writes: a read-only attachment is refused as the
 * daemon refuses it (GOS_EPERM), never left to fault the client's context. */
static int al_check_w(struct xe *x, uint64_t p, uint64_t n, const char *what)
{
    int rc = al_check(x, p, n, what);
    if (rc)
        return rc;
    for (int i = 0; i < x->n_al; i++) {
        const struct xe_alloc *a = &x->al[i];
        if (a->ro && p >= a->dptr && p - a->dptr <= a->bytes && n <= a->bytes - (p - a->dptr))
            return gos_fail(GOS_EPERM, "device range 0x%llx+%llu is a read-only attachment (SHM_RDONLY)",
                            (unsigned long long)p, (unsigned long long)n);
    }
    return GOS_OK;
}

static int answer(struct xe *x, uint32_t type, int rc, uint32_t flags, const void *p, uint32_t n)
{
    /* an error answer carries its message as the payload */
    const char *msg = rc ? gos_last_error() : NULL;
    struct x_hdr h = {type, msg ? (uint32_t)strlen(msg) + 1 : n, rc, flags};
    return x_send(x->sock, &h, msg ? msg : p, -1);
}

/* Shared device memory (issue 10): NEW creates exportable physical memory and
 * hands its descriptor to the daemon (which keeps the segment alive with it; the
 * handle here is released at once), MAP imports a descriptor and maps it in this
 * context, UNMAP undoes that. */
static int shm_new(struct xe *x, uint64_t bytes, int *fd)
{
    uint64_t h;
    int rc = gos_vmm_create(x->dev, bytes, &h);
    if (rc)
        return rc;
    rc = gos_vmm_export_fd(x->dev, h, fd);
    gos_vmm_release(x->dev, h);
    return rc;
}

static int shm_map(struct xe *x, uint64_t bytes, int fd, int ro, uint64_t *dptr)
{
    int slot = -1;
    for (int i = 0; i < GOS_XE_SHM_MAX && slot < 0; i++)
        if (!x->shm[i].va)
            slot = i;
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "SHM_MAP without a descriptor");
    if (slot < 0)
        return gos_fail(GOS_ELIMIT, "executor: more than %d shared segments attached", GOS_XE_SHM_MAX);
    int rc = gos_vmm_buf_attach(x->dev, fd, bytes, &x->shm[slot]);
    if (!rc && ro && (rc = gos_vmm_set_access(x->dev, x->shm[slot].va, x->shm[slot].bytes, 1)))
        gos_vmm_buf_free(x->dev, &x->shm[slot]);
    if (!rc)
        *dptr = x->shm[slot].va;
    return rc;
}

static int shm_unmap(struct xe *x, uint64_t dptr)
{
    for (int i = 0; i < GOS_XE_SHM_MAX; i++)
        if (x->shm[i].va && x->shm[i].va == dptr) {
            gos_vmm_buf_free(x->dev, &x->shm[i]);
            return GOS_OK;
        }
    return gos_fail(GOS_EINVAL, "executor: 0x%llx is not an attached segment", (unsigned long long)dptr);
}

static gos_vmm_buf *vb_find(struct xe *x, uint64_t dptr)
{
    for (int i = 0; i < x->n_vb; i++)
        if (x->vb[i].va == dptr)
            return &x->vb[i];
    return NULL;
}

/* Frees an allocation (X_ALLOC or X_VALLOC) at dptr. */
static int mem_free(struct xe *x, uint64_t dptr)
{
    gos_vmm_buf *b = vb_find(x, dptr);
    if (!b)
        return gos_exec_mem_free(x->dev, dptr);
    gos_vmm_buf_free(x->dev, b);
    *b = x->vb[--x->n_vb];
    return GOS_OK;
}

static int xe_valloc(struct xe *x, uint64_t bytes, uint64_t *dptr)
{
    int rc = gos_grow((void **)&x->vb, &x->cap_vb, x->n_vb, sizeof *x->vb, 64);
    if (rc)
        return rc;
    rc = gos_vmm_buf_alloc(x->dev, bytes, &x->vb[x->n_vb]);
    if (!rc)
        *dptr = x->vb[x->n_vb++].va;
    return rc;
}

/* Evicts into / restores from the daemon's host swap memfd (pinned here for the
 * copy's duration). */
static int swap_io(struct xe *x, uint64_t dptr, int fd, int out)
{
    gos_vmm_buf *b = vb_find(x, dptr);
    if (!b)
        return gos_fail(GOS_EINVAL, "executor: 0x%llx is not a swappable allocation", (unsigned long long)dptr);
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "swap without a descriptor");
    void *h = mmap(NULL, b->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "executor: mapping %llu bytes of swap", (unsigned long long)b->bytes);
    int pinned = gos_exec_host_register(x->dev, h, b->bytes) == GOS_OK;
    int rc = out ? gos_vmm_buf_evict(x->dev, b, h) : gos_vmm_buf_restore(x->dev, b, h);
    if (pinned)
        gos_exec_host_unregister(x->dev, h);
    munmap(h, b->bytes);
    return rc;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Maps the daemon's pool (once: the same file again is kept). */
static int pool_map(struct xe *x, int fd, uint64_t bytes)
{
    struct stat st;
    if (fstat(fd, &st))
        return gos_fail(GOS_EPROTO, "executor: swap pool descriptor");
    if (x->pool && st.st_dev == x->pool_dev && st.st_ino == x->pool_ino && bytes == x->pool_bytes)
        return GOS_OK;
    if (x->pool)
        return gos_fail(GOS_EPROTO, "executor: a second swap pool");
    if (!bytes || (uint64_t)st.st_size < bytes)
        return gos_fail(GOS_EPROTO, "executor: swap pool of %llu bytes in a file of %llu", (unsigned long long)bytes,
                        (unsigned long long)st.st_size);
    uint64_t nch = (bytes + X_POOL_CHUNK - 1) / X_POOL_CHUNK;
    unsigned char *pin = calloc(nch, 1);
    void *p = pin ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        free(pin);
        return gos_fail(GOS_ENOMEM, "executor: mapping the swap pool of %llu bytes", (unsigned long long)bytes);
    }
    x->pool = p;
    x->pool_bytes = bytes;
    x->pool_dev = st.st_dev;
    x->pool_ino = st.st_ino;
    x->pool_pinned = pin;
    return GOS_OK;
}

/* Evicts into / restores from the pool at off: the chunks it touches are
 * page-locked first (once for the executor's life), the copy cut at chunk
 * boundaries so that every piece lies in one registration. A chunk the driver
 * refuses to lock is copied from pageable memory (slower, still exact). */
static int swap_pool_io(struct xe *x, const struct x_swap_io *m, int fd, int out, struct x_swap_rep *rep)
{
    gos_vmm_buf *b = vb_find(x, m->dptr);
    if (!b)
        return gos_fail(GOS_EINVAL, "executor: 0x%llx is not a swappable allocation", (unsigned long long)m->dptr);
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "swap without a descriptor");
    int rc = pool_map(x, fd, m->pool_bytes);
    if (rc)
        return rc;
    if (m->off > x->pool_bytes || b->bytes > x->pool_bytes - m->off)
        return gos_fail(GOS_EPROTO, "executor: swap range 0x%llx + %llu outside the pool", (unsigned long long)m->off,
                        (unsigned long long)b->bytes);
    uint64_t t0 = now_ns();
    rep->pinned = 1;
    for (uint64_t c = m->off / X_POOL_CHUNK; c <= (m->off + b->bytes - 1) / X_POOL_CHUNK; c++) {
        if (!x->pool_pinned[c]) {
            uint64_t len = x->pool_bytes - c * X_POOL_CHUNK;
            if (len > X_POOL_CHUNK)
                len = X_POOL_CHUNK;
            x->pool_pinned[c] = gos_exec_host_register(x->dev, x->pool + c * X_POOL_CHUNK, len) == GOS_OK ? 1 : 2;
        }
        rep->pinned &= x->pool_pinned[c] == 1;
    }
    uint64_t t1 = now_ns();
    uint64_t first = X_POOL_CHUNK - m->off % X_POOL_CHUNK;
    rc = out ? gos_vmm_buf_evict_pieces(x->dev, b, x->pool + m->off, first, X_POOL_CHUNK)
             : gos_vmm_buf_restore_pieces(x->dev, b, x->pool + m->off, first, X_POOL_CHUNK);
    rep->register_ns = t1 - t0;
    rep->copy_ns = now_ns() - t1;
    return rc;
}

static void region_drop(struct xe *x, uint32_t r)
{
    struct xe_region *g = &x->regions[r];
    if (!g->ptr)
        return;
    if (g->pinned)
        gos_exec_host_unregister(x->dev, g->ptr);
    munmap(g->ptr, g->bytes);
    memset(g, 0, sizeof *g);
}

static int region_add(struct xe *x, const struct x_region *m, int fd)
{
    if (fd < 0 || m->slot >= GOS_MAX_REGIONS)
        return gos_fail(GOS_EPROTO, "REGION_ADD without descriptor or slot");
    region_drop(x, m->slot);
    void *p = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "executor: mapping a region of %llu bytes", (unsigned long long)m->bytes);
    x->regions[m->slot] = (struct xe_region){p, m->bytes, gos_exec_host_register(x->dev, p, m->bytes) == GOS_OK};
    return GOS_OK;
}

static void *host_of(struct xe *x, const struct x_op *o)
{
    if (o->region >= GOS_MAX_REGIONS || !x->regions[o->region].ptr ||
        o->offset > x->regions[o->region].bytes || o->bytes > x->regions[o->region].bytes - o->offset) {
        gos_fail(GOS_EINVAL, "executor: region %u range outside its mapping", (unsigned)o->region);
        return NULL;
    }
    return (char *)x->regions[o->region].ptr + o->offset;
}

static int run_op(struct xe *x, const struct x_op *o, const void *params, void *st)
{
    void *h;
    switch (o->op) {
    case XOP_HTOD:
        if (!(h = host_of(x, o)))
            return GOS_EINVAL;
        return o->sync_copy ? gos_exec_copy_htod_sync(x->dev, o->dptr, h, o->bytes)
                            : gos_exec_copy_htod(x->dev, o->dptr, h, o->bytes, st);
    case XOP_DTOH:
        if (!(h = host_of(x, o)))
            return GOS_EINVAL;
        return o->sync_copy ? gos_exec_copy_dtoh_sync(x->dev, h, o->dptr, o->bytes)
                            : gos_exec_copy_dtoh(x->dev, h, o->dptr, o->bytes, st);
    case XOP_DTOD: return gos_exec_copy_dtod(x->dev, o->dptr, o->dptr2, o->bytes, st);
    case XOP_LAUNCH: {
        if (o->fn < 1 || o->fn > (uint32_t)x->n_funcs || !x->funcs[o->fn - 1])
            return gos_fail(GOS_EINVAL, "executor: function %u unknown", (unsigned)o->fn);
        struct gos_launch_cfg c = {.smem = o->smem, .params = params, .param_bytes = o->param_bytes};
        memcpy(c.grid, o->grid, sizeof c.grid);
        memcpy(c.block, o->block, sizeof c.block);
        memcpy(c.cluster, o->cluster, sizeof c.cluster);
        return gos_exec_launch(x->dev, x->funcs[o->fn - 1], &c, st);
    }
    default: return gos_fail(GOS_EPROTO, "executor: op %u", (unsigned)o->op);
    }
}

/* Whether the context still works after a device error (sticky errors fail
 * every later call). */
static int alive(struct xe *x)
{
    return gos_exec_event_record(x->dev, x->ev[0][0], x->streams[0]) == GOS_OK &&
           gos_exec_event_sync(x->dev, x->ev[0][0]) == GOS_OK;
}

/* A grant: the batch between two events on the engine's stream. */
static int run(struct xe *x, const unsigned char *p, uint32_t len)
{
    uint32_t engine, n;
    if (len < 8)
        return answer(x, X_RUN, gos_fail(GOS_EPROTO, "short RUN"), 0, NULL, 0);
    memcpy(&engine, p, 4);
    memcpy(&n, p + 4, 4);
    if (engine >= XE_ENGINES || n > 4096)
        return answer(x, X_RUN, gos_fail(GOS_EPROTO, "RUN engine %u, %u ops", engine, n), 0, NULL, 0);
    size_t need = sizeof(struct x_run_rep) + 4 * (size_t)n + X_MSG_MAX;
    if (need > x->out_cap) {
        void *b = realloc(x->out, need);
        if (!b)
            return answer(x, X_RUN, gos_fail(GOS_ENOMEM, "executor out of memory"), 0, NULL, 0);
        x->out = b;
        x->out_cap = need;
    }
    struct x_run_rep rep = {.n = n};
    int32_t *rcs = (int32_t *)((char *)x->out + sizeof rep);
    char *msg = (char *)(rcs + n);
    msg[0] = 0;
    void *st = x->streams[engine];
    int device_error = 0;
    /* Ring entries answered before they finished (launches, staged copies) run
     * on stream 0: a batch on another engine's stream waits for them, so that
     * the client's requests keep their order when the ring hands over to the
     * socket (a revoked grant). */
    if (engine != 0 && x->ring_ahead && !gos_exec_stream_sync(x->dev, x->streams[0]))
        ring_ahead_done(x);
    int rc = gos_exec_event_record(x->dev, x->ev[engine][0], st);
    size_t off = 8;
    for (uint32_t i = 0; i < n; i++) {
        struct x_op o;
        if (off + sizeof o > len) {
            rcs[i] = gos_fail(GOS_EPROTO, "truncated RUN");
            continue;
        }
        memcpy(&o, p + off, sizeof o);
        off += sizeof o;
        if (o.param_bytes > len - off) {
            rcs[i] = gos_fail(GOS_EPROTO, "truncated RUN parameters");
            off = len;
            continue;
        }
        rcs[i] = rc ? rc : run_op(x, &o, p + off, st);
        off += o.param_bytes;
        if (rcs[i] && !msg[0])
            snprintf(msg, X_MSG_MAX, "%s", gos_last_error());
        device_error |= rcs[i] == GOS_EDEVICE;
    }
    if (!rc)
        rc = gos_exec_event_record(x->dev, x->ev[engine][1], st);
    if (!rc)
        rc = gos_exec_event_sync(x->dev, x->ev[engine][1]);
    if (!rc)
        rc = gos_exec_event_elapsed_ns(x->dev, x->ev[engine][0], x->ev[engine][1], &rep.gpu_ns);
    if (rc) {
        device_error |= rc == GOS_EDEVICE;
        if (!msg[0])
            snprintf(msg, X_MSG_MAX, "%s", gos_last_error());
        /* the batch's ops completed (or not) with the stream: its error is theirs */
        for (uint32_t i = 0; i < n; i++)
            if (!rcs[i])
                rcs[i] = rc;
    }
    rep.measure_rc = rc;
    uint32_t flags = device_error && !alive(x) ? X_FAULTED : 0;
    memcpy(x->out, &rep, sizeof rep);
    struct x_hdr h = {X_RUN, (uint32_t)(sizeof rep + 4 * (size_t)n + strlen(msg) + 1), 0, flags};
    int s = x_send(x->sock, &h, x->out, -1);
    return flags ? GOS_EDEVICE : s;
}

static int adopt(struct xe *ctl, int fd);

static int serve_one(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint64_t u;
    switch (h->type) {
    case X_ALLOC: {
        memcpy(&u, p, 8);
        uint64_t dptr = 0;
        int rc = gos_exec_mem_alloc(x->dev, u, &dptr);
        if (!rc)
            al_add(x, dptr, u);
        return answer(x, h->type, rc, 0, &dptr, 8);
    }
    case X_FREE:
        memcpy(&u, p, 8);
        al_del(x, u);
        return answer(x, h->type, mem_free(x, u), 0, NULL, 0);
    case X_VALLOC: {
        memcpy(&u, p, 8);
        uint64_t dptr = 0;
        int rc = xe_valloc(x, u, &dptr);
        if (!rc)
            al_add(x, dptr, u);
        return answer(x, h->type, rc, 0, &dptr, 8);
    }
    case X_EVICT:
    case X_RESTORE: {
        memcpy(&u, p, 8);
        int rc = swap_io(x, u, fd, h->type == X_EVICT);
        if (fd >= 0)
            close(fd);
        struct xe_alloc *a = al_find(x, u);
        if (a && !rc)
            a->evicted = h->type == X_EVICT; /* the ring never runs on evicted memory */
        return answer(x, h->type, rc, 0, NULL, 0);
    }
    case X_EVICT_POOL:
    case X_RESTORE_POOL: {
        struct x_swap_io m;
        struct x_swap_rep rep = {0};
        memcpy(&m, p, sizeof m);
        int rc = swap_pool_io(x, &m, fd, h->type == X_EVICT_POOL, &rep);
        if (fd >= 0)
            close(fd);
        struct xe_alloc *a = al_find(x, m.dptr);
        if (a && !rc)
            a->evicted = h->type == X_EVICT_POOL; /* the ring never runs on evicted memory */
        return answer(x, h->type, rc, 0, &rep, sizeof rep);
    }
    case X_REGION_ADD: {
        struct x_region m;
        memcpy(&m, p, sizeof m);
        return answer(x, h->type, region_add(x, &m, fd), 0, NULL, 0);
    }
    case X_MODULE_LOAD: {
        struct x_module m;
        memcpy(&m, p, sizeof m);
        m.name[sizeof m.name - 1] = 0;
        const void *img = NULL;
        int rc = GOS_OK;
        if (m.slot >= SRV_MAX_MODULES)
            rc = gos_fail(GOS_EPROTO, "module slot %u", (unsigned)m.slot);
        else if (!m.name[0]) {
            struct x_op o = {.region = m.region, .offset = m.offset, .bytes = m.bytes};
            if (!(img = host_of(x, &o)))
                rc = GOS_EINVAL;
        }
        if (!rc && x->modules[m.slot]) {
            gos_exec_module_unload(x->dev, x->modules[m.slot]);
            x->modules[m.slot] = NULL;
            al_drop_module(x, m.slot);
        }
        if (!rc)
            rc = gos_exec_module_load(x->dev, img, m.bytes, m.name[0] ? m.name : NULL, &x->modules[m.slot]);
        if (!rc)
            x->mod_builtin[m.slot] = m.name[0] && (!strcmp(m.name, GOS_EXEC_BUILTIN) || !strcmp(m.name, "sim:builtin") ||
                                                   !strcmp(m.name, "exec"));
        return answer(x, h->type, rc, 0, NULL, 0);
    }
    case X_MODULE_UNLOAD: {
        uint32_t slot;
        memcpy(&slot, p, 4);
        int rc = slot < SRV_MAX_MODULES && x->modules[slot] ? gos_exec_module_unload(x->dev, x->modules[slot])
                                                            : gos_fail(GOS_EINVAL, "module slot %u", (unsigned)slot);
        if (slot < SRV_MAX_MODULES) {
            x->modules[slot] = NULL;
            al_drop_module(x, slot);
            /* the daemon forgets every function handle with any unload */
            memset(x->funcs, 0, sizeof x->funcs);
            memset(x->fmap, 0, sizeof x->fmap);
            x->n_funcs = 0;
        }
        return answer(x, h->type, rc, 0, NULL, 0);
    }
    case X_FUNCTION: {
        struct x_function m;
        memcpy(&m, p, sizeof m);
        m.name[sizeof m.name - 1] = 0;
        uint32_t idx = 0;
        int rc = GOS_OK;
        if (m.module >= SRV_MAX_MODULES || !x->modules[m.module])
            rc = gos_fail(GOS_EINVAL, "module slot %u", (unsigned)m.module);
        else if (x->n_funcs == SRV_MAX_FUNCS)
            rc = gos_fail(GOS_EBUSY, "more than %d functions", SRV_MAX_FUNCS);
        else if (!(rc = gos_exec_function(x->dev, x->modules[m.module], m.name, &x->funcs[x->n_funcs]))) {
            snprintf(x->fbuiltin[x->n_funcs], sizeof x->fbuiltin[0], "%s",
                     x->mod_builtin[m.module] && strlen(m.name) < sizeof x->fbuiltin[0] ? m.name : "");
            idx = (uint32_t)++x->n_funcs;
            if (m.pad >= 1 && m.pad <= SRV_MAX_FUNCS)
                x->fmap[m.pad - 1] = idx;
        }
        return answer(x, h->type, rc, 0, &idx, 4);
    }
    case X_MODULE_GLOBAL: {
        struct x_function m;
        memcpy(&m, p, sizeof m);
        m.name[sizeof m.name - 1] = 0;
        struct gos_rep_global r = {0};
        int rc = m.module < SRV_MAX_MODULES && x->modules[m.module]
                     ? gos_exec_module_global(x->dev, x->modules[m.module], m.name, &r.dptr, &r.bytes)
                     : gos_fail(GOS_EINVAL, "module slot %u", (unsigned)m.module);
        if (!rc && al_check(x, r.dptr, r.bytes, "global") != GOS_OK) {
            al_add(x, r.dptr, r.bytes); /* the ring may reach it, as copies through the daemon may */
            if (x->n_al && x->al[x->n_al - 1].dptr == r.dptr)
                x->al[x->n_al - 1].module = (int)m.module + 1;
        }
        return answer(x, h->type, rc, 0, &r, sizeof r);
    }
    case X_SHM_NEW: {
        memcpy(&u, p, 8);
        int sfd = -1, rc = shm_new(x, u, &sfd);
        const char *msg = rc ? gos_last_error() : NULL;
        struct x_hdr a = {h->type, msg ? (uint32_t)strlen(msg) + 1 : 0, rc, 0};
        rc = x_send(x->sock, &a, msg, sfd);
        if (sfd >= 0)
            close(sfd);
        return rc;
    }
    case X_SHM_MAP: {
        memcpy(&u, p, 8);
        uint64_t dptr = 0;
        uint64_t fl = 0;
        if (h->len >= 16)
            memcpy(&fl, (char *)p + 8, 8);
        int rc = shm_map(x, u, fd, (fl & X_SHM_MAP_RDONLY) != 0, &dptr);
        if (fd >= 0)
            close(fd);
        if (!rc) {
            al_add(x, dptr, u);
            struct xe_alloc *a = al_find(x, dptr);
            if (a)
                a->ro = (fl & X_SHM_MAP_RDONLY) != 0;
        }
        return answer(x, h->type, rc, 0, &dptr, 8);
    }
    case X_SHM_UNMAP:
        memcpy(&u, p, 8);
        al_del(x, u);
        return answer(x, h->type, shm_unmap(x, u), 0, NULL, 0);
    case X_PMEM_ALLOC: {
        struct x_pmem_alloc m;
        memcpy(&m, p, sizeof m);
        m.chart[sizeof m.chart - 1] = 0;
        struct gos_rep_pmem_alloc r = {0};
        gos_chip *chart = NULL;
        int rc = gos_pmem_chart_load(m.chart, &chart);
        if (!rc)
            rc = srv_pmem_alloc(x->dev, &x->pmem, chart, m.bytes, &r);
        gos_chip_free(chart);
        if (!rc)
            al_add(x, r.base, r.bytes); /* plain copies may reach it, as through the daemon */
        return answer(x, h->type, rc, 0, &r, sizeof r);
    }
    case X_PMEM_FREE:
        memcpy(&u, p, 8);
        al_del(x, u);
        return answer(x, h->type, srv_pmem_free(&x->pmem, u), 0, NULL, 0);
    case X_PMEM_COPY: {
        struct gos_msg_pmem_copy m;
        memcpy(&m, p, sizeof m);
        struct x_op o = {.region = m.region, .offset = m.region_off, .bytes = m.bytes};
        void *host = host_of(x, &o);
        int rc = host ? srv_pmem_copy(&x->pmem, &m, host) : GOS_EINVAL;
        return answer(x, h->type, rc, 0, NULL, 0);
    }
    case X_PMEM_CHECK: {
        struct gos_msg_pmem_check m;
        memcpy(&m, p, sizeof m);
        struct gos_rep_pmem_check r = {0};
        int rc = srv_pmem_check(&x->pmem, &m, &r);
        return answer(x, h->type, rc, 0, &r, sizeof r);
    }
    case X_RUN: return run(x, p, h->len);
    case X_ADOPT: {
        int rc = adopt(x, fd);
        return answer(x, h->type, rc, 0, NULL, 0);
    }
    case X_RING: {
        memcpy(&u, p, 8);
        if (h->len >= 12)
            memcpy(&x->ring_max_queued, (char *)p + 8, 4);
        int rc = x->ring_on ? gos_fail(GOS_EBUSY, "executor: a ring is attached already")
                            : xe_ring_start(x, fd, u, x->dev, &x->ring);
        if (fd >= 0)
            close(fd);
        x->ring_on = !rc;
        return answer(x, h->type, rc, 0, NULL, 0);
    }
    default: return answer(x, h->type, gos_fail(GOS_EPROTO, "executor: message %u", (unsigned)h->type), 0, NULL, 0);
    }
}

static int payload_ok(const struct x_hdr *h)
{
    switch (h->type) {
    case X_ALLOC:
    case X_FREE:
    case X_SHM_NEW:
    case X_SHM_MAP:
    case X_SHM_UNMAP:
    case X_VALLOC:
    case X_EVICT:
    case X_RESTORE:
    case X_RING: return h->len >= 8;
    case X_EVICT_POOL:
    case X_RESTORE_POOL: return h->len >= sizeof(struct x_swap_io);
    case X_ADOPT: return 1;
    case X_REGION_ADD: return h->len >= sizeof(struct x_region);
    case X_MODULE_LOAD: return h->len >= sizeof(struct x_module);
    case X_MODULE_UNLOAD: return h->len >= 4;
    case X_FUNCTION:
    case X_MODULE_GLOBAL: return h->len >= sizeof(struct x_function);
    case X_PMEM_ALLOC: return h->len >= sizeof(struct x_pmem_alloc);
    case X_PMEM_FREE: return h->len >= 8;
    case X_PMEM_COPY: return h->len >= sizeof(struct gos_msg_pmem_copy);
    case X_PMEM_CHECK: return h->len >= sizeof(struct gos_msg_pmem_check);
    default: return 1;
    }
}

/* The staging buffers of inline HtoD entries (allocated on first use); NULL
 * when pinned memory cannot be had: those entries then wait for their copy. */
static void *ring_bounce(struct xe *x)
{
    if (!x->ring_bounce && !x->bounce_refused &&
        gos_exec_host_alloc(x->dev, (size_t)XE_BOUNCE_SLOTS * GOS_RING_DATA, &x->ring_bounce)) {
        x->ring_bounce = NULL;
        x->bounce_refused = 1; /* asked once */
    }
    return x->ring_bounce;
}

/* One ring entry (issue 9.4), already copied out of the shared slot into e;
 * data is the slot's data area (shared: HtoD sources and kernel parameters are
 * copied out before they are checked or used). Checked as the daemon checks a
 * socket request: ranges against this client's allocations and regions, the
 * function against its handles, the launch's geometry (gos_proto_check_args)
 * and a built-in kernel's device ranges. Runs on the engine 0 stream, waiting
 * for it unless the entry is asynchronous. GOS_OK, GOS_RING_REVOKED (run it
 * through the socket) or an error with its message; *fault when the context is
 * dead after it. */
int xe_ring_run(struct xe *x, const struct gos_ring_ent *e, unsigned char *data, uint32_t backlog, int *fault)
{
    x->ring_backlog = backlog;
    void *st = x->streams[0];
    int rc, sync = !(e->flags & GOS_RING_F_ASYNC);
    int staged = e->op == GOS_RING_HTOD && (e->flags & GOS_RING_F_INLINE) && ring_bounce(x);
    if (staged)
        sync = 0; /* answered once issued from the executor's own copy of the bytes */
    *fault = 0;
    if (e->flags & ~(uint32_t)(GOS_RING_F_INLINE | GOS_RING_F_ASYNC))
        return gos_fail(GOS_EPROTO, "ring entry flags 0x%x unknown", (unsigned)e->flags);
    /* queued: what the client submitted and nothing has completed yet, the
     * entries behind this one and those on the device not yet waited for (the
     * socket path counts the daemon's queues the same way) */
    uint32_t queued = x->ring_backlog + x->ring_ahead;
    if (!sync && x->ring_max_queued && queued >= x->ring_max_queued)
        return gos_fail(GOS_ELIMIT, "client has %u requests queued, the maximum (max_queued_requests); synchronize",
                        (unsigned)queued);
    /* Bounded look-ahead: at most XE_RING_AHEAD asynchronous entries on the
     * device at a time, so that a revoked grant leaves little work behind it
     * (the rest comes back to the client and through the daemon's scheduler). */
    if (!sync && x->ring_ahead >= ring_ahead_limit(x)) {
        if ((rc = gos_exec_stream_sync(x->dev, st)))
            goto out;
        ring_ahead_done(x);
    }
    switch (e->op) {
    case GOS_RING_HTOD:
    case GOS_RING_DTOH: {
        int htod = e->op == GOS_RING_HTOD;
        if ((rc = htod ? al_check_w(x, e->dptr, e->bytes, "device") : al_check(x, e->dptr, e->bytes, "device")))
            return rc;
        void *h;
        if (e->flags & GOS_RING_F_INLINE) {
            if (e->bytes > GOS_RING_DATA)
                return gos_fail(GOS_EINVAL, "ring entry of %llu inline bytes (at most %u)",
                                (unsigned long long)e->bytes, GOS_RING_DATA);
            h = data;
            if (staged) {
                h = (char *)x->ring_bounce + (size_t)(x->bounce_next++ % XE_BOUNCE_SLOTS) * GOS_RING_DATA;
                memcpy(h, data, e->bytes);
            } else {
                sync = 1; /* the slot is the client's again once answered */
            }
        } else {
            struct x_op o = {.region = e->region, .offset = e->offset, .bytes = e->bytes};
            if (!(h = host_of(x, &o)))
                return GOS_EINVAL;
        }
        if (!e->bytes)
            return GOS_OK;
        rc = htod ? gos_exec_copy_htod(x->dev, e->dptr, h, e->bytes, st) : gos_exec_copy_dtoh(x->dev, h, e->dptr, e->bytes, st);
        break;
    }
    case GOS_RING_DTOD:
        if ((rc = al_check_w(x, e->dptr, e->bytes, "device")) || (rc = al_check(x, e->dptr2, e->bytes, "source")))
            return rc;
        if (!e->bytes)
            return GOS_OK;
        rc = gos_exec_copy_dtod(x->dev, e->dptr, e->dptr2, e->bytes, st);
        break;
    case GOS_RING_LAUNCH: {
        if (e->func < 1 || e->func > SRV_MAX_FUNCS || !x->fmap[e->func - 1] || x->fmap[e->func - 1] > (uint32_t)x->n_funcs ||
            !x->funcs[x->fmap[e->func - 1] - 1])
            return gos_fail(GOS_EINVAL, "function handle %llu is not a function of this client",
                            (unsigned long long)e->func);
        if (e->param_bytes > GOS_PARAM_MAX)
            return gos_fail(GOS_EINVAL, "kernel parameters of %u bytes (at most %d)", (unsigned)e->param_bytes,
                            GOS_PARAM_MAX);
        struct {
            struct gos_msg_launch m;
            unsigned char p[GOS_PARAM_MAX];
        } l;
        memset(&l.m, 0, sizeof l.m);
        memcpy(l.m.grid, e->grid, sizeof l.m.grid);
        memcpy(l.m.block, e->block, sizeof l.m.block);
        memcpy(l.m.cluster, e->cluster, sizeof l.m.cluster);
        l.m.smem = e->smem;
        l.m.param_bytes = e->param_bytes;
        memcpy(l.p, data, e->param_bytes); /* copied out before any check */
        struct gos_msg_hdr hh;
        gos_proto_hdr(&hh, GOS_MSG_LAUNCH, 0, (uint32_t)(sizeof l.m + e->param_bytes));
        if ((rc = gos_proto_check_args(&hh, &l.m)))
            return rc;
        uint32_t fi = x->fmap[e->func - 1] - 1;
        struct gos_launch_cfg c = {.smem = e->smem, .params = l.p, .param_bytes = e->param_bytes};
        memcpy(c.grid, e->grid, sizeof c.grid);
        memcpy(c.block, e->block, sizeof c.block);
        memcpy(c.cluster, e->cluster, sizeof c.cluster);
        if (x->fbuiltin[fi][0]) {
            struct gos_dev_range r[GOS_LAUNCH_RANGES_MAX];
            int n = 0;
            if ((rc = gos_exec_builtin_ranges(x->fbuiltin[fi], &c, r, &n)))
                return rc;
            for (int i = 0; i < n; i++)
                if (r[i].bytes && (rc = al_check(x, r[i].ptr, r[i].bytes, "kernel argument")))
                    return rc;
        }
        rc = gos_exec_launch(x->dev, x->funcs[fi], &c, st);
        break;
    }
    case GOS_RING_FENCE: rc = GOS_OK; sync = 1; break;
    default: return gos_fail(GOS_EPROTO, "ring entry opcode %u unknown", (unsigned)e->op);
    }
    if (!rc && sync) {
        rc = gos_exec_stream_sync(x->dev, st); /* as a native synchronous copy waits */
        if (e->op == GOS_RING_FENCE)
            ring_ahead_done(x);
        x->ring_ahead = 0;
    } else if (!rc) {
        if (!x->ring_ahead++)
            x->ring_ahead_t0 = gos_ring_now_ns();
    }
out:
    if (rc == GOS_EDEVICE) {
        char why[GOS_MSG_TEXT_MAX];
        snprintf(why, sizeof why, "%s", gos_last_error());
        *fault = !alive(x);
        gos_fail(GOS_EDEVICE, "%s", why);
    }
    return rc;
}

void xe_ring_lock(struct xe *x, int on)
{
    if (on)
        pthread_mutex_lock(&x->lock);
    else
        pthread_mutex_unlock(&x->lock);
}

static void *watchdog(void *arg)
{
    struct pollfd p = {.fd = *(int *)arg, .events = POLLRDHUP};
    for (;;) {
        int n = poll(&p, 1, -1);
        if (n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
            _exit(0);
    }
    return NULL;
}

/* A client's state on the device: its streams and events (the device opened
 * by the caller, shared by every client of a shared executor). */
static struct xe *xe_new(gos_device *dev, int sock, int *rc)
{
    struct xe *x = calloc(1, sizeof *x);
    if (!x) {
        *rc = gos_fail(GOS_ENOMEM, "out of memory");
        return NULL;
    }
    x->sock = sock;
    x->dev = dev;
    pthread_mutex_init(&x->lock, NULL);
    *rc = GOS_OK;
    for (int e = 0; !*rc && dev && e < XE_ENGINES; e++)
        *rc = gos_exec_engine_new(x->dev, &x->streams[e], x->ev[e]);
    return x;
}

/* Tells the daemon on x's channel that it is up: the device's facts. */
static int xe_hello(struct xe *x, int rc)
{
    struct x_hello_rep hello = {.pid = (int32_t)getpid()};
    uint64_t fr;
    if (!rc)
        rc = gos_exec_mem_info(x->dev, &fr, &hello.mem_total);
    if (!rc) {
        hello.info = x->dev->info;
        hello.attr_rc = gos_exec_device_attributes(x->dev, hello.attr_value, hello.attr_valid,
                                                   GOS_DEVICE_ATTRS_MAX);
    }
    return answer(x, X_HELLO, rc, 0, &hello, sizeof hello);
}

/* Serves x's channel until the daemon closes it. A device fault ends the
 * process: its context is dead for every client in it. */
static void xe_serve(struct xe *x)
{
    void *buf = NULL;
    size_t cap = 0;
    for (;;) {
        struct x_hdr h;
        int fd = -1;
        if (x_recv(x->sock, &h, &buf, &cap, &fd))
            break; /* the daemon closed the channel: the client is gone */
        if (!payload_ok(&h)) {
            if (fd >= 0)
                close(fd);
            answer(x, h.type, gos_fail(GOS_EPROTO, "executor: short message %u", (unsigned)h.type), 0, NULL, 0);
            continue;
        }
        if (h.type != X_REGION_ADD && h.type != X_SHM_MAP && h.type != X_EVICT && h.type != X_RESTORE &&
            h.type != X_EVICT_POOL && h.type != X_RESTORE_POOL && h.type != X_RING && h.type != X_ADOPT && fd >= 0)
            close(fd);
        pthread_mutex_lock(&x->lock);
        int src = serve_one(x, &h, buf, fd);
        pthread_mutex_unlock(&x->lock);
        if (src == GOS_EDEVICE && h.type == X_RUN)
            _exit(3); /* faulted: the context is dead; the daemon was told */
    }
    free(buf);
}

/* Releases everything a client held in a shared executor (its channel closed;
 * in an executor of its own the process exit does this). */
static void xe_free(struct xe *x)
{
    xe_ring_stop(x->ring); /* before the lock: its consumer takes it per entry */
    pthread_mutex_lock(&x->lock);
    for (int e = 0; e < XE_ENGINES; e++)
        if (x->streams[e])
            gos_exec_stream_sync(x->dev, x->streams[e]);
    for (int i = 0; i < x->n_al; i++) {
        uint64_t p = x->al[i].dptr;
        if (!x->al[i].module && shm_unmap(x, p) != GOS_OK && srv_pmem_free(&x->pmem, p) != GOS_OK)
            mem_free(x, p); /* (a module global goes with its module) */
    }
    srv_pmem_release_all(&x->pmem);
    for (int i = 0; i < GOS_XE_SHM_MAX; i++)
        if (x->shm[i].va)
            gos_vmm_buf_free(x->dev, &x->shm[i]);
    for (int i = 0; i < SRV_MAX_MODULES; i++)
        if (x->modules[i])
            gos_exec_module_unload(x->dev, x->modules[i]);
    for (uint32_t r = 0; r < GOS_MAX_REGIONS; r++)
        region_drop(x, r);
    if (x->pool) {
        for (uint64_t c = 0; c * X_POOL_CHUNK < x->pool_bytes; c++)
            if (x->pool_pinned[c] == 1)
                gos_exec_host_unregister(x->dev, x->pool + c * X_POOL_CHUNK);
        munmap(x->pool, x->pool_bytes);
        free(x->pool_pinned);
    }
    if (x->ring_bounce)
        gos_exec_host_free(x->dev, x->ring_bounce);
    for (int e = 0; e < XE_ENGINES; e++)
        gos_exec_engine_free(x->dev, x->streams[e], x->ev[e]);
    pthread_mutex_unlock(&x->lock);
    pthread_mutex_destroy(&x->lock);
    free(x->al);
    free(x->vb);
    free(x->out);
    free(x);
}

/* executor = per-vgpu: another client of this executor's vGPU, on its own
 * channel (fd), served by a thread of its own in this process's context. */
static void *client_main(void *arg)
{
    struct xe *x = arg;
    int fd = x->sock;
    xe_serve(x);
    xe_free(x);
    close(fd);
    return NULL;
}

static int adopt(struct xe *ctl, int fd)
{
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "ADOPT without a descriptor");
    int rc;
    struct xe *x = xe_new(ctl->dev, fd, &rc);
    if (!x) {
        close(fd);
        return rc;
    }
    /* its HELLO goes on its own channel, where the daemon waits for it */
    pthread_t t;
    if ((rc = xe_hello(x, rc)) || pthread_create(&t, NULL, client_main, x)) {
        if (!rc)
            rc = gos_fail(GOS_EIO, "executor: a client thread");
        xe_free(x);
        close(fd);
        return rc;
    }
    pthread_detach(t);
    return GOS_OK;
}

int srv_executor_main(int sock, const char *sim, int ordinal)
{
    /* Dies with the daemon (or when the daemon drops this executor), even in
     * the middle of a long kernel: nothing else may reach this context. (Not
     * PR_SET_PDEATHSIG: it fires when the daemon *thread* that forked us ends.) */
    pthread_t w;
    if (pthread_create(&w, NULL, watchdog, &sock))
        return gos_fail(GOS_EIO, "executor: watchdog thread");
    pthread_detach(w);
    gos_device_spec spec = {.sim = sim, .ordinal = ordinal};
    gos_device *dev = NULL;
    int rc = gos_device_open(&spec, &dev);
    if (!rc)
        rc = gos_exec_init(dev);
    if (rc)
        dev = NULL;
    int rc2;
    struct xe *x = xe_new(dev, sock, &rc2);
    if (!x)
        return rc2;
    if ((rc = xe_hello(x, rc ? rc : rc2)) || !x->dev)
        return rc;
    /* Its first channel: its client's (executor = per-client), or the control
     * channel of a shared executor, on which ADOPT brings each client's. */
    xe_serve(x);
    /* Process exit releases the context and everything in it. */
    _exit(0);
}
