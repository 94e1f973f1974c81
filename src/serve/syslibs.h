/* SPDX-License-Identifier: Apache-2.0 */
/* syslibs.h: the daemon's optional system libraries, opened at run time with
 * dlopen (as libcuda and NVML are), so that the gpuos binary loads on machines
 * without them (a GPU node that has neither libsystemd nor libmicrohttpd):
 *   libsystemd.so.0      sd_notify: readiness, reload and stop notices; without
 *                        the library (or without $NOTIFY_SOCKET) a no-op;
 *   libmicrohttpd.so.12  the Prometheus endpoint (metrics_listen =); without the
 *                        library, metrics_listen is refused with one line.
 * The headers are used for the types only; nothing links against either.
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_SYSLIBS_H
#define GOS_SERVE_SYSLIBS_H

#include <microhttpd.h>

/* Formats a notice and hands it to sd_notify(0, ...) when libsystemd is present. */
void srv_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* libmicrohttpd's entry points that metrics.c uses. */
struct srv_mhd {
    struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                       void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
    void (*stop_daemon)(struct MHD_Daemon *d);
    struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
                                                        enum MHD_ResponseMemoryMode mode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header, const char *content);
    enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status_code,
                                      struct MHD_Response *r);
    void (*destroy_response)(struct MHD_Response *r);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c, enum MHD_ConnectionInfoType t,
                                                           ...);
};

/* The library's entry points, or NULL with the reason in gos_last_error(). */
const struct srv_mhd *srv_mhd(void);

#endif
