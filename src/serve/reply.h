/* SPDX-License-Identifier: Apache-2.0 */
/* reply.h: answering a client's request, for the message handlers of every
 * file of serve/ (client.c's table points at them; reply.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_REPLY_H
#define GOS_SERVE_REPLY_H

#include "proto/proto.h"

#include <stddef.h>
#include <stdint.h>

struct srv_client;

/* The answer to request seq of type (rc != 0: with gos_last_error's text),
 * sent without blocking under the daemon's lock (a client that leaves its
 * replies unread is dropped instead); non-zero when it could not be sent. */
int srv_reply(struct srv_client *c, uint32_t seq, uint16_t type, int rc, const void *body, size_t n);
/* The answer to request h: its body only when rc is GOS_OK. */
int srv_answer(struct srv_client *c, const struct gos_msg_hdr *h, int rc, const void *body, size_t n);
/* Only the daemon's owner or root may change vGPUs (ADMIN_SET, _CREATE,
 * _DELETE): GOS_OK, or GOS_EPERM saying who may `what`. */
int srv_admin_ok(struct srv_client *c, const char *what);

/* A message handler is
 *   int srv_msg_NAME(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);
 * (lock held; a row of client.c's msg_table, declared in the header of its
 * domain): it answers its request (or queues it) and returns < 0 to end the
 * connection; validate() has already accepted the request, and the reader
 * has drained the client's work first where the row says MF_DRAIN. */

#endif
