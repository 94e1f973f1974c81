/* SPDX-License-Identifier: Apache-2.0 */
/* dbscan.h: density-based clustering (DBSCAN) and the paper's adaptive outlier
 * filter (paper 000, section V-C, algorithm 3).
 *
 * gos_dbscan labels exactly as sklearn.cluster.DBSCAN(eps, min_samples) with the
 * euclidean metric does: a point is core when at least min_samples points
 * (itself included) lie within distance <= eps; clusters are numbered 0, 1, ...
 * in the order of their first core point; a border point reachable from two
 * clusters joins the one numbered first; noise is -1. O(n^2) time, O(n) memory:
 * meant for the hundreds to few thousands of latencies of one frequency pair. */
#ifndef GOS_DBSCAN_H
#define GOS_DBSCAN_H

#include <stddef.h>

/* x: n points of `dim` coordinates each (row-major). labels: n ints out.
 * Returns the number of clusters (>= 0) or a negative GOS_E* code. */
int gos_dbscan(const double *x, size_t n, int dim, double eps, int min_samples, int *labels);

/* Result of the adaptive filter on one-dimensional data. */
typedef struct {
    int min_samples;  /* minPts of the accepted attempt */
    double eps;       /* mult * (q95 - q05) */
    int n_clusters;
    size_t n_noise;
    int attempts;     /* how many minPts values were tried */
} gos_dbscan_adaptive_result;

/* Paper 000 algorithm 3: minPts from ceil(0.04 n) down to (exclusive)
 * floor(0.02 n) in steps of 2, eps = mult * (quantile 0.95 - quantile 0.05)
 * (mult 0.15 in the paper's experiments); the first attempt whose noise ratio
 * is at most 0.1 is kept, else the last one tried. minPts is never below
 * `min_floor` (>= 2; the paper's small-n loop would otherwise reach minPts 1,
 * where every point is core and nothing can be an outlier): when the loop is
 * empty or starts below the floor, a single attempt with min_floor is made. */
int gos_dbscan_adaptive(const double *x, size_t n, double mult, int min_floor, int *labels,
                        gos_dbscan_adaptive_result *res);

#endif
