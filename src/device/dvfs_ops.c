/* SPDX-License-Identifier: Apache-2.0 */
/* dvfs_ops.c: the checked wrappers of device/dvfs_ops.h (pillar 1c). */
#include "device/dvfs_ops.h"

#include "common/status.h"

#define DVFS(d) ((d)->ops->dvfs)
#define HAS(d, op) (DVFS(d) && DVFS(d)->op)

int gos_dvfs_check(gos_device *d)
{
    if (!HAS(d, host_now) || !HAS(d, host_sleep) || !HAS(d, workload_start) || !HAS(d, workload_wait) ||
        !HAS(d, timer_exchange) || !HAS(d, status))
        return gos_fail(GOS_EUNSUPPORTED, "the %s device has no frequency-switching primitives", d->ops->name);
    return GOS_OK;
}

int gos_dvfs_clock_permission(const gos_device *d, int allowed)
{
    if ((d->info.caps & GOS_CAP_SYSTEM_CLOCKS) && !allowed)
        return gos_fail(GOS_EPERM, "refusing to change the SM clocks of %s without --allow-clock-changes "
                                   "(a system-wide setting)", d->info.name);
    return GOS_OK;
}

int64_t gos_dvfs_host_now(gos_device *d)
{
    if (!HAS(d, host_now)) {
        gos_dev_missing(d, "a host clock");
        return 0;
    }
    return DVFS(d)->host_now(d);
}

int gos_dvfs_host_sleep(gos_device *d, int64_t ns)
{
    if (!HAS(d, host_sleep))
        return gos_dev_missing(d, "host sleeps");
    return DVFS(d)->host_sleep(d, ns < 0 ? 0 : ns);
}

int gos_dvfs_workload_start(gos_device *d, const gos_dvfs_workload *w)
{
    if (!HAS(d, workload_start))
        return gos_dev_missing(d, "the timing workload");
    if (w->iters < 1 || w->work < 1 || w->n_record < 1 || w->n_record > d->info.sm_count)
        return gos_fail(GOS_EINVAL, "bad workload (iters %d, work %d, %d SMs recorded)", w->iters,
                        w->work, w->n_record);
    for (int i = 0; i < w->n_record; i++)
        if (w->record_sms[i] < 0 || w->record_sms[i] >= d->info.sm_count)
            return gos_fail(GOS_EINVAL, "SM %d out of range 0..%d", w->record_sms[i], d->info.sm_count - 1);
    return DVFS(d)->workload_start(d, w);
}

int gos_dvfs_workload_wait(gos_device *d, gos_dvfs_trace *tr)
{
    if (!HAS(d, workload_wait))
        return gos_dev_missing(d, "the timing workload");
    return DVFS(d)->workload_wait(d, tr);
}

int gos_dvfs_timer_exchange(gos_device *d, int n, int64_t *host_before, int64_t *gpu, int64_t *host_after)
{
    if (!HAS(d, timer_exchange))
        return gos_dev_missing(d, "CPU-GPU timer exchanges");
    if (n < 1)
        return gos_fail(GOS_EINVAL, "at least one timer exchange");
    return DVFS(d)->timer_exchange(d, n, host_before, gpu, host_after);
}

int gos_dvfs_set_clock(gos_device *d, int mhz)
{
    if (!HAS(d, set_clock))
        return gos_dev_missing(d, "setting SM clocks");
    if (mhz <= 0)
        return gos_fail(GOS_EINVAL, "SM clock of %d MHz", mhz);
    return DVFS(d)->set_clock(d, mhz);
}

int gos_dvfs_reset_clock(gos_device *d)
{
    if (!HAS(d, reset_clock))
        return gos_dev_missing(d, "resetting the SM clock");
    return DVFS(d)->reset_clock(d);
}

int gos_dvfs_read_status(gos_device *d, gos_dvfs_status *st)
{
    if (!HAS(d, status))
        return gos_dev_missing(d, "clock and throttle status");
    return DVFS(d)->status(d, st);
}
