/* SPDX-License-Identifier: Apache-2.0 */
/* geom.h: a kernel launch's geometry, declared once (issue 40.1): grid, block
 * and cluster dimensions and the dynamic shared memory. It is the geometry of
 * the device layer's launch (exec_ops.h's gos_launch_cfg) and of the request
 * that carries a launch on every wire (proto/req.h's gos_req: the client's
 * LAUNCH, the ring's entries, the executor's RUN), so a launch's geometry goes
 * from the client to the driver by assignment (a.geom = b.geom), never member
 * by member. Explicit widths, no padding: it travels on the wires as it is.
 * Process: every process that names a launch (client, shim, daemon, executor). */
#ifndef GOS_DEVICE_GEOM_H
#define GOS_DEVICE_GEOM_H

#include <stdint.h>

#define GOS_GEOM_MEMBERS                                                                                       \
    uint32_t grid[3], block[3]; /* no zero dimension */                                                        \
    uint32_t cluster[3];        /* {0,0,0} (or {1,1,1}): none */                                               \
    uint32_t smem               /* dynamic shared memory, bytes */

struct gos_geom {
    GOS_GEOM_MEMBERS;
};
_Static_assert(sizeof(struct gos_geom) == 40, "launch geometry layout (it travels on the wires)");

/* The geometry inside a larger struct: reached by name (c->grid[0]) or as a
 * whole (c->geom), as common/range.h's GOS_RANGE_HEAD. */
#define GOS_GEOM_HEAD                                                                                          \
    union {                                                                                                    \
        struct gos_geom geom;                                                                                  \
        struct {                                                                                               \
            GOS_GEOM_MEMBERS;                                                                                  \
        };                                                                                                     \
    }

#endif
