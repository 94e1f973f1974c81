/* SPDX-License-Identifier: Apache-2.0 */
/* pdplan.h: where prefill and decode run when one LLM server multiplexes them
 * (issue 45; paper 001 section 7.2). Runs in bench/pd_multiplex (the GPU
 * experiment) and the tests (simulated chips).
 *
 * Three placements of the two phases, each on its own SM set (a green context),
 * with the same SM counts:
 *   cluster-aware       both sets run clusters of `cluster` (8) on every SM, any
 *                       partition; all memory interleaved (prior work's PD
 *                       multiplexing: green contexts, no NUMA placement);
 *   cluster-mismatched  the same counts asked with clusters of 2: the allocator
 *                       then spends free-floating and ragged groups first, so the
 *                       sets need not run clusters of 8; memory interleaved;
 *   partition-aware     each set runs clusters of `cluster` inside ONE memory
 *                       partition (the two phases in different ones), and each
 *                       phase's private state (decode: the KV pages it writes and
 *                       reads) lives in that partition's gos_pmem view; weights and
 *                       shared state stay interleaved.
 * Paper 001 needed MIG halves and a modified driver for the third; here it is
 * green contexts plus partition-local views for the project's own kernels. */
#ifndef GOS_PLACE_PDPLAN_H
#define GOS_PLACE_PDPLAN_H

#include "place/smset.h"

enum { GOS_PD_PREFILL = 0, GOS_PD_DECODE = 1 };

typedef enum {
    GOS_PD_CLUSTER_AWARE = 0,
    GOS_PD_CLUSTER_MISMATCHED = 1,
    GOS_PD_PARTITION_AWARE = 2,
    GOS_PD_KINDS = 3
} gos_pd_kind;

/* "cluster-aware", "cluster-mismatched", "partition-aware" (NULL out of range). */
const char *gos_pd_kind_name(int kind);

typedef struct {
    int sms[2];  /* SMs of prefill and decode (>= 1 each) */
    int cluster; /* the cluster size the aware placements guarantee (2..16) */
} gos_pd_req;

typedef struct {
    gos_pd_kind kind;
    gos_smset set[2]; /* [GOS_PD_PREFILL], [GOS_PD_DECODE], allocated from the pool */
    int part[2];      /* partition-aware: each phase's partition (its views'); else -1 */
    int mismatched;   /* some SM of a set cannot join a cluster of req.cluster */
} gos_pd_plan;

/* Allocates kind's two sets from p (prefill first). Partition-aware tries every
 * ordered pair of distinct partitions, the lowest prefill partition first.
 * GOS_ENOMEM (one line naming the placement) when the free groups cannot serve
 * it, GOS_EINVAL for a bad request or, for partition-aware, a chart with fewer
 * than two partitions. Release with gos_pd_release. */
int gos_pd_plan_make(gos_smset_pool *p, const gos_pd_req *req, gos_pd_kind kind, gos_pd_plan *out);
void gos_pd_release(gos_smset_pool *p, gos_pd_plan *pl);

/* The SM counts every placement can be given on the empty pool p (equal counts
 * make the placements comparable): req's, lowered in steps of req->cluster,
 * fewest steps first and, among those, prefill's first (the paper gives prefill
 * more). GOS_ENOMEM when nothing fits. */
int gos_pd_fit(gos_smset_pool *p, const gos_pd_req *req, gos_pd_req *fit);

/* The SMs of a device of sm_count SMs outside phase's set (the partition-aware
 * runtime's idle list, so the phase's tasks queue only on its own SMs' partitions):
 * written to idle[], count returned. */
int gos_pd_idle(const gos_pd_plan *pl, int phase, int sm_count, int *idle);

#endif
