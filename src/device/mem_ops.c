/* SPDX-License-Identifier: Apache-2.0 */
/* mem_ops.c: the checked wrappers of device/mem_ops.h. A backend without the
 * pillar-1b primitives (d->ops->mem NULL, or one operation NULL) answers
 * GOS_EUNSUPPORTED with a message; arguments are range-checked here once so the
 * backends can trust them. */
#include "device/mem_ops.h"

#include "common/status.h"

#define MEM(d) ((d)->ops->mem)
#define MISSING(d, what) gos_dev_missing(d, what)

static int check_sm(const gos_device *d, int sm)
{
    if (sm < 0 || sm >= d->info.sm_count)
        return gos_fail(GOS_EINVAL, "SM %d out of range 0..%d", sm, d->info.sm_count - 1);
    return GOS_OK;
}

int gos_mem_alloc(gos_device *d, uint64_t bytes, gos_mem_buf **out)
{
    if (!MEM(d) || !MEM(d)->alloc)
        return MISSING(d, "2 MB-page device allocations");
    if (bytes == 0)
        return gos_fail(GOS_EINVAL, "cannot allocate 0 bytes");
    return MEM(d)->alloc(d, bytes, out);
}

void gos_mem_free(gos_device *d, gos_mem_buf *b)
{
    if (b && MEM(d) && MEM(d)->free)
        MEM(d)->free(d, b);
}

int gos_mem_latency(gos_device *d, int mode, int sm, int other, const uint64_t *addrs, int n,
                    uint32_t *cycles)
{
    if (!MEM(d) || !MEM(d)->latency)
        return MISSING(d, "latency probing");
    if (mode < GOS_LAT_HBM || mode > GOS_LAT_REPLICA)
        return gos_fail(GOS_EINVAL, "unknown latency mode %d", mode);
    int rc = check_sm(d, sm);
    if (rc || (mode != GOS_LAT_HBM && (rc = check_sm(d, other))))
        return rc;
    if (n < 0)
        return gos_fail(GOS_EINVAL, "negative address count");
    return n ? MEM(d)->latency(d, mode, sm, other, addrs, n, cycles) : GOS_OK;
}

int gos_mem_latency_multi(gos_device *d, const int *sms, int n_sms, const uint64_t *addrs,
                          int per_sm, uint32_t *cycles)
{
    if (!MEM(d) || !MEM(d)->latency_multi)
        return MISSING(d, "multi-SM latency probing");
    if (n_sms < 1 || per_sm < 1)
        return gos_fail(GOS_EINVAL, "latency probe needs at least one SM and one address");
    for (int k = 0; k < n_sms; k++) {
        int rc = check_sm(d, sms[k]);
        if (rc)
            return rc;
        for (int j = 0; j < k; j++)
            if (sms[j] == sms[k])
                return gos_fail(GOS_EINVAL, "SM %d listed twice", sms[k]);
    }
    return MEM(d)->latency_multi(d, sms, n_sms, addrs, per_sm, cycles);
}

int gos_mem_sweep(gos_device *d, const int *sms, int n_sms, uint64_t base, uint64_t n,
                  uint64_t stride, int samples, uint32_t *out)
{
    if (!MEM(d) || !MEM(d)->sweep)
        return MISSING(d, "latency sweeps");
    if (n_sms < 1)
        return gos_fail(GOS_EINVAL, "sweep needs at least one SM");
    for (int k = 0; k < n_sms; k++) {
        int rc = check_sm(d, sms[k]);
        if (rc)
            return rc;
    }
    if (samples < 1 || samples > 16)
        return gos_fail(GOS_EINVAL, "sweep samples %d outside 1..16", samples);
    if (stride < GOS_LINE || stride % GOS_LINE)
        return gos_fail(GOS_EINVAL, "sweep stride %llu is not a multiple of %u",
                        (unsigned long long)stride, GOS_LINE);
    return n ? MEM(d)->sweep(d, sms, n_sms, base, n, stride, samples, out) : GOS_OK;
}

int gos_mem_read_bw(gos_device *d, const int *sms, int n_sms, const gos_mem_buf *b,
                    const uint32_t *pages, int n_pages, int passes, int shared, double *gbps)
{
    if (!MEM(d) || !MEM(d)->read_bw)
        return MISSING(d, "bandwidth probing");
    if (n_sms < 1 || n_pages < 1 || passes < 1)
        return gos_fail(GOS_EINVAL, "bandwidth probe needs SMs, pages and passes");
    for (int k = 0; k < n_sms; k++) {
        int rc = check_sm(d, sms[k]);
        if (rc)
            return rc;
    }
    return MEM(d)->read_bw(d, sms, n_sms, b, pages, n_pages, passes, shared != 0, gbps);
}
