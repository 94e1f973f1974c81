/* SPDX-License-Identifier: Apache-2.0 */
/* mem_ops.h: the pillar-1b primitives of the device layer (memory asymmetry,
 * paper 001 section 6 and appendix C), one struct of function pointers per
 * backend (gos_cuda_mem_ops in cuda_mem.c, gos_sim_mem_ops in sim_mem.c).
 *
 * Every primitive is batched: one call measures many addresses (one launch on
 * the GPU), so that charting the whole chip fits in seconds and verifying every
 * 4 KB page of the memory fits in a minute. Latencies are SM clock cycles
 * (clock64), bandwidths GB/s (1e9 bytes per second).
 *
 * Callers above the device layer use the gos_mem_* wrappers at the bottom, which
 * turn a missing backend operation into GOS_EUNSUPPORTED. */
#ifndef GOS_MEM_OPS_H
#define GOS_MEM_OPS_H

#include "device/device.h"

#include <stdint.h>

#define GOS_PAGE_2M (2ull << 20)
#define GOS_LINE 128u
/* Latencies are reported as uint32 cycles; this value means "no sample". */
#define GOS_LAT_NONE 0xffffffffu
/* gos_mem_alloc(..., GOS_MEM_ALL, ...): as much device memory as is free. */
#define GOS_MEM_ALL UINT64_MAX

/* A device buffer mapped with 2 MB pages (VMM on the cuda backend). Within one
 * 2 MB page virtual and physical offsets agree; which physical 2 MB frame backs
 * each page is unknown (and random on the simulated device). */
typedef struct gos_mem_buf {
    uint64_t base;  /* device virtual address, 2 MB aligned */
    uint64_t bytes; /* multiple of 2 MB */
    void *impl;     /* backend */
} gos_mem_buf;

/* Latency probe modes (one thread on SM `sm`, per address, in order):
 *   HBM     warm ld.global.cg, discard.global.L2, timed ld.global.cg (C.1);
 *   L2      SM `other` loads every address first (one launch), then `sm` times
 *           one ld.global.cg per address: an L2 hit in the line's home
 *           partition, local or remote to `sm` (C.2);
 *   REPLICA `sm` loads every address, `other` discards them all, `sm` times a
 *           reload: the cross-partition replication test of section 6.2.2. */
enum { GOS_LAT_HBM = 0, GOS_LAT_L2 = 1, GOS_LAT_REPLICA = 2 };

/* The address the sweep probes in unit i: base + i * stride + a pseudo-random
 * 128-byte line of the unit, so that hash bits below the unit size are
 * exercised too. The kernel (kernels/numa.cu) computes the same function. */
static inline uint64_t gos_sweep_offset(uint64_t i, uint64_t stride)
{
    uint64_t lines = stride / GOS_LINE;
    if (lines <= 1)
        return i * stride;
    uint64_t x = i * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return i * stride + (x % lines) * GOS_LINE;
}

struct gos_mem_ops {
    gos_pillar_close_fn close; /* releases d->mem_priv */

    /* Allocates `bytes` rounded up to 2 MB (GOS_MEM_ALL: all free memory less a
     * small reserve), mapped read/write for the device. */
    int (*alloc)(gos_device *d, uint64_t bytes, gos_mem_buf **out);
    void (*free)(gos_device *d, gos_mem_buf *b);

    /* One thread on SM `sm` times addrs[0..n) in `mode` (see above); `other` is
     * the second SM of modes L2 and REPLICA. cycles[i] = GOS_LAT_NONE when the
     * sample could not be taken. */
    int (*latency)(gos_device *d, int mode, int sm, int other, const uint64_t *addrs, int n,
                   uint32_t *cycles);

    /* HBM-mode probes from many SMs at once: SM sms[k] times its own addresses
     * addrs[k * per_sm .. (k + 1) * per_sm) into cycles[] at the same indices.
     * Callers give every SM distinct lines so probes do not disturb each other. */
    int (*latency_multi)(gos_device *d, const int *sms, int n_sms, const uint64_t *addrs,
                         int per_sm, uint32_t *cycles);

    /* Classification sweep over units i in [0, n): HBM-mode probes (`samples`
     * each, the minimum kept) of the address base + gos_sweep_offset(i, stride),
     * handed out to one prober on each SM of sms[0..n_sms). out[i] = min cycles
     * (saturated at 0xffff) | (measuring SM << 16); GOS_LAT_NONE if not measured. */
    int (*sweep)(gos_device *d, const int *sms, int n_sms, uint64_t base, uint64_t n,
                 uint64_t stride, int samples, uint32_t *out);

    /* Summed read bandwidth of SMs sms[0..n_sms) reading, `passes` times, the
     * 4 KB pages pages[0..n_pages) (page indices from b->base) with 16-byte
     * ld.global.cg, many loads in flight per thread. shared = 0: each page is
     * read by the same warp (so the same SM) in every pass; shared = 1: the
     * reader moves from pass to pass, so every SM reads the whole set (the
     * setting of paper 001's effective-L2 benchmark, section 6.2.1). */
    int (*read_bw)(gos_device *d, const int *sms, int n_sms, const gos_mem_buf *b,
                   const uint32_t *pages, int n_pages, int passes, int shared, double *gbps);
};

/* Wrappers: GOS_EUNSUPPORTED when the backend lacks the operation, GOS_EINVAL
 * for arguments out of range. Implemented in src/device/mem_ops.c. */
int gos_mem_alloc(gos_device *d, uint64_t bytes, gos_mem_buf **out);
void gos_mem_free(gos_device *d, gos_mem_buf *b);
int gos_mem_latency(gos_device *d, int mode, int sm, int other, const uint64_t *addrs, int n,
                    uint32_t *cycles);
int gos_mem_latency_multi(gos_device *d, const int *sms, int n_sms, const uint64_t *addrs,
                          int per_sm, uint32_t *cycles);
int gos_mem_sweep(gos_device *d, const int *sms, int n_sms, uint64_t base, uint64_t n,
                  uint64_t stride, int samples, uint32_t *out);
int gos_mem_read_bw(gos_device *d, const int *sms, int n_sms, const gos_mem_buf *b,
                    const uint32_t *pages, int n_pages, int passes, int shared, double *gbps);

#endif
