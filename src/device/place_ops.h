/* SPDX-License-Identifier: Apache-2.0 */
/* place_ops.h: the pillar-2 placement primitives of the device layer (paper 001
 * section 7.1): copies scattered over a view's units, and jobs of the
 * partition-aware persistent runtime (include/gpuos/pmem_core.h), one struct of
 * function pointers per backend (gos_cuda_place_ops in cuda_place.c running
 * kernels/place.cu, gos_sim_place_ops in sim_place.c).
 *
 * Both backends run the same scheduling code (gos_prt_* and gos_pmem_addr from
 * pmem_core.h): the GPU in its kernels, the simulated device in an event-driven
 * model where each block takes its next ticket when it becomes free and every
 * byte costs local or remote time by the simulated chip's truth (its physical
 * frames and hash), so the allocator and the runtime are tested against known
 * truth in CI.
 *
 * Callers above the device layer use the gos_place_* wrappers (place_ops.c), which
 * answer GOS_EUNSUPPORTED when the backend lacks an operation and GOS_EINVAL for
 * arguments out of range. */
#ifndef GOS_PLACE_OPS_H
#define GOS_PLACE_OPS_H

#include "device/device.h"
#include "gpuos/pmem_core.h"

#include <stdint.h>

/* What a runtime job does with its tasks (kernels/place.cu). */
enum {
    GOS_PJOB_TASKS = 0, /* nothing but record who ran each task */
    GOS_PJOB_READ = 1,  /* task t reads task_bytes of its partition's view, `passes` times */
    GOS_PJOB_GEMV = 2,  /* y[b][r] = sum_k W[r][k] x[b][k]; task t computes rows_per_task rows */
    GOS_PJOB_CHASE = 3, /* one thread per working SM chases a pseudo-random cycle */
};
#define GOS_PJOB_MAX_REPEATS 64
#define GOS_PJOB_MAX_PASSES 64
#define GOS_PJOB_MAX_BATCH 8

struct gos_place_job {
    int kind;
    gos_prt_table rt;       /* working SMs, their partitions, the two queues */
    gos_pmem_view view[2];  /* where partition p's tasks find their data (device
                               parity addresses); LINEAR views: no placement */
    uint64_t task_bytes;    /* READ: bytes per task (multiple of 4 KB) */
    uint32_t passes;        /* READ: passes over every task (1..64) */
    uint32_t repeats;       /* timed launches after one untimed one (1..64) */
    /* GEMV: W is row-major float, cols floats per row; the rows of task t sit at
     * local index gos_prt_local_index(t) * rows_per_task in view[p]. `init`: fill
     * W first with gos_pmem_pattern_w(row, col) through the views. */
    uint32_t cols, batch, rows_per_task, init;
    const float *x; /* host, batch * cols */
    float *y;       /* host, batch * n_tasks * rows_per_task (may be NULL) */
    /* CHASE: nodes are 128-byte lines at logical offsets i * 128, i < n_nodes
     * (a power of two) of view[p]; node i holds the next index (gos_pmem_chase_next:
     * one cycle through all nodes). Each working SM's thread chases `steps`. */
    uint64_t n_nodes, steps;
    /* Outputs (host; owner and runs may be NULL): */
    uint32_t *owner; /* n_tasks: SM that ran task t (last repeat) */
    uint32_t *runs;  /* n_tasks: how often task t ran in the last repeat */
    double ms[GOS_PJOB_MAX_REPEATS]; /* each timed launch */
};

struct gos_place_ops {
    gos_pillar_close_fn close;

    /* Copies n units of `unit` bytes between contiguous host memory and the
     * device addresses addr[0..n) (inside 2 MB-page allocations of mem_ops):
     * to_device = 1: host -> device, 0: device -> host. Synchronous. */
    int (*copy_units)(gos_device *d, int to_device, const uint64_t *addr, uint64_t n,
                      uint32_t unit, void *host);

    /* Runs a job: one untimed launch, then job->repeats timed ones (ms[]). */
    int (*run)(gos_device *d, struct gos_place_job *job);

    /* The device's own knowledge of where memory lives (a simulated chip's
     * physical frames and hash; no GPU backend has it): out[i] = 0 when the unit
     * at addr[i] is in the memory partition near SM ref_sm, 1 otherwise. */
    int (*truth)(gos_device *d, const uint64_t *addr, uint64_t n, int ref_sm, uint8_t *out);
};

/* Wrappers (place_ops.c). */
int gos_place_copy_units(gos_device *d, int to_device, const uint64_t *addr, uint64_t n,
                         uint32_t unit, void *host);
int gos_place_run(gos_device *d, struct gos_place_job *job);
int gos_place_truth(gos_device *d, const uint64_t *addr, uint64_t n, int ref_sm, uint8_t *out);

#endif
