/* SPDX-License-Identifier: Apache-2.0 */
/* tmap_cl.h: tensor maps for clients (tmap_cl.c, issue 43: TMAP_ENCODE).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_TMAP_CL_H
#define GOS_SERVE_TMAP_CL_H

#include "proto/proto.h"

struct srv_client;

/* A tensor map for c (lock held, dropped around the encoding): by c's
 * executor's device, or the daemon's under isolation = none. The arguments
 * were checked (gos_proto_check_args). */
int srv_tmap_encode(struct srv_client *c, const gpuos_tmap_args *a, struct gos_rep_tmap *r);

/* Its message (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_tmap_encode(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
