/* SPDX-License-Identifier: Apache-2.0 */
/* status.h: error codes and the one-line error message of the calling thread.
 *
 * Every fallible gpuos function returns GOS_OK (0) or a negative GOS_E* code and,
 * on failure, leaves a one-line human message retrievable with gos_last_error().
 * The CLI prints exactly that line ("gpuos: <message>") and exits non-zero. */
#ifndef GOS_STATUS_H
#define GOS_STATUS_H

enum {
    GOS_OK = 0,
    GOS_EINVAL = -1,       /* bad argument, malformed input file */
    GOS_ENODEV = -2,       /* no such device / no GPU / no driver */
    GOS_EUNSUPPORTED = -3, /* backend or device cannot do this */
    GOS_ENOMEM = -4,       /* host or device out of memory */
    GOS_EIO = -5,          /* file or socket I/O failed */
    GOS_EPERM = -6,        /* not permitted (clocks, socket, shm permissions) */
    GOS_EDEVICE = -7,      /* a CUDA / NVML call failed */
    GOS_EAMBIGUOUS = -8,   /* measurements disagree: no confident answer */
    GOS_EPROTO = -9,       /* protocol violation / version mismatch */
    GOS_EBUSY = -10,       /* resource busy, quota exceeded */
    GOS_ETIMEDOUT = -11,
    GOS_ELIMIT = -12,      /* a limit the operator set was reached (clients, queue) */
};

/* Records a printf-style message for the calling thread and returns `code`, so
 * callers can write `return gos_fail(GOS_EINVAL, "bad %s", x);`. The arguments
 * may include gos_last_error() itself, to prefix the previous message. */
int gos_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last message recorded by gos_fail() in this thread ("" if none). */
const char *gos_last_error(void);

/* A short generic name for a code ("invalid argument", ...). */
const char *gos_strerror(int code);

#endif
