/* SPDX-License-Identifier: Apache-2.0 */
/* req.h: one request form (issue 40.1). A copy or a launch is one struct
 * gos_req from the client to the executor's decoder: the head of the client's
 * COPY and LAUNCH payloads (proto.h), of a ring entry (ring_shm.h) and of the
 * executor's RUN operation (xproto.h's x_op). Each carrier adds only what is
 * its own (a ring entry's completion and data; a LAUNCH's parameters follow
 * it), and every carrier is checked by the one checker, gos_req_check, with
 * the rules of that carrier (struct gos_req_via): the daemon for COPY and
 * LAUNCH (proto.c), the executor for ring entries and RUN operations
 * (exec/exec_run.c). Explicit widths, no padding: it travels as it is.
 * Process: every side of the wire (client, daemon, executor). */
#ifndef GOS_PROTO_REQ_H
#define GOS_PROTO_REQ_H

#include "device/geom.h"

#include <stddef.h>
#include <stdint.h>

/* The one spelling of a device operation's kind (issue 20): a request's op, a
 * PMEM_COPY's dir and the runner's (exec/exec_op.h). 0 is no operation. */
enum gos_op_kind {
    GOS_OP_HTOD = 1, /* host -> device */
    GOS_OP_DTOH,     /* device -> host */
    GOS_OP_DTOD,     /* device (dptr2) -> device (dptr) */
    GOS_OP_LAUNCH,   /* a kernel */
    GOS_OP_FENCE,    /* ring only: waits for everything before it */
    GOS_OP_GATE,     /* ring only: later entries wait for a word of host memory */
};

/* A request's flags, one set for every carrier (each allows some: gos_req_via). */
enum {
    GOS_F_ASYNC = 1u,  /* no reply on success (the ring: answered once issued) */
    GOS_F_DIRECT = 2u, /* COPY: small-copy path (synchronous copy, CPU-timed; Gdev's direct I/O) */
    GOS_F_INLINE = 4u, /* ring: the host bytes are in the entry's slot, not in a region */
    GOS_F_SYNC = 8u,   /* RUN: host memory that is not pinned: the driver's synchronous copy (the daemon's call) */
};

#define GOS_REQ_MEMBERS                                                                                        \
    uint32_t op;          /* gos_op_kind */                                                                    \
    uint32_t flags;       /* GOS_F_* */                                                                        \
    uint32_t region;      /* HTOD, DTOH (not inline): the host side, a region of the client */                 \
    int32_t priority;     /* within the vGPU: higher runs first (the daemon's scheduler) */                    \
    uint64_t offset;      /* into the region */                                                                \
    uint64_t dptr;        /* device destination (HTOD, DTOD) or source (DTOH) */                               \
    uint64_t dptr2;       /* DTOD: the source; GATE: the value waited for */                                   \
    uint64_t bytes;       /* a copy's length */                                                                \
    uint64_t func;        /* LAUNCH: the client's function handle */                                           \
    GOS_GEOM_HEAD;        /* LAUNCH: grid, block, cluster, smem (device/geom.h) */                             \
    uint32_t param_bytes; /* LAUNCH: packed kernel parameters, after the carrier's head */                     \
    uint32_t pad

struct gos_req {
    GOS_REQ_MEMBERS;
};

/* The request inside its carrier: reached by name (m->dptr) or as a whole
 * (m->req), as common/range.h's GOS_RANGE_HEAD. */
#define GOS_REQ_HEAD                                                                                           \
    union {                                                                                                    \
        struct gos_req req;                                                                                    \
        struct {                                                                                               \
            GOS_REQ_MEMBERS;                                                                                   \
        };                                                                                                     \
    }

/* What a carrier of requests allows. */
struct gos_req_via {
    const char *name; /* in messages: "COPY", "ring entry" */
    uint32_t ops;     /* 1u << op for each op it carries */
    uint32_t flags;   /* the GOS_F_* it carries */
    int exact;        /* the parameters are exactly the bytes after the head (a message), else at most */
};
extern const struct gos_req_via gos_req_copy, gos_req_copy_check, gos_req_launch, gos_req_ring, gos_req_run;

#define GOS_PARAM_MAX 4096        /* packed kernel parameters */
#define GOS_COPY_MAX (1ull << 40) /* a copy's bytes */
#define GOS_MAX_REGIONS 64        /* shared host regions per client */

/* The one checker of a request (the daemon's COPY and LAUNCH, the executor's
 * ring entries and RUN operations); tail: the bytes after the head (a LAUNCH's
 * parameters; a ring slot's data area). First its form, GOS_EPROTO: an op and
 * flags the carrier knows, parameter bytes that are there. Then its
 * arguments, GOS_EINVAL: copies of 1..2^40 bytes whose region range neither
 * leaves the client's regions nor wraps (inline bytes that fit the tail);
 * launch geometry (no zero dimension, blocks of at most 1024 threads, a grid
 * that is a multiple of the cluster, clusters of at most 16 blocks) and at
 * most GOS_PARAM_MAX parameter bytes. GOS_OK or the code with a one-line
 * reason. What a request names (allocations, regions, functions) is checked
 * where those are known (the daemon's validate(), the executor's decoder). */
int gos_req_check(const struct gos_req *r, const struct gos_req_via *via, size_t tail);

#endif
