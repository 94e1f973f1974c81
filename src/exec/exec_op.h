/* SPDX-License-Identifier: Apache-2.0 */
/* exec_op.h: one device operation and its one runner (issue 20). Runs in every
 * process that touches the device for a client: the executor (`gpuos
 * executor`: its socket's RUN batches, exec_run.c, and its ring's entries,
 * exec_run.c) and the daemon itself under isolation = none (serve/dispatch.c).
 *
 * A gos_op is what reaches the device layer: resolved host and device
 * addresses, a function of the device layer, its geometry and parameters. Every
 * range in it was checked before (the daemon's validate(), the executor's
 * xe_decode): the runner checks nothing but the kind. The wire forms that
 * carry an operation to it are one, struct gos_req (proto/req.h): the head of
 * the client's messages (proto.h), the ring's entries (ring_shm.h) and the
 * executor's RUN (xproto.h). */
#ifndef GOS_EXEC_OP_H
#define GOS_EXEC_OP_H

#include "device/device.h"
#include "device/exec_ops.h"
#include "proto/proto.h"

#include <stddef.h>
#include <stdint.h>

/* A request (proto/req.h) resolved in the process that runs it: the
 * executor's one decoder (exec_run.c: xe_decode, for RUN operations and ring
 * entries) or, under isolation = none, the daemon (serve/client.c). */
struct gos_op {
    uint32_t kind;  /* gos_op_kind */
    uint32_t sync;  /* HTOD / DTOH from host memory that is not pinned: the driver's synchronous copy */
    uint64_t dptr;  /* destination (HTOD, DTOD) or source (DTOH) on the device */
    uint64_t dptr2; /* DTOD: the source */
    uint64_t bytes;
    void *host;     /* HTOD / DTOH: the host side */
    void *fn;       /* LAUNCH: the device layer's function */
    struct gos_launch_cfg cfg;
};

/* Issues one operation on stream (asynchronous, but for sync copies, which
 * ignore the stream). GOS_OK or the device layer's error with its message. */
int gos_op_issue(gos_device *dev, const struct gos_op *o, void *stream);

#endif
