/* SPDX-License-Identifier: Apache-2.0 */
/* xshare.c: executors shared by the clients of one vGPU (executor = per-vgpu,
 * issue 9). The first client of the vGPU starts an executor as usual; its
 * first channel becomes the control channel, and every client (the first one
 * too) gets a channel of its own through X_ADOPT, served by a thread of that
 * executor in its one context: cooperating processes, no GPU context switch
 * between them, one address space and one fate among them. A client's end
 * closes its channel (the executor releases what it held); the executor ends
 * with its last client. If it dies (a fault), its clients hear it on their own
 * channels and the next client starts another.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/xshare.h"
#include "serve/executor.h"

#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>

int srv_xshare_join(struct srv *s, int v, const struct srv_exec_class *cls, struct srv_exec **x,
                    struct srv_xshare **sh)
{
    struct srv_vgpu *g = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g->cfg.device];
    while (g->xshare_busy) /* another client of g is joining: its turn first */
        srv_idle_wait(s, 10000000ull);
    g->xshare_busy = 1;
    int rc = GOS_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = GOS_OK;
        struct srv_xshare *h = g->xshare;
        if (h && h->ctl->dead) { /* died: its clients still hold it until they end */
            g->xshare = NULL;
            h = NULL;
        }
        struct srv_exec *ctl = h ? h->ctl : NULL;
        pthread_mutex_unlock(&s->lock);
        if (!ctl)
            rc = srv_dev_exec_spawn(d, cls, &ctl);
        if (!rc) {
            rc = srv_exec_adopt(ctl, x);
            if (rc && !h) /* a fresh executor that cannot take a client: gone again */
                srv_exec_close(ctl);
        }
        pthread_mutex_lock(&s->lock);
        if (!rc) {
            if (!h) {
                if (!(h = calloc(1, sizeof *h))) {
                    rc = gos_fail(GOS_ENOMEM, "daemon out of host memory");
                    srv_exec_close(*x);
                    srv_exec_close(ctl);
                    break;
                }
                h->ctl = ctl;
                pthread_mutex_init(&h->fate.lock, NULL);
                snprintf(h->fate.vgpu, sizeof h->fate.vgpu, "%s", g->cfg.name);
                g->xshare = h;
            }
            h->refs++;
            (*x)->share = &h->fate; /* its channel hears of a sibling's fault (executor.c) */
            *sh = h;
            break;
        }
        if (!h)
            break; /* no executor would start: the reason stands */
        /* the shared one is gone (its control channel broken): start another */
        if (g->xshare == h)
            g->xshare = NULL;
    }
    g->xshare_busy = 0;
    pthread_cond_broadcast(&s->idle);
    return rc;
}

void srv_xshare_leave(struct srv_client *c)
{
    struct srv_xshare *h = c->xshare;
    c->xshare = NULL;
    if (!h || --h->refs > 0)
        return;
    struct srv *s = c->srv;
    if (c->vgpu >= 0 && s->vgpus[c->vgpu].xshare == h)
        s->vgpus[c->vgpu].xshare = NULL;
    srv_exec_close(h->ctl); /* its last client: the process ends */
    pthread_mutex_destroy(&h->fate.lock);
    free(h);
}

