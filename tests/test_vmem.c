/* SPDX-License-Identifier: Apache-2.0 */
/* test_vmem.c: the pure logic of shared device memory and swapping (src/vmem):
 *   shm.c   System V semantics: keys, CREAT/EXCL/PRIVATE, sizes, limits; the
 *           permission classes (owner or creator, group incl. supplementary
 *           groups, others) for attach (read-only and read-write), stat, set and
 *           remove, as Linux's ipcperms decides them; remove frees the key at once
 *           and destroys at the last detach; stale ids never name a new segment;
 *           charges per vGPU;
 *   swap.c  Gdev's victim choice (lower priority first, then the smallest object
 *           at least as large as what is missing, else the largest; never the
 *           requester's vGPU, pinned or busy objects), a copy restores only the
 *           objects its ranges touch (and a copy from the device reads swapped
 *           objects from swap), a launch restores all of its client's; bounded swap
 *           space refuses before anything moves; transitions whose owner dies;
 *           and a randomized run against a byte-level model: several vGPUs whose
 *           working sets do not fit together take turns for 3000 steps, every
 *           object's bytes move between "device" and "swap" arrays as the plans
 *           say, the invariants hold after every step and every checksum matches
 *           at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/rng.h"
#include "common/status.h"
#include "vmem/segtable.h"
#include "vmem/swap_policy.h"
#include "vmem/vmmtab.h"
#include "proto/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MB (1ull << 20)

static gos_shm_cred cred(uid_t uid, gid_t gid, int vgpu)
{
    gos_shm_cred c;
    memset(&c, 0, sizeof c);
    c.uid = uid;
    c.gid = gid;
    c.pid = (pid_t)(1000 + uid);
    c.vgpu = vgpu;
    return c;
}

static int destroyed;
static void on_destroy(void *ctx, gos_shm_slot *s)
{
    destroyed++;
    assert_ptr_equal(ctx, &destroyed);
    assert_int_equal(s->ds.nattch, 0);
}

static void test_shm_get(void **st)
{
    gos_shm_table t;
    gos_shm_init(&t, 4, 64 * MB, 100 * MB);
    gos_shm_cred a = cred(1000, 100, 0);
    int id, id2, cr;
    assert_int_equal(gos_shm_get(&t, &a, 42, 8 * MB, GOS_SHM_CREAT | 0600, &id, &cr), GOS_OK);
    assert_int_equal(cr, 1);
    assert_int_equal(gos_shm_get(&t, &a, 42, 0, 0, &id2, &cr), GOS_OK); /* size 0: whatever it is */
    assert_int_equal(cr, 0);
    assert_int_equal(id2, id);
    assert_int_equal(gos_shm_get(&t, &a, 42, 4 * MB, GOS_SHM_CREAT, &id2, &cr), GOS_OK);
    assert_int_equal(id2, id);
    assert_int_equal(gos_shm_get(&t, &a, 42, 8 * MB, GOS_SHM_CREAT | GOS_SHM_EXCL | 0600, &id2, &cr), GOS_EBUSY);
    assert_int_equal(t.err, EEXIST);
    assert_int_equal(gos_shm_get(&t, &a, 42, 16 * MB, 0, &id2, &cr), GOS_EINVAL); /* larger */
    assert_int_equal(t.err, EINVAL);
    assert_int_equal(gos_shm_get(&t, &a, 43, 8 * MB, 0600, &id2, &cr), GOS_EINVAL);
    assert_int_equal(t.err, ENOENT);
    assert_int_equal(gos_shm_get(&t, &a, 44, 0, GOS_SHM_CREAT, &id2, &cr), GOS_EINVAL);
    assert_int_equal(gos_shm_get(&t, &a, 44, 65 * MB, GOS_SHM_CREAT, &id2, &cr), GOS_EINVAL);
    assert_int_equal(gos_shm_get(&t, &a, 44, 1, 0100000, &id2, &cr), GOS_EINVAL); /* unknown flag */
    /* PRIVATE: always new, CREAT or not. */
    int p1, p2;
    assert_int_equal(gos_shm_get(&t, &a, GOS_SHM_PRIVATE, MB, 0600, &p1, &cr), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a, GOS_SHM_PRIVATE, MB, 0600, &p2, &cr), GOS_OK);
    assert_int_not_equal(p1, p2);
    /* Limits: bytes (100 MB in all: 8 + 1 + 1 used) and segments (4). */
    assert_int_equal(gos_shm_get(&t, &a, 50, 64 * MB, GOS_SHM_CREAT, &id2, &cr), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a, 51, 30 * MB, GOS_SHM_CREAT, &id2, &cr), GOS_ELIMIT);
    assert_int_equal(t.err, ENOSPC);
    assert_int_equal(gos_shm_get(&t, &a, 51, MB, GOS_SHM_CREAT, &id2, &cr), GOS_ELIMIT); /* 5th segment */
    assert_int_equal(t.err, ENOSPC);
    assert_int_equal(gos_shm_charged(&t, 0), 74 * MB);
    assert_int_equal(gos_shm_charged(&t, 1), 0);
    /* forget undoes a creation (its memory could not be had). */
    gos_shm_forget(&t, id2);
    assert_int_equal(gos_shm_charged(&t, 0), 10 * MB);
    assert_null(gos_shm_lookup(&t, id2));
    char m[10];
    gos_shm_mode_str(0640, m);
    assert_string_equal(m, "rw-r-----");
}

/* Issue 23.4: one tenant cannot take the table from the others: segments per
 * vGPU and per creator uid (removed ones count until their last detach) and
 * bytes per creator uid, as SHMMNI and SHMALL per tenant. */
static void test_shm_tenant_limits(void **st)
{
    gos_shm_table t;
    gos_shm_init(&t, 0, 0, 0);
    gos_shm_limits(&t, 3, 5, 10 * MB);
    gos_shm_cred a = cred(1000, 100, 0), a2 = cred(1000, 100, 1), b = cred(2000, 200, 2);
    int id[8], cr, x;
    for (int i = 0; i < 3; i++)
        assert_int_equal(gos_shm_get(&t, &a, GOS_SHM_PRIVATE, 1, 0600, &id[i], &cr), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a, GOS_SHM_PRIVATE, 1, 0600, &x, &cr), GOS_ELIMIT); /* vGPU 0: 3 */
    assert_int_equal(t.err, ENOSPC);
    /* another vGPU of the same uid: 2 more, then the uid's 5 */
    assert_int_equal(gos_shm_get(&t, &a2, GOS_SHM_PRIVATE, 1, 0600, &id[3], &cr), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a2, GOS_SHM_PRIVATE, 1, 0600, &id[4], &cr), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a2, GOS_SHM_PRIVATE, 1, 0600, &x, &cr), GOS_ELIMIT);
    /* everyone else is unaffected */
    assert_int_equal(gos_shm_get(&t, &b, GOS_SHM_PRIVATE, 6 * MB, 0600, &id[5], &cr), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &b, GOS_SHM_PRIVATE, 5 * MB, 0600, &x, &cr), GOS_ELIMIT); /* 11 MB > 10 */
    assert_int_equal(gos_shm_get(&t, &b, GOS_SHM_PRIVATE, 4 * MB, 0600, &id[6], &cr), GOS_OK);  /* exactly 10 */
    /* a removed but attached segment still counts; its last detach frees the room */
    gos_shm_slot *s;
    assert_int_equal(gos_shm_attach(&t, &a, id[0], 0, &s), GOS_OK);
    assert_int_equal(gos_shm_remove(&t, &a, id[0]), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a, GOS_SHM_PRIVATE, 1, 0600, &x, &cr), GOS_ELIMIT);
    assert_int_equal(gos_shm_detach(&t, id[0], 1), GOS_OK);
    assert_int_equal(gos_shm_get(&t, &a, GOS_SHM_PRIVATE, 1, 0600, &x, &cr), GOS_OK);
}

static void test_shm_permissions(void **st)
{
    gos_shm_table t;
    gos_shm_init(&t, 0, 0, 0);
    gos_shm_cred owner = cred(1000, 100, 0), other = cred(2000, 200, 1), grp = cred(3000, 300, 1),
                 sup = cred(4000, 400, 1), root = cred(0, 0, 2);
    sup.n_groups = 2;
    sup.groups[0] = 7;
    sup.groups[1] = 100; /* the owner's group, as a supplementary group */
    root.admin = 1;
    grp.gid = 100;
    int id, cr;
    assert_int_equal(gos_shm_get(&t, &owner, 7, 4 * MB, GOS_SHM_CREAT | 0640, &id, &cr), GOS_OK);
    gos_shm_slot *s;
    gos_shm_ds ds;
    /* Others: nothing. */
    assert_int_equal(gos_shm_attach(&t, &other, id, 0, &s), GOS_EPERM);
    assert_int_equal(t.err, EACCES);
    assert_int_equal(gos_shm_attach(&t, &other, id, GOS_SHM_RDONLY, &s), GOS_EPERM);
    assert_int_equal(gos_shm_stat(&t, &other, id, &ds), GOS_EPERM);
    assert_int_equal(gos_shm_remove(&t, &other, id), GOS_EPERM);
    assert_int_equal(t.err, EPERM);
    assert_int_equal(gos_shm_set(&t, &other, id, 2000, 200, 0666), GOS_EPERM);
    int id2;
    assert_int_equal(gos_shm_get(&t, &other, 7, 0, 0600, &id2, &cr), GOS_EPERM); /* asks for rw */
    assert_int_equal(t.err, EACCES);
    assert_int_equal(gos_shm_get(&t, &other, 7, 0, 0, &id2, &cr), GOS_OK);      /* asks for nothing */
    /* The group (primary or supplementary): read only. */
    assert_int_equal(gos_shm_attach(&t, &grp, id, 0, &s), GOS_EPERM);
    assert_int_equal(gos_shm_attach(&t, &grp, id, GOS_SHM_RDONLY, &s), GOS_OK);
    assert_int_equal(gos_shm_attach(&t, &sup, id, GOS_SHM_RDONLY, &s), GOS_OK);
    assert_int_equal(gos_shm_stat(&t, &grp, id, &ds), GOS_OK);
    assert_int_equal(ds.nattch, 2);
    assert_int_equal(ds.uid, 1000);
    assert_int_equal(ds.mode, 0640);
    assert_int_equal(gos_shm_remove(&t, &grp, id), GOS_EPERM); /* read access is not ownership */
    /* The owner hands it to `other`; the creator keeps its rights. */
    assert_int_equal(gos_shm_set(&t, &owner, id, 2000, 200, 0600), GOS_OK);
    assert_int_equal(gos_shm_attach(&t, &other, id, 0, &s), GOS_OK);
    assert_int_equal(gos_shm_attach(&t, &owner, id, 0, &s), GOS_OK); /* creator class */
    assert_int_equal(gos_shm_attach(&t, &grp, id, GOS_SHM_RDONLY, &s), GOS_EPERM); /* group 100 no more */
    assert_int_equal(gos_shm_set(&t, &owner, id, 2000, 200, 01777), GOS_EINVAL);
    /* Root may do anything. */
    assert_int_equal(gos_shm_stat(&t, &root, id, &ds), GOS_OK);
    assert_int_equal(ds.nattch, 4);
    assert_int_equal(ds.cuid, 1000);
    assert_int_equal(ds.uid, 2000);
    assert_int_equal(gos_shm_set(&t, &root, id, 5, 5, 0), GOS_OK);
    assert_int_equal(gos_shm_attach(&t, &root, id, 0, &s), GOS_OK);
    assert_int_equal(gos_shm_detach(&t, id, root.pid), GOS_OK);
    /* Mode 0: even the owner class has no access; the creator may still remove. */
    assert_int_equal(gos_shm_attach(&t, &owner, id, GOS_SHM_RDONLY, &s), GOS_EPERM);
    assert_int_equal(gos_shm_remove(&t, &owner, id), GOS_OK);
}

static void test_shm_remove(void **st)
{
    gos_shm_table t;
    gos_shm_init(&t, 0, 0, 0);
    t.destroy = on_destroy;
    t.ctx = &destroyed;
    destroyed = 0;
    gos_shm_cred a = cred(1000, 100, 3), b = cred(1001, 100, 4);
    int id, cr;
    assert_int_equal(gos_shm_get(&t, &a, 9, 2 * MB, GOS_SHM_CREAT | 0666, &id, &cr), GOS_OK);
    gos_shm_slot *s;
    assert_int_equal(gos_shm_attach(&t, &a, id, 0, &s), GOS_OK);
    assert_int_equal(gos_shm_attach(&t, &b, id, 0, &s), GOS_OK);
    assert_int_equal(gos_shm_remove(&t, &a, id), GOS_OK);
    assert_int_equal(destroyed, 0); /* still attached twice */
    /* The key is free at once: a get makes another segment. */
    int id2;
    assert_int_equal(gos_shm_get(&t, &b, 9, MB, 0, &id2, &cr), GOS_EINVAL);
    assert_int_equal(t.err, ENOENT);
    assert_int_equal(gos_shm_get(&t, &b, 9, MB, GOS_SHM_CREAT | 0600, &id2, &cr), GOS_OK);
    assert_int_not_equal(id2, id);
    assert_int_equal(gos_shm_charged(&t, 3), 2 * MB); /* still charged until destroyed */
    assert_int_equal(gos_shm_charged(&t, 4), MB);
    /* No new attachments to a removed segment. */
    assert_int_equal(gos_shm_attach(&t, &b, id, 0, &s), GOS_EINVAL);
    assert_int_equal(t.err, EIDRM);
    gos_shm_ds list[8];
    assert_int_equal(gos_shm_list(&t, list, 8), 2);
    assert_int_equal(gos_shm_detach(&t, id, a.pid), GOS_OK);
    assert_int_equal(destroyed, 0);
    assert_int_equal(gos_shm_detach(&t, id, b.pid), GOS_OK);
    assert_int_equal(destroyed, 1);
    assert_int_equal(gos_shm_charged(&t, 3), 0);
    assert_int_equal(gos_shm_detach(&t, id, b.pid), GOS_EINVAL); /* gone */
    assert_null(gos_shm_lookup(&t, id));
    /* Its slot is reused under another id: the stale id names nothing. */
    int ids[GOS_SHM_SLOTS];
    int n = 0;
    while (n < GOS_SHM_SLOTS - 1 && !gos_shm_get(&t, &a, GOS_SHM_PRIVATE, MB, 0600, &ids[n], &cr))
        n++;
    assert_int_equal(n, GOS_SHM_SLOTS - 1);
    for (int i = 0; i < n; i++)
        assert_int_not_equal(ids[i], id);
    assert_int_equal(gos_shm_stat(&t, &a, id, &(gos_shm_ds){0}), GOS_EINVAL);
    /* Unattached: remove destroys at once; clear destroys the rest. */
    assert_int_equal(gos_shm_remove(&t, &a, ids[0]), GOS_OK);
    assert_int_equal(destroyed, 2);
    gos_shm_clear(&t);
    assert_int_equal(destroyed, 2 + n - 1 + 1);
    assert_int_equal(t.total, 0);
}

/* `gpuos shm list`: the ipcs -m columns and the JSON form. */
static void test_shm_list(void **st)
{
    gos_shm_table t;
    gos_shm_init(&t, 0, 0, 0);
    gos_shm_cred a = cred(1000, 100, 1);
    int id, cr;
    gos_shm_slot *s;
    assert_int_equal(gos_shm_get(&t, &a, 0x1234, 6 * MB, GOS_SHM_CREAT | 0640, &id, &cr), GOS_OK);
    assert_int_equal(gos_shm_attach(&t, &a, id, 0, &s), GOS_OK);
    gos_shm_ds ds[4];
    int n = gos_shm_list(&t, ds, 4);
    const char *names[] = {"alice", "bob"};
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    gos_shm_print(f, ds, n, names, 2);
    fclose(f);
    assert_non_null(strstr(buf, "key"));
    assert_non_null(strstr(buf, "0x00001234"));
    assert_non_null(strstr(buf, "rw-r-----"));
    assert_non_null(strstr(buf, "6291456"));
    assert_non_null(strstr(buf, "bob"));
    json_t *j = gos_shm_json(ds, n, names, 2);
    assert_non_null(j);
    json_t *seg = json_array_get(json_object_get(j, "segments"), 0);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "gpuos.shm-list/1");
    assert_int_equal(json_integer_value(json_object_get(seg, "key")), 0x1234);
    assert_int_equal(json_integer_value(json_object_get(seg, "nattch")), 1);
    assert_string_equal(json_string_value(json_object_get(seg, "mode")), "0640");
    assert_string_equal(json_string_value(json_object_get(seg, "vgpu")), "bob");
    json_decref(j);
}

/* ---- swap ---- */

static uint64_t add(gos_swap *s, int vgpu, uint32_t client, uint64_t va, uint64_t bytes)
{
    gos_swap_plan p;
    if (gos_swap_plan_alloc(s, vgpu, bytes, &p))
        fail_msg("plan alloc: %s", gos_last_error());
    assert_int_equal(p.n_evict, 0);
    gos_swap_begin(s, &p);
    uint64_t id;
    assert_int_equal(gos_swap_add(s, vgpu, client, va, bytes, 0, &id), GOS_OK);
    return id;
}

static void run_plan(gos_swap *s, const gos_swap_plan *p)
{
    gos_swap_begin(s, p);
    assert_int_equal(gos_swap_check(s), GOS_OK);
    assert_int_equal(p->n_steps, p->n_evict + p->n_restore);
    for (int i = 0; i < p->n_steps; i++) {
        if (p->step[i].evict)
            gos_swap_evicted(s, p->step[i].id, 1);
        else
            gos_swap_restored(s, p->step[i].id, 1);
        assert_int_equal(gos_swap_check(s), GOS_OK); /* swap space within bounds at every step */
    }
    gos_swap_end(s, p);
    assert_int_equal(s->swap_hold, 0);
}

static void test_swap_victims(void **st)
{
    gos_swap s;
    assert_int_equal(gos_swap_init(&s, 100 * MB, 200 * MB), GOS_OK);
    gos_swap_set_priority(&s, 0, 1); /* low */
    gos_swap_set_priority(&s, 1, 5); /* high */
    uint64_t lo_small = add(&s, 0, 1, 0x1000000, 10 * MB);
    uint64_t lo_big = add(&s, 0, 1, 0x2000000, 30 * MB);
    uint64_t lo_mid = add(&s, 0, 1, 0x4000000, 20 * MB);
    uint64_t hi = add(&s, 1, 2, 0x8000000, 30 * MB);
    assert_int_equal(s.on_device, 90 * MB);
    gos_swap_plan p;
    /* vGPU 2 wants 25 MB: 10 free, 15 missing: the low-priority vGPU's smallest
     * object of at least 15 MB is lo_mid (20). */
    assert_int_equal(gos_swap_plan_alloc(&s, 2, 25 * MB, &p), GOS_OK);
    assert_int_equal(p.n_evict, 1);
    assert_int_equal(p.evict[0], lo_mid);
    /* 75 MB: 65 missing; none of vGPU 0 is that large: the largest first (30),
     * then 35 missing: still none, the largest left (10)... vGPU 0 gives 60, then
     * the high-priority vGPU's 30 covers the last 5. */
    assert_int_equal(gos_swap_plan_alloc(&s, 2, 75 * MB, &p), GOS_OK);
    assert_int_equal(p.n_evict, 4);
    assert_int_equal(p.evict[0], lo_big);
    assert_int_equal(p.evict[1], lo_mid);
    assert_int_equal(p.evict[2], lo_small);
    assert_int_equal(p.evict[3], hi);
    /* Never the requester's own vGPU: vGPU 0 asking 40 MB must take hi (30) and
     * still lacks: ENOMEM, naming what was possible. */
    assert_int_equal(gos_swap_plan_alloc(&s, 0, 41 * MB, &p), GOS_ENOMEM);
    assert_non_null(strstr(gos_last_error(), "can be swapped out"));
    assert_int_equal(p.n_evict, 0);
    assert_int_equal(gos_swap_plan_alloc(&s, 0, 40 * MB, &p), GOS_OK);
    assert_int_equal(p.evict[0], hi);
    /* Busy and pinned objects are never victims. */
    gos_swap_set_busy(&s, lo_mid, 1);
    assert_int_equal(gos_swap_plan_alloc(&s, 2, 25 * MB, &p), GOS_OK);
    assert_int_equal(p.evict[0], lo_big);
    gos_swap_set_busy(&s, lo_mid, 0);
    /* Bigger than the device: refused outright. */
    assert_int_equal(gos_swap_plan_alloc(&s, 2, 101 * MB, &p), GOS_ENOMEM);
    assert_int_equal(gos_swap_check(&s), GOS_OK);
    gos_swap_free(&s);
}

static void test_swap_copy_launch(void **st)
{
    gos_swap s;
    assert_int_equal(gos_swap_init(&s, 64 * MB, 128 * MB), GOS_OK);
    uint64_t a1 = add(&s, 0, 1, 0x10000000, 16 * MB);
    uint64_t a2 = add(&s, 0, 1, 0x20000000, 16 * MB);
    uint64_t a3 = add(&s, 0, 1, 0x30000000, 16 * MB);
    gos_swap_plan p;
    /* vGPU 1 takes 48 MB: 16 are free, 32 missing; no object that large: the
     * largest (the oldest of equals: a1), then a2 is large enough. */
    assert_int_equal(gos_swap_plan_alloc(&s, 1, 48 * MB, &p), GOS_OK);
    assert_int_equal(p.n_evict, 2);
    assert_int_equal(p.evict[0], a1);
    assert_int_equal(p.evict[1], a2);
    run_plan(&s, &p);
    uint64_t b;
    assert_int_equal(gos_swap_add(&s, 1, 2, 0x40000000, 48 * MB, 0, &b), GOS_OK);
    assert_int_equal(s.vgpu[0].resident, 16 * MB);
    assert_int_equal(s.vgpu[0].swapped, 32 * MB);
    assert_int_equal(s.vgpu[1].resident, 48 * MB);
    /* A copy into a2 only: a2 comes back, b makes room. */
    struct gos_swap_range r = {0x20000000 + 100, 4096};
    assert_int_equal(gos_swap_plan_copy(&s, 0, 1, &r, 1, 0, &p), GOS_OK);
    assert_int_equal(p.n_restore, 1);
    assert_int_equal(p.restore[0], a2);
    assert_int_equal(p.n_evict, 1);
    assert_int_equal(p.evict[0], b);
    /* The same copy from the device: read from swap, nothing moves. */
    assert_int_equal(gos_swap_plan_copy(&s, 0, 1, &r, 1, 1, &p), GOS_OK);
    assert_int_equal(p.n_restore, 0);
    assert_int_equal(p.n_evict, 0);
    assert_int_equal(p.n_from_swap, 1);
    assert_int_equal(p.from_swap[0], a2);
    /* A launch of client 1 needs all three: a1 and a2 come back. */
    assert_int_equal(gos_swap_plan_launch(&s, 0, 1, &p), GOS_OK);
    assert_int_equal(p.n_restore, 2);
    assert_int_equal(p.restore_bytes, 32 * MB);
    run_plan(&s, &p);
    assert_int_equal(s.vgpu[0].resident, 48 * MB);
    assert_int_equal(s.vgpu[1].swapped, 48 * MB);
    assert_int_equal(s.vgpu[0].restores, 2);
    assert_int_equal(s.vgpu[1].evictions, 1);
    /* Nothing to do for a resident client. */
    assert_int_equal(gos_swap_plan_launch(&s, 0, 1, &p), GOS_OK);
    assert_int_equal(p.n_restore + p.n_evict, 0);
    (void)a3;
    gos_swap_free(&s);
}

static void test_swap_space_and_death(void **st)
{
    gos_swap s;
    assert_int_equal(gos_swap_init(&s, 64 * MB, 40 * MB), GOS_OK);
    uint64_t a = add(&s, 0, 1, 0x10000000, 32 * MB);
    uint64_t b = add(&s, 0, 1, 0x20000000, 32 * MB);
    gos_swap_plan p;
    /* 64 MB for vGPU 1 would swap out 64 MB into 40: refused, nothing moved. */
    assert_int_equal(gos_swap_plan_alloc(&s, 1, 64 * MB, &p), GOS_ENOMEM);
    assert_non_null(strstr(gos_last_error(), "host swap space exhausted"));
    assert_int_equal(s.on_device, 64 * MB);
    assert_int_equal(s.in_swap, 0);
    /* 32 MB fits the swap space. */
    assert_int_equal(gos_swap_plan_alloc(&s, 1, 32 * MB, &p), GOS_OK);
    assert_int_equal(p.n_evict, 1);
    gos_swap_begin(&s, &p);
    /* Its owner dies in the middle of the eviction: marked, dropped at the report. */
    uint64_t victim = p.evict[0];
    assert_int_equal(gos_swap_remove(&s, victim), 0);
    assert_int_equal(gos_swap_check(&s), GOS_OK);
    assert_int_equal(gos_swap_evicted(&s, victim, 1), 1);
    gos_swap_end(&s, &p);
    assert_null(gos_swap_find(&s, victim));
    assert_int_equal(gos_swap_check(&s), GOS_OK);
    assert_int_equal(s.in_swap, 0);
    uint64_t c;
    assert_int_equal(gos_swap_add(&s, 1, 2, 0x30000000, 32 * MB, 0, &c), GOS_OK);
    assert_int_equal(gos_swap_check(&s), GOS_OK);
    /* A failed eviction leaves the object resident and frees its swap room. */
    uint64_t other = victim == a ? b : a;
    assert_int_equal(gos_swap_plan_alloc(&s, 2, 32 * MB, &p), GOS_OK);
    gos_swap_begin(&s, &p);
    assert_int_equal(gos_swap_evicted(&s, p.evict[0], 0), 0);
    gos_swap_end(&s, &p);
    gos_swap_cancel_alloc(&s, 32 * MB);
    assert_int_equal(gos_swap_check(&s), GOS_OK);
    assert_int_equal(s.in_swap, 0);
    assert_int_equal(s.on_device, 64 * MB);
    /* Swap `other` out for real, then its owner dies during the restore. */
    assert_int_equal(gos_swap_plan_alloc(&s, 1, 32 * MB, &p), GOS_OK);
    assert_int_equal(p.evict[0], other);
    run_plan(&s, &p);
    gos_swap_cancel_alloc(&s, 32 * MB);
    assert_int_equal(gos_swap_plan_launch(&s, 0, 1, &p), GOS_OK);
    assert_int_equal(p.restore[0], other);
    gos_swap_begin(&s, &p);
    assert_int_equal(gos_swap_remove(&s, other), 0);
    for (int i = 0; i < p.n_evict; i++)
        gos_swap_evicted(&s, p.evict[i], 1);
    assert_int_equal(gos_swap_restored(&s, other, 0), 1); /* failed and dead: dropped */
    gos_swap_end(&s, &p);
    assert_int_equal(s.swap_hold, 0);
    assert_int_equal(gos_swap_check(&s), GOS_OK);
    assert_int_equal(s.vgpu[0].resident + s.vgpu[0].swapped, 0);
    assert_int_equal(gos_swap_remove(&s, other), -1);
    gos_swap_free(&s);
}

/* Randomized turns against a byte-level model. */
#define RV 3
#define RC 2 /* clients per vGPU */
#define RN 6 /* objects per client */
#define UNIT 4096ull
static int refusals;

struct model_obj {
    uint64_t id, bytes;
    uint8_t *dev, *swp; /* the device copy while resident, the swap copy while swapped */
    uint64_t sum;       /* checksum of what the client wrote last */
};

static uint64_t checksum(const uint8_t *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static struct model_obj *by_id(struct model_obj m[RV][RC][RN], uint64_t id)
{
    for (int v = 0; v < RV; v++)
        for (int c = 0; c < RC; c++)
            for (int k = 0; k < RN; k++)
                if (m[v][c][k].id == id)
                    return &m[v][c][k];
    return NULL;
}

static void apply(gos_swap *s, struct model_obj m[RV][RC][RN], const gos_swap_plan *p)
{
    gos_swap_begin(s, p);
    for (int i = 0; i < p->n_steps; i++) {
        struct model_obj *o = by_id(m, p->step[i].id);
        assert_non_null(o);
        if (p->step[i].evict) {
            assert_non_null(o->dev);
            o->swp = malloc(o->bytes);
            memcpy(o->swp, o->dev, o->bytes);
            free(o->dev);
            o->dev = NULL;
            gos_swap_evicted(s, o->id, 1);
        } else {
            assert_non_null(o->swp);
            o->dev = malloc(o->bytes);
            memcpy(o->dev, o->swp, o->bytes);
            free(o->swp);
            o->swp = NULL;
            gos_swap_restored(s, o->id, 1);
        }
        assert_int_equal(gos_swap_check(s), GOS_OK);
    }
    gos_swap_end(s, p);
}

/* A refused plan must really be impossible under the rule (victims only from
 * other vGPUs): what it needs exceeds free memory plus every other vGPU's
 * resident bytes. only: the one object a copy needs (0: all of the client's). */
static void impossible(const gos_swap *s, int v, uint32_t client, uint64_t only, uint64_t alloc)
{
    if (strstr(gos_last_error(), "host swap space exhausted")) { /* the bound: nothing moved */
        assert_true(s->in_swap <= s->swap_bytes);
        refusals++;
        return;
    }
    assert_non_null(strstr(gos_last_error(), "device memory"));
    uint64_t need = alloc, others = 0;
    for (int i = 0; i < s->n; i++) {
        const gos_swap_obj *o = &s->obj[i];
        if (o->vgpu != v && o->state == GOS_SWAP_RESIDENT)
            others += o->bytes;
        if (client && o->client == client && o->state == GOS_SWAP_SWAPPED && (!only || o->id == only))
            need += o->bytes;
    }
    assert_true(need > s->device_bytes - s->on_device + others);
    refusals++;
}

static void test_swap_random(void **st)
{
    gos_rng r;
    gos_rng_seed(&r, 20261130);
    const uint64_t device = 128 * UNIT;
    gos_swap s;
    assert_int_equal(gos_swap_init(&s, device, 80 * UNIT), GOS_OK);
    for (int v = 0; v < RV; v++)
        gos_swap_set_priority(&s, v, (int)(gos_rng_u64(&r) % 3));
    static struct model_obj m[RV][RC][RN];
    memset(m, 0, sizeof m);
    uint64_t peak_dev = 0, moved = 0;
    for (int step = 0; step < 3000; step++) {
        int v = (int)(gos_rng_u64(&r) % RV), c = (int)(gos_rng_u64(&r) % RC), k = (int)(gos_rng_u64(&r) % RN);
        uint32_t client = (uint32_t)(v * RC + c + 1);
        struct model_obj *o = &m[v][c][k];
        uint64_t va = ((uint64_t)client << 32) + (uint64_t)k * (1ull << 24);
        int what = (int)(gos_rng_u64(&r) % 10);
        gos_swap_plan p;
        if (!o->id) { /* 1..10 units: a vGPU's set up to 120 units, all three's 360 > 128 */
            uint64_t bytes = (1 + gos_rng_u64(&r) % 10) * UNIT;
            if (gos_swap_plan_alloc(&s, v, bytes, &p)) {
                impossible(&s, v, 0, 0, bytes);
                continue;
            }
            apply(&s, m, &p);
            assert_int_equal(gos_swap_add(&s, v, client, va, bytes, 0, &o->id), GOS_OK);
            o->bytes = bytes;
            o->dev = malloc(bytes);
            for (uint64_t i = 0; i < bytes; i++)
                o->dev[i] = (uint8_t)gos_rng_u64(&r);
            o->sum = checksum(o->dev, bytes);
        } else if (what < 5) { /* launch: every object of the client resident, then written */
            if (gos_swap_plan_launch(&s, v, client, &p)) {
                impossible(&s, v, client, 0, 0);
                continue;
            }
            apply(&s, m, &p);
            for (int j = 0; j < RN; j++) {
                struct model_obj *q = &m[v][c][j];
                if (!q->id)
                    continue;
                assert_non_null(q->dev); /* resident, as the plan promised */
                assert_int_equal(checksum(q->dev, q->bytes), q->sum);
                q->dev[gos_rng_u64(&r) % q->bytes] ^= (uint8_t)(1 + gos_rng_u64(&r) % 255);
                q->sum = checksum(q->dev, q->bytes);
            }
        } else if (what < 8) { /* copy into one object: only it must be resident */
            struct gos_swap_range rg = {va + UNIT / 2, UNIT};
            if (gos_swap_plan_copy(&s, v, client, &rg, 1, what == 7, &p)) {
                impossible(&s, v, client, o->id, 0);
                continue;
            }
            apply(&s, m, &p);
            if (what == 7) { /* from the device: wherever the bytes are */
                const uint8_t *src = o->dev ? o->dev : o->swp;
                assert_int_equal(p.n_from_swap, o->dev ? 0 : 1);
                assert_int_equal(checksum(src, o->bytes), o->sum);
            } else {
                assert_non_null(o->dev);
                o->dev[UNIT / 2] ^= 0x5a;
                o->sum = checksum(o->dev, o->bytes);
            }
        } else { /* free */
            assert_int_equal(gos_swap_remove(&s, o->id), 1);
            free(o->dev);
            free(o->swp);
            memset(o, 0, sizeof *o);
        }
        assert_int_equal(gos_swap_check(&s), GOS_OK);
        peak_dev = s.on_device > peak_dev ? s.on_device : peak_dev;
        assert_true(s.on_device <= device);
    }
    for (int v = 0; v < RV; v++) {
        moved += s.vgpu[v].evictions;
        for (int c = 0; c < RC; c++)
            for (int k = 0; k < RN; k++) {
                struct model_obj *o = &m[v][c][k];
                if (!o->id)
                    continue;
                assert_int_equal(checksum(o->dev ? o->dev : o->swp, o->bytes), o->sum);
                free(o->dev);
                free(o->swp);
            }
    }
    assert_true(moved > 100); /* the working sets really did not fit together */
    print_message("%d refusals, %llu evictions\n", refusals, (unsigned long long)moved);
    assert_true(refusals > 0 && refusals < 300); /* the bounds were reached, rarely; each refusal checked */
    assert_true(peak_dev > device / 2);
    gos_swap_free(&s);
}

/* vmmtab.c: a client's VMM objects. A mapping only inside a reservation and
 * over nothing else, at most its handle's bytes; released memory is freed with
 * its last mapping (the bytes the daemon then gives back to the share); unmap
 * takes whole adjacent mappings; a reservation with something mapped stays;
 * reachable runs merge adjacent mappings of one access and leave out none. */
static int run_rec(void *ctx, uint64_t va, uint64_t bytes, int ro)
{
    uint64_t *r = ctx;
    r[r[0] * 3 + 1] = va;
    r[r[0] * 3 + 2] = bytes;
    r[r[0] * 3 + 3] = (uint64_t)ro;
    r[0]++;
    return 0;
}

static void test_vmmtab(void **state)
{
    (void)state;
    gos_vmm_tab t = {0};
    const uint64_t G = 2 * MB, va = 100 * G;
    assert_int_equal(gos_vmmtab_resv_add(&t, va, 8 * G, va, 8 * G), GOS_OK);
    assert_int_equal(gos_vmmtab_handle_add(&t, 1, 11, 2 * G), GOS_OK);
    assert_int_equal(gos_vmmtab_handle_add(&t, 2, 12, 2 * G), GOS_OK);
    assert_int_equal(gos_vmmtab_check_map(&t, va, 4 * G, 1), GOS_EINVAL);      /* more than the handle */
    assert_int_equal(gos_vmmtab_check_map(&t, va + 7 * G, 2 * G, 1), GOS_EINVAL); /* past the reservation */
    assert_int_equal(gos_vmmtab_check_map(&t, va, 2 * G, 3), GOS_EINVAL);      /* not this client's */
    assert_int_equal(gos_vmmtab_check_map(&t, va, 2 * G, 1), GOS_OK);
    assert_int_equal(gos_vmmtab_map_add(&t, va, 2 * G, 1), GOS_OK);
    assert_int_equal(gos_vmmtab_check_map(&t, va + G, 2 * G, 2), GOS_EINVAL);  /* overlaps */
    assert_int_equal(gos_vmmtab_map_add(&t, va + 2 * G, 2 * G, 2), GOS_OK);
    assert_int_equal(gos_vmmtab_bytes(&t), 4 * G);

    uint64_t runs[1 + 3 * 4] = {0};
    assert_int_equal(gos_vmmtab_runs(&t, run_rec, runs), 0);
    assert_int_equal(runs[0], 0); /* no access yet: nothing reachable */
    gos_vmmtab_access(&t, va, 4 * G, GOS_VMM_ACCESS_RW);
    assert_int_equal(gos_vmmtab_runs(&t, run_rec, runs), 0);
    assert_int_equal(runs[0], 1); /* two handles, one range */
    assert_true(runs[1] == va && runs[2] == 4 * G && runs[3] == 0);
    gos_vmmtab_access(&t, va + 2 * G, 2 * G, GOS_VMM_ACCESS_READ);
    memset(runs, 0, sizeof runs);
    gos_vmmtab_runs(&t, run_rec, runs);
    assert_int_equal(runs[0], 2);
    assert_true(runs[4] == va + 2 * G && runs[5] == 2 * G && runs[6] == 1);

    /* release while mapped: nothing freed yet, the handle is no longer live */
    uint64_t freed = 99;
    assert_int_equal(gos_vmmtab_release(&t, 1, &freed), GOS_OK);
    assert_int_equal(freed, 0);
    assert_null(gos_vmmtab_live(&t, 1));
    assert_int_equal(gos_vmmtab_release(&t, 1, &freed), GOS_EINVAL);
    assert_int_equal(gos_vmmtab_bytes(&t), 4 * G);
    assert_int_equal(gos_vmmtab_cover(&t, va, 3 * G), GOS_EINVAL);
    assert_int_equal(gos_vmmtab_cover(&t, va + G, G), GOS_EINVAL);
    assert_int_equal(gos_vmmtab_cover(&t, va, 4 * G), GOS_OK);
    assert_int_equal(gos_vmmtab_resv_find(&t, va, 8 * G), -1); /* still mapped */
    gos_vmmtab_map_del(&t, gos_vmmtab_map_at(&t, va), &freed);
    assert_int_equal(freed, 2 * G); /* its last mapping: gone */
    assert_int_equal(gos_vmmtab_bytes(&t), 2 * G);
    gos_vmmtab_map_del(&t, gos_vmmtab_map_at(&t, va + 2 * G), &freed);
    assert_int_equal(freed, 0); /* handle 2 is not released */
    assert_int_equal(gos_vmmtab_release(&t, 2, &freed), GOS_OK);
    assert_int_equal(freed, 2 * G);
    assert_int_equal(gos_vmmtab_resv_find(&t, va, 4 * G), -1); /* not exactly a reservation */
    int i = gos_vmmtab_resv_find(&t, va, 8 * G);
    assert_int_equal(i, 0);
    gos_vmmtab_resv_del(&t, i);
    assert_int_equal(t.n_r + t.n_h + t.n_m, 0);
    gos_vmmtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_get),
        cmocka_unit_test(test_vmmtab),
        cmocka_unit_test(test_shm_tenant_limits),
        cmocka_unit_test(test_shm_permissions),
        cmocka_unit_test(test_shm_remove),
        cmocka_unit_test(test_shm_list),
        cmocka_unit_test(test_swap_victims),
        cmocka_unit_test(test_swap_copy_launch),
        cmocka_unit_test(test_swap_space_and_death),
        cmocka_unit_test(test_swap_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
