/* SPDX-License-Identifier: Apache-2.0 */
/* req.c: the one checker of a request (req.h). Pure, unit-tested
 * (tests/test_req.c) and fuzzed with the protocol (tests/test_proto_fuzz.c).
 * Process: every side of the wire (client, daemon, executor). */
#include "proto/req.h"

#include "common/status.h"

_Static_assert(sizeof(struct gos_req) == 104, "request layout (it travels on the wires)");

#define OPS_COPY ((1u << GOS_OP_HTOD) | (1u << GOS_OP_DTOH) | (1u << GOS_OP_DTOD))
const struct gos_req_via gos_req_copy = {"COPY", OPS_COPY, GOS_F_ASYNC | GOS_F_DIRECT, 1};
const struct gos_req_via gos_req_copy_check = {"COPY_CHECK", OPS_COPY, 0, 1};
const struct gos_req_via gos_req_launch = {"LAUNCH", 1u << GOS_OP_LAUNCH, GOS_F_ASYNC, 1};
const struct gos_req_via gos_req_ring = {"ring entry", OPS_COPY | (1u << GOS_OP_LAUNCH) | (1u << GOS_OP_FENCE) |
                                                           (1u << GOS_OP_GATE),
                                         GOS_F_ASYNC | GOS_F_INLINE, 0};
const struct gos_req_via gos_req_run = {"RUN", OPS_COPY | (1u << GOS_OP_LAUNCH),
                                        GOS_F_ASYNC | GOS_F_DIRECT | GOS_F_SYNC, 0};

static int check_dims(const uint32_t v[3], const char *what, int allow_zero)
{
    if (allow_zero && !v[0] && !v[1] && !v[2])
        return GOS_OK;
    for (int i = 0; i < 3; i++)
        if (v[i] == 0)
            return gos_fail(GOS_EINVAL, "launch %s dimension %d is 0", what, i);
    return GOS_OK;
}

static int check_geom(const struct gos_geom *g)
{
    int rc;
    if ((rc = check_dims(g->grid, "grid", 0)) || (rc = check_dims(g->block, "block", 0)) ||
        (rc = check_dims(g->cluster, "cluster", 1)))
        return rc;
    uint64_t threads = (uint64_t)g->block[0] * g->block[1] * g->block[2];
    if (threads > 1024)
        return gos_fail(GOS_EINVAL, "launch block of %llu threads (at most 1024)", (unsigned long long)threads);
    if (g->cluster[0] && (g->grid[0] % g->cluster[0] || g->grid[1] % g->cluster[1] || g->grid[2] % g->cluster[2]))
        return gos_fail(GOS_EINVAL, "launch grid (%u, %u, %u) is not a multiple of the cluster (%u, %u, %u)",
                        g->grid[0], g->grid[1], g->grid[2], g->cluster[0], g->cluster[1], g->cluster[2]);
    if ((uint64_t)g->cluster[0] * g->cluster[1] * g->cluster[2] > 16)
        return gos_fail(GOS_EINVAL, "launch cluster of more than 16 blocks");
    return GOS_OK;
}

static int check_copy(const struct gos_req *r, const struct gos_req_via *via, size_t tail)
{
    if (r->bytes == 0 || r->bytes > GOS_COPY_MAX)
        return gos_fail(GOS_EINVAL, "copy of %llu bytes (1..2^40)", (unsigned long long)r->bytes);
    if (r->op == GOS_OP_DTOD)
        return GOS_OK;
    if (r->flags & GOS_F_INLINE)
        return r->bytes <= tail ? GOS_OK
                                : gos_fail(GOS_EINVAL, "%s of %llu inline bytes (at most %zu)", via->name,
                                           (unsigned long long)r->bytes, tail);
    if (r->region >= GOS_MAX_REGIONS)
        return gos_fail(GOS_EINVAL, "copy through region %u, out of range", (unsigned)r->region);
    if (r->offset + r->bytes < r->offset)
        return gos_fail(GOS_EINVAL, "copy region range overflows");
    return GOS_OK;
}

int gos_req_check(const struct gos_req *r, const struct gos_req_via *via, size_t tail)
{
    /* its form first: a request the carrier cannot hold */
    if (r->op >= 32 || !(via->ops & (1u << r->op)))
        return gos_fail(GOS_EPROTO, "%s opcode %u unknown", via->name, (unsigned)r->op);
    if (r->flags & ~via->flags)
        return gos_fail(GOS_EPROTO, "%s flags 0x%x unknown", via->name, (unsigned)r->flags);
    if (via->exact && r->param_bytes != tail)
        return gos_fail(GOS_EPROTO, "%s says %u parameter bytes, carries %zu", via->name, (unsigned)r->param_bytes,
                        tail);
    if (r->op == GOS_OP_LAUNCH && r->bytes) /* (the daemon counts a request's bytes as copied) */
        return gos_fail(GOS_EPROTO, "%s: a launch of %llu bytes", via->name, (unsigned long long)r->bytes);
    /* then its arguments: an error of this request alone */
    switch (r->op) {
    case GOS_OP_HTOD:
    case GOS_OP_DTOH:
    case GOS_OP_DTOD: return check_copy(r, via, tail);
    case GOS_OP_LAUNCH: {
        int rc = check_geom(&r->geom);
        if (rc)
            return rc;
        if (r->param_bytes > GOS_PARAM_MAX)
            return gos_fail(GOS_EINVAL, "kernel parameters of %u bytes (at most %d)", (unsigned)r->param_bytes,
                            GOS_PARAM_MAX);
        if (r->param_bytes > tail)
            return gos_fail(GOS_EPROTO, "%s of %u parameter bytes carries %zu", via->name,
                            (unsigned)r->param_bytes, tail);
        return GOS_OK;
    }
    default: return GOS_OK; /* FENCE, GATE: nothing of theirs to check here */
    }
}
