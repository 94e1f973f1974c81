/* SPDX-License-Identifier: Apache-2.0 */
/* xshare.h: the executor the clients of a vGPU share (executor = per-vgpu;
 * xshare.c).
 * Process: the daemon (gpuos serve). */
#ifndef GOS_SERVE_XSHARE_H
#define GOS_SERVE_XSHARE_H

#include "serve/executor.h"

struct srv;
struct srv_client;

/* A shared executor (executor = per-vgpu): its control channel and how many
 * clients use it; it ends with the last of them. */
struct srv_xshare {
    struct srv_exec *ctl;
    int refs;
    struct srv_exec_share fate; /* a client's fault, for the others' channels (executor.h) */
};

/* xshare.c (executor = per-vgpu): a channel to the executor the clients of
 * vGPU v share, started with the first of them (lock held, dropped while it
 * starts; cls as srv_exec_spawn's); leave ends c's part there, and the
 * executor with its last client. */
int srv_xshare_join(struct srv *s, int v, const struct srv_exec_class *cls, struct srv_exec **x,
                    struct srv_xshare **sh);
void srv_xshare_leave(struct srv_client *c);

#endif
