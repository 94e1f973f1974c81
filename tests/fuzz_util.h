/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_util.h: what the mutation fuzzers share (tests/fuzz_serve.c,
 * tests/fuzz_image.c): a xorshift generator, deterministic for a seed given to
 * fuzz_seed, and a monotonic clock in seconds for their time bounds. */
#ifndef GOS_TESTS_FUZZ_UTIL_H
#define GOS_TESTS_FUZZ_UTIL_H

#include <stdint.h>
#include <time.h>

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static inline uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static inline void fuzz_seed(uint64_t seed)
{
    rs ^= seed * 0x2545F4914F6CDD1Dull;
    if (!rs)
        rs = 1;
}

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
