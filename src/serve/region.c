/* SPDX-License-Identifier: Apache-2.0 */
/* region.c: a client's shared regions (sealed memfds mapped by the daemon and,
 * under isolation = process, by the client's executor too): adding one, finding
 * a range in one, dropping one (unmapped once no queued task uses it).
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/region.h"
#include "device/exec_ops.h"
#include "serve/executor.h"

#include "common/range.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct srv_dev *dev_of(struct srv_client *c)
{
    return &c->srv->devs[c->srv->vgpus[c->vgpu].cfg.device];
}

/* A client's shared region (its memfd fd of at least bytes): mapped here and,
 * with an executor, there too; there at the client's own address addr when
 * asked and free (*flags GOS_REGION_F_SAME_VA: the client's kernels reach it by
 * that address). */
int srv_region_add(struct srv_client *c, uint64_t bytes, uint64_t addr, int fd, uint32_t *id, uint32_t *flags)
{
    struct srv_dev *d = dev_of(c);
    struct stat st;
    *flags = 0;
    if (fd < 0)
        return gos_fail(GOS_EPROTO, "REGION_ADD without a file descriptor");
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < bytes)
        return gos_fail(GOS_EINVAL, "region descriptor is not a file of at least %llu bytes",
                        (unsigned long long)bytes);
    /* A client shrinking the file under our mapping would make the daemon fault
     * (SIGBUS): insist on a memfd sealed against shrinking. */
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK))
        return gos_fail(GOS_EPERM, "region must be a memfd sealed with F_SEAL_SHRINK");
    int r = -1;
    for (int i = 0; i < GOS_MAX_REGIONS; i++)
        if (!c->regions[i].used) {
            r = i;
            break;
        }
    if (r < 0)
        return gos_fail(GOS_EBUSY, "more than %d shared regions", GOS_MAX_REGIONS);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return gos_fail(GOS_ENOMEM, "mapping a region of %llu bytes: %s", (unsigned long long)bytes, strerror(errno));
    if (c->x) { /* the executor maps (and pins) the same pages in its own process */
        struct x_region xr = {.slot = (uint32_t)r, .bytes = bytes, .addr = addr};
        int rc = srv_exec_call(c->x, X_REGION_ADD, &xr, sizeof xr, fd, flags, 4);
        if (rc) {
            munmap(p, bytes);
            return rc;
        }
    }
    /* The mapping keeps the memory: the descriptor is not needed any more, and
     * a client must not hold 64 of the daemon's descriptors (max_clients). */
    close(fd);
    struct srv_region *g = &c->regions[r];
    memset(g, 0, sizeof *g);
    g->used = 1;
    g->fd = -1;
    g->ptr = p;
    g->bytes = bytes;
    /* Pinned pages make the region the bounce buffer itself (zero-copy path);
     * with an executor, its own registration is the one that counts. */
    g->pinned = c->x ? 1 : gos_exec_host_register(d->dev, p, bytes) == GOS_OK;
    g->same_va = *flags & GOS_REGION_F_SAME_VA ? addr : 0;
    *id = (uint32_t)r;
    return GOS_OK;
}

struct srv_region *srv_region_find(struct srv_client *c, uint32_t r, uint64_t off, uint64_t n)
{
    if (r >= GOS_MAX_REGIONS || !c->regions[r].used || c->regions[r].deleted) {
        gos_fail(GOS_EINVAL, "region %u is not a region of this client", (unsigned)r);
        return NULL;
    }
    struct srv_region *g = &c->regions[r];
    if (!gos_range_within(0, g->bytes, off, n)) {
        gos_fail(GOS_EINVAL, "range %llu+%llu outside region %u of %llu bytes", (unsigned long long)off,
                 (unsigned long long)n, (unsigned)r, (unsigned long long)g->bytes);
        return NULL;
    }
    return g;
}

/* Unmaps a region no task uses any more and frees its slot. */
static void region_release(struct srv_client *c, struct srv_region *g)
{
    if (g->pinned && !c->x)
        gos_exec_host_unregister(dev_of(c)->dev, g->ptr);
    munmap(g->ptr, g->bytes);
    if (g->fd >= 0)
        close(g->fd);
    memset(g, 0, sizeof *g);
}

void srv_region_drop(struct srv_client *c, int r)
{
    struct srv_region *g = &c->regions[r];
    g->deleted = 1;
    if (g->refs == 0)
        region_release(c, g);
}

void srv_region_unref(struct srv_client *c, int r)
{
    struct srv_region *g = &c->regions[r];
    if (--g->refs == 0 && g->deleted)
        region_release(c, g);
}

/* REGION_ADD, REGION_DEL (client.c's msg_table). */
int srv_msg_region_add(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_rep_region_add r = {0};
    const struct gos_msg_region_add *m = p;
    int rc = srv_region_add(c, m->bytes, m->addr, fd, &r.region, &r.flags);
    if (rc && fd >= 0)
        close(fd);
    return srv_reply(c, h->seq, h->type, rc, &r, sizeof r);
}

int srv_msg_region_del(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    srv_region_drop(c, (int)((struct gos_msg_region_del *)p)->region);
    return srv_reply(c, h->seq, h->type, GOS_OK, NULL, 0);
}
