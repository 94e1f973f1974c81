/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c: the Prometheus endpoint of `gpuos serve` (metrics_listen =
 * HOST:PORT; off when unset), served by libmicrohttpd on its own thread:
 * GET /metrics answers the text exposition format 0.0.4. Every figure is read
 * under the daemon's lock at the moment of the scrape.
 *
 * srv_vgpu_record, a vGPU's figures, is here too, and the messages that
 * answer with it (VGPU_INFO, ADMIN_LIST: `gpuos vgpu list`): they read the
 * same record as the scrape.
 *
 * Every device's series carry dcgm-exporter's labels of that GPU (gpu, UUID,
 * device = nvidia<gpu>, modelName, Hostname), so that they join its DCGM_FI_*
 * series on the same node; vGPU series add vgpu, job (the Slurm job id its
 * cgroup = names, job_N, else that cgroup as written; "" for a vGPU bound to
 * none) and user (the user ids of its users =, comma separated; "" for one any
 * user of the socket may open; ids, not names: no name service is asked under
 * the daemon's lock). Issue 43.
 * Per vGPU (labels vgpu, job, user and the device's; engine = compute | copy where it applies):
 *   gpuos_vgpu_info{policy,queue,state}      1; state active | removed
 *   gpuos_vgpu_share_ratio                   assigned share (0.6 = 60 %)
 *   gpuos_vgpu_utilization_ratio             GPU time over the last period
 *   gpuos_vgpu_busy_seconds_total            cumulative GPU time
 *   gpuos_vgpu_band_held_seconds_total       engine time BAND held idle for it
 *   gpuos_vgpu_memory_used_bytes, gpuos_vgpu_memory_quota_bytes,
 *   gpuos_vgpu_memory_resident_bytes, gpuos_vgpu_memory_swapped_bytes,
 *   gpuos_vgpu_swap_turns_total, gpuos_vgpu_swap_seconds_total (issue 42)
 *   gpuos_vgpu_clients, gpuos_vgpu_tasks_total, gpuos_vgpu_faults_total,
 *   gpuos_vgpu_latency_seconds (the latency class; 0: batch),
 *   gpuos_vgpu_grants_total, gpuos_vgpu_switch_free_seconds_total (its ring
 *   grants, and the switches at their start it was not charged: issue 41),
 *   gpuos_vgpu_queued_requests{engine} (waiting for the device's engine)
 * Per device:
 *   gpuos_device_info{gpuos_device (the [device] section's label),backend},
 *   gpuos_device_memory_bytes,
 *   gpuos_device_grant_seconds, gpuos_device_switch_seconds,
 *   gpuos_device_switches_total (isolation = process / mps: grants, switches),
 *   gpuos_device_preemptions_total (batch grants ended for a latency vGPU),
 *   gpuos_device_latency_companions_total (latency grants beside a batch grant, mps)
 *   and, when its chip is known (the simulated chip, or chip = FILE):
 *   gpuos_chip_gpcs, gpuos_chip_gpc_sms{gpc}, gpuos_chip_gpc_cluster_sms{gpc},
 *   gpuos_chip_max_cluster_size, gpuos_chip_concurrent_clusters{size},
 *   gpuos_chip_partitions, gpuos_chip_partition_sms{partition},
 *   gpuos_chip_hash_granularity_bytes
 * Daemon: gpuos_build_info{version,protocol}, gpuos_clients,
 *   gpuos_connections_refused_total, gpuos_config_reloads_total,
 *   gpuos_config_reload_failures_total, gpuos_config_last_reload_successful,
 *   gpuos_config_last_reload_success_timestamp_seconds.
 * Process: the daemon (gpuos serve). */
#include "serve/daemon.h"
#include "serve/reply.h"
#include "serve/dev.h"
#include "serve/session.h"
#include "serve/ring.h"
#include "serve/swap.h"
#include "serve/metrics.h"
#include "common/log.h"

#include "chip/chip.h"
#include "common/clock.h"
#include "common/status.h"
#include "common/version.h"
#include "serve/syslibs.h"

#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct buf {
    char *p;
    size_t n, cap;
    int oom;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (m < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->n + (size_t)m < b->cap) {
            b->n += (size_t)m;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 16384;
        while (cap < b->n + (size_t)m + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

/* A label value: backslash, double quote and newline escaped. */
static const char *esc(const char *v, char *out, size_t n)
{
    size_t j = 0;
    for (; *v && j + 3 < n; v++) {
        if (*v == '\\' || *v == '"') {
            out[j++] = '\\';
            out[j++] = *v;
        } else if (*v == '\n') {
            out[j++] = '\\';
            out[j++] = 'n';
        } else {
            out[j++] = *v;
        }
    }
    out[j] = 0;
    return out;
}

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels of device i, dcgm-exporter's (so that gpuos's series join its
 * DCGM_FI_* series): gpu (the index), UUID, device ("nvidia<index>"), modelName,
 * Hostname. */
static const char *dev_labels(struct srv *s, int i, char *out, size_t n)
{
    static char host[256];
    if (!host[0] && (gethostname(host, sizeof host - 1) || !host[0]))
        snprintf(host, sizeof host, "localhost");
    const gos_device_info *d = &s->devs[i].info;
    int gpu = s->cfg.devs[i].ordinal >= 0 ? s->cfg.devs[i].ordinal : i;
    char uuid[256], model[256], h[512];
    snprintf(out, n, "gpu=\"%d\",UUID=\"%s\",device=\"nvidia%d\",modelName=\"%s\",Hostname=\"%s\"", gpu,
             esc(d->uuid, uuid, sizeof uuid), gpu, esc(d->name, model, sizeof model), esc(host, h, sizeof h));
    return out;
}

/* The job a cgroup = list names: the N of its first component job_N, else the
 * list as written ("" unbound). */
static void job_of(const char *cg, char *out, size_t n)
{
    for (const char *p = strstr(cg, "/job_"); p; p = strstr(p + 1, "/job_")) {
        size_t k = strspn(p + 5, "0123456789");
        if (k && (p[5 + k] == 0 || p[5 + k] == '/' || p[5 + k] == ' ')) {
            snprintf(out, n, "%.*s", (int)k, p + 5);
            return;
        }
    }
    snprintf(out, n, "%s", cg);
}

/* Every per-vGPU series' labels: vgpu, the device's, job, user (above). */
static const char *vgpu_labels(struct srv *s, const struct srv_vgpu *g, char *out, size_t n)
{
    char name[256], dev[1200], job[GOS_SERVE_CGROUP_MAX], jobe[2 * GOS_SERVE_CGROUP_MAX], users[400] = "";
    job_of(g->cfg.cgroup, job, sizeof job);
    for (int i = 0, k = 0; i < g->cfg.n_users && k < (int)sizeof users - 12; i++)
        k += snprintf(users + k, sizeof users - (size_t)k, "%s%u", i ? "," : "", (unsigned)g->cfg.users[i]);
    snprintf(out, n, "vgpu=\"%s\",%s,job=\"%s\",user=\"%s\"", esc(g->cfg.name, name, sizeof name),
             dev_labels(s, g->cfg.device, dev, sizeof dev), esc(job, jobe, sizeof jobe), users);
    return out;
}

static const gos_chip *chip_of(struct srv *s, int i)
{
    return s->chips[i] ? s->chips[i] : s->devs[i].dev ? s->devs[i].dev->chip : NULL;
}

/* Per-vGPU families: one sample (or one per engine) per listed vGPU. */
enum {
    F_SHARE, F_UTIL, F_BUSY, F_HELD, F_MEM_USED, F_MEM_QUOTA, F_MEM_RESIDENT, F_MEM_SWAPPED, F_TURNS, F_SWAP_SEC,
    F_CLIENTS, F_TASKS, F_LATENCY, F_FAULTS, F_GRANTS, F_SWITCH_FREE, F_N
};
static const struct {
    const char *name, *type, *help;
    int per_engine;
} vfam[F_N] = {
    {"gpuos_vgpu_share_ratio", "gauge", "Assigned share of the engine's time (1 = 100 %).", 1},
    {"gpuos_vgpu_utilization_ratio", "gauge", "GPU time of the vGPU over the last scheduling period.", 1},
    {"gpuos_vgpu_busy_seconds_total", "counter", "GPU time used by the vGPU since it was added.", 1},
    {"gpuos_vgpu_band_held_seconds_total", "counter",
     "Engine time the BAND policy kept idle waiting for the vGPU's next request.", 1},
    {"gpuos_vgpu_memory_used_bytes", "gauge",
     "Device memory the vGPU's clients hold: allocations, segments, module globals.", 0},
    {"gpuos_vgpu_memory_quota_bytes", "gauge", "The vGPU's memory share.", 0},
    {"gpuos_vgpu_memory_resident_bytes", "gauge", "The vGPU's swappable allocations on the device (swap on).", 0},
    {"gpuos_vgpu_memory_swapped_bytes", "gauge", "The vGPU's allocations in host swap space.", 0},
    {"gpuos_vgpu_swap_turns_total", "counter",
     "Turns given to the vGPU over busy tenants whose memory did not fit together.", 0},
    {"gpuos_vgpu_swap_seconds_total", "counter", "Time the vGPU's memory spent being evicted or restored.", 0},
    {"gpuos_vgpu_clients", "gauge", "Clients connected to the vGPU.", 0},
    {"gpuos_vgpu_tasks_total", "counter", "Copies and launches scheduled for the vGPU.", 0},
    {"gpuos_vgpu_latency_seconds", "gauge",
     "The vGPU's latency class: its work starts within this (latency_ms; 0: a batch vGPU).", 0},
    {"gpuos_vgpu_faults_total", "counter", "Executors of the vGPU lost to a device fault or a kill.", 0},
    {"gpuos_vgpu_grants_total", "counter",
     "Grants (turns of its clients' executors on their rings) issued to the vGPU.", 0},
    {"gpuos_vgpu_switch_free_seconds_total", "counter",
     "The GPU's switch from another executor at the start of the vGPU's grants, not charged to it.", 0},
};

/* r: the vGPU's record; g: what only the daemon keeps of it */
static void vgpu_sample(struct buf *b, int f, const struct gos_vgpu_rec *r, const struct srv_vgpu *g, const char *lab)
{
    static const char *const eng[2] = {"compute", "copy"};
    for (int e = 0; e < (vfam[f].per_engine ? 2 : 1); e++) {
        double x = 0;
        unsigned long long u = 0;
        int integer = 0;
        switch (f) {
        case F_SHARE: x = (e ? r->copy_share : r->compute_share) / 100.0; break;
        case F_UTIL: x = e ? r->copy_util : r->compute_util; break;
        case F_BUSY: x = (double)(e ? r->copy_ns : r->compute_ns) / 1e9; break;
        case F_HELD: x = (double)(e ? r->copy_held_ns : r->compute_held_ns) / 1e9; break;
        case F_MEM_USED: u = r->mem_used; integer = 1; break;
        case F_MEM_QUOTA: u = r->mem_quota; integer = 1; break;
        case F_MEM_RESIDENT: u = r->mem_resident; integer = 1; break;
        case F_MEM_SWAPPED: u = r->mem_swapped; integer = 1; break;
        case F_TURNS: u = r->swap_turns; integer = 1; break;
        case F_SWAP_SEC: x = (double)r->swap_ns / 1e9; break;
        case F_CLIENTS: u = r->clients; integer = 1; break;
        case F_TASKS: u = r->tasks; integer = 1; break;
        case F_LATENCY: x = r->latency_ms / 1e3; break;
        case F_GRANTS: u = g->grants; integer = 1; break;
        case F_SWITCH_FREE: x = (double)g->switch_free_ns / 1e9; break;
        default: u = g->faults; integer = 1; break;
        }
        if (vfam[f].per_engine)
            put(b, "%s{%s,engine=\"%s\"} ", vfam[f].name, lab, eng[e]);
        else
            put(b, "%s{%s} ", vfam[f].name, lab);
        if (integer)
            put(b, "%llu\n", u);
        else
            put(b, "%.9g\n", x);
    }
}

/* Per-device families: one sample per device. */
enum { D_MEM, D_GRANT, D_SWITCH, D_SWITCHES, D_PREEMPT, D_COMPANIONS, D_N };
static const struct {
    const char *name, *type, *help;
} dfam[D_N] = {
    {"gpuos_device_memory_bytes", "gauge", "Device memory."},
    {"gpuos_device_grant_seconds", "gauge",
     "The longest batch of one client's work (grant_us; with auto, from the measured switch cost)."},
    {"gpuos_device_switch_seconds", "gauge",
     "Measured cost of a switch between two executors' batches (moving average; 0: none yet)."},
    {"gpuos_device_switches_total", "counter", "Batches that followed another executor's on the device."},
    {"gpuos_device_preemptions_total", "counter",
     "Batch grants ended at a kernel boundary for a latency vGPU's work (latency_ms)."},
    {"gpuos_device_latency_companions_total", "counter",
     "Latency vGPUs' grants run at once beside a batch grant (isolation = mps)."},
};

static void dev_sample(struct buf *b, int f, const struct srv_dev *d)
{
    switch (f) {
    case D_MEM: put(b, "%llu\n", (unsigned long long)d->mem_total); break;
    case D_GRANT: put(b, "%.6f\n", (double)d->grant_ns / 1e9); break;
    case D_SWITCH: put(b, "%.6f\n", (double)d->switch_ns / 1e9); break;
    case D_SWITCHES: put(b, "%llu\n", (unsigned long long)d->switches); break;
    case D_PREEMPT: put(b, "%llu\n", (unsigned long long)d->preemptions); break;
    default: put(b, "%llu\n", (unsigned long long)d->companions); break;
    }
}

/* The requests each listed vGPU has waiting in its device's scheduler, per
 * engine (a ring that wants a grant counts one). */
static void queue_family(struct buf *b, struct srv *s, const int *listed, int n)
{
    char l1[2400];
    family(b, "gpuos_vgpu_queued_requests", "gauge",
           "Requests of the vGPU waiting for its device's engine (a ring waiting for a grant counts one).");
    for (int i = 0; i < n; i++) {
        struct srv_vgpu *g = &s->vgpus[listed[i]];
        gos_sched_vgpu_stats st = {0};
        if (gos_sched_vgpu_stats_get(s->devs[g->cfg.device].sched, g->id, gos_now_ns(), &st))
            continue;
        for (int e = 0; e < 2; e++)
            put(b, "gpuos_vgpu_queued_requests{%s,engine=\"%s\"} %u\n", vgpu_labels(s, g, l1, sizeof l1),
                e ? "copy" : "compute", (unsigned)(e ? st.copy_queued : st.compute_queued));
    }
}

static void chip_families(struct buf *b, struct srv *s)
{
    char l[1200];
    int any = 0;
    for (int i = 0; i < s->n_devs; i++)
        any |= chip_of(s, i) != NULL;
    if (!any)
        return;
    family(b, "gpuos_chip_gpcs", "gauge", "GPCs of the device's chip (0: topology not known).");
    for (int i = 0; i < s->n_devs; i++)
        if (chip_of(s, i))
            put(b, "gpuos_chip_gpcs{%s} %d\n", dev_labels(s, i, l, sizeof l),
                chip_of(s, i)->n_gpcs);
    family(b, "gpuos_chip_gpc_sms", "gauge", "SMs of each GPC.");
    for (int i = 0; i < s->n_devs; i++)
        for (int g = 0; chip_of(s, i) && g < chip_of(s, i)->n_gpcs; g++)
            put(b, "gpuos_chip_gpc_sms{%s,gpc=\"%d\"} %d\n", dev_labels(s, i, l, sizeof l), g,
                chip_of(s, i)->gpcs[g].n_sms);
    family(b, "gpuos_chip_gpc_cluster_sms", "gauge", "SMs of each GPC that clusters larger than 2 can use.");
    for (int i = 0; i < s->n_devs; i++)
        for (int g = 0; chip_of(s, i) && g < chip_of(s, i)->n_gpcs; g++)
            put(b, "gpuos_chip_gpc_cluster_sms{%s,gpc=\"%d\"} %d\n",
                dev_labels(s, i, l, sizeof l), g, chip_of(s, i)->gpcs[g].n_cluster);
    family(b, "gpuos_chip_max_cluster_size", "gauge", "Largest thread-block cluster the chip accepts (0: unknown).");
    for (int i = 0; i < s->n_devs; i++) {
        const gos_chip *c = chip_of(s, i);
        if (!c)
            continue;
        int mx = gos_chip_max_cluster(c);
        put(b, "gpuos_chip_max_cluster_size{%s} %d\n", dev_labels(s, i, l, sizeof l), mx);
    }
    family(b, "gpuos_chip_concurrent_clusters", "gauge",
           "Clusters of `size` blocks (one per SM) the chip runs at once: whole clusters per GPC.");
    for (int i = 0; i < s->n_devs; i++) {
        const gos_chip *c = chip_of(s, i);
        for (int k = 2; c && c->n_gpcs && k <= 16; k *= 2) {
            int n = 0;
            for (int g = 0; g < c->n_gpcs; g++)
                n += (k <= 2 ? c->gpcs[g].n_sms : c->gpcs[g].n_cluster) / k;
            put(b, "gpuos_chip_concurrent_clusters{%s,size=\"%d\"} %d\n",
                dev_labels(s, i, l, sizeof l), k, n);
        }
    }
    family(b, "gpuos_chip_partitions", "gauge", "Memory partitions (L2 / NUMA) of the chip (0: not known).");
    for (int i = 0; i < s->n_devs; i++)
        if (chip_of(s, i))
            put(b, "gpuos_chip_partitions{%s} %d\n", dev_labels(s, i, l, sizeof l),
                chip_of(s, i)->n_parts);
    family(b, "gpuos_chip_partition_sms", "gauge", "SMs of each memory partition.");
    for (int i = 0; i < s->n_devs; i++)
        for (int p = 0; chip_of(s, i) && p < chip_of(s, i)->n_parts; p++)
            put(b, "gpuos_chip_partition_sms{%s,partition=\"%d\"} %d\n",
                dev_labels(s, i, l, sizeof l), p, chip_of(s, i)->parts[p].n_sms);
    family(b, "gpuos_chip_hash_granularity_bytes", "gauge",
           "Granularity of the address hash over memory partitions (0: not known).");
    for (int i = 0; i < s->n_devs; i++)
        if (chip_of(s, i))
            put(b, "gpuos_chip_hash_granularity_bytes{%s} %llu\n", dev_labels(s, i, l, sizeof l),
                (unsigned long long)chip_of(s, i)->hash_granularity);
}

void srv_vgpu_record(struct srv *s, int v, struct gos_vgpu_rec *r)
{
    struct srv_vgpu *g = &s->vgpus[v];
    struct srv_dev *d = &s->devs[g->cfg.device];
    gos_sched_vgpu_stats st;
    memset(r, 0, sizeof *r);
    memset(&st, 0, sizeof st);
    for (struct srv_client *c = s->clients; c; c = c->next)
        if (c->vgpu == v)
            srv_ring_charge(c); /* ring time (issue 9.4) counts as compute time */
    gos_sched_vgpu_stats_get(d->sched, g->id, gos_now_ns(), &st);
    snprintf(r->name, sizeof r->name, "%s", g->cfg.name);
    r->id = g->id;
    r->device = (uint32_t)g->cfg.device;
    r->compute_share = (uint32_t)g->cfg.compute;
    r->copy_share = (uint32_t)g->cfg.copy;
    r->latency_ms = (uint32_t)g->cfg.latency_ms;
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
    srv_swap_turns(s, v, &r->swap_turns, &r->swap_ns);
    if (d->sw) {
        r->evictions = d->sw->vgpu[v].evictions;
        r->restores = d->sw->vgpu[v].restores;
    }
    snprintf(r->policy, sizeof r->policy, "%s", gos_sched_policy_name(d->sched));
    snprintf(r->queue, sizeof r->queue, "%s", gos_sched_mode_name(d->sched));
}

char *srv_metrics_text(struct srv *s, size_t *len)
{
    struct buf b = {0};
    char l1[1200], l2[256], l3[256], l4[128], lab[2400];
    static struct gos_vgpu_rec recs[GOS_MAX_VGPUS]; /* under the lock */
    int listed[GOS_MAX_VGPUS], n = 0;
    for (int v = 0; v < s->n_vgpus; v++)
        if ((!s->vgpus[v].removed || s->vgpus[v].clients) && !s->vgpus[v].deleted) {
            srv_vgpu_record(s, v, &recs[n]);
            listed[n++] = v;
        }
    family(&b, "gpuos_vgpu_info", "gauge", "A virtual GPU (state: active, or removed at a reload with clients left).");
    for (int i = 0; i < n; i++) {
        struct srv_vgpu *g = &s->vgpus[listed[i]];
        put(&b, "gpuos_vgpu_info{%s,policy=\"%s\",queue=\"%s\",state=\"%s\"} 1\n",
            vgpu_labels(s, g, lab, sizeof lab), esc(recs[i].policy, l3, sizeof l3), esc(recs[i].queue, l4, sizeof l4),
            g->removed ? "removed" : "active");
    }
    for (int f = 0; f < F_N; f++) {
        family(&b, vfam[f].name, vfam[f].type, vfam[f].help);
        for (int i = 0; i < n; i++) {
            struct srv_vgpu *g = &s->vgpus[listed[i]];
            vgpu_sample(&b, f, &recs[i], g, vgpu_labels(s, g, lab, sizeof lab));
        }
    }
    queue_family(&b, s, listed, n);
    family(&b, "gpuos_device_info", "gauge", "A device of the daemon.");
    for (int i = 0; i < s->n_devs; i++) {
        const gos_device_info *d = &s->devs[i].info;
        put(&b, "gpuos_device_info{%s,gpuos_device=\"%s\",backend=\"%s\"} 1\n", dev_labels(s, i, l1, sizeof l1),
            esc(s->cfg.devs[i].label, l2, sizeof l2), esc(d->backend, l4, sizeof l4));
    }
    for (int f = 0; f < D_N; f++) {
        family(&b, dfam[f].name, dfam[f].type, dfam[f].help);
        for (int i = 0; i < s->n_devs; i++) {
            put(&b, "%s{%s} ", dfam[f].name, dev_labels(s, i, l1, sizeof l1));
            dev_sample(&b, f, &s->devs[i]);
        }
    }
    chip_families(&b, s);
    family(&b, "gpuos_build_info", "gauge", "The daemon's version and client protocol (always 1).");
    put(&b, "gpuos_build_info{version=\"%s\",protocol=\"%d\"} 1\n", GOS_VERSION, GOS_PROTOCOL_VERSION);
    family(&b, "gpuos_clients", "gauge", "Connections to the daemon (vGPU clients and admin commands).");
    put(&b, "gpuos_clients %d\n", s->n_clients);
    family(&b, "gpuos_connections_refused_total", "counter",
           "Connections refused at their HELLO: not allowed on the vGPU (users, groups, cgroup) or its clients full.");
    put(&b, "gpuos_connections_refused_total %llu\n", (unsigned long long)s->refused);
    family(&b, "gpuos_config_reloads_total", "counter", "Successful configuration reloads (SIGHUP).");
    put(&b, "gpuos_config_reloads_total %llu\n", (unsigned long long)s->reloads);
    family(&b, "gpuos_config_reload_failures_total", "counter", "Rejected configuration reloads.");
    put(&b, "gpuos_config_reload_failures_total %llu\n", (unsigned long long)s->reload_failures);
    family(&b, "gpuos_config_last_reload_successful", "gauge", "Whether the last reload was applied.");
    put(&b, "gpuos_config_last_reload_successful %d\n", s->last_reload_ok);
    family(&b, "gpuos_config_last_reload_success_timestamp_seconds", "gauge",
           "Time of the last successful configuration load.");
    put(&b, "gpuos_config_last_reload_success_timestamp_seconds %.0f\n", s->last_reload_s);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}

/* Slow connections (slowloris, issues 23.7 and 44.5). libmicrohttpd's own
 * limits refuse a newcomer once an address holds its share or the total is
 * reached, so eight slow connections from 127.0.0.1 locked out every scrape from
 * 127.0.0.1 (0 of 24): the scraper shares the attacker's address on a node.
 * Here the newcomer always gets in and the oldest connection not being answered
 * goes instead: past SRV_METRICS_PER_IP of its address, or past
 * SRV_METRICS_CONNS in all, it is shut down (libmicrohttpd then sees its end and
 * closes it). A scrape's request arrives at once and is answered at once, so a
 * slow connection cannot outlive it; libmicrohttpd's own limit is twice ours,
 * room for those being closed. Every callback runs on libmicrohttpd's one
 * polling thread (MHD_USE_INTERNAL_POLLING_THREAD), and srv_metrics_stop's
 * after it ends: the list needs no lock. */
#define SRV_METRICS_CONNS 128
#define SRV_METRICS_PER_IP 8
#define SRV_METRICS_IDLE_S 5

struct mconn {
    struct mconn *next;
    int fd;
    struct sockaddr_storage addr;
    int busy;          /* a request being answered */
    int evicted;       /* shut down, waiting for libmicrohttpd to close it */
    uint64_t since_ns; /* accepted, or its last answer sent */
};
static struct mconn *mconns;

static int same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                       sizeof(struct in6_addr));
    return 0;
}

/* Shuts down the oldest live connection (of addr's address when addr is not
 * NULL), one not being answered first, when more than limit are live. */
static void evict_over(const struct sockaddr_storage *addr, int limit)
{
    struct mconn *victim = NULL;
    int n = 0;
    for (struct mconn *m = mconns; m; m = m->next) {
        if (m->evicted || (addr && !same_addr(addr, &m->addr)))
            continue;
        n++;
        if (!victim || (victim->busy && !m->busy) ||
            (victim->busy == m->busy && m->since_ns < victim->since_ns))
            victim = m;
    }
    if (n <= limit || !victim)
        return;
    victim->evicted = 1;
    shutdown(victim->fd, SHUT_RDWR);
    gos_log(LOG_DEBUG, "metrics: a connection held %.1f s without a request was closed for a newer one",
            (double)(gos_now_ns() - victim->since_ns) / 1e9);
}

static void conn_note(void *cls, struct MHD_Connection *conn, void **ctx, enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    const struct srv_mhd *M = srv_mhd();
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        for (struct mconn **p = &mconns; *p; p = &(*p)->next)
            if (*p == *ctx) {
                *p = (*p)->next;
                break;
            }
        free(*ctx);
        *ctx = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd = M->get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ad = M->get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct mconn *m = calloc(1, sizeof *m);
    if (!m || !fd || !ad || !ad->client_addr) {
        free(m);
        return; /* not tracked: never evicted, libmicrohttpd's limits still hold */
    }
    m->fd = fd->connect_fd;
    memcpy(&m->addr, ad->client_addr,
           ad->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    m->since_ns = gos_now_ns();
    m->next = mconns;
    mconns = m;
    *ctx = m;
    evict_over(&m->addr, SRV_METRICS_PER_IP);
    evict_over(NULL, SRV_METRICS_CONNS);
}

/* A request's answer sent (or abandoned): its connection may be evicted again,
 * counted from now. */
static void request_done(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)con_cls, (void)toe;
    const union MHD_ConnectionInfo *i = srv_mhd()->get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct mconn *m = i ? i->socket_context : NULL;
    if (m) {
        m->busy = 0;
        m->since_ns = gos_now_ns();
    }
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    struct srv *s = cls;
    const struct srv_mhd *M = srv_mhd(); /* loaded before the endpoint started */
    const union MHD_ConnectionInfo *ci = M->get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context)
        ((struct mconn *)ci->socket_context)->busy = 1;
    struct MHD_Response *r;
    unsigned status = MHD_HTTP_OK;
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        static const char m[] = "only GET\n";
        r = M->create_response_from_buffer(sizeof m - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics")) {
        static const char m[] = "gpuos serve: the metrics are at /metrics\n";
        r = M->create_response_from_buffer(sizeof m - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    } else {
        size_t n = 0;
        pthread_mutex_lock(&s->lock);
        char *text = srv_metrics_text(s, &n);
        pthread_mutex_unlock(&s->lock);
        if (!text)
            return MHD_NO;
        r = M->create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
        if (r)
            M->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
    }
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = M->queue_response(conn, status, r);
    M->destroy_response(r);
    return ok;
}

int srv_metrics_start(struct srv *s)
{
    if (!s->cfg.metrics_listen[0])
        return GOS_OK;
    struct sockaddr_storage sa;
    socklen_t len;
    int rc = gos_serve_parse_listen(s->cfg.metrics_listen, &sa, &len);
    if (rc)
        return rc;
    const struct srv_mhd *M = srv_mhd();
    if (!M)
        return gos_fail(GOS_EUNSUPPORTED, "metrics_listen = %s: %s", s->cfg.metrics_listen, gos_last_error());
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (sa.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* Slow clients (slowloris, issues 23.7, 44.5): conn_note keeps at most
     * SRV_METRICS_PER_IP live connections per address and SRV_METRICS_CONNS in
     * all by closing the oldest for each newcomer; none lasts SRV_METRICS_IDLE_S
     * without a byte. */
    mconns = NULL;
    struct MHD_Daemon *d = M->start_daemon(
        flags, 0, NULL, NULL, answer, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(2 * SRV_METRICS_CONNS), MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SRV_METRICS_IDLE_S,
        MHD_OPTION_NOTIFY_CONNECTION, conn_note, NULL, MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
        MHD_OPTION_END);
    if (!d)
        return gos_fail(GOS_EIO, "metrics_listen = %s: cannot listen there (address in use or not local?)",
                        s->cfg.metrics_listen);
    s->metrics = d;
    gos_log(LOG_NOTICE, "metrics on http://%s/metrics", s->cfg.metrics_listen);
    return GOS_OK;
}

void srv_metrics_stop(struct srv *s)
{
    if (s->metrics)
        srv_mhd()->stop_daemon(s->metrics);
    s->metrics = NULL;
}

/* VGPU_INFO (the client's vGPU) and ADMIN_LIST (`gpuos vgpu list`: every vGPU
 * but those removed at a reload without clients left and those deleted), from
 * the record the scrape reads (client.c's msg_table). */
int srv_msg_vgpu_info(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct gos_vgpu_rec r;
    srv_vgpu_record(c->srv, c->vgpu, &r);
    return srv_reply(c, h->seq, h->type, 0, &r, sizeof r);
}

int srv_msg_admin_list(struct srv_client *c, const struct gos_msg_hdr *h, void *p, int fd)
{
    struct srv *s = c->srv;
    static _Thread_local unsigned char buf[sizeof(struct gos_rep_admin_list) +
                                          GOS_MAX_VGPUS * sizeof(struct gos_vgpu_rec)];
    struct gos_rep_admin_list l = {.n = 0};
    for (int v = 0; v < s->n_vgpus; v++) {
        struct gos_vgpu_rec r;
        if ((s->vgpus[v].removed && !s->vgpus[v].clients) || s->vgpus[v].deleted)
            continue; /* removed at a reload: listed while clients remain; deleted: gone */
        srv_vgpu_record(s, v, &r);
        memcpy(buf + sizeof l + (size_t)l.n++ * sizeof r, &r, sizeof r);
    }
    memcpy(buf, &l, sizeof l);
    return srv_reply(c, h->seq, h->type, 0, buf, sizeof l + (size_t)l.n * sizeof(struct gos_vgpu_rec));
}
