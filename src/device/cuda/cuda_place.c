/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_place.c: the placement primitives on a real GPU (place_ops.h), running
 * kernels/place.cu on the device's primary context (the context a CUDA runtime
 * program in the same process uses, so its kernels can read the views).
 *
 *   copy_units  a few units: one cuMemcpy each; many: staged through a device
 *               buffer in 64 MB pieces and scattered/gathered by a kernel;
 *   run         one block per SM (dynamic shared memory near the per-block
 *               maximum, so two blocks never share an SM), counters zeroed
 *               before every launch, events around every timed launch. */
#include "device/cuda/cuda_internal.h"
#include "device/place_ops.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#define STAGE_BYTES (64ull << 20)
#define BLOCK 512
#define ONE_BLOCK_SMEM(d) ((unsigned)((d)->info.max_smem_per_block_optin > 0 ? (d)->info.max_smem_per_block_optin - 1024 : 200 * 1024))

struct cuda_place {
    CUdeviceptr stage, addrs, ctr, sink, owner, runs, x, y;
    uint64_t cap_owner, cap_runs, cap_y;
    CUevent e0, e1;
};

static void free_ptr(CUdeviceptr *p)
{
    if (*p)
        CU_CALL(cuMemFree, *p);
    *p = 0;
}

static void place_close(gos_device *d)
{
    struct cuda_place *s = d->place_priv;
    if (!s || gos_cuda_enter(d))
        return;
    CUdeviceptr *p[] = {&s->stage, &s->addrs, &s->ctr, &s->sink, &s->owner, &s->runs, &s->x, &s->y};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free_ptr(p[i]);
    if (s->e0)
        CU_CALL(cuEventDestroy, s->e0);
    if (s->e1)
        CU_CALL(cuEventDestroy, s->e1);
    free(s);
    d->place_priv = NULL;
}

static int state(gos_device *d, struct cuda_place **out)
{
    int rc = gos_cuda_enter(d);
    if (rc)
        return rc;
    if (!d->place_priv) {
        struct cuda_place *s = calloc(1, sizeof *s);
        if (!s)
            return gos_fail(GOS_ENOMEM, "out of memory");
        d->place_priv = s;
        if ((rc = CU_CALL(cuMemAlloc, &s->ctr, 2 * GOS_PJOB_MAX_PASSES * sizeof(unsigned))) ||
            (rc = CU_CALL(cuMemAlloc, &s->sink, GOS_PRT_MAX_SMS * 16)) ||
            (rc = CU_CALL(cuEventCreate, &s->e0, CU_EVENT_DEFAULT)) ||
            (rc = CU_CALL(cuEventCreate, &s->e1, CU_EVENT_DEFAULT))) {
            place_close(d);
            return rc;
        }
    }
    *out = d->place_priv;
    return GOS_OK;
}

/* (Re)allocates *p to hold `need` bytes when *cap is smaller. */
static int ensure(CUdeviceptr *p, uint64_t *cap, uint64_t need)
{
    if (*p && *cap >= need)
        return GOS_OK;
    free_ptr(p);
    *cap = 0;
    int rc = CU_CALL(cuMemAlloc, p, need ? need : 16);
    if (!rc)
        *cap = need;
    return rc;
}

static int cuda_copy_units(gos_device *d, int to_device, const uint64_t *addr, uint64_t n,
                           uint32_t unit, void *host)
{
    struct cuda_place *s;
    int rc = state(d, &s);
    if (rc)
        return rc;
    uint8_t *h = host;
    if (n <= 8 || unit % 16 || unit > STAGE_BYTES) {
        for (uint64_t i = 0; i < n && !rc; i++)
            rc = to_device ? CU_CALL(cuMemcpyHtoD, (CUdeviceptr)addr[i], h + i * unit, unit)
                           : CU_CALL(cuMemcpyDtoH, h + i * unit, (CUdeviceptr)addr[i], unit);
        return rc;
    }
    CUfunction f;
    if ((rc = gos_cuda_function(d, "place", "gos_place_scatter", &f)))
        return rc;
    uint64_t per = STAGE_BYTES / unit;
    if (!s->stage && ((rc = CU_CALL(cuMemAlloc, &s->stage, STAGE_BYTES)) ||
                      (rc = CU_CALL(cuMemAlloc, &s->addrs, STAGE_BYTES / 16 * 8))))
        return rc;
    for (uint64_t i = 0; i < n && !rc; i += per) {
        unsigned long long k = n - i < per ? n - i : per;
        int dir = to_device;
        void *args[] = {&s->addrs, &k, &unit, &s->stage, &dir};
        if ((rc = CU_CALL(cuMemcpyHtoD, s->addrs, addr + i, k * 8)))
            break;
        if (to_device && (rc = CU_CALL(cuMemcpyHtoD, s->stage, h + i * unit, k * unit)))
            break;
        if ((rc = gos_cuda_launch(f, (unsigned)(k < 4096 ? k : 4096), 256, 1, 0, NULL, args)) ||
            (rc = CU_CALL(cuCtxSynchronize)))
            break;
        if (!to_device)
            rc = CU_CALL(cuMemcpyDtoH, h + i * unit, s->stage, k * unit);
    }
    return rc;
}

/* Whether the used views are linear (all) or mapped (all). */
static int used_linear(const struct gos_place_job *j, int *lin)
{
    uint32_t n[2];
    gos_prt_sm_counts(&j->rt, n);
    int nl = 0, nm = 0;
    for (int p = 0; p < 2; p++)
        if (n[p])
            j->view[p].part == GOS_PMEM_LINEAR ? nl++ : nm++;
    if (nl && nm)
        return gos_fail(GOS_EINVAL, "job: the working partitions' views must be all linear or all mapped");
    *lin = nl > 0;
    return GOS_OK;
}

static int fill(gos_device *d, struct gos_place_job *j, int lin)
{
    CUfunction f;
    uint32_t n[2];
    gos_prt_sm_counts(&j->rt, n);
    int rc = GOS_OK;
    for (int p = 0; p < 2 && !rc; p++) {
        if (!n[p])
            continue;
        if (j->kind == GOS_PJOB_GEMV && j->init && j->rt.count[p]) {
            int cols = (int)j->cols, rpt = (int)j->rows_per_task;
            void *args[] = {&j->rt, &j->view[p], &p, &cols, &rpt};
            if (!(rc = gos_cuda_function(d, "place", lin ? "gos_place_gemv_fill_lin" : "gos_place_gemv_fill_map", &f)))
                rc = gos_cuda_launch(f, 4 * (unsigned)d->info.sm_count, 512, 1, 0, NULL, args);
        } else if (j->kind == GOS_PJOB_CHASE) {
            unsigned long long nn = j->n_nodes;
            void *args[] = {&j->view[p], &nn};
            if (!(rc = gos_cuda_function(d, "place", lin ? "gos_place_chase_fill_lin" : "gos_place_chase_fill_map", &f)))
                rc = gos_cuda_launch(f, 4 * (unsigned)d->info.sm_count, 512, 1, 0, NULL, args);
        }
    }
    return rc ? rc : CU_CALL(cuCtxSynchronize);
}

static int cuda_run(gos_device *d, struct gos_place_job *j)
{
    struct cuda_place *s;
    int lin = 0, rc = state(d, &s);
    if (rc || (rc = used_linear(j, &lin)))
        return rc;
    uint64_t nt = j->rt.n_tasks ? j->rt.n_tasks : 1;
    if ((rc = ensure(&s->owner, &s->cap_owner, nt * 4)) || (rc = ensure(&s->runs, &s->cap_runs, nt * 4)))
        return rc;
    unsigned smem = ONE_BLOCK_SMEM(d), grid = (unsigned)d->info.sm_count;
    const char *name;
    unsigned long long tb = j->task_bytes, nn = j->n_nodes, steps = j->steps;
    int passes = (int)j->passes, cols = (int)j->cols, batch = (int)j->batch, rpt = (int)j->rows_per_task;
    void *a_tasks[] = {&j->rt, &s->ctr, &s->owner, &s->runs};
    void *a_read[] = {&j->rt, &j->view[0], &j->view[1], &tb, &passes, &s->ctr, &s->owner, &s->runs, &s->sink};
    void *a_gemv[] = {&j->rt, &j->view[0], &j->view[1], &cols, &batch, &rpt, &s->x, &s->y, &s->ctr, &s->owner, &s->runs};
    unsigned long long seed = 0;
    void *a_chase[] = {&j->rt, &j->view[0], &j->view[1], &nn, &steps, &seed, &s->sink};
    void **args;
    uint64_t ybytes = 0;
    switch (j->kind) {
    case GOS_PJOB_TASKS:
        name = "gos_place_tasks";
        args = a_tasks;
        break;
    case GOS_PJOB_READ:
        name = lin ? "gos_place_read_lin" : "gos_place_read_map";
        args = a_read;
        break;
    case GOS_PJOB_GEMV: {
        name = lin ? "gos_place_gemv_lin" : "gos_place_gemv_map";
        args = a_gemv;
        uint64_t xb = (uint64_t)j->batch * j->cols * 4, cap_x = 0;
        ybytes = (uint64_t)j->batch * j->rt.n_tasks * j->rows_per_task * 4;
        if (xb + 1024 > smem)
            return gos_fail(GOS_EINVAL, "job: GEMV x needs %llu bytes of shared memory, at most %u",
                            (unsigned long long)xb, smem - 1024);
        free_ptr(&s->x);
        if ((rc = ensure(&s->x, &cap_x, xb)) || (rc = ensure(&s->y, &s->cap_y, ybytes)) ||
            (rc = CU_CALL(cuMemcpyHtoD, s->x, j->x, xb)))
            return rc;
        break;
    }
    default:
        name = lin ? "gos_place_chase_lin" : "gos_place_chase_map";
        args = a_chase;
        if (d->info.sm_count > GOS_PRT_MAX_SMS)
            return gos_fail(GOS_EUNSUPPORTED, "more than %d SMs", GOS_PRT_MAX_SMS);
        break;
    }
    CUfunction f;
    if ((rc = gos_cuda_function(d, "place", name, &f)) || (rc = fill(d, j, lin)))
        return rc;
    for (int r = -1; r < (int)j->repeats && !rc; r++) {
        seed = (unsigned long long)(r + 2) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)j;
        if ((rc = CU_CALL(cuMemsetD32, s->ctr, 0, 2 * GOS_PJOB_MAX_PASSES)) ||
            (rc = CU_CALL(cuMemsetD32, s->runs, 0, nt)) ||
            (rc = CU_CALL(cuMemsetD32, s->owner, 0xffffffffu, nt)) ||
            (rc = CU_CALL(cuEventRecord, s->e0, NULL)) ||
            (rc = gos_cuda_launch(f, grid, BLOCK, 1, smem, NULL, args)) ||
            (rc = CU_CALL(cuEventRecord, s->e1, NULL)) || (rc = CU_CALL(cuEventSynchronize, s->e1)))
            break;
        float ms = 0;
        if ((rc = CU_CALL(cuEventElapsedTime, &ms, s->e0, s->e1)))
            break;
        if (r >= 0)
            j->ms[r] = ms;
    }
    if (!rc && j->owner)
        rc = CU_CALL(cuMemcpyDtoH, j->owner, s->owner, j->rt.n_tasks * 4ull);
    if (!rc && j->runs)
        rc = CU_CALL(cuMemcpyDtoH, j->runs, s->runs, j->rt.n_tasks * 4ull);
    if (!rc && j->y && ybytes)
        rc = CU_CALL(cuMemcpyDtoH, j->y, s->y, ybytes);
    return rc;
}

const struct gos_place_ops gos_cuda_place_ops = {
    .close = place_close,
    .copy_units = cuda_copy_units,
    .run = cuda_run,
};
