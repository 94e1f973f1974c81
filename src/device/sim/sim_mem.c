/* SPDX-License-Identifier: Apache-2.0 */
/* sim_mem.c: the pillar-1b primitives on the simulated device (mem_ops.h). The
 * chip's numa.hash.physical_bits are known only to a simulated chip; each 2 MB
 * virtual page maps to a random (seeded) physical 2 MB frame, so the hash bits
 * above bit 20 behave as on real hardware (docs/readme-numa.md).
 *
 * N partitions (gpuos.chip/2): the home partition of a physical address is its
 * hash code (numa.hash.parities, one bit per parity, 2^k partitions); the HBM
 * latency from an SM of partition a to memory of partition b is the cycles of
 * the tier gos_chip_tier_of(a, b) gives (numa.tiers: by partition pairs, or by
 * relation: same partition, another partition of the same die (numa.dies),
 * another die), L2 hits the tier's l2_cycles (0.6 x its cycles when absent).
 * A chip without tiers uses latency_cycles (local / remote) as before.
 *
 * Truth comes from the chip (d->chip): numa.partitions (SM -> partition; SMs in
 * none count as partition 0), the hash bits numa.hash.physical_bits plus
 * in_page_bits, latency_cycles (the paper's H200 values when absent), and the
 * optional "sim": {"mem": {...}} parameters of default_sim_mem() (every one has a
 * default, so chip files without them work):
 *
 *   hbm_gbps_per_partition  HBM read bandwidth behind one partition     (2245)
 *   fabric_gbps             LTC fabric, each direction (the remote gap) (1274)
 *   sm_hbm_gbps             what one SM can pull from HBM                 (40)
 *   l2_gbps                 whole-chip L2-hit bandwidth                 (8000)
 *   l2_effective_fraction_shared   effective L2 / physical L2 when every SM
 *                           reads the whole working set (paper 001: 0.658)
 *   l2_effective_fraction_private  the same when each page keeps one reader
 *                           (1.0, as measured on our H200)
 *   replicate               remote lines are copied into the local L2   (true)
 *   outlier_rate            latency samples in the slow tail            (0.05)
 *   near_split_cycles       the near tier (an SM's own partition) in two
 *                           sub-peaks this far apart, half the lines each
 *                           by a hash of the line address, as on a lent
 *                           H100 (issue 44: 25 cycles)                    (0)
 *   noisy_latency_calls     the first this many HBM latency batches are a
 *                           blur (jitter 0.25, as while another tenant
 *                           hammers the memory): a first try that is
 *                           ambiguous, so that the retry is tested        (0)
 *
 * The defaults are our H200's measurements (results/GPU-ed40b8f5-...): a slow
 * tail of about 5-7 % of HBM samples 100..700 cycles above their tier.
 *
 * Model. Each 2 MB page of an allocation is backed by a random free physical
 * 2 MB frame (seeded from sim.seed), so physical bits above 20 differ from page
 * to page as on hardware. The home partition of a physical address is the parity
 * of its physical hash bits (two partitions; one partition makes everything
 * local; more need numa.hash.parities). Latencies are the chip's local/remote values times
 * gos_sim_noise(), plus rare upward outliers. Bandwidths follow the bottleneck
 * of the traffic (HBM behind each partition, the fabric, the SMs' issue rate)
 * and a steep L2 cliff at the effective capacity. */
#include "device/mem_ops.h"

#include "chip/chip.h"
#include "common/rng.h"
#include "common/status.h"
#include "device/sim/sim_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIM_VA_BASE 0x7f0000000000ull
#define SIM_RESERVE_FRAMES 128 /* GOS_MEM_ALL leaves 256 MB, as on hardware */
#define SIM_MAX_BUFS 64

/* Streams for gos_sim_rng (one per primitive, see sim_internal.h). */
enum { ST_FRAMES = 0x1b00, ST_LAT = 0x1b01, ST_SWEEP = 0x1b02, ST_BW = 0x1b03 };

typedef struct {
    gos_mem_buf pub;
    uint32_t *frame; /* physical frame of each 2 MB page */
    uint64_t n_pages;
} sim_buf;

typedef struct {
    uint64_t phys_mask; /* physical hash bits */
    const gos_chip *chip;
    int n_parts;        /* 1, 2 (one parity) or 2^k (k parities) */
    int part_of[GOS_MAX_SMS];
    double hbm_local, hbm_remote, l2_local, l2_remote;
    double hbm[GOS_MAX_PARTS][GOS_MAX_PARTS], l2[GOS_MAX_PARTS][GOS_MAX_PARTS]; /* [SM's][home] */
    double hbm_part_gbps, fabric_gbps, sm_hbm_gbps, l2_gbps, l2_eff_shared, l2_eff_private,
        outlier_rate, near_split;
    int replicate;
    int noisy_calls; /* HBM latency batches still to blur */
    uint32_t *free_frames; /* stack of free frames, shuffled */
    uint64_t n_free, n_frames;
    uint64_t next_va;
    sim_buf *bufs[SIM_MAX_BUFS];
    gos_rng lat_rng, sweep_rng, bw_rng;
} sim_mem;

static double json_num(json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static void sim_mem_close(gos_device *d)
{
    sim_mem *m = d->mem_priv;
    if (!m)
        return;
    for (int i = 0; i < SIM_MAX_BUFS; i++)
        if (m->bufs[i]) {
            free(m->bufs[i]->frame);
            free(m->bufs[i]);
        }
    free(m->free_frames);
    free(m);
    d->mem_priv = NULL;
}

/* Builds the model from the chip on first use. */
static int sim_mem_get(gos_device *d, sim_mem **out)
{
    if (d->mem_priv) {
        *out = d->mem_priv;
        return GOS_OK;
    }
    const gos_chip *c = d->chip;
    if (!c)
        return gos_fail(GOS_EINVAL, "simulated device without a chip");
    if (c->n_parts > 2 && c->n_parities < 2)
        return gos_fail(GOS_EUNSUPPORTED,
                        "simulated memory model: %d partitions; only 1 or 2 (one XOR parity), or 2^k "
                        "with numa.hash.parities, are modelled",
                        c->n_parts);
    sim_mem *m = calloc(1, sizeof *m);
    if (!m)
        return gos_fail(GOS_ENOMEM, "out of memory");
    m->n_parts = c->n_parts >= 2 ? c->n_parts : 1;
    m->chip = c;
    for (int p = 0; p < c->n_parts; p++)
        for (int i = 0; i < c->parts[p].n_sms; i++)
            m->part_of[c->parts[p].sms[i]] = p;
    /* The hash: physical_bits together with in_page_bits (a chip may list the
     * in-page bits in both, as the built-in chip does, or only the bits above the
     * page in physical_bits). */
    for (int i = 0; i < c->n_physical_bits; i++)
        m->phys_mask |= 1ull << c->physical_bits[i];
    for (int i = 0; i < c->n_in_page_bits; i++)
        m->phys_mask |= 1ull << c->in_page_bits[i];
    m->hbm_local = c->has_latency ? c->lat_hbm_local : 490;
    m->hbm_remote = c->has_latency ? c->lat_hbm_remote : 655;
    m->l2_local = c->has_latency ? c->lat_l2_local : 309;
    m->l2_remote = c->has_latency ? c->lat_l2_remote : 466;
    for (int a = 0; a < m->n_parts; a++)
        for (int b = 0; b < m->n_parts; b++) {
            int t = c->n_tiers ? gos_chip_tier_of(c, a, b) : -1;
            if (c->n_tiers && t < 0) {
                free(m);
                return gos_fail(GOS_EINVAL, "chip numa.tiers: no tier for SMs of partition %d on memory of "
                                            "partition %d", a, b);
            }
            if (t >= 0) {
                m->hbm[a][b] = c->tiers[t].cycles;
                m->l2[a][b] = c->tiers[t].l2_cycles > 0 ? c->tiers[t].l2_cycles : 0.6 * c->tiers[t].cycles;
            } else {
                m->hbm[a][b] = a == b ? m->hbm_local : m->hbm_remote;
                m->l2[a][b] = a == b ? m->l2_local : m->l2_remote;
            }
        }
    if (c->n_tiers) {
        m->hbm_local = m->hbm[0][0], m->l2_local = m->l2[0][0];
        m->hbm_remote = m->hbm[0][m->n_parts - 1], m->l2_remote = m->l2[0][m->n_parts - 1];
    }
    json_t *sm = json_object_get(json_object_get(c->json, "sim"), "mem");
    m->hbm_part_gbps = json_num(sm, "hbm_gbps_per_partition", 2245);
    m->fabric_gbps = json_num(sm, "fabric_gbps", 1274);
    m->sm_hbm_gbps = json_num(sm, "sm_hbm_gbps", 40);
    m->l2_gbps = json_num(sm, "l2_gbps", 8000);
    m->l2_eff_shared = json_num(sm, "l2_effective_fraction_shared", 0.658);
    m->l2_eff_private = json_num(sm, "l2_effective_fraction_private", 1.0);
    m->outlier_rate = json_num(sm, "outlier_rate", 0.05);
    m->near_split = json_num(sm, "near_split_cycles", 0);
    double noisy = json_num(sm, "noisy_latency_calls", 0);
    m->noisy_calls = noisy >= 0 && noisy <= 1000 ? (int)noisy : -1;
    json_t *rep = json_object_get(sm, "replicate");
    m->replicate = rep ? json_is_true(rep) : 1;
    if (m->hbm_part_gbps <= 0 || m->fabric_gbps <= 0 || m->sm_hbm_gbps <= 0 || m->l2_gbps <= 0 ||
        m->l2_eff_shared <= 0 || m->l2_eff_shared > 1 || m->l2_eff_private <= 0 ||
        m->l2_eff_private > 1 || m->outlier_rate < 0 || m->outlier_rate > 0.5 || m->near_split < 0 ||
        m->near_split > 0.5 * m->hbm_local || m->noisy_calls < 0) {
        free(m);
        return gos_fail(GOS_EINVAL, "chip sim.mem: bandwidths must be positive, "
                                    "l2_effective_fraction_* in (0,1], outlier_rate in [0,0.5], "
                                    "near_split_cycles in [0, half the local HBM latency], "
                                    "noisy_latency_calls in [0,1000]");
    }
    m->n_frames = c->device.mem_bytes / GOS_PAGE_2M;
    if (m->n_frames > 0xffffffffull)
        m->n_frames = 0xffffffffull;
    m->free_frames = malloc((m->n_frames ? m->n_frames : 1) * sizeof *m->free_frames);
    if (!m->free_frames) {
        free(m);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    gos_rng r;
    gos_sim_rng(d, &r, ST_FRAMES);
    for (uint64_t i = 0; i < m->n_frames; i++)
        m->free_frames[i] = (uint32_t)i;
    for (uint64_t i = m->n_frames; i > 1; i--) { /* Fisher-Yates */
        uint64_t j = gos_rng_u64(&r) % i;
        uint32_t t = m->free_frames[i - 1];
        m->free_frames[i - 1] = m->free_frames[j];
        m->free_frames[j] = t;
    }
    m->n_free = m->n_frames;
    m->next_va = SIM_VA_BASE;
    gos_sim_rng(d, &m->lat_rng, ST_LAT);
    gos_sim_rng(d, &m->sweep_rng, ST_SWEEP);
    gos_sim_rng(d, &m->bw_rng, ST_BW);
    d->mem_priv = m;
    *out = m;
    return GOS_OK;
}

static int sim_alloc(gos_device *d, uint64_t bytes, gos_mem_buf **out)
{
    sim_mem *m;
    int rc = sim_mem_get(d, &m);
    if (rc)
        return rc;
    uint64_t pages;
    if (bytes == GOS_MEM_ALL)
        pages = m->n_free > SIM_RESERVE_FRAMES ? m->n_free - SIM_RESERVE_FRAMES : 0;
    else
        pages = (bytes + GOS_PAGE_2M - 1) / GOS_PAGE_2M;
    if (pages == 0 || pages > m->n_free)
        return gos_fail(GOS_ENOMEM, "simulated device: cannot allocate %llu MB (%llu MB free)",
                        (unsigned long long)(pages * 2), (unsigned long long)(m->n_free * 2));
    int slot = -1;
    for (int i = 0; i < SIM_MAX_BUFS && slot < 0; i++)
        if (!m->bufs[i])
            slot = i;
    if (slot < 0)
        return gos_fail(GOS_ENOMEM, "simulated device: more than %d live allocations", SIM_MAX_BUFS);
    sim_buf *b = calloc(1, sizeof *b);
    if (!b || !(b->frame = malloc(pages * sizeof *b->frame))) {
        free(b);
        return gos_fail(GOS_ENOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < pages; i++)
        b->frame[i] = m->free_frames[--m->n_free];
    b->n_pages = pages;
    b->pub.base = m->next_va;
    b->pub.bytes = pages * GOS_PAGE_2M;
    b->pub.impl = b;
    m->next_va += b->pub.bytes + GOS_PAGE_2M; /* a guard page between buffers */
    m->bufs[slot] = b;
    *out = &b->pub;
    return GOS_OK;
}

static void sim_free(gos_device *d, gos_mem_buf *pub)
{
    sim_mem *m = d->mem_priv;
    if (!m || !pub)
        return;
    for (int i = 0; i < SIM_MAX_BUFS; i++)
        if (m->bufs[i] && &m->bufs[i]->pub == pub) {
            sim_buf *b = m->bufs[i];
            for (uint64_t k = b->n_pages; k-- > 0;)
                m->free_frames[m->n_free++] = b->frame[k];
            free(b->frame);
            free(b);
            m->bufs[i] = NULL;
            return;
        }
}

/* Home partition of a device address, or -1 if no allocation holds it. */
static int home_of(const sim_mem *m, uint64_t va)
{
    for (int i = 0; i < SIM_MAX_BUFS; i++) {
        const sim_buf *b = m->bufs[i];
        if (b && va >= b->pub.base && va - b->pub.base < b->pub.bytes) {
            uint64_t off = va - b->pub.base;
            uint64_t pa = ((uint64_t)b->frame[off / GOS_PAGE_2M] << 21) | (off & (GOS_PAGE_2M - 1));
            if (m->n_parts > 2)
                return gos_chip_hash_code(m->chip, pa);
            return m->n_parts == 2 ? __builtin_parityll(pa & m->phys_mask) : 0;
        }
    }
    return -1;
}

/* HBM cycles from an SM of partition p to the line at va of partition h: the
 * tier's, and in the near tier with near_split_cycles half a split below or
 * above by a hash of the line (the same line always in the same sub-peak). */
static double hbm_base(const sim_mem *m, int p, int h, uint64_t va)
{
    if (p != h || m->near_split <= 0)
        return m->hbm[p][h];
    uint64_t x = (va >> 7) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31;
    return m->hbm[p][h] + ((x >> 17 & 1) ? 0.5 : -0.5) * m->near_split;
}

static double sample(gos_device *d, sim_mem *m, gos_rng *r, double base)
{
    double v = base * gos_sim_noise(d, r);
    if (gos_rng_uniform(r) < m->outlier_rate)
        v += 100 + 600 * gos_rng_uniform(r);
    return v;
}

static uint32_t cyc(double v) { return v < 1 ? 1 : v > 1e9 ? 1000000000u : (uint32_t)lround(v); }

static int check_sm(const gos_device *d, int sm)
{
    if (sm < 0 || sm >= d->info.sm_count)
        return gos_fail(GOS_EINVAL, "SM %d out of range 0..%d", sm, d->info.sm_count - 1);
    return GOS_OK;
}

static int sim_latency(gos_device *d, int mode, int sm, int other, const uint64_t *addrs, int n,
                       uint32_t *cycles)
{
    sim_mem *m;
    int rc = sim_mem_get(d, &m);
    if (rc || (rc = check_sm(d, sm)) || (mode != GOS_LAT_HBM && (rc = check_sm(d, other))))
        return rc;
    int ps = m->n_parts >= 2 ? m->part_of[sm] : 0, po = m->n_parts >= 2 ? m->part_of[other] : 0;
    int noisy = mode == GOS_LAT_HBM && m->noisy_calls > 0;
    m->noisy_calls -= noisy;
    for (int i = 0; i < n; i++) {
        int h = home_of(m, addrs[i]);
        if (h < 0)
            return gos_fail(GOS_EINVAL, "address 0x%llx is not in a device allocation",
                            (unsigned long long)addrs[i]);
        double base;
        if (mode == GOS_LAT_HBM) {
            base = hbm_base(m, ps, h, addrs[i]);
        } else if (mode == GOS_LAT_L2) {
            /* `other` left the line in its home L2 and, if remote to it, a replica
             * in its own partition. */
            int local_copy = h == ps || (m->replicate && po == ps);
            base = local_copy ? m->l2[ps][ps] : m->l2[ps][h];
        } else {
            /* sm loaded (home copy + replica in ps if remote), other discarded the
             * home copy only; the reload finds the replica or goes to HBM. */
            if (h == ps)
                base = hbm_base(m, ps, ps, addrs[i]);
            else
                base = m->replicate ? m->l2[ps][ps] : m->hbm[ps][h];
        }
        if (noisy)
            cycles[i] = cyc(base * fmax(0.05, 1 + 0.25 * gos_rng_normal(&m->lat_rng)));
        else
            cycles[i] = cyc(sample(d, m, &m->lat_rng, base));
    }
    return GOS_OK;
}

static int sim_latency_multi(gos_device *d, const int *sms, int n_sms, const uint64_t *addrs,
                             int per_sm, uint32_t *cycles)
{
    for (int k = 0; k < n_sms; k++) {
        int rc = sim_latency(d, GOS_LAT_HBM, sms[k], sms[k], addrs + (size_t)k * per_sm, per_sm,
                             cycles + (size_t)k * per_sm);
        if (rc)
            return rc;
    }
    return GOS_OK;
}

static int sim_sweep(gos_device *d, const int *sms, int n_sms, uint64_t base, uint64_t n,
                     uint64_t stride, int samples, uint32_t *out)
{
    sim_mem *m;
    int rc = sim_mem_get(d, &m);
    if (rc)
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t va = base + gos_sweep_offset(i, stride);
        int h = home_of(m, va);
        if (h < 0)
            return gos_fail(GOS_EINVAL, "sweep address 0x%llx is not in a device allocation",
                            (unsigned long long)va);
        /* Work goes in chunks to whichever prober asks: model as round robin. */
        int sm = sms[(i / 64) % (uint64_t)n_sms];
        int p = m->n_parts >= 2 ? m->part_of[sm] : 0;
        double best = 1e30;
        for (int s = 0; s < samples; s++) {
            double v = sample(d, m, &m->sweep_rng, hbm_base(m, p, h, va));
            if (v < best)
                best = v;
        }
        uint32_t c = cyc(best);
        out[i] = (c > 0xffff ? 0xffff : c) | ((uint32_t)sm << 16);
    }
    return GOS_OK;
}

static int sim_read_bw(gos_device *d, const int *sms, int n_sms, const gos_mem_buf *b,
                       const uint32_t *pages, int n_pages, int passes, int shared, double *gbps)
{
    sim_mem *m;
    int rc = sim_mem_get(d, &m);
    if (rc)
        return rc;
    double sm_in[GOS_MAX_PARTS] = {0}, pg_in[GOS_MAX_PARTS] = {0};
    for (int k = 0; k < n_sms; k++) {
        if ((rc = check_sm(d, sms[k])))
            return rc;
        sm_in[m->n_parts >= 2 ? m->part_of[sms[k]] : 0] += 1.0 / n_sms;
    }
    for (int i = 0; i < n_pages; i++) {
        uint64_t off = (uint64_t)pages[i] * 4096;
        if (off >= b->bytes)
            return gos_fail(GOS_EINVAL, "page %u beyond the buffer", pages[i]);
        pg_in[home_of(m, b->base + off)] += 1.0 / n_pages;
    }
    /* Traffic (fractions of the bytes) from SMs of partition a to memory of h. */
    double bytes = 4096.0 * n_pages * passes;
    double to_home[GOS_MAX_PARTS] = {0}, cross[GOS_MAX_PARTS] = {0};
    int np = m->n_parts > 2 ? m->n_parts : 2;
    for (int a = 0; a < np; a++)
        for (int h = 0; h < np; h++) {
            double f = sm_in[a] * pg_in[h];
            to_home[h] += f;
            if (a != h)
                cross[a] += f;
        }
    double t_hbm = bytes / (n_sms * m->sm_hbm_gbps);
    for (int h = 0; h < np; h++) {
        t_hbm = fmax(t_hbm, bytes * to_home[h] / m->hbm_part_gbps);
        t_hbm = fmax(t_hbm, bytes * cross[h] / m->fabric_gbps);
    }
    double l2_rate = fmin(m->l2_gbps, n_sms * d->chip->sim_l2_gbps_per_sm);
    if (l2_rate <= 0)
        l2_rate = m->l2_gbps;
    double ws = 4096.0 * n_pages;
    double cap = (shared ? m->l2_eff_shared : m->l2_eff_private) * (double)d->info.l2_bytes;
    double hit = ws <= cap ? 1.0 : pow(cap / ws, 8);
    double t = hit * bytes / l2_rate + (1 - hit) * t_hbm;
    *gbps = bytes / t * gos_sim_noise(d, &m->bw_rng);
    return GOS_OK;
}

int gos_sim_mem_home(gos_device *d, uint64_t va)
{
    sim_mem *m;
    if (sim_mem_get(d, &m))
        return -1;
    return home_of(m, va);
}

int gos_sim_mem_truth_get(gos_device *d, gos_sim_mem_truth *t)
{
    sim_mem *m;
    int rc = sim_mem_get(d, &m);
    if (rc)
        return rc;
    t->hbm_local = m->hbm_local;
    t->hbm_remote = m->hbm_remote;
    t->hbm_part_gbps = m->hbm_part_gbps;
    t->fabric_gbps = m->fabric_gbps;
    t->sm_hbm_gbps = m->sm_hbm_gbps;
    t->l2_gbps = m->l2_gbps;
    t->n_parts = m->n_parts;
    memcpy(t->part_of, m->part_of, sizeof t->part_of);
    return GOS_OK;
}

const struct gos_mem_ops gos_sim_mem_ops = {
    .close = sim_mem_close,
    .alloc = sim_alloc,
    .free = sim_free,
    .latency = sim_latency,
    .latency_multi = sim_latency_multi,
    .sweep = sim_sweep,
    .read_bw = sim_read_bw,
};
