/* SPDX-License-Identifier: Apache-2.0 */
/* client.c: one connection of `gpuos serve`: reads messages, checks every
 * argument against the client's own tables (allocations, regions, modules,
 * functions: a client can name only what it created), enforces the vGPU's memory
 * share (issue 4.6) and turns copies and launches into scheduler tasks.
 *
 * A malformed message gets an error REPLY naming the problem and the connection
 * is closed; the daemon and the other clients carry on. When the connection ends
 * for any reason (BYE, EOF, crash of the client, protocol violation) everything
 * the client queued is taken back and, once its in-flight work has finished, its
 * device memory, regions and modules are released.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/dispatch.h"
#include "serve/ring.h"
#include "serve/region.h"
#include "serve/xshare.h"
#include "serve/shm.h"
#include "serve/swap.h"
#include "serve/pmem_cl.h"
#include "serve/vmm_cl.h"
#include "serve/vgpu.h"
#include "serve/metrics.h"
#include "serve/state.h"
#include "serve/tmap_cl.h"
#include "serve/reply.h"
#include "common/log.h"
#include "common/clock.h"
#include "device/exec_ops.h"
#include "serve/executor.h"

#include "common/range.h"
#include "device/exec_builtin.h"
#include "common/status.h"
#include "proto/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct srv_dev *dev_of(struct srv_client *c)
{
    return &c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device];
}

/* An asynchronous request failed: its error waits for the next SYNC (the first
 * one wins); nothing is answered now. */
static int sticky(struct srv_client *c, int rc)
{
    if (!c->sticky_rc) {
        c->sticky_rc = rc;
        snprintf(c->sticky_msg, sizeof c->sticky_msg, "%s", gos_last_error());
    }
    return 0;
}

/* Waits (lock held) until nothing of c is queued or running, or the daemon
 * stops (queued work is then dropped, never run). */
static int drain(struct srv_client *c)
{
    struct srv *s = c->srv;
    if (c->outstanding > 0) {
        c->kick = 0;
        srv_ring_end_soon(c);
        srv_dev_kick(dev_of(c), -1); /* this reader waits: the dispatchers run it */
    }
    while (c->outstanding > 0) {
        if (s->stop)
            return gos_fail(GOS_EBUSY, "the daemon is shutting down");
        srv_idle_wait(s, 100000000ull);
    }
    return GOS_OK;
}

/* The allocation of c holding [p, p + n), or NULL (the one range check,
 * common/range.h, as the executor's xe_al_look). */
static struct srv_alloc *find_alloc(struct srv_client *c, uint64_t p, uint64_t n)
{
    int i = gos_range_find(c->allocs, c->n_allocs, sizeof *c->allocs, p, n);
    return i < 0 ? NULL : &c->allocs[i];
}

/* Is [p, p + n) inside a module global the client looked up? */
static int in_global(const struct srv_client *c, uint64_t p, uint64_t n)
{
    return gos_range_find(c->globals, c->n_globals, sizeof *c->globals, p, n) >= 0;
}

static int reachable(struct srv_client *c, uint64_t p, uint64_t n) { return find_alloc(c, p, n) || in_global(c, p, n); }

/* A built-in kernel's argument: device memory, or mapped host memory at the
 * client's address (its executor maps the region there). */
static int kernel_reachable(struct srv_client *c, uint64_t p, uint64_t n)
{
    for (int i = 0; i < GOS_MAX_REGIONS; i++)
        if (c->regions[i].used && !c->regions[i].deleted && c->regions[i].same_va &&
            gos_range_within(c->regions[i].same_va, c->regions[i].bytes, p, n))
            return 1;
    return reachable(c, p, n);
}

static int do_hello(struct srv_client *c, const struct gos_msg_hello *m, struct gos_rep_hello *r)
{
    struct srv *s = c->srv;
    if (c->vgpu >= 0)
        return gos_fail(GOS_EPROTO, "HELLO sent twice");
    c->hello = 1;
    for (int v = 0; v < s->n_vgpus; v++)
        if (!strcmp(s->vgpus[v].cfg.name, m->vgpu) && !s->vgpus[v].removed) {
            int rc = srv_vgpu_access(s, v, c->fd, c->pid, c->uid, c->gid);
            if (rc) {
                gos_log(LOG_NOTICE, "client %u (pid %d) refused: %s", c->id, (int)c->pid, gos_last_error());
                s->refused++;
                return rc;
            }
            if (s->vgpus[v].clients >= s->cfg.max_clients_per_vgpu) {
                s->refused++;
                return gos_fail(GOS_ELIMIT, "vGPU %s has its maximum of %d clients (max_clients_per_vgpu)",
                                m->vgpu, s->cfg.max_clients_per_vgpu);
            }
            struct srv_dev *d = &s->devs[s->vgpus[v].cfg.device];
            if (d->isolation != GOS_ISOLATION_NONE) {
                /* The client's own executor process (issue 9); the daemon's lock is
                 * not held while it starts (it opens the device). */
                s->vgpus[v].clients++; /* reserved */
                struct srv_exec_class cls;
                srv_vgpu_exec_class(s, v, &cls);
                if (d->executor_per_vgpu) { /* the vGPU's shared one (xshare.c) */
                    rc = srv_xshare_join(s, v, &cls, &c->x, &c->xshare);
                } else {
                    pthread_mutex_unlock(&s->lock);
                    rc = srv_dev_exec_spawn(d, &cls, &c->x);
                    pthread_mutex_lock(&s->lock);
                }
                if (!rc && (cls.sm_pct || cls.prio || cls.mps_low))
                    gos_log(LOG_INFO, "client %u (pid %d) of %s vGPU %s: its executor uses at most %d %% of the SMs "
                                      "(latency_sms), stream priority %s, MPS client priority %s (latency_priority)",
                            c->id, (int)c->pid, s->vgpus[v].cfg.latency_ms ? "latency" : "batch", m->vgpu,
                            cls.sm_pct ? cls.sm_pct : 100, cls.prio > 0 ? "high" : cls.prio < 0 ? "low" : "default",
                            cls.mps_low ? "below normal" : "normal");
                s->vgpus[v].clients--;
                if (rc)
                    return rc;
                gos_log(LOG_DEBUG, "client %u (pid %d) of vGPU %s: executor pid %d", c->id, (int)c->pid, m->vgpu,
                        (int)c->x->pid);
            }
            c->vgpu = v; /* c->pid stays the kernel's (SO_PEERCRED), whatever m->pid says */
            s->vgpus[v].clients++;
            if (s->vgpus[v].deleted && c->x) { /* deleted while its executor started (lock dropped) */
                char why[GOS_NAME_MAX + 64];
                snprintf(why, sizeof why, "vGPU %s was deleted (gpuos vgpu delete --force)", m->vgpu);
                srv_exec_fail(c->x, why);
            }
            srv_ring_rotation(s, s->vgpus[v].cfg.device); /* counted from its first task (c->worked) */
            r->vgpu_id = (uint32_t)v;
            r->device = (uint32_t)s->vgpus[v].cfg.device;
            r->server_version = GOS_PROTOCOL_VERSION;
            r->client_id = c->id;
            return GOS_OK;
        }
    char names[160] = "";
    for (int v = 0; v < s->n_vgpus && strlen(names) < 120; v++)
        if (!s->vgpus[v].removed)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                     s->vgpus[v].cfg.name);
    int gone = srv_vgpu_find(s, m->vgpu);
    return gos_fail(GOS_EINVAL, "no vGPU named \"%s\" (%sthis daemon has: %s)", m->vgpu,
                    gone >= 0 ? "removed from the configuration; " : "", names);
}

static int do_alloc(struct srv_client *c, uint64_t bytes, uint64_t *dptr)
{
    struct srv *s = c->srv;
    struct srv_vgpu *v = &s->vgpus[c->vgpu];
    struct srv_dev *d = dev_of(c);
    char what[48];
    snprintf(what, sizeof what, "allocating %llu bytes", (unsigned long long)bytes);
    if (srv_share_room(c, bytes, what))
        return GOS_EBUSY;
    if (srv_alloc_room(c))
        return GOS_ENOMEM;
    v->mem_used += bytes; /* reserved while the lock is dropped */
    pthread_mutex_unlock(&s->lock);
    int rc;
    if (d->sw && c->x) { /* swappable (issue 10.2): the swap module drops the lock itself */
        pthread_mutex_lock(&s->lock);
        rc = srv_swap_alloc(c, bytes, dptr);
    } else {
        rc = c->x ? srv_exec_call(c->x, X_ALLOC, &bytes, 8, -1, dptr, 8) : gos_exec_mem_alloc(d->dev, bytes, dptr);
        pthread_mutex_lock(&s->lock);
    }
    if (rc) {
        v->mem_used -= bytes;
        return rc;
    }
    c->allocs[c->n_allocs++] = (struct srv_alloc){.dptr = *dptr, .bytes = bytes};
    return GOS_OK;
}

static int do_free(struct srv_client *c, uint64_t dptr)
{
    struct srv *s = c->srv;
    struct srv_dev *d = dev_of(c);
    for (int i = 0; i < c->n_allocs; i++)
        if (c->allocs[i].dptr == dptr && c->allocs[i].shm)
            return gos_fail(GOS_EINVAL, "0x%llx is a shared segment: detach it with gpuos_shm_detach",
                            (unsigned long long)dptr);
        else if (c->allocs[i].dptr == dptr && c->allocs[i].pmem)
            return gos_fail(GOS_EINVAL, "0x%llx is partition-local memory: free it with gpuos_pmem_free",
                            (unsigned long long)dptr);
        else if (c->allocs[i].dptr == dptr && c->allocs[i].vmm)
            return gos_fail(GOS_EINVAL, "0x%llx is mapped VMM memory: unmap it and release its handle",
                            (unsigned long long)dptr);
    int known = 0;
    for (int i = 0; i < c->n_allocs; i++)
        known |= c->allocs[i].dptr == dptr;
    if (known) {
        int rc = drain(c); /* the device may still be using it (the lock is dropped meanwhile) */
        if (rc)
            return rc;
    }
    /* looked up again after the drain: the client's executor may have been
     * lost meanwhile, its allocations returned to the share already */
    for (int i = 0; i < c->n_allocs; i++)
        if (c->allocs[i].dptr == dptr) {
            int rc;
            uint64_t bytes = c->allocs[i].bytes;
            rc = c->x ? srv_exec_call(c->x, X_FREE, &dptr, 8, -1, NULL, 0) : gos_exec_mem_free(d->dev, dptr);
            if (d->sw)
                srv_swap_free(c, dptr);
            s->vgpus[c->vgpu].mem_used -= bytes;
            c->allocs[i] = c->allocs[--c->n_allocs];
            return rc;
        }
    if (known && c->exec_lost)
        return gos_fail(GOS_EDEVICE, "vGPU %s: this client's executor is gone (%s); reconnect",
                        s->vgpus[c->vgpu].cfg.name, c->x ? c->x->why : "");
    return gos_fail(GOS_EINVAL, "0x%llx is not an allocation of this client", (unsigned long long)dptr);
}

/* What of c's allocations and globals holds [p, p + n) (gos_range_look_fn). */
static unsigned range_look(void *ctx, uint64_t p, uint64_t n)
{
    struct srv_client *c = ctx;
    const struct srv_alloc *a = find_alloc(c, p, n);
    return a ? GOS_RANGE_IN | (a->ro ? GOS_RANGE_RO : 0u) : in_global(c, p, n) ? GOS_RANGE_IN : 0u;
}

/* A copy's device ranges: the one rule (common/range.h), the executor's for
 * its ring entries too. */
static int copy_ranges(struct srv_client *c, const struct gos_msg_copy *m)
{
    return gos_range_copy(m->op == GOS_OP_DTOH, m->op == GOS_OP_DTOD, m->dptr, m->dptr2, m->bytes, range_look, c,
                          GOS_OK);
}

/* A copy queued as the client sent it (its executor resolves it there),
 * resolved here under isolation = none. */
static int do_copy(struct srv_client *c, uint32_t seq, const struct gos_msg_copy *m)
{
    struct srv_op o = {.req = m->req, .seq = seq, .req_type = GOS_MSG_COPY, .region = -1};
    int rc = copy_ranges(c, m);
    if (rc)
        return rc;
    void *host = NULL;
    if (m->op != GOS_OP_DTOD) {
        struct srv_region *g = srv_region_find(c, m->region, m->offset, m->bytes);
        if (!g)
            return GOS_EINVAL;
        host = (char *)g->ptr + m->offset;
        o.region = (int)m->region;
        if ((m->flags & GOS_F_DIRECT) && !g->pinned)
            o.req.flags |= GOS_F_SYNC;
    }
    if (!c->x)
        o.dev = (struct gos_op){.kind = m->op, .sync = !!(o.req.flags & GOS_F_SYNC), .dptr = m->dptr,
                                .dptr2 = m->dptr2, .bytes = m->bytes, .host = host};
    return srv_op_submit(c, GOS_SCHED_COPY, m->priority, &o);
}

/* Unloads module slot (mod: the daemon's own handle under isolation = none)
 * and gives its globals' charge back to the vGPU's share. */
static int module_drop(struct srv_client *c, int slot, void *mod)
{
    int rc;
    if (c->x) {
        uint32_t sl = (uint32_t)slot;
        rc = srv_exec_call(c->x, X_MODULE_UNLOAD, &sl, 4, -1, NULL, 0);
    } else {
        rc = gos_exec_module_unload(dev_of(c)->dev, mod);
    }
    c->srv->vgpus[c->vgpu].mem_used -= c->module_bytes[slot];
    c->module_bytes[slot] = 0;
    return rc;
}

static int do_module_load(struct srv_client *c, const struct gos_msg_module_load *m, uint64_t *h)
{
    struct srv *s = c->srv;
    struct srv_dev *d = dev_of(c);
    int slot = -1;
    for (int i = 0; i < SRV_MAX_MODULES; i++)
        if (!c->modules[i]) {
            slot = i;
            break;
        }
    if (slot < 0)
        return gos_fail(GOS_EBUSY, "more than %d modules loaded", SRV_MAX_MODULES);
    const void *img = NULL;
    if (!m->name[0]) {
        struct srv_region *g = srv_region_find(c, m->region, m->offset, m->bytes);
        if (!g)
            return GOS_EINVAL;
        img = (char *)g->ptr + m->offset;
    }
    void *mod = NULL;
    c->modules[slot] = (void *)1; /* reserved */
    /* Issue 44.2: its globals are device memory of this vGPU, charged like an
     * allocation; the device side measures them on its own copy of the image
     * and refuses past what is left of the share */
    struct srv_vgpu *v = &s->vgpus[c->vgpu];
    uint64_t limit = v->mem_used < v->mem_quota ? v->mem_quota - v->mem_used : 0, need = 0;
    pthread_mutex_unlock(&s->lock);
    int rc;
    if (c->x) {
        struct x_module xm = {.slot = (uint32_t)slot, .region = m->region, .offset = m->offset, .bytes = m->bytes,
                              .limit = limit};
        snprintf(xm.name, sizeof xm.name, "%s", m->name);
        rc = srv_exec_call(c->x, X_MODULE_LOAD, &xm, sizeof xm, -1, &need, sizeof need);
        mod = (void *)(uintptr_t)(slot + 2); /* never NULL nor the reservation */
        c->module_builtin[slot] = (unsigned char)gos_exec_builtin_module(m->name);
    } else {
        rc = gos_exec_module_load_within(d->dev, img, m->bytes, m->name[0] ? m->name : NULL, limit, &mod, &need);
    }
    pthread_mutex_lock(&s->lock);
    if (rc == GOS_EBUSY) { /* the device's line, with the vGPU's name */
        char why[GOS_MSG_TEXT_MAX];
        snprintf(why, sizeof why, "%s", gos_last_error());
        rc = gos_fail(GOS_EBUSY, "vGPU %s: %s", v->cfg.name, why);
    }
    if (!rc && c->x && c->x->dead) /* lost meanwhile: the module went with it */
        rc = gos_fail(GOS_EDEVICE, "vGPU %s: this client's executor is gone (%s)", v->cfg.name, c->x->why);
    if (!rc && need && (v->mem_used >= v->mem_quota || need > v->mem_quota - v->mem_used)) {
        /* others of the vGPU took the room meanwhile (the lock was dropped) */
        rc = gos_fail(GOS_EBUSY, "vGPU %s: a module whose globals take %llu bytes would exceed its memory share "
                                 "(%llu of %llu bytes used)", v->cfg.name, (unsigned long long)need,
                      (unsigned long long)v->mem_used, (unsigned long long)v->mem_quota);
        module_drop(c, slot, mod);
    }
    c->modules[slot] = rc ? NULL : mod;
    if (!rc) {
        c->module_bytes[slot] = need;
        v->mem_used += need;
        *h = (uint64_t)slot + 1;
    }
    return rc;
}

static int module_of(struct srv_client *c, uint64_t h)
{
    if (h < 1 || h > SRV_MAX_MODULES || !c->modules[h - 1] || c->modules[h - 1] == (void *)1) {
        gos_fail(GOS_EINVAL, "module handle %llu is not a module of this client", (unsigned long long)h);
        return -1;
    }
    return (int)h - 1;
}

static int do_func_get(struct srv_client *c, const struct gos_msg_func_get *m, uint64_t *h)
{
    struct srv_dev *d = dev_of(c);
    int mi = module_of(c, m->module);
    if (mi < 0)
        return GOS_EINVAL;
    if (c->n_funcs == SRV_MAX_FUNCS)
        return gos_fail(GOS_EBUSY, "more than %d functions looked up", SRV_MAX_FUNCS);
    void *fn;
    c->fn_builtin[c->n_funcs][0] = 0;
    if (c->x) {
        struct x_function xf = {.module = (uint32_t)mi, .pad = (uint32_t)c->n_funcs + 1};
        snprintf(xf.name, sizeof xf.name, "%s", m->name);
        uint32_t idx = 0;
        int rc = srv_exec_call(c->x, X_FUNCTION, &xf, sizeof xf, -1, &idx, 4);
        if (rc)
            return rc;
        fn = (void *)(uintptr_t)idx;
        if (c->module_builtin[mi] && strlen(m->name) < sizeof c->fn_builtin[0])
            snprintf(c->fn_builtin[c->n_funcs], sizeof c->fn_builtin[0], "%s", m->name);
    } else {
        int rc = gos_exec_function(d->dev, c->modules[mi], m->name, &fn);
        if (rc)
            return rc;
    }
    c->fn_module[c->n_funcs] = (uint16_t)mi;
    c->funcs[c->n_funcs++] = fn;
    *h = (uint64_t)c->n_funcs;
    return GOS_OK;
}

/* A module's __device__ variable (cuModuleGetGlobal): its address in the
 * client's context, which copies may then reach until the module is unloaded. */
static int do_module_global(struct srv_client *c, const struct gos_msg_func_get *m, struct gos_rep_global *r)
{
    struct srv *s = c->srv;
    struct srv_dev *d = dev_of(c);
    int mi = module_of(c, m->module);
    if (mi < 0)
        return GOS_EINVAL;
    if (c->n_globals == SRV_MAX_GLOBALS)
        return gos_fail(GOS_ELIMIT, "more than %d module globals looked up", SRV_MAX_GLOBALS);
    int rc;
    pthread_mutex_unlock(&s->lock);
    if (c->x) {
        struct x_function xf = {.module = (uint32_t)mi};
        snprintf(xf.name, sizeof xf.name, "%s", m->name);
        rc = srv_exec_call(c->x, X_MODULE_GLOBAL, &xf, sizeof xf, -1, r, sizeof *r);
    } else {
        rc = gos_exec_module_global(d->dev, c->modules[mi], m->name, &r->dptr, &r->bytes);
    }
    pthread_mutex_lock(&s->lock);
    if (rc)
        return rc;
    if (c->modules[mi] == NULL || c->modules[mi] == (void *)1)
        return gos_fail(GOS_EINVAL, "module %llu was unloaded meanwhile", (unsigned long long)m->module);
    if (!in_global(c, r->dptr, r->bytes))
        c->globals[c->n_globals++] = (struct srv_global){.dptr = r->dptr, .bytes = r->bytes, .module = mi};
    return GOS_OK;
}

/* Forgets the globals of module mi (its unload): copies may not reach them. */
static void drop_globals(struct srv_client *c, int mi)
{
    for (int i = 0; i < c->n_globals;)
        if (c->globals[i].module == mi)
            c->globals[i] = c->globals[--c->n_globals];
        else
            i++;
}

static int do_launch(struct srv_client *c, uint32_t seq, const struct gos_msg_launch *m)
{
    if (m->func < 1 || m->func > (uint64_t)c->n_funcs || !c->funcs[m->func - 1])
        return gos_fail(GOS_EINVAL, "function handle %llu is not a function of this client",
                        (unsigned long long)m->func);
    struct srv_op o = {.req = m->req, .seq = seq, .req_type = GOS_MSG_LAUNCH, .region = -1};
    if (m->param_bytes) {
        if (!(o.params = malloc(m->param_bytes)))
            return gos_fail(GOS_ENOMEM, "daemon out of host memory");
        memcpy(o.params, m + 1, m->param_bytes);
    }
    if (!c->x) /* (with an executor, c->funcs holds its index: it maps the client's handle itself) */
        o.dev = (struct gos_op){.kind = GOS_OP_LAUNCH, .fn = c->funcs[m->func - 1],
                                .cfg = {.geom = m->geom, .params = o.params, .param_bytes = m->param_bytes}};
    int rc = srv_op_submit(c, GOS_SCHED_COMPUTE, m->priority, &o);
    if (rc)
        free(o.params);
    return rc;
}

static void device_info(struct srv_client *c, struct gos_rep_device_info *r)
{
    const gos_device_info *i = &dev_of(c)->info;
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", i->name);
    snprintf(r->uuid, sizeof r->uuid, "%s", i->uuid);
    snprintf(r->backend, sizeof r->backend, "%s", i->backend);
    r->cc_major = (uint32_t)i->cc_major;
    r->cc_minor = (uint32_t)i->cc_minor;
    r->sm_count = (uint32_t)i->sm_count;
    r->simulated = (uint32_t)i->simulated;
    r->mem_bytes = dev_of(c)->mem_total;
}

/* The one place that validates a request before it can touch the session
 * (issue 15.4; lock held): its arguments (gos_proto_check_args), everything it
 * names (allocations, regions, modules, functions: only the client's own; the
 * device ranges a built-in kernel will touch, checked against the client's
 * allocations: issue 15.1) and the operator's limits on queued work and
 * allocations. GOS_OK, or an error of this request alone: the caller answers it
 * (or keeps it for the next SYNC when the request is asynchronous) and the
 * session carries on. */
/* The requests a client may send, as tmux's command entries: type, handler
 * and the request's properties (its payload's size and form are the
 * protocol's, proto.c):
 *   MF_BEFORE_HELLO  allowed before HELLO (the administration requests);
 *   MF_KEEPS_FD      the handler keeps the descriptor passed with it (the
 *                    reader closes any other, and this one when refused);
 *   MF_DEVICE        needs the client's executor: refused, naming why, once
 *                    it is gone;
 *   MF_QUEUED        queued device work whose flags say GOS_F_ASYNC: an error
 *                    is kept for the next SYNC rather than answered;
 *   MF_DRAIN         runs once nothing of the client is queued or running
 *                    (drain; its error, the daemon stopping, is the answer);
 *   MF_EXEC_LOSS     an executor found dead by the request is accounted for
 *                    (srv_client_exec_check) at once, after the answer.
 * The handlers of requests whose logic lives in another file are there,
 * declared in its header (srv_msg_*; reply.h). */
#define MF_BEFORE_HELLO 1u
#define MF_KEEPS_FD 2u
#define MF_DEVICE 4u
#define MF_QUEUED 8u
#define MF_DRAIN 16u
#define MF_EXEC_LOSS 32u
struct msg_entry {
    uint16_t type;
    unsigned flags;
    int (*fn)(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
};

static int validate(struct srv_client *c, const struct msg_entry *e, const struct gos_msg_hdr *h, const void *p)
{
    struct srv *s = c->srv;
    int rc = gos_proto_check_args(h, p);
    if (rc || c->vgpu < 0)
        return rc;
    srv_client_exec_probe(c);
    if (c->x && !c->x->dead && c->x->share && h->type == GOS_MSG_SYNC) {
        /* executor = per-vgpu: a sibling's channel saw the shared executor's
         * fault; this client (on its ring, no exchange of its own) hears it now */
        char why[400] = "";
        pthread_mutex_lock(&c->x->share->lock);
        if (c->x->share->lost)
            snprintf(why, sizeof why, "%s", c->x->share->why);
        pthread_mutex_unlock(&c->x->share->lock);
        if (why[0])
            srv_exec_fail(c->x, why);
    }
    if (c->x && c->x->dead) {
        srv_client_exec_check(c);
        if (h->type == GOS_MSG_SYNC && !c->sticky_rc) /* a SYNC with nothing queued says it too */
            sticky(c, gos_fail(GOS_EDEVICE, "vGPU %s: this client's executor is gone (%s); reconnect",
                               s->vgpus[c->vgpu].cfg.name, c->x->why));
        if (e->flags & MF_DEVICE)
            return gos_fail(GOS_EDEVICE, "vGPU %s: this client's executor is gone (%s); reconnect",
                            s->vgpus[c->vgpu].cfg.name, c->x->why);
    }
    switch (h->type) {
    case GOS_MSG_MEM_ALLOC:
        if (c->n_allocs >= s->cfg.max_allocations)
            return gos_fail(GOS_ELIMIT, "client has %d allocations, the maximum (max_allocations)", c->n_allocs);
        return GOS_OK;
    case GOS_MSG_REGION_DEL: {
        uint32_t r = ((const struct gos_msg_region_del *)p)->region;
        if (!c->regions[r].used || c->regions[r].deleted)
            return gos_fail(GOS_EINVAL, "region %u is not a region of this client", (unsigned)r);
        return GOS_OK;
    }
    case GOS_MSG_MODULE_LOAD: {
        const struct gos_msg_module_load *m = p;
        return m->name[0] || srv_region_find(c, m->region, m->offset, m->bytes) ? GOS_OK : GOS_EINVAL;
    }
    case GOS_MSG_COPY:
    case GOS_MSG_LAUNCH:
        break;
    default:
        return GOS_OK;
    }
    uint64_t cost = sizeof(struct srv_op);
    if (h->type == GOS_MSG_COPY) {
        const struct gos_msg_copy *m = p;
        if ((rc = copy_ranges(c, m)))
            return rc;
        if (m->op != GOS_OP_DTOD && !srv_region_find(c, m->region, m->offset, m->bytes))
            return GOS_EINVAL;
    } else {
        const struct gos_msg_launch *m = p;
        if (m->func < 1 || m->func > (uint64_t)c->n_funcs || !c->funcs[m->func - 1])
            return gos_fail(GOS_EINVAL, "function handle %llu is not a function of this client",
                            (unsigned long long)m->func);
        struct srv_dev *d = dev_of(c);
        struct gos_launch_cfg cfg = {.geom = m->geom, .params = m + 1, .param_bytes = m->param_bytes};
        struct gos_dev_range r[GOS_LAUNCH_RANGES_MAX];
        int n = 0;
        if (c->x) {
            /* Built-ins by name; a client's own kernels reach only its own
             * executor's address space (n = -1: not checked). */
            const char *bn = c->fn_builtin[m->func - 1];
            if (!bn[0])
                n = -1;
            else if ((rc = gos_exec_builtin_ranges(bn, &cfg, r, &n)))
                return rc;
        } else if ((rc = gos_exec_launch_ranges(d->dev, c->funcs[m->func - 1], &cfg, r, &n)))
            return rc;
        for (int i = 0; i < n; i++)
            if (r[i].bytes && !kernel_reachable(c, r[i].ptr, r[i].bytes))
                return gos_fail(GOS_EINVAL, "kernel argument range 0x%llx+%llu is not inside an allocation of "
                                "this client", (unsigned long long)r[i].ptr, (unsigned long long)r[i].bytes);
        cost += m->param_bytes;
    }
    if (c->queued_ops >= s->cfg.max_queued_requests)
        return gos_fail(GOS_ELIMIT, "client has %d requests queued, the maximum (max_queued_requests); synchronize",
                        c->queued_ops);
    if (c->queued_bytes + cost > s->cfg.max_queued_bytes)
        return gos_fail(GOS_ELIMIT, "client's queued requests hold %llu bytes of the daemon's memory, the maximum is "
                        "%llu (max_queued_bytes); synchronize", (unsigned long long)c->queued_bytes,
                        (unsigned long long)s->cfg.max_queued_bytes);
    return GOS_OK;
}

/* The answer to a queued request (COPY, LAUNCH) that could not be queued (rc):
 * an asynchronous one's error waits for SYNC; a queued one answers later. */
static int answer_queued(struct srv_client *c, const struct gos_msg_hdr *h, int rc, uint32_t flags)
{
    if (rc && (flags & GOS_F_ASYNC))
        return sticky(c, rc);
    return rc ? srv_reply(c, h->seq, h->type, rc, NULL, 0) : 0;
}

/* ---- one function per message type (the table below; lock held) ----------
 * Each answers its request (or queues it) and returns < 0 to end the
 * connection. validate() has already accepted the request. */

static int msg_hello(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_hello r = {0};
    int rc = do_hello(c, p, &r);
    srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
    return rc ? -1 : 0;
}

static int msg_bye(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    return -1;
}

static int msg_mem_alloc(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_mem_alloc r = {0};
    int rc = do_alloc(c, ((struct gos_msg_mem_alloc *)p)->bytes, &r.dptr);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

static int msg_mem_free(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    int rc = do_free(c, ((struct gos_msg_mem_free *)p)->dptr);
    return srv_reply(c, h->seq, h->type, rc, NULL, 0);
}

static int msg_copy(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    const struct gos_msg_copy *m = p;
    /* swapping (issue 10.2): what the copy touches made resident first */
    int rc = c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device].sw && c->x ? srv_swap_need(c, h, p) : GOS_OK;
    if (!rc)
        rc = do_copy(c, h->seq, m);
    c->swap_hold = 0;
    return answer_queued(c, h, rc, m->flags);
}

/* Issue 23.5: the client asks before it touches host memory for a range it
 * did not allocate itself (a global, an attachment); the answer is do_copy's. */
static int msg_copy_check(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    return srv_reply(c, h->seq, h->type, copy_ranges(c, p), NULL, 0);
}

static int msg_module_load(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_handle r = {0};
    int rc = do_module_load(c, p, &r.handle);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

static int msg_module_unload(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    int rc, mi = module_of(c, ((struct gos_msg_module_unload *)p)->module);
    if (mi < 0) {
        rc = GOS_EINVAL;
    } else {
        if (!(rc = drain(c))) {
            rc = module_drop(c, mi, c->modules[mi]);
            c->modules[mi] = NULL;
            drop_globals(c, mi);
            for (int i = 0; i < c->n_funcs; i++)
                if (c->fn_module[i] == (uint16_t)mi)
                    c->funcs[i] = NULL; /* its functions die with it, the other modules' live on */
        }
    }
    return srv_reply(c, h->seq, h->type, rc, NULL, 0);
}

static int msg_module_global(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_global r = {0};
    int rc = do_module_global(c, p, &r);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

static int msg_func_get(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_handle r = {0};
    int rc = do_func_get(c, p, &r.handle);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

static int msg_launch(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    const struct gos_msg_launch *m = p;
    /* swapping (issue 10.2): all of the client's memory resident first */
    int rc = c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device].sw && c->x ? srv_swap_need(c, h, p) : GOS_OK;
    if (!rc)
        rc = do_launch(c, h->seq, m);
    c->swap_hold = 0;
    return answer_queued(c, h, rc, m->flags);
}

static int msg_sync(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    if (c->n_sync == 8) {
        gos_fail(GOS_EBUSY, "more than 8 SYNC outstanding");
        return srv_reply(c, h->seq, h->type, GOS_EBUSY, NULL, 0);
    }
    c->sync_seq[c->n_sync++] = h->seq;
    if (c->outstanding == 0) {
        int bad = 0;
        for (int i = 0; i < c->n_sync; i++)
            bad |= gos_wire_reply(c->fd, 1, c->sync_seq[i], GOS_MSG_SYNC, c->sticky_rc, c->sticky_msg, NULL, 0);
        c->n_sync = 0;
        c->sticky_rc = 0;
        c->sticky_msg[0] = 0;
        return bad ? -1 : 0;
    }
    srv_ring_end_soon(c); /* it waits for all of c: a grant of its ring ends now, not at its deadline */
    return 0;
}

static int msg_device_info(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_device_info r;
    device_info(c, &r);
    return srv_reply(c, h->seq, h->type, 0, &r, sizeof r);
}

static int msg_device_attrs(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    const struct srv_dev_attrs *a = &dev_of(c)->attrs; /* read once at start */
    struct gos_rep_device_attrs r;
    memcpy(r.value, a->value, sizeof r.value);
    memcpy(r.valid, a->valid, sizeof r.valid);
    return srv_reply(c, h->seq, h->type, a->rc, a->rc ? NULL : &r, a->rc ? 0 : sizeof r);
}

static const struct msg_entry msg_table[] = {
    {GOS_MSG_HELLO, MF_BEFORE_HELLO, msg_hello},
    {GOS_MSG_BYE, MF_BEFORE_HELLO, msg_bye},
    {GOS_MSG_MEM_ALLOC, MF_DEVICE, msg_mem_alloc},
    {GOS_MSG_MEM_FREE, MF_DEVICE, msg_mem_free},
    {GOS_MSG_REGION_ADD, MF_DEVICE | MF_KEEPS_FD, srv_msg_region_add},
    {GOS_MSG_REGION_DEL, 0, srv_msg_region_del},
    {GOS_MSG_COPY, MF_DEVICE | MF_QUEUED, msg_copy},
    {GOS_MSG_COPY_CHECK, 0, msg_copy_check},
    {GOS_MSG_MODULE_LOAD, MF_DEVICE, msg_module_load},
    {GOS_MSG_MODULE_UNLOAD, MF_DEVICE, msg_module_unload},
    {GOS_MSG_FUNC_GET, MF_DEVICE, msg_func_get},
    {GOS_MSG_MODULE_GLOBAL, MF_DEVICE, msg_module_global},
    {GOS_MSG_LAUNCH, MF_DEVICE | MF_QUEUED, msg_launch},
    {GOS_MSG_SYNC, MF_DEVICE, msg_sync},
    {GOS_MSG_DEVICE_INFO, 0, msg_device_info},
    {GOS_MSG_DEVICE_ATTRS, 0, msg_device_attrs},
    {GOS_MSG_TMAP_ENCODE, MF_DEVICE | MF_EXEC_LOSS, srv_msg_tmap_encode},
    {GOS_MSG_VGPU_INFO, 0, srv_msg_vgpu_info},
    {GOS_MSG_ADMIN_LIST, MF_BEFORE_HELLO, srv_msg_admin_list},
    {GOS_MSG_ADMIN_SET, MF_BEFORE_HELLO, srv_msg_admin_set},
    {GOS_MSG_SHM_GET, MF_DEVICE, srv_msg_shm_get},
    {GOS_MSG_SHM_AT, MF_DEVICE, srv_msg_shm_at},
    {GOS_MSG_SHM_DT, MF_DEVICE | MF_DRAIN, srv_msg_shm_dt},
    {GOS_MSG_SHM_CTL, 0, srv_msg_shm_ctl},
    {GOS_MSG_ADMIN_SHM_LIST, MF_BEFORE_HELLO, srv_msg_admin_shm_list},
    {GOS_MSG_ADMIN_SHM_RM, MF_BEFORE_HELLO, srv_msg_admin_shm_rm},
    {GOS_MSG_ADMIN_CREATE, MF_BEFORE_HELLO, srv_msg_admin_create},
    {GOS_MSG_ADMIN_DELETE, MF_BEFORE_HELLO, srv_msg_admin_delete},
    {GOS_MSG_PMEM_ALLOC, MF_DEVICE | MF_EXEC_LOSS, srv_msg_pmem_alloc},
    {GOS_MSG_PMEM_FREE, MF_DEVICE | MF_DRAIN | MF_EXEC_LOSS, srv_msg_pmem_free},
    {GOS_MSG_PMEM_COPY, MF_DEVICE | MF_DRAIN | MF_EXEC_LOSS, srv_msg_pmem_copy},
    {GOS_MSG_PMEM_CHECK, MF_DEVICE | MF_DRAIN | MF_EXEC_LOSS, srv_msg_pmem_check},
    {GOS_MSG_RING, 0, srv_msg_ring},
    {GOS_MSG_VMM_RESERVE, MF_DEVICE | MF_EXEC_LOSS, srv_msg_vmm},
    {GOS_MSG_VMM_UNRESERVE, MF_DEVICE | MF_EXEC_LOSS, srv_msg_vmm},
    {GOS_MSG_VMM_CREATE, MF_DEVICE | MF_EXEC_LOSS, srv_msg_vmm},
    {GOS_MSG_VMM_RELEASE, MF_DEVICE | MF_EXEC_LOSS, srv_msg_vmm},
    {GOS_MSG_VMM_MAP, MF_DEVICE | MF_EXEC_LOSS, srv_msg_vmm},
    {GOS_MSG_VMM_UNMAP, MF_DEVICE | MF_DRAIN | MF_EXEC_LOSS, srv_msg_vmm},
    {GOS_MSG_VMM_ACCESS, MF_DEVICE | MF_DRAIN | MF_EXEC_LOSS, srv_msg_vmm},
};

static const struct msg_entry *msg_find(uint16_t type)
{
    for (size_t i = 0; i < sizeof msg_table / sizeof msg_table[0]; i++)
        if (msg_table[i].type == type)
            return &msg_table[i];
    return NULL;
}

/* Handles one message (lock held): finds its entry, validates, runs it.
 * Returns < 0 to end the connection. */
static int handle(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    const struct msg_entry *e = msg_find(h->type);
    if (c->vgpu < 0 && !(e && (e->flags & MF_BEFORE_HELLO))) {
        gos_fail(GOS_EPROTO, "%s before HELLO", gos_proto_name(h->type));
        srv_reply(c, h->seq, h->type == GOS_MSG_REPLY ? GOS_MSG_HELLO : h->type, GOS_EPROTO, NULL, 0);
        return -1;
    }
    if (!e) {
        gos_fail(GOS_EPROTO, "%s is not a request", gos_proto_name(h->type));
        srv_reply(c, h->seq, h->type == GOS_MSG_REPLY ? GOS_MSG_HELLO : h->type, GOS_EPROTO, NULL, 0);
        return -1;
    }
    int rc = validate(c, e, h, p);
    if (rc) {
        if (h->type == GOS_MSG_HELLO) {
            srv_reply(c, h->seq, h->type, rc, NULL, 0);
            return -1;
        }
        if (fd >= 0 && (e->flags & MF_KEEPS_FD))
            close(fd);
        return answer_queued(c, h, rc, e->flags & MF_QUEUED ? gos_proto_request_flags(h, p) : 0);
    }
    if ((e->flags & MF_DRAIN) && (rc = drain(c)))
        rc = srv_reply(c, h->seq, h->type, rc, NULL, 0);
    else
        rc = e->fn(c, h, p, fd);
    if ((e->flags & MF_EXEC_LOSS) && c->x && c->x->dead)
        srv_client_exec_check(c);
    return rc;
}

/* Whether a message (or the end of the stream) is waiting on fd. */
static int readable(int fd)
{
    char b;
    return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
}

/* Polls fd for up to us microseconds for the next message, if fewer than
 * max_spinners readers are polling (the rest sleep in recvmsg at once). */
static void spin_for_input(struct srv *s, int fd)
{
    if (!s->spin_us)
        return;
    if (__atomic_add_fetch(&s->spinners, 1, __ATOMIC_RELAXED) <= s->max_spinners) {
        uint64_t end = gos_now_ns() + (uint64_t)s->spin_us * 1000;
        while (!readable(fd) && gos_now_ns() < end)
            sched_yield();
    }
    __atomic_sub_fetch(&s->spinners, 1, __ATOMIC_RELAXED);
}

void *srv_client_main(void *arg)
{
    struct srv_client *c = arg;
    struct srv *s = c->srv;
    void *payload = malloc(GOS_PROTO_MAX_PAYLOAD);
    struct gos_msg_hdr h;
    memset(&h, 0, sizeof h);
    /* This thread may wait for short tasks it runs (dispatch.c): no timer slack. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    for (;;) {
        int fd = -1;
        /* A request that is already there is read at once (it may join the batch
         * of the one before). When none is, work queued by the requests read so
         * far is offered to the engines first (run here, see dispatch.c), then the
         * reader polls briefly, then sleeps until the next request. */
        int rc = payload ? gos_wire_try_recv(c->fd, &h, payload, &fd, -1) : GOS_ENOMEM;
        if (rc == 1 && c->kick) { /* unlocked glance; checked again under the lock */
            pthread_mutex_lock(&s->lock);
            if (c->kick && !s->stop)
                srv_client_dispatch(c);
            pthread_mutex_unlock(&s->lock);
            rc = gos_wire_try_recv(c->fd, &h, payload, &fd, -1);
        }
        if (rc == 1) {
            spin_for_input(s, c->fd);
            rc = gos_wire_recv(c->fd, &h, payload, &fd, -1);
        }
        if (rc) {
            if (rc == GOS_EPROTO) {
                /* Tell the peer why (in our protocol version) before hanging up. */
                uint16_t t = gos_proto_name(h.type)[0] != '?' && h.type != GOS_MSG_REPLY ? h.type : GOS_MSG_HELLO;
                char why[GOS_MSG_TEXT_MAX];
                snprintf(why, sizeof why, "%s", gos_last_error());
                pthread_mutex_lock(&s->lock);
                gos_wire_reply(c->fd, 1, h.seq, t, GOS_EPROTO, why, NULL, 0);
                pthread_mutex_unlock(&s->lock);
                gos_log(LOG_WARNING, "client %u (pid %d) rejected: %s", c->id, (int)c->pid, why);
            } else if (strcmp(gos_last_error(), "connection closed")) {
                gos_log(LOG_DEBUG, "client %u: %s", c->id, gos_last_error());
            }
            break;
        }
        pthread_mutex_lock(&s->lock);
        int r = s->stop ? -1 : handle(c, &h, payload, fd);
        /* Work was queued: offer it to the engines now, unless the next request
         * may still join the same batch (then at the latest once none is waiting). */
        if (r >= 0 && c->kick && !s->stop && !srv_client_batch_open(c))
            srv_client_dispatch(c);
        pthread_mutex_unlock(&s->lock);
        const struct msg_entry *e = msg_find(h.type);
        if (fd >= 0 && !(e && (e->flags & MF_KEEPS_FD)))
            close(fd); /* a descriptor nobody keeps */
        if (r < 0)
            break;
    }
    free(payload);
    pthread_mutex_lock(&s->lock);
    c->dead = 1;
    srv_ring_wake(c);
    shutdown(c->fd, SHUT_RDWR);
    if (c->vgpu >= 0) {
        srv_client_cancel(c);
        srv_ring_rotation(s, s->vgpus[c->vgpu].cfg.device); /* a client left alone keeps its grant when idle */
    }
    srv_client_unref(c);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}
