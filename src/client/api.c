/* SPDX-License-Identifier: Apache-2.0 */
/* api.c: libgpuos's device API over the connection: memory, modules,
 * parameters, launches, synchronise, device and vGPU facts.
 * Process: a client program (libgpuos; the shim too). */
#include "client/client_internal.h"

static int mem_alloc(gpuos_vgpu *g, size_t bytes, gpuos_dptr *out)
{
    if (!bytes || !out)
        return gos_fail(GOS_EINVAL, "gpuos_mem_alloc of 0 bytes");
    struct gos_msg_mem_alloc m = {.bytes = bytes};
    struct gos_rep_mem_alloc r;
    int rc = gcl_call(g, GOS_MSG_MEM_ALLOC, &m, sizeof m, -1, &r, sizeof r);
    if (!rc) {
        *out = r.dptr;
        gcl_known_add(g, r.dptr, bytes);
    }
    return rc;
}
int gpuos_mem_alloc(gpuos_vgpu *g, size_t bytes, gpuos_dptr *out) { LOCKED(g, mem_alloc(g, bytes, out)); }

static int mem_free(gpuos_vgpu *g, gpuos_dptr p)
{
    struct gos_msg_mem_free m = {.dptr = p};
    gcl_known_del(g, p); /* whatever the answer: at worst a later question */
    return gcl_call(g, GOS_MSG_MEM_FREE, &m, sizeof m, -1, NULL, 0);
}
int gpuos_mem_free(gpuos_vgpu *g, gpuos_dptr p) { LOCKED(g, mem_free(g, p)); }

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
        rc = gcl_call(g, GOS_MSG_MODULE_LOAD, &m, sizeof m, -1, &r, sizeof r);
    } else {
        if (!image || !bytes)
            return gos_fail(GOS_EINVAL, "empty module image");
        uint32_t region;
        if ((rc = gcl_region_new(g, bytes, &p, &region)))
            return rc;
        memcpy(p, image, bytes);
        m.region = region;
        m.bytes = bytes;
        rc = gcl_call(g, GOS_MSG_MODULE_LOAD, &m, sizeof m, -1, &r, sizeof r);
        int rc2 = gcl_region_del(g, region);
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
    return gcl_call(g, GOS_MSG_MODULE_UNLOAD, &u, sizeof u, -1, NULL, 0);
}
int gpuos_module_unload(gpuos_vgpu *g, gpuos_module m) { LOCKED(g, module_unload(g, m)); }

/* Looks up a name in module m (a kernel: FUNC_GET, a global: MODULE_GLOBAL);
 * what names it in the error of a bad name or result pointer. */
static int module_lookup(gpuos_vgpu *g, uint16_t type, gpuos_module m, const char *name, const void *out,
                         const char *what, void *rep, size_t repn)
{
    struct gos_msg_func_get f = {.module = m};
    if (!name || !*name || strlen(name) >= sizeof f.name || !out)
        return gos_fail(GOS_EINVAL, "%s name of 1..%zu characters", what, sizeof f.name - 1);
    strcpy(f.name, name);
    return gcl_call(g, type, &f, sizeof f, -1, rep, repn);
}

static int module_function(gpuos_vgpu *g, gpuos_module m, const char *name, gpuos_function *out)
{
    struct gos_rep_handle r;
    int rc = module_lookup(g, GOS_MSG_FUNC_GET, m, name, out, "kernel", &r, sizeof r);
    if (!rc)
        *out = r.handle;
    return rc;
}
int gpuos_module_function(gpuos_vgpu *g, gpuos_module m, const char *name, gpuos_function *out)
{
    LOCKED(g, module_function(g, m, name, out));
}

static int module_global(gpuos_vgpu *g, gpuos_module m, const char *name, uint64_t *dptr, size_t *bytes)
{
    struct gos_rep_global r;
    int rc = module_lookup(g, GOS_MSG_MODULE_GLOBAL, m, name, dptr, "global", &r, sizeof r);
    if (!rc) {
        *dptr = r.dptr;
        if (bytes)
            *bytes = (size_t)r.bytes;
        gcl_known_add(g, r.dptr, r.bytes);
    }
    return rc;
}
int gpuos_module_global(gpuos_vgpu *g, gpuos_module m, const char *name, uint64_t *dptr, size_t *bytes)
{
    LOCKED(g, module_global(g, m, name, dptr, bytes));
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
    struct gos_msg_launch m = {.op = GOS_OP_LAUNCH, .flags = GOS_F_ASYNC, .priority = c->priority, .func = f,
                               .smem = c->shared_mem, .param_bytes = (uint32_t)pb};
    int cl = c->cluster[0] || c->cluster[1] || c->cluster[2];
    for (int i = 0; i < 3; i++) {
        m.grid[i] = c->grid[i] ? c->grid[i] : 1;
        m.block[i] = c->block[i] ? c->block[i] : 1;
        m.cluster[i] = cl ? (c->cluster[i] ? c->cluster[i] : 1) : 0;
    }
    /* the fast path (issue 9.4; fastpath.c); a launch with a priority goes to the
     * scheduler, which orders a vGPU's work by it (a ring's entries run in
     * their order within the ring's grants) */
    if (gcl_ring_ok(g) && !c->priority)
        return gcl_ring_launch(g, &m, params);
    uint32_t seq = 0;
    return gcl_send_req(g, GOS_MSG_LAUNCH, &m, sizeof m, params, pb, -1, &seq);
}
int gpuos_launch(gpuos_vgpu *g, gpuos_function f, const gpuos_launch_config *cfg, const void *params,
                 size_t param_bytes)
{
    LOCKED(g, launch(g, f, cfg, params, param_bytes));
}

int gcl_sync(gpuos_vgpu *g)
{
    if (gcl_ring_ok(g))
        return gcl_ring_fence(g);
    int rc = gcl_call(g, GOS_MSG_SYNC, NULL, 0, -1, NULL, 0); /* drains the ring first */
    if (!rc && g->ring_sticky) /* an asynchronous ring entry's error */
        rc = gos_fail(g->ring_sticky, "%s", g->ring_sticky_msg);
    g->ring_sticky = 0;
    return rc;
}
int gpuos_synchronize(gpuos_vgpu *g) { LOCKED(g, gcl_sync(g)); }

void gcl_facts_from(gpuos_vgpu_facts *o, const struct gos_vgpu_rec *r)
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
    o->latency_ms = (int)r->latency_ms;
    o->mem_resident = r->mem_resident;
    o->mem_swapped = r->mem_swapped;
    o->evictions = r->evictions;
    o->restores = r->restores;
    o->swap_turns = r->swap_turns;
    o->swap_ns = r->swap_ns;
    o->copy_held_ns = r->copy_held_ns;
}

static int device_info(gpuos_vgpu *g, gpuos_device_facts *o)
{
    struct gos_rep_device_info r;
    int rc = gcl_call(g, GOS_MSG_DEVICE_INFO, NULL, 0, -1, &r, sizeof r);
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

static int device_attributes(gpuos_vgpu *g, int32_t *value, unsigned char *valid, int n)
{
    if (!value || !valid || n < 1)
        return gos_fail(GOS_EINVAL, "gpuos_device_attributes: missing argument");
    struct gos_rep_device_attrs r;
    int rc = gcl_call(g, GOS_MSG_DEVICE_ATTRS, NULL, 0, -1, &r, sizeof r);
    if (rc)
        return rc;
    for (int a = 0; a < n; a++) {
        value[a] = a < GOS_DEVICE_ATTRS_MAX ? r.value[a] : 0;
        valid[a] = a < GOS_DEVICE_ATTRS_MAX ? r.valid[a] : 0;
    }
    return GOS_OK;
}
int gpuos_device_attributes(gpuos_vgpu *g, int32_t *value, unsigned char *valid, int n)
{
    LOCKED(g, device_attributes(g, value, valid, n));
}

/* A tensor map by the daemon's device (TMAP_ENCODE): its arguments travel as
 * they are (the daemon checks them), the map comes back. */
int gpuos_tmap_encode(gpuos_vgpu *g, const gpuos_tmap_args *a, void *map)
{
    if (!a || !map)
        return gos_fail(GOS_EINVAL, "gpuos_tmap_encode: missing argument or map");
    LOCKED(g, gcl_call(g, GOS_MSG_TMAP_ENCODE, a, sizeof *a, -1, map, GPUOS_TMAP_BYTES));
}

static int vgpu_info(gpuos_vgpu *g, gpuos_vgpu_facts *o)
{
    struct gos_vgpu_rec r;
    int rc = gcl_call(g, GOS_MSG_VGPU_INFO, NULL, 0, -1, &r, sizeof r);
    if (!rc)
        gcl_facts_from(o, &r);
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
