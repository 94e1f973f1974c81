/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.h: a vGPU's figures and the Prometheus endpoint (metrics.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_METRICS_H
#define GOS_SERVE_METRICS_H

#include "proto/proto.h"

#include <stddef.h>

struct srv;
struct srv_client;

/* metrics.c: a vGPU's figures (`gpuos vgpu list`, the scrape). */
void srv_vgpu_record(struct srv *s, int v, struct gos_vgpu_rec *r);

/* metrics.c: the Prometheus endpoint (metrics_listen). */
int srv_metrics_start(struct srv *s);
void srv_metrics_stop(struct srv *s);
/* The exposition text (lock held by the caller), malloc'd; NULL: out of memory. */
char *srv_metrics_text(struct srv *s, size_t *len);

/* VGPU_INFO and ADMIN_LIST (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_vgpu_info(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_admin_list(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
