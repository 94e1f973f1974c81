/* SPDX-License-Identifier: Apache-2.0 */
/* chart.c: the run of `probe [section|all]`, the cross-check of topology
 * against partitions, and the chart's provenance (see chart.h). */
#include "chart/chart.h"

#include "common/jsonio.h"
#include "common/provenance.h"
#include "common/log.h"
#include "common/status.h"
#include "topology/topology.h"

#include <string.h>

static const struct {
    const char *name;
    int (*fn)(gos_chart_ctx *);
} sections[] = {{"topology", gos_chart_topology}, {"numa", gos_chart_numa}, {"memory", gos_chart_memory}};
#define N_SECTIONS (int)(sizeof sections / sizeof sections[0])

int gos_chart_is_section(const char *name)
{
    if (!strcmp(name, "all"))
        return 1;
    for (int s = 0; s < N_SECTIONS; s++)
        if (!strcmp(name, sections[s].name))
            return 1;
    return 0;
}

int gos_chart_probe(gos_chart_ctx *ctx, const char *name)
{
    if (!gos_chart_is_section(name))
        return gos_fail(GOS_EINVAL, "no chart section \"%s\" (topology, numa, memory, all)", name);
    gos_chip *chip = ctx->chip;
    int all = !strcmp(name, "all"), rc;
    if (!chip->json)
        chip->json = json_object();
    gos_topo_fill_device(chip, ctx->dev);
    for (int s = 0; s < N_SECTIONS; s++) {
        if (!all && strcmp(name, sections[s].name))
            continue;
        if ((rc = sections[s].fn(ctx))) {
            if (!all || rc != GOS_EAMBIGUOUS || s == 0)
                return rc;
            gos_log(LOG_WARNING, "%s: %s (recorded in the chart; continuing)", sections[s].name,
                    gos_last_error());
            json_object_set_new(gos_json_child(chip->json, sections[s].name), "unresolved",
                                json_string(gos_last_error()));
            if (s == 1) { /* memory figures need the partitions */
                json_object_set_new(gos_json_child(chip->json, "memory"), "unresolved",
                                    json_string("skipped: the numa section found no partitions"));
                break;
            }
            continue;
        }
        if (ctx->out)
            fflush(ctx->out);
    }
    gos_chart_crosscheck(chip, ctx->out);
    return GOS_OK;
}

/* Two independent measurements of one floor plan: the GPC groups that share
 * bandwidth above the GPC (topology) and the partitions found by latency (numa). */
void gos_chart_crosscheck(gos_chip *c, FILE *out)
{
    json_t *topo = json_object_get(c->json, "topology");
    json_t *groups = json_object_get(topo, "crossbar_groups");
    if (!c->n_parts || !c->n_gpcs || !json_array_size(groups))
        return;
    int agree = (int)json_array_size(groups) == c->n_parts, used[GOS_MAX_PARTS] = {0};
    for (size_t k = 0; agree && k < json_array_size(groups); k++) {
        int part = -1;
        json_t *g = json_array_get(groups, k);
        for (size_t i = 0; agree && i < json_array_size(g); i++) {
            const gos_gpc *G = &c->gpcs[json_integer_value(json_array_get(g, i))];
            for (int s = 0; agree && s < G->n_sms; s++) {
                int p = -1;
                for (int q = 0; q < c->n_parts; q++)
                    for (int j = 0; j < c->parts[q].n_sms; j++)
                        if (c->parts[q].sms[j] == G->sms[s])
                            p = q;
                if (part < 0)
                    part = p;
                agree = p >= 0 && p == part;
            }
        }
        agree = agree && part >= 0 && !used[part]++;
    }
    json_object_set_new(topo, "crossbar_groups_are_partitions", json_boolean(agree));
    if (out)
        fprintf(out, "Cross-check: the GPC groups that share L2 bandwidth %s the memory partitions found by latency\n",
                agree ? "are exactly" : "are NOT");
}

json_t *gos_chart_provenance(const gos_device *d, int argc, char **argv, double seconds)
{
    char cmd[1024];
    gos_command_line(cmd, sizeof cmd, "gpuos", argc, argv);
    json_t *p = gos_provenance(cmd, d->info.driver_version);
    json_object_set_new(p, "backend", json_string(d->info.backend));
    json_object_set_new(p, "seconds", json_real(seconds));
    return p;
}
