/* session.c: a client's session as a whole: its executor's loss (counted,
 * logged, memory returned) and its end (everything it held released once no
 * task of it is queued or running). Called by the reader (client.c) and the
 * engines (dispatch.c); calls only region.c and executor.c. */
#include "serve/serve.h"

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
        for (int i = 0; i < c->n_allocs; i++) {
            if (!c->x)
                gos_exec_mem_free(d->dev, c->allocs[i].dptr);
            v->mem_used -= c->allocs[i].bytes;
        }
        for (int i = 0; i < GOS_MAX_REGIONS; i++)
            if (c->regions[i].used)
                srv_region_drop(c, i);
        for (int i = 0; i < 16; i++)
            if (!c->x && c->modules[i] && c->modules[i] != (void *)1)
                gos_exec_module_unload(d->dev, c->modules[i]);
        /* The executor's exit releases its context, memory and modules at once. */
        srv_exec_close(c->x);
        c->x = NULL;
        v->clients--;
    }
    for (struct srv_client **pp = &s->clients; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    s->n_clients--;
    if (s->verbose)
        fprintf(stderr, "gpuos serve: client %u (pid %d) released\n", c->id, (int)c->pid);
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
    c->exec_lost = 1;
    v->faults++;
    fprintf(stderr, "gpuos serve: vGPU %s: client %u (pid %d): executor pid %d lost: %s\n", v->cfg.name, c->id,
            (int)c->pid, (int)c->x->pid, c->x->why);
    /* Its memory went with its process: back to the vGPU's share now. */
    for (int i = 0; i < c->n_allocs; i++)
        v->mem_used -= c->allocs[i].bytes;
    c->n_allocs = 0;
    srv_exec_kill(c->x);
}

void srv_client_unref(struct srv_client *c)
{
    if (--c->refs == 0)
        client_free(c);
}

