/* SPDX-License-Identifier: Apache-2.0 */
/* state.h: the configuration in force at run time: SIGHUP's reload
 * (reload.c) and the state file of `vgpu set` and `vgpu create` (state.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_STATE_H
#define GOS_SERVE_STATE_H

#include "proto/proto.h"

struct srv;
struct srv_client;

/* state.c: `vgpu set` from a client (lock held): applied, persisted in the state file
 * (undone when it cannot be saved), oversubscription warned of. */
int srv_vgpu_set_persist(struct srv *s, const char *name, const char *key, const char *value);

/* reload.c: SIGHUP. Rereads the configuration file and applies it without
 * dropping clients, or keeps the running one (error logged) when it is invalid
 * or asks for what only a restart can change. Takes the lock itself. */
int srv_reload(struct srv *s);

/* state.c: the state file of `vgpu set` (JSON, schema gpuos.vgpu-state/1). */
int srv_state_load(struct srv *s); /* at start, lock not needed; applies overrides */
int srv_state_save(struct srv *s); /* atomically (temporary file + rename) */
/* Drops overrides whose file value changed since they were set (after a load
 * or reload); returns how many were dropped. */
int srv_state_reconcile(struct srv *s);

/* ADMIN_SET (client.c's msg_table; reply.h says what a handler does). */
int srv_msg_admin_set(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd);

#endif
