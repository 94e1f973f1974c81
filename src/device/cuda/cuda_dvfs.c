/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_dvfs.c: the real GPU's frequency-switching primitives (dvfs_ops.h):
 * kernels/dvfs.cu for the timing workload and the timer exchange, NVML for the
 * locked SM clock, clocks-event reasons, temperature and power. NVML entry
 * points are declared here (no vendor header) and fetched with gos_nvml_sym.
 *
 * The timing workload is launched with one block per SM (the largest dynamic
 * shared memory a block may have keeps a second block off every SM) on a
 * stream of its own, so the host can sleep and request a clock change while it
 * runs. The timer exchange polls mapped host memory: one PCIe round trip per
 * exchange, a few microseconds, instead of a launch and a synchronisation. */
#include "device/cuda/cuda_internal.h"
#include "device/dvfs_ops.h"
#include "device/cuda/nvml.h"

#include "common/clock.h"
#include "common/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EXCHANGES 4096
#define EXCHANGE_TIMEOUT_NS 2000000000LL

typedef nvmlReturn_t (*nvml_set_locked_fn)(nvmlDevice_t, unsigned, unsigned);
typedef nvmlReturn_t (*nvml_reset_locked_fn)(nvmlDevice_t);
typedef nvmlReturn_t (*nvml_clock_fn)(nvmlDevice_t, int, unsigned *);
typedef nvmlReturn_t (*nvml_u64_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvml_temp_fn)(nvmlDevice_t, int, unsigned *);
typedef nvmlReturn_t (*nvml_u32_fn)(nvmlDevice_t, unsigned *);

struct cuda_dvfs {
    CUfunction fn_work, fn_sync;
    CUstream stream;
    CUdeviceptr d_start, d_end, d_slot, d_claimed, d_sink;
    size_t cap; /* bytes of d_start and of d_end */
    void *h_map; /* mapped host memory: cmd at 0, replies at 64 */
    CUdeviceptr d_map;
    int running;
    int iters, n_record;
    int rec[256];
    int have_nvml;
    nvmlDevice_t nvml;
};

static int64_t now_ns(void) { return (int64_t)gos_now_ns(); }

static void dvfs_close(gos_device *d)
{
    struct cuda_dvfs *s = d->dvfs_priv;
    if (!s)
        return;
    if (s->running && s->stream)
        CU_CALL(cuStreamSynchronize, s->stream);
    CUdeviceptr ptrs[] = {s->d_start, s->d_end, s->d_slot, s->d_claimed, s->d_sink};
    gos_cuda_free_ptrs(ptrs, sizeof ptrs / sizeof ptrs[0]);
    if (s->h_map)
        CU_CALL(cuMemFreeHost, s->h_map);
    if (s->stream)
        CU_CALL(cuStreamDestroy, s->stream);
    free(s);
    d->dvfs_priv = NULL;
}

static int state(gos_device *d, struct cuda_dvfs **out)
{
    int fresh, rc = gos_cuda_pillar_state(d, &d->dvfs_priv, sizeof(struct cuda_dvfs), &fresh);
    struct cuda_dvfs *s = d->dvfs_priv;
    if (rc || !fresh) {
        *out = s;
        return rc;
    }
    if ((rc = gos_cuda_function(d, "dvfs", "gos_dvfs_workload", &s->fn_work)) ||
        (rc = gos_cuda_function(d, "dvfs", "gos_dvfs_timesync", &s->fn_sync)) ||
        (rc = CU_CALL(cuStreamCreate, &s->stream, CU_STREAM_NON_BLOCKING)) ||
        (rc = CU_CALL(cuMemAlloc, &s->d_slot, 256 * sizeof(int))) ||
        (rc = CU_CALL(cuMemAlloc, &s->d_claimed, 256 * sizeof(int))) ||
        (rc = CU_CALL(cuMemAlloc, &s->d_sink, 64)) ||
        (rc = CU_CALL(cuMemHostAlloc, &s->h_map, 64 + MAX_EXCHANGES * 8,
                      CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)) ||
        (rc = CU_CALL(cuMemHostGetDevicePointer, &s->d_map, s->h_map, 0))) {
        dvfs_close(d);
        return rc;
    }
    s->have_nvml = gos_nvml_device(d->info.uuid, &s->nvml) == GOS_OK;
    *out = s;
    return GOS_OK;
}

static int64_t cuda_host_now(gos_device *d) { return now_ns(); }

static int cuda_host_sleep(gos_device *d, int64_t ns)
{
    if (ns <= 0)
        return GOS_OK;
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    nanosleep(&ts, NULL); /* EINTR: a signal; the caller checks for it */
    return GOS_OK;
}

static int cuda_workload_start(gos_device *d, const gos_dvfs_workload *w)
{
    struct cuda_dvfs *s;
    int rc = state(d, &s);
    if (rc)
        return rc;
    if (s->running)
        return gos_fail(GOS_EBUSY, "a timing workload is already running");
    /* iters, work and the SM range were checked by gos_dvfs_workload_start */
    if (w->n_record > 256)
        return gos_fail(GOS_EINVAL, "at most 256 recorded SMs (%d)", w->n_record);
    int slot_of_sm[256];
    for (int i = 0; i < 256; i++)
        slot_of_sm[i] = -1;
    for (int i = 0; i < w->n_record; i++) {
        int sm = w->record_sms[i];
        if (sm < 0 || sm >= d->info.sm_count || sm >= 256 || slot_of_sm[sm] >= 0)
            return gos_fail(GOS_EINVAL, "recorded SM %d out of range or listed twice", sm);
        slot_of_sm[sm] = i;
        s->rec[i] = sm;
    }
    size_t need = (size_t)w->n_record * (size_t)w->iters * sizeof(unsigned long long);
    if (need > s->cap) {
        if (s->d_start)
            CU_CALL(cuMemFree, s->d_start);
        if (s->d_end)
            CU_CALL(cuMemFree, s->d_end);
        s->d_start = s->d_end = 0;
        s->cap = 0;
        if ((rc = CU_CALL(cuMemAlloc, &s->d_start, need)) || (rc = CU_CALL(cuMemAlloc, &s->d_end, need)))
            return rc;
        s->cap = need;
    }
    if ((rc = CU_CALL(cuMemcpyHtoD, s->d_slot, slot_of_sm, sizeof slot_of_sm)) ||
        (rc = CU_CALL(cuMemsetD32, s->d_claimed, 0, 256)))
        return rc;
    int iters = w->iters, work = w->work;
    void *params[] = {&s->d_start, &s->d_end, &s->d_slot, &s->d_claimed, &iters, &work, &s->d_sink};
    /* more than half an SM's shared memory: one block per SM (a little is left
     * for the kernel's static shared variable) */
    unsigned smem = d->info.max_smem_per_block_optin > 2048 ? (unsigned)d->info.max_smem_per_block_optin - 1024 : 0;
    if ((rc = gos_cuda_launch(s->fn_work, (unsigned)d->info.sm_count, 128, 1, smem, s->stream, params)))
        return rc;
    s->running = 1;
    s->iters = w->iters;
    s->n_record = w->n_record;
    return GOS_OK;
}

static int cuda_workload_wait(gos_device *d, gos_dvfs_trace *tr)
{
    struct cuda_dvfs *s;
    int rc = state(d, &s);
    if (rc)
        return rc;
    if (!s->running)
        return gos_fail(GOS_EINVAL, "no timing workload is running");
    s->running = 0;
    if ((rc = CU_CALL(cuStreamSynchronize, s->stream)))
        return rc;
    int claimed[256];
    if ((rc = CU_CALL(cuMemcpyDtoH, claimed, s->d_claimed, 256 * sizeof(int))))
        return rc;
    for (int i = 0; i < s->n_record; i++)
        if (!claimed[i])
            return gos_fail(GOS_EDEVICE, "no block of the timing workload ran on SM %d", s->rec[i]);
    if ((rc = gos_dvfs_trace_alloc(tr, s->n_record, (size_t)s->iters)))
        return rc;
    size_t bytes = (size_t)s->n_record * (size_t)s->iters * sizeof(int64_t);
    if ((rc = CU_CALL(cuMemcpyDtoH, tr->start_ns, s->d_start, bytes)) ||
        (rc = CU_CALL(cuMemcpyDtoH, tr->end_ns, s->d_end, bytes))) {
        gos_dvfs_trace_free(tr);
        return rc;
    }
    for (int i = 0; i < s->n_record; i++)
        tr->sm[i] = s->rec[i];
    return GOS_OK;
}

static int cuda_timer_exchange(gos_device *d, int n, int64_t *hb, int64_t *gpu, int64_t *ha)
{
    struct cuda_dvfs *s;
    int rc = state(d, &s);
    if (rc)
        return rc;
    if (s->running)
        return gos_fail(GOS_EBUSY, "timer exchange while the timing workload runs");
    if (n < 1 || n > MAX_EXCHANGES)
        return gos_fail(GOS_EINVAL, "1..%d timer exchanges", MAX_EXCHANGES);
    volatile unsigned *cmd = (volatile unsigned *)s->h_map;
    volatile unsigned long long *reply = (volatile unsigned long long *)((char *)s->h_map + 64);
    *cmd = 0;
    for (int i = 0; i < n; i++)
        reply[i] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    CUdeviceptr d_cmd = s->d_map, d_reply = s->d_map + 64;
    unsigned long long timeout = EXCHANGE_TIMEOUT_NS;
    void *params[] = {&d_cmd, &d_reply, &n, &timeout};
    if ((rc = gos_cuda_launch(s->fn_sync, 1, 32, 1, 0, s->stream, params)))
        return rc;
    for (int i = 0; i < n && !rc; i++) {
        hb[i] = now_ns();
        __atomic_store_n((unsigned *)cmd, (unsigned)(i + 1), __ATOMIC_SEQ_CST);
        unsigned long long v;
        long spins = 0;
        while ((v = reply[i]) == 0) {
            if (++spins % 4096 == 0 && now_ns() - hb[i] > EXCHANGE_TIMEOUT_NS) {
                rc = gos_fail(GOS_ETIMEDOUT, "timer exchange %d: no answer from the GPU within 2 s", i);
                break;
            }
        }
        ha[i] = now_ns();
        gpu[i] = (int64_t)v;
    }
    int rc2 = CU_CALL(cuStreamSynchronize, s->stream);
    return rc ? rc : rc2;
}

/* Locks the SM clock at mhz (min = max), or resets the locked clocks (mhz 0). */
static int nvml_locked_clocks(gos_device *d, int mhz)
{
    const char *sym = mhz ? "nvmlDeviceSetGpuLockedClocks" : "nvmlDeviceResetGpuLockedClocks";
    struct cuda_dvfs *s;
    int rc = state(d, &s);
    if (rc)
        return rc;
    if (!s->have_nvml)
        return gos_fail(GOS_EUNSUPPORTED, "NVML is not available: cannot %s SM clocks", mhz ? "lock" : "reset");
    void *f = gos_nvml_sym(sym);
    if (!f)
        return gos_fail(GOS_EUNSUPPORTED, "NVML lacks %s", sym);
    nvmlReturn_t r = mhz ? ((nvml_set_locked_fn)f)(s->nvml, (unsigned)mhz, (unsigned)mhz)
                         : ((nvml_reset_locked_fn)f)(s->nvml);
    return gos_nvml_check(r, sym);
}

static int cuda_set_clock(gos_device *d, int mhz) { return nvml_locked_clocks(d, mhz); }

static int cuda_reset_clock(gos_device *d) { return nvml_locked_clocks(d, 0); }

static int cuda_status(gos_device *d, gos_dvfs_status *st)
{
    struct cuda_dvfs *s;
    int rc = state(d, &s);
    memset(st, 0, sizeof *st);
    if (rc)
        return rc;
    if (!s->have_nvml)
        return GOS_OK; /* every group stays "not answered" */
    nvml_clock_fn clk = (nvml_clock_fn)gos_nvml_sym("nvmlDeviceGetClockInfo");
    unsigned v = 0;
    if (clk && clk(s->nvml, GOS_NVML_CLOCK_SM, &v) == GOS_NVML_SUCCESS) {
        st->has_clock = 1;
        st->sm_clock_mhz = (int)v;
    }
    nvml_u64_fn reasons = (nvml_u64_fn)gos_nvml_sym("nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons)
        reasons = (nvml_u64_fn)gos_nvml_sym("nvmlDeviceGetCurrentClocksThrottleReasons");
    unsigned long long r = 0;
    if (reasons && reasons(s->nvml, &r) == GOS_NVML_SUCCESS) {
        st->has_reasons = 1;
        st->reasons = r;
    }
    nvml_temp_fn temp = (nvml_temp_fn)gos_nvml_sym("nvmlDeviceGetTemperature");
    if (temp && temp(s->nvml, 0 /* NVML_TEMPERATURE_GPU */, &v) == GOS_NVML_SUCCESS) {
        st->has_temp = 1;
        st->temp_c = (int)v;
    }
    nvml_u32_fn power = (nvml_u32_fn)gos_nvml_sym("nvmlDeviceGetPowerUsage");
    if (power && power(s->nvml, &v) == GOS_NVML_SUCCESS) {
        st->has_power = 1;
        st->power_w = v / 1000.0;
    }
    return GOS_OK;
}

const struct gos_dvfs_ops gos_cuda_dvfs_ops = {
    .close = dvfs_close,
    .host_now = cuda_host_now,
    .host_sleep = cuda_host_sleep,
    .workload_start = cuda_workload_start,
    .workload_wait = cuda_workload_wait,
    .timer_exchange = cuda_timer_exchange,
    .set_clock = cuda_set_clock,
    .reset_clock = cuda_reset_clock,
    .status = cuda_status,
};
