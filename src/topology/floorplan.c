/* SPDX-License-Identifier: Apache-2.0 */
/* floorplan.c: the ASCII floor plan of a chip (paper 001, figure 3): one row per
 * GPC, one cell per TPC ("[ 16  17]"), free-floating TPCs as "{124 125}",
 * the memory partition of each GPC when known. */
#include "topology/topology.h"

#include <stdio.h>

static int is_free(int sm, const int *free_sms, int n_free)
{
    for (int i = 0; i < n_free; i++)
        if (free_sms[i] == sm)
            return 1;
    return 0;
}

/* The partition most of the GPC's SMs belong to, -1 if unknown. */
static int gpc_partition(const gos_chip *c, const gos_gpc *G)
{
    if (!c->n_parts)
        return -1;
    int count[GOS_MAX_PARTS] = {0}, best = -1, bc = 0;
    for (int i = 0; i < G->n_sms; i++)
        for (int p = 0; p < c->n_parts; p++)
            for (int k = 0; k < c->parts[p].n_sms; k++)
                if (c->parts[p].sms[k] == G->sms[i])
                    count[p]++;
    for (int p = 0; p < c->n_parts; p++)
        if (count[p] > bc)
            bc = count[p], best = p;
    return best;
}

void gos_topo_print_floorplan(FILE *f, const gos_chip *c, const int *free_sms, int n_free)
{
    for (int g = 0; g < c->n_gpcs; g++) {
        const gos_gpc *G = &c->gpcs[g];
        int p = gpc_partition(c, G);
        char part[16] = "  ";
        if (p >= 0)
            snprintf(part, sizeof part, "P%d", p);
        fprintf(f, "GPC %-2d %s %2d SMs |", g, part, G->n_sms);
        for (int t = 0; t < G->n_tpcs; t++) {
            const int *tp = G->tpcs[t];
            int fr = is_free(tp[0], free_sms, n_free) || (tp[1] >= 0 && is_free(tp[1], free_sms, n_free));
            if (tp[1] >= 0)
                fprintf(f, "%c%3d %3d%c", fr ? '{' : '[', tp[0], tp[1], fr ? '}' : ']');
            else
                fprintf(f, "%c%3d%c", fr ? '{' : '[', tp[0], fr ? '}' : ']');
        }
        fprintf(f, "\n");
    }
}
