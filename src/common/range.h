/* SPDX-License-Identifier: Apache-2.0 */
/* range.h: the one overflow-safe range check used wherever a client names a
 * range of memory (issue 15.1): device ranges of copies, frees and built-in
 * kernels' pointer arguments, host ranges in shared regions, on every backend.
 *
 * gos_range_within(base, len, p, n): whether [p, p + n) lies inside
 * [base, base + len). Exact for every uint64 input: no sum is formed that could
 * wrap (p + n, base + len), so a range starting past the block, or one whose end
 * wraps around 2^64, is never inside. An empty range (n == 0) is inside when p
 * lies in [base, base + len]. */
#ifndef GOS_RANGE_H
#define GOS_RANGE_H

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

/* *out = a * b; 0 when it fits in 64 bits, 1 when it would wrap. */
static inline int gos_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

#endif
