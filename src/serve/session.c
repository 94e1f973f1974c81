/* SPDX-License-Identifier: Apache-2.0 */
/* session.c: a client's session as a whole: its executor's loss (counted,
 * logged, memory returned) and its end (everything it held released once no
 * task of it is queued or running). Called by the reader (client.c), the
 * engines (dispatch.c) and swap.c (a reference held while the lock is
 * dropped); calls the release of everything a client holds (shm.c, swap.c,
 * vmm_cl.c, pmem_cl.c, region.c, ring_page.c, xshare.c), mps.c and
 * executor.c.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/ring.h"
#include "serve/region.h"
#include "serve/xshare.h"
#include "serve/shm.h"
#include "serve/swap.h"
#include "serve/pmem_cl.h"
#include "serve/vmm_cl.h"
#include "serve/mps.h"
#include "common/log.h"
#include "common/clock.h"
#include "device/exec_ops.h"
#include "serve/executor.h"

#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct srv_dev *dev_of(struct srv_client *c)
{
    return &c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device];
}

static void client_free(struct srv_client *c)
{
    struct srv *s = c->srv;
    if (c->vgpu >= 0) {
        struct srv_dev *d = dev_of(c);
        struct srv_vgpu *v = &s->vgpus[c->vgpu];
        srv_shm_client_gone(c); /* attachments: the segments' counts, not this vGPU's share */
        srv_swap_client_gone(c);
        srv_vmm_client_gone(c); /* its mappings' runs out of allocs, its handles' charges back */
        for (int i = 0; i < c->n_allocs; i++) {
            if (!c->x && !c->allocs[i].pmem)
                gos_exec_mem_free(d->dev, c->allocs[i].dptr);
            v->mem_used -= c->allocs[i].bytes + c->allocs[i].extra;
        }
        srv_pmem_client_gone(c); /* isolation = none: the daemon's own (pmem_cl.c) */
        for (int i = 0; i < GOS_MAX_REGIONS; i++)
            if (c->regions[i].used)
                srv_region_drop(c, i);
        for (int i = 0; i < SRV_MAX_MODULES; i++) {
            if (!c->x && c->modules[i] && c->modules[i] != (void *)1)
                gos_exec_module_unload(d->dev, c->modules[i]);
            v->mem_used -= c->module_bytes[i]; /* its globals (issue 44.2) */
            c->module_bytes[i] = 0;
        }
        srv_ring_gone(c);
        /* The executor's exit releases its context, memory and modules at once
         * (a shared executor releases this client's part when its channel
         * closes, and ends with its last client). */
        srv_exec_close(c->x);
        c->x = NULL;
        srv_xshare_leave(c);
        v->clients--;
    }
    for (struct srv_client **pp = &s->clients; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    s->n_clients--;
    gos_log(LOG_DEBUG, "client %u (pid %d) released", c->id, (int)c->pid);
    close(c->fd);
    pthread_mutex_destroy(&c->wlock);
    free(c->allocs);
    free(c);
    pthread_cond_broadcast(&s->idle);
}

void srv_client_exec_check(struct srv_client *c)
{
    if (!c->x || !c->x->dead || c->exec_lost || c->vgpu < 0)
        return;
    struct srv *s = c->srv;
    struct srv_vgpu *v = &s->vgpus[c->vgpu];
    struct srv_dev *d = dev_of(c);
    c->exec_lost = 1;
    int fated = c->x->fated;
    if (!fated)
        v->faults++; /* its own loss (fault, kill), not another MPS client's */
    gos_log(LOG_WARNING, "vGPU %s: client %u (pid %d): executor pid %d lost: %s", v->cfg.name, c->id, (int)c->pid,
            (int)c->x->pid, c->x->why);
    /* Its memory went with its process: back to the vGPU's share now; its
     * attachments of shared segments are gone too (the segments stay). */
    srv_shm_client_gone(c);
    srv_swap_client_gone(c);
    srv_vmm_client_gone(c);
    for (int i = 0; i < c->n_allocs; i++)
        v->mem_used -= c->allocs[i].bytes + c->allocs[i].extra;
    c->n_allocs = 0;
    for (int i = 0; i < SRV_MAX_MODULES; i++) { /* its modules' globals too (issue 44.2) */
        v->mem_used -= c->module_bytes[i];
        c->module_bytes[i] = 0;
    }
    srv_exec_kill(c->x);
    /* executor = per-vgpu: its executor was every client of this vGPU's; the
     * others hear why (once: they are fated) */
    if (c->xshare && !fated)
        for (struct srv_client *o = s->clients; o; o = o->next)
            if (o != c && o->xshare == c->xshare && o->x && !(o->x->dead && (o->x->faulted || o->x->fated))) {
                char why[400];
                if (c->x->share && c->x->share->lost) /* the share's one reason (executor.c) */
                    snprintf(why, sizeof why, "%s", c->x->why);
                else
                    snprintf(why, sizeof why, "vGPU %s: the executor its clients share (executor = per-vgpu) was lost "
                             "with client %u: %.200s", v->cfg.name, c->id, c->x->why);
                if (o->x->dead) /* its channel broke first: the bare reason gives way */
                    srv_exec_refate(o->x, why);
                else
                    srv_exec_fail(o->x, why);
            }
    /* isolation = mps: one server, one fate. A fault of an executor of the
     * current server ends every other client of that GPU with a clear error
     * naming the vGPU that faulted; then the server is restarted and clients
     * reconnect. */
    if (d->isolation != GOS_ISOLATION_MPS || !c->x->faulted || fated || c->born_ns < d->mps_restarted_ns)
        return;
    char why[300];
    snprintf(why, sizeof why, "vGPU %s faulted on this GPU's MPS server (isolation = mps: a fault reaches every "
             "client): %.200s", v->cfg.name, c->x->why);
    int n = 0;
    for (struct srv_client *o = s->clients; o; o = o->next)
        if (o != c && o->x && o->vgpu >= 0 && dev_of(o) == d && !o->x->dead) {
            srv_exec_fail(o->x, why);
            n++;
        }
    gos_log(LOG_WARNING, "device %d: MPS fault of vGPU %s: %d other client(s) told; restarting the MPS server",
            d->index, v->cfg.name, n);
    d->mps_restarted_ns = gos_now_ns();
    if (d->mps_dir[0]) {
        srv_mps_stop(d->mps_dir);
        if (srv_mps_start(d->mps_dir, sizeof d->mps_dir))
            gos_log(LOG_ERR, "device %d: %s", d->index, gos_last_error());
    }
}

void srv_client_exec_probe(struct srv_client *c)
{
    if (!c->x || c->x->dead || c->vgpu < 0)
        return;
    struct srv *s = c->srv;
    pid_t pid = c->x->pid;
    int faulted = 0;
    for (struct srv_client *o = s->clients; o && !faulted; o = o->next)
        faulted = o->x && o->x->pid == pid && o->gp && o->gp->fault_msg[0];
    if (!faulted && !srv_exec_hungup(c->x))
        return;
    /* The process died outside an exchange: through a ring, whose device
     * fault the executor wrote into that ring's grant page first. The client
     * that faulted is told its own error; the others of the same process
     * (executor = per-vgpu) hear of it from srv_client_exec_check. */
    for (struct srv_client *o = s->clients; o; o = o->next)
        if (o->x && !o->x->dead && o->x->pid == pid && o->vgpu >= 0 && o->gp && o->gp->fault_msg[0]) {
            char why[300];
            snprintf(why, sizeof why, "device fault: %.255s", o->gp->fault_msg);
            srv_exec_lost(o->x, 1, why);
            srv_client_exec_check(o);
        }
    if (!c->x->dead) {
        char why[100];
        snprintf(why, sizeof why, "executor (pid %d) died", (int)pid);
        srv_exec_lost(c->x, 0, why);
    }
    srv_client_exec_check(c);
}

void srv_client_unref(struct srv_client *c)
{
    if (--c->refs == 0)
        client_free(c);
}

