/* SPDX-License-Identifier: Apache-2.0 */
/* clock.h: the host's monotonic clock, the one clock of every process (the
 * daemon, the executor, the client library, the shim): timing, protocol waits,
 * and the deadlines of condition variables, which run on it (gos_cond_init).
 * No other file names CLOCK_MONOTONIC (issue 20). */
#ifndef GOS_CLOCK_H
#define GOS_CLOCK_H

#include <errno.h>
#include <pthread.h>
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

/* The clock as a timespec (an event's record time, say). */
static inline void gos_now_timespec(struct timespec *t)
{
    clock_gettime(CLOCK_MONOTONIC, t);
}

/* The absolute deadline `ns` from now on the monotonic clock, for
 * pthread_cond_timedwait on a condition made by gos_cond_init. */
static inline struct timespec gos_deadline_ns(uint64_t ns)
{
    uint64_t t = gos_now_ns() + ns;
    return (struct timespec){.tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull)};
}

/* The same for an absolute instant of gos_now_ns. */
static inline struct timespec gos_at_ns(uint64_t t)
{
    return (struct timespec){.tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull)};
}

/* Sleeps until the instant t of gos_now_ns (signals do not cut it short). */
static inline void gos_sleep_until_ns(uint64_t t)
{
    struct timespec ts = gos_at_ns(t);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* A condition variable whose timed waits run on this clock. */
static inline int gos_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

#endif
