/* SPDX-License-Identifier: Apache-2.0 */
/* vmmtab.c: a client's VMM objects as tables (vmmtab.h). Linear searches: a
 * client holds at most max_allocations handles and mappings, and every lookup
 * is one request's.
 * Process: the daemon and the executor. */
#include "vmem/vmmtab.h"

#include "common/grow.h"
#include "common/range.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#define ULL(x) ((unsigned long long)(x))

static gos_vmmt_handle *find_handle(gos_vmm_tab *t, uint64_t id)
{
    for (int i = 0; i < t->n_h; i++)
        if (t->h[i].id == id)
            return &t->h[i];
    return NULL;
}

int gos_vmmtab_handle_add(gos_vmm_tab *t, uint64_t id, uint64_t dev_h, uint64_t bytes)
{
    int rc = gos_grow((void **)&t->h, &t->cap_h, t->n_h, sizeof *t->h, 16);
    if (!rc)
        t->h[t->n_h++] = (gos_vmmt_handle){.id = id, .dev_h = dev_h, .bytes = bytes};
    return rc;
}

gos_vmmt_handle *gos_vmmtab_live(gos_vmm_tab *t, uint64_t id)
{
    gos_vmmt_handle *h = find_handle(t, id);
    if (!h || h->released) {
        gos_fail(GOS_EINVAL, "VMM handle %llu is not a live allocation of this client", ULL(id));
        return NULL;
    }
    return h;
}

/* Drops handle h when it is released and nothing maps it; its bytes, else 0. */
static uint64_t maybe_gone(gos_vmm_tab *t, gos_vmmt_handle *h)
{
    if (!h->released || h->maps > 0)
        return 0;
    uint64_t b = h->bytes;
    *h = t->h[--t->n_h];
    return b;
}

int gos_vmmtab_release(gos_vmm_tab *t, uint64_t id, uint64_t *freed)
{
    gos_vmmt_handle *h = gos_vmmtab_live(t, id);
    if (!h)
        return GOS_EINVAL;
    h->released = 1;
    *freed = maybe_gone(t, h);
    return GOS_OK;
}

int gos_vmmtab_resv_add(gos_vmm_tab *t, uint64_t va, uint64_t bytes, uint64_t base, uint64_t full)
{
    int rc = gos_grow((void **)&t->r, &t->cap_r, t->n_r, sizeof *t->r, 8);
    if (!rc)
        t->r[t->n_r++] = (gos_vmmt_resv){va, bytes, base, full};
    return rc;
}

int gos_vmmtab_resv_find(const gos_vmm_tab *t, uint64_t va, uint64_t bytes)
{
    for (int i = 0; i < t->n_r; i++) {
        if (t->r[i].va != va || t->r[i].bytes != bytes)
            continue;
        for (int m = 0; m < t->n_m; m++)
            if (gos_range_within(va, bytes, t->m[m].va, t->m[m].bytes)) {
                gos_fail(GOS_EINVAL, "address range 0x%llx+%llu still has 0x%llx+%llu mapped: unmap it first",
                         ULL(va), ULL(bytes), ULL(t->m[m].va), ULL(t->m[m].bytes));
                return -1;
            }
        return i;
    }
    gos_fail(GOS_EINVAL, "0x%llx+%llu is not an address reservation of this client", ULL(va), ULL(bytes));
    return -1;
}

void gos_vmmtab_resv_del(gos_vmm_tab *t, int i) { t->r[i] = t->r[--t->n_r]; }

int gos_vmmtab_check_map(gos_vmm_tab *t, uint64_t va, uint64_t bytes, uint64_t id)
{
    gos_vmmt_handle *h = gos_vmmtab_live(t, id);
    if (!h)
        return GOS_EINVAL;
    if (bytes > h->bytes)
        return gos_fail(GOS_EINVAL, "map of %llu bytes of VMM handle %llu, which has %llu", ULL(bytes), ULL(id),
                        ULL(h->bytes));
    int in = 0;
    for (int i = 0; i < t->n_r && !in; i++)
        in = gos_range_within(t->r[i].va, t->r[i].bytes, va, bytes);
    if (!in)
        return gos_fail(GOS_EINVAL, "map at 0x%llx+%llu: not inside an address reservation of this client", ULL(va),
                        ULL(bytes));
    for (int i = 0; i < t->n_m; i++)
        if (va < t->m[i].va + t->m[i].bytes && t->m[i].va < va + bytes)
            return gos_fail(GOS_EINVAL, "map at 0x%llx+%llu overlaps the mapping at 0x%llx+%llu", ULL(va), ULL(bytes),
                            ULL(t->m[i].va), ULL(t->m[i].bytes));
    return GOS_OK;
}

int gos_vmmtab_map_add(gos_vmm_tab *t, uint64_t va, uint64_t bytes, uint64_t id)
{
    gos_vmmt_handle *h = find_handle(t, id);
    int rc = h ? gos_grow((void **)&t->m, &t->cap_m, t->n_m, sizeof *t->m, 16)
               : gos_fail(GOS_EINVAL, "VMM handle %llu is not an allocation of this client", ULL(id));
    if (rc)
        return rc;
    t->m[t->n_m++] = (gos_vmmt_map){va, bytes, id, GOS_VMM_ACCESS_NONE};
    h->maps++;
    return GOS_OK;
}

int gos_vmmtab_map_at(const gos_vmm_tab *t, uint64_t va)
{
    for (int i = 0; i < t->n_m; i++)
        if (t->m[i].va == va)
            return i;
    return -1;
}

int gos_vmmtab_cover(const gos_vmm_tab *t, uint64_t va, uint64_t bytes)
{
    uint64_t at = va, end = va + bytes;
    while (at < end) {
        int i = gos_vmmtab_map_at(t, at);
        if (i < 0 || t->m[i].bytes > end - at)
            return gos_fail(GOS_EINVAL, "0x%llx+%llu is not whole mappings of this client (%s at 0x%llx)", ULL(va),
                            ULL(bytes), i < 0 ? "none starts" : "one runs past the end", ULL(at));
        at += t->m[i].bytes;
    }
    return GOS_OK;
}

void gos_vmmtab_map_del(gos_vmm_tab *t, int i, uint64_t *freed)
{
    uint64_t id = t->m[i].id;
    t->m[i] = t->m[--t->n_m];
    gos_vmmt_handle *h = find_handle(t, id);
    *freed = 0;
    if (h) {
        h->maps--;
        *freed = maybe_gone(t, h);
    }
}

void gos_vmmtab_access(gos_vmm_tab *t, uint64_t va, uint64_t bytes, int access)
{
    for (int i = 0; i < t->n_m; i++)
        if (gos_range_within(va, bytes, t->m[i].va, t->m[i].bytes))
            t->m[i].access = access;
}

static int by_va(const void *a, const void *b)
{
    uint64_t x = ((const gos_vmmt_map *)a)->va, y = ((const gos_vmmt_map *)b)->va;
    return x < y ? -1 : x > y;
}

int gos_vmmtab_runs(const gos_vmm_tab *t, int (*fn)(void *ctx, uint64_t va, uint64_t bytes, int ro), void *ctx)
{
    if (!t->n_m)
        return GOS_OK;
    gos_vmmt_map *s = malloc((size_t)t->n_m * sizeof *s);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of host memory");
    memcpy(s, t->m, (size_t)t->n_m * sizeof *s);
    qsort(s, (size_t)t->n_m, sizeof *s, by_va);
    int rc = GOS_OK;
    for (int i = 0; i < t->n_m && !rc;) {
        if (s[i].access == GOS_VMM_ACCESS_NONE) {
            i++;
            continue;
        }
        int j = i + 1;
        uint64_t end = s[i].va + s[i].bytes;
        while (j < t->n_m && s[j].va == end && s[j].access == s[i].access)
            end += s[j++].bytes;
        rc = fn(ctx, s[i].va, end - s[i].va, s[i].access == GOS_VMM_ACCESS_READ);
        i = j;
    }
    free(s);
    return rc;
}

uint64_t gos_vmmtab_bytes(const gos_vmm_tab *t)
{
    uint64_t b = 0;
    for (int i = 0; i < t->n_h; i++)
        b += t->h[i].bytes;
    return b;
}

void gos_vmmtab_free(gos_vmm_tab *t)
{
    free(t->h);
    free(t->r);
    free(t->m);
    memset(t, 0, sizeof *t);
}
