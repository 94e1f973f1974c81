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

int gos_swap_pool_get(gos_swap_pool *p, uint64_t bytes, uint64_t *off)
{
    uint64_t sz = unit_round(bytes);
    if (!sz)
        return gos_fail(GOS_EINVAL, "swap pool: a range of %llu bytes", (unsigned long long)bytes);
    for (int i = 0; i < p->n; i++) {
        if (p->free[i].bytes < sz)
            continue;
        *off = p->free[i].off;
        p->free[i].off += sz;
        p->free[i].bytes -= sz;
        if (!p->free[i].bytes) {
            memmove(&p->free[i], &p->free[i + 1], sizeof *p->free * (size_t)(p->n - i - 1));
            p->n--;
        }
        p->used += sz;
        return GOS_OK;
    }
    return gos_fail(GOS_ENOMEM, "swap space exhausted: no free range of %llu MB in the %llu MB pool (%llu MB in use)",
                    (unsigned long long)(sz >> 20), (unsigned long long)(p->bytes >> 20),
                    (unsigned long long)(p->used >> 20));
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
        if (p->n == p->cap) {
            gos_swap_extent *e = realloc(p->free, sizeof *e * (size_t)p->cap * 2);
            if (!e)
                return gos_fail(GOS_ENOMEM, "out of memory");
            p->free = e;
            p->cap *= 2;
        }
        memmove(&p->free[i + 1], &p->free[i], sizeof *p->free * (size_t)(p->n - i));
        p->free[i] = (gos_swap_extent){off, sz};
        p->n++;
    }
    p->used -= sz;
    return GOS_OK;
}
