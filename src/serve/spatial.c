/* SPDX-License-Identifier: Apache-2.0 */
/* spatial.c: spatial vGPUs in `gpuos serve` (issue 13; docs/readme-smset.md).
 *
 * A vGPU with `sms = N` (and `cluster = K`) gets an SM set from the allocator
 * (src/place/smset.h) on which N SMs run clusters of K at once. Each set has
 * a scheduler of its own (an extra srv_dev that shares the device: same memory,
 * modules, copy engines' streams of its own, and a compute stream on the set's
 * green context), so vGPUs on different sets run at the same time on disjoint SMs,
 * and vGPUs naming the same `smset` share their set under the device's policy
 * (BAND by default) with their compute shares. vGPUs without `sms` keep the whole
 * device's scheduler; their kernels may use every SM, spatial sets included.
 *
 * Isolation: the daemon runs every client in its one context (isolation "none"),
 * where green contexts work: they share the context's address space, so spatial
 * vGPUs are kept apart by the daemon's checks of every pointer, not by the
 * hardware. Per-process isolation (clients in their own processes or MPS clients,
 * issue 9, not built) cannot host them as they are: measured on three H200s,
 * inside an MPS client the kernels of every green-context group reported SM 0, so
 * no group can be identified (results/GPU-* /smset/smset-mps.txt).
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/dev.h"
#include "common/log.h"
#include "device/exec_ops.h"

#include "chip/chip.h"
#include "common/status.h"
#include "device/green_ops.h"
#include "place/smset.h"
#include "topology/topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The device's chart: its `chip =` file (loaded by server.c), else the topology
 * charted now (*probed, freed by the caller). */
static int device_chart(struct srv *s, int dev, const gos_chip **chart, gos_chip **probed)
{
    const struct gos_serve_devcfg *c = &s->cfg.devs[dev];
    *probed = NULL;
    if (s->chips[dev]) {
        if (s->chips[dev]->device.sm_count != s->devs[dev].dev->info.sm_count)
            return gos_fail(GOS_EINVAL, "device %s: chip %s describes %d SMs, the device has %d", c->label, c->chip,
                            s->chips[dev]->device.sm_count, s->devs[dev].dev->info.sm_count);
        *chart = s->chips[dev];
        return GOS_OK;
    }
    gos_topo_opts o;
    gos_topo_default_opts(&o);
    gos_topo_result *r = malloc(sizeof *r); /* ~190 KB with 512 SMs: off the stack */
    if (!r)
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = gos_topo_probe(s->devs[dev].dev, &o, r);
    if (rc) {
        free(r);
        return gos_fail(rc, "device %s: charting the topology for spatial vGPUs: %s", c->label, gos_last_error());
    }
    *chart = *probed = r->chip;
    free(r);
    return GOS_OK;
}

/* A scheduler on set `set` of device `parent`, as device index n. */
static int open_set(struct srv *s, int parent, int n, gos_smset_pool *pool, const gos_smset *set, const char *name)
{
    struct srv_dev *p = &s->devs[parent], *d = &s->devs[n];
    struct gos_serve_devcfg *c = &s->cfg.devs[n];
    *c = s->cfg.devs[parent];
    c->spatial_of = parent;
    snprintf(c->label, sizeof c->label, "%.15s/%.15s", s->cfg.devs[parent].label, name);
    memset(d, 0, sizeof *d);
    d->srv = s;
    d->index = n;
    d->dev = p->dev;
    d->mem_total = p->mem_total;
    d->shared_dev = 1;
    /* The set runs in its parent's context (isolation none): the same facts and mode. */
    d->info = p->info;
    d->attrs = p->attrs;
    d->isolation = p->isolation;
    d->grant_ns = p->grant_ns;
    d->ordinal = p->ordinal;
    memcpy(d->sim, p->sim, sizeof d->sim);
    s->n_devs = n + 1;
    s->cfg.n_devs = n + 1;
    int rc, mode;
    if ((rc = gos_sched_parse_mode(c->queue, &mode)) || (rc = gos_sched_new(c->policy, mode, c->period_ns, &d->sched)))
        return rc;
    if (!strcmp(c->policy, "band")) {
        if ((rc = gos_sched_set_band_wait(d->sched, c->band_wait_ns)))
            return rc;
        gos_sched_set_band_charge_hold(d->sched, c->band_charge_hold != 0);
    }
    if ((rc = gos_smset_green(d->dev, pool, set, &d->gctx)))
        return rc;
    d->n_engines = gos_sched_engine_count(d->sched);
    int compute = gos_sched_engine_for(d->sched, GOS_SCHED_COMPUTE);
    for (int e = 0; e < d->n_engines; e++) {
        rc = e == compute ? gos_green_stream_create(d->dev, d->gctx, &d->streams[e])
                          : gos_exec_stream_create(d->dev, &d->streams[e]);
        if (rc || (rc = gos_exec_event_create(d->dev, &d->ev[e][0])) ||
            (rc = gos_exec_event_create(d->dev, &d->ev[e][1])))
            return rc;
    }
    srv_dev_init_conds(d);
    return GOS_OK;
}

int srv_spatial_open(struct srv *s)
{
    int n_real = s->n_devs, rc = GOS_OK;
    for (int dev = 0; dev < n_real; dev++) {
        int any = 0;
        for (int v = 0; v < s->cfg.n_vgpus; v++)
            any |= s->cfg.vgpus[v].sms && s->cfg.vgpus[v].device == dev;
        if (!any)
            continue;
        /* Green contexts are carved out of one CUDA context, so an SM set serves
         * only vGPUs that share the daemon's context: isolation = none. Under
         * process the daemon holds no context; under mps the groups cannot even
         * be identified (every group's probe reports SM 0, measured). */
        if (s->cfg.devs[dev].isolation != GOS_ISOLATION_NONE)
            return gos_fail(GOS_EINVAL,
                            "device %s: spatial vGPUs (sms =) need isolation = none: an SM set is a green "
                            "context of the daemon's own context, which %s isolation does not have",
                            s->cfg.devs[dev].label,
                            s->cfg.devs[dev].isolation == GOS_ISOLATION_MPS ? "mps" : "process");
        const gos_chip *chart = NULL;
        gos_chip *probed = NULL;
        gos_smset_pool *pool = NULL;
        if ((rc = device_chart(s, dev, &chart, &probed)))
            return rc;
        if ((rc = gos_smset_pool_open(s->devs[dev].dev, chart, &pool))) {
            rc = gos_fail(rc, "device %s: SM sets: %s", s->cfg.devs[dev].label, gos_last_error());
            gos_chip_free(probed);
            return rc;
        }
        for (int v = 0; v < s->cfg.n_vgpus && !rc; v++) {
            struct gos_serve_vgpucfg *g = &s->cfg.vgpus[v];
            if (!g->sms || g->device != dev)
                continue;
            /* A set named by an earlier vGPU is shared. */
            int shared = -1;
            for (int u = 0; u < v && g->smset[0]; u++)
                if (!strcmp(s->cfg.vgpus[u].smset, g->smset) && s->cfg.vgpus[u].sms)
                    shared = s->cfg.vgpus[u].device;
            if (shared >= 0) {
                g->device = shared;
                continue;
            }
            if (s->n_devs == GOS_SERVE_MAX_DEVICES) {
                rc = gos_fail(GOS_EINVAL, "vGPU %s: at most %d devices and SM sets in all", g->name,
                              GOS_SERVE_MAX_DEVICES);
                break;
            }
            gos_smset_req req = {.sms = g->sms, .cluster = g->cluster, .partition = -1, .gpc_align = 0};
            gos_smset set;
            if ((rc = gos_smset_alloc(pool, &req, &set))) {
                rc = gos_fail(rc, "vGPU %s: sms = %d, cluster = %d on device %s: %s", g->name, g->sms, g->cluster,
                              s->cfg.devs[dev].label, gos_last_error());
                break;
            }
            int n = s->n_devs;
            if ((rc = open_set(s, dev, n, pool, &set, g->smset[0] ? g->smset : g->name))) {
                rc = gos_fail(rc, "vGPU %s: SM set: %s", g->name, gos_last_error());
                break;
            }
            g->device = n;
            gos_log(LOG_INFO, "SM set %s: %d SMs (%d free-floating) in %d GPCs, %d clusters of %d at once",
                    s->cfg.devs[n].label, set.n_sms, set.n_free_floating, set.n_gpcs, set.clusters[g->cluster],
                    g->cluster);
        }
        gos_smset_pool_free(pool);
        gos_chip_free(probed);
        if (rc)
            return rc;
    }
    return GOS_OK;
}

void srv_spatial_close(struct srv_dev *d)
{
    if (d->gctx)
        gos_green_destroy(d->dev, d->gctx);
    d->gctx = NULL;
}
