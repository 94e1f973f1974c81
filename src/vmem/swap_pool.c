/* SPDX-License-Identifier: Apache-2.0 */
/* swap_pool.c: offsets in the host swap pool (swap_pool.h). */
#include "vmem/swap_pool.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

static uint64_t unit_round(uint64_t b)
{
    if (b > UINT64_MAX - (GOS_SWAP_POOL_UNIT - 1))
        return 0;
    return (b + GOS_SWAP_POOL_UNIT - 1) / GOS_SWAP_POOL_UNIT * GOS_SWAP_POOL_UNIT;
}

int gos_swap_pool_init(gos_swap_pool *p, uint64_t bytes)
{
    memset(p, 0, sizeof *p);
    p->bytes = bytes / GOS_SWAP_POOL_UNIT * GOS_SWAP_POOL_UNIT;
    if (!p->bytes)
        return gos_fail(GOS_EINVAL, "swap pool of %llu bytes: less than one unit of 2 MB", (unsigned long long)bytes);
    p->cap = 16;
    if (!(p->free = malloc(sizeof *p->free * (size_t)p->cap)))
        return gos_fail(GOS_ENOMEM, "out of memory");
    p->free[0] = (gos_swap_extent){0, p->bytes};
    p->n = 1;
    return GOS_OK;
}

void gos_swap_pool_fini(gos_swap_pool *p)
{
    free(p->free);
    memset(p, 0, sizeof *p);
}

/* Room for one more free range (GOS_ENOMEM, said, when there is none). */
static int room_for_one(gos_swap_pool *p)
{
    if (p->n < p->cap)
        return GOS_OK;
    gos_swap_extent *x = realloc(p->free, sizeof *x * (size_t)p->cap * 2);
    if (!x)
        return gos_fail(GOS_ENOMEM, "out of memory");
    p->free = x;
    p->cap *= 2;
    return GOS_OK;
}

/* Takes [off, off + sz) out of free range i, which holds it (splitting it
 * when the range lies inside). */
static int take(gos_swap_pool *p, int i, uint64_t off, uint64_t sz)
{
    gos_swap_extent e = p->free[i];
    uint64_t left = off - e.off, right = e.off + e.bytes - (off + sz);
    if (left && right) {
        if (room_for_one(p))
            return GOS_ENOMEM;
        memmove(&p->free[i + 2], &p->free[i + 1], sizeof *p->free * (size_t)(p->n - i - 1));
        p->free[i].bytes = left;
        p->free[i + 1] = (gos_swap_extent){off + sz, right};
        p->n++;
    } else if (left) {
        p->free[i].bytes = left;
    } else if (right) {
        p->free[i] = (gos_swap_extent){off + sz, right};
    } else {
        memmove(&p->free[i], &p->free[i + 1], sizeof *p->free * (size_t)(p->n - i - 1));
        p->n--;
    }
    p->used += sz;
    return GOS_OK;
}

/* The end (unit-rounded) of the last range of avoid that [s, s + sz) overlaps; 0: none. */
static uint64_t avoided(const gos_swap_extent *avoid, int n, uint64_t s, uint64_t sz)
{
    uint64_t past = 0;
    for (int k = 0; k < n; k++)
        if (avoid[k].bytes && avoid[k].off < s + sz && s < avoid[k].off + avoid[k].bytes &&
            unit_round(avoid[k].off + avoid[k].bytes) > past)
            past = unit_round(avoid[k].off + avoid[k].bytes);
    return past;
}

int gos_swap_pool_get_in(gos_swap_pool *p, uint64_t bytes, uint64_t lo, uint64_t hi, const gos_swap_extent *avoid,
                         int n, uint64_t *off)
{
    uint64_t sz = unit_round(bytes);
    if (!sz)
        return gos_fail(GOS_EINVAL, "swap pool: a range of %llu bytes", (unsigned long long)bytes);
    lo = unit_round(lo);
    hi = hi < p->bytes ? hi / GOS_SWAP_POOL_UNIT * GOS_SWAP_POOL_UNIT : p->bytes;
    for (int i = 0; i < p->n && lo < hi; i++) {
        uint64_t s = p->free[i].off > lo ? p->free[i].off : lo, e = p->free[i].off + p->free[i].bytes;
        if (e > hi)
            e = hi;
        for (uint64_t past; s < e && sz <= e - s; s = past)
            if (!(past = avoided(avoid, n, s, sz))) {
                int rc = take(p, i, s, sz);
                if (!rc)
                    *off = s;
                return rc;
            }
    }
    if (!lo && hi == p->bytes)
        return gos_fail(GOS_ENOMEM, "swap space exhausted: no free range of %llu MB in the %llu MB pool (%llu MB in use)",
                        (unsigned long long)(sz >> 20), (unsigned long long)(p->bytes >> 20),
                        (unsigned long long)(p->used >> 20));
    return gos_fail(GOS_ENOMEM, "swap space exhausted: no free range of %llu MB in %llu..%llu MB of the %llu MB pool "
                                "(%llu MB in use)", (unsigned long long)(sz >> 20), (unsigned long long)(lo >> 20),
                    (unsigned long long)(hi >> 20), (unsigned long long)(p->bytes >> 20),
                    (unsigned long long)(p->used >> 20));
}

int gos_swap_pool_get(gos_swap_pool *p, uint64_t bytes, uint64_t *off)
{
    return gos_swap_pool_get_in(p, bytes, 0, p->bytes, NULL, 0, off); /* first fit in the whole pool */
}

int gos_swap_pool_copy(gos_swap_pool *dst, const gos_swap_pool *src)
{
    *dst = *src;
    dst->free = malloc(sizeof *dst->free * (size_t)src->cap);
    if (!dst->free) {
        memset(dst, 0, sizeof *dst);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    memcpy(dst->free, src->free, sizeof *dst->free * (size_t)src->n);
    return GOS_OK;
}

uint64_t gos_swap_pool_free_below(const gos_swap_pool *p, uint64_t end)
{
    uint64_t f = 0;
    for (int i = 0; i < p->n && p->free[i].off < end; i++)
        f += (p->free[i].off + p->free[i].bytes < end ? p->free[i].off + p->free[i].bytes : end) - p->free[i].off;
    return f;
}

int gos_swap_pool_put(gos_swap_pool *p, uint64_t off, uint64_t bytes)
{
    uint64_t sz = unit_round(bytes);
    if (!sz || off % GOS_SWAP_POOL_UNIT || off > p->bytes || sz > p->bytes - off)
        return gos_fail(GOS_EINVAL, "swap pool: range 0x%llx + %llu outside the pool", (unsigned long long)off,
                        (unsigned long long)bytes);
    int i = 0; /* first free range after off */
    while (i < p->n && p->free[i].off < off)
        i++;
    if ((i > 0 && p->free[i - 1].off + p->free[i - 1].bytes > off) || (i < p->n && off + sz > p->free[i].off))
        return gos_fail(GOS_EINVAL, "swap pool: range 0x%llx + %llu is (partly) free already",
                        (unsigned long long)off, (unsigned long long)bytes);
    int left = i > 0 && p->free[i - 1].off + p->free[i - 1].bytes == off;
    int right = i < p->n && off + sz == p->free[i].off;
    if (left && right) {
        p->free[i - 1].bytes += sz + p->free[i].bytes;
        memmove(&p->free[i], &p->free[i + 1], sizeof *p->free * (size_t)(p->n - i - 1));
        p->n--;
    } else if (left)
        p->free[i - 1].bytes += sz;
    else if (right) {
        p->free[i].off = off;
        p->free[i].bytes += sz;
    } else {
        if (room_for_one(p))
            return GOS_ENOMEM;
        memmove(&p->free[i + 1], &p->free[i], sizeof *p->free * (size_t)(p->n - i));
        p->free[i] = (gos_swap_extent){off, sz};
        p->n++;
    }
    p->used -= sz;
    return GOS_OK;
}
