/* vgpu.c: the runtime view of virtual GPUs (what Gdev kept in /proc, section 6):
 * assigned shares, measured compute and copy utilisation over the last period,
 * memory used against the memory share, clients; and changing the shares while
 * clients run (`gpuos vgpu set NAME key=value`). Called with srv->lock held. */
#include "serve/serve.h"

#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_vgpu_record(struct srv *s, int v, struct gos_vgpu_rec *r)
{
    struct srv_vgpu *g = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g->cfg.device];
    gos_sched_vgpu_stats st;
    memset(r, 0, sizeof *r);
    memset(&st, 0, sizeof st);
    gos_sched_vgpu_stats_get(d->sched, g->id, srv_now_ns(), &st);
    snprintf(r->name, sizeof r->name, "%s", g->cfg.name);
    r->id = g->id;
    r->device = (uint32_t)g->cfg.device;
    r->compute_share = (uint32_t)g->cfg.compute;
    r->copy_share = (uint32_t)g->cfg.copy;
    r->mem_share = (uint32_t)(d->mem_total ? (g->mem_quota * 100 + d->mem_total / 2) / d->mem_total : 0);
    r->clients = (uint32_t)g->clients;
    r->mem_quota = g->mem_quota;
    r->mem_used = g->mem_used;
    r->compute_util = st.compute_util_pct / 100.0;
    r->copy_util = st.copy_util_pct / 100.0;
    r->compute_ns = st.compute_ns;
    r->copy_ns = st.copy_ns;
    r->tasks = g->tasks;
    r->compute_held = st.compute_held_pct / 100.0;
    r->copy_held = st.copy_held_pct / 100.0;
    r->compute_held_ns = st.compute_held_ns;
    r->copy_held_ns = st.copy_held_ns;
    r->faults = g->faults;
    snprintf(r->isolation, sizeof r->isolation, "%s", d->isolation == GOS_ISOLATION_NONE  ? "none"
                                                    : d->isolation == GOS_ISOLATION_MPS ? "mps"
                                                                                        : "process");
    srv_swap_record(s, v, &r->mem_resident, &r->mem_swapped);
    if (d->sw) {
        r->evictions = d->sw->vgpu[v].evictions;
        r->restores = d->sw->vgpu[v].restores;
    }
    snprintf(r->policy, sizeof r->policy, "%s", gos_sched_policy_name(d->sched));
    snprintf(r->queue, sizeof r->queue, "%s", gos_sched_mode_name(d->sched));
}

static int share(const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || (*end && strcmp(end, "%")) || x < 1 || x > 100)
        return gos_fail(GOS_EINVAL, "share \"%s\" must be 1..100 (percent)", v);
    *out = (int)x;
    return GOS_OK;
}

int srv_vgpu_set(struct srv *s, const char *name, const char *key, const char *value)
{
    int v = -1;
    for (int i = 0; i < s->n_vgpus; i++)
        if (!strcmp(s->vgpus[i].cfg.name, name))
            v = i;
    if (v < 0)
        return gos_fail(GOS_EINVAL, "no vGPU named \"%s\"", name);
    struct srv_vgpu *g = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g->cfg.device];
    int rc, x = 0;
    if (!strcmp(key, "compute") || !strcmp(key, "copy")) {
        if ((rc = share(value, &x)))
            return rc;
        int comp = !strcmp(key, "compute") ? x : g->cfg.compute;
        int copy = !strcmp(key, "copy") ? x : g->cfg.copy;
        if ((rc = gos_sched_vgpu_set_shares(d->sched, g->id, comp, copy)))
            return rc;
        g->cfg.compute = comp;
        g->cfg.copy = copy;
        int sc = 0, sx = 0;
        for (int i = 0; i < s->n_vgpus; i++)
            if (s->vgpus[i].cfg.device == g->cfg.device) {
                sc += s->vgpus[i].cfg.compute;
                sx += s->vgpus[i].cfg.copy;
            }
        if (sc > 100 || sx > 100)
            fprintf(stderr, "gpuos serve: warning: device %s: compute shares sum to %d %%, copy shares to %d %%: "
                    "oversubscribed, each vGPU gets its share in proportion\n", s->cfg.devs[g->cfg.device].label, sc,
                    sx);
        return GOS_OK;
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
        /* The shares of the device's vGPUs, this one changed, must fit (issue
         * 15.6), as at start. */
        struct gos_serve_config trial = s->cfg;
        uint64_t totals[GOS_SERVE_MAX_DEVICES];
        for (int i = 0; i < s->n_devs; i++)
            totals[i] = s->devs[i].mem_total;
        for (int i = 0; i < s->n_vgpus; i++)
            trial.vgpus[i] = s->vgpus[i].cfg;
        trial.vgpus[v].mem_pct = pct;
        trial.vgpus[v].mem_bytes = bytes;
        char warn[256];
        if ((rc = gos_serve_config_check_memory(&trial, totals, warn, sizeof warn))) {
            char why[GOS_MSG_TEXT_MAX];
            const char *e = gos_last_error(), *r = strstr(e, ": memory");
            snprintf(why, sizeof why, "%s", r ? r + 2 : e); /* without the file's line */
            return gos_fail(rc, "%s", why);
        }
        if (warn[0])
            fprintf(stderr, "gpuos serve: warning: %s\n", warn);
        /* Shrinking below what is in use is allowed: new allocations fail until
         * enough is freed (nothing already allocated is revoked). */
        g->mem_quota = q;
        g->cfg.mem_pct = pct;
        g->cfg.mem_bytes = bytes;
        return GOS_OK;
    }
    return gos_fail(GOS_EINVAL, "unknown key \"%s\" (compute, copy, memory)", key);
}
