/* SPDX-License-Identifier: Apache-2.0 */
/* rng.h: small deterministic random numbers for the simulated device and tests.
 * xoshiro256** seeded through splitmix64: the same seed gives the same stream on
 * every machine, which is what makes simulated chips reproducible. */
#ifndef GOS_RNG_H
#define GOS_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } gos_rng;

void gos_rng_seed(gos_rng *r, uint64_t seed);
uint64_t gos_rng_u64(gos_rng *r);
/* Uniform in [0, 1). */
double gos_rng_uniform(gos_rng *r);
/* Uniform integer in [0, n); n > 0. */
uint32_t gos_rng_below(gos_rng *r, uint32_t n);
/* Standard normal (Box-Muller). */
double gos_rng_normal(gos_rng *r);
/* Fisher-Yates shuffle of n ints. */
void gos_rng_shuffle(gos_rng *r, int *v, int n);

#endif
