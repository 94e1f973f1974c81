/* SPDX-License-Identifier: Apache-2.0 */
/* segtable.h: the daemon's table of shared device memory segments with System V
 * semantics (issue 10.1; paper 002 section 4.2: Gdev's cuShmGet / cuShmAt /
 * cuShmDt / cuShmCtl after shmget / shmat / shmdt / shmctl).
 *
 * Pure bookkeeping, no device and no locking (the daemon holds its lock): keys,
 * ids, owner and creator, mode bits, size, attachments, removal. What differs
 * from Gdev and follows SysV instead:
 *   - every operation checks permissions with the caller's credentials (uid,
 *     gid and supplementary groups from the socket peer): read for stat and a
 *     read-only attach, read+write for an attach, the owner's or creator's uid
 *     (or an administrator: root) for set and remove; Gdev let anyone destroy;
 *   - remove marks the segment: its key is free at once (a new get with it
 *     creates another segment), it can no longer be attached (Linux would still
 *     allow that; POSIX leaves it open, we refuse with EIDRM), and it is
 *     destroyed when the last attachment goes;
 *   - ids are slot + sequence * GOS_SHM_SLOTS, so a stale id never names a later
 *     segment in the same slot.
 * Every failure returns a GOS_E* code with a one-line message and leaves the
 * SysV errno it corresponds to in t->err (EEXIST, ENOENT, EACCES, EPERM, EINVAL,
 * EIDRM, ENOSPC), which the protocol carries to the client.
 *
 * Segments are charged to the creating client's vGPU (vgpu); the daemon checks
 * that vGPU's memory share before creating (gos_shm_charged sums a vGPU's). */
#ifndef GOS_VMEM_SEGTABLE_H
#define GOS_VMEM_SEGTABLE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define GOS_SHM_SLOTS 256
#define GOS_SHM_PRIVATE 0       /* key: always a new segment (IPC_PRIVATE) */
#define GOS_SHM_CREAT 01000     /* flags, as IPC_CREAT */
#define GOS_SHM_EXCL 02000      /* with CREAT: fail if the key exists (IPC_EXCL) */
#define GOS_SHM_MODE 0777       /* permission bits in flags */
#define GOS_SHM_RDONLY 010000   /* attach flag, as SHM_RDONLY */
#define GOS_SHM_MAX_GROUPS 256 /* supplementary groups looked at */

/* Who asks: from SO_PEERCRED and SO_PEERGROUPS (the kernel's, never the client's word). */
typedef struct {
    uid_t uid;
    gid_t gid;
    pid_t pid;
    int n_groups;
    gid_t groups[GOS_SHM_MAX_GROUPS];
    int admin; /* root: may stat, set and remove any segment, attach any */
    int vgpu;  /* charged for what it creates */
} gos_shm_cred;

/* A segment as stat shows it (shmid_ds). */
typedef struct {
    int id;
    int32_t key;
    uid_t uid, cuid;
    gid_t gid, cgid;
    unsigned mode;   /* 9 permission bits */
    uint64_t bytes;  /* asked for */
    int vgpu;        /* charged */
    int nattch;
    int removed;     /* marked: destroyed at the last detach */
    pid_t cpid, lpid;
    int64_t atime, dtime, ctime; /* seconds; 0: never */
} gos_shm_ds;

typedef struct {
    int used;
    unsigned seq;
    gos_shm_ds ds;
    void *priv; /* the daemon's device state of the segment */
} gos_shm_slot;

typedef struct {
    gos_shm_slot slot[GOS_SHM_SLOTS];
    int max_segments;      /* <= GOS_SHM_SLOTS */
    uint64_t max_bytes;    /* one segment, at most (SHMMAX) */
    uint64_t max_total;    /* all segments (SHMALL, bytes) */
    uint64_t total;        /* bytes of all live segments */
    /* issue 23.4, as SHMMNI and SHMALL per tenant: live segments (removed ones
     * still attached included) one vGPU and one creator uid may hold, and the
     * bytes one creator uid may hold (0: no limit but the memory shares) */
    int max_per_vgpu, max_per_user;
    uint64_t max_bytes_per_user;
    int err;               /* SysV errno of the last failure */
    /* Called when a segment is destroyed (removed and detached), before its
     * slot is freed, so the daemon releases its memory and uncharges it. */
    void (*destroy)(void *ctx, gos_shm_slot *s);
    void *ctx;
} gos_shm_table;

void gos_shm_init(gos_shm_table *t, int max_segments, uint64_t max_bytes, uint64_t max_total);
/* The per-tenant limits (see gos_shm_table); 0 leaves one unlimited. */
void gos_shm_limits(gos_shm_table *t, int per_vgpu, int per_user, uint64_t bytes_per_user);
/* shmget: the id of key's segment, creating it with CREAT (owner and creator:
 * the caller, mode flags & 0777, charged to c->vgpu); *created = 1 when it is
 * new (the daemon then allocates its memory, or calls gos_shm_forget on
 * failure). An existing segment needs bytes <= its size (0 is fine) and the
 * access bits named in flags. */
int gos_shm_get(gos_shm_table *t, const gos_shm_cred *c, int32_t key, uint64_t bytes, int flags, int *id,
                int *created);
/* Undoes a get that created the segment (its memory could not be allocated). */
void gos_shm_forget(gos_shm_table *t, int id);
/* shmat: permission (read; read+write unless GOS_SHM_RDONLY), then one more
 * attachment; *s is the segment's slot (priv for the device state). */
int gos_shm_attach(gos_shm_table *t, const gos_shm_cred *c, int id, int flags, gos_shm_slot **s);
/* shmdt: one attachment less (the daemon tracks who holds which); destroys a
 * removed segment at its last. Needs no permission. */
int gos_shm_detach(gos_shm_table *t, int id, pid_t pid);
/* shmctl IPC_STAT: needs read permission. */
int gos_shm_stat(gos_shm_table *t, const gos_shm_cred *c, int id, gos_shm_ds *out);
/* shmctl IPC_SET: owner uid, gid and the 9 mode bits; owner, creator or admin. */
int gos_shm_set(gos_shm_table *t, const gos_shm_cred *c, int id, uid_t uid, gid_t gid, unsigned mode);
/* shmctl IPC_RMID: owner, creator or admin; destroyed now when unattached. */
int gos_shm_remove(gos_shm_table *t, const gos_shm_cred *c, int id);
/* The slot of a live id (NULL: none), no permission check (daemon internal). */
gos_shm_slot *gos_shm_lookup(gos_shm_table *t, int id);
/* Every live segment (removed ones that are still attached included), in slot
 * order; returns how many were written (at most max). */
int gos_shm_list(const gos_shm_table *t, gos_shm_ds *out, int max);
/* Bytes of live segments charged to vgpu. */
uint64_t gos_shm_charged(const gos_shm_table *t, int vgpu);
/* Destroys every segment (daemon shutdown), calling destroy for each. */
void gos_shm_clear(gos_shm_table *t);
/* "rw-r-----" for mode bits. */
void gos_shm_mode_str(unsigned mode, char out[10]);

/* `gpuos shm list`: segments as `ipcs -m` shows them (key in hex, id, owner,
 * mode, bytes, attachments, status "dest" when removed), plus the vGPU
 * charged (its name from vgpu_names, n_names of them; "-" when out of range). */
void gos_shm_print(FILE *f, const gos_shm_ds *ds, int n, const char *const *vgpu_names, int n_names);
/* The same as JSON (schema gpuos.shm-list/1): {"schema", "segments": [{"key",
 * "id", "uid", "gid", "cuid", "cgid", "mode", "bytes", "nattch", "removed",
 * "vgpu", "cpid", "lpid"}]}; a new reference, NULL when out of memory. */
json_t *gos_shm_json(const gos_shm_ds *ds, int n, const char *const *vgpu_names, int n_names);

#endif
