/* SPDX-License-Identifier: Apache-2.0 */
/* range.h: the one overflow-safe range check used wherever a client names a
 * range of memory (issue 15.1): device ranges of copies, frees and built-in
 * kernels' pointer arguments, host ranges in shared regions, on every backend.
 *
 * gos_range_within(base, len, p, n): whether [p, p + n) lies inside
 * [base, base + len). Exact for every uint64 input: no sum is formed that could
 * wrap (p + n, base + len), so a range starting past the block, or one whose end
 * wraps around 2^64, is never inside. An empty range (n == 0) is inside when p
 * lies in [base, base + len].
 * The rule over them, gos_range_copy / gos_range_verdict (below), is the one
 * definition of which ranges a client's copy may touch. */
#ifndef GOS_RANGE_H
#define GOS_RANGE_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

static inline int gos_range_within(uint64_t base, uint64_t len, uint64_t p, uint64_t n)
{
    return p >= base && p - base <= len && n <= len - (p - base);
}

/* A device range, and the head of every table entry a client's ranges are
 * checked against (issue 20: one range checker): the daemon's allocations and
 * module globals of a client (serve/session.h), an executor's (exec_internal.h). The
 * members are reached by name (e->dptr, e->bytes), the whole as e->range. */
struct gos_range {
    uint64_t dptr, bytes;
};
#define GOS_RANGE_HEAD                                                                                         \
    union {                                                                                                    \
        struct gos_range range;                                                                                \
        struct {                                                                                               \
            uint64_t dptr, bytes;                                                                              \
        };                                                                                                     \
    }

/* The index of the first of the n entries of tab (stride bytes apart, each
 * starting with GOS_RANGE_HEAD) that holds [p, p + len), or -1. */
static inline int gos_range_find(const void *tab, int n, size_t stride, uint64_t p, uint64_t len)
{
    for (int i = 0; i < n; i++) {
        const struct gos_range *r = (const struct gos_range *)(const void *)((const char *)tab + (size_t)i * stride);
        if (gos_range_within(r->dptr, r->bytes, p, len))
            return i;
    }
    return -1;
}

/* The one range rule (issue 40.1): the daemon's for a client's copies
 * (serve/client.c: COPY, COPY_CHECK), the executor's for its ring entries and
 * a built-in kernel's arguments (exec/exec_mem.c, exec_run.c). A lookup in the
 * client's own tables says what holds a range: */
enum {
    GOS_RANGE_IN = 1,      /* inside one entry (an allocation, a module global, a mapping) */
    GOS_RANGE_RO = 2,      /* that entry is read-only (SHM_RDONLY, a VMM mapping without write) */
    GOS_RANGE_SWAPPED = 4, /* that entry is swapped out (the executor's table) */
};
typedef unsigned (*gos_range_look_fn)(void *ctx, uint64_t p, uint64_t n);

/* One range against the rule: inside an entry, not read-only when written.
 * GOS_OK, swapped_rc for a swapped-out entry, or the error with its line. */
static inline int gos_range_verdict(unsigned at, int write, uint64_t p, uint64_t n, const char *what, int swapped_rc)
{
    if (!(at & GOS_RANGE_IN))
        return gos_fail(GOS_EINVAL, "%s range 0x%llx+%llu is not inside an allocation of this client", what,
                        (unsigned long long)p, (unsigned long long)n);
    if (write && (at & GOS_RANGE_RO)) /* refused, never left to fault the context */
        return gos_fail(GOS_EPERM, "device range 0x%llx+%llu is a read-only attachment (SHM_RDONLY)",
                        (unsigned long long)p, (unsigned long long)n);
    return at & GOS_RANGE_SWAPPED ? swapped_rc : GOS_OK;
}

/* A copy's device ranges: its device side dptr, written unless the copy goes
 * to the host (to_host), and a device-to-device copy's source dptr2 (dtod),
 * read; each looked up by look(ctx, ...). GOS_OK or the first range's verdict. */
static inline int gos_range_copy(int to_host, int dtod, uint64_t dptr, uint64_t dptr2, uint64_t bytes,
                                 gos_range_look_fn look, void *ctx, int swapped_rc)
{
    int rc = gos_range_verdict(look(ctx, dptr, bytes), !to_host, dptr, bytes, "device", swapped_rc);
    return rc || !dtod ? rc : gos_range_verdict(look(ctx, dptr2, bytes), 0, dptr2, bytes, "source", swapped_rc);
}

/* *out = a * b; 0 when it fits in 64 bits, 1 when it would wrap. */
static inline int gos_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

#endif
