/* SPDX-License-Identifier: Apache-2.0 */
/* ring_shm.h: the shared-memory fast path between a client and its executor (issue 9.4).
 *
 * The client library creates a memfd of GOS_RING_BYTES at connect and passes it
 * over its socket (GOS_MSG_RING, SCM_RIGHTS); the daemon forwards it to the
 * client's executor (X_RING) and owns the grant: the executor consumes the ring
 * only while ctl.grant is set. Submission and completion share the slots: the
 * client fills slot (tail % GOS_RING_SLOTS) and advances sq_tail; the executor
 * copies the slot out (the client may rewrite it concurrently: hostile input,
 * validated on the copy only), runs it, writes rc / msg / DTOH data back into
 * the slot and advances cq_done. A slot is reused only once cq_done passed it.
 * Waiting is a bounded spin (ctl.spin_us) then a futex wait on a shared word
 * (sq_futex for the executor, cq_futex for the client; both are counters bumped
 * on every advance). A revoked grant completes every entry not yet started with
 * GOS_RING_REVOKED: the client sends those again over the socket, in order.
 *
 * Header-only: the client library and the daemon's binary both use it.
 * Process: every side of the wire (client, daemon, executor). */
#ifndef GOS_PROTO_RING_SHM_H
#define GOS_PROTO_RING_SHM_H

#include "common/clock.h"
#include "proto/req.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GOS_RING_MAGIC 0x676e5247u /* "GRng" */
#define GOS_RING_SLOTS 64u
#define GOS_RING_SLOT_BYTES 8192u
#define GOS_RING_MSG 160u
/* inline data (tiny HtoD, DtoH results, kernel parameters) per slot */
#define GOS_RING_DATA (GOS_RING_SLOT_BYTES - 320u)
#define GOS_RING_BYTES (4096u + GOS_RING_SLOTS * GOS_RING_SLOT_BYTES)
/* completion code of an entry the executor did not run (grant revoked, memory
 * swapped out): the client sends it again over the socket */
#define GOS_RING_REVOKED 1

/* An entry is a request (req.h, checked with gos_req_ring's rules: flags
 * GOS_F_ASYNC, GOS_F_INLINE), its completion and its data. Its op:
 *   GOS_OP_HTOD    region/offset -> dptr (or inline data: flags GOS_F_INLINE)
 *   GOS_OP_DTOH    dptr -> region/offset (or into the slot's data)
 *   GOS_OP_DTOD    dptr2 -> dptr
 *   GOS_OP_LAUNCH  func, geometry, param_bytes of parameters in data
 *   GOS_OP_FENCE   waits for everything before it; answers the first asynchronous error
 *   GOS_OP_GATE    the entries after it wait until the u64 at region/offset (host memory,
 *                  8-aligned) is at least dptr2 (dptr: the client's own address of that
 *                  word, for its replay over the socket); the device goes on with what is
 *                  before it (CUDA's host functions: subsequent work waits for them) */
struct gos_ring_ent {
    GOS_REQ_HEAD; /* the request (priority unused: a ring runs in its order) */
    int32_t rc;   /* completion */
    char msg[GOS_RING_MSG];
    unsigned char data[GOS_RING_DATA];
};

/* The control block. Each side's hot words sit on cache lines of their own:
 * a word the other side spins on shares no line with words this side keeps
 * writing (a line written by one core and polled by another moves between them
 * on every write). */
struct gos_ring_ctl {
    /* the daemon's (and the executor's pid, written once) */
    uint32_t magic, slots;
    _Atomic uint32_t open;     /* daemon: the ring is in service (the client's hint
                                * to use it; the executor obeys only the daemon's
                                * grant page, proto/xproto.h) */
    _Atomic uint32_t spin_us;  /* the bounded spin before a futex wait */
    _Atomic int32_t exec_pid;  /* executor: its pid (the client notices its loss) */
    /* the client's */
    _Alignas(64) _Atomic uint32_t sq_tail; /* entries submitted */
    _Atomic uint32_t sq_futex;   /* bumped after advancing sq_tail (executor waits here) */
    _Atomic uint32_t client_sleeping;
    _Atomic uint32_t client_ack; /* entries before this one it has taken back after a revoke */
    /* the executor's */
    _Alignas(64) _Atomic uint32_t cq_done; /* entries completed */
    _Atomic uint32_t cq_futex;     /* bumped after advancing cq_done (client waits here) */
    _Atomic uint32_t exec_sleeping;
    _Atomic uint32_t revoked_upto; /* entries before this one may have been revoked */
    _Atomic uint32_t running;      /* the executor holds its grant: what was submitted is
                                    * being run (a hint for the client's spin only) */
    /* the executor's counters, for the client to read (the daemon charges the
     * grant page's copies of them, which the client cannot write) */
    _Alignas(64) _Atomic uint64_t busy_ns; /* time spent running entries */
    _Atomic uint64_t entries;      /* entries run */
    _Atomic uint64_t refused;      /* entries refused as malformed */
    _Atomic uint64_t copy_busy_ns; /* the part of busy_ns and entries that were copies */
    _Atomic uint64_t copy_entries;
};

_Static_assert(sizeof(struct gos_ring_ent) <= GOS_RING_SLOT_BYTES, "ring slot");
_Static_assert(sizeof(struct gos_ring_ctl) <= 4096, "ring control block");

static inline struct gos_ring_ctl *gos_ring_ctl(void *base) { return (struct gos_ring_ctl *)base; }
static inline struct gos_ring_ent *gos_ring_slot(void *base, uint32_t i)
{
    return (struct gos_ring_ent *)((char *)base + 4096 + (size_t)(i % GOS_RING_SLOTS) * GOS_RING_SLOT_BYTES);
}

static inline uint64_t gos_ring_now_ns(void) { return gos_now_ns(); }

/* One step of a spin: lets the sibling hardware thread run and keeps the
 * polled line from being hammered. */
static inline void gos_ring_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Whether this host has cores to spare for the long spins (a synchronising
 * client while its executor holds the grant, an executor told its turn, the
 * daemon at a hand-over): at least GOS_RING_SPIN_MIN_CPUS usable CPUs, as
 * CUDA spins only while it has more cores than contexts. On a host of two
 * cores those spinners would starve the very executor they wait for. */
#define GOS_RING_SPIN_MIN_CPUS 4
static inline int gos_ring_cores_to_spare(void)
{
    static _Atomic int spare = -1;
    int s = atomic_load_explicit(&spare, memory_order_relaxed);
    if (s < 0) {
        cpu_set_t set;
        int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
        s = n >= GOS_RING_SPIN_MIN_CPUS;
        atomic_store_explicit(&spare, s, memory_order_relaxed);
    }
    return s;
}

/* After a change the other side may wait for: bumps word and wakes it if it
 * sleeps. A shared (not FUTEX_PRIVATE) futex: the two sides are different
 * processes. */
static inline void gos_ring_kick(_Atomic uint32_t *word, _Atomic uint32_t *sleeping)
{
    atomic_fetch_add_explicit(word, 1, memory_order_seq_cst);
    if (atomic_load_explicit(sleeping, memory_order_seq_cst))
        syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Waits until ready(arg) or timeout_ns (0: forever) passed: spin for spin_us,
 * and on up to held_us while *held (when not NULL) is set, then futex waits on
 * word (bumped by every change worth a look). *sleeping is raised while asleep
 * so the other side knows to wake it. Returns 1 when ready, 0 on timeout. */
static inline int gos_ring_wait_held(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, unsigned spin_us,
                                     _Atomic uint32_t *held, unsigned held_us, uint64_t timeout_ns,
                                     int (*ready)(void *), void *arg)
{
    uint64_t t0 = gos_ring_now_ns(), spin_end = t0 + (uint64_t)spin_us * 1000u;
    uint64_t held_end = t0 + (uint64_t)held_us * 1000u;
    for (;;) {
        if (ready(arg))
            return 1;
        uint64_t now = gos_ring_now_ns();
        if (timeout_ns && now - t0 >= timeout_ns)
            return 0;
        if (now < spin_end || (held && now < held_end && atomic_load_explicit(held, memory_order_relaxed))) {
            gos_ring_relax();
            continue;
        }
        uint32_t seen = atomic_load_explicit(word, memory_order_seq_cst);
        atomic_fetch_add_explicit(sleeping, 1, memory_order_seq_cst);
        if (!ready(arg)) {
            /* re-check every 10 ms (a lost wake-up costs no hang), or at the timeout */
            uint64_t left = timeout_ns && timeout_ns - (now - t0) < 10000000u ? timeout_ns - (now - t0) : 10000000u;
            struct timespec ts = {0, (long)left};
            syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
        }
        atomic_fetch_sub_explicit(sleeping, 1, memory_order_seq_cst);
    }
}

/* gos_ring_wait_held without the held word. */
static inline int gos_ring_wait(_Atomic uint32_t *word, _Atomic uint32_t *sleeping, unsigned spin_us,
                                uint64_t timeout_ns, int (*ready)(void *), void *arg)
{
    return gos_ring_wait_held(word, sleeping, spin_us, NULL, 0, timeout_ns, ready, arg);
}

#endif
