/* SPDX-License-Identifier: Apache-2.0 */
/* silhouette.h: the silhouette score of a clustering (paper 000, section VII-B,
 * used where DBSCAN forms several clusters of one pair's latencies).
 *
 * Equal to sklearn.metrics.silhouette_score(x, labels) (euclidean) computed over
 * the points whose label is >= 0 (noise is left out, as the paper scores
 * clusters, not outliers). A point alone in its cluster scores 0. */
#ifndef GOS_SILHOUETTE_H
#define GOS_SILHOUETTE_H

#include <stddef.h>

/* Mean silhouette over labelled points. GOS_EINVAL (and *score untouched)
 * unless 2 <= number of distinct labels <= labelled points - 1. */
int gos_silhouette(const double *x, size_t n, int dim, const int *labels, double *score);

#endif
