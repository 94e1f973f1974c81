/* SPDX-License-Identifier: Apache-2.0 */
/* green_ops.h: green contexts, the device layer's SM partitions (issue 13).
 *
 * A device's SM resource is split ONCE per minimum group size into groups (the
 * driver's cuDevSmResourceSplitByCount: on the H200 GPC-aligned groups of 8 plus a
 * remainder); each group's SMs are identified by probing (a %smid-recording kernel
 * launched on a green context made of that group alone), once per device and
 * group size. A green context is then made from any union of groups of one split
 * (the driver accepts only groups of one split instance in one descriptor), gives
 * streams whose kernels run exactly on the union's SMs, and is destroyed.
 *
 * Handles are opaque: a split is a (device-owned) index, a green context a void *,
 * a stream a void * that the exec pillar's launch / event / sync accept.
 * Backends:
 *   cuda_green.c: cuDeviceGetDevResource, cuDevSmResourceSplitByCount,
 *                 cuDevResourceGenerateDesc, cuGreenCtxCreate, cuGreenCtxStreamCreate;
 *   sim_green.c : groups modelled on the chip's truth (per GPC, cluster-eligible
 *                 SMs in chunks of the group size first, tiled across GPCs; then
 *                 chunks of the GPC's remaining SMs; what is left is the
 *                 remainder), streams are the simulated exec streams. */
#ifndef GOS_GREEN_OPS_H
#define GOS_GREEN_OPS_H

#include "chip/chip.h"
#include "device/device.h"

#define GOS_GREEN_MAX_GROUPS 64

struct gos_green_group {
    int n_sms;
    int sms[GOS_MAX_SMS]; /* ascending */
    int remainder;        /* the split's remainder (no co-scheduling guarantee) */
};

/* One split of the whole device's SM resource. */
struct gos_green_split {
    int min_count;          /* the minCount asked for */
    int min_partition;      /* driver's minimum partition size (H200: 8) */
    int alignment;          /* driver's co-scheduled alignment (H200: 8) */
    int total_sms;
    int n_groups;           /* groups, the remainder (if any) last */
    struct gos_green_group groups[GOS_GREEN_MAX_GROUPS];
};

struct gos_green_ops {
    gos_pillar_close_fn close;

    /* Splits the device's SMs into groups of at least min_count (0: the driver's
     * minimum) and identifies each group's SMs; the same min_count returns the
     * cached split. *split stays owned by the device. */
    int (*split)(gos_device *d, int min_count, const struct gos_green_split **split);

    /* A green context of the union of groups[0..n) of the split of min_count. */
    int (*create)(gos_device *d, int min_count, const int *groups, int n, void **gctx);
    int (*destroy)(gos_device *d, void *gctx);
    /* A stream on the green context (destroy with the exec pillar's stream_destroy
     * before the green context). */
    int (*stream_create)(gos_device *d, void *gctx, void **stream);

    /* Launches the probe kernel on stream: blocks of one per SM (large shared
     * memory), clusters of `cluster` (1: none), `blocks` blocks in all; block b
     * records its SM in sms_out[b] and whether every block of the launch was
     * resident at once (a grid-wide arrival counter reached `blocks` within
     * timeout_us) in coresident_out[b]. Synchronous. */
    int (*probe)(gos_device *d, void *stream, int cluster, int blocks, unsigned timeout_us,
                 int *sms_out, int *coresident_out);
};

/* Checked wrappers (green_ops.c): GOS_EUNSUPPORTED with a message when the backend
 * lacks green contexts, GOS_EINVAL for bad arguments. */
int gos_green_split(gos_device *d, int min_count, const struct gos_green_split **split);
int gos_green_create(gos_device *d, int min_count, const int *groups, int n, void **gctx);
int gos_green_destroy(gos_device *d, void *gctx);
int gos_green_stream_create(gos_device *d, void *gctx, void **stream);
int gos_green_stream_destroy(gos_device *d, void *stream);
int gos_green_probe(gos_device *d, void *stream, int cluster, int blocks, unsigned timeout_us,
                    int *sms_out, int *coresident_out);

#endif
