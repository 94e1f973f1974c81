/* SPDX-License-Identifier: Apache-2.0 */
/* segtable.c: the SysV-semantics segment table (segtable.h). */
#include "vmem/segtable.h"

#include "common/status.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static int64_t now_s(void) { return (int64_t)time(NULL); }

static int fail(gos_shm_table *t, int err, int code, const char *what, int id)
{
    t->err = err;
    return gos_fail(code, "shared segment %d: %s", id, what);
}

void gos_shm_init(gos_shm_table *t, int max_segments, uint64_t max_bytes, uint64_t max_total)
{
    memset(t, 0, sizeof *t);
    t->max_segments = max_segments > 0 && max_segments <= GOS_SHM_SLOTS ? max_segments : GOS_SHM_SLOTS;
    t->max_bytes = max_bytes ? max_bytes : UINT64_MAX;
    t->max_total = max_total ? max_total : UINT64_MAX;
    gos_shm_limits(t, 0, 0, 0);
}

void gos_shm_limits(gos_shm_table *t, int per_vgpu, int per_user, uint64_t bytes_per_user)
{
    t->max_per_vgpu = per_vgpu > 0 ? per_vgpu : GOS_SHM_SLOTS;
    t->max_per_user = per_user > 0 ? per_user : GOS_SHM_SLOTS;
    t->max_bytes_per_user = bytes_per_user ? bytes_per_user : UINT64_MAX;
}

gos_shm_slot *gos_shm_lookup(gos_shm_table *t, int id)
{
    if (id < 0)
        return NULL;
    gos_shm_slot *s = &t->slot[id % GOS_SHM_SLOTS];
    return s->used && s->ds.id == id ? s : NULL;
}

static int in_group(const gos_shm_cred *c, gid_t g)
{
    if (c->gid == g)
        return 1;
    for (int i = 0; i < c->n_groups && i < GOS_SHM_MAX_GROUPS; i++)
        if (c->groups[i] == g)
            return 1;
    return 0;
}

/* Linux's ipcperms: the owner's or creator's class, else the group's, else
 * others'; every requested bit must be granted unless the caller is admin. */
static int perms_ok(const gos_shm_ds *ds, const gos_shm_cred *c, unsigned want /* 04 r, 02 w */)
{
    if (c->admin)
        return 1;
    unsigned granted = ds->mode;
    if (c->uid == ds->uid || c->uid == ds->cuid)
        granted >>= 6;
    else if (in_group(c, ds->gid) || in_group(c, ds->cgid))
        granted >>= 3;
    return (want & ~granted & 07) == 0;
}

static int owner_ok(const gos_shm_ds *ds, const gos_shm_cred *c)
{
    return c->admin || c->uid == ds->uid || c->uid == ds->cuid;
}

static void destroy(gos_shm_table *t, gos_shm_slot *s)
{
    if (t->destroy)
        t->destroy(t->ctx, s);
    t->total -= s->ds.bytes;
    s->used = 0;
    s->priv = NULL;
    s->seq++;
}

int gos_shm_get(gos_shm_table *t, const gos_shm_cred *c, int32_t key, uint64_t bytes, int flags, int *id,
                int *created)
{
    *created = 0;
    t->err = 0;
    if (flags & ~(GOS_SHM_CREAT | GOS_SHM_EXCL | GOS_SHM_MODE)) {
        t->err = EINVAL;
        return gos_fail(GOS_EINVAL, "shared segment: unknown flags 0%o", (unsigned)flags);
    }
    if (key != GOS_SHM_PRIVATE)
        for (int i = 0; i < GOS_SHM_SLOTS; i++) {
            gos_shm_slot *s = &t->slot[i];
            if (!s->used || s->ds.removed || s->ds.key != key)
                continue;
            if ((flags & GOS_SHM_CREAT) && (flags & GOS_SHM_EXCL))
                return fail(t, EEXIST, GOS_EBUSY, "the key exists (exclusive create)", s->ds.id);
            /* Access bits named in flags: as shmget, each class's r/w bits. */
            unsigned m = (unsigned)flags & GOS_SHM_MODE, want = ((m >> 6) | (m >> 3) | m) & 06;
            if (!perms_ok(&s->ds, c, want))
                return fail(t, EACCES, GOS_EPERM, "permission denied", s->ds.id);
            if (bytes > s->ds.bytes)
                return fail(t, EINVAL, GOS_EINVAL, "larger than the existing segment", s->ds.id);
            *id = s->ds.id;
            return GOS_OK;
        }
    if (!(flags & GOS_SHM_CREAT) && key != GOS_SHM_PRIVATE) {
        t->err = ENOENT;
        return gos_fail(GOS_EINVAL, "no shared segment with key %d (create it with CREAT)", (int)key);
    }
    if (bytes == 0 || bytes > t->max_bytes) {
        t->err = EINVAL;
        return gos_fail(GOS_EINVAL, "shared segment of %llu bytes: outside 1..%llu", (unsigned long long)bytes,
                        (unsigned long long)t->max_bytes);
    }
    if (bytes > t->max_total - t->total) {
        t->err = ENOSPC;
        return gos_fail(GOS_ELIMIT, "shared segments: %llu bytes more would pass the limit of %llu",
                        (unsigned long long)bytes, (unsigned long long)t->max_total);
    }
    int n = 0, free_slot = -1, of_vgpu = 0, of_user = 0;
    uint64_t user_bytes = 0;
    for (int i = 0; i < GOS_SHM_SLOTS; i++) {
        const gos_shm_slot *s = &t->slot[i];
        n += s->used;
        if (!s->used && free_slot < 0)
            free_slot = i;
        if (s->used && s->ds.vgpu == c->vgpu)
            of_vgpu++;
        if (s->used && s->ds.cuid == c->uid) {
            of_user++;
            user_bytes += s->ds.bytes;
        }
    }
    /* one tenant cannot take the table from the others (issue 23.4) */
    if (of_vgpu >= t->max_per_vgpu) {
        t->err = ENOSPC;
        return gos_fail(GOS_ELIMIT, "shared segments: this vGPU holds %d, its limit (shm_segments_per_vgpu; removed "
                                    "ones count until their last detach)", of_vgpu);
    }
    if (of_user >= t->max_per_user) {
        t->err = ENOSPC;
        return gos_fail(GOS_ELIMIT, "shared segments: uid %u created %d, its limit (shm_segments_per_user)",
                        (unsigned)c->uid, of_user);
    }
    if (bytes > t->max_bytes_per_user - (user_bytes < t->max_bytes_per_user ? user_bytes : t->max_bytes_per_user)) {
        t->err = ENOSPC;
        return gos_fail(GOS_ELIMIT, "shared segments: uid %u holds %llu bytes, %llu more would pass its limit of %llu "
                                    "(shm_bytes_per_user)", (unsigned)c->uid, (unsigned long long)user_bytes,
                        (unsigned long long)bytes, (unsigned long long)t->max_bytes_per_user);
    }
    if (n >= t->max_segments || free_slot < 0) {
        t->err = ENOSPC;
        return gos_fail(GOS_ELIMIT, "shared segments: the limit of %d segments is reached", t->max_segments);
    }
    gos_shm_slot *s = &t->slot[free_slot];
    unsigned seq = s->seq % (unsigned)(INT32_MAX / GOS_SHM_SLOTS);
    s->used = 1;
    s->priv = NULL;
    memset(&s->ds, 0, sizeof s->ds);
    s->ds.id = (int)(seq * GOS_SHM_SLOTS + (unsigned)free_slot);
    s->ds.key = key;
    s->ds.uid = s->ds.cuid = c->uid;
    s->ds.gid = s->ds.cgid = c->gid;
    s->ds.mode = (unsigned)flags & GOS_SHM_MODE;
    s->ds.bytes = bytes;
    s->ds.vgpu = c->vgpu;
    s->ds.cpid = c->pid;
    s->ds.ctime = now_s();
    t->total += bytes;
    *id = s->ds.id;
    *created = 1;
    return GOS_OK;
}

void gos_shm_forget(gos_shm_table *t, int id)
{
    gos_shm_slot *s = gos_shm_lookup(t, id);
    if (!s)
        return;
    t->total -= s->ds.bytes;
    s->used = 0;
    s->priv = NULL;
    s->seq++;
}

int gos_shm_attach(gos_shm_table *t, const gos_shm_cred *c, int id, int flags, gos_shm_slot **out)
{
    t->err = 0;
    gos_shm_slot *s = gos_shm_lookup(t, id);
    if (!s)
        return fail(t, EINVAL, GOS_EINVAL, "no such segment", id);
    if (flags & ~GOS_SHM_RDONLY)
        return fail(t, EINVAL, GOS_EINVAL, "unknown attach flags", id);
    if (s->ds.removed)
        return fail(t, EIDRM, GOS_EINVAL, "removed (waiting for its last detach)", id);
    if (!perms_ok(&s->ds, c, (flags & GOS_SHM_RDONLY) ? 04 : 06))
        return fail(t, EACCES, GOS_EPERM, "permission denied", id);
    s->ds.nattch++;
    s->ds.lpid = c->pid;
    s->ds.atime = now_s();
    *out = s;
    return GOS_OK;
}

int gos_shm_detach(gos_shm_table *t, int id, pid_t pid)
{
    t->err = 0;
    gos_shm_slot *s = gos_shm_lookup(t, id);
    if (!s || s->ds.nattch <= 0)
        return fail(t, EINVAL, GOS_EINVAL, "not attached", id);
    s->ds.nattch--;
    s->ds.lpid = pid;
    s->ds.dtime = now_s();
    if (s->ds.removed && s->ds.nattch == 0)
        destroy(t, s);
    return GOS_OK;
}

int gos_shm_stat(gos_shm_table *t, const gos_shm_cred *c, int id, gos_shm_ds *out)
{
    t->err = 0;
    gos_shm_slot *s = gos_shm_lookup(t, id);
    if (!s)
        return fail(t, EINVAL, GOS_EINVAL, "no such segment", id);
    if (!perms_ok(&s->ds, c, 04))
        return fail(t, EACCES, GOS_EPERM, "permission denied", id);
    *out = s->ds;
    return GOS_OK;
}

int gos_shm_set(gos_shm_table *t, const gos_shm_cred *c, int id, uid_t uid, gid_t gid, unsigned mode)
{
    t->err = 0;
    gos_shm_slot *s = gos_shm_lookup(t, id);
    if (!s)
        return fail(t, EINVAL, GOS_EINVAL, "no such segment", id);
    if (!owner_ok(&s->ds, c))
        return fail(t, EPERM, GOS_EPERM, "only its owner, its creator or root may change it", id);
    if (mode & ~GOS_SHM_MODE)
        return fail(t, EINVAL, GOS_EINVAL, "mode has bits beyond 0777", id);
    s->ds.uid = uid;
    s->ds.gid = gid;
    s->ds.mode = mode;
    s->ds.ctime = now_s();
    return GOS_OK;
}

int gos_shm_remove(gos_shm_table *t, const gos_shm_cred *c, int id)
{
    t->err = 0;
    gos_shm_slot *s = gos_shm_lookup(t, id);
    if (!s)
        return fail(t, EINVAL, GOS_EINVAL, "no such segment", id);
    if (!owner_ok(&s->ds, c))
        return fail(t, EPERM, GOS_EPERM, "only its owner, its creator or root may remove it", id);
    s->ds.removed = 1;
    s->ds.ctime = now_s();
    if (s->ds.nattch == 0)
        destroy(t, s);
    return GOS_OK;
}

int gos_shm_list(const gos_shm_table *t, gos_shm_ds *out, int max)
{
    int n = 0;
    for (int i = 0; i < GOS_SHM_SLOTS && n < max; i++)
        if (t->slot[i].used)
            out[n++] = t->slot[i].ds;
    return n;
}

uint64_t gos_shm_charged(const gos_shm_table *t, int vgpu)
{
    uint64_t b = 0;
    for (int i = 0; i < GOS_SHM_SLOTS; i++)
        if (t->slot[i].used && t->slot[i].ds.vgpu == vgpu)
            b += t->slot[i].ds.bytes;
    return b;
}

void gos_shm_clear(gos_shm_table *t)
{
    for (int i = 0; i < GOS_SHM_SLOTS; i++)
        if (t->slot[i].used)
            destroy(t, &t->slot[i]);
}

void gos_shm_mode_str(unsigned mode, char out[10])
{
    const char *rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; i++)
        out[i] = (mode >> (8 - i)) & 1 ? rwx[i] : '-';
    out[9] = 0;
}

static const char *vname(int v, const char *const *names, int n) { return v >= 0 && v < n && names[v] ? names[v] : "-"; }

void gos_shm_print(FILE *f, const gos_shm_ds *ds, int n, const char *const *names, int n_names)
{
    fprintf(f, "%-10s %-10s %-8s %-10s %-14s %-6s %-6s %s\n", "key", "shmid", "owner", "perms", "bytes", "nattch",
            "status", "vgpu");
    for (int i = 0; i < n; i++) {
        char m[10];
        gos_shm_mode_str(ds[i].mode, m);
        fprintf(f, "0x%08x %-10d %-8u %-10s %-14llu %-6d %-6s %s\n", (unsigned)ds[i].key, ds[i].id,
                (unsigned)ds[i].uid, m, (unsigned long long)ds[i].bytes, ds[i].nattch, ds[i].removed ? "dest" : "",
                vname(ds[i].vgpu, names, n_names));
    }
}

json_t *gos_shm_json(const gos_shm_ds *ds, int n, const char *const *names, int n_names)
{
    json_t *arr = json_array(), *root = json_object();
    if (!arr || !root) {
        json_decref(arr);
        json_decref(root);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        char mode[8];
        snprintf(mode, sizeof mode, "%04o", ds[i].mode);
        json_t *o = json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:s, s:I, s:i, s:b, s:s, s:I, s:I}", "key",
                              (int)ds[i].key, "id", ds[i].id, "uid", (json_int_t)ds[i].uid, "gid",
                              (json_int_t)ds[i].gid, "cuid", (json_int_t)ds[i].cuid, "cgid", (json_int_t)ds[i].cgid,
                              "mode", mode, "bytes", (json_int_t)ds[i].bytes, "nattch", ds[i].nattch, "removed",
                              ds[i].removed, "vgpu", vname(ds[i].vgpu, names, n_names), "cpid", (json_int_t)ds[i].cpid,
                              "lpid", (json_int_t)ds[i].lpid);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            json_decref(root);
            return NULL;
        }
    }
    json_object_set_new(root, "schema", json_string("gpuos.shm-list/1"));
    json_object_set_new(root, "segments", arr);
    return root;
}
