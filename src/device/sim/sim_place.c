/* SPDX-License-Identifier: Apache-2.0 */
/* sim_place.c: the placement primitives on the simulated device (place_ops.h).
 *
 * Memory contents: device memory of mem_ops allocations gets host backing on
 * first touch, per 2 MB page, filled with 0x5a as the cuda backend's allocation
 * fills it; addresses outside every allocation are refused.
 *
 * Runtime jobs run the scheduling code of pmem_core.h (gos_prt_task, the views'
 * gos_pmem_addr) in an event-driven model of one persistent block per working
 * SM: the block that becomes free first (ties: lowest SM) takes the next ticket
 * of its partition's queue, as the GPU's atomic counter would hand them out.
 * Costs come from the simulated chip's truth (sim_mem.c: physical frames and
 * hash): every 4 KB (or granularity) unit a task reads costs 4096 B / sm_hbm_gbps when its home
 * partition is the block's, and that times hbm_part_gbps / fabric_gbps when it
 * is remote; the job takes at least as long as each partition's HBM and each
 * fabric direction need for their bytes. Caches are not modelled (every read
 * goes to HBM). A chase step costs the chip's local or remote HBM latency.
 * TASKS jobs cost 1 us per task. Data really moves: GEMV reads W through the
 * views from the backing memory and writes y, so a wrong remap gives wrong y. */
#include "device/place_ops.h"

#include "common/status.h"
#include "device/mem_ops.h"
#include "device/sim/sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ST_PLACE = 0x2a00 };

struct page {
    uint64_t va; /* 2 MB aligned */
    uint8_t *mem;
};

struct sim_place {
    struct page *pages;
    size_t n, cap;
    size_t last;
    gos_rng rng;
};

static void place_close(gos_device *d)
{
    struct sim_place *s = d->place_priv;
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->pages[i].mem);
    free(s->pages);
    free(s);
    d->place_priv = NULL;
}

static int state(gos_device *d, struct sim_place **out)
{
    if (!d->place_priv) {
        struct sim_place *s = calloc(1, sizeof *s);
        if (!s)
            return gos_fail(GOS_ENOMEM, "out of memory");
        gos_sim_rng(d, &s->rng, ST_PLACE);
        d->place_priv = s;
    }
    *out = d->place_priv;
    return GOS_OK;
}

/* *out = the host byte behind device address va (backing allocated on first
 * touch). */
static int byte_at(gos_device *d, struct sim_place *s, uint64_t va, uint8_t **out)
{
    uint64_t pg = va & ~(GOS_PAGE_2M - 1);
    if (s->n && s->pages[s->last].va == pg) {
        *out = s->pages[s->last].mem + (va - pg);
        return GOS_OK;
    }
    for (size_t i = 0; i < s->n; i++)
        if (s->pages[i].va == pg) {
            s->last = i;
            *out = s->pages[i].mem + (va - pg);
            return GOS_OK;
        }
    if (gos_sim_mem_home(d, va) < 0)
        return gos_fail(GOS_EINVAL, "address 0x%llx is not in a device allocation", (unsigned long long)va);
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        struct page *p = realloc(s->pages, cap * sizeof *p);
        if (!p)
            return gos_fail(GOS_ENOMEM, "out of memory");
        s->pages = p;
        s->cap = cap;
    }
    uint8_t *m = malloc(GOS_PAGE_2M);
    if (!m)
        return gos_fail(GOS_ENOMEM, "out of memory");
    memset(m, 0x5a, GOS_PAGE_2M);
    s->pages[s->n] = (struct page){pg, m};
    s->last = s->n++;
    *out = m + (va - pg);
    return GOS_OK;
}

/* Copies n bytes between host and device address va, page piece by piece. */
static int move(gos_device *d, struct sim_place *s, int to_device, uint64_t va, uint8_t *h, uint64_t n)
{
    while (n) {
        uint64_t room = GOS_PAGE_2M - (va & (GOS_PAGE_2M - 1)), k = n < room ? n : room;
        uint8_t *p;
        int rc = byte_at(d, s, va, &p);
        if (rc)
            return rc;
        if (to_device)
            memcpy(p, h, k);
        else
            memcpy(h, p, k);
        va += k;
        h += k;
        n -= k;
    }
    return GOS_OK;
}

static int sim_copy_units(gos_device *d, int to_device, const uint64_t *addr, uint64_t n,
                          uint32_t unit, void *host)
{
    struct sim_place *s = NULL;
    int rc = state(d, &s);
    for (uint64_t i = 0; !rc && i < n; i++)
        rc = move(d, s, to_device, addr[i], (uint8_t *)host + i * unit, unit);
    return rc;
}

/* ---- jobs -------------------------------------------------------------------- */

struct blk {
    int sm, part;
    uint32_t pass;
    double t; /* seconds */
    int done;
};

struct ctx {
    gos_device *d;
    struct sim_place *s;
    gos_sim_mem_truth truth;
    struct gos_place_job *j;
    gos_pmem_view v[2]; /* host parity pointers */
    uint8_t *par[2];
    double hbm_bytes[2], fabric_bytes[2]; /* per home partition / per reading partition */
};

/* A host copy of view p with its parity table read from device memory. */
static int host_view(struct ctx *c, int p)
{
    gos_pmem_view *v = &c->v[p];
    *v = c->j->view[p];
    if (v->part == GOS_PMEM_LINEAR || !v->bytes)
        return GOS_OK;
    uint64_t last = (((v->bytes - 1) >> v->shift) << (v->shift + 1)) >> 21;
    if (!(c->par[p] = malloc(last + 1)))
        return gos_fail(GOS_ENOMEM, "out of memory");
    int rc = move(c->d, c->s, 0, v->parity, c->par[p], last + 1);
    v->parity = (uint64_t)(uintptr_t)c->par[p];
    return rc;
}

/* Time for block partition `part` to read `bytes` from logical offset `off` of
 * view p, unit by unit by the truth; accumulates the shared resources. */
static int read_cost(struct ctx *c, int part, int p, uint64_t off, uint64_t bytes, double *sec)
{
    const gos_sim_mem_truth *T = &c->truth;
    double local = 4096.0 / (T->sm_hbm_gbps * 1e9), remote = local * T->hbm_part_gbps / T->fabric_gbps;
    uint64_t step = c->v[p].part == GOS_PMEM_LINEAR || c->v[p].shift >= 12 ? 4096 : 1ull << c->v[p].shift;
    *sec = 0;
    for (uint64_t u = 0; u < bytes; u += step) {
        uint64_t va = gos_pmem_addr(&c->v[p], off + u);
        int h = gos_sim_mem_home(c->d, va);
        if (h < 0)
            return gos_fail(GOS_EINVAL, "job reads 0x%llx outside every allocation", (unsigned long long)va);
        if (T->n_parts < 2)
            h = part;
        uint64_t k = bytes - u < step ? bytes - u : step;
        c->hbm_bytes[h] += (double)k;
        if (h != part)
            c->fabric_bytes[part] += (double)k;
        *sec += (h == part ? local : remote) * (double)k / 4096.0;
    }
    return GOS_OK;
}

static int gemv_task(struct ctx *c, int part, uint32_t task, double *sec)
{
    struct gos_place_job *j = c->j;
    uint64_t row_bytes = (uint64_t)j->cols * 4;
    uint32_t li = gos_prt_local_index(&j->rt, (uint32_t)part, task);
    uint64_t off = (uint64_t)li * j->rows_per_task * row_bytes;
    int rc = read_cost(c, part, part, off, j->rows_per_task * row_bytes, sec);
    float *w = malloc(row_bytes);
    if (!w)
        return gos_fail(GOS_ENOMEM, "out of memory");
    for (uint32_t r = 0; !rc && r < j->rows_per_task; r++) {
        uint64_t row = (uint64_t)task * j->rows_per_task + r, ro = off + r * row_bytes;
        for (uint64_t k = 0; !rc && k < row_bytes; k += 4) /* element by element through the view */
            rc = move(c->d, c->s, 0, gos_pmem_addr(&c->v[part], ro + k), (uint8_t *)&w[k / 4], 4);
        for (uint32_t b = 0; !rc && j->y && b < j->batch; b++) {
            float acc = 0;
            for (uint32_t k = 0; k < j->cols; k++)
                acc += w[k] * j->x[(size_t)b * j->cols + k];
            j->y[(size_t)b * j->rt.n_tasks * j->rows_per_task + row] = acc;
        }
    }
    free(w);
    return rc;
}

static int gemv_init(struct ctx *c)
{
    struct gos_place_job *j = c->j;
    for (int p = 0; p < 2; p++)
        for (uint32_t t = 0; t < j->rt.count[p]; t++) {
            uint32_t task = j->rt.first[p] + t;
            for (uint32_t r = 0; r < j->rows_per_task; r++) {
                uint64_t row = (uint64_t)task * j->rows_per_task + r;
                uint64_t ro = ((uint64_t)t * j->rows_per_task + r) * j->cols * 4;
                for (uint32_t k = 0; k < j->cols; k++) {
                    float w = gos_pmem_pattern_w(row, k);
                    int rc = move(c->d, c->s, 1, gos_pmem_addr(&c->v[p], ro + 4ull * k), (uint8_t *)&w, 4);
                    if (rc)
                        return rc;
                }
            }
        }
    return GOS_OK;
}

static int chase(struct ctx *c, struct blk *b, double *sec)
{
    struct gos_place_job *j = c->j;
    double hz = (c->d->info.sm_clock_mhz > 0 ? c->d->info.sm_clock_mhz : 1980) * 1e6;
    uint64_t i = ((uint64_t)b->sm * 0x9E3779B97F4A7C15ull) & (j->n_nodes - 1);
    double cyc = 0;
    for (uint64_t k = 0; k < j->steps; k++) {
        uint64_t va = gos_pmem_addr(&c->v[b->part], i * 128);
        int h = gos_sim_mem_home(c->d, va);
        if (h < 0)
            return gos_fail(GOS_EINVAL, "chase reads 0x%llx outside every allocation", (unsigned long long)va);
        cyc += (c->truth.n_parts < 2 || h == b->part) ? c->truth.hbm_local : c->truth.hbm_remote;
        i = gos_pmem_chase_next(i, j->n_nodes);
    }
    *sec = cyc / hz;
    return GOS_OK;
}

static int sim_run(gos_device *d, struct gos_place_job *j)
{
    struct ctx c = {.d = d, .j = j};
    struct blk *bl = NULL;
    uint32_t *ctr = NULL;
    int rc = state(d, &c.s);
    if (rc || (rc = gos_sim_mem_truth_get(d, &c.truth)))
        return rc;
    int nb = 0;
    const gos_prt_table *t = &j->rt;
    uint32_t passes = j->kind == GOS_PJOB_READ ? j->passes : 1;
    if (!(bl = calloc(GOS_PRT_MAX_SMS, sizeof *bl)) || !(ctr = calloc(2 * passes, sizeof *ctr))) {
        rc = gos_fail(GOS_ENOMEM, "out of memory");
        goto out;
    }
    for (int s = 0; s < d->info.sm_count && s < GOS_PRT_MAX_SMS; s++)
        if (t->part_of_sm[s] >= 0)
            bl[nb++] = (struct blk){.sm = s, .part = t->part_of_sm[s]};
    if (j->kind != GOS_PJOB_TASKS)
        for (int p = 0; p < 2 && !rc; p++)
            rc = host_view(&c, p);
    if (!rc && j->kind == GOS_PJOB_GEMV && j->init)
        rc = gemv_init(&c);
    if (rc)
        goto out;
    if (j->owner)
        for (uint32_t k = 0; k < t->n_tasks; k++)
            j->owner[k] = GOS_PRT_NONE;
    if (j->runs)
        memset(j->runs, 0, t->n_tasks * sizeof *j->runs);
    double end = 0;
    if (j->kind == GOS_PJOB_CHASE) {
        for (int b = 0; b < nb && !rc; b++) {
            double sec = 0;
            rc = chase(&c, &bl[b], &sec);
            end = fmax(end, sec);
        }
    } else {
        for (;;) {
            int b = -1;
            for (int k = 0; k < nb; k++)
                if (!bl[k].done && (b < 0 || bl[k].t < bl[b].t))
                    b = k;
            if (b < 0)
                break;
            struct blk *B = &bl[b];
            uint32_t task = gos_prt_task(t, (uint32_t)B->part, ctr[B->pass * 2 + B->part]++);
            if (task == GOS_PRT_NONE) {
                if (++B->pass >= passes)
                    B->done = 1;
                continue;
            }
            double sec = 1e-6;
            if (j->kind == GOS_PJOB_READ)
                rc = read_cost(&c, B->part, B->part,
                               (uint64_t)gos_prt_local_index(t, (uint32_t)B->part, task) * j->task_bytes,
                               j->task_bytes, &sec);
            else if (j->kind == GOS_PJOB_GEMV)
                rc = gemv_task(&c, B->part, task, &sec);
            if (rc)
                goto out;
            B->t += sec;
            if (j->owner)
                j->owner[task] = (uint32_t)B->sm;
            if (j->runs && B->pass == passes - 1)
                j->runs[task]++;
            end = fmax(end, B->t);
        }
        for (int h = 0; h < 2; h++) {
            end = fmax(end, c.hbm_bytes[h] / (c.truth.hbm_part_gbps * 1e9));
            end = fmax(end, c.fabric_bytes[h] / (c.truth.fabric_gbps * 1e9));
        }
    }
    if (rc)
        goto out;
    for (uint32_t r = 0; r < j->repeats; r++)
        j->ms[r] = end * 1e3 * gos_sim_noise(d, &c.s->rng);
out:
    free(c.par[0]);
    free(c.par[1]);
    free(bl);
    free(ctr);
    return rc;
}

/* The chip's truth: the home partition of each address (sim_mem.c), 0 where it
 * is ref_sm's partition. */
static int sim_truth(gos_device *d, const uint64_t *addr, uint64_t n, int ref_sm, uint8_t *out)
{
    gos_sim_mem_truth t;
    int rc = gos_sim_mem_truth_get(d, &t);
    if (rc)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        int h = gos_sim_mem_home(d, addr[i]);
        if (h < 0)
            return gos_fail(GOS_EINVAL, "truth: 0x%llx is not device memory", (unsigned long long)addr[i]);
        out[i] = (uint8_t)(h != t.part_of[ref_sm]);
    }
    return GOS_OK;
}

const struct gos_place_ops gos_sim_place_ops = {
    .close = place_close,
    .copy_units = sim_copy_units,
    .run = sim_run,
    .truth = sim_truth,
};
