/* SPDX-License-Identifier: Apache-2.0 */
/* swap_policy.h: the daemon's swap policy and accounting (issue 10.2; paper 002
 * section 4.3, Gdev's data swapping).
 *
 * Pure bookkeeping, no device and no locking (the daemon holds its lock): every
 * device allocation is an object (owner vGPU and client, address, bytes) that is
 * resident, swapped (its bytes only in host swap space), or in transition. The
 * daemon asks for a plan before work needs memory, carries the plan out (evict
 * victims first: copy out, unmap, release; then restore what is needed: new
 * physical memory at the same address, copy back), and reports each step.
 *
 * What a plan needs resident (Gdev's API-driven rule):
 *   alloc   room for `bytes` more;
 *   copy    only the client's objects that overlap the copy's ranges (a copy
 *           from the device may read a swapped object from swap space directly:
 *           it is then listed in from_swap, not restored);
 *   launch  every object of the launching client (a kernel may touch any).
 * Victims when the device is short (Gdev: "memory objects whose allocated size
 * is greater than the requested size ... owned by a low-priority context"):
 * only other vGPUs' objects that are resident, not pinned (shared segments are
 * never swapped: every attacher maps them) and not busy (work in flight uses
 * them); the lowest vGPU priority first; within it, the smallest object at least
 * as large as what is still missing, else the largest (fewest copies); ties by
 * the oldest object. Host swap space is bounded (configured): a plan that would
 * need more than is left fails with GOS_ENOMEM and says so, before anything
 * moves; nothing is ever dropped.
 *
 * Transitions survive their owners: removing an object in transition (its
 * client died) marks it, and the step's report then drops it, so accounting is
 * exact whatever dies when. */
#ifndef GOS_VMEM_SWAP_POLICY_H
#define GOS_VMEM_SWAP_POLICY_H

#include <stdint.h>

#define GOS_SWAP_MAX_VGPUS 64
#define GOS_SWAP_PLAN_MAX 256

enum { GOS_SWAP_RESIDENT, GOS_SWAP_SWAPPED, GOS_SWAP_EVICTING, GOS_SWAP_RESTORING };

typedef struct {
    uint64_t id; /* never 0 */
    int vgpu;
    uint32_t client;
    uint64_t va, bytes;
    int state;   /* GOS_SWAP_* */
    int pinned;  /* never a victim */
    int busy;    /* work in flight uses it: never a victim */
    int dead;    /* removed while in transition: dropped when the step reports */
    void *priv;  /* the daemon's (host copy, device buffer) */
} gos_swap_obj;

typedef struct {
    int priority; /* higher keeps its memory longer */
    uint64_t resident, swapped; /* bytes; in transition: counted where it comes from */
    uint64_t evictions, restores; /* counts */
    uint64_t evicted_bytes, restored_bytes; /* cumulative */
    uint64_t turns;   /* turns given to it over busy tenants (the daemon's, issue 42) */
    uint64_t swap_ns; /* time its memory spent being evicted or restored (the daemon's) */
} gos_swap_vgpu;

typedef struct {
    uint64_t device_bytes; /* what allocations may occupy */
    uint64_t swap_bytes;   /* host swap space */
    uint64_t on_device;    /* RESIDENT + EVICTING + RESTORING + reserved */
    uint64_t in_swap;      /* SWAPPED + RESTORING (bytes whose copy is in swap) */
    uint64_t swap_hold;    /* swap space held for plans under way (their peaks) */
    uint64_t reserved;     /* planned allocations not added yet */
    int busy_ignored;      /* plans as if no object were busy (what waiting could make fit) */
    uint64_t next_id;
    gos_swap_obj *obj;
    int n, cap;
    gos_swap_vgpu vgpu[GOS_SWAP_MAX_VGPUS];
} gos_swap;

typedef struct {
    int n_evict, n_restore, n_from_swap;
    uint64_t evict[GOS_SWAP_PLAN_MAX], restore[GOS_SWAP_PLAN_MAX], from_swap[GOS_SWAP_PLAN_MAX]; /* ids */
    uint64_t evict_bytes, restore_bytes, alloc_bytes;
    /* The order to carry the plan out in: each restore right after the
     * evictions that make its room, so host swap space needs only what the
     * plan's peak adds (swap_extra), not every victim at once. */
    int n_steps;
    struct {
        int evict; /* 1: evict id; 0: restore id */
        uint64_t id;
    } step[2 * GOS_SWAP_PLAN_MAX];
    uint64_t swap_extra; /* peak host swap use above today's, held from begin to end */
} gos_swap_plan;

struct gos_swap_range {
    uint64_t va, bytes;
};

int gos_swap_init(gos_swap *s, uint64_t device_bytes, uint64_t swap_bytes);
void gos_swap_free(gos_swap *s);
int gos_swap_set_priority(gos_swap *s, int vgpu, int priority);

/* Plans (nothing changes until gos_swap_begin). GOS_ENOMEM with the reason
 * when the device cannot make room (what is missing, what could be evicted) or
 * host swap space would run out. */
int gos_swap_plan_alloc(gos_swap *s, int vgpu, uint64_t bytes, gos_swap_plan *p);
int gos_swap_plan_copy(gos_swap *s, int vgpu, uint32_t client, const struct gos_swap_range *r, int n,
                       int from_device, gos_swap_plan *p);
int gos_swap_plan_launch(gos_swap *s, int vgpu, uint32_t client, gos_swap_plan *p);
/* Commits a plan: victims EVICTING, needed objects RESTORING, alloc_bytes
 * reserved, the plan's peak swap use held; the daemon then carries out
 * p->step[] in order, reports every step below, and ends the plan. */
void gos_swap_begin(gos_swap *s, const gos_swap_plan *p);
void gos_swap_end(gos_swap *s, const gos_swap_plan *p);
/* Step reports. ok = 0: the step failed, the object is back where it was (an
 * eviction that failed stays resident; a restore that failed stays swapped).
 * Returns 1 when the object was dead and is now dropped (the daemon frees what
 * it held: host copy, addresses), else 0. */
int gos_swap_evicted(gos_swap *s, uint64_t id, int ok);
int gos_swap_restored(gos_swap *s, uint64_t id, int ok);
/* A planned allocation: adds the object (resident) and consumes its
 * reservation; cancel gives the reservation back. */
int gos_swap_add(gos_swap *s, int vgpu, uint32_t client, uint64_t va, uint64_t bytes, int pinned, uint64_t *id);
void gos_swap_cancel_alloc(gos_swap *s, uint64_t bytes);
/* Removes an object (freed, or its client died): at once when resident or
 * swapped (returns 1: the daemon frees it now), marked dead when in transition
 * (returns 0: the step's report drops it). -1: no such object. */
int gos_swap_remove(gos_swap *s, uint64_t id);
gos_swap_obj *gos_swap_find(gos_swap *s, uint64_t id);
/* The client's object containing va (NULL: none). */
gos_swap_obj *gos_swap_find_va(gos_swap *s, uint32_t client, uint64_t va);
void gos_swap_set_busy(gos_swap *s, uint64_t id, int busy);
/* Invariants (sums per vGPU and per state against the totals, limits): GOS_OK
 * or GOS_EINVAL naming the first one broken. For tests and the daemon's debug
 * checks. */
int gos_swap_check(const gos_swap *s);

#endif
