/* SPDX-License-Identifier: Apache-2.0 */
/* swap_policy.c: the swap policy and accounting (swap_policy.h). */
#include "vmem/swap_policy.h"

#include "common/grow.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

int gos_swap_init(gos_swap *s, uint64_t device_bytes, uint64_t swap_bytes)
{
    memset(s, 0, sizeof *s);
    if (!device_bytes)
        return gos_fail(GOS_EINVAL, "swap: a device of 0 bytes");
    s->device_bytes = device_bytes;
    s->swap_bytes = swap_bytes;
    s->next_id = 1;
    return GOS_OK;
}

void gos_swap_free(gos_swap *s)
{
    free(s->obj);
    memset(s, 0, sizeof *s);
}

static int bad_vgpu(int v) { return v < 0 || v >= GOS_SWAP_MAX_VGPUS; }

int gos_swap_set_priority(gos_swap *s, int vgpu, int priority)
{
    if (bad_vgpu(vgpu))
        return gos_fail(GOS_EINVAL, "swap: vGPU %d out of range", vgpu);
    s->vgpu[vgpu].priority = priority;
    return GOS_OK;
}

gos_swap_obj *gos_swap_find(gos_swap *s, uint64_t id)
{
    for (int i = 0; i < s->n; i++)
        if (s->obj[i].id == id)
            return &s->obj[i];
    return NULL;
}

gos_swap_obj *gos_swap_find_va(gos_swap *s, uint32_t client, uint64_t va)
{
    for (int i = 0; i < s->n; i++)
        if (s->obj[i].client == client && !s->obj[i].dead && va >= s->obj[i].va &&
            va - s->obj[i].va < s->obj[i].bytes)
            return &s->obj[i];
    return NULL;
}

void gos_swap_set_busy(gos_swap *s, uint64_t id, int busy)
{
    gos_swap_obj *o = gos_swap_find(s, id);
    if (o)
        o->busy = busy;
}

static void plan_reset(gos_swap_plan *p) { memset(p, 0, sizeof *p); }

static int listed(const uint64_t *ids, int n, uint64_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

static int need_restore(gos_swap_plan *p, const gos_swap_obj *o)
{
    if (listed(p->restore, p->n_restore, o->id))
        return GOS_OK;
    if (p->n_restore == GOS_SWAP_PLAN_MAX)
        return gos_fail(GOS_ELIMIT, "swap: more than %d objects to restore at once", GOS_SWAP_PLAN_MAX);
    p->restore[p->n_restore++] = o->id;
    p->restore_bytes += o->bytes;
    return GOS_OK;
}

/* Picks victims until `need` bytes fit on the device (the requesting vGPU's and
 * the protected objects excluded), then checks the swap space. */
static int choose_victims(gos_swap *s, int vgpu, uint32_t client, int whole_client, gos_swap_plan *p)
{
    uint64_t need = p->restore_bytes + p->alloc_bytes;
    uint64_t free_b = s->device_bytes > s->on_device ? s->device_bytes - s->on_device : 0;
    uint64_t got = 0;
    while (free_b + got < need) {
        uint64_t missing = need - free_b - got;
        gos_swap_obj *best = NULL;
        int best_prio = 0;
        for (int i = 0; i < s->n; i++) {
            gos_swap_obj *o = &s->obj[i];
            if (o->state != GOS_SWAP_RESIDENT || o->pinned || (o->busy && !s->busy_ignored) || o->dead || o->vgpu == vgpu ||
                (whole_client && o->client == client) || listed(p->evict, p->n_evict, o->id))
                continue;
            int prio = s->vgpu[o->vgpu].priority;
            if (!best || prio < best_prio) {
                best = o;
                best_prio = prio;
                continue;
            }
            if (prio > best_prio)
                continue;
            int fits = o->bytes >= missing, best_fits = best->bytes >= missing;
            if (fits != best_fits) {
                if (fits)
                    best = o;
                continue;
            }
            /* Both large enough: the smallest; neither: the largest; then the oldest. */
            if (fits ? o->bytes < best->bytes : o->bytes > best->bytes)
                best = o;
            else if (o->bytes == best->bytes && o->id < best->id)
                best = o;
        }
        if (!best) {
            int rc = gos_fail(GOS_ENOMEM,
                              "device memory: %llu bytes needed, %llu free and only %llu more can be swapped out "
                              "(other vGPUs' unpinned, idle memory)",
                              (unsigned long long)need, (unsigned long long)free_b, (unsigned long long)got);
            plan_reset(p);
            return rc;
        }
        if (p->n_evict == GOS_SWAP_PLAN_MAX) {
            plan_reset(p);
            return gos_fail(GOS_ELIMIT, "swap: more than %d victims at once", GOS_SWAP_PLAN_MAX);
        }
        p->evict[p->n_evict++] = best->id;
        p->evict_bytes += best->bytes;
        got += best->bytes;
    }
    /* The order: each restore after just the evictions that make its room, the
     * allocation last; the host swap space must hold the peak of that sequence. */
    uint64_t room = free_b, cur = s->in_swap + s->swap_hold, peak = cur;
    int v = 0;
    p->n_steps = 0;
    for (int i = 0; i <= p->n_restore; i++) {
        gos_swap_obj *o = i < p->n_restore ? gos_swap_find(s, p->restore[i]) : NULL;
        uint64_t want = o ? o->bytes : p->alloc_bytes;
        while (room < want && v < p->n_evict) {
            gos_swap_obj *x = gos_swap_find(s, p->evict[v]);
            p->step[p->n_steps].evict = 1;
            p->step[p->n_steps++].id = p->evict[v++];
            room += x->bytes;
            cur += x->bytes;
            peak = cur > peak ? cur : peak;
        }
        if (o) {
            p->step[p->n_steps].evict = 0;
            p->step[p->n_steps++].id = o->id;
            room -= o->bytes;
            cur -= o->bytes;
        }
    }
    while (v < p->n_evict) { /* none expected: victims stop at enough */
        gos_swap_obj *x = gos_swap_find(s, p->evict[v]);
        p->step[p->n_steps].evict = 1;
        p->step[p->n_steps++].id = p->evict[v++];
        cur += x->bytes;
        peak = cur > peak ? cur : peak;
    }
    if (peak > s->swap_bytes) {
        int rc = gos_fail(GOS_ENOMEM,
                          "host swap space exhausted: %llu bytes in use or held + %llu more at the peak > %llu "
                          "configured (swap_bytes)",
                          (unsigned long long)(s->in_swap + s->swap_hold),
                          (unsigned long long)(peak - s->in_swap - s->swap_hold), (unsigned long long)s->swap_bytes);
        plan_reset(p);
        return rc;
    }
    p->swap_extra = peak - s->in_swap - s->swap_hold;
    return GOS_OK;
}

int gos_swap_plan_alloc(gos_swap *s, int vgpu, uint64_t bytes, gos_swap_plan *p)
{
    plan_reset(p);
    if (bad_vgpu(vgpu) || !bytes)
        return gos_fail(GOS_EINVAL, "swap: allocation of %llu bytes for vGPU %d", (unsigned long long)bytes, vgpu);
    if (bytes > s->device_bytes)
        return gos_fail(GOS_ENOMEM, "device memory: %llu bytes is more than the device's %llu",
                        (unsigned long long)bytes, (unsigned long long)s->device_bytes);
    p->alloc_bytes = bytes;
    return choose_victims(s, vgpu, 0, 0, p);
}

static int overlaps(const gos_swap_obj *o, const struct gos_swap_range *r)
{
    return r->bytes && r->va < o->va + o->bytes && o->va < r->va + r->bytes;
}

int gos_swap_plan_copy(gos_swap *s, int vgpu, uint32_t client, const struct gos_swap_range *r, int n,
                       int from_device, gos_swap_plan *p)
{
    plan_reset(p);
    if (bad_vgpu(vgpu) || n < 0 || (n && !r))
        return gos_fail(GOS_EINVAL, "swap: bad copy plan arguments");
    for (int i = 0; i < s->n; i++) {
        gos_swap_obj *o = &s->obj[i];
        if (o->client != client || o->dead)
            continue;
        for (int k = 0; k < n; k++)
            if (overlaps(o, &r[k])) {
                if (o->state == GOS_SWAP_RESIDENT)
                    break;
                if (o->state != GOS_SWAP_SWAPPED) {
                    plan_reset(p);
                    return gos_fail(GOS_EBUSY, "swap: object at 0x%llx is in transition",
                                    (unsigned long long)o->va);
                }
                int rc;
                if (from_device) { /* Gdev: served from swap space directly */
                    if (p->n_from_swap == GOS_SWAP_PLAN_MAX) {
                        plan_reset(p);
                        return gos_fail(GOS_ELIMIT, "swap: too many objects in one copy");
                    }
                    p->from_swap[p->n_from_swap++] = o->id;
                } else if ((rc = need_restore(p, o))) {
                    plan_reset(p);
                    return rc;
                }
                break;
            }
    }
    return p->restore_bytes ? choose_victims(s, vgpu, client, 1, p) : GOS_OK;
}

int gos_swap_plan_launch(gos_swap *s, int vgpu, uint32_t client, gos_swap_plan *p)
{
    plan_reset(p);
    if (bad_vgpu(vgpu))
        return gos_fail(GOS_EINVAL, "swap: vGPU %d out of range", vgpu);
    for (int i = 0; i < s->n; i++) {
        gos_swap_obj *o = &s->obj[i];
        if (o->client != client || o->dead || o->state == GOS_SWAP_RESIDENT)
            continue;
        if (o->state != GOS_SWAP_SWAPPED) {
            plan_reset(p);
            return gos_fail(GOS_EBUSY, "swap: object at 0x%llx is in transition", (unsigned long long)o->va);
        }
        int rc = need_restore(p, o);
        if (rc) {
            plan_reset(p);
            return rc;
        }
    }
    return p->restore_bytes ? choose_victims(s, vgpu, client, 1, p) : GOS_OK;
}

void gos_swap_begin(gos_swap *s, const gos_swap_plan *p)
{
    for (int i = 0; i < p->n_evict; i++) {
        gos_swap_obj *o = gos_swap_find(s, p->evict[i]);
        if (o && o->state == GOS_SWAP_RESIDENT)
            o->state = GOS_SWAP_EVICTING; /* counted on the device until it is out */
    }
    for (int i = 0; i < p->n_restore; i++) {
        gos_swap_obj *o = gos_swap_find(s, p->restore[i]);
        if (o && o->state == GOS_SWAP_SWAPPED) {
            o->state = GOS_SWAP_RESTORING;
            s->on_device += o->bytes; /* its room is taken now */
        }
    }
    s->reserved += p->alloc_bytes;
    s->on_device += p->alloc_bytes;
    s->swap_hold += p->swap_extra;
}

void gos_swap_end(gos_swap *s, const gos_swap_plan *p)
{
    s->swap_hold -= p->swap_extra < s->swap_hold ? p->swap_extra : s->swap_hold;
}

static void drop(gos_swap *s, gos_swap_obj *o) { *o = s->obj[--s->n]; }


/* An object whose owner died during its eviction or restore: its bytes leave
 * the accounting of wherever they are now, and it is dropped (1); else 0. */
static int reap_if_dead(gos_swap *s, gos_swap_obj *o, gos_swap_vgpu *v)
{
    if (!o->dead)
        return 0;
    if (o->state == GOS_SWAP_SWAPPED) {
        s->in_swap -= o->bytes;
        v->swapped -= o->bytes;
    } else {
        s->on_device -= o->bytes;
        v->resident -= o->bytes;
    }
    drop(s, o);
    return 1;
}

int gos_swap_evicted(gos_swap *s, uint64_t id, int ok)
{
    gos_swap_obj *o = gos_swap_find(s, id);
    if (!o || o->state != GOS_SWAP_EVICTING)
        return 0;
    gos_swap_vgpu *v = &s->vgpu[o->vgpu];
    if (ok) {
        o->state = GOS_SWAP_SWAPPED;
        s->on_device -= o->bytes;
        s->in_swap += o->bytes;
        v->resident -= o->bytes;
        v->swapped += o->bytes;
        v->evictions++;
        v->evicted_bytes += o->bytes;
    } else {
        o->state = GOS_SWAP_RESIDENT;
    }
    return reap_if_dead(s, o, v);
}

int gos_swap_restored(gos_swap *s, uint64_t id, int ok)
{
    gos_swap_obj *o = gos_swap_find(s, id);
    if (!o || o->state != GOS_SWAP_RESTORING)
        return 0;
    gos_swap_vgpu *v = &s->vgpu[o->vgpu];
    if (ok) {
        o->state = GOS_SWAP_RESIDENT;
        s->in_swap -= o->bytes;
        v->swapped -= o->bytes;
        v->resident += o->bytes;
        v->restores++;
        v->restored_bytes += o->bytes;
    } else {
        o->state = GOS_SWAP_SWAPPED;
        s->on_device -= o->bytes;
    }
    return reap_if_dead(s, o, v);
}

int gos_swap_add(gos_swap *s, int vgpu, uint32_t client, uint64_t va, uint64_t bytes, int pinned, uint64_t *id)
{
    if (bad_vgpu(vgpu) || !bytes)
        return gos_fail(GOS_EINVAL, "swap: object of %llu bytes for vGPU %d", (unsigned long long)bytes, vgpu);
    if (bytes > s->reserved)
        return gos_fail(GOS_EINVAL, "swap: %llu bytes added without a plan (%llu reserved)",
                        (unsigned long long)bytes, (unsigned long long)s->reserved);
    int rc = gos_grow((void **)&s->obj, &s->cap, s->n, sizeof *s->obj, 64);
    if (rc)
        return rc;
    gos_swap_obj *o = &s->obj[s->n++];
    memset(o, 0, sizeof *o);
    o->id = s->next_id++;
    o->vgpu = vgpu;
    o->client = client;
    o->va = va;
    o->bytes = bytes;
    o->pinned = pinned;
    o->state = GOS_SWAP_RESIDENT;
    s->reserved -= bytes; /* on_device already counts it */
    s->vgpu[vgpu].resident += bytes;
    *id = o->id;
    return GOS_OK;
}

void gos_swap_cancel_alloc(gos_swap *s, uint64_t bytes)
{
    if (bytes > s->reserved)
        bytes = s->reserved;
    s->reserved -= bytes;
    s->on_device -= bytes;
}

int gos_swap_remove(gos_swap *s, uint64_t id)
{
    gos_swap_obj *o = gos_swap_find(s, id);
    if (!o)
        return -1;
    if (o->state == GOS_SWAP_EVICTING || o->state == GOS_SWAP_RESTORING) {
        o->dead = 1;
        return 0;
    }
    gos_swap_vgpu *v = &s->vgpu[o->vgpu];
    if (o->state == GOS_SWAP_RESIDENT) {
        s->on_device -= o->bytes;
        v->resident -= o->bytes;
    } else {
        s->in_swap -= o->bytes;
        v->swapped -= o->bytes;
    }
    drop(s, o);
    return 1;
}

int gos_swap_check(const gos_swap *s)
{
    uint64_t dev = s->reserved, swp = 0, leaving = 0, res[GOS_SWAP_MAX_VGPUS] = {0}, sw[GOS_SWAP_MAX_VGPUS] = {0};
    for (int i = 0; i < s->n; i++) {
        const gos_swap_obj *o = &s->obj[i];
        if (bad_vgpu(o->vgpu))
            return gos_fail(GOS_EINVAL, "swap check: object %llu of vGPU %d", (unsigned long long)o->id, o->vgpu);
        switch (o->state) {
        case GOS_SWAP_RESIDENT:
            dev += o->bytes;
            res[o->vgpu] += o->bytes;
            break;
        case GOS_SWAP_SWAPPED:
            swp += o->bytes;
            sw[o->vgpu] += o->bytes;
            break;
        case GOS_SWAP_EVICTING: /* on the device until it is out */
            dev += o->bytes;
            leaving += o->bytes;
            res[o->vgpu] += o->bytes;
            break;
        case GOS_SWAP_RESTORING: /* room taken on the device, bytes still in swap */
            dev += o->bytes;
            swp += o->bytes;
            sw[o->vgpu] += o->bytes;
            break;
        default:
            return gos_fail(GOS_EINVAL, "swap check: object %llu in state %d", (unsigned long long)o->id, o->state);
        }
    }
    if (dev != s->on_device)
        return gos_fail(GOS_EINVAL, "swap check: on_device %llu, objects say %llu", (unsigned long long)s->on_device,
                        (unsigned long long)dev);
    if (swp != s->in_swap)
        return gos_fail(GOS_EINVAL, "swap check: in_swap %llu, objects say %llu", (unsigned long long)s->in_swap,
                        (unsigned long long)swp);
    /* A plan takes its room at begin, while its victims are still leaving. */
    if (s->on_device - leaving > s->device_bytes)
        return gos_fail(GOS_EINVAL, "swap check: %llu bytes (%llu leaving) on a %llu-byte device",
                        (unsigned long long)s->on_device, (unsigned long long)leaving,
                        (unsigned long long)s->device_bytes);
    if (s->in_swap > s->swap_bytes)
        return gos_fail(GOS_EINVAL, "swap check: %llu bytes in a %llu-byte swap space",
                        (unsigned long long)s->in_swap, (unsigned long long)s->swap_bytes);
    for (int v = 0; v < GOS_SWAP_MAX_VGPUS; v++)
        if (res[v] != s->vgpu[v].resident || sw[v] != s->vgpu[v].swapped)
            return gos_fail(GOS_EINVAL, "swap check: vGPU %d resident %llu/%llu swapped %llu/%llu", v,
                            (unsigned long long)s->vgpu[v].resident, (unsigned long long)res[v],
                            (unsigned long long)s->vgpu[v].swapped, (unsigned long long)sw[v]);
    return GOS_OK;
}
