/* SPDX-License-Identifier: Apache-2.0 */
/* report.h: `gpuos report CHIP.json --html OUT`, one self-contained HTML page
 * (inline SVG, no scripts, no network) of a chart: floor plan by partition,
 * latency histograms, bandwidth curve, our figures beside paper 001's. */
#ifndef GOS_REPORT_H
#define GOS_REPORT_H

#include "chip/chip.h"

/* Writes the page for c (its json member supplies the extra figures)
 * atomically to out_path. */
int gos_report_html(const gos_chip *c, const char *out_path);

/* Writes only the table of our figures beside the paper's, as Markdown (for
 * the README, generated from committed results). "-" writes to stdout. */
int gos_report_markdown(const gos_chip *c, const char *out_path);

/* The fleet page: charts of n different GPUs side by side (GPC configurations and
 * how many chips have each, a comparison table with the columns some chart knows,
 * every floor plan), written atomically to out_path. */
int gos_report_fleet_html(const gos_chip *const *charts, int n, const char *out_path);

/* Copies into c->json the pillar-1b sections that c lacks and `more` has
 * (numa.verification, numa.repeats): a chart from `probe all` completed by a
 * separate `probe numa --verify` run of the same GPU. */
int gos_report_merge(gos_chip *c, const gos_chip *more, const char *what);

#endif
