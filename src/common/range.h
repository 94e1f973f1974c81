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

#include <stdint.h>

static inline int gos_range_within(uint64_t base, uint64_t len, uint64_t p, uint64_t n)
{
    return p >= base && p - base <= len && n <= len - (p - base);
}

/* *out = a * b; 0 when it fits in 64 bits, 1 when it would wrap. */
static inline int gos_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

#endif
