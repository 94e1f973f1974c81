/* SPDX-License-Identifier: Apache-2.0 */
/* reload.c: SIGHUP rereads the configuration file and applies it to the running
 * daemon without dropping a client:
 *   - a vGPU whose compute/copy/memory/users/groups/cgroup changed gets the new values at
 *     once (memory: allocations already made stay; new ones are checked against
 *     the new share);
 *   - a new [vgpu] section is a new vGPU, open to new clients at once;
 *   - a vGPU made by `vgpu create` (vgpu_life.c) is not the file's: it stays;
 *     once the file names it, the file's section wins (its created definition
 *     is dropped from the state file, logged);
 *   - a vGPU no longer in the file is refused to new clients; its connected
 *     clients keep working under its last shares and memory share until they
 *     disconnect (it stays listed while they remain); naming it again in a later
 *     reload brings it back with its clients;
 *   - chunk, depth, spin_us and the limits of issue 15 except max_clients take
 *     effect for what comes next;
 *   - socket, socket_mode, max_clients, state, metrics_listen and the [device]
 *     sections take effect only at a restart (a warning names what was ignored).
 * A file that does not parse, or that would move a vGPU to another device or put
 * one on a device that is not open, is rejected as a whole: the error names the
 * file, line and reason, and the running configuration stays in force.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "serve/shm.h"
#include "serve/vgpu.h"
#include "serve/state.h"
#include "common/log.h"
#include "serve/syslibs.h"

#include "common/clock.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int dev_changed(const struct gos_serve_devcfg *a, const struct gos_serve_devcfg *b)
{
    return strcmp(a->sim, b->sim) || strcmp(a->policy, b->policy) || strcmp(a->queue, b->queue) ||
           a->period_ns != b->period_ns || a->band_wait_ns != b->band_wait_ns ||
           a->band_charge_hold != b->band_charge_hold || strcmp(a->chip, b->chip) || a->isolation != b->isolation ||
           a->grant_us != b->grant_us || a->grant_min_us != b->grant_min_us || a->executor_per_vgpu != b->executor_per_vgpu || a->overlap != b->overlap ||
           a->handover != b->handover || a->latency_sms != b->latency_sms || a->latency_priority != b->latency_priority ||
           a->swap_turn_ms != b->swap_turn_ms || a->swap_wait_s != b->swap_wait_s || a->swap_prefault != b->swap_prefault ||
           a->swap_helper != b->swap_helper ||
           a->swap_host_wait_s != b->swap_host_wait_s;
}

/* Checks nc against the running daemon (lock held); fills map[new device index]
 * = running index (-1: not open). */
static int check(struct srv *s, const struct gos_serve_config *nc, int *map)
{
    const char *what = s->config_path;
    int added = 0;
    for (int i = 0; i < nc->n_devs; i++) {
        map[i] = -1;
        for (int j = 0; j < s->n_devs; j++)
            if (!strcmp(nc->devs[i].label, s->cfg.devs[j].label))
                map[i] = j;
    }
    for (int v = 0; v < nc->n_vgpus; v++) {
        const struct gos_serve_vgpucfg *g = &nc->vgpus[v];
        int d = map[g->device];
        if (d < 0)
            return gos_fail(GOS_EINVAL, "%s: vGPU %s is on device %s, which this daemon has not opened (devices "
                                        "change only at a restart)", what, g->name, nc->devs[g->device].label);
        int old = srv_vgpu_find(s, g->name);
        const struct gos_serve_vgpucfg *oc = old >= 0 ? &s->vgpus[old].cfg : NULL;
        /* Spatial vGPUs (spatial.c) run on their SM set's scheduler, a device of
         * its own whose spatial_of is the configured device; sets are made only
         * at a restart. */
        if ((!oc && g->sms) ||
            (oc && (oc->sms != g->sms || oc->cluster != g->cluster || strcmp(oc->smset, g->smset))))
            return gos_fail(GOS_EINVAL, "%s: vGPU %s: sms, cluster and smset change only at a restart", what,
                            g->name);
        if (oc && s->cfg.devs[oc->device].spatial_of == d)
            continue;
        if (old < 0)
            added++;
        else if (s->vgpus[old].cfg.device != d)
            return gos_fail(GOS_EINVAL, "%s: vGPU %s moves from device %s to device %s (only at a restart)", what,
                            g->name, s->cfg.devs[s->vgpus[old].cfg.device].label, nc->devs[g->device].label);
    }
    /* Memory shares against the devices' sizes, as at start, with the vGPUs
     * made by `vgpu create` that the file does not name. */
    uint64_t totals[GOS_SERVE_MAX_DEVICES];
    for (int i = 0; i < nc->n_devs; i++)
        totals[i] = map[i] >= 0 ? s->devs[map[i]].mem_total : 0;
    static struct gos_serve_config trial; /* under the lock */
    trial = *nc;
    for (int v = 0; v < s->n_vgpus && trial.n_vgpus < GOS_MAX_VGPUS; v++) {
        const struct srv_vgpu *g = &s->vgpus[v];
        int named = 0;
        for (int j = 0; j < nc->n_vgpus; j++)
            named |= !strcmp(nc->vgpus[j].name, g->cfg.name);
        for (int j = 0; j < nc->n_devs && g->created && !g->deleted && !named; j++)
            if (map[j] == g->cfg.device) {
                trial.vgpus[trial.n_vgpus] = g->cfg;
                trial.vgpus[trial.n_vgpus++].device = j;
                break;
            }
    }
    char warn[256];
    int rc = gos_serve_config_check_memory(&trial, totals, warn, sizeof warn);
    if (rc)
        return rc;
    if (warn[0])
        gos_log(LOG_WARNING, "reload: %s", warn);
    if (s->n_vgpus + added > GOS_MAX_VGPUS)
        return gos_fail(GOS_EINVAL, "%s: %d new vGPUs would pass %d, counting removed ones (restart to reclaim them)",
                        what, added, GOS_MAX_VGPUS);
    return GOS_OK;
}

/* Warnings for what the running daemon keeps until a restart. */
static void restart_only(struct srv *s, const struct gos_serve_config *nc, const int *map)
{
    if (!s->sock_from_cli && nc->socket[0] && strcmp(nc->socket, s->cfg.socket))
        gos_log(LOG_WARNING, "reload: socket = %s takes effect at the next restart (still %s)", nc->socket,
                s->cfg.socket);
    if (nc->socket_mode != s->cfg.socket_mode)
        gos_log(LOG_WARNING, "reload: socket_mode takes effect at the next restart");
    if (nc->socket_gid != s->cfg.socket_gid)
        gos_log(LOG_WARNING, "reload: socket_group takes effect at the next restart");
    if (strcmp(nc->state, s->cfg.state))
        gos_log(LOG_WARNING, "reload: state = takes effect at the next restart");
    if (strcmp(nc->metrics_listen, s->cfg.metrics_listen))
        gos_log(LOG_WARNING, "reload: metrics_listen takes effect at the next restart");
    for (int i = 0; i < nc->n_devs; i++) {
        if (map[i] < 0)
            gos_log(LOG_WARNING, "reload: new [device %s] ignored until the next restart", nc->devs[i].label);
        else if (dev_changed(&nc->devs[i], &s->cfg.devs[map[i]]))
            gos_log(LOG_WARNING, "reload: changes to [device %s] take effect at the next restart",
                    nc->devs[i].label);
    }
}

static uint64_t quota_of(struct srv *s, const struct gos_serve_vgpucfg *g)
{
    return gos_serve_mem_quota(g->mem_pct, g->mem_bytes, s->devs[g->device].mem_total);
}

int srv_reload(struct srv *s)
{
    srv_sd_notifyf("RELOADING=1\nSTATUS=reloading %s\nMONOTONIC_USEC=%llu", s->config_path,
                   (unsigned long long)(gos_now_ns() / 1000));
    struct gos_serve_config *nc = calloc(1, sizeof *nc);
    int map[GOS_SERVE_MAX_DEVICES];
    int rc = nc ? gos_serve_config_load(s->config_path, nc) : gos_fail(GOS_ENOMEM, "out of memory");
    pthread_mutex_lock(&s->lock);
    if (!rc)
        rc = check(s, nc, map);
    if (rc) {
        s->reload_failures++;
        s->last_reload_ok = 0;
        gos_log(LOG_ERR, "reload rejected: %s; the running configuration stays in force", gos_last_error());
        pthread_mutex_unlock(&s->lock);
        free(nc);
        srv_sd_notifyf("READY=1\nSTATUS=reload rejected; listening on %s", s->cfg.socket);
        return rc;
    }
    restart_only(s, nc, map);
    int added = 0, removed = 0, changed = 0, revived = 0, taken = 0;
    int seen[GOS_MAX_VGPUS] = {0};
    for (int v = 0; v < nc->n_vgpus; v++) {
        struct gos_serve_vgpucfg g = nc->vgpus[v];
        g.device = map[g.device];
        int i = srv_vgpu_find(s, g.name);
        if (i >= 0 && s->cfg.devs[s->vgpus[i].cfg.device].spatial_of == g.device)
            g.device = s->vgpus[i].cfg.device; /* stays on its SM set (spatial.c) */
        struct srv_dev *d = &s->devs[g.device];
        if (i < 0) {
            i = s->n_vgpus;
            struct srv_vgpu *n = &s->vgpus[i];
            memset(n, 0, sizeof *n);
            n->cfg = n->file = g;
            n->id = (uint32_t)i;
            n->mem_quota = quota_of(s, &g);
            if ((rc = srv_sched_vgpu_add(d, n->id, &g))) {
                gos_log(LOG_ERR, "reload: vGPU %s not added: %s", g.name, gos_last_error());
                continue;
            }
            s->n_vgpus++;
            added++;
            gos_log(LOG_INFO, "reload: vGPU %s added (compute %d %%, copy %d %%, memory %llu bytes)", g.name,
                    g.compute, g.copy, (unsigned long long)n->mem_quota);
        } else {
            struct srv_vgpu *o = &s->vgpus[i];
            int was_removed = o->removed;
            if (o->created) {
                o->created = 0;
                taken++;
                gos_log(LOG_NOTICE, "reload: vGPU %s (made by `vgpu create`) is now in the configuration file: the "
                                    "file's section wins", g.name);
            }
            int differs = memcmp(&o->file, &g, sizeof g) != 0;
            o->file = g;
            /* Overrides of `vgpu set` stay over keys the file did not change
             * (srv_state_reconcile drops the others below). */
            struct gos_serve_vgpucfg eff = g;
            if (o->ov[SRV_OV_COMPUTE].set)
                eff.compute = o->cfg.compute;
            if (o->ov[SRV_OV_COPY].set)
                eff.copy = o->cfg.copy;
            if (o->ov[SRV_OV_MEMORY].set) {
                eff.mem_pct = o->cfg.mem_pct;
                eff.mem_bytes = o->cfg.mem_bytes;
            }
            o->cfg = eff;
            o->mem_quota = quota_of(s, &eff);
            gos_sched_vgpu_set_shares(d->sched, o->id, eff.compute, eff.copy);
            gos_sched_vgpu_set_latency(d->sched, o->id, (uint64_t)eff.latency_ms * 1000000ull);
            o->removed = 0;
            if (was_removed) {
                revived++;
                gos_log(LOG_INFO, "reload: vGPU %s is back", g.name);
            } else if (differs) {
                changed++;
                gos_log(LOG_INFO, "reload: vGPU %s now compute %d %%, copy %d %%, memory %llu bytes", g.name,
                        eff.compute, eff.copy, (unsigned long long)o->mem_quota);
            }
        }
        seen[i] = 1;
    }
    for (int i = 0; i < s->n_vgpus; i++)
        if (!seen[i] && !s->vgpus[i].removed && !s->vgpus[i].created) {
            s->vgpus[i].removed = 1;
            removed++;
            if (s->vgpus[i].clients)
                gos_log(LOG_INFO, "reload: vGPU %s removed: refused to new clients; its %d connected client%s "
                                  "keep%s it until disconnecting", s->vgpus[i].cfg.name, s->vgpus[i].clients,
                        s->vgpus[i].clients == 1 ? "" : "s", s->vgpus[i].clients == 1 ? "s" : "");
            else
                gos_log(LOG_INFO, "reload: vGPU %s removed", s->vgpus[i].cfg.name);
        }
    /* Global keys that apply to the next client. */
    s->cfg.chunk = nc->chunk;
    s->cfg.depth = nc->depth;
    if (nc->spin_us >= 0)
        s->spin_us = (unsigned)nc->spin_us;
    /* Limits (issue 15) apply to what comes next; max_clients, fitted to the
     * descriptor limit at start, only at a restart. */
    s->cfg.max_clients_per_vgpu = nc->max_clients_per_vgpu;
    s->cfg.max_queued_requests = nc->max_queued_requests;
    s->cfg.max_queued_bytes = nc->max_queued_bytes;
    s->cfg.max_allocations = nc->max_allocations;
    s->cfg.hello_timeout_ms = nc->hello_timeout_ms;
    s->cfg.shutdown_grace_ms = nc->shutdown_grace_ms;
    s->cfg.memory_oversubscribe = nc->memory_oversubscribe;
    s->cfg.shm_segments_per_vgpu = nc->shm_segments_per_vgpu;
    s->cfg.shm_segments_per_user = nc->shm_segments_per_user;
    s->cfg.shm_bytes_per_user = nc->shm_bytes_per_user;
    srv_shm_limits(s);
    int dropped = srv_state_reconcile(s);
    if ((dropped || taken) && s->state_path[0] && srv_state_save(s))
        gos_log(LOG_ERR, "reload: %s", gos_last_error());
    s->reloads++;
    s->last_reload_ok = 1;
    s->last_reload_s = (double)time(NULL);
    int active = 0;
    for (int i = 0; i < s->n_vgpus; i++)
        active += !s->vgpus[i].removed;
    gos_log(LOG_NOTICE, "reloaded %s: %d vGPU%s (%d added, %d changed, %d removed, %d back)", s->config_path,
            active, active == 1 ? "" : "s", added, changed, removed, revived);
    srv_check_oversubscription(s, "after reload");
    pthread_mutex_unlock(&s->lock);
    free(nc);
    srv_sd_notifyf("READY=1\nSTATUS=listening on %s, %d vGPU%s", s->cfg.socket, active, active == 1 ? "" : "s");
    return GOS_OK;
}
