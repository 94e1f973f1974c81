/* SPDX-License-Identifier: Apache-2.0 */
/* swap_pool.h: offsets in the daemon's pre-pinned host swap pool (issue 10.2;
 * docs/readme-shm.md). The pool is one memfd of `swap` bytes created once by
 * the daemon; each swapped allocation occupies one range of it, handed out
 * here first-fit in GOS_SWAP_POOL_UNIT steps and given back (coalesced with
 * its neighbours) when the allocation is restored or dropped. Pure bookkeeping:
 * no memory, no device. */
#ifndef GOS_VMEM_SWAP_POOL_H
#define GOS_VMEM_SWAP_POOL_H

#include <stdint.h>

#define GOS_SWAP_POOL_UNIT (2ull << 20)

typedef struct {
    uint64_t off, bytes;
} gos_swap_extent;

typedef struct {
    uint64_t bytes; /* the pool's size (a multiple of the unit) */
    uint64_t used;  /* bytes handed out */
    gos_swap_extent *free; /* free ranges, sorted by offset, never adjacent */
    int n, cap;
} gos_swap_pool;

/* A pool of `bytes` rounded down to the unit; GOS_EINVAL when that is 0. */
int gos_swap_pool_init(gos_swap_pool *p, uint64_t bytes);
void gos_swap_pool_fini(gos_swap_pool *p);
/* A range of `bytes` (rounded up to the unit): GOS_ENOMEM with a message when
 * no free range is large enough (exhausted or fragmented). */
int gos_swap_pool_get(gos_swap_pool *p, uint64_t bytes, uint64_t *off);
/* The same, first fit inside [lo, hi) and overlapping none of the n ranges of
 * `avoid` (other executors' windows of the pool, issue 42.2): GOS_ENOMEM
 * (with a message) when no such range is free; nothing changes then. */
int gos_swap_pool_get_in(gos_swap_pool *p, uint64_t bytes, uint64_t lo, uint64_t hi, const gos_swap_extent *avoid,
                         int n, uint64_t *off);
/* A copy of src in dst (to try a plan on): GOS_ENOMEM when out of memory. */
int gos_swap_pool_copy(gos_swap_pool *dst, const gos_swap_pool *src);
/* The free bytes of the pool below `end` (the part the host already gave). */
uint64_t gos_swap_pool_free_below(const gos_swap_pool *p, uint64_t end);
/* Gives back a range handed out by get (same bytes). GOS_EINVAL for a range
 * that is not wholly handed out (a double free): nothing changes then. */
int gos_swap_pool_put(gos_swap_pool *p, uint64_t off, uint64_t bytes);

#endif
