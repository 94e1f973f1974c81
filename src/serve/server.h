/* SPDX-License-Identifier: Apache-2.0 */
/* server.h: the life of `gpuos serve` (server.c), started by cli/cmd_serve.c.
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_SERVER_H
#define GOS_SERVE_SERVER_H

struct srv;

/* server.c */
int srv_run(struct srv *s, const char *force_sim);
void srv_reap_idle(struct srv *s);

#endif
