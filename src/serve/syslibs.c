/* SPDX-License-Identifier: Apache-2.0 */
/* syslibs.c: libsystemd and libmicrohttpd opened at run time (syslibs.h).
 * Process: the daemon (gpuos serve). */
#include "serve/syslibs.h"

#include "common/status.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>

static pthread_once_t sd_once = PTHREAD_ONCE_INIT;
static int (*sd_notify_fn)(int unset_environment, const char *state);

static void sd_load(void)
{
    void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h)
        *(void **)&sd_notify_fn = dlsym(h, "sd_notify");
}

void srv_sd_notifyf(const char *fmt, ...)
{
    pthread_once(&sd_once, sd_load);
    if (!sd_notify_fn)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sd_notify_fn(0, msg);
}

static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static struct srv_mhd mhd;
static const char *mhd_missing; /* NULL: every entry point found */

static void mhd_load(void)
{
    void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        mhd_missing = "libmicrohttpd.so.12";
        return;
    }
    static const struct {
        const char *name;
        size_t off;
    } syms[] = {
        {"MHD_start_daemon", offsetof(struct srv_mhd, start_daemon)},
        {"MHD_stop_daemon", offsetof(struct srv_mhd, stop_daemon)},
        {"MHD_create_response_from_buffer", offsetof(struct srv_mhd, create_response_from_buffer)},
        {"MHD_add_response_header", offsetof(struct srv_mhd, add_response_header)},
        {"MHD_queue_response", offsetof(struct srv_mhd, queue_response)},
        {"MHD_destroy_response", offsetof(struct srv_mhd, destroy_response)},
        {"MHD_get_connection_info", offsetof(struct srv_mhd, get_connection_info)},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            mhd_missing = syms[i].name;
            return;
        }
        *(void **)((char *)&mhd + syms[i].off) = f;
    }
}

const struct srv_mhd *srv_mhd(void)
{
    pthread_once(&mhd_once, mhd_load);
    if (mhd_missing) {
        gos_fail(GOS_EUNSUPPORTED, "metrics need libmicrohttpd (Debian: libmicrohttpd12), %s not found",
                 mhd_missing);
        return NULL;
    }
    return &mhd;
}
