/* SPDX-License-Identifier: Apache-2.0 */
/* exec_main.c: the executor process (`gpuos executor`; issue 9, exec.h). It
 * opens the device through the device layer (cuda or sim), so its device
 * memory lives in its own address space: a CUDA context of its own, or a
 * simulated device of its own. It serves the daemon's channel (one message
 * table: each type's handler, shortest payload and whether it carries a
 * descriptor), maps the client's shared regions itself (descriptors passed by
 * the daemon) and runs what the daemon grants it (exec_run.c). Under executor
 * = per-vgpu it serves the channels of several clients of one vGPU, a thread
 * each, in one context (X_ADOPT).
 * Process: the executor (gpuos executor). */
#include "exec/exec_internal.h"

#include "chip/chip.h"
#include "common/log.h"
#include "common/status.h"
#include "device/exec_builtin.h"
#include "place/place.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t u64_at(const void *p)
{
    uint64_t u;
    memcpy(&u, p, 8);
    return u;
}

/* One handler per message type: the payload is at least the table's min_len
 * bytes; fd is the passed descriptor (-1 none), the handler's to close when
 * its row says X_TAKES_FD (the loop closes any other). */
typedef int (*xe_handler)(struct xe *x, const struct x_hdr *h, void *p, int fd);

static int h_alloc(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint64_t u = u64_at(p), dptr = 0;
    int rc = h->type == X_VALLOC ? xe_valloc(x, u, &dptr) : gos_exec_mem_alloc(x->dev, u, &dptr);
    if (!rc)
        xe_al_add(x, dptr, u);
    return xe_answer(x, h->type, rc, 0, &dptr, 8);
}

/* FREE, SHM_UNMAP, PMEM_FREE: a range the ring may no longer reach, released. */
static int h_release(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint64_t u = u64_at(p);
    xe_al_del(x, u);
    int rc = h->type == X_FREE        ? xe_mem_free(x, u)
             : h->type == X_SHM_UNMAP ? xe_shm_unmap(x, u)
                                      : srv_pmem_free(&x->pmem, u);
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

static int h_swap(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint64_t u = u64_at(p);
    int rc = xe_swap_io(x, u, fd, h->type == X_EVICT);
    if (fd >= 0)
        close(fd);
    if (!rc)
        xe_al_evicted(x, u, h->type == X_EVICT);
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

static int h_swap_pool(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_swap_io m;
    struct x_swap_rep rep = {0};
    memcpy(&m, p, sizeof m);
    int rc = xe_swap_pool_io(x, &m, fd, h->type == X_EVICT_POOL, &rep);
    if (fd >= 0)
        close(fd);
    if (!rc)
        xe_al_evicted(x, m.dptr, h->type == X_EVICT_POOL);
    return xe_answer(x, h->type, rc, 0, &rep, sizeof rep);
}

static int h_pool_pin(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_swap_io m;
    memcpy(&m, p, sizeof m);
    int rc = xe_pool_pin(x, &m, fd);
    if (fd >= 0)
        close(fd);
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

/* An answer that carries a descriptor (sfd, -1 none; closed here) or rc's message. */
static int answer_fd(struct xe *x, uint32_t type, int rc, int sfd)
{
    const char *msg = rc ? gos_last_error() : NULL;
    struct x_hdr a = {type, msg ? (uint32_t)strlen(msg) + 1 : 0, rc, 0};
    rc = x_send(x->sock, &a, msg, sfd);
    if (sfd >= 0)
        close(sfd);
    return rc;
}

static int h_swap_ctl(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_swap_ctl m;
    memcpy(&m, p, sizeof m);
    int sfd = -1, rc = xe_swap_ctl(x, &m, &sfd);
    return answer_fd(x, h->type, rc, sfd);
}

static int h_pool_copy(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_pool_copy m;
    struct x_swap_rep rep = {0};
    memcpy(&m, p, sizeof m);
    int rc = xe_pool_copy(x, &m, fd, &rep);
    if (fd >= 0)
        close(fd);
    return xe_answer(x, h->type, rc, 0, &rep, sizeof rep);
}

static int h_pool_lock(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_swap_io m;
    struct x_swap_rep rep = {0};
    memcpy(&m, p, sizeof m);
    uint64_t t0 = gos_now_ns();
    int rc = xe_pool_pin(x, &m, fd);
    if (fd >= 0)
        close(fd);
    while (!rc && xe_pool_pin_next(x))
        ;
    rep.register_ns = gos_now_ns() - t0;
    rep.pinned = !rc && xe_pool_locked(x, m.dptr, m.off);
    return xe_answer(x, h->type, rc, 0, &rep, sizeof rep);
}

static int h_region_add(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_region m;
    uint32_t flags = 0;
    memcpy(&m, p, sizeof m);
    int rc = xe_region_add(x, &m, fd, &flags);
    return xe_answer(x, h->type, rc, 0, &flags, sizeof flags);
}

/* A module gone from its slot: its globals and its functions with it (the
 * client's handles of them now name nothing; those of other modules live on:
 * JAX's autotuner unloads each candidate's module between launches of
 * cuBLAS's kernels). */
static void drop_module(struct xe *x, uint32_t slot)
{
    x->modules[slot] = NULL;
    xe_al_drop_module(x, slot);
    for (int i = 0; i < x->n_funcs; i++)
        if (x->fmod[i] == slot)
            x->funcs[i] = NULL;
}

static int h_module_load(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_module m;
    memcpy(&m, p, sizeof m);
    m.name[sizeof m.name - 1] = 0;
    const void *img = NULL;
    int rc = GOS_OK;
    if (m.slot >= SRV_MAX_MODULES)
        rc = gos_fail(GOS_EPROTO, "module slot %u", (unsigned)m.slot);
    else if (!m.name[0] && !(img = xe_host_of(x, m.region, m.offset, m.bytes)))
        rc = GOS_EINVAL;
    if (!rc && x->modules[m.slot]) {
        gos_exec_module_unload(x->dev, x->modules[m.slot]);
        drop_module(x, m.slot);
    }
    uint64_t need = 0;
    if (!rc)
        rc = gos_exec_module_load_within(x->dev, img, m.bytes, m.name[0] ? m.name : NULL, m.limit, &x->modules[m.slot],
                                         &need);
    if (!rc)
        x->mod_builtin[m.slot] = m.name[0] && gos_exec_builtin_module(m.name);
    return xe_answer(x, h->type, rc, 0, &need, sizeof need);
}

static int h_module_unload(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint32_t slot;
    memcpy(&slot, p, 4);
    int rc = slot < SRV_MAX_MODULES && x->modules[slot] ? gos_exec_module_unload(x->dev, x->modules[slot])
                                                        : gos_fail(GOS_EINVAL, "module slot %u", (unsigned)slot);
    if (slot < SRV_MAX_MODULES)
        drop_module(x, slot);
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

static int h_function(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
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
        x->fmod[x->n_funcs] = (uint16_t)m.module;
        idx = (uint32_t)++x->n_funcs;
        if (m.pad >= 1 && m.pad <= SRV_MAX_FUNCS)
            x->fmap[m.pad - 1] = idx;
    }
    return xe_answer(x, h->type, rc, 0, &idx, 4);
}

static int h_module_global(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_function m;
    memcpy(&m, p, sizeof m);
    m.name[sizeof m.name - 1] = 0;
    struct gos_rep_global r = {0};
    int rc = m.module < SRV_MAX_MODULES && x->modules[m.module]
                 ? gos_exec_module_global(x->dev, x->modules[m.module], m.name, &r.dptr, &r.bytes)
                 : gos_fail(GOS_EINVAL, "module slot %u", (unsigned)m.module);
    struct xe_alloc *a;
    /* the ring may reach it, as copies through the daemon may */
    if (!rc && xe_al_check(x, r.dptr, r.bytes, 0, "global") != GOS_OK && (a = xe_al_add(x, r.dptr, r.bytes)))
        a->module = (int)m.module + 1;
    return xe_answer(x, h->type, rc, 0, &r, sizeof r);
}

/* A tensor map (issue 43): the daemon checked the arguments (proto.c). */
static int h_tmap_encode(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    gpuos_tmap_args a;
    struct gos_rep_tmap r;
    memcpy(&a, p, sizeof a);
    int rc = gos_exec_tmap_encode(x->dev, &a, r.map);
    return xe_answer(x, h->type, rc, 0, &r, sizeof r);
}

static int h_shm_new(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    int sfd = -1, rc = xe_shm_new(x, u64_at(p), &sfd);
    return answer_fd(x, h->type, rc, sfd);
}

static int h_shm_map(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint64_t u = u64_at(p), dptr = 0, fl = h->len >= 16 ? u64_at((char *)p + 8) : 0;
    int rc = xe_shm_map(x, u, fd, (fl & X_SHM_MAP_RDONLY) != 0, &dptr);
    if (fd >= 0)
        close(fd);
    struct xe_alloc *a;
    if (!rc && (a = xe_al_add(x, dptr, u)))
        a->ro = (fl & X_SHM_MAP_RDONLY) != 0;
    return xe_answer(x, h->type, rc, 0, &dptr, 8);
}


static int h_pmem_alloc(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
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
        xe_al_add(x, r.base, r.bytes); /* plain copies may reach it, as through the daemon */
    return xe_answer(x, h->type, rc, 0, &r, sizeof r);
}


static int h_pmem_copy(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct gos_msg_pmem_copy m;
    memcpy(&m, p, sizeof m);
    void *host = xe_host_of(x, m.region, m.region_off, m.bytes);
    int rc = host ? srv_pmem_copy(&x->pmem, &m, host) : GOS_EINVAL;
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

static int h_pmem_check(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct gos_msg_pmem_check m;
    memcpy(&m, p, sizeof m);
    struct gos_rep_pmem_check r = {0};
    int rc = srv_pmem_check(&x->pmem, &m, &r);
    return xe_answer(x, h->type, rc, 0, &r, sizeof r);
}

/* CUDA's VMM (exec_vmm.c): the daemon checked ownership and charged; the
 * table here checks again. An unmap waits for what the ring issued, which may
 * still use the range; the ring's checks see the change at once (al). */
static int h_vmm(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    struct x_vmm m;
    memcpy(&m, p, sizeof m);
    uint64_t out = 0;
    int rc = h->type == X_VMM_UNMAP ? xe_ring_drain(x) : GOS_OK;
    if (!rc)
        rc = gos_vmmx_op(x->dev, &x->vmm, h->type, &m, &out);
    /* (an unmap that stopped half-way changed the table too; a range al
     * has no room for is refused by the ring, the socket path still works) */
    if (h->type == X_VMM_MAP || h->type == X_VMM_UNMAP || h->type == X_VMM_ACCESS)
        xe_al_vmm_sync(x);
    return xe_answer(x, h->type, rc, 0, &out, 8);
}

static int h_run(struct xe *x, const struct x_hdr *h, void *p, int fd) { return xe_run(x, p, h->len); }

static int adopt(struct xe *ctl, int fd);

static int h_adopt(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    return xe_answer(x, h->type, adopt(x, fd), 0, NULL, 0);
}

static int h_ring(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    uint64_t u = u64_at(p);
    if (h->len >= 12)
        memcpy(&x->ring_max_queued, (char *)p + 8, 4);
    int rc = x->ring_on ? gos_fail(GOS_EBUSY, "executor: a ring is attached already")
                        : xe_ring_start(x, fd, u, x->dev, &x->ring);
    if (fd >= 0)
        close(fd);
    x->ring_on = !rc;
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

static int h_grant(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    int rc = GOS_OK;
    struct stat st;
    if (fd < 0)
        rc = gos_fail(GOS_EPROTO, "GRANT without a descriptor");
    else if (x->gp)
        rc = gos_fail(GOS_EBUSY, "executor: a grant page is mapped already");
    else if (fstat(fd, &st) || (uint64_t)st.st_size < GOS_GRANT_PAGE_BYTES)
        rc = gos_fail(GOS_EPROTO, "grant page of the wrong size");
    else {
        void *g = mmap(NULL, GOS_GRANT_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (g == MAP_FAILED)
            rc = gos_fail(GOS_ENOMEM, "executor: mapping the grant page");
        else
            x->gp = g;
    }
    if (fd >= 0)
        close(fd);
    return xe_answer(x, h->type, rc, 0, NULL, 0);
}

static int h_bell(struct xe *x, const struct x_hdr *h, void *p, int fd)
{
    if (fd < 0)
        return xe_answer(x, h->type, gos_fail(GOS_EPROTO, "BELL without a descriptor"), 0, NULL, 0);
    if (x->bell >= 0)
        close(x->bell);
    x->bell = fd;
    return xe_answer(x, h->type, GOS_OK, 0, NULL, 0);
}

#define X_TAKES_FD 1u /* the handler owns the passed descriptor */

/* The executor's message table (xproto.h): everything the loop needs to know
 * of a message lives in its row. */
static const struct xe_msg {
    uint32_t type;
    uint32_t min_len;
    unsigned flags;
    xe_handler fn;
} xe_msgs[] = {
    {X_ALLOC, 8, 0, h_alloc},
    {X_VALLOC, 8, 0, h_alloc},
    {X_FREE, 8, 0, h_release},
    {X_EVICT, 8, X_TAKES_FD, h_swap},
    {X_RESTORE, 8, X_TAKES_FD, h_swap},
    {X_EVICT_POOL, sizeof(struct x_swap_io), X_TAKES_FD, h_swap_pool},
    {X_RESTORE_POOL, sizeof(struct x_swap_io), X_TAKES_FD, h_swap_pool},
    {X_POOL_PIN, sizeof(struct x_swap_io), X_TAKES_FD, h_pool_pin},
    {X_SWAP_CTL, sizeof(struct x_swap_ctl), 0, h_swap_ctl},
    {X_POOL_COPY, sizeof(struct x_pool_copy), X_TAKES_FD, h_pool_copy},
    {X_POOL_LOCK, sizeof(struct x_swap_io), X_TAKES_FD, h_pool_lock},
    {X_REGION_ADD, sizeof(struct x_region), X_TAKES_FD, h_region_add},
    {X_MODULE_LOAD, sizeof(struct x_module), 0, h_module_load},
    {X_MODULE_UNLOAD, 4, 0, h_module_unload},
    {X_FUNCTION, sizeof(struct x_function), 0, h_function},
    {X_MODULE_GLOBAL, sizeof(struct x_function), 0, h_module_global},
    {X_TMAP_ENCODE, sizeof(gpuos_tmap_args), 0, h_tmap_encode},
    {X_SHM_NEW, 8, 0, h_shm_new},
    {X_SHM_MAP, 8, X_TAKES_FD, h_shm_map},
    {X_SHM_UNMAP, 8, 0, h_release},
    {X_PMEM_ALLOC, sizeof(struct x_pmem_alloc), 0, h_pmem_alloc},
    {X_PMEM_FREE, 8, 0, h_release},
    {X_PMEM_COPY, sizeof(struct gos_msg_pmem_copy), 0, h_pmem_copy},
    {X_PMEM_CHECK, sizeof(struct gos_msg_pmem_check), 0, h_pmem_check},
    {X_RUN, 0, 0, h_run},
    {X_ADOPT, 0, X_TAKES_FD, h_adopt},
    {X_RING, 8, X_TAKES_FD, h_ring},
    {X_GRANT, 0, X_TAKES_FD, h_grant},
    {X_BELL, 0, X_TAKES_FD, h_bell},
    {X_VMM_RESERVE, sizeof(struct x_vmm), 0, h_vmm},
    {X_VMM_UNRESERVE, sizeof(struct x_vmm), 0, h_vmm},
    {X_VMM_CREATE, sizeof(struct x_vmm), 0, h_vmm},
    {X_VMM_RELEASE, sizeof(struct x_vmm), 0, h_vmm},
    {X_VMM_MAP, sizeof(struct x_vmm), 0, h_vmm},
    {X_VMM_UNMAP, sizeof(struct x_vmm), 0, h_vmm},
    {X_VMM_ACCESS, sizeof(struct x_vmm), 0, h_vmm},
};

static const struct xe_msg *xe_msg_find(uint32_t type)
{
    for (size_t i = 0; i < sizeof xe_msgs / sizeof xe_msgs[0]; i++)
        if (xe_msgs[i].type == type)
            return &xe_msgs[i];
    return NULL;
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
        /* the pool's chunks to lock ahead (X_POOL_PIN), one at a time while
         * no message waits */
        struct pollfd pw = {.fd = x->sock, .events = POLLIN};
        if (x->pin_want && poll(&pw, 1, 0) == 0 && xe_pool_pin_next(x))
            continue;
        if (x_recv(x->sock, &h, &buf, &cap, &fd))
            break; /* the daemon closed the channel: the client is gone */
        const struct xe_msg *m = xe_msg_find(h.type);
        if (fd >= 0 && (!m || !(m->flags & X_TAKES_FD) || h.len < m->min_len)) {
            close(fd);
            fd = -1;
        }
        if (!m || h.len < m->min_len) {
            xe_answer(x, h.type,
                      gos_fail(GOS_EPROTO, m ? "executor: short message %u" : "executor: message %u", (unsigned)h.type),
                      0, NULL, 0);
            continue;
        }
        pthread_mutex_lock(&x->lock);
        int src = m->fn(x, &h, buf, fd);
        pthread_mutex_unlock(&x->lock);
        if (src == GOS_EDEVICE && h.type == X_RUN)
            _exit(X_EXIT_FAULTED); /* faulted: the context is dead; the daemon was told */
    }
    free(buf);
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

/* The stream priority of every queue of this process (gos_executor_main). */
static int xe_prio;

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
    x->bell = -1;
    x->dev = dev;
    pthread_mutex_init(&x->lock, NULL);
    *rc = GOS_OK;
    for (int e = 0; !*rc && dev && e < XE_ENGINES; e++)
        *rc = gos_exec_engine_new(x->dev, xe_prio, &x->streams[e], x->ev[e]);
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
    return xe_answer(x, X_HELLO, rc, 0, &hello, sizeof hello);
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
    xe_mem_release(x);
    for (int i = 0; i < SRV_MAX_MODULES; i++)
        if (x->modules[i])
            gos_exec_module_unload(x->dev, x->modules[i]);
    if (x->ring_bounce)
        gos_exec_host_free(x->dev, x->ring_bounce);
    for (int i = 0; i < XE_RING_MARKS; i++)
        if (x->mark[i].ev)
            gos_exec_event_destroy(x->dev, x->mark[i].ev);
    for (int e = 0; e < XE_ENGINES; e++)
        gos_exec_engine_free(x->dev, x->streams[e], x->ev[e]);
    pthread_mutex_unlock(&x->lock);
    pthread_mutex_destroy(&x->lock);
    if (x->gp)
        munmap(x->gp, GOS_GRANT_PAGE_BYTES);
    if (x->bell >= 0)
        close(x->bell);
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
    x->shared = 1;
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

int gos_executor_main(int sock, const char *sim, int ordinal, int prio)
{
    xe_prio = prio;
    /* Dies with the daemon (or when the daemon drops this executor), even in
     * the middle of a long kernel: nothing else may reach this context. (Not
     * PR_SET_PDEATHSIG: it fires when the daemon *thread* that forked us ends.) */
    gos_log_name("gpuos executor");
    gos_log_init(LOG_INFO);
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
