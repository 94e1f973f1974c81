/* SPDX-License-Identifier: Apache-2.0 */
/* shm.h: shared device memory (shm.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_SHM_H
#define GOS_SERVE_SHM_H

#include "proto/proto.h"

#include <stddef.h>
#include <stdint.h>

struct srv;
struct srv_client;

/* shm.c: shared device memory (issue 10), lock held (dropped around device calls). */
void srv_shm_init(struct srv *s);
void srv_shm_limits(struct srv *s); /* cfg.shm_* into the table (start, reload) */
void srv_shm_fini(struct srv *s);
int srv_shm_get(struct srv_client *c, const struct gos_msg_shm_get *m, struct gos_rep_shm_get *r);
int srv_shm_at(struct srv_client *c, const struct gos_msg_shm_at *m, struct gos_rep_shm_at *r);
/* The caller drained c's work first. */
int srv_shm_dt(struct srv_client *c, uint64_t dptr);
int srv_shm_ctl(struct srv_client *c, const struct gos_msg_shm_ctl *m, struct gos_shm_rec *r, int *has_rec);
/* ADMIN_SHM_LIST's reply body in out (room for GOS_SHM_LIST_MAX records); its length. */
size_t srv_shm_list(struct srv_client *c, unsigned char *out);
/* ADMIN_SHM_RM (gpuos shm rm): root or the daemon's owner only; *removed marked. */
int srv_shm_rm(struct srv_client *c, const struct gos_msg_admin_shm_rm *m, uint32_t *removed);
/* Detaches every segment c holds (it or its executor is gone). */
void srv_shm_client_gone(struct srv_client *c);

/* Its messages (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_shm_get(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_shm_at(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_shm_dt(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_shm_ctl(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_admin_shm_list(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_admin_shm_rm(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
