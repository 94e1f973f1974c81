/* SPDX-License-Identifier: Apache-2.0 */
/* shm.c: the daemon's shared device memory (issue 10; docs/readme-shm.md): the
 * System V segment table of src/vmem/segtable.c with its device side.
 *
 * A segment is one physical allocation made by the creating client's executor
 * (device/vmm_ops.h: created exportable, its descriptor sent to the daemon, the
 * executor's handle released at once). The daemon keeps that descriptor, which
 * keeps the memory alive while the segment exists, whoever attached it or left;
 * an attach sends the descriptor to the attaching client's executor, which
 * imports and maps it in its own context. With isolation = none the daemon's
 * own device does both. The segment is charged to the creating vGPU's memory
 * share from get until it is destroyed (removed, and its last attachment gone).
 *
 * Attachments live in the client's allocation table (srv_alloc.shm = id + 1),
 * so copies and built-in kernels are range-checked against them like any
 * allocation; mem_free refuses them; a client that dies (or whose executor
 * dies) is detached from every segment it held.
 *
 * All functions run with srv->lock held and drop it around executor calls.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/session.h"
#include "serve/shm.h"
#include "serve/vgpu.h"
#include "common/log.h"
#include "serve/executor.h"

#include "common/status.h"
#include "device/vmm_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct srv_seg {
    int fd;        /* the exported physical memory; -1 while being created */
    int dev;       /* device index */
    uint64_t bytes; /* rounded to 2 MB: what is charged */
};

static void seg_destroy(void *ctx, gos_shm_slot *sl)
{
    struct srv *s = ctx;
    struct srv_seg *g = sl->priv;
    if (!g)
        return;
    if (g->fd >= 0)
        close(g->fd);
    int v = sl->ds.vgpu;
    if (v >= 0 && v < s->n_vgpus)
        s->vgpus[v].mem_used -= g->bytes < s->vgpus[v].mem_used ? g->bytes : s->vgpus[v].mem_used;
    free(g);
    sl->priv = NULL;
}

void srv_shm_init(struct srv *s)
{
    gos_shm_init(&s->shm, GOS_SHM_SLOTS, 0, 0);
    s->shm.destroy = seg_destroy;
    s->shm.ctx = s;
    srv_shm_limits(s);
}

void srv_shm_limits(struct srv *s)
{
    gos_shm_limits(&s->shm, s->cfg.shm_segments_per_vgpu, s->cfg.shm_segments_per_user, s->cfg.shm_bytes_per_user);
}

void srv_shm_fini(struct srv *s) { gos_shm_clear(&s->shm); }

/* The caller's credentials: uid, gid, pid and supplementary groups as the
 * kernel reported them for the socket (issue 23.2). */
static void cred_of(struct srv_client *c, gos_shm_cred *cr)
{
    memset(cr, 0, sizeof *cr);
    cr->uid = c->uid;
    cr->gid = c->gid;
    cr->pid = c->pid;
    cr->admin = c->uid == 0;
    cr->vgpu = c->vgpu;
    cr->n_groups = srv_peer_groups(c->fd, c->pid, cr->groups, GOS_SHM_MAX_GROUPS);
}

int srv_shm_get(struct srv_client *c, const struct gos_msg_shm_get *m, struct gos_rep_shm_get *r)
{
    struct srv *s = c->srv;
    gos_shm_cred cr;
    cred_of(c, &cr);
    int id = -1, created = 0, rc = gos_shm_get(&s->shm, &cr, m->key, m->bytes, (int)m->flags, &id, &created);
    if (rc || !created) {
        r->id = id;
        return rc;
    }
    /* A new segment: charged to this vGPU, its memory made by this client's
     * executor (or the daemon's device). */
    struct srv_vgpu *v = &s->vgpus[c->vgpu];
    uint64_t bytes = gos_vmm_round(m->bytes);
    if (!bytes || v->mem_used >= v->mem_quota || bytes > v->mem_quota - v->mem_used) {
        gos_shm_forget(&s->shm, id);
        return gos_fail(GOS_EBUSY, "vGPU %s: a shared segment of %llu bytes would exceed its memory share "
                                   "(%llu of %llu bytes used)", v->cfg.name, (unsigned long long)bytes,
                        (unsigned long long)v->mem_used, (unsigned long long)v->mem_quota);
    }
    struct srv_seg *g = calloc(1, sizeof *g);
    if (!g) {
        gos_shm_forget(&s->shm, id);
        return gos_fail(GOS_ENOMEM, "daemon out of host memory");
    }
    g->fd = -1;
    g->dev = v->cfg.device;
    g->bytes = bytes;
    v->mem_used += bytes; /* reserved while the lock is dropped */
    gos_shm_lookup(&s->shm, id)->priv = g;
    pthread_mutex_unlock(&s->lock);
    int fd = -1;
    if (c->x)
        rc = srv_exec_call_fd(c->x, X_SHM_NEW, &bytes, 8, -1, NULL, 0, &fd);
    else {
        gos_device *dev = s->devs[g->dev].dev;
        uint64_t h;
        if (!(rc = gos_vmm_create(dev, bytes, &h))) {
            rc = gos_vmm_export_fd(dev, h, &fd);
            gos_vmm_release(dev, h);
        }
    }
    if (!rc && fd < 0)
        rc = gos_fail(GOS_EIO, "the executor sent no descriptor for the new segment");
    pthread_mutex_lock(&s->lock);
    gos_shm_slot *sl = gos_shm_lookup(&s->shm, id);
    if (rc) {
        v->mem_used -= bytes;
        free(g);
        if (sl)
            sl->priv = NULL;
        gos_shm_forget(&s->shm, id);
        return rc;
    }
    g->fd = fd;
    r->id = id;
    r->created = 1;
    return GOS_OK;
}

static int add_attachment(struct srv_client *c, uint64_t dptr, uint64_t bytes, int id, void *vbuf)
{
    if (srv_alloc_room(c))
        return GOS_ENOMEM;
    c->allocs[c->n_allocs++] = (struct srv_alloc){.dptr = dptr, .bytes = bytes, .shm = id + 1, .vbuf = vbuf};
    return GOS_OK;
}

int srv_shm_at(struct srv_client *c, const struct gos_msg_shm_at *m, struct gos_rep_shm_at *r)
{
    struct srv *s = c->srv;
    if (m->flags & ~(uint32_t)GOS_SHM_F_RDONLY)
        return gos_fail(GOS_EINVAL, "shared segment %d: unknown attach flags 0%o", m->id, (unsigned)m->flags);
    int ro = (m->flags & GOS_SHM_F_RDONLY) != 0;
    gos_shm_slot *sl = gos_shm_lookup(&s->shm, m->id);
    struct srv_seg *g = sl ? sl->priv : NULL;
    if (sl && (!g || g->fd < 0))
        return gos_fail(GOS_EBUSY, "shared segment %d is being created", m->id);
    if (g && g->dev != s->vgpus[c->vgpu].cfg.device)
        return gos_fail(GOS_EINVAL, "shared segment %d lives on device %d, this vGPU on device %d", m->id, g->dev,
                        s->vgpus[c->vgpu].cfg.device);
    if (c->n_allocs >= s->cfg.max_allocations)
        return gos_fail(GOS_ELIMIT, "client has %d allocations and attachments, the maximum (max_allocations)",
                        c->n_allocs);
    gos_shm_cred cr;
    cred_of(c, &cr);
    int rc = gos_shm_attach(&s->shm, &cr, m->id, ro ? GOS_SHM_RDONLY : 0, &sl); /* counted now: the segment stays */
    if (rc)
        return rc;
    int fd = g->fd;
    uint64_t bytes = g->bytes, dptr = 0;
    gos_vmm_buf *vb = NULL;
    pthread_mutex_unlock(&s->lock);
    uint64_t req[2] = {bytes, ro ? X_SHM_MAP_RDONLY : 0};
    if (c->x)
        rc = srv_exec_call(c->x, X_SHM_MAP, req, ro ? 16 : 8, fd, &dptr, 8);
    else if (!(vb = calloc(1, sizeof *vb)))
        rc = gos_fail(GOS_ENOMEM, "daemon out of host memory");
    else if (!(rc = gos_vmm_buf_attach(s->devs[g->dev].dev, fd, bytes, vb))) {
        dptr = vb->va;
        if (ro && (rc = gos_vmm_set_access(s->devs[g->dev].dev, vb->va, vb->bytes, 1)))
            gos_vmm_buf_free(s->devs[g->dev].dev, vb);
    }
    pthread_mutex_lock(&s->lock);
    /* Copies and kernels may use the size asked for, not the 2 MB rounding. */
    if (!rc && (rc = add_attachment(c, dptr, sl->ds.bytes, m->id, vb))) {
        if (vb)
            gos_vmm_buf_free(s->devs[g->dev].dev, vb);
    } else if (!rc)
        c->allocs[c->n_allocs - 1].ro = ro;
    if (rc) {
        free(vb);
        gos_shm_detach(&s->shm, m->id, c->pid);
        return rc;
    }
    r->dptr = dptr;
    return GOS_OK;
}

/* Unmaps attachment i of c (drained by the caller) and detaches it. */
static int detach_one(struct srv_client *c, int i, int unmap)
{
    struct srv *s = c->srv;
    struct srv_alloc a = c->allocs[i];
    c->allocs[i] = c->allocs[--c->n_allocs];
    int rc = GOS_OK;
    if (a.vbuf) {
        gos_vmm_buf_free(s->devs[s->vgpus[c->vgpu].cfg.device].dev, a.vbuf);
        free(a.vbuf);
    } else if (unmap && c->x && !c->x->dead) {
        pthread_mutex_unlock(&s->lock);
        rc = srv_exec_call(c->x, X_SHM_UNMAP, &a.dptr, 8, -1, NULL, 0);
        pthread_mutex_lock(&s->lock);
    }
    gos_shm_detach(&s->shm, a.shm - 1, c->pid);
    return rc;
}

int srv_shm_dt(struct srv_client *c, uint64_t dptr)
{
    for (int i = 0; i < c->n_allocs; i++)
        if (c->allocs[i].shm && c->allocs[i].dptr == dptr)
            return detach_one(c, i, 1);
    return gos_fail(GOS_EINVAL, "0x%llx is not a shared segment attached by this client", (unsigned long long)dptr);
}

void srv_shm_client_gone(struct srv_client *c)
{
    for (int i = c->n_allocs - 1; i >= 0; i--)
        if (c->allocs[i].shm)
            detach_one(c, i, 0); /* the executor's mappings went (or go) with it */
}

static void rec_of(struct srv *s, const gos_shm_ds *d, struct gos_shm_rec *r)
{
    memset(r, 0, sizeof *r);
    r->id = d->id;
    r->key = d->key;
    r->uid = (uint32_t)d->uid;
    r->gid = (uint32_t)d->gid;
    r->cuid = (uint32_t)d->cuid;
    r->cgid = (uint32_t)d->cgid;
    r->mode = d->mode;
    r->nattch = d->nattch;
    r->bytes = d->bytes;
    r->removed = (uint32_t)d->removed;
    r->cpid = d->cpid;
    r->lpid = d->lpid;
    snprintf(r->vgpu, sizeof r->vgpu, "%s", d->vgpu >= 0 && d->vgpu < s->n_vgpus ? s->vgpus[d->vgpu].cfg.name : "-");
}

int srv_shm_ctl(struct srv_client *c, const struct gos_msg_shm_ctl *m, struct gos_shm_rec *r, int *has_rec)
{
    struct srv *s = c->srv;
    gos_shm_cred cr;
    cred_of(c, &cr);
    *has_rec = 0;
    switch (m->cmd) {
    case GOS_SHM_CMD_STAT: {
        gos_shm_ds d;
        int rc = gos_shm_stat(&s->shm, &cr, m->id, &d);
        if (!rc) {
            rec_of(s, &d, r);
            *has_rec = 1;
        }
        return rc;
    }
    case GOS_SHM_CMD_SET: return gos_shm_set(&s->shm, &cr, m->id, (uid_t)m->uid, (gid_t)m->gid, m->mode);
    default: {
        gos_shm_slot *sl = gos_shm_lookup(&s->shm, m->id);
        if (sl && (!sl->priv || ((struct srv_seg *)sl->priv)->fd < 0))
            return gos_fail(GOS_EBUSY, "shared segment %d is being created", m->id);
        return gos_shm_remove(&s->shm, &cr, m->id);
    }
    }
}

/* Whether segment sl is charged to a vGPU named name: the vGPU of that name, or
 * a deleted one whose slot its segments still hold (issue 44.3). */
static int charged_to(struct srv *s, const gos_shm_slot *sl, const char *name)
{
    int v = sl->ds.vgpu;
    return v >= 0 && v < s->n_vgpus && !strcmp(s->vgpus[v].cfg.name, name);
}

int srv_shm_rm(struct srv_client *c, const struct gos_msg_admin_shm_rm *m, uint32_t *removed)
{
    struct srv *s = c->srv;
    *removed = 0;
    /* ipcrm for the operator (issue 23.4): root or the daemon's owner, whose
     * connection needs no HELLO and no vGPU */
    if (c->uid != 0 && c->uid != s->uid)
        return gos_fail(GOS_EPERM, "only root or the daemon's owner (uid %u) may remove any segment "
                                   "(owners remove their own with gpuos_shm_ctl RMID)", (unsigned)s->uid);
    int by_vgpu = m->by == GOS_SHM_RM_VGPU, named = by_vgpu && srv_vgpu_find(s, m->vgpu) >= 0;
    for (int i = 0; by_vgpu && !named && i < GOS_SHM_SLOTS; i++)
        named = s->shm.slot[i].used && charged_to(s, &s->shm.slot[i], m->vgpu);
    if (by_vgpu && !named)
        return gos_fail(GOS_EINVAL, "no vGPU named \"%s\" (nor a deleted one holding shared segments)", m->vgpu);
    gos_shm_cred cr = {.uid = c->uid, .gid = c->gid, .pid = c->pid, .admin = 1, .vgpu = -1};
    for (int i = 0; i < GOS_SHM_SLOTS; i++) {
        gos_shm_slot *sl = &s->shm.slot[i];
        if (!sl->used || sl->ds.removed || !sl->priv || ((struct srv_seg *)sl->priv)->fd < 0)
            continue; /* free, already removed, or being created */
        if ((m->by == GOS_SHM_RM_ID && sl->ds.id != m->value) || (m->by == GOS_SHM_RM_KEY && sl->ds.key != m->value) ||
            (by_vgpu && !charged_to(s, sl, m->vgpu)))
            continue;
        int id = sl->ds.id;
        if (!gos_shm_remove(&s->shm, &cr, id))
            (*removed)++;
    }
    if (!*removed && m->by == GOS_SHM_RM_VGPU)
        return gos_fail(GOS_EINVAL, "vGPU %s holds no shared segment (removed ones excepted)", m->vgpu);
    if (!*removed)
        return gos_fail(GOS_EINVAL, m->by == GOS_SHM_RM_ID ? "no shared segment with id %d" : "no shared segment with key 0x%x",
                        m->value);
    gos_log(LOG_NOTICE, "shm rm by uid %u: %u segment%s marked removed", (unsigned)c->uid, (unsigned)*removed,
            *removed == 1 ? "" : "s");
    return GOS_OK;
}

size_t srv_shm_list(struct srv_client *c, unsigned char *out)
{
    struct srv *s = c->srv;
    gos_shm_cred cr;
    cred_of(c, &cr);
    struct gos_rep_shm_list l = {0};
    for (int i = 0; i < GOS_SHM_SLOTS && l.n < GOS_SHM_LIST_MAX; i++) {
        gos_shm_slot *sl = &s->shm.slot[i];
        gos_shm_ds d;
        if (!sl->used || gos_shm_stat(&s->shm, &cr, sl->ds.id, &d))
            continue; /* as ipcs: only what the caller may read */
        struct gos_shm_rec r;
        rec_of(s, &d, &r);
        memcpy(out + sizeof l + l.n * sizeof r, &r, sizeof r);
        l.n++;
    }
    memcpy(out, &l, sizeof l);
    return sizeof l + l.n * sizeof(struct gos_shm_rec);
}

/* Its messages (issue 10.1; client.c's msg_table). SHM_DT's row drains the
 * client's work first: the device may still be using the segment. */
int srv_msg_shm_get(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_shm_get r = {0};
    int rc = srv_shm_get(c, p, &r);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

int srv_msg_shm_at(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_shm_at r = {0};
    int rc = srv_shm_at(c, p, &r);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

int srv_msg_shm_dt(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    int rc = srv_shm_dt(c, ((const struct gos_msg_shm_dt *)p)->dptr);
    return srv_reply(c, h->seq, h->type, rc, NULL, 0);
}

int srv_msg_shm_ctl(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_shm_rec r;
    int has = 0, rc = srv_shm_ctl(c, p, &r, &has);
    return srv_reply(c, h->seq, h->type, rc, has ? &r : NULL, has ? sizeof r : 0);
}

int srv_msg_admin_shm_list(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    static _Thread_local unsigned char buf[sizeof(struct gos_rep_shm_list) +
                                          GOS_SHM_LIST_MAX * sizeof(struct gos_shm_rec)];
    size_t n = srv_shm_list(c, buf);
    return srv_reply(c, h->seq, h->type, 0, buf, n);
}

int srv_msg_admin_shm_rm(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_admin_shm_rm r = {0};
    int rc = srv_shm_rm(c, p, &r.removed);
    return srv_answer(c, h, rc, &r, sizeof r);
}
