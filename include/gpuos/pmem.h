/* SPDX-License-Identifier: Apache-2.0 */
/* pmem.h: partition-local device memory (pillar 2, paper 001 section 7.1), the
 * host API. A program allocates N bytes per partition; gpuos maps them on 2 MB
 * VMM pages of the GPU's primary context (the one the CUDA runtime uses, so the
 * program's own kernels can use them), measures each 2 MB page's parity with
 * latency probes at allocation, and hands out two views: logical bytes
 * 0..N-1 of view P all live in memory partition P. Kernels translate a view's
 * logical offset with gos_pmem_addr() (O(1), gpuos/pmem_core.h) and run on the
 * partition-aware persistent runtime of gpuos/pmem_dev.cuh.
 * Paper 001: Fan et al., "Dissecting How Die Scaling Breaks GPU Fine-grained
 * Scheduling", arXiv:2609.24270 (https://arxiv.org/abs/2609.24270).
 *
 *   gos_pmem *pm;
 *   gos_pmem_opts o = {.device = 0, .chart = "chip.json"};  // gpuos probe numa --json
 *   if (gos_pmem_open(&o, 1ull << 30, &pm)) { fprintf(stderr, "%s\n", gos_pmem_error()); ... }
 *   gos_pmem_view v0, v1;
 *   gos_pmem_get_view(pm, 0, &v0);                 // pass by value to a kernel
 *   gos_pmem_write(pm, 0, 0, host, bytes);         // host -> view 0, logical offset 0
 *   gos_prt_table t;                               // SM -> partition, task queues
 *   gos_pmem_runtime(pm, NULL, 0, n_tasks, GOS_PMEM_SPLIT_SMS, &t);
 *   kernel<<<sm_count, 512, big_smem>>>(t, v0, v1, counters);   // see pmem_dev.cuh
 *   gos_pmem_close(pm);
 *
 * Rules: a view is half of the allocation (each aligned pair of granularity
 * units gives one unit to each partition), so N bytes per view take 2N of device
 * memory (with a chart of P = 2^k partitions, P views of 1/P each, P x N bytes;
 * gos_pmem_n_parts says P); the chart must be of this very GPU (each GPU's partition numbering and
 * SM sets are its own; same SM count and, where both are known, same UUID), and
 * must hold the in-page hash (`gpuos probe numa` writes it). Partition numbers
 * are the chart's. Functions return 0 or a negative GOS_E* / GPUOS_E* code
 * (the same numbers) and leave a one-line message for gos_pmem_error().
 * Not thread-safe per handle. No CUDA types here.
 *
 * vGPU clients (libgpuos): gpuos_pmem_* in gpuos.h, the same views, carried out
 * by the client's executor with this code (docs/readme-placement.md). */
#ifndef GPUOS_PMEM_H
#define GPUOS_PMEM_H

#include "gpuos/pmem_core.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gos_pmem gos_pmem;

typedef struct {
    int device;        /* CUDA ordinal */
    const char *sim;   /* a simulated chip file instead of a GPU (tests), or NULL */
    const char *chart; /* gpuos.chip/1 chart of this GPU; NULL: $GPUOS_CHIP */
} gos_pmem_opts;

enum { GOS_PMEM_SPLIT_SMS = 0, GOS_PMEM_SPLIT_EQUAL = 1 };

/* Opens the device, reads the chart, allocates two views (one per partition)
 * of bytes_per_view bytes each and measures the page parities. */
int gos_pmem_open(const gos_pmem_opts *o, uint64_t bytes_per_view, gos_pmem **out);
/* Frees the memory (and the device when gos_pmem_open opened it). */
void gos_pmem_close(gos_pmem *pm);
const char *gos_pmem_error(void);

/* The view of partition `part` (0 or 1; 0 .. N-1 with an N-partition chart),
 * with a device address for the parity table: pass it to kernels by value. */
int gos_pmem_get_view(const gos_pmem *pm, int part, gos_pmem_view *out);
/* The chart's memory partitions: 2, or 2^k (gpuos.chip/2, k hash parities):
 * one view each. */
int gos_pmem_n_parts(const gos_pmem *pm);
uint64_t gos_pmem_view_bytes(const gos_pmem *pm);
int gos_pmem_sm_count(const gos_pmem *pm);

/* Synchronous copies between host memory and logical bytes [off, off + n) of
 * view `part` (any alignment; whole units go through one scatter/gather). */
int gos_pmem_write(gos_pmem *pm, int part, uint64_t off, const void *src, uint64_t n);
int gos_pmem_read(gos_pmem *pm, int part, uint64_t off, void *dst, uint64_t n);

/* The runtime table: every SM works for its chart partition except idle[0..n_idle);
 * n_tasks split over the two queues (one per partition) by working SM count (GOS_PMEM_SPLIT_SMS) or
 * half and half (GOS_PMEM_SPLIT_EQUAL; a partition without working SMs gets
 * nothing either way). */
int gos_pmem_runtime(const gos_pmem *pm, const int *idle, int n_idle, uint32_t n_tasks, int split,
                     gos_prt_table *out);

#ifdef __cplusplus
}
#endif

#endif
