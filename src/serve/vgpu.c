/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu.c: the runtime view of virtual GPUs (what Gdev kept in /proc, section 6):
 * assigned shares, measured compute and copy utilisation over the last period,
 * memory used against the memory share, clients; and changing the shares while
 * clients run (`gpuos vgpu set NAME key=value`). Called with srv->lock held.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/executor.h"
#include "serve/session.h"
#include "serve/vgpu.h"
#include "common/log.h"

#include "common/grow.h"
#include "common/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int srv_sched_vgpu_add(struct srv_dev *d, uint32_t id, const struct gos_serve_vgpucfg *g)
{
    int rc = gos_sched_vgpu_add(d->sched, id, g->compute, g->copy);
    if (!rc && g->latency_ms)
        rc = gos_sched_vgpu_set_latency(d->sched, id, (uint64_t)g->latency_ms * 1000000ull);
    return rc;
}

int srv_vgpu_share(const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || (*end && strcmp(end, "%")) || x < 1 || x > 100)
        return gos_fail(GOS_EINVAL, "share \"%s\" must be 1..100 (percent)", v);
    *out = (int)x;
    return GOS_OK;
}

int srv_vgpu_fits(struct srv *s, int v, const struct gos_serve_vgpucfg *g)
{
    /* The shares of the device's vGPUs, this one changed or added, must fit
     * (issue 15.6), as at start. */
    static struct gos_serve_config trial; /* under the lock */
    trial = s->cfg;
    uint64_t totals[GOS_SERVE_MAX_DEVICES];
    for (int i = 0; i < s->n_devs; i++)
        totals[i] = s->devs[i].mem_total;
    trial.n_vgpus = 0; /* the vGPUs in force (reloads add and remove) */
    for (int i = 0; i < s->n_vgpus; i++)
        if (!s->vgpus[i].removed)
            trial.vgpus[trial.n_vgpus++] = i == v ? *g : s->vgpus[i].cfg;
    if (v < 0 && trial.n_vgpus < GOS_MAX_VGPUS)
        trial.vgpus[trial.n_vgpus++] = *g;
    char warn[256];
    int rc = gos_serve_config_check_memory(&trial, totals, warn, sizeof warn);
    if (rc) {
        char why[GOS_MSG_TEXT_MAX];
        const char *e = gos_last_error(), *r = strstr(e, ": memory");
        snprintf(why, sizeof why, "%s", r ? r + 2 : e); /* without the file's line */
        return gos_fail(rc, "%s", why);
    }
    if (warn[0])
        gos_log(LOG_WARNING, "%s", warn);
    return GOS_OK;
}

/* Room for one more entry in the client's allocation table (allocations,
 * attachments, partition-local memory, VMM mappings): GOS_OK, or GOS_ENOMEM
 * with a message. */
int srv_alloc_room(struct srv_client *c)
{
    return gos_grow((void **)&c->allocs, &c->cap_allocs, c->n_allocs, sizeof *c->allocs, 16);
}

/* Whether bytes more fit the memory share of c's vGPU. */
int srv_share_room(struct srv_client *c, uint64_t bytes, const char *what)
{
    struct srv_vgpu *v = &c->srv->vgpus[c->vgpu];
    /* Usage may exceed the quota (`vgpu set` shrank it): the difference would
     * wrap (issue 15.2). */
    if (v->mem_used >= v->mem_quota || bytes > v->mem_quota - v->mem_used)
        return gos_fail(GOS_EBUSY, "vGPU %s: %s would exceed its memory share (%llu of %llu bytes used)",
                        v->cfg.name, what, (unsigned long long)v->mem_used, (unsigned long long)v->mem_quota);
    return GOS_OK;
}

int srv_vgpu_find(struct srv *s, const char *name)
{
    for (int i = 0; i < s->n_vgpus; i++)
        if (!s->vgpus[i].deleted && !strcmp(s->vgpus[i].cfg.name, name))
            return i;
    return -1;
}

void srv_vgpu_exec_class(struct srv *s, int v, struct srv_exec_class *cls)
{
    int dev = s->vgpus[v].cfg.device, any_latency = 0;
    *cls = (struct srv_exec_class){0};
    for (int i = 0; i < s->n_vgpus; i++)
        any_latency |= !s->vgpus[i].removed && s->vgpus[i].cfg.device == dev && s->vgpus[i].cfg.latency_ms;
    const struct srv_dev *d = &s->devs[dev];
    if (!any_latency || d->isolation != GOS_ISOLATION_MPS)
        return;
    int latency = s->vgpus[v].cfg.latency_ms > 0;
    if (!latency && d->latency_sms)
        cls->sm_pct = 100 - d->latency_sms;
    if (d->latency_priority & GOS_LATPRIO_STREAM)
        cls->prio = latency ? 1 : -1;
    cls->mps_low = !latency && (d->latency_priority & GOS_LATPRIO_CLIENT);
}

int srv_vgpu_set(struct srv *s, const char *name, const char *key, const char *value)
{
    if (gos_serve_text_check("vgpu set: key", key) || gos_serve_text_check("vgpu set: value", value))
        return GOS_EINVAL;
    int v = srv_vgpu_find(s, name);
    if (v < 0)
        return gos_fail(GOS_EINVAL, "no vGPU named \"%s\"", name);
    if (s->vgpus[v].removed)
        return gos_fail(GOS_EINVAL, "vGPU \"%s\" was removed from the configuration", name);
    struct srv_vgpu *g = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g->cfg.device];
    int rc, x = 0;
    if (!strcmp(key, "compute") || !strcmp(key, "copy")) {
        if ((rc = srv_vgpu_share(value, &x)))
            return rc;
        int comp = !strcmp(key, "compute") ? x : g->cfg.compute;
        int copy = !strcmp(key, "copy") ? x : g->cfg.copy;
        if ((rc = gos_sched_vgpu_set_shares(d->sched, g->id, comp, copy)))
            return rc;
        g->cfg.compute = comp;
        g->cfg.copy = copy;
        return GOS_OK; /* oversubscription: srv_vgpu_set_persist warns */
    }
    if (!strcmp(key, "memory")) {
        double pct;
        uint64_t bytes;
        if ((rc = gos_serve_parse_mem(value, &pct, &bytes)))
            return rc;
        uint64_t q = gos_serve_mem_quota(pct, bytes, d->mem_total);
        if (q > d->mem_total)
            return gos_fail(GOS_EINVAL, "memory of %llu bytes is larger than the device (%llu bytes)",
                            (unsigned long long)q, (unsigned long long)d->mem_total);
        struct gos_serve_vgpucfg trial = g->cfg;
        trial.mem_pct = pct;
        trial.mem_bytes = bytes;
        if ((rc = srv_vgpu_fits(s, v, &trial)))
            return rc;
        /* Shrinking below what is in use is allowed: new allocations fail until
         * enough is freed (nothing already allocated is revoked). */
        g->mem_quota = q;
        g->cfg.mem_pct = pct;
        g->cfg.mem_bytes = bytes;
        return GOS_OK;
    }
    return gos_fail(GOS_EINVAL, "unknown key \"%s\" (compute, copy, memory)", key);
}

static void mem_value(double pct, uint64_t bytes, char *out, size_t n)
{
    if (pct > 0)
        snprintf(out, n, "%.10g%%", pct);
    else
        snprintf(out, n, "%llu", (unsigned long long)bytes);
}

void srv_vgpu_file_value(const struct gos_serve_vgpucfg *f, int key, char *out, size_t n)
{
    if (key == SRV_OV_COMPUTE)
        snprintf(out, n, "%d", f->compute);
    else if (key == SRV_OV_COPY)
        snprintf(out, n, "%d", f->copy);
    else
        mem_value(f->mem_pct, f->mem_bytes, out, n);
}

int srv_check_oversubscription(struct srv *s, const char *when)
{
    int warnings = 0;
    for (int i = 0; i < s->n_devs; i++) {
        int comp = 0, copy = 0;
        for (int v = 0; v < s->n_vgpus; v++) {
            struct srv_vgpu *g = &s->vgpus[v];
            if (g->removed || g->cfg.device != i)
                continue;
            comp += g->cfg.compute;
            copy += g->cfg.copy;
        }
        /* (memory shares past 100 % are an error unless memory_oversubscribe:
         * gos_serve_config_check_memory) */
        if (comp > 100 || copy > 100) {
            gos_log(LOG_WARNING,
                    "device %s: compute shares sum to %d %%, copy shares to %d %% %s: oversubscribed, each vGPU "
                    "gets its share in proportion (less than written)",
                    s->cfg.devs[i].label, comp, copy, when);
            warnings++;
        }
    }
    return warnings;
}

int srv_peer_groups(int fd, pid_t pid, gid_t *out, int cap)
{
    socklen_t len = (socklen_t)((size_t)cap * sizeof(gid_t));
    /* The peer's supplementary groups as the kernel recorded them at connect()
     * (Linux 4.13+); never from anything the client says (issue 23.2). */
    if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, out, &len))
        return (int)(len / sizeof(gid_t));
    if (errno != ENOPROTOOPT)
        return 0; /* ERANGE (more than cap) or another error: no groups, fail closed */
    /* Older kernels: the status of the pid SO_PEERCRED reported. */
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Groups:", 7)) {
            char *p = line + 7, *e;
            for (unsigned long g; n < cap && (g = strtoul(p, &e, 10), e != p); p = e)
                out[n++] = (gid_t)g;
            break;
        }
    if (f)
        fclose(f);
    return n;
}

/* users = / groups = */
static int ids_access(struct srv *s, int v, int fd, pid_t pid, uid_t uid, gid_t gid)
{
    const struct gos_serve_vgpucfg *g = &s->vgpus[v].cfg;
    if (!g->n_users && !g->n_groups)
        return GOS_OK;
    for (int i = 0; i < g->n_users; i++)
        if (g->users[i] == uid)
            return GOS_OK;
    if (g->n_groups) {
        gid_t groups[GOS_SHM_MAX_GROUPS];
        int n = srv_peer_groups(fd, pid, groups, GOS_SHM_MAX_GROUPS);
        for (int i = 0; i < g->n_groups; i++) {
            if (g->groups[i] == gid)
                return GOS_OK;
            for (int j = 0; j < n; j++)
                if (g->groups[i] == groups[j])
                    return GOS_OK;
        }
    }
    char who[256] = "";
    size_t w = 0;
    if (g->n_users) {
        w += (size_t)snprintf(who + w, sizeof who - w, "users");
        for (int i = 0; i < g->n_users && w < sizeof who - 16; i++)
            w += (size_t)snprintf(who + w, sizeof who - w, "%s%u", i ? "," : " ", (unsigned)g->users[i]);
    }
    if (g->n_groups && w < sizeof who - 16) {
        w += (size_t)snprintf(who + w, sizeof who - w, "%sgroups", w ? "; " : "");
        for (int i = 0; i < g->n_groups && w < sizeof who - 16; i++)
            w += (size_t)snprintf(who + w, sizeof who - w, "%s%u", i ? "," : " ", (unsigned)g->groups[i]);
    }
    return gos_fail(GOS_EPERM, "vGPU \"%s\" is not open to uid %u gid %u (it admits %s)", g->name, (unsigned)uid,
                    (unsigned)gid, who);
}

int srv_vgpu_access(struct srv *s, int v, int fd, pid_t pid, uid_t uid, gid_t gid)
{
    const struct gos_serve_vgpucfg *g = &s->vgpus[v].cfg;
    int rc = ids_access(s, v, fd, pid, uid, gid);
    if (rc || !g->cgroup[0])
        return rc;
    return srv_peer_cgroup_access(g->name, g->cgroup, fd, pid); /* cgroup = (issue 43.2) */
}
