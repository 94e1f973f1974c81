/* SPDX-License-Identifier: Apache-2.0 */
/* tools/cutrace/cutrace.c: a Driver API call tracer, loaded as libcuda.so.1 in
 * front of the real one (NVIDIA's natively, gpuos's under `gpuos run`), which
 * writes every call a program makes, with its result, to CUTRACE_OUT.<pid>.
 * Its purpose is to compare what a library (cuBLAS, cuDNN, JAX's XLA) asks of
 * the driver natively and on a vGPU: tools/cutrace/diff.py finds the first
 * call whose answer differs.
 *
 * How a call is followed: every exported Driver API symbol is a trampoline
 * (gen_tramp.sh) that jumps to cutrace_enter (entry.S) with its index. That
 * keeps the argument registers, calls cutrace_pre, which finds the real
 * function, pushes the caller's return address and first arguments on a
 * per-thread stack, and replaces the return address with cutrace_exit; the real
 * function then runs with its arguments untouched and returns to cutrace_exit,
 * which calls cutrace_post to log the call and return to the caller. No
 * signature is needed, so the driver's private export tables are followed too.
 *
 * The CUDA runtime (linked statically into cuBLAS, cuDNN, PyTorch) asks the
 * driver for its entry points with cuGetProcAddress and for private tables with
 * cuGetExportTable: both are wrapped here and hand out trampolines from an
 * anonymous pool, named "symbol@version" and "{table id}[slot]".
 *
 * Environment: CUTRACE_REAL the real libcuda.so.1 (a path; default NVIDIA's),
 * CUTRACE_OUT the log prefix (default /tmp/cutrace), CUTRACE_MAX the lines
 * after which only failing calls are logged (default 300000).
 * A tool for finding faults, not part of gpuos's libraries: built by
 * `make cutrace` (mk/cudashim.mk). */

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

extern const char cutrace_names[];
extern const int cutrace_nsyms, cutrace_npool;
extern char cutrace_pool[]; /* npool trampolines, 16 bytes apart */
void cutrace_exit(void);

#define API __attribute__((visibility("default")))
#define DEPTH 128

struct frame {
    int idx;
    void *ret;
    long a[6];
    long t0; /* ns, CLOCK_MONOTONIC */
};
static __thread struct frame stack[DEPTH];
static __thread int depth;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *real_lib;
static const char **name;   /* by index: exported symbols, then pool slots */
static void **real_fn;      /* by index, NULL until known */
static int pool_used;
static FILE *out;
static pid_t out_pid;
static long seq, max_lines = 300000;
static void *real_gpa, *real_gpa2, *real_gpa2_ptsz, *real_get;

static void die(const char *m)
{
    fprintf(stderr, "cutrace: %s\n", m);
    _exit(127);
}

static void init(void)
{
    const char *path = getenv("CUTRACE_REAL");
    if (!path || !*path)
        path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
    if (!strchr(path, '/'))
        die("CUTRACE_REAL must be a path (a bare name would find cutrace itself)");
    real_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!real_lib) {
        fprintf(stderr, "cutrace: cannot load %s: %s\n", path, dlerror());
        _exit(127);
    }
    if (dlsym(real_lib, "cutrace_pre"))
        die("CUTRACE_REAL is cutrace itself");
    int n = cutrace_nsyms + cutrace_npool;
    name = calloc((size_t)n, sizeof *name);
    real_fn = calloc((size_t)n, sizeof *real_fn);
    if (!name || !real_fn)
        die("out of memory");
    const char *p = cutrace_names;
    for (int i = 0; i < cutrace_nsyms && *p; i++, p += strlen(p) + 1)
        name[i] = p;
    real_gpa = dlsym(real_lib, "cuGetProcAddress");
    real_gpa2 = dlsym(real_lib, "cuGetProcAddress_v2");
    real_gpa2_ptsz = dlsym(real_lib, "cuGetProcAddress_v2_ptsz");
    real_get = dlsym(real_lib, "cuGetExportTable");
    const char *m = getenv("CUTRACE_MAX");
    if (m && *m)
        max_lines = atol(m);
}

/* The log of this process (reopened after a fork); called with mu held. */
static FILE *log_file(void)
{
    pid_t pid = getpid();
    if (out && out_pid == pid)
        return out;
    const char *pre = getenv("CUTRACE_OUT");
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", pre && *pre ? pre : "/tmp/cutrace", (int)pid);
    out = fopen(path, "w");
    if (!out)
        die("cannot open the log (CUTRACE_OUT)");
    setvbuf(out, NULL, _IOLBF, 0);
    out_pid = pid;
    seq = 0;
    return out;
}

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int missing(void) { return 500; /* CUDA_ERROR_NOT_FOUND */ }

/* An anonymous trampoline for real function fn, named nm (copied). */
static void *wrap(void *fn, const char *nm)
{
    if (!fn)
        return NULL;
    pthread_mutex_lock(&mu);
    int j;
    for (j = 0; j < pool_used && real_fn[cutrace_nsyms + j] != fn; j++)
        ;
    if (j == pool_used) {
        if (pool_used == cutrace_npool) {
            pthread_mutex_unlock(&mu);
            return fn; /* pool spent: untraced */
        }
        name[cutrace_nsyms + j] = strdup(nm);
        real_fn[cutrace_nsyms + j] = fn;
        pool_used++;
    }
    pthread_mutex_unlock(&mu);
    return cutrace_pool + 16 * j;
}

void *cutrace_pre(int idx, void **ret_slot, long *saved);
void *cutrace_pre(int idx, void **ret_slot, long *saved)
{
    pthread_once(&once, init);
    void *fn = real_fn[idx];
    if (!fn && idx < cutrace_nsyms) {
        fn = dlsym(real_lib, name[idx]);
        if (!fn)
            fn = (void *)missing;
        real_fn[idx] = fn;
    }
    if (depth == DEPTH)
        die("calls nested too deep");
    struct frame *f = &stack[depth++];
    f->idx = idx;
    f->ret = *ret_slot;
    for (int k = 0; k < 6; k++)
        f->a[k] = saved[5 - k]; /* saved holds r9 .. rdi */
    f->t0 = now_ns();
    return fn;
}

/* Calls whose first argument is an int written by the call. */
static int int_out(const char *n)
{
    static const char *const list[] = {"cuDeviceGetAttribute", "cuDeviceGet",      "cuDeviceGetCount",
                                       "cuCtxGetDevice",       "cuDriverGetVersion", "cuFuncGetAttribute",
                                       "cuPointerGetAttribute", "cuOccupancyMaxActiveClusters",
                                       "cuOccupancyMaxPotentialClusterSize", "cuKernelGetAttribute", NULL};
    size_t len = strcspn(n, "@");
    for (int i = 0; list[i]; i++)
        if (strlen(list[i]) == len && !strncmp(list[i], n, len))
            return 1;
    return 0;
}

/* A CUlaunchConfig (cuda.h: grid and block dimensions, dynamic shared
 * memory, stream, attributes, their count) and its cluster attributes (id 4,
 * CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; an attribute is an id and a 64-byte
 * value, 72 bytes). */
static void launch_config(FILE *o, const unsigned *c)
{
    const unsigned char *attrs = *(const unsigned char *const *)(c + 10);
    unsigned na = c[12];
    fprintf(o, " grid=%ux%ux%u block=%ux%ux%u smem=%u nattrs=%u", c[0], c[1], c[2], c[3], c[4], c[5], c[6], na);
    for (unsigned i = 0; attrs && i < na && i < 8; i++) {
        const unsigned *v = (const unsigned *)(attrs + 72 * i + 8);
        fprintf(o, " attr%u=%u:%u,%u,%u", i, *(const unsigned *)(attrs + 72 * i), v[0], v[1], v[2]);
    }
}

/* The tables gpuos serves (src/cudashim/exports.c): their slots are not dumped. */
static int known_table(const char *n)
{
    static const char *const ids[] = {"{6bd5fb6c}", "{42d85a81}", "{21318c60}", "{a094798c}",
                                      "{c693336e}", "{263e8860}", "{d4082055}", NULL};
    for (int i = 0; ids[i]; i++)
        if (!strncmp(n, ids[i], 10))
            return 1;
    return 0;
}

/* 32 bytes at argument k where it points at readable memory (read through
 * process_vm_readv, which fails on a bad address instead of faulting), after
 * the call: what a slot of a table nobody documents wrote. */
static void dump(FILE *o, int k, long a)
{
    unsigned char b[32];
    struct iovec l = {b, sizeof b}, r = {(void *)a, sizeof b};
    if ((unsigned long)a < 4096 || process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof b)
        return;
    fprintf(o, " *a%d=", k);
    for (size_t i = 0; i < sizeof b; i++)
        fprintf(o, "%02x%s", b[i], i % 8 == 7 && i + 1 < sizeof b ? "." : "");
}

void *cutrace_post(long rax);
void *cutrace_post(long rax)
{
    long t1 = now_ns();
    struct frame *f = &stack[--depth];
    const char *n = name[f->idx];
    int rc = (int)rax;
    pthread_mutex_lock(&mu);
    FILE *o = log_file();
    if (seq < max_lines || rc != 0) {
        fprintf(o, "%ld %ld %d %s rc=%d a=%lx,%lx,%lx,%lx ns=%ld", seq, (long)syscall(SYS_gettid), depth, n, rc,
                (unsigned long)f->a[0], (unsigned long)f->a[1], (unsigned long)f->a[2], (unsigned long)f->a[3],
                t1 - f->t0);
        if (rc == 0 && f->a[0] && int_out(n))
            fprintf(o, " out=%d", *(int *)f->a[0]);
        if (rc == 0 && f->a[0] && !strncmp(n, "cuCtxGetLimit", 13))
            fprintf(o, " out=%zu", *(size_t *)f->a[0]);
        if (!strncmp(n, "cuOccupancyMaxActiveClusters", 28) && f->a[2])
            launch_config(o, (const unsigned *)f->a[2]);
        if (n[0] == '{' && !known_table(n))
            for (int k = 0; k < 4; k++)
                dump(o, k, f->a[k]);
        if (rc == 0 && n[0] == '{' && strstr(n, "c693336e") && strstr(n, "[2]") && f->a[0])
            fprintf(o, " out=%lx", (unsigned long)*(void **)f->a[0]); /* context-local store get */
        fputc('\n', o);
    }
    seq++;
    pthread_mutex_unlock(&mu);
    return f->ret;
}

/* One line of a call cutrace makes itself (cuGetProcAddress, cuGetExportTable). */
__attribute__((format(printf, 1, 2))) static void logf_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&mu);
    FILE *o = log_file();
    fprintf(o, "%ld %ld %d ", seq++, (long)syscall(SYS_gettid), depth);
    vfprintf(o, fmt, ap);
    fputc('\n', o);
    pthread_mutex_unlock(&mu);
    va_end(ap);
}

static void *gpa_result(const char *sym, void *fn, int version, unsigned long long flags);
void *cutrace_export(void *table, const unsigned char *id);

typedef int (*gpa1_t)(const char *, void **, int, unsigned long long);
typedef int (*gpa2_t)(const char *, void **, int, unsigned long long, int *);

API int cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags);
API int cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags)
{
    pthread_once(&once, init);
    if (!real_gpa)
        return 500;
    int rc = ((gpa1_t)real_gpa)(sym, pfn, version, flags);
    if (rc == 0 && pfn)
        *pfn = gpa_result(sym, *pfn, version, flags);
    logf_line("cuGetProcAddress(%s) v=%d f=%llu rc=%d -> %p", sym, version, flags, rc, pfn ? *pfn : NULL);
    return rc;
}

static int gpa2(void *real, const char *sym, void **pfn, int version, unsigned long long flags, int *status)
{
    pthread_once(&once, init);
    if (!real)
        return 500;
    int rc = ((gpa2_t)real)(sym, pfn, version, flags, status);
    if (rc == 0 && pfn)
        *pfn = gpa_result(sym, *pfn, version, flags);
    logf_line("cuGetProcAddress_v2(%s) v=%d f=%llu rc=%d -> %p", sym, version, flags, rc, pfn ? *pfn : NULL);
    return rc;
}

API int cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, int *status);
API int cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, int *status)
{
    pthread_once(&once, init);
    return gpa2(real_gpa2, sym, pfn, version, flags, status);
}

API int cuGetProcAddress_v2_ptsz(const char *sym, void **pfn, int version, unsigned long long flags, int *status);
API int cuGetProcAddress_v2_ptsz(const char *sym, void **pfn, int version, unsigned long long flags, int *status)
{
    pthread_once(&once, init);
    return gpa2(real_gpa2_ptsz, sym, pfn, version, flags, status);
}

API int cuGetExportTable(const void **table, const unsigned char *id);
API int cuGetExportTable(const void **table, const unsigned char *id)
{
    pthread_once(&once, init);
    if (!real_get)
        return 500;
    int rc = ((int (*)(const void **, const unsigned char *))real_get)(table, id);
    char ids[40] = "?";
    long first = 0;
    if (id)
        snprintf(ids, sizeof ids, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
    if (rc == 0 && table && *table) {
        first = *(const long *)*table;
        *table = cutrace_export((void *)*table, id);
    }
    logf_line("cuGetExportTable(%s) size=%lx rc=%d -> %p", ids, first, rc, table ? (void *)*table : NULL);
    return rc;
}

static void *gpa_result(const char *sym, void *fn, int version, unsigned long long flags)
{
    if (!fn)
        return fn;
    if (fn == real_gpa)
        return (void *)cuGetProcAddress;
    if (fn == real_gpa2)
        return (void *)cuGetProcAddress_v2;
    if (fn == real_gpa2_ptsz)
        return (void *)cuGetProcAddress_v2_ptsz;
    if (fn == real_get)
        return (void *)cuGetExportTable;
    char nm[256];
    snprintf(nm, sizeof nm, "%s@%d%s", sym, version, flags & 2 ? "ptds" : "");
    return wrap(fn, nm);
}

/* Whether p lies in an executable mapping of this process. */
static int is_code(const void *p)
{
    FILE *m = fopen("/proc/self/maps", "r");
    if (!m)
        return 0;
    char line[512];
    int hit = 0;
    while (!hit && fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) == 3 && perm[2] == 'x' && (unsigned long)p >= lo &&
            (unsigned long)p < hi)
            hit = 1;
    }
    fclose(m);
    return hit;
}

/* A copy of an export table with its function slots traced. Slot 0 is the
 * table's size in bytes where it is small; a table without one (the context
 * store's) is followed while its slots are code. Tables are handed out once per
 * id and kept for the life of the process. */
void *cutrace_export(void *table, const unsigned char *id)
{
    static struct {
        unsigned char id[16];
        void *real, *copy;
    } seen[64];
    static int nseen;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nseen; i++)
        if (seen[i].real == table && !memcmp(seen[i].id, id, 16)) {
            pthread_mutex_unlock(&mu);
            return seen[i].copy;
        }
    pthread_mutex_unlock(&mu);
    /* The runtime hashes the addresses of these two (the INTEGRITY slot's
     * answer covers them): they must stay the driver's own. */
    if (!memcmp(id, "\x6b\xd5\xfb\x6c", 4) || !memcmp(id, "\xd4\x08\x20\x55", 4))
        return table;
    void **t = table;
    size_t n, first;
    if ((uintptr_t)t[0] < 0x10000 && (uintptr_t)t[0] % sizeof(void *) == 0) {
        n = (uintptr_t)t[0] / sizeof(void *);
        first = 1;
    } else {
        for (n = 0; n < 64 && is_code(t[n]); n++)
            ;
        first = 0;
    }
    if (n == 0 || n > 512)
        return table;
    void **copy = calloc(n, sizeof *copy);
    if (!copy)
        return table;
    for (size_t k = 0; k < n; k++) {
        copy[k] = t[k];
        if (k >= first && t[k] && is_code(t[k])) {
            char nm[64];
            snprintf(nm, sizeof nm, "{%02x%02x%02x%02x}[%zu]", id[0], id[1], id[2], id[3], k);
            copy[k] = wrap(t[k], nm);
        }
    }
    pthread_mutex_lock(&mu);
    if (nseen < 64) {
        memcpy(seen[nseen].id, id, 16);
        seen[nseen].real = table;
        seen[nseen].copy = copy;
        nseen++;
    }
    pthread_mutex_unlock(&mu);
    return copy;
}
