/* SPDX-License-Identifier: Apache-2.0 */
/* pmem_cl.h: clients' partition-local memory (pmem_cl.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_PMEM_CL_H
#define GOS_SERVE_PMEM_CL_H

#include "proto/proto.h"

#include <stdint.h>

struct srv_client;

/* Partition-local memory of clients (issue 12; pmem_cl.c). The caller has
 * drained the client's work where the device might use the memory; each drops
 * the lock around the device work. srv_pmem_client_gone: at the end of a
 * session (isolation = none: frees what the daemon holds for it). */
struct srv_pmem_set;
int srv_pmem_do_alloc(struct srv_client *c, const struct gos_msg_pmem_alloc *m, struct gos_rep_pmem_alloc *r);
int srv_pmem_do_free(struct srv_client *c, uint64_t base);
int srv_pmem_do_copy(struct srv_client *c, const struct gos_msg_pmem_copy *m);
int srv_pmem_do_check(struct srv_client *c, const struct gos_msg_pmem_check *m, struct gos_rep_pmem_check *r);
void srv_pmem_client_gone(struct srv_client *c);

/* Its messages (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_pmem_alloc(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_pmem_free(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_pmem_copy(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
int srv_msg_pmem_check(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
