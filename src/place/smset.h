/* SPDX-License-Identifier: Apache-2.0 */
/* smset.h: SM sets that fit the tenant (issue 13; paper 001 sections 5.3, 7.3, 7.4.3).
 * Runs in the cli (gpuos place) and the daemon (serve/spatial.c, spatial vGPUs).
 *
 * Equal SM counts are not equal capability: thread-block clusters of more than 2
 * blocks run only on one GPC's cluster-eligible SMs, so free-floating SMs and
 * ragged GPCs cannot host them. The allocator composes SM sets from the groups
 * that green-context splitting returns (identified once per device, SM by SM)
 * using the chip's chart (`gpuos probe topology`, optionally `probe numa`):
 *
 *   - a request names an SM count N and the largest cluster size K it launches;
 *     it gets a union of groups on which at least N SMs can run clusters of K at
 *     once (K x clusters-of-K >= N), or a clear refusal;
 *   - clusters of K > 2 fit only among K cluster-eligible SMs of one GPC; clusters
 *     of 2 pair two SMs of one GPC, cluster-eligible and free-floating SMs apart
 *     (the H200's behaviour);
 *   - requests with K > 2 take the groups that add most clusters of K, fewest SMs
 *     first; requests with K <= 2 take first the groups whose loss costs the pool
 *     least capacity for clusters of 8, then 4, then 16 (free-floating SMs and the
 *     odd SMs of ragged GPCs), so nothing cluster-capable is spent on them while
 *     cheaper SMs serve; a final pass drops groups the request does not need;
 *   - optionally all SMs in one memory partition (the chart's numa section), and
 *     GPC alignment: whole GPCs only, no other set shares a GPC with this one.
 *
 * The pool is plain data over the chart and the groups (tested on simulated chips
 * of known truth); gos_smset_pool_open builds it from a device, gos_smset_green
 * turns a set into a green context whose streams run exactly on its SMs. */
#ifndef GOS_PLACE_SMSET_H
#define GOS_PLACE_SMSET_H

#ifdef __cplusplus
extern "C" {
#endif

#define GOS_SMSET_MAX_SMS 512 /* = GOS_MAX_SMS */
#define GOS_SMSET_MAX_GROUPS 64
#define GOS_SMSET_MAX_GPCS 32
#define GOS_SMSET_MAX_CLUSTER 16

struct gos_chip;
struct gos_device;
typedef struct gos_smset_pool gos_smset_pool;

typedef struct {
    int sms;       /* SMs that must run clusters of `cluster` at once (>= 1) */
    int cluster;   /* largest cluster size the tenant launches, 1..16 */
    int partition; /* -1: any; else every SM in this memory partition */
    int gpc_align; /* 1: whole GPCs only */
} gos_smset_req;

typedef struct {
    int id; /* > 0 while allocated */
    gos_smset_req req;
    int n_sms;
    int sms[GOS_SMSET_MAX_SMS]; /* ascending */
    int n_groups;
    int groups[GOS_SMSET_MAX_GROUPS]; /* indices into the pool's groups, ascending */
    int n_gpcs;
    int gpcs[GOS_SMSET_MAX_GPCS];     /* chart GPC indices touched, ascending */
    int gpc_sms[GOS_SMSET_MAX_GPCS];  /* SMs of the set in gpcs[i] */
    int n_free_floating;              /* SMs that cannot join clusters > 2 */
    int clusters[GOS_SMSET_MAX_CLUSTER + 1]; /* [k]: clusters of k at once (k = 1..16) */
    int partition;                    /* the one partition holding every SM, or -1 */
} gos_smset;

/* A pool over `chart` (topology required; numa optional) and n_groups groups,
 * group g being group_sms[g][0..group_n[g]) (SM ids). Every SM of a group must be
 * in the chart; groups must be disjoint. The chart is copied. */
int gos_smset_pool_new(const struct gos_chip *chart, int n_groups, const int *group_n,
                       const int *const *group_sms, gos_smset_pool **out);
/* The same from a device: splits its SMs into green-context groups of the
 * driver's minimum size (identifying each group's SMs) and checks them against
 * the chart. */
int gos_smset_pool_open(struct gos_device *d, const struct gos_chip *chart, gos_smset_pool **out);
void gos_smset_pool_free(gos_smset_pool *p);

/* Allocates a set for req (filled into *out). GOS_EINVAL for a malformed request,
 * GOS_EUNSUPPORTED for clusters above gos_smset_pool_max_cluster, GOS_ENOMEM
 * ("cannot ...", naming what the free groups can run) when it cannot be met now. */
int gos_smset_alloc(gos_smset_pool *p, const gos_smset_req *req, gos_smset *out);
/* Returns set `id`'s groups to the pool. */
int gos_smset_release(gos_smset_pool *p, int id);

/* Capability of an arbitrary SM list (ids in the chart), filled as in gos_smset
 * (sms, gpcs, n_free_floating, clusters, partition). */
int gos_smset_describe(const gos_smset_pool *p, const int *sms, int n, gos_smset *out);

int gos_smset_pool_groups(const gos_smset_pool *p);
/* Largest cluster the pool's sets can run: 16, or, for a pool from a device, the
 * green-context split's co-scheduling alignment (8 on the H200); larger requests
 * fail with GOS_EUNSUPPORTED. */
int gos_smset_pool_max_cluster(const gos_smset_pool *p);
/* The chart's memory partitions (0 without a numa section). */
int gos_smset_pool_parts(const gos_smset_pool *p);
/* Group g's SMs (count returned, at most max written) and its owner set (0: free). */
int gos_smset_pool_group(const gos_smset_pool *p, int g, int *sms, int max, int *owner);

/* A green context of set s on d (whose pool came from gos_smset_pool_open);
 * streams, launches and destruction through the device layer (green_ops.h). */
int gos_smset_green(struct gos_device *d, const gos_smset_pool *p, const gos_smset *s, void **gctx);

/* What a set's green context runs, measured (kernels/green.cu, one block per SM):
 * one block per SM of the set, all at once, and the promised clusters of the
 * request's size all at once (C = clusters[K]), then one cluster more. */
typedef struct {
    int sms_seen;        /* distinct SMs the n_sms blocks ran on */
    int outside;         /* blocks that ran on an SM outside the set (any launch) */
    int all_at_once;     /* the n_sms blocks were co-resident */
    int cluster;         /* K */
    int promised;        /* C */
    int promised_fit;    /* the C clusters were co-resident */
    int one_more_fits;   /* C + 1 clusters were co-resident (the chart under-promised) */
} gos_smset_check;

int gos_smset_verify(struct gos_device *d, const gos_smset_pool *p, const gos_smset *s, gos_smset_check *out);

#ifdef __cplusplus
}
#endif

#endif
