/* SPDX-License-Identifier: Apache-2.0 */
/* status.c: the last error of this thread (gos_fail, gos_last_error) and the
 * public codes tied to the internal ones. */
#include "common/status.h"

#include "gpuos/gpuos.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The public codes (include/gpuos/gpuos.h) are the internal ones: the client
 * library returns GOS_E* unchanged, so each pair must stay equal. */
#define GOS_SAME_CODE(n) _Static_assert((int)GPUOS_##n == (int)GOS_##n, "public and internal codes differ: " #n)
GOS_SAME_CODE(OK);
GOS_SAME_CODE(EINVAL);
GOS_SAME_CODE(ENODEV);
GOS_SAME_CODE(EUNSUPPORTED);
GOS_SAME_CODE(ENOMEM);
GOS_SAME_CODE(EIO);
GOS_SAME_CODE(EPERM);
GOS_SAME_CODE(EDEVICE);
GOS_SAME_CODE(EPROTO);
GOS_SAME_CODE(EBUSY);
GOS_SAME_CODE(ETIMEDOUT);
GOS_SAME_CODE(ELIMIT);

static _Thread_local char last_msg[512];

int gos_fail(int code, const char *fmt, ...)
{
    /* Format into a local buffer first: callers may pass gos_last_error() as
     * an argument to prefix it ("kernel X: %s"). */
    char buf[sizeof last_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(last_msg, buf, sizeof buf);
    /* A message is one line, whatever the callee handed us. */
    for (char *p = last_msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return code;
}

const char *gos_last_error(void) { return last_msg; }

const char *gos_strerror(int code)
{
    switch (code) {
    case GOS_OK: return "ok";
    case GOS_EINVAL: return "invalid argument";
    case GOS_ENODEV: return "no such device";
    case GOS_EUNSUPPORTED: return "not supported";
    case GOS_ENOMEM: return "out of memory";
    case GOS_EIO: return "I/O error";
    case GOS_EPERM: return "permission denied";
    case GOS_EDEVICE: return "device call failed";
    case GOS_EAMBIGUOUS: return "ambiguous measurement";
    case GOS_EPROTO: return "protocol error";
    case GOS_EBUSY: return "busy or over quota";
    case GOS_ETIMEDOUT: return "timed out";
    case GOS_ELIMIT: return "limit reached";
    default: return "unknown error";
    }
}
