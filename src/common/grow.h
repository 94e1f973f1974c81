/* SPDX-License-Identifier: Apache-2.0 */
/* grow.h: room for one more element in a doubling array (*arr, *cap, n used):
 * GOS_OK, or GOS_ENOMEM with a message and the array unchanged. `first` is the
 * capacity of the first allocation. */
#ifndef GOS_COMMON_GROW_H
#define GOS_COMMON_GROW_H

#include "common/status.h"

#include <stdlib.h>

static inline int gos_grow(void **arr, int *cap, int n, size_t elem, int first)
{
    if (n < *cap)
        return GOS_OK;
    int c = *cap ? 2 * *cap : first;
    void *p = realloc(*arr, elem * (size_t)c);
    if (!p)
        return gos_fail(GOS_ENOMEM, "out of host memory");
    *arr = p;
    *cap = c;
    return GOS_OK;
}

#endif
