/* SPDX-License-Identifier: Apache-2.0 */
/* exec_op.c: the one runner of device operations (exec_op.h).
 * Process: the executor (gpuos executor); the daemon under isolation = none. */
#include "exec/exec_op.h"

#include "common/status.h"

int gos_op_issue(gos_device *dev, const struct gos_op *o, void *stream)
{
    switch (o->kind) {
    case GOS_OP_HTOD:
        return o->sync ? gos_exec_copy_htod_sync(dev, o->dptr, o->host, o->bytes)
                       : gos_exec_copy_htod(dev, o->dptr, o->host, o->bytes, stream);
    case GOS_OP_DTOH:
        return o->sync ? gos_exec_copy_dtoh_sync(dev, o->host, o->dptr, o->bytes)
                       : gos_exec_copy_dtoh(dev, o->host, o->dptr, o->bytes, stream);
    case GOS_OP_DTOD: return gos_exec_copy_dtod(dev, o->dptr, o->dptr2, o->bytes, stream);
    case GOS_OP_LAUNCH: return gos_exec_launch(dev, o->fn, &o->cfg, stream);
    default: return gos_fail(GOS_EPROTO, "device operation of kind %u", (unsigned)o->kind);
    }
}
