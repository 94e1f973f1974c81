/* SPDX-License-Identifier: Apache-2.0 */
/* shm_api.c: shared device memory in libgpuos (issue 10; gpuos.h, docs/readme-shm.md):
 * System V segments of the daemon, mapped into this handle's executor.
 * Process: a client program (libgpuos; the shim too). */
#include "client/client_internal.h"

#include "common/status.h"

#include <string.h>

void gcl_shm_ds_from(gpuos_shm_ds *o, const struct gos_shm_rec *r)
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
    int rc = gcl_call(g, GOS_MSG_SHM_GET, &m, sizeof m, -1, &r, sizeof r);
    if (!rc)
        *id = r.id;
    return rc;
}
int gpuos_shm_get(gpuos_vgpu *g, int key, size_t bytes, int flags, int *id)
{
    LOCKED(g, shm_get(g, key, bytes, flags, id));
}

static int shm_ctl(gpuos_vgpu *g, int id, int cmd, gpuos_shm_ds *buf);

static int shm_attach(gpuos_vgpu *g, int id, int flags, gpuos_dptr *out)
{
    if (!out)
        return gos_fail(GOS_EINVAL, "gpuos_shm_attach needs an address to fill");
    if (flags & ~GPUOS_SHM_RDONLY)
        return gos_fail(GOS_EINVAL, "gpuos_shm_attach_flags: unknown flags 0%o", (unsigned)flags);
    struct gos_msg_shm_at m = {.id = id, .flags = (flags & GPUOS_SHM_RDONLY) ? GOS_SHM_F_RDONLY : 0};
    struct gos_rep_shm_at r = {0};
    int rc = gcl_call(g, GOS_MSG_SHM_AT, &m, sizeof m, -1, &r, sizeof r);
    if (!rc) {
        *out = r.dptr;
        /* its extent, so that copies inside it need no question (copies.c);
         * an attachment may always be read, so STAT is allowed */
        gpuos_shm_ds ds;
        if (!shm_ctl(g, id, GPUOS_SHM_STAT, &ds))
            gcl_known_add(g, r.dptr, ds.bytes);
    }
    return rc;
}
int gpuos_shm_attach(gpuos_vgpu *g, int id, gpuos_dptr *out) { LOCKED(g, shm_attach(g, id, 0, out)); }
int gpuos_shm_attach_flags(gpuos_vgpu *g, int id, int flags, gpuos_dptr *out)
{
    LOCKED(g, shm_attach(g, id, flags, out));
}

static int shm_detach(gpuos_vgpu *g, gpuos_dptr p)
{
    struct gos_msg_shm_dt m = {.dptr = p};
    gcl_known_del(g, p);
    return gcl_call(g, GOS_MSG_SHM_DT, &m, sizeof m, -1, NULL, 0);
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
        return gcl_call(g, GOS_MSG_SHM_CTL, &m, sizeof m, -1, NULL, 0);
    struct gos_shm_rec r;
    int rc = gcl_call(g, GOS_MSG_SHM_CTL, &m, sizeof m, -1, &r, sizeof r);
    if (!rc)
        gcl_shm_ds_from(buf, &r);
    return rc;
}
int gpuos_shm_ctl(gpuos_vgpu *g, int id, int cmd, gpuos_shm_ds *buf) { LOCKED(g, shm_ctl(g, id, cmd, buf)); }

