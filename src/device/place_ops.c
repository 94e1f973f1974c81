/* SPDX-License-Identifier: Apache-2.0 */
/* place_ops.c: the checked wrappers of device/place_ops.h. A backend without the
 * placement primitives answers GOS_EUNSUPPORTED with a message; arguments are
 * range-checked here once so the backends can trust them. */
#include "device/place_ops.h"

#include "common/status.h"

#define PLACE(d) ((d)->ops->place)
#define MISSING(d, what) gos_dev_missing(d, what)

int gos_place_copy_units(gos_device *d, int to_device, const uint64_t *addr, uint64_t n,
                         uint32_t unit, void *host)
{
    if (!PLACE(d) || !PLACE(d)->copy_units)
        return MISSING(d, "scattered copies");
    if (n == 0)
        return GOS_OK;
    if (!addr || !host || unit == 0)
        return gos_fail(GOS_EINVAL, "scattered copy: no addresses, no host buffer or unit 0");
    return PLACE(d)->copy_units(d, to_device, addr, n, unit, host);
}

static int check_view(const gos_pmem_view *v, int p)
{
    if (v->part == GOS_PMEM_LINEAR)
        return v->base ? GOS_OK : gos_fail(GOS_EINVAL, "job: view %d has no memory", p);
    if (v->part > 1 || !v->base || !v->parity || !(v->mask & 0x1fffffu) ||
        !(v->mask >> v->shift & 1) || (v->mask & ((1u << v->shift) - 1)))
        return gos_fail(GOS_EINVAL, "job: view %d is not a partition view", p);
    return GOS_OK;
}

int gos_place_run(gos_device *d, struct gos_place_job *j)
{
    if (!PLACE(d) || !PLACE(d)->run)
        return MISSING(d, "the partition-aware runtime");
    if (j->kind < GOS_PJOB_TASKS || j->kind > GOS_PJOB_CHASE)
        return gos_fail(GOS_EINVAL, "job: unknown kind %d", j->kind);
    if (j->repeats < 1 || j->repeats > GOS_PJOB_MAX_REPEATS)
        return gos_fail(GOS_EINVAL, "job: repeats %u outside 1..%d", j->repeats, GOS_PJOB_MAX_REPEATS);
    const gos_prt_table *t = &j->rt;
    if (t->first[0] != 0 || t->first[1] != t->count[0] || t->count[0] + t->count[1] != t->n_tasks)
        return gos_fail(GOS_EINVAL, "job: the queues do not cover tasks 0..%u once", t->n_tasks);
    for (int s = 0; s < GOS_PRT_MAX_SMS; s++) /* the jobs' counters and views are a pair */
        if (t->part_of_sm[s] > 1)
            return gos_fail(GOS_EUNSUPPORTED, "job: SM %d works for partition %d; the runtime's jobs run "
                                              "two partitions only", s, t->part_of_sm[s]);
    uint32_t n[2];
    gos_prt_sm_counts(t, n);
    for (int s = d->info.sm_count; s < GOS_PRT_MAX_SMS; s++)
        if (t->part_of_sm[s] >= 0)
            return gos_fail(GOS_EINVAL, "job: SM %d does not exist (the device has %d)", s,
                            d->info.sm_count);
    for (int p = 0; p < 2; p++)
        if (t->count[p] && !n[p])
            return gos_fail(GOS_EINVAL, "job: partition %d has %u tasks but no working SM", p,
                            t->count[p]);
    if (j->kind == GOS_PJOB_TASKS)
        return PLACE(d)->run(d, j);
    for (int p = 0; p < 2; p++) {
        if (!n[p])
            continue;
        int rc = check_view(&j->view[p], p);
        if (rc)
            return rc;
    }
    if (j->kind == GOS_PJOB_READ) {
        if (!j->task_bytes || j->task_bytes % 4096 || j->passes < 1 || j->passes > GOS_PJOB_MAX_PASSES)
            return gos_fail(GOS_EINVAL, "job: READ needs task_bytes a multiple of 4 KB and passes 1..%d",
                            GOS_PJOB_MAX_PASSES);
        for (int p = 0; p < 2; p++)
            if (t->count[p] && (uint64_t)t->count[p] * j->task_bytes > j->view[p].bytes)
                return gos_fail(GOS_EINVAL, "job: partition %d's tasks need %llu bytes, its view has %llu",
                                p, (unsigned long long)t->count[p] * j->task_bytes,
                                (unsigned long long)j->view[p].bytes);
    } else if (j->kind == GOS_PJOB_GEMV) {
        if (!j->cols || j->cols % 128 || !j->batch || j->batch > GOS_PJOB_MAX_BATCH ||
            !j->rows_per_task || !j->x)
            return gos_fail(GOS_EINVAL, "job: GEMV needs cols a multiple of 128, batch 1..%d, "
                                        "rows_per_task >= 1 and x", GOS_PJOB_MAX_BATCH);
        uint64_t task = (uint64_t)j->rows_per_task * j->cols * 4;
        for (int p = 0; p < 2; p++)
            if (t->count[p] && t->count[p] * task > j->view[p].bytes)
                return gos_fail(GOS_EINVAL, "job: partition %d's rows need %llu bytes, its view has %llu",
                                p, (unsigned long long)(t->count[p] * task),
                                (unsigned long long)j->view[p].bytes);
    } else {
        if (j->n_nodes < 2 || (j->n_nodes & (j->n_nodes - 1)) || !j->steps)
            return gos_fail(GOS_EINVAL, "job: CHASE needs a power-of-two node count >= 2 and steps");
        for (int p = 0; p < 2; p++)
            if (n[p] && j->n_nodes * 128 > j->view[p].bytes)
                return gos_fail(GOS_EINVAL, "job: %llu chase nodes do not fit view %d",
                                (unsigned long long)j->n_nodes, p);
    }
    return PLACE(d)->run(d, j);
}

int gos_place_truth(gos_device *d, const uint64_t *addr, uint64_t n, int ref_sm, uint8_t *out)
{
    if (!PLACE(d) || !PLACE(d)->truth)
        return MISSING(d, "the truth of where memory lives");
    if (n && (!addr || !out))
        return gos_fail(GOS_EINVAL, "truth: no addresses or no output");
    if (ref_sm < 0 || ref_sm >= d->info.sm_count)
        return gos_fail(GOS_EINVAL, "truth: SM %d does not exist (the device has %d)", ref_sm, d->info.sm_count);
    return n ? PLACE(d)->truth(d, addr, n, ref_sm, out) : GOS_OK;
}
