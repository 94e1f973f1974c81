/* SPDX-License-Identifier: Apache-2.0 */
/* init.c: diagnostics, the process's state and cuInit of gpuos's libcuda.so.1
 * (runs in the CUDA program's process; driver.h lists the other files).
 *
 * One process = one client of `gpuos serve` ($GPUOS_SOCKET) on the vGPU
 * $GPUOS_VGPU (default "default"), opened by cuInit. Device 0 is the vGPU's
 * device; its memory total is the vGPU's memory share. Entry points not
 * implemented anywhere are generated stubs (tools/gen_cudashim_stubs.sh) that
 * return CUDA_ERROR_NOT_SUPPORTED and name themselves once (shim_unsupported). */
#include "common/env.h"
#include "common/log.h"
#include "cudashim/driver.h"

#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* diagnostics */

static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;
static struct named {
    struct named *next;
    char name[];
} *named;

int shim_trace(void)
{
    static int t = -1;
    if (t < 0) {
        const char *v = gos_env(GOS_ENV_CUDASHIM_TRACE);
        int n = v ? atoi(v) : 0;
        t = !v || !*v || !strcmp(v, "0") ? 0 : n >= 2 ? 2 : 1;
    }
    return t;
}

/* Traced, a fatal signal in the program (a library dividing by a value we
 * answered, say) names where it happened: the signal and a backtrace of
 * "object(+offset)" frames on stderr, then the default action. */
static void shim_fatal(int sig)
{
    static const char head[] = "gpuos libcuda: fatal signal, backtrace (GPUOS_CUDASHIM_TRACE):\n";
    void *frames[48];
    int n = backtrace(frames, 48);
    if (write(2, head, sizeof head - 1) < 0)
        n = 0;
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void shim_fatal_trace(void)
{
    if (!shim_trace())
        return;
    static const int sigs[] = {SIGFPE, SIGSEGV, SIGBUS, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = shim_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_DFL) /* never over the program's own */
            sigaction(sigs[i], &sa, NULL);
    }
}

/* The shim's lines go through the one log (common/log.h), named once. */
__attribute__((constructor)) static void shim_log_name(void)
{
    gos_log_name("gpuos libcuda");
}

void shim_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    gos_log(LOG_NOTICE, "%s", line);
}

int shim_unsupported(const char *name)
{
    pthread_mutex_lock(&named_lock);
    struct named *n;
    for (n = named; n && strcmp(n->name, name); n = n->next)
        ;
    if (!n && (n = malloc(sizeof *n + strlen(name) + 1))) {
        strcpy(n->name, name);
        n->next = named;
        named = n;
        gos_log(LOG_NOTICE, "%s is not supported", name);
    }
    pthread_mutex_unlock(&named_lock);
    return CUDA_ERROR_NOT_SUPPORTED;
}


/* ------------------------------------------------------------------ */
/* state */

struct shim_state shim_proc = {.m = PTHREAD_MUTEX_INITIALIZER, .primary = {MAGIC_CTX, 1, 0, 0}};
__thread struct CUctx_st *cur_ctx;

CUresult map_rc(int rc, const char *what)
{
    if (rc && shim_trace())
        shim_log("%s: %s", what, gpuos_error());
    switch (rc) {
    case GPUOS_OK:
        return CUDA_SUCCESS;
    case GPUOS_EINVAL:
        return CUDA_ERROR_INVALID_VALUE;
    case GPUOS_ENODEV:
        return CUDA_ERROR_NO_DEVICE;
    case GPUOS_EUNSUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED;
    case GPUOS_ENOMEM:
    case GPUOS_EBUSY:
    case GPUOS_ELIMIT: /* a daemon limit (allocations, queued work): resources exhausted */
        return CUDA_ERROR_OUT_OF_MEMORY;
    case GPUOS_EPERM:
        return CUDA_ERROR_NOT_PERMITTED;
    case GPUOS_EDEVICE: { /* the daemon's driver's own error where its message names it */
        int r = shim_error_from_text(gpuos_error());
        return r ? (CUresult)r : CUDA_ERROR_LAUNCH_FAILED;
    }
    case GPUOS_ETIMEDOUT:
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

/* Queued work since the last synchronise. The daemon refuses a client more than
 * max_queued_requests (default 4096) outstanding requests, and an asynchronous
 * request's refusal would surface only at the next synchronise; the CUDA driver
 * instead blocks a submitter whose queue is full. So does this library: every
 * QUEUE_MAX asynchronous requests it waits for the queue (errors of queued work
 * are then reported by this call, as CUDA may report them at any later call). */
#ifndef QUEUE_MAX
#define QUEUE_MAX 1024
#endif
static int queued;

int shim_sync(void)
{
    shim_hf_before(0); /* a synchronise waits for every host function too */
    __atomic_store_n(&queued, 0, __ATOMIC_RELAXED);
    return gpuos_synchronize(shim_proc.g);
}

int queued_one(int rc)
{
    if (!rc && __atomic_add_fetch(&queued, 1, __ATOMIC_RELAXED) >= QUEUE_MAX)
        rc = shim_sync();
    return rc;
}


E CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&shim_proc.m);
    if (!shim_proc.inited) {
        const char *v = gos_env(GOS_ENV_VGPU);
        int rc = gpuos_open(NULL, v && *v ? v : "default", &shim_proc.g);
        if (!rc)
            rc = gpuos_device_info(shim_proc.g, &shim_proc.dev);
        if (!rc)
            rc = gpuos_mem_info(shim_proc.g, NULL, &shim_proc.quota, NULL);
        if (rc) {
            gos_log(LOG_NOTICE, "cuInit: %s", gpuos_error());
            shim_proc.init_rc = rc == GPUOS_EIO || rc == GPUOS_ENODEV || rc == GPUOS_ETIMEDOUT ? CUDA_ERROR_NO_DEVICE
                                                                                         : map_rc(rc, "cuInit");
        }
        shim_proc.cc = shim_proc.dev.cc_major * 10 + shim_proc.dev.cc_minor;
        shim_proc.inited = 1;
    }
    CUresult r = shim_proc.init_rc;
    pthread_mutex_unlock(&shim_proc.m);
    return r;
}

E CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = DRIVER_VERSION;
    return CUDA_SUCCESS;
}


/* The daemon's built-in kernels the library uses itself (kernels/exec.cu):
 * "fill" (memset: count 32-bit words of a value, grid-stride) and "stamp"
 * (events: the GPU's clock into 8 bytes), loaded on first use; 0 when there is
 * none. */
gpuos_function builtin_fn(int which)
{
    static const char *const names[BI_N] = {"fill", "stamp"};
    static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
    static int loaded, tried[BI_N];
    static gpuos_module m;
    static gpuos_function f[BI_N];
    pthread_mutex_lock(&l);
    if (!tried[which]) {
        tried[which] = 1;
        if (!loaded && !gpuos_module_load_builtin(shim_proc.g, "builtin", &m))
            loaded = 1;
        if (!loaded || gpuos_module_function(shim_proc.g, m, names[which], &f[which]))
            f[which] = 0;
        if (shim_trace())
            shim_log("%s: %s", which == BI_FILL ? "memset" : "events",
                     f[which] ? (which == BI_FILL ? "the built-in fill kernel" : "GPU timestamps (built-in stamp kernel)")
                              : (which == BI_FILL ? "host copies only (no built-in fill kernel)"
                                                  : "host clock after a synchronise (no built-in stamp kernel)"));
    }
    pthread_mutex_unlock(&l);
    return f[which];
}
