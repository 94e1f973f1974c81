/* clock.h: the host's monotonic clock, for timing probes and protocols. */
#ifndef GOS_CLOCK_H
#define GOS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Seconds of CLOCK_MONOTONIC, as a double. */
static inline double gos_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Nanoseconds of CLOCK_MONOTONIC. */
static inline uint64_t gos_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#endif
