/* SPDX-License-Identifier: Apache-2.0 */
/* region.h: a client's shared host regions (region.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_REGION_H
#define GOS_SERVE_REGION_H

#include "proto/proto.h"

#include <stdint.h>

struct srv_client;
struct srv_region;

/* region.c (lock held): a region from the client's memfd (REGION_ADD); the
 * region holding [off, off + n) of region r, or NULL with an error; dropping
 * one (unmapped once no task uses it); a task's reference released. */
int srv_region_add(struct srv_client *c, uint64_t bytes, uint64_t addr, int fd, uint32_t *id, uint32_t *flags);
struct srv_region *srv_region_find(struct srv_client *c, uint32_t r, uint64_t off, uint64_t n);
void srv_region_drop(struct srv_client *c, int r);
void srv_region_unref(struct srv_client *c, int r);

/* Its messages (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_region_add(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_region_del(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
