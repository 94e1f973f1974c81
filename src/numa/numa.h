/* SPDX-License-Identifier: Apache-2.0 */
/* numa.h: pillar 1b, the memory-asymmetry chart (paper 001 section 6.1).
 *
 *   tiers.c     two latency tiers and the threshold between them, from data
 *   hash.c      the in-page XOR-hash bits from bit-flip pairs
 *   discover.c  the whole discovery on a device: histogram, threshold, hash,
 *               SM-to-partition affinity, L2 latencies -> gos_numa_model
 *   l2_hits.c   L2-hit latency, local and remote (discovery and figures)
 *   figures.c, knee.c  the memory costs given a model (figures.h)
 *   numa_map.c  the placement API: partition of any 4 KB page of an allocation,
 *               from the in-page hash plus one parity probe per 2 MB page
 *   verify.c    classify every 4 KB page of an allocation and compare
 *   histogram.c latency histograms (terminal and JSON)
 *
 * Partitions are numbered by the model: partition 0 is the one holding the
 * reference SM (the first SM probed); the chip file carries the SM sets, whose
 * order has no meaning. Two partitions (one XOR parity, as on H100/H200/B200)
 * take the path above; a histogram whose near tier is far from half the lines,
 * or with three or more tiers of 10 % each, takes the N-partition path of parts.c
 * (peaks.c finds the tiers, gf2.c the parities): 2^k partitions, dies where a
 * tier says so, the hash as k parities. */
#ifndef GOS_NUMA_H
#define GOS_NUMA_H

#include "chip/chip.h"
#include "device/device.h"
#include "device/mem_ops.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* ---- tiers.c --------------------------------------------------------------- */

typedef struct {
    double threshold;        /* cycles: below = near tier */
    double low, high;        /* medians of the two tiers */
    double low_spread, high_spread; /* median absolute deviations */
    double frac_low;         /* share of samples in the near tier */
    int n, n_outliers;       /* samples used; samples far above the high tier */
} gos_tiers;

/* Finds two tiers in v[0..n) (GOS_LAT_NONE entries ignored): Otsu's threshold on
 * the samples between the 0.5 and 99.5 percentiles (trimmed further from the top
 * when a slow tail drew the split), then the tiers' medians and spreads. GOS_EAMBIGUOUS when the data do not show two separated tiers (a tier
 * under 5 % of the samples, or medians closer than 3 spreads). */
int gos_tiers_find(const uint32_t *v, int n, gos_tiers *out);

/* ---- peaks.c ----------------------------------------------------------------- */

typedef struct {
    int n;                                  /* tiers found */
    double median[GOS_MAX_TIERS];           /* ascending */
    double fraction[GOS_MAX_TIERS];         /* share of the samples */
    double threshold[GOS_MAX_TIERS];        /* [i]: between tier i and i + 1 */
    int samples, n_outliers;                /* above the top tier */
} gos_tiers_n;

/* Any number of tiers from the histogram's peaks (overlapping peaks are one
 * tier). GOS_EAMBIGUOUS when no tier holds 2 % of the samples. */
int gos_tiers_find_n(const uint32_t *v, int n, gos_tiers_n *out);

/* Median of v[0..n) (GOS_LAT_NONE ignored); 0 when empty. */
double gos_lat_median(const uint32_t *v, int n);

/* ---- l2_hits.c ------------------------------------------------------------- */

/* Fills out[0..n) with device addresses of n lines of partition q, or fails. */
typedef int (*gos_line_picker)(void *ctx, int q, int n, uint64_t *out);

/* L2-hit latency, local and remote: for each partition q < nq (1 or 2), n lines
 * of q are warmed and timed by sm[q] (local hit), then n more warmed by sm[q] and
 * timed by sm[1 - q] (remote hit). samples[0] (local) and samples[1] (remote)
 * are allocated here with nq * n values each; the caller frees them (also on
 * failure). *local, *remote: their medians. */
int gos_l2_hits(gos_device *d, const int sm[2], int nq, int n, gos_line_picker pick, void *ctx,
                uint32_t *samples[2], double *local, double *remote);

/* ---- hash.c ---------------------------------------------------------------- */

/* Bit-flip evidence: for each in-page bit b (7..20) and base address k, near[k]
 * and flipped[(b - 7) * n_base + k] say whether the base address and the address with bit b
 * flipped were in the near tier (1), far (0) or unknown (-1). The hash holds b
 * when the flip changes the tier in most pairs. frac[b] receives the share of
 * pairs that changed. GOS_EAMBIGUOUS when a bit's share is neither clearly low
 * (< 0.25) nor clearly high (> 0.75), or too few pairs were classified. */
#define GOS_HASH_LO 7
#define GOS_HASH_HI 20
int gos_hash_from_flips(const signed char *near, const signed char *flipped, int n_base,
                        uint32_t *mask, double frac[GOS_HASH_HI + 1]);

/* Parity of the in-page hash bits of a byte offset. */
static inline int gos_hash_in_page(uint32_t mask, uint64_t offset)
{
    return __builtin_parityll(offset & mask & (GOS_PAGE_2M - 1));
}

/* ---- discover.c -------------------------------------------------------------- */

typedef struct {
    int sm_count;
    int ref_sm;               /* partition 0 holds it */
    int part_of[GOS_MAX_SMS]; /* 0 / 1 */
    double sm_near[GOS_MAX_SMS], sm_far[GOS_MAX_SMS]; /* per-SM HBM tier medians */
    gos_tiers tiers;          /* the reference SM's HBM distribution */
    uint32_t in_page_mask;    /* hash bits 7..20 */
    uint64_t granularity;     /* 1 << lowest hash bit (2 MB if none inside a page) */
    double hbm_local, hbm_remote, l2_local, l2_remote; /* cycles, medians */
    double flip_frac[GOS_HASH_HI + 1];
    double sm_sep[GOS_MAX_SMS]; /* (far - near) / reference gap, per SM */
    int n_ambiguous;            /* SMs whose separation stayed under 0.3 */
    int ambiguous[GOS_MAX_SMS];
    double concurrent_agreement; /* SMs probing all at once agree with one at a time */
    int have_tiers, have_hash, have_affinity; /* how far discovery got */
    uint32_t *hist_samples; /* the reference SM's HBM samples (owned) */
    int n_hist;
    uint32_t *l2_samples[2]; /* local, remote L2-hit samples (owned) */
    int n_l2;
    double t_hist_s, t_hash_s, t_affinity_s, t_l2_s, t_total_s;
    /* N partitions (both paths fill them; the two-partition path with n_parts 2,
     * one parity in_page_mask). Partition p has hash code p. */
    int n_parts;
    int n_parities;
    uint32_t masks[GOS_MAX_PARITIES];      /* in-page bits of each parity */
    int rep_sm[GOS_MAX_PARTS];             /* the SM that probes for each partition */
    gos_tiers_n tiers_n;                   /* the reference SM's histogram tiers */
    int n_tiers;
    gos_tier tier[GOS_MAX_TIERS];          /* cycles, l2_cycles, relation */
    signed char pair_tier[GOS_MAX_PARTS][GOS_MAX_PARTS];
    int n_dies;                            /* 0: not told by the tiers */
    int die_of_part[GOS_MAX_PARTS];
    int multi;                             /* took the N-partition path */
    int remeasured;                        /* the first try was ambiguous: measured again */
    char first_try[200];                   /* then: why the first try failed */
} gos_numa_model;

typedef struct {
    int hist_samples;   /* HBM samples from the reference SM (default 16384) */
    int flip_bases;     /* base addresses per hash bit (default 16) */
    int affinity_per_sm;/* reference lines of the affinity (default 64) */
    int l2_samples;     /* L2-hit samples per tier (default 512) */
    uint64_t buf_bytes; /* probe buffer (default 1 GB) */
} gos_numa_opts;

void gos_numa_opts_default(gos_numa_opts *o);

/* Runs the discovery on d (any backend); an ambiguous first try is measured
 * again (other lines, twice the histogram) before it fails, and the model
 * says so (remeasured, first_try). *m owns its sample arrays afterwards,
 * also on failure (gos_numa_model_free), so that what was measured before the
 * failure (have_tiers, have_hash) can still be shown. */
int gos_numa_discover(gos_device *d, const gos_numa_opts *o, gos_numa_model *m);
void gos_numa_model_free(gos_numa_model *m);

/* Writes the model into the chart: n_parts/parts, hash granularity and
 * in-page bits, latency_cycles, and extra "numa" keys (threshold, histogram,
 * per-SM tiers, hash evidence, timings). */
int gos_numa_model_to_chip(const gos_numa_model *m, gos_chip *c);

/* Rebuilds a model from a chart written by gos_numa_model_to_chip (partitions,
 * in-page bits, per-SM tiers or the global threshold), for placement later. */
int gos_numa_model_from_chip(const gos_chip *c, gos_numa_model *m);

/* The SMs that run sweeps (parity probes, verification): by default 8 per
 * partition, spread over each partition's SM list; GPUOS_SWEEP_SMS=N in the
 * environment picks N (all SMs when N >= sm_count). Returns the count. */
int gos_numa_probers(const gos_numa_model *m, int sms[GOS_MAX_SMS]);

/* ---- numa_map.c ------------------------------------------------------------ */

typedef struct {
    uint64_t base, bytes, n_pages2m;
    uint32_t in_page_mask;  /* masks[0] */
    int n_parities;
    uint32_t masks[GOS_MAX_PARITIES];
    uint8_t *parity; /* per 2 MB page: 0 / 1 (partition of offset 0 if the in-page
                        parity is 0), 0xff when the probe was inconclusive; with
                        k parities the k-bit code of offset 0 */
    double t_probe_s;
    int n_unknown;
} gos_numa_map;

/* Measures one parity per 2 MB page of b (three line probes, majority) with a
 * sweep over all SMs. */
int gos_numa_map_build(gos_device *d, const gos_numa_model *m, const gos_mem_buf *b,
                       gos_numa_map **out);
void gos_numa_map_free(gos_numa_map *map);

/* Partition (model numbering) of the byte at `offset` from the buffer's base,
 * hence of its whole 4 KB page when the granularity is >= 4 KB; -1 when
 * unknown or out of range. O(1). */
int gos_numa_partition_of(const gos_numa_map *map, uint64_t offset);

/* Partition the SM that measured `sample` (a sweep word) found the probed line
 * in, from the SM's own tiers; -1 when the sample is missing. With more than
 * two partitions a far sample only says "not the SM's partition": -2. */
int gos_numa_classify(const gos_numa_model *m, uint32_t sample);

/* Whether `sample` agrees with the line being in partition `want`: 1, 0, or -1
 * when the sample is missing (any number of partitions). */
int gos_numa_agrees(const gos_numa_model *m, uint32_t sample, int want);

/* The code of the in-page parities of a byte offset (bit j: parity j). */
static inline int gos_numa_code_in_page(const uint32_t *masks, int k, uint64_t off)
{
    int c = 0;
    for (int j = 0; j < k; j++)
        c |= __builtin_parityll(off & masks[j] & (GOS_PAGE_2M - 1)) << j;
    return c;
}

/* ---- parts.c / gf2.c: the N-partition path ------------------------------------ */

/* Steps 2-5 for N partitions after the reference histogram (`a`, the n
 * addresses probed, their samples in m->hist_samples); b the probe buffer. */
int gos_numa_discover_n(gos_device *d, const gos_numa_opts *o, const gos_mem_buf *b, const uint64_t *a,
                        int n, gos_numa_model *m);

/* Hash codes from labelled offsets (gf2.c). The caller probes: label(ctx,
 * offs, n, labels) fills labels[i] with the partition (cluster) of the line at
 * offset offs[i] from the reference base (the bases all hold the reference
 * partition's lines), majority over bases done by the caller. See gf2.c. */
typedef int (*gos_gf2_labeler)(void *ctx, const uint64_t *xor_offs, int n, int *labels);
int gos_gf2_codes(int n_clusters, int ref, gos_gf2_labeler label, void *ctx, int *code_of, uint32_t *masks,
                  int *k_out);

/* Per-page codes of an N-partition map (numa_map.c). */
int gos_numa_label_lines(gos_device *d, const gos_numa_model *m, const uint64_t *addrs, int n, int reps,
                         int *labels);

/* ---- verify.c -------------------------------------------------------------- */

typedef struct {
    uint64_t bytes, units, unit_bytes;
    uint64_t classified, agree, unknown;
    double agreement;           /* agree / classified */
    uint64_t reprobed, resolved; /* disagreeing or unknown units probed again, and
                                    those that then matched the prediction */
    double agreement_after;      /* (agree + resolved) / units */
    int probers, parity_unknown; /* SMs that swept; 2 MB pages without a parity */
    double t_alloc_s, t_parity_s, t_sweep_s, t_reprobe_s, t_total_s;
} gos_numa_verify;

/* Allocates `bytes` (GOS_MEM_ALL: all free memory), builds the parity map, then
 * classifies every 4 KB unit (min of `samples` probes of one line) and compares
 * with the map's prediction. Units that disagree (or could not be classified)
 * are probed again from the reference SM, seven times (median), to tell a
 * wrong prediction from a noisy sample (up to 2^20 of them). */
int gos_numa_verify_run(gos_device *d, const gos_numa_model *m, uint64_t bytes, int samples,
                        gos_numa_verify *out);
json_t *gos_numa_verify_json(const gos_numa_verify *v);

/* ---- histogram.c ----------------------------------------------------------- */

/* JSON histogram {"bin_cycles", "start", "counts", "n", "median"} of v[0..n)
 * between the 0.5 and 99.5 percentiles with bins of `bin` cycles (0: chosen). */
json_t *gos_hist_json(const uint32_t *v, int n, int bin);
/* Terminal histogram: one row per bin group, bar of '#' scaled to `width`,
 * rows marked with the threshold when thr > 0. */
void gos_hist_print(FILE *f, const uint32_t *v, int n, int rows, int width, double thr);

#endif
