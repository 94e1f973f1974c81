/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_life.c: vGPUs made and removed at run time (issue 25; `gpuos vgpu create
 * NAME device=D compute=P memory=M [copy=P] [users=...] [groups=...]
 * [cgroup=PATH]`, `gpuos vgpu delete NAME [--force]`), what a cluster
 * scheduler's prolog and epilog use (dist/slurm/). Called with srv->lock held.
 *
 *   - create takes the keys of a [vgpu NAME] section (device, compute, copy,
 *     memory, users, groups, cgroup; no SM sets, which are made only at a
 *     start), checks them as a reload would (memory shares of the device's vGPUs in force must
 *     fit), and keeps the vGPU in the state file (state.c): it survives a
 *     restart and every reload;
 *   - a name the configuration file defines cannot be created; a created vGPU
 *     that the file names later (a reload or restart) becomes the file's: the
 *     file's values win and the created definition is dropped (logged);
 *   - delete removes only created vGPUs (the file's are removed by editing the
 *     file and reloading); with clients attached it is refused unless force,
 *     which kills their executors with the reason (their requests then fail
 *     with "vGPU X was deleted ...") or, isolation = none, closes their
 *     connections. A deleted vGPU is gone from lists at once; its table slot is
 *     reused by a later create once nothing refers to it any more.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/vgpu.h"
#include "serve/state.h"
#include "common/log.h"
#include "serve/executor.h"

#include "common/status.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int name_ok(const char *n)
{
    size_t len = strlen(n);
    if (!len || len >= GOS_NAME_MAX)
        return 0;
    for (const char *p = n; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            return 0;
    return 1;
}

int srv_vgpu_parse(struct srv *s, const char *name, const char *keys, struct gos_serve_vgpucfg *g)
{
    memset(g, 0, sizeof *g);
    g->device = -1;
    if (!name_ok(name))
        return gos_fail(GOS_EINVAL, "vGPU name \"%s\" must be 1..%d letters, digits, '.', '_' or '-'", name,
                        GOS_NAME_MAX - 1);
    snprintf(g->name, sizeof g->name, "%s", name);
    char buf[GOS_ADMIN_KEYS_MAX];
    snprintf(buf, sizeof buf, "%s", keys);
    int has_mem = 0;
    unsigned seen = 0; /* each key once: a second one is a value that held a newline (issue 44.7) */
    static const char *const known[] = {"device", "compute", "copy", "memory", "users", "groups"};
    static struct gos_serve_config scratch; /* users = / groups = (config_ext.c), under the lock */
    for (char *ln = buf, *nx; ln; ln = nx) {
        nx = strchr(ln, '\n');
        if (nx)
            *nx++ = 0;
        int rc = gos_serve_text_check("key=value", ln);
        if (rc)
            return rc;
        char *kv = gos_serve_trim(ln), *eq = strchr(kv, '=');
        if (!*kv)
            continue;
        if (!eq)
            return gos_fail(GOS_EINVAL, "\"%s\" is not key=value", kv);
        *eq = 0;
        char *k = gos_serve_trim(kv), *v = gos_serve_trim(eq + 1), why[256];
        for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++)
            if (!strcmp(k, known[i])) {
                if (seen & (1u << i))
                    return gos_fail(GOS_EINVAL, "key %s given twice", k);
                seen |= 1u << i;
            }
        if (!strcmp(k, "device")) {
            for (int i = 0; i < s->n_devs; i++)
                if (s->cfg.devs[i].spatial_of < 0 && !strcmp(s->cfg.devs[i].label, v))
                    g->device = i;
            if (g->device < 0)
                return gos_fail(GOS_EINVAL, "device=%s: this daemon has no [device %s]", v, v);
        } else if (!strcmp(k, "compute") || !strcmp(k, "copy")) {
            if ((rc = srv_vgpu_share(v, !strcmp(k, "compute") ? &g->compute : &g->copy)))
                return gos_fail(rc, "%s: %s", k, gos_last_error());
        } else if (!strcmp(k, "memory")) {
            if ((rc = gos_serve_parse_mem(v, &g->mem_pct, &g->mem_bytes)))
                return rc;
            has_mem = 1;
        } else if (!strcmp(k, "users") || !strcmp(k, "groups")) {
            memset(&scratch.vgpus[0], 0, sizeof scratch.vgpus[0]);
            if (gos_serve_config_ext_key(&scratch, 2, 0, k, v, why, sizeof why) != 1)
                return gos_fail(GOS_EINVAL, "%s=%s: %s", k, v, why);
            if (k[0] == 'u') {
                g->n_users = scratch.vgpus[0].n_users;
                memcpy(g->users, scratch.vgpus[0].users, sizeof g->users);
            } else {
                g->n_groups = scratch.vgpus[0].n_groups;
                memcpy(g->groups, scratch.vgpus[0].groups, sizeof g->groups);
            }
        } else if (!strcmp(k, "latency_ms")) {
            if (gos_serve_config_ext_key(&scratch, 2, 0, k, v, why, sizeof why) != 1)
                return gos_fail(GOS_EINVAL, "%s=%s: %s", k, v, why);
            g->latency_ms = scratch.vgpus[0].latency_ms;
        } else if (!strcmp(k, "cgroup")) {
            if (gos_serve_cgroup_check(v, why, sizeof why))
                return gos_fail(GOS_EINVAL, "%s", why);
            snprintf(g->cgroup, sizeof g->cgroup, "%s", v);
        } else if (!strcmp(k, "sms") || !strcmp(k, "cluster") || !strcmp(k, "smset")) {
            return gos_fail(GOS_EINVAL, "%s: spatial vGPUs are made only from the configuration file (at a start)",
                            k);
        } else {
            return gos_fail(GOS_EINVAL, "unknown key \"%s\" (device, compute, copy, memory, users, groups, cgroup, latency_ms)", k);
        }
    }
    if (g->device < 0) {
        int n = 0;
        for (int i = 0; i < s->n_devs; i++)
            if (s->cfg.devs[i].spatial_of < 0)
                g->device = i, n++;
        if (n != 1)
            return gos_fail(GOS_EINVAL, "device=LABEL is needed: this daemon has %d devices", n);
    }
    if (!g->compute)
        return gos_fail(GOS_EINVAL, "compute=PCT is needed");
    if (!has_mem)
        return gos_fail(GOS_EINVAL, "memory=PCT%%|SIZE is needed");
    if (!g->copy)
        g->copy = g->compute;
    return GOS_OK;
}

/* Whether anything still refers to slot v (clients, even ended ones not yet
 * freed; a shared executor; shared segments charged to it). */
static int referenced(struct srv *s, int v)
{
    const struct srv_vgpu *g = &s->vgpus[v];
    if (g->clients || g->xshare || g->xshare_busy || gos_shm_charged(&s->shm, v))
        return 1;
    for (const struct srv_client *c = s->clients; c; c = c->next)
        if (c->vgpu == v)
            return 1;
    return 0;
}

/* A deleted vGPU leaves its device's scheduler once nothing refers to it. */
static void unschedule(struct srv *s, int v)
{
    struct srv_vgpu *g = &s->vgpus[v];
    if (!g->deleted || g->unscheduled || referenced(s, v))
        return;
    gos_sched_task *back = NULL;
    if (gos_sched_vgpu_remove(s->devs[g->cfg.device].sched, g->id, &back))
        gos_log(LOG_WARNING, "vGPU %s: %s", g->cfg.name, gos_last_error());
    else
        g->unscheduled = 1;
    if (back) /* nothing can be queued without a client: keep it scheduled */
        gos_log(LOG_ERR, "vGPU %s: queued work without a client", g->cfg.name);
}

/* The refusal of a create on a full table, naming the deleted vGPUs whose
 * shared segments keep their slots and how the operator frees them (issue
 * 44.3: 64 jobs that each left a segment drained a node). */
static int table_full(struct srv *s)
{
    char held[80] = ""; /* the reply's text stops at 256 */
    size_t w = 0;
    int n = 0;
    for (int i = 0; i < s->n_vgpus; i++) {
        if (!s->vgpus[i].deleted || !gos_shm_charged(&s->shm, i))
            continue;
        if (w + GOS_NAME_MAX + 8 < sizeof held)
            w += (size_t)snprintf(held + w, sizeof held - w, "%s%s", n ? ", " : "", s->vgpus[i].cfg.name);
        else if (!strstr(held, ", ..."))
            w += (size_t)snprintf(held + w, sizeof held - w, ", ...");
        n++;
    }
    if (!n)
        return gos_fail(GOS_ELIMIT, "this daemon has its maximum of %d vGPUs (deleted ones still in use count)",
                        GOS_MAX_VGPUS);
    return gos_fail(GOS_ELIMIT, "this daemon has its maximum of %d vGPUs (deleted ones still in use count): %d "
                                "deleted keep slots by shared segments (`gpuos shm rm --vgpu NAME`): %s",
                    GOS_MAX_VGPUS, n, held);
}

static void describe(const struct srv *s, const struct srv_vgpu *g, char *out, size_t n)
{
    char mem[32];
    srv_vgpu_file_value(&g->cfg, SRV_OV_MEMORY, mem, sizeof mem);
    size_t w = (size_t)snprintf(out, n, "device %s, compute %d %%, copy %d %%, memory %s (%llu bytes)",
                                s->cfg.devs[g->cfg.device].label, g->cfg.compute, g->cfg.copy, mem,
                                (unsigned long long)g->mem_quota);
    for (int i = 0; i < g->cfg.n_users && w < n; i++)
        w += (size_t)snprintf(out + w, n - w, "%s%u", i ? "," : ", users ", (unsigned)g->cfg.users[i]);
    for (int i = 0; i < g->cfg.n_groups && w < n; i++)
        w += (size_t)snprintf(out + w, n - w, "%s%u", i ? "," : ", groups ", (unsigned)g->cfg.groups[i]);
    if (g->cfg.cgroup[0] && w < n)
        w += (size_t)snprintf(out + w, n - w, ", cgroup %s", g->cfg.cgroup);
    if (g->cfg.latency_ms && w < n)
        snprintf(out + w, n - w, ", latency %d ms", g->cfg.latency_ms);
}

int srv_vgpu_create(struct srv *s, const char *name, const char *keys, int persist)
{
    struct gos_serve_vgpucfg g;
    int rc = srv_vgpu_parse(s, name, keys, &g);
    if (rc)
        return rc;
    int old = srv_vgpu_find(s, name);
    if (old >= 0) {
        struct srv_vgpu *o = &s->vgpus[old];
        if (!o->removed)
            return gos_fail(GOS_EBUSY, "vGPU %s exists (%s)", name,
                            o->created ? "made by `vgpu create`" : "in the configuration file");
        if (o->clients)
            return gos_fail(GOS_EBUSY, "vGPU %s was removed from the configuration and still has %d client%s", name,
                            o->clients, o->clients == 1 ? "" : "s");
        o->deleted = 1; /* a ghost of a reload: the new one takes its name */
        unschedule(s, old);
    }
    if ((rc = srv_vgpu_fits(s, -1, &g)))
        return rc;
    int v = -1;
    for (int i = 0; i < s->n_vgpus && v < 0; i++) {
        unschedule(s, i);
        if (s->vgpus[i].deleted && s->vgpus[i].unscheduled)
            v = i;
    }
    if (v < 0 && s->n_vgpus == GOS_MAX_VGPUS)
        return table_full(s);
    int fresh = v < 0;
    if (fresh)
        v = s->n_vgpus;
    struct srv_vgpu *n = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g.device];
    struct srv_vgpu keep = *n; /* a reused slot, restored if this fails */
    memset(n, 0, sizeof *n);
    n->cfg = n->file = g;
    n->id = (uint32_t)v;
    n->created = 1;
    n->mem_quota = gos_serve_mem_quota(g.mem_pct, g.mem_bytes, d->mem_total);
    if ((rc = srv_sched_vgpu_add(d, n->id, &g))) {
        *n = keep;
        return rc;
    }
    if (fresh)
        s->n_vgpus++;
    if (d->sw) {
        d->sw->vgpu[v].evictions = d->sw->vgpu[v].restores = 0;
        d->sw->vgpu[v].turns = d->sw->vgpu[v].swap_ns = 0; /* a reused slot starts afresh (issue 42) */
    }
    if (persist && s->state_path[0] && (rc = srv_state_save(s))) {
        char why[512];
        snprintf(why, sizeof why, "%s", gos_last_error());
        gos_sched_vgpu_remove(d->sched, n->id, NULL);
        n->removed = n->deleted = n->unscheduled = 1;
        n->created = 0;
        return gos_fail(rc, "%s; the vGPU was not created", why);
    }
    char what[512 + GOS_SERVE_CGROUP_MAX];
    describe(s, n, what, sizeof what);
    gos_log(LOG_NOTICE, "vgpu create %s: %s%s", name, what, persist && s->state_path[0] ? " (saved)" : "");
    srv_check_oversubscription(s, "after vgpu create");
    return GOS_OK;
}

int srv_vgpu_delete(struct srv *s, const char *name, int force)
{
    int v = srv_vgpu_find(s, name);
    if (v < 0)
        return gos_fail(GOS_EINVAL, "no vGPU named \"%s\"", name);
    struct srv_vgpu *g = &s->vgpus[v];
    if (!g->created)
        return gos_fail(GOS_EINVAL, "vGPU %s is %s %s: remove its [vgpu %s] section and reload (SIGHUP) instead",
                        name, g->removed ? "being removed from" : "defined in", s->config_path, name);
    if (g->clients && !force) {
        char pids[128] = "";
        size_t w = 0;
        for (struct srv_client *c = s->clients; c && w < sizeof pids - 16; c = c->next)
            if (c->vgpu == v)
                w += (size_t)snprintf(pids + w, sizeof pids - w, "%s%d", w ? ", " : "", (int)c->pid);
        return gos_fail(GOS_EBUSY, "vGPU %s has %d client%s attached (pid %s): --force ends them", name,
                        g->clients, g->clients == 1 ? "" : "s", pids);
    }
    g->removed = g->deleted = 1;
    g->created = 0;
    int rc;
    if (s->state_path[0] && (rc = srv_state_save(s))) {
        char why[512];
        snprintf(why, sizeof why, "%s", gos_last_error());
        g->removed = g->deleted = 0;
        g->created = 1;
        return gos_fail(rc, "%s; the vGPU was not deleted", why);
    }
    int ended = 0;
    char why[160];
    snprintf(why, sizeof why, "vGPU %s was deleted (gpuos vgpu delete --force)", name);
    for (struct srv_client *c = s->clients; c; c = c->next) {
        if (c->vgpu != v || c->dead)
            continue;
        if (c->x)
            srv_exec_fail(c->x, why); /* its requests fail with the reason */
        else
            shutdown(c->fd, SHUT_RDWR); /* isolation = none: the connection ends */
        ended++;
    }
    unschedule(s, v);
    gos_log(LOG_NOTICE, "vgpu delete %s%s: %d client%s ended", name, s->state_path[0] ? " (saved)" : "", ended,
            ended == 1 ? "" : "s");
    return GOS_OK;
}

json_t *srv_vgpu_created_json(struct srv *s, int v)
{
    const struct srv_vgpu *g = &s->vgpus[v];
    char comp[16], copy[16], mem[32], ids[GOS_SERVE_MAX_IDS * 12 + 1];
    snprintf(comp, sizeof comp, "%d", g->cfg.compute);
    snprintf(copy, sizeof copy, "%d", g->cfg.copy);
    srv_vgpu_file_value(&g->cfg, SRV_OV_MEMORY, mem, sizeof mem);
    json_t *keys = json_pack("{s:s, s:s, s:s, s:s}", "device", s->cfg.devs[g->cfg.device].label, "compute", comp,
                             "copy", copy, "memory", mem);
    for (int grp = 0; keys && grp < 2; grp++) {
        int n = grp ? g->cfg.n_groups : g->cfg.n_users;
        size_t w = 0;
        ids[0] = 0;
        for (int i = 0; i < n; i++)
            w += (size_t)snprintf(ids + w, sizeof ids - w, "%s%u", i ? "," : "",
                                  grp ? (unsigned)g->cfg.groups[i] : (unsigned)g->cfg.users[i]);
        if (n)
            json_object_set_new(keys, grp ? "groups" : "users", json_string(ids));
    }
    if (keys && g->cfg.cgroup[0])
        json_object_set_new(keys, "cgroup", json_string(g->cfg.cgroup));
    if (keys && g->cfg.latency_ms) {
        char lat[16];
        snprintf(lat, sizeof lat, "%d", g->cfg.latency_ms);
        json_object_set_new(keys, "latency_ms", json_string(lat));
    }
    return keys ? json_pack("{s:s, s:o}", "vgpu", g->cfg.name, "keys", keys) : NULL;
}

/* ADMIN_CREATE and ADMIN_DELETE (`gpuos vgpu create | delete`; client.c's
 * msg_table). */
int srv_msg_admin_create(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    const struct gos_msg_admin_create *m = p;
    int rc = srv_admin_ok(c, "create vGPUs");
    if (!rc)
        rc = srv_vgpu_create(c->srv, m->vgpu, m->keys, 1);
    return srv_reply(c, h->seq, h->type, rc, NULL, 0);
}

int srv_msg_admin_delete(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    const struct gos_msg_admin_delete *m = p;
    int rc = srv_admin_ok(c, "delete vGPUs");
    if (!rc)
        rc = srv_vgpu_delete(c->srv, m->vgpu, (m->flags & GOS_DELETE_FORCE) != 0);
    return srv_reply(c, h->seq, h->type, rc, NULL, 0);
}
