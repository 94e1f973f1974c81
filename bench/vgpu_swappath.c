/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_swappath.c: vgpu_bench's `swappath` section (issue 42): what an
 * eviction into the host swap pool costs on each path, natively, so that the
 * daemon's choice (lock the pool ahead, lock on the eviction's path, or copy
 * into pageable memory and lock later) rests on measurements of this card and
 * host rather than guesses. On GPU-cf4134f8 a tenant's executor locking its
 * 45 GB window ahead stalled its tenant's start by 11 s, and an eviction past
 * the prefaulted part locked 27 GB cold for 10 s.
 *
 * For a buffer of --swap-mb (1024 MB with --quick, else 4096), in a memfd as
 * the daemon's pool is:
 *   register_cold   page-locking pages never touched (the kernel finds and
 *                   zeroes them too): GB/s
 *   register_warm   page-locking pages already faulted in (the prefault's)
 *   dtoh_locked     device-to-host into the locked memfd
 *   dtoh_pageable   the same into a faulted-in memfd not locked (the driver
 *                   stages the copy)
 *   dtoh_cold       into a memfd never touched, not locked (each copy checked
 *                   byte for byte against the pattern written to the device)
 *   round_trip_us   launch + synchronise of the empty kernel: alone, and while
 *                   another thread of this process page-locks a faulted-in
 *                   memfd of the buffer's size (median and max): whether
 *                   locking ahead stalls the tenant's launches
 *   other_process   the same while another process (its own CUDA context,
 *                   as a swap helper of the daemon would be) page-locks such
 *                   a memfd: whether locking in a process of its own stalls
 *                   nobody (only the round trips inside its locking count)
 * Native only: no daemon runs. */
#include "vgpu_lib.h"

#include "common/clock.h"
#include "common/status.h"
#include "device/exec_ops.h"

#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

long swap_mb; /* --swap-mb (0: the default above) */

/* A memfd of n bytes mapped: faulted in when touch. */
static void *memfd_buf(size_t n, int touch)
{
    int fd = memfd_create("gpuos-swappath", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)n))
        DIE("memfd of %zu bytes", n);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        DIE("mapping %zu bytes", n);
    if (touch)
        for (size_t i = 0; i < n; i += 4096)
            ((volatile char *)p)[i] = 1;
    return p;
}

static double secs_since(uint64_t t0) { return (double)(gos_now_ns() - t0) * 1e-9; }

/* GB/s of page-locking p (n bytes); left locked */
static double register_gbps(void *p, size_t n)
{
    uint64_t t0 = gos_now_ns();
    if (gos_exec_host_register(dev, p, n))
        DIE("page-locking %zu bytes: %s", n, gos_last_error());
    return (double)n / secs_since(t0) / 1e9;
}

/* GB/s of one synchronous device-to-host copy of n bytes into p, which must
 * then equal want (the device buffer's contents) */
static double dtoh_gbps(void *p, uint64_t d, size_t n, const void *want, const char *what)
{
    uint64_t t0 = gos_now_ns();
    if (gos_exec_copy_dtoh_sync(dev, p, d, n))
        DIE("copy of %zu bytes: %s", n, gos_last_error());
    double g = (double)n / secs_since(t0) / 1e9;
    if (memcmp(p, want, n))
        DIE("swappath: the copy into %s memory differs from the device's contents", what);
    return g;
}

struct locker {
    void *p;
    size_t n;
    _Atomic int done;
    double gbps;
};

static void *lock_thread(void *arg)
{
    struct locker *l = arg;
    l->gbps = register_gbps(l->p, l->n);
    atomic_store(&l->done, 1);
    return NULL;
}

/* launch + synchronise round trips while *running (or m of them): median and
 * max (us) */
static void round_trips(_Atomic int *stop, int m, double *med, double *max)
{
    static double t[4000];
    int k = 0;
    while (k < (int)(sizeof t / sizeof t[0]) && (stop ? !atomic_load(stop) : k < m))
        k += wl_round_trips(&nat_be, 0, 1, 0, t + k);
    if (!k)
        DIE("no round trips");
    *max = 0;
    for (int i = 0; i < k; i++)
        *max = t[i] > *max ? t[i] : *max;
    *med = median(t, k);
}

/* `vgpu_bench --native-tenant locker MB [--sim CHIP]`: the other process of
 * other_process. Opens the device, faults in a memfd of MB, says ready, waits
 * for the start instant, page-locks it and prints "t0 t1 GB/s" (now()). */
int swappath_locker_main(int argc, char **argv)
{
    long mb = argc >= 4 ? strtol(argv[3], NULL, 10) : 0;
    if (mb < 1) {
        fprintf(stderr, "vgpu_bench --native-tenant locker MB [--sim CHIP]\n");
        return 2;
    }
    if (argc == 6 && !strcmp(argv[4], "--sim"))
        sim_chip = argv[5];
    gos_device_spec spec = {.sim = sim_chip, .ordinal = 0};
    if (gos_device_open(&spec, &dev) || gos_exec_init(dev)) {
        fprintf(stderr, "locker: %s\n", gos_last_error());
        return 1;
    }
    size_t n = (size_t)mb << 20;
    void *p = memfd_buf(n, 1);
    if (native_ready_wait() < 0)
        return 1;
    double t0 = now(), g = register_gbps(p, n), t1 = now();
    printf("%.6f %.6f %.4f\n", t0, t1, g);
    return 0;
}

/* Round trips while another process page-locks n bytes (other_process):
 * median and max of those that overlap its locking (0 when none did); its
 * GB/s. */
static void other_process(size_t n, double *med, double *max, double *gbps)
{
    char mb[32];
    snprintf(mb, sizeof mb, "%zu", n >> 20);
    char *av[] = {"vgpu_bench", "--native-tenant", "locker", mb, sim_chip ? "--sim" : NULL, (char *)sim_chip, NULL};
    char **avs[1] = {av};
    pid_t kid;
    FILE *out;
    double start = natives_go(1, avs, &kid, &out);
    static double t[20000], at[20000];
    int k = 0;
    /* until its answer is due: its start and twice the in-process time at 1 GB/s at least */
    double until = start + 2.0 + 2.0 * (double)n / 1e9;
    int fd = fileno(out);
    while (k < (int)(sizeof t / sizeof t[0]) && now() < until) {
        at[k] = now();
        if (wl_round_trips(&nat_be, 0, 1, 0, t + k) < 1)
            DIE("no round trips");
        k++;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (at[k - 1] > start && poll(&pf, 1, 0) == 1)
            break; /* it answered */
    }
    double t0, t1;
    if (fscanf(out, "%lf %lf %lf", &t0, &t1, gbps) != 3)
        DIE("the locking process did not answer");
    fclose(out);
    waitpid(kid, NULL, 0);
    int m = 0;
    *max = 0;
    for (int i = 0; i < k; i++)
        if (at[i] <= t1 && at[i] + t[i] * 1e-6 >= t0) {
            t[m++] = t[i];
            *max = t[i] > *max ? t[i] : *max;
        }
    *med = m ? median(t, m) : 0;
}

json_t *swappath(void)
{
    size_t n = (size_t)(swap_mb > 0 ? swap_mb : quick ? 1024 : 4096) << 20;
    uint64_t d;
    if (gos_exec_mem_alloc(dev, n, &d))
        DIE("a device buffer of %zu bytes: %s", n, gos_last_error());
    wl_round_trips(&nat_be, 20, 0, 0, NULL); /* (warm) */
    void *cold = memfd_buf(n, 0), *warm = memfd_buf(n, 1), *page = memfd_buf(n, 1), *cold2 = memfd_buf(n, 0);
    double reg_cold = register_gbps(cold, n), reg_warm = register_gbps(warm, n);
    uint64_t *pat = malloc(n); /* (a pattern on the device, so that every copy is checked) */
    if (!pat)
        DIE("a host buffer of %zu bytes", n);
    for (size_t i = 0; i < n / 8; i++)
        pat[i] = i * 0x9E3779B97F4A7C15ull;
    if (gos_exec_copy_htod_sync(dev, d, pat, n))
        DIE("copy of %zu bytes: %s", n, gos_last_error());
    double locked = dtoh_gbps(warm, d, n, pat, "locked"), pageable = dtoh_gbps(page, d, n, pat, "pageable");
    double cold_copy = dtoh_gbps(cold2, d, n, pat, "untouched");
    free(pat);
    gos_exec_host_unregister(dev, cold);
    gos_exec_host_unregister(dev, warm);
    double alone_med, alone_max, busy_med, busy_max;
    round_trips(NULL, 200, &alone_med, &alone_max);
    struct locker l = {memfd_buf(n, 1), n, 0, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, lock_thread, &l))
        DIE("a thread");
    round_trips(&l.done, 0, &busy_med, &busy_max);
    pthread_join(th, NULL);
    gos_exec_host_unregister(dev, l.p);
    double oth_med, oth_max, oth_gbps;
    other_process(n, &oth_med, &oth_max, &oth_gbps);
    fprintf(stderr,
            "swappath %zu MB: page-locking cold %.2f GB/s, faulted-in %.2f GB/s; dtoh into locked %.2f, pageable "
            "%.2f, cold pageable %.2f GB/s; launch+sync %.1f us (max %.1f) alone, %.1f us (max %.1f) while "
            "another thread locks, %.1f us (max %.1f) while another process locks (%.2f GB/s)\n",
            n >> 20, reg_cold, reg_warm, locked, pageable, cold_copy, alone_med, alone_max, busy_med, busy_max, oth_med,
            oth_max, oth_gbps);
    munmap(cold, n);
    munmap(warm, n);
    munmap(page, n);
    munmap(cold2, n);
    munmap(l.p, n);
    gos_exec_mem_free(dev, d);
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}}", "bytes", (json_int_t)n,
                     "register_cold_gbps", reg_cold, "register_warm_gbps", reg_warm, "dtoh_locked_gbps", locked,
                     "dtoh_pageable_gbps", pageable, "dtoh_cold_gbps", cold_copy, "round_trip_us", "alone_median",
                     alone_med, "alone_max", alone_max, "locking_median", busy_med, "locking_max", busy_max,
                     "locking_thread_gbps", l.gbps, "other_process_median", oth_med, "other_process_max", oth_max,
                     "other_process_gbps", oth_gbps);
}
