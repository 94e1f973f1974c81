/* SPDX-License-Identifier: Apache-2.0 */
/* gf2.c: the partition hash as k parities, by linear algebra over GF(2) on the
 * measured partition labels of addresses (issue 26).
 *
 * The hash is linear: code(x) = M x + c(page), M a k x 14 matrix over the
 * in-page bits 7..20, c the unseen physical bits above the 2 MB page. Base
 * lines x all of one partition (the reference one, code 0) give, for any
 * in-page offset o, code(x ^ o) = M o: the label of x ^ o is the same
 * partition for every base, whatever the page. So:
 *
 *   - the label of x ^ e_b, for each bit b, is the partition of code M e_b
 *     (column b of M): the reference partition when b is not in the hash;
 *   - taking the bits in order, a bit whose partition has no code yet opens a
 *     new dimension j (code bit j): every code c known so far, found at offset
 *     o_c, gives the partition of code c | 1 << j at o_c ^ e_b (one more round
 *     of labels), so the codes known are always the whole span 0 .. 2^j - 1;
 *   - parity j's in-page mask holds the bits whose column has bit j set.
 *
 * Partitions that no in-page offset reaches (a parity of bits above the 2 MB
 * page only) are refused with a message, as is any inconsistent label (a
 * partition reached twice with two codes): never a guess. Any basis of the
 * parities is as good as another: only the partition of addresses and the
 * masks' span are facts (tests compare spans). */
#include "numa/numa.h"

#include "common/status.h"

#include <stdlib.h>
#include <string.h>

int gos_gf2_codes(int n_clusters, int ref, gos_gf2_labeler label, void *ctx, int *code_of, uint32_t *masks,
                  int *k_out)
{
    if (n_clusters < 1 || n_clusters > GOS_MAX_PARTS || (n_clusters & (n_clusters - 1)))
        return gos_fail(GOS_EAMBIGUOUS, "%d memory partitions: a hash of parities needs 2^k", n_clusters);
    const int nb = GOS_HASH_HI - GOS_HASH_LO + 1;
    uint64_t off_of[GOS_MAX_PARTS] = {0}, o[GOS_MAX_PARTS];
    int lab[GOS_MAX_PARTS > 14 ? GOS_MAX_PARTS : 14], col[GOS_HASH_HI + 1] = {0}, k = 0, known = 1, rc;
    for (int c = 0; c < n_clusters; c++)
        code_of[c] = -1;
    code_of[ref] = 0;
    for (int j = 0; j < GOS_MAX_PARITIES; j++)
        masks[j] = 0;
    uint64_t flips[14];
    for (int i = 0; i < nb; i++)
        flips[i] = 1ull << (GOS_HASH_LO + i);
    if ((rc = label(ctx, flips, nb, lab)))
        return rc;
    int d_of[14];
    memcpy(d_of, lab, sizeof d_of);
    for (int i = 0; i < nb; i++) {
        int b = GOS_HASH_LO + i, D = d_of[i];
        if (D < 0 || D >= n_clusters)
            return gos_fail(GOS_EAMBIGUOUS, "hash bit %d: the flipped lines fall in no clear partition", b);
        if (code_of[D] >= 0) {
            col[b] = code_of[D];
            continue;
        }
        if (k == GOS_MAX_PARITIES || known * 2 > n_clusters)
            return gos_fail(GOS_EAMBIGUOUS, "hash bit %d opens more parities than %d partitions hold", b,
                            n_clusters);
        for (int c = 0; c < known; c++)
            o[c] = off_of[c] ^ flips[i];
        if ((rc = label(ctx, o, known, lab)))
            return rc;
        for (int c = 0; c < known; c++) {
            int E = lab[c];
            if (E < 0 || E >= n_clusters || code_of[E] >= 0)
                return gos_fail(GOS_EAMBIGUOUS,
                                "hash bit %d: the lines at in-page offset 0x%llx fall in %s partition: "
                                "not a hash of parities", b, (unsigned long long)o[c],
                                E < 0 ? "no clear" : "an already coded");
            code_of[E] = c | 1 << k;
            off_of[c | 1 << k] = o[c];
        }
        col[b] = 1 << k;
        k++;
        known *= 2;
    }
    if (known != n_clusters)
        return gos_fail(GOS_EUNSUPPORTED,
                        "%d of %d memory partitions are reachable within a 2 MB page: a parity of bits "
                        "above the page only is not supported", known, n_clusters);
    for (int b = GOS_HASH_LO; b <= GOS_HASH_HI; b++)
        for (int j = 0; j < k; j++)
            if (col[b] >> j & 1)
                masks[j] |= 1u << b;
    *k_out = k;
    return GOS_OK;
}
