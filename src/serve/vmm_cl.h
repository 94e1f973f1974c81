/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_cl.h: CUDA's VMM for clients (vmm_cl.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_VMM_CL_H
#define GOS_SERVE_VMM_CL_H

#include "proto/proto.h"

struct srv_client;

/* CUDA's VMM for clients (vmm_cl.c; lock held, dropped around the device
 * work, which runs on the client's executor or, under isolation = none, on the
 * daemon's device). Each checks that everything named is c's own; CREATE
 * charges the vGPU's memory share until the memory is released and unmapped;
 * mappings with access are listed in c->allocs (runs of adjacent ones) for the
 * range checks of copies and kernels. UNMAP's caller drained c's work.
 * client_gone: c or its executor is gone; its charges returned, its entries
 * dropped (isolation = none: the device's objects released). */
int srv_vmm_reserve(struct srv_client *c, const struct gos_msg_vmm_reserve *m, struct gos_rep_vmm *r);
int srv_vmm_unreserve(struct srv_client *c, const struct gos_msg_vmm_range *m);
int srv_vmm_create(struct srv_client *c, const struct gos_msg_vmm_create *m, struct gos_rep_vmm *r);
int srv_vmm_release(struct srv_client *c, const struct gos_msg_vmm_release *m);
int srv_vmm_map(struct srv_client *c, const struct gos_msg_vmm_map *m);
int srv_vmm_unmap(struct srv_client *c, const struct gos_msg_vmm_range *m);
int srv_vmm_access(struct srv_client *c, const struct gos_msg_vmm_access *m);
void srv_vmm_client_gone(struct srv_client *c);

/* Its messages (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_vmm(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
