/* SPDX-License-Identifier: Apache-2.0 */
/* reply.c: answering a client's request, shared by the message handlers of
 * client.c and of the files whose domain they serve (shm.c, pmem_cl.c,
 * vmm_cl.c, region.c, ring.c, metrics.c, state.c, vgpu_life.c). It calls no
 * other file of serve/, so that those files answer without calling up into
 * client.c.
 * Process: the daemon (gpuos serve). */
#include "serve/reply.h"
#include "serve/daemon.h"
#include "serve/session.h"

#include "common/status.h"
#include "proto/wire.h"

int srv_reply(struct srv_client *c, uint32_t seq, uint16_t type, int rc, const void *body, size_t n)
{
    pthread_mutex_lock(&c->wlock);
    /* Never block while holding the daemon's lock: a client that leaves its
     * replies unread is dropped instead. */
    int r = gos_wire_reply(c->fd, 1, seq, type, rc, rc ? gos_last_error() : NULL, body, n);
    pthread_mutex_unlock(&c->wlock);
    return r;
}

int srv_answer(struct srv_client *c, const struct gos_msg_hdr *h, int rc, const void *body, size_t n)
{
    return srv_reply(c, h->seq, h->type, rc, rc ? NULL : body, rc ? 0 : n);
}

int srv_admin_ok(struct srv_client *c, const char *what)
{
    if (c->uid != 0 && c->uid != c->srv->uid)
        return gos_fail(GOS_EPERM, "only the daemon's owner (uid %u) or root may %s", (unsigned)c->srv->uid, what);
    return GOS_OK;
}
