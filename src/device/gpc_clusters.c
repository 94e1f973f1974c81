/* SPDX-License-Identifier: Apache-2.0 */
/* gpc_clusters.c: clusters a GPU runs at once, from its GPCs' sizes
 * (gpc_clusters.h). */
#include "device/gpc_clusters.h"

int gos_gpc_sizes(const int32_t *t, int max, int *h)
{
    for (int g = max; g >= 1; g--) {
        long r = t[g - 1];
        for (int l = g + 1; l <= max; l++)
            r -= (long)h[l] * (l / g);
        if (r < 0)
            return 0;
        h[g] = (int)r;
    }
    return 1;
}

long gos_gpc_clusters(const int *h, int max, int cs, int per_sm)
{
    long n = 0;
    if (cs < 1 || per_sm < 1)
        return 0;
    for (int g = cs; g <= max; g++)
        n += (long)h[g] * ((long)per_sm * g / cs);
    return n;
}
