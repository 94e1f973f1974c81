/* SPDX-License-Identifier: Apache-2.0 */
/* exec_ops.c: the checked wrappers of device/exec_ops.h (pillar 3): GOS_EUNSUPPORTED
 * with one line when the backend lacks the operation, GOS_EINVAL for a missing
 * output or argument. Ranges of device pointers are the daemon's business (it
 * checks every range against its allocation table before calling here). */
#include "device/exec_ops.h"

#include "common/status.h"
#include "device/info.h"
#include "gpuos/gpuos.h"

#include <stdlib.h>
#include <string.h>

/* gpuos_device_attributes' clusters table is the device layer's (device/info.h) */
_Static_assert(GPUOS_ATTR_CLUSTERS == GOS_ATTR_CLUSTERS && GPUOS_ATTR_CLUSTERS_MAX == GOS_ATTR_CLUSTERS_MAX,
               "public and internal cluster-table numbers differ");

#define EXEC(d) ((d)->ops->exec)
#define HAS(d, op) (EXEC(d) && EXEC(d)->op)
#define NEED(d, op, what)                                                                        \
    do {                                                                                         \
        if (!HAS(d, op))                                                                         \
            return gos_dev_missing(d, what);                                                     \
    } while (0)
#define NONNULL(p, what)                                                                         \
    do {                                                                                         \
        if (!(p))                                                                                \
            return gos_fail(GOS_EINVAL, "%s: no %s given", __func__, what);                     \
    } while (0)

int gos_exec_init(gos_device *d)
{
    NEED(d, init, "execution (no exec primitives)");
    return EXEC(d)->init(d);
}

int gos_exec_mem_alloc(gos_device *d, uint64_t bytes, uint64_t *dptr)
{
    NEED(d, mem_alloc, "device allocations");
    NONNULL(dptr, "result pointer");
    return EXEC(d)->mem_alloc(d, bytes, dptr);
}

int gos_exec_mem_free(gos_device *d, uint64_t dptr)
{
    NEED(d, mem_free, "device allocations");
    return EXEC(d)->mem_free(d, dptr);
}

int gos_exec_mem_info(gos_device *d, uint64_t *free_b, uint64_t *total_b)
{
    NEED(d, mem_info, "memory information");
    NONNULL(free_b && total_b, "result pointer");
    return EXEC(d)->mem_info(d, free_b, total_b);
}

int gos_exec_host_register(gos_device *d, void *p, size_t bytes)
{
    NEED(d, host_register, "page-locking host memory");
    NONNULL(p, "host memory");
    return EXEC(d)->host_register(d, p, bytes);
}

int gos_exec_host_unregister(gos_device *d, void *p)
{
    NEED(d, host_unregister, "page-locking host memory");
    NONNULL(p, "host memory");
    return EXEC(d)->host_unregister(d, p);
}

int gos_exec_host_device_ptr(gos_device *d, void *p, uint64_t *dptr)
{
    NEED(d, host_device_ptr, "mapped host memory");
    NONNULL(p, "host memory");
    NONNULL(dptr, "result pointer");
    return EXEC(d)->host_device_ptr(d, p, dptr);
}

int gos_exec_host_alloc(gos_device *d, size_t bytes, void **p)
{
    NEED(d, host_alloc, "pinned host memory");
    NONNULL(p, "result pointer");
    return EXEC(d)->host_alloc(d, bytes, p);
}

int gos_exec_host_free(gos_device *d, void *p)
{
    NEED(d, host_free, "pinned host memory");
    return EXEC(d)->host_free(d, p);
}

int gos_exec_stream_create(gos_device *d, void **stream)
{
    NEED(d, stream_create, "streams");
    NONNULL(stream, "result pointer");
    return EXEC(d)->stream_create(d, stream);
}

int gos_exec_stream_create_prio(gos_device *d, int prio, void **stream)
{
    if (!prio)
        return gos_exec_stream_create(d, stream);
    NEED(d, stream_create_prio, "stream priorities");
    NONNULL(stream, "result pointer");
    return EXEC(d)->stream_create_prio(d, prio, stream);
}

int gos_exec_stream_destroy(gos_device *d, void *stream)
{
    NEED(d, stream_destroy, "streams");
    return EXEC(d)->stream_destroy(d, stream);
}

int gos_exec_stream_sync(gos_device *d, void *stream)
{
    NEED(d, stream_sync, "streams");
    return EXEC(d)->stream_sync(d, stream);
}

int gos_exec_copy_htod(gos_device *d, uint64_t dst, const void *src, size_t n, void *stream)
{
    NEED(d, copy_htod, "host-to-device copies");
    NONNULL(src || !n, "source");
    return EXEC(d)->copy_htod(d, dst, src, n, stream);
}

int gos_exec_copy_dtoh(gos_device *d, void *dst, uint64_t src, size_t n, void *stream)
{
    NEED(d, copy_dtoh, "device-to-host copies");
    NONNULL(dst || !n, "destination");
    return EXEC(d)->copy_dtoh(d, dst, src, n, stream);
}

int gos_exec_copy_dtod(gos_device *d, uint64_t dst, uint64_t src, size_t n, void *stream)
{
    NEED(d, copy_dtod, "device-to-device copies");
    return EXEC(d)->copy_dtod(d, dst, src, n, stream);
}

int gos_exec_copy_htod_sync(gos_device *d, uint64_t dst, const void *src, size_t n)
{
    NEED(d, copy_htod_sync, "synchronous copies");
    NONNULL(src || !n, "source");
    return EXEC(d)->copy_htod_sync(d, dst, src, n);
}

int gos_exec_copy_dtoh_sync(gos_device *d, void *dst, uint64_t src, size_t n)
{
    NEED(d, copy_dtoh_sync, "synchronous copies");
    NONNULL(dst || !n, "destination");
    return EXEC(d)->copy_dtoh_sync(d, dst, src, n);
}

int gos_exec_module_load(gos_device *d, const void *image, size_t bytes, const char *name, void **mod)
{
    NEED(d, module_load, "modules");
    NONNULL(mod, "result pointer");
    NONNULL(image || name, "image or built-in module name");
    return EXEC(d)->module_load(d, image, bytes, name, mod);
}

int gos_exec_module_load_within(gos_device *d, const void *image, size_t bytes, const char *name, uint64_t limit,
                                void **mod, uint64_t *need)
{
    NEED(d, module_load, "modules");
    NONNULL(mod && need, "result pointer");
    NONNULL(image || name, "image or built-in module name");
    *need = 0;
    if (!image || !HAS(d, module_bytes))
        return EXEC(d)->module_load(d, image, bytes, name, mod);
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy)
        return gos_fail(GOS_ENOMEM, "out of host memory for a module image of %zu bytes", bytes);
    memcpy(copy, image, bytes);
    int rc = EXEC(d)->module_bytes(d, copy, bytes, need);
    if (!rc && *need > limit)
        rc = gos_fail(GOS_EBUSY, "the module's globals and constants take %llu bytes of device memory, more than "
                                 "the %llu left of the memory share", (unsigned long long)*need,
                      (unsigned long long)limit);
    if (!rc)
        rc = EXEC(d)->module_load(d, copy, bytes, name, mod);
    free(copy);
    return rc;
}

int gos_exec_module_unload(gos_device *d, void *mod)
{
    NEED(d, module_unload, "modules");
    NONNULL(mod, "module");
    return EXEC(d)->module_unload(d, mod);
}

int gos_exec_function(gos_device *d, void *mod, const char *name, void **fn)
{
    NEED(d, function, "modules");
    NONNULL(mod && name && fn, "module, name or result pointer");
    return EXEC(d)->function(d, mod, name, fn);
}

int gos_exec_module_global(gos_device *d, void *mod, const char *name, uint64_t *dptr, uint64_t *bytes)
{
    NEED(d, module_global, "module globals");
    NONNULL(mod && name && dptr && bytes, "module, name or result pointer");
    return EXEC(d)->module_global(d, mod, name, dptr, bytes);
}

int gos_exec_launch(gos_device *d, void *fn, const struct gos_launch_cfg *cfg, void *stream)
{
    NEED(d, launch, "kernel launches");
    NONNULL(fn && cfg, "function or launch configuration");
    if (cfg->param_bytes && !cfg->params)
        return gos_fail(GOS_EINVAL, "%zu parameter bytes but no parameters", cfg->param_bytes);
    return EXEC(d)->launch(d, fn, cfg, stream);
}

int gos_exec_event_create(gos_device *d, void **ev)
{
    NEED(d, event_create, "events");
    NONNULL(ev, "result pointer");
    return EXEC(d)->event_create(d, ev);
}

int gos_exec_event_destroy(gos_device *d, void *ev)
{
    NEED(d, event_destroy, "events");
    return EXEC(d)->event_destroy(d, ev);
}

int gos_exec_engine_new(gos_device *d, int prio, void **stream, void *ev[2])
{
    int rc = gos_exec_stream_create_prio(d, prio, stream);
    if (!rc)
        rc = gos_exec_event_create(d, &ev[0]);
    if (!rc)
        rc = gos_exec_event_create(d, &ev[1]);
    return rc;
}

void gos_exec_engine_free(gos_device *d, void *stream, void *ev[2])
{
    for (int i = 0; i < 2; i++)
        if (ev[i])
            gos_exec_event_destroy(d, ev[i]);
    if (stream)
        gos_exec_stream_destroy(d, stream);
}

int gos_exec_event_record(gos_device *d, void *ev, void *stream)
{
    NEED(d, event_record, "events");
    NONNULL(ev, "event");
    return EXEC(d)->event_record(d, ev, stream);
}

int gos_exec_event_sync(gos_device *d, void *ev)
{
    NEED(d, event_sync, "events");
    NONNULL(ev, "event");
    return EXEC(d)->event_sync(d, ev);
}

int gos_exec_event_elapsed_ns(gos_device *d, void *start, void *end, uint64_t *ns)
{
    NEED(d, event_elapsed_ns, "events");
    NONNULL(start && end && ns, "event or result pointer");
    return EXEC(d)->event_elapsed_ns(d, start, end, ns);
}

int gos_exec_launch_ranges(gos_device *d, void *fn, const struct gos_launch_cfg *cfg, struct gos_dev_range *r,
                           int *n)
{
    NONNULL(n && r && cfg, "result pointer or configuration");
    *n = -1;
    if (!HAS(d, launch_ranges))
        return GOS_OK; /* nothing known: the daemon cannot check pointers it does not know */
    return EXEC(d)->launch_ranges(d, fn, cfg, r, n);
}

void gos_exec_abandon(gos_device *d)
{
    if (d && d->ops && HAS(d, abandon))
        EXEC(d)->abandon(d);
}

int gos_exec_device_attributes(gos_device *d, int32_t *value, uint8_t *valid, int n)
{
    if (!d || !value || !valid || n < 1)
        return gos_fail(GOS_EINVAL, "device_attributes: missing argument");
    if (!d->ops->exec || !d->ops->exec->device_attributes)
        return gos_dev_missing(d, "device attributes");
    return d->ops->exec->device_attributes(d, value, valid, n);
}

int gos_exec_tmap_encode(gos_device *d, const gpuos_tmap_args *a, void *map)
{
    NEED(d, tmap_encode, "tensor maps");
    NONNULL(a && map, "tensor map arguments or result");
    if (a->kind < GPUOS_TMAP_TILED || a->kind > GPUOS_TMAP_REPLACE ||
        (a->kind != GPUOS_TMAP_REPLACE && (a->rank < 1 || a->rank > GPUOS_TMAP_RANK_MAX)))
        return gos_fail(GOS_EINVAL, "tensor map kind %u, rank %u", (unsigned)a->kind, (unsigned)a->rank);
    return EXEC(d)->tmap_encode(d, a, map);
}
