/* SPDX-License-Identifier: Apache-2.0 */
/* swap.h: swapping a device's memory to the host (swap.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_SWAP_H
#define GOS_SERVE_SWAP_H

#include "proto/proto.h"
#include "serve/config.h"

#include <stdint.h>

struct srv;
struct srv_client;
struct srv_dev;

/* swap.c: swapping (issue 10.2), lock held (dropped around executor calls). */
int srv_swap_init(struct srv *s, struct srv_dev *d, const struct gos_serve_devcfg *cfg);
void srv_swap_fini(struct srv_dev *d);
int srv_swap_alloc(struct srv_client *c, uint64_t bytes, uint64_t *dptr);
void srv_swap_free(struct srv_client *c, uint64_t dptr);
void srv_swap_client_gone(struct srv_client *c);

/* Before a COPY or LAUNCH of c is queued: what it needs made resident. */
int srv_swap_need(struct srv_client *c, const struct gos_msg_hdr *h, const void *payload);
void srv_swap_record(struct srv *s, int v, uint64_t *resident, uint64_t *swapped);
/* Turns (issue 42): those given to vGPU v and the time its memory spent moving;
 * whether v is turned out now (its rings get no grant meanwhile: ring.c). */
void srv_swap_turns(struct srv *s, int v, uint64_t *turns, uint64_t *swap_ns);
int srv_swap_turned_out(struct srv_dev *d, int vgpu);
/* The daemon knows its vGPUs (lock held): swap_prefault's thread faults the
 * pool in toward their quotas' sum, and follows it as it changes. */
void srv_swap_quotas_known(struct srv *s);

#endif
