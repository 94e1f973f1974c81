/* SPDX-License-Identifier: Apache-2.0 */
/* hash.c: which in-page address bits feed the partition XOR hash (paper 001
 * section 6.1.2: "flipping each bit individually and observing whether the
 * address switches partitions, measured via latency").
 *
 * Within one 2 MB page virtual and physical offsets agree, so flipping bit b
 * (7..20) of an address changes its partition exactly when b is a hash bit,
 * whatever the unseen bits above the page are. A bit is in the hash when most
 * classified pairs changed tier; the evidence must be clear-cut (under 25 % or
 * over 75 %) or the answer is ambiguous. */
#include "numa/numa.h"

#include "common/status.h"

int gos_hash_from_flips(const signed char *near, const signed char *flipped, int n_base,
                        uint32_t *mask, double frac[GOS_HASH_HI + 1])
{
    uint32_t msk = 0;
    int unclear = -1;
    double unclear_frac = 0;
    for (int b = 0; b <= GOS_HASH_HI; b++)
        frac[b] = 0;
    for (int b = GOS_HASH_LO; b <= GOS_HASH_HI; b++) {
        int pairs = 0, changed = 0;
        for (int k = 0; k < n_base; k++) {
            signed char x = near[k], y = flipped[(b - GOS_HASH_LO) * n_base + k];
            if (x < 0 || y < 0)
                continue;
            pairs++;
            changed += x != y;
        }
        if (pairs < 3 || pairs * 2 < n_base)
            return gos_fail(GOS_EAMBIGUOUS, "hash bit %d: only %d of %d flip pairs classified", b,
                            pairs, n_base);
        frac[b] = (double)changed / pairs;
        if (frac[b] > 0.75)
            msk |= 1u << b;
        else if (frac[b] >= 0.25 && unclear < 0) {
            unclear = b;
            unclear_frac = frac[b];
        }
    }
    if (unclear >= 0)
        return gos_fail(GOS_EAMBIGUOUS,
                        "hash bit %d: flipping it changed the partition in %.0f %% of pairs "
                        "(neither always nor never)",
                        unclear, 100 * unclear_frac);
    *mask = msk;
    return GOS_OK;
}
