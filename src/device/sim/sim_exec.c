/* SPDX-License-Identifier: Apache-2.0 */
/* sim_exec.c: pillar 3 execution on the simulated device (exec_ops.h).
 *
 * Device memory is host RAM (anonymous mappings, lazily backed, so a simulated
 * 141 GB device costs nothing until touched); a device pointer is the mapping's
 * address. Work runs in *real* elapsed time, so that schedulers and fairness are
 * measured exactly as on a GPU: every operation gets start = max(now, its
 * stream's tail, its engine's free time) and end = start + modelled duration;
 * events record a stream's tail, event_sync waits until that instant (sleeping,
 * then polling the last 200 us, see sleep_until). Data moves
 * at enqueue time (stream order is preserved by the callers' own ordering).
 *
 * Built-in module GOS_EXEC_BUILTIN ("builtin"; "sim:builtin" is accepted too):
 * the kernels of kernels/exec.cu by name and parameter layout, their work
 * modelled as a duration:
 *   sleep_ns (uint64 ns)                          busy for ns nanoseconds
 *   loop (uint64 iters)                           iters * loop_ns_per_iter
 *   madd / mmul (uint64 a, b, c, uint32 n)        n^2 * madd_ns_per_element,
 *                                                 n^3 * mmul_ns_per_mac; madd also
 *                                                 computes c = a + b when a, b, c
 *                                                 are device memory (mmul: no data)
 *   fill (uint64 dptr, uint32 value, uint32 pad, uint64 count)  writes count u32
 *   empty ()                                      the launch overhead only
 *   xcopy (uint64 dst, uint64 src, uint64 count)  count words src -> dst, no range
 *                                                 check by the daemon (a tenant's own
 *                                                 raw kernel); outside this device's
 *                                                 allocations it faults like fault
 *   fault ()                                      an illegal address (the GPU kernel
 *                                                 reads 0x10): like CUDA's sticky error,
 *                                                 every later call of this device fails
 * A module image "SIMMOD\n" followed by lines "alias=builtin" loads too, so the
 * byte-image path is exercised. Model parameters come from the chip's
 * sim.exec object: htod_gbps, dtoh_gbps, dtod_gbps, copy_latency_us, launch_us,
 * loop_ns_per_iter, madd_ns_per_element, mmul_ns_per_mac, vmm_create_us_per_mb
 * (the time physical memory takes to create, sim_vmm.c: 0 by default; a test
 * sets it to open the window a large cuMemCreate leaves on a GPU), each checked
 * to lie in its range. */
#include "device/exec_builtin.h"
#include "device/exec_ops.h"
#include "device/sim/sim_internal.h"
#include "device/topo_ops.h"

#include "common/range.h"
#include "common/grow.h"
#include "common/clock.h"
#include "common/status.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { ENG_COMPUTE, ENG_HTOD, ENG_DTOH, ENG_DTOD, N_ENG };

struct sim_alloc {
    uint64_t ptr, bytes;
};

struct sim_stream {
    uint64_t tail;
    int prio; /* -1 least, 0 default, 1 greatest (recorded; the simulated engines keep FIFO) */
};

struct sim_event {
    uint64_t t;
    int recorded;
};

enum { K_SLEEP, K_LOOP, K_MADD, K_MMUL, K_FILL, K_EMPTY, K_FAULT, K_XCOPY, K_PATTERN, K_STAMP };
struct sim_fn {
    char name[64];
    int kind;
};
struct sim_global {
    char name[64];
    uint64_t dptr, bytes;
};
struct sim_mod {
    int n, n_globals;
    struct sim_fn fns[16];
    struct sim_global globals[8]; /* SIMMOD "@name=bytes" lines: zeroed device memory */
};

#define SIM_HOST_RANGES 64
struct sim_exec {
    pthread_mutex_t lock;
    uint64_t eng_free[N_ENG];
    double gbps[N_ENG];
    double copy_lat_ns, launch_ns;
    double loop_ns, madd_ns, mmul_ns; /* per iteration, per element, per multiply-add */
    uint64_t mem_total, mem_used;
    struct sim_alloc *allocs;
    int n_allocs, cap_allocs;
    int abandoned; /* atomic: shutdown gave up on running work (se_abandon) */
    int faulted;   /* atomic: the fault kernel ran; the context is dead (sticky) */
    /* registered host memory (host_register), which kernels reach at its own
     * address (unified addressing, as the H200's mapped host memory) */
    struct {
        uint64_t p, n;
    } host[SIM_HOST_RANGES];
};

#define SIM_FAULT_MSG "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered (simulated: kernel fault)"
/* Like a CUDA context after a fault: every later call fails with the same error. */
#define FAULT_CHECK(s)                                                                                          \
    do {                                                                                                       \
        if (__atomic_load_n(&(s)->faulted, __ATOMIC_ACQUIRE))                                                  \
            return gos_fail(GOS_EDEVICE, SIM_FAULT_MSG);                                                       \
    } while (0)

static uint64_t now_ns(void) { return gos_now_ns(); }

/* Waits until t like a GPU's completion is noticed: a sleep would overshoot by the
 * kernel's timer and wake-up latency (50 us and more in a VM, far longer than the
 * modelled launch or small copy), so the last SPIN_NS are polled, yielding the CPU
 * to anything else runnable. */
#define SPIN_NS 200000ull
/* Sleeps in slices of at most this, so that an abandoned wait ends promptly. */
#define SLICE_NS 20000000ull
/* GOS_OK at t, or GOS_EIO as soon as the device is abandoned (shutdown). */
static int sleep_until(const int *abandoned, uint64_t t)
{
    for (;;) {
        if (__atomic_load_n(abandoned, __ATOMIC_RELAXED))
            return gos_fail(GOS_EIO, "simulated work abandoned: the daemon is shutting down");
        uint64_t n = now_ns();
        if (t <= n + SPIN_NS)
            break;
        uint64_t w = t - SPIN_NS;
        if (w > n + SLICE_NS)
            w = n + SLICE_NS;
        gos_sleep_until_ns(w);
    }
    while (now_ns() < t)
        sched_yield();
    return GOS_OK;
}

static struct sim_exec *S(gos_device *d) { return d->exec_priv; }

/* A model parameter of sim.exec: absent gives dflt; present, it must be a finite
 * number in [lo, hi] (lo excluded when lo_open), else the chip is rejected. */
static int jnum(json_t *o, const char *k, double dflt, double lo, int lo_open, double hi, double *out)
{
    json_t *v = o ? json_object_get(o, k) : NULL;
    if (!v) {
        *out = dflt;
        return GOS_OK;
    }
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
        return gos_fail(GOS_EINVAL, "chip sim.exec.%s must be a number in %s%g, %g]", k, lo_open ? "(" : "[", lo,
                        hi);
    *out = x;
    return GOS_OK;
}

static void se_close(gos_device *d)
{
    struct sim_exec *s = S(d);
    if (!s)
        return;
    for (int i = 0; i < s->n_allocs; i++)
        munmap((void *)(uintptr_t)s->allocs[i].ptr, s->allocs[i].bytes);
    free(s->allocs);
    pthread_mutex_destroy(&s->lock);
    free(s);
    d->exec_priv = NULL;
}

static int se_init(gos_device *d)
{
    if (d->exec_priv)
        return GOS_OK;
    struct sim_exec *s = calloc(1, sizeof *s);
    if (!s)
        return gos_fail(GOS_ENOMEM, "out of host memory");
    pthread_mutex_init(&s->lock, NULL);
    json_t *x = NULL;
    if (d->chip && d->chip->json)
        x = json_object_get(json_object_get(d->chip->json, "sim"), "exec");
    s->gbps[ENG_COMPUTE] = 1;
    /* Out-of-range parameters would make every modelled duration infinite, NaN
     * or negative (issue 15.6): rejected with the key. Defaults: loop of 20M
     * iterations 100 ms, 1024x1024 madd 1 ms, mmul 5 ms. */
    double lat_us, launch_us, create_us;
    int rc;
    if ((rc = jnum(x, "htod_gbps", 50.0, 0, 1, 1e5, &s->gbps[ENG_HTOD])) ||
        (rc = jnum(x, "dtoh_gbps", 50.0, 0, 1, 1e5, &s->gbps[ENG_DTOH])) ||
        (rc = jnum(x, "dtod_gbps", 2000.0, 0, 1, 1e6, &s->gbps[ENG_DTOD])) ||
        (rc = jnum(x, "copy_latency_us", 4.0, 0, 0, 1e6, &lat_us)) ||
        (rc = jnum(x, "launch_us", 3.0, 0, 0, 1e6, &launch_us)) ||
        (rc = jnum(x, "loop_ns_per_iter", 5.0, 0, 0, 1e6, &s->loop_ns)) ||
        (rc = jnum(x, "madd_ns_per_element", 1e6 / (1024.0 * 1024.0), 0, 0, 1e6, &s->madd_ns)) ||
        (rc = jnum(x, "mmul_ns_per_mac", 5e6 / (1024.0 * 1024.0 * 1024.0), 0, 0, 1e6, &s->mmul_ns)) ||
        (rc = jnum(x, "vmm_create_us_per_mb", 0, 0, 0, 1e5, &create_us))) { /* (read by sim_vmm.c) */
        pthread_mutex_destroy(&s->lock);
        free(s);
        return rc;
    }
    s->copy_lat_ns = lat_us * 1e3;
    s->launch_ns = launch_us * 1e3;
    s->mem_total = d->info.mem_bytes ? d->info.mem_bytes : (16ull << 30);
    d->exec_priv = s;
    return GOS_OK;
}

static int se_mem_alloc(gos_device *d, uint64_t bytes, uint64_t *dptr)
{
    struct sim_exec *s = S(d);
    FAULT_CHECK(s);
    int rc = GOS_OK;
    pthread_mutex_lock(&s->lock);
    if (bytes == 0 || bytes > s->mem_total - s->mem_used) {
        rc = gos_fail(GOS_ENOMEM, "simulated device out of memory (%llu bytes asked, %llu free)",
                      (unsigned long long)bytes, (unsigned long long)(s->mem_total - s->mem_used));
        goto out;
    }
    if ((rc = gos_grow((void **)&s->allocs, &s->cap_allocs, s->n_allocs, sizeof *s->allocs, 64)))
        goto out;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        rc = gos_fail(GOS_ENOMEM, "simulated device memory of %llu bytes: %s", (unsigned long long)bytes,
                      strerror(errno));
        goto out;
    }
    s->allocs[s->n_allocs++] = (struct sim_alloc){(uint64_t)(uintptr_t)p, bytes};
    s->mem_used += bytes;
    *dptr = (uint64_t)(uintptr_t)p;
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int se_mem_free(gos_device *d, uint64_t dptr)
{
    struct sim_exec *s = S(d);
    int rc = gos_fail(GOS_EINVAL, "0x%llx is not a simulated allocation", (unsigned long long)dptr);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n_allocs; i++)
        if (s->allocs[i].ptr == dptr) {
            munmap((void *)(uintptr_t)dptr, s->allocs[i].bytes);
            s->mem_used -= s->allocs[i].bytes;
            s->allocs[i] = s->allocs[--s->n_allocs];
            rc = GOS_OK;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int se_mem_info(gos_device *d, uint64_t *free_b, uint64_t *total_b)
{
    struct sim_exec *s = S(d);
    pthread_mutex_lock(&s->lock);
    *free_b = s->mem_total - s->mem_used;
    *total_b = s->mem_total;
    pthread_mutex_unlock(&s->lock);
    return GOS_OK;
}

static int se_host_register(gos_device *d, void *p, size_t bytes)
{
    struct sim_exec *s = S(d);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < SIM_HOST_RANGES; i++)
        if (!s->host[i].n) {
            s->host[i].p = (uint64_t)(uintptr_t)p;
            s->host[i].n = bytes;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return GOS_OK; /* (beyond SIM_HOST_RANGES: registered, but no kernel reaches it) */
}
/* unified addressing, as the H200's: the host's address */
static int se_host_device_ptr(gos_device *d, void *p, uint64_t *dptr)
{
    *dptr = (uint64_t)(uintptr_t)p;
    return GOS_OK;
}
static int se_host_unregister(gos_device *d, void *p)
{
    struct sim_exec *s = S(d);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < SIM_HOST_RANGES; i++)
        if (s->host[i].n && s->host[i].p == (uint64_t)(uintptr_t)p)
            s->host[i].n = 0;
    pthread_mutex_unlock(&s->lock);
    return GOS_OK;
}
static int se_host_alloc(gos_device *d, size_t bytes, void **p)
{
    *p = malloc(bytes ? bytes : 1);
    return *p ? GOS_OK : gos_fail(GOS_ENOMEM, "out of host memory");
}
static int se_host_free(gos_device *d, void *p)
{
    free(p);
    return GOS_OK;
}

static int se_stream_create(gos_device *d, void **stream)
{
    *stream = calloc(1, sizeof(struct sim_stream));
    return *stream ? GOS_OK : gos_fail(GOS_ENOMEM, "out of host memory");
}
static int se_stream_create_prio(gos_device *d, int prio, void **stream)
{
    int rc = se_stream_create(d, stream);
    if (!rc)
        ((struct sim_stream *)*stream)->prio = prio < 0 ? -1 : 1;
    return rc;
}
static int se_stream_destroy(gos_device *d, void *stream)
{
    free(stream);
    return GOS_OK;
}

/* Schedules `dur` ns of work on engine e behind the stream; returns its end. */
static uint64_t enqueue(struct sim_exec *s, struct sim_stream *st, int e, double dur)
{
    uint64_t t = now_ns();
    if (st && st->tail > t)
        t = st->tail;
    if (s->eng_free[e] > t)
        t = s->eng_free[e];
    uint64_t end = t + (uint64_t)(dur > 0 ? dur : 0);
    s->eng_free[e] = end;
    if (st)
        st->tail = end;
    return end;
}

static int se_stream_sync(gos_device *d, void *stream)
{
    struct sim_exec *s = S(d);
    FAULT_CHECK(s);
    pthread_mutex_lock(&s->lock);
    uint64_t t = stream ? ((struct sim_stream *)stream)->tail : 0;
    if (!stream)
        for (int e = 0; e < N_ENG; e++)
            t = s->eng_free[e] > t ? s->eng_free[e] : t;
    pthread_mutex_unlock(&s->lock);
    return sleep_until(&s->abandoned, t);
}

/* Whether [p, p + n) lies inside one allocation (lock held): what a GPU's MMU
 * would let through. The daemon checks ranges against the client's own
 * allocations before; this keeps a backend bug or a direct caller from turning a
 * wrong range into a write past an anonymous mapping. */
static int inside(gos_device *d, const struct sim_exec *s, uint64_t p, uint64_t n)
{
    for (int i = 0; i < s->n_allocs; i++)
        if (gos_range_within(s->allocs[i].ptr, s->allocs[i].bytes, p, n))
            return 1;
    return gos_sim_vmm_mapped(d, p, n); /* VMM memory (sim_vmm.c): mapped ranges */
}

/* Whether [p, p + n) lies in registered host memory (lock held). */
static int host_range(const struct sim_exec *s, uint64_t p, uint64_t n)
{
    for (int i = 0; i < SIM_HOST_RANGES; i++)
        if (s->host[i].n && gos_range_within(s->host[i].p, s->host[i].n, p, n))
            return 1;
    return 0;
}

/* As inside(), for a write: a read-only VMM mapping (a SHM_RDONLY
 * attachment) is not writable; registered host memory is. */
static int inside_w(gos_device *d, const struct sim_exec *s, uint64_t p, uint64_t n)
{
    return host_range(s, p, n) || (inside(d, s, p, n) && gos_sim_vmm_access(d, p, n, 1) >= 0);
}

static int check_dev(gos_device *d, struct sim_exec *s, uint64_t p, uint64_t n, const char *what)
{
    int write = strstr(what, "to the device") || strstr(what, "destination");
    pthread_mutex_lock(&s->lock);
    int ok = inside(d, s, p, n);
    pthread_mutex_unlock(&s->lock);
    if (ok && write && gos_sim_vmm_access(d, p, n, 1) < 0)
        return gos_fail(GOS_EPERM, "%s: 0x%llx+%llu is mapped read-only", what, (unsigned long long)p,
                        (unsigned long long)n);
    return ok ? GOS_OK
              : gos_fail(GOS_EINVAL, "%s: illegal address range 0x%llx+%llu", what, (unsigned long long)p,
                         (unsigned long long)n);
}

static int copy(gos_device *d, void *dst, const void *src, size_t n, int e, void *stream, int sync)
{
    struct sim_exec *s = S(d);
    FAULT_CHECK(s);
    int rc = e == ENG_HTOD ? check_dev(d, s, (uint64_t)(uintptr_t)dst, n, "copy to the device")
                           : check_dev(d, s, (uint64_t)(uintptr_t)src, n, "copy from the device");
    if (rc)
        return rc;
    memcpy(dst, src, n);
    pthread_mutex_lock(&s->lock);
    uint64_t end = enqueue(s, stream, e, s->copy_lat_ns + (double)n / s->gbps[e]);
    pthread_mutex_unlock(&s->lock);
    return sync ? sleep_until(&s->abandoned, end) : GOS_OK;
}

static int se_htod(gos_device *d, uint64_t dst, const void *src, size_t n, void *st)
{
    return copy(d, (void *)(uintptr_t)dst, src, n, ENG_HTOD, st, 0);
}
static int se_dtoh(gos_device *d, void *dst, uint64_t src, size_t n, void *st)
{
    return copy(d, dst, (const void *)(uintptr_t)src, n, ENG_DTOH, st, 0);
}
static int se_dtod(gos_device *d, uint64_t dst, uint64_t src, size_t n, void *st)
{
    struct sim_exec *s = S(d);
    FAULT_CHECK(s);
    int rc;
    if ((rc = check_dev(d, s, dst, n, "device copy destination")) || (rc = check_dev(d, s, src, n, "device copy source")))
        return rc;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    pthread_mutex_lock(&s->lock);
    enqueue(s, st, ENG_DTOD, s->copy_lat_ns + (double)n / s->gbps[ENG_DTOD]);
    pthread_mutex_unlock(&s->lock);
    return GOS_OK;
}
static int se_htod_sync(gos_device *d, uint64_t dst, const void *src, size_t n)
{
    return copy(d, (void *)(uintptr_t)dst, src, n, ENG_HTOD, NULL, 1);
}
static int se_dtoh_sync(gos_device *d, void *dst, uint64_t src, size_t n)
{
    return copy(d, dst, (const void *)(uintptr_t)src, n, ENG_DTOH, NULL, 1);
}

static const struct {
    const char *name;
    int kind;
} builtins[] = {{"sleep_ns", K_SLEEP}, {"loop", K_LOOP}, {"madd", K_MADD},
                {"mmul", K_MMUL},      {"fill", K_FILL}, {"empty", K_EMPTY},
                {"fault", K_FAULT}, {"xcopy", K_XCOPY}, {"pattern", K_PATTERN},
                {"stamp", K_STAMP}};
#define N_BUILTINS (int)(sizeof builtins / sizeof builtins[0])

static int builtin_kind(const char *name)
{
    for (int i = 0; i < N_BUILTINS; i++)
        if (!strcmp(builtins[i].name, name))
            return builtins[i].kind;
    return -1;
}

static int se_module_unload(gos_device *d, void *mod);

/* A SIMMOD line "@name=bytes": a __device__ variable of that size, zeroed,
 * allocated with the module and freed with it (cuModuleGetGlobal's answer). */
static int sim_global_line(gos_device *d, struct sim_mod *m, const char *alias, const char *target)
{
    char *end;
    errno = 0;
    unsigned long long b = strtoull(target, &end, 10);
    if (!alias[1] || *end || errno || b == 0 || b > (1ull << 30) || m->n_globals == 8)
        return gos_fail(GOS_EINVAL, "SIMMOD image: bad global \"%s=%s\" (at most 8, 1 B .. 1 GB)", alias, target);
    struct sim_global *g = &m->globals[m->n_globals];
    snprintf(g->name, sizeof g->name, "%s", alias + 1);
    int rc = se_mem_alloc(d, b, &g->dptr);
    if (!rc) {
        g->bytes = b;
        m->n_globals++;
    }
    return rc;
}

static int se_module_load(gos_device *d, const void *image, size_t bytes, const char *name, void **mod)
{
    struct sim_mod *m = calloc(1, sizeof *m);
    if (!m)
        return gos_fail(GOS_ENOMEM, "out of host memory");
    if (!image) {
        if (!name || (strcmp(name, GOS_EXEC_BUILTIN) && strcmp(name, "sim:builtin"))) {
            free(m);
            return gos_fail(GOS_EINVAL, "the simulated device has no built-in module \"%s\" (try %s)",
                            name ? name : "", GOS_EXEC_BUILTIN);
        }
        for (int i = 0; i < N_BUILTINS; i++) {
            snprintf(m->fns[i].name, sizeof m->fns[i].name, "%s", builtins[i].name);
            m->fns[i].kind = builtins[i].kind;
        }
        m->n = N_BUILTINS;
        *mod = m;
        return GOS_OK;
    }
    const char *p = image, *end = p + bytes;
    if (bytes < 7 || memcmp(p, "SIMMOD\n", 7)) {
        free(m);
        return gos_fail(GOS_EUNSUPPORTED, "the simulated device runs only " GOS_EXEC_BUILTIN " kernels or "
                                          "SIMMOD images, not a %zu-byte GPU image", bytes);
    }
    p += 7;
    while (end > p && !end[-1]) /* a text image's terminating NUL (what cuModuleLoadData carries) */
        end--;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *eq = memchr(p, '=', len);
        if (len > 0) {
            char alias[64] = "", target[64] = "";
            if (!eq || eq == p || (size_t)(eq - p) >= sizeof alias || len - (size_t)(eq - p) - 1 >= sizeof target ||
                m->n == 16) {
                se_module_unload(d, m);
                return gos_fail(GOS_EINVAL, "SIMMOD image: bad line \"%.*s\"", (int)(len > 60 ? 60 : len), p);
            }
            memcpy(alias, p, (size_t)(eq - p));
            memcpy(target, eq + 1, len - (size_t)(eq - p) - 1);
            if (alias[0] == '@') {
                int rc = sim_global_line(d, m, alias, target);
                if (rc) {
                    se_module_unload(d, m);
                    return rc;
                }
                p += len + (nl ? 1 : 0);
                continue;
            }
            int k = builtin_kind(target);
            if (k < 0) {
                se_module_unload(d, m);
                return gos_fail(GOS_EINVAL, "SIMMOD image: no built-in kernel \"%s\"", target);
            }
            snprintf(m->fns[m->n].name, sizeof m->fns[m->n].name, "%s", alias);
            m->fns[m->n++].kind = k;
        }
        p += len + (nl ? 1 : 0);
    }
    *mod = m;
    return GOS_OK;
}

/* What a SIMMOD image's globals take: the sum of its "@name=bytes" lines (a
 * bad one is refused by the load itself). */
static int se_module_bytes(gos_device *d, const void *image, size_t bytes, uint64_t *need)
{
    const char *p = image, *end = p + bytes;
    *need = 0;
    if (bytes < 7 || memcmp(p, "SIMMOD\n", 7))
        return GOS_OK;
    for (p += 7; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
        const char *eq = memchr(p, '=', (size_t)(eol - p));
        char num[32];
        if (*p == '@' && eq && (size_t)(eol - eq - 1) < sizeof num) {
            memcpy(num, eq + 1, (size_t)(eol - eq - 1));
            num[eol - eq - 1] = 0;
            unsigned long long b = strtoull(num, NULL, 10);
            *need = b > UINT64_MAX - *need ? UINT64_MAX : *need + b;
        }
        p = eol + 1;
    }
    return GOS_OK;
}

static int se_module_unload(gos_device *d, void *mod)
{
    struct sim_mod *m = mod;
    for (int i = 0; i < m->n_globals; i++)
        se_mem_free(d, m->globals[i].dptr);
    free(m);
    return GOS_OK;
}

static int se_module_global(gos_device *d, void *mod, const char *name, uint64_t *dptr, uint64_t *bytes)
{
    const struct sim_mod *m = mod;
    for (int i = 0; i < m->n_globals; i++)
        if (!strcmp(m->globals[i].name, name)) {
            *dptr = m->globals[i].dptr;
            *bytes = m->globals[i].bytes;
            return GOS_OK;
        }
    return gos_fail(GOS_EINVAL, "no global \"%s\" in the module", name);
}

static int se_function(gos_device *d, void *mod, const char *name, void **fn)
{
    struct sim_mod *m = mod;
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->fns[i].name, name)) {
            *fn = &m->fns[i];
            return GOS_OK;
        }
    return gos_fail(GOS_EINVAL, "no kernel \"%s\" in the module", name);
}

/* xcopy(dst, src, count): count words moved inside this device's memory; a
 * range outside its allocations faults (*done: nothing more to do). */
static int k_xcopy(gos_device *d, struct sim_exec *s, const struct gos_launch_cfg *c, double *dur, int *done)
{
    uint64_t dst, src, count;
    if (c->param_bytes < 24)
        return gos_fail(GOS_EINVAL, "xcopy takes (uint64 dst, uint64 src, uint64 count)");
    memcpy(&dst, c->params, 8);
    memcpy(&src, (const char *)c->params + 8, 8);
    memcpy(&count, (const char *)c->params + 16, 8);
    /* This device's MMU: anything outside its own allocations faults. */
    pthread_mutex_lock(&s->lock);
    int ok = count <= UINT64_MAX / 4 && inside_w(d, s, dst, count * 4) && inside(d, s, src, count * 4);
    pthread_mutex_unlock(&s->lock);
    if (!ok) {
        __atomic_store_n(&s->faulted, 1, __ATOMIC_RELEASE);
        *done = 1;
        return GOS_OK;
    }
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, count * 4);
    *dur += (double)count * 8 / 2000.0;
    return GOS_OK;
}

/* stamp(dptr): the virtual clock when it starts, behind the stream's work. */
static int k_stamp(gos_device *d, struct sim_exec *s, const struct gos_launch_cfg *c, void *stream, double dur)
{
    uint64_t p;
    if (c->param_bytes < 8)
        return gos_fail(GOS_EINVAL, "stamp takes (uint64 dptr)");
    memcpy(&p, c->params, 8);
    pthread_mutex_lock(&s->lock);
    int ok = p % 8 == 0 && inside_w(d, s, p, 8);
    if (ok) {
        uint64_t end = enqueue(s, stream, ENG_COMPUTE, dur);
        *(uint64_t *)(uintptr_t)p = end - (uint64_t)dur;
    }
    pthread_mutex_unlock(&s->lock);
    if (!ok)
        __atomic_store_n(&s->faulted, 1, __ATOMIC_RELEASE);
    return GOS_OK;
}

/* pattern(dptr, seed, check, count, out): count words written from seed, or
 * checked against it with the mismatches added to *out; a range outside the
 * allocations faults (*done). */
static int k_pattern(gos_device *d, struct sim_exec *s, const struct gos_launch_cfg *c, double *dur, int *done)
{
    uint64_t p, count, out;
    uint32_t seed, check;
    if (c->param_bytes < 32)
        return gos_fail(GOS_EINVAL, "pattern takes (uint64 dptr, uint32 seed, uint32 check, uint64 count, "
                                    "uint64 out)");
    memcpy(&p, c->params, 8);
    memcpy(&seed, (const char *)c->params + 8, 4);
    memcpy(&check, (const char *)c->params + 12, 4);
    memcpy(&count, (const char *)c->params + 16, 8);
    memcpy(&out, (const char *)c->params + 24, 8);
    pthread_mutex_lock(&s->lock);
    int ok = count <= UINT64_MAX / 4 && p % 4 == 0 &&
             (check ? inside(d, s, p, count * 4) : inside_w(d, s, p, count * 4)) &&
             (!check || (out % 8 == 0 && inside_w(d, s, out, 8)));
    pthread_mutex_unlock(&s->lock);
    if (!ok) {
        __atomic_store_n(&s->faulted, 1, __ATOMIC_RELEASE);
        *done = 1;
        return GOS_OK;
    }
    uint32_t *w = (uint32_t *)(uintptr_t)p;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint32_t v = (uint32_t)(i * 2654435761ull) ^ seed;
        if (check)
            bad += w[i] != v;
        else
            w[i] = v;
    }
    if (check)
        *(uint64_t *)(uintptr_t)out += bad;
    *dur += (double)count * 4 / 2000.0;
    return GOS_OK;
}

/* madd also computes c = a + b when all three matrices lie in device memory
 * (data passed between kernels and processes is checked byte-exact in CI); a
 * launch with other pointers stays the modelled duration alone, as before. */
static void k_madd_compute(gos_device *d, struct sim_exec *s, const struct gos_launch_cfg *c, uint32_t n)
{
    uint64_t a, b, cc, bytes = (uint64_t)n * n * 4;
    memcpy(&a, c->params, 8);
    memcpy(&b, (const char *)c->params + 8, 8);
    memcpy(&cc, (const char *)c->params + 16, 8);
    pthread_mutex_lock(&s->lock);
    int ok = n && a % 4 == 0 && b % 4 == 0 && cc % 4 == 0 && inside(d, s, a, bytes) && inside(d, s, b, bytes) &&
             inside_w(d, s, cc, bytes);
    pthread_mutex_unlock(&s->lock);
    if (ok) {
        const float *A = (const float *)(uintptr_t)a, *B = (const float *)(uintptr_t)b;
        float *C = (float *)(uintptr_t)cc;
        for (uint64_t i = 0; i < (uint64_t)n * n; i++)
            C[i] = A[i] + B[i];
    }
}

/* sleep, loop, madd, mmul: the GPU kernels' parameters (kernels/exec.cu); the
 * work they describe becomes a modelled duration added to *dur. */
static int k_work(gos_device *d, struct sim_exec *s, const struct sim_fn *f, const struct gos_launch_cfg *c,
                  double *dur)
{
    double work;
    if (f->kind == K_MADD || f->kind == K_MMUL) {
        uint32_t n;
        if (c->param_bytes < 28)
            return gos_fail(GOS_EINVAL, "%s takes (uint64 a, uint64 b, uint64 c, uint32 n)", f->name);
        memcpy(&n, (const char *)c->params + 24, 4);
        work = f->kind == K_MADD ? (double)n * n * s->madd_ns : (double)n * n * n * s->mmul_ns;
        if (f->kind == K_MADD)
            k_madd_compute(d, s, c, n);
    } else {
        uint64_t v;
        if (c->param_bytes < 8)
            return gos_fail(GOS_EINVAL, "%s takes a uint64 %s", f->name,
                            f->kind == K_SLEEP ? "duration in ns" : "iteration count");
        memcpy(&v, c->params, 8);
        work = f->kind == K_SLEEP ? (double)v : (double)v * s->loop_ns;
    }
    if (work > 60e9)
        return gos_fail(GOS_EINVAL, "%s: a modelled duration of %.0f ns is over a minute", f->name, work);
    *dur += work;
    return GOS_OK;
}

/* fill(dptr, value, pad, count): count words set, device memory at once,
 * mapped host memory at the kernel's modelled end. */
static int k_fill(gos_device *d, struct sim_exec *s, const struct gos_launch_cfg *c, void *stream, double dur)
{
    uint64_t dptr, count;
    uint32_t v;
    if (c->param_bytes < 24)
        return gos_fail(GOS_EINVAL, "fill takes (uint64 dptr, uint32 value, uint32 pad, uint64 count)");
    memcpy(&dptr, c->params, 8);
    memcpy(&v, (const char *)c->params + 8, 4);
    memcpy(&count, (const char *)c->params + 16, 8);
    /* The daemon checks the range against the client's allocations
     * (launch_ranges); the simulated kernel checks it again against every
     * allocation, as a GPU's MMU would fault, without overflow (issue 15.1). */
    pthread_mutex_lock(&s->lock);
    int ok = count <= UINT64_MAX / 4 && dptr % 4 == 0 && inside_w(d, s, dptr, count * 4);
    pthread_mutex_unlock(&s->lock);
    if (!ok)
        return gos_fail(GOS_EINVAL, "fill: illegal address 0x%llx (+%llu words)", (unsigned long long)dptr,
                        (unsigned long long)count);
    dur += (double)count * 4 / 2000.0;
    pthread_mutex_lock(&s->lock);
    int host = host_range(s, dptr, count * 4);
    uint64_t end = enqueue(s, stream, ENG_COMPUTE, dur);
    pthread_mutex_unlock(&s->lock);
    /* device memory is written at once (its readers are queued behind);
     * mapped host memory, which the program reads when it likes, at the
     * kernel's modelled end (the caller waits for it, as for the queue) */
    int rc = host ? sleep_until(&s->abandoned, end) : GOS_OK;
    uint32_t *p = (uint32_t *)(uintptr_t)dptr;
    for (uint64_t i = 0; !rc && i < count; i++)
        p[i] = v;
    return rc;
}

static int se_launch(gos_device *d, void *fn, const struct gos_launch_cfg *c, void *stream)
{
    struct sim_exec *s = S(d);
    const struct sim_fn *f = fn;
    double dur = s->launch_ns;
    int rc = GOS_OK, done = 0;
    FAULT_CHECK(s);
    if (f->kind == K_FAULT) { /* asynchronous, as on the GPU: the next sync reports it */
        __atomic_store_n(&s->faulted, 1, __ATOMIC_RELEASE);
        return GOS_OK;
    }
    if (f->kind == K_XCOPY)
        rc = k_xcopy(d, s, c, &dur, &done);
    else if (f->kind == K_STAMP)
        return k_stamp(d, s, c, stream, dur);
    else if (f->kind == K_PATTERN)
        rc = k_pattern(d, s, c, &dur, &done);
    else if (f->kind == K_SLEEP || f->kind == K_LOOP || f->kind == K_MADD || f->kind == K_MMUL)
        rc = k_work(d, s, f, c, &dur);
    else if (f->kind == K_FILL)
        return k_fill(d, s, c, stream, dur);
    if (rc || done)
        return rc;
    pthread_mutex_lock(&s->lock);
    enqueue(s, stream, ENG_COMPUTE, dur);
    pthread_mutex_unlock(&s->lock);
    return GOS_OK;
}

/* The GPU kernels' signatures (exec_builtin.c) by the built-in's own name (a
 * SIMMOD alias runs a built-in under another name). */
static int se_launch_ranges(gos_device *d, void *fn, const struct gos_launch_cfg *c, struct gos_dev_range *r,
                            int *n)
{
    const struct sim_fn *f = fn;
    for (int i = 0; i < N_BUILTINS; i++)
        if (builtins[i].kind == f->kind)
            return gos_exec_builtin_ranges(builtins[i].name, c, r, n);
    *n = -1;
    return GOS_OK;
}

static void se_abandon(gos_device *d)
{
    struct sim_exec *s = S(d);
    if (s)
        __atomic_store_n(&s->abandoned, 1, __ATOMIC_RELAXED);
}

static int se_event_create(gos_device *d, void **ev)
{
    *ev = calloc(1, sizeof(struct sim_event));
    return *ev ? GOS_OK : gos_fail(GOS_ENOMEM, "out of host memory");
}
static int se_event_destroy(gos_device *d, void *ev)
{
    free(ev);
    return GOS_OK;
}
static int se_event_record(gos_device *d, void *ev, void *stream)
{
    struct sim_exec *s = S(d);
    struct sim_event *e = ev;
    uint64_t t = now_ns();
    FAULT_CHECK(s);
    pthread_mutex_lock(&s->lock);
    if (stream && ((struct sim_stream *)stream)->tail > t)
        t = ((struct sim_stream *)stream)->tail;
    pthread_mutex_unlock(&s->lock);
    e->t = t;
    e->recorded = 1;
    return GOS_OK;
}
static int se_event_sync(gos_device *d, void *ev)
{
    FAULT_CHECK(S(d));
    return sleep_until(&S(d)->abandoned, ((struct sim_event *)ev)->t);
}
static int se_event_elapsed(gos_device *d, void *a, void *b, uint64_t *ns)
{
    const struct sim_event *x = a, *y = b;
    if (!x->recorded || !y->recorded)
        return gos_fail(GOS_EINVAL, "event not recorded");
    *ns = y->t > x->t ? y->t - x->t : 0;
    return GOS_OK;
}

/* The device attributes the simulated chip knows (by CUDA attribute number:
 * 13 clock, 16 SMs, 36 memory clock, 38 L2, 39 threads per SM, 75/76 compute
 * capability, 97 opt-in shared memory per block); the rest are not answered. */
static int se_device_attributes(gos_device *d, int32_t *value, uint8_t *valid, int n)
{
    const gos_device_info *i = &d->info;
    struct {
        int a;
        long long v;
        int ok;
    } t[] = {{13, (long long)i->max_sm_clock_mhz * 1000, i->has_clocks && i->max_sm_clock_mhz > 0},
             {16, i->sm_count, i->sm_count > 0},
             {36, (long long)i->mem_clock_mhz * 1000, i->has_clocks && i->mem_clock_mhz > 0},
             {38, (long long)i->l2_bytes, i->l2_bytes > 0 && i->l2_bytes < (1ull << 31)},
             {39, i->max_threads_per_sm, i->max_threads_per_sm > 0},
             {75, i->cc_major, 1},
             {76, i->cc_minor, 1},
             {97, i->max_smem_per_block_optin, i->max_smem_per_block_optin > 0}};
    for (int a = 0; a < n; a++)
        valid[a] = 0, value[a] = 0;
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        if (t[k].a < n && t[k].ok) {
            value[t[k].a] = (int32_t)t[k].v;
            valid[t[k].a] = 1;
        }
    /* the GPCs' shape as the simulated chip places clusters (its one model of
     * that, the one `probe topology` charts): one launch per size at one block
     * per SM; a size no GPC hosts runs 0, and so does one above the
     * GOS_TOPO_MAX_CLUSTER blocks a cluster launch may have (the model places none) */
    int sms[GOS_MAX_SMS], nb;
    for (int cs = 1; cs <= GOS_ATTR_CLUSTERS_MAX && GOS_ATTR_CLUSTERS + cs - 1 < n; cs++) {
        int rc = cs <= GOS_TOPO_MAX_CLUSTER ? gos_topo_cluster_probe(d, cs, sms, GOS_MAX_SMS, &nb) : GOS_EUNSUPPORTED;
        if (rc && (cs == 1 || rc != GOS_EUNSUPPORTED))
            break; /* no cluster model at all: the table stays unknown */
        value[GOS_ATTR_CLUSTERS + cs - 1] = rc ? 0 : nb / cs;
        valid[GOS_ATTR_CLUSTERS + cs - 1] = 1;
    }
    return GOS_OK;
}

const struct gos_exec_ops gos_sim_exec_ops = {
    .close = se_close,
    .init = se_init,
    .device_attributes = se_device_attributes,
    .mem_alloc = se_mem_alloc,
    .mem_free = se_mem_free,
    .mem_info = se_mem_info,
    .host_register = se_host_register,
    .host_device_ptr = se_host_device_ptr,
    .host_unregister = se_host_unregister,
    .host_alloc = se_host_alloc,
    .host_free = se_host_free,
    .stream_create = se_stream_create,
    .stream_create_prio = se_stream_create_prio,
    .stream_destroy = se_stream_destroy,
    .stream_sync = se_stream_sync,
    .copy_htod = se_htod,
    .copy_dtoh = se_dtoh,
    .copy_dtod = se_dtod,
    .copy_htod_sync = se_htod_sync,
    .copy_dtoh_sync = se_dtoh_sync,
    .module_load = se_module_load,
    .module_bytes = se_module_bytes,
    .module_unload = se_module_unload,
    .module_global = se_module_global,
    .function = se_function,
    .launch = se_launch,
    .launch_ranges = se_launch_ranges,
    .abandon = se_abandon,
    .event_create = se_event_create,
    .event_destroy = se_event_destroy,
    .event_record = se_event_record,
    .event_sync = se_event_sync,
    .event_elapsed_ns = se_event_elapsed,
    .tmap_encode = gos_sim_tmap_encode,
};
