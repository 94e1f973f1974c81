/* SPDX-License-Identifier: Apache-2.0 */
/* unionfind.h: disjoint sets over small integer ids (SM ids), path halving. */
#ifndef GOS_UNIONFIND_H
#define GOS_UNIONFIND_H

typedef struct {
    int parent[512]; /* SM ids: GOS_MAX_SMS */
} gos_uf;

static inline void gos_uf_init(gos_uf *u)
{
    for (int i = 0; i < 512; i++)
        u->parent[i] = i;
}

static inline int gos_uf_find(gos_uf *u, int x)
{
    while (u->parent[x] != x)
        x = u->parent[x] = u->parent[u->parent[x]];
    return x;
}

static inline void gos_uf_union(gos_uf *u, int a, int b)
{
    a = gos_uf_find(u, a);
    b = gos_uf_find(u, b);
    if (a != b)
        u->parent[a < b ? b : a] = a < b ? a : b;
}

#endif
