/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_place.c: `gpuos place --sms N --cluster K [--partition P] [--align] ...`:
 * SM sets that fit the tenant (issue 13, src/place/smset.h). Each --sms
 * starts a request; --cluster, --partition and --align apply to the latest one;
 * requests are served in order from one pool, as tenants arriving one after the
 * other. Prints each set (SM ids, GPCs, green-context groups) and what it can run
 * (clusters of each size at once); --json FILE|- writes the same as JSON. */
#include "cli/cli.h"
#include "chip/chip.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "device/green_ops.h"
#include "place/smset.h"
#include "topology/topology.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQ 32

static const char *usage_text =
    "usage: gpuos place --sms N [--cluster K] [--partition P] [--align] [--sms N ...]\n"
    "                   [--chart CHIP.json] [--device SEL | --sim CHIP] [--verify] [--json FILE|-]\n"
    "Gives each request a set of SMs, composed of the device's green-context groups,\n"
    "on which N SMs can run thread-block clusters of K at once (clusters > 2 need K\n"
    "cluster-eligible SMs of one GPC). Requests are served in the order given, from\n"
    "one pool; a request that cannot be met is refused with what the rest can run.\n"
    "  --sms N          SMs that must run clusters of K (starts a new request)\n"
    "  --cluster K      largest cluster size the tenant launches, 1..16 (default 1)\n"
    "  --partition P    every SM in memory partition P (needs a chart with a numa section)\n"
    "  --align          whole GPCs only: no other set shares a GPC with this one\n"
    "  --chart FILE     the chip's chart (gpuos probe --json); default: chart the\n"
    "                   topology now\n"
    "  --verify         run each set's green context: one block per SM on exactly its\n"
    "                   SMs, the promised clusters at once (and whether one more fits);\n"
    "                   exit 1 if a set does not deliver\n" CLI_HELP_DEVICE "                   (one GPU)\n" CLI_HELP_SIM
    CLI_HELP_JSON("the sets and the groups (gpuos.place/1)");

static void print_list(const int *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        printf("%s%d", i ? "," : "", v[i]);
        if (j > i)
            printf("-%d", v[j]);
        i = j + 1;
    }
}

static void print_set(const gos_smset *s)
{
    const gos_smset_req *r = &s->req;
    printf("set %d: %d SMs (asked: %d SMs running clusters of %d", s->id, s->n_sms, r->sms, r->cluster);
    if (r->partition >= 0)
        printf(", partition %d", r->partition);
    if (r->gpc_align)
        printf(", whole GPCs");
    printf(")\n  SMs: ");
    print_list(s->sms, s->n_sms);
    printf("\n  GPCs (SMs):");
    for (int i = 0; i < s->n_gpcs; i++)
        printf(" %d(%d)", s->gpcs[i], s->gpc_sms[i]);
    printf("\n  green-context groups: ");
    print_list(s->groups, s->n_groups);
    printf("\n  free-floating SMs: %d; memory partition: ", s->n_free_floating);
    if (s->partition >= 0)
        printf("%d\n", s->partition);
    else
        printf("mixed or unknown\n");
    printf("  clusters at once:");
    for (int k = 1; k <= GOS_SMSET_MAX_CLUSTER; k *= 2)
        printf(" %d of %d", s->clusters[k], k);
    printf(" (SMs usable at cluster %d: %d)\n", r->cluster, s->clusters[r->cluster] * r->cluster);
}

static json_t *set_json(const gos_smset *s)
{
    json_t *cl = json_object();
    for (int k = 1; k <= GOS_SMSET_MAX_CLUSTER; k++) {
        char key[8];
        snprintf(key, sizeof key, "%d", k);
        json_object_set_new(cl, key, json_integer(s->clusters[k]));
    }
    json_t *gpcs = json_array();
    for (int i = 0; i < s->n_gpcs; i++)
        json_array_append_new(gpcs, json_pack("{s:i, s:i}", "gpc", s->gpcs[i], "sms", s->gpc_sms[i]));
    return json_pack("{s:i, s:{s:i, s:i, s:i, s:b}, s:i, s:o, s:o, s:o, s:i, s:o, s:o}", "id", s->id,
                     "request", "sms", s->req.sms, "cluster", s->req.cluster, "partition", s->req.partition,
                     "gpc_align", s->req.gpc_align, "n_sms", s->n_sms, "sms", gos_json_ints(s->sms, s->n_sms),
                     "gpcs", gpcs, "groups", gos_json_ints(s->groups, s->n_groups), "free_floating_sms",
                     s->n_free_floating, "partition", s->partition >= 0 ? json_integer(s->partition) : json_null(),
                     "clusters_at_once", cl);
}

/* --verify: the set s checked on the device (sj gets "verified"); *bad counts
 * the sets that fail it. */
static int place_verify(gos_device *d, gos_smset_pool *pool, const gos_smset *s, json_t *sj, int quiet, int *bad)
{
    gos_smset_check ck;
    int rc = gos_smset_verify(d, pool, s, &ck);
    if (rc)
        return rc;
    int ok = ck.sms_seen == s->n_sms && !ck.outside && ck.all_at_once && ck.promised_fit;
    *bad += !ok;
    json_object_set_new(sj, "verified",
                        json_pack("{s:b, s:i, s:i, s:b, s:i, s:i, s:b, s:b}", "ok", ok, "sms_seen", ck.sms_seen,
                                  "blocks_outside_set", ck.outside, "one_block_per_sm_at_once",
                                  ck.all_at_once, "cluster", ck.cluster, "promised_clusters", ck.promised,
                                  "promised_fit", ck.promised_fit, "one_more_fits", ck.one_more_fits));
    if (!quiet)
        printf("  verified: %s: %d blocks on %d distinct SMs of the set%s, %d outside; %d clusters of "
               "%d at once: %s; one more: %s\n", ok ? "OK" : "FAILED", s->n_sms, ck.sms_seen,
               ck.all_at_once ? " at once" : "", ck.outside, ck.promised, ck.cluster,
               ck.promised_fit ? "yes" : "NO", ck.one_more_fits ? "fits too (chart under-promises)" : "does not fit");
    return GOS_OK;
}

/* The chart places by: --chart's (*chart, loaded), checked against the device,
 * or the device's own, probed. */
static int place_chart(gos_device *d, const char *chart_path, gos_chip **chart)
{
    if (*chart && (*chart)->device.sm_count != d->info.sm_count)
        return gos_fail(GOS_EINVAL, "%s describes a chip of %d SMs, the device has %d", chart_path,
                        (*chart)->device.sm_count, d->info.sm_count);
    if (!*chart) {
        gos_topo_opts o;
        gos_topo_default_opts(&o);
        gos_topo_result r;
        int rc = gos_topo_probe(d, &o, &r);
        if (rc)
            return rc;
        *chart = r.chip;
        r.chip = NULL;
        gos_topo_result_free(&r);
    }
    return GOS_OK;
}

/* --json: the sets (taken over) and the pool's groups, saved to json_out. */
static int place_save(gos_device *d, gos_smset_pool *pool, json_t *sets, const char *json_out)
{
    json_t *groups = json_array();
    for (int g = 0; g < gos_smset_pool_groups(pool); g++) {
        int sms[GOS_SMSET_MAX_SMS], owner;
        int n = gos_smset_pool_group(pool, g, sms, GOS_SMSET_MAX_SMS, &owner);
        json_array_append_new(groups, json_pack("{s:i, s:o, s:i}", "group", g, "sms", gos_json_ints(sms, n),
                                                "set", owner));
    }
    json_t *doc = json_pack("{s:s, s:s, s:s, s:b, s:o, s:o}", "schema", "gpuos.place/1", "device",
                            d->info.name, "uuid", d->info.uuid, "simulated", d->info.simulated, "sets",
                            sets, "groups", groups);
    int rc = gos_json_save_atomic(doc, json_out);
    json_decref(doc);
    return rc;
}

int cmd_place(int argc, char **argv)
{
    const char *sim = NULL, *chart_path = NULL, *device = NULL, *json_out = NULL;
    int n_req = 0, verify = 0, bad = 0;
    gos_smset_req req[MAX_REQ];
    enum { O_SMS = CLI_FIRST_OWN, O_CLUSTER, O_PARTITION, O_ALIGN, O_CHART, O_VERIFY };
    static const struct option opts[] = {CLI_OPT_HELP,
                                         {"sms", required_argument, NULL, O_SMS},
                                         {"cluster", required_argument, NULL, O_CLUSTER},
                                         {"partition", required_argument, NULL, O_PARTITION},
                                         {"align", no_argument, NULL, O_ALIGN},
                                         {"chart", required_argument, NULL, O_CHART},
                                         {"verify", no_argument, NULL, O_VERIFY},
                                         CLI_OPT_DEVICE,
                                         CLI_OPT_SIM,
                                         CLI_OPT_JSON,
                                         CLI_OPT_END};
    cli_args a = CLI_ARGS("place", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;) {
        long x;
        switch (o) {
        case 'h': fputs(usage_text, stdout); return 0;
        case CLI_JSON: json_out = optarg; break;
        case O_VERIFY: verify = 1; break;
        case O_ALIGN:
            if (!n_req)
                return cli_usage("place", "--align before any --sms");
            req[n_req - 1].gpc_align = 1;
            break;
        case CLI_SIM: sim = optarg; break;
        case O_CHART: chart_path = optarg; break;
        case CLI_DEVICE: device = optarg; break;
        case O_SMS:
            if (cli_parse_int(optarg, 1, GOS_SMSET_MAX_SMS, &x))
                return cli_usage("place", "--sms wants 1..%d, not \"%s\"", GOS_SMSET_MAX_SMS, optarg);
            if (n_req == MAX_REQ)
                return cli_usage("place", "at most %d requests", MAX_REQ);
            req[n_req++] = (gos_smset_req){.sms = (int)x, .cluster = 1, .partition = -1, .gpc_align = 0};
            break;
        case O_CLUSTER:
        case O_PARTITION: {
            int is_cl = o == O_CLUSTER;
            const char *name = is_cl ? "--cluster" : "--partition";
            if (!n_req)
                return cli_usage("place", "%s before any --sms", name);
            if (cli_parse_int(optarg, is_cl ? 1 : 0, is_cl ? GOS_SMSET_MAX_CLUSTER : GOS_MAX_PARTS - 1, &x))
                return cli_usage("place", "%s wants %s, not \"%s\"", name, is_cl ? "1..16" : "a partition 0..31", optarg);
            if (is_cl)
                req[n_req - 1].cluster = (int)x;
            else
                req[n_req - 1].partition = (int)x;
            break;
        }
        case CLI_STOP: return a.rc;
        }
    }
    if (optind < argc)
        return cli_usage("place", "unexpected argument \"%s\"", argv[optind]);
    int as_json = json_out != NULL, quiet = as_json && !strcmp(json_out, "-");
    if (!n_req)
        return cli_usage("place", "no request: give --sms N [--cluster K]");
    gos_chip *chart = NULL;
    if (chart_path && gos_chip_load(chart_path, &chart))
        return cli_fail();
    gos_device *d = NULL;
    gos_smset_pool *pool = NULL;
    json_t *sets = json_array();
    int rc = cli_open_one(device, sim, &d);
    if (rc)
        goto fail;
    if ((rc = place_chart(d, chart_path, &chart)) || (rc = gos_smset_pool_open(d, chart, &pool)))
        goto fail;
    if (!quiet)
        printf("%s%s (%d SMs): %d green-context groups\n", gos_dev_label(d), d->info.name, d->info.sm_count,
               gos_smset_pool_groups(pool));
    int refused = 0;
    for (int i = 0; i < n_req; i++) {
        gos_smset s;
        if ((rc = gos_smset_alloc(pool, &req[i], &s))) {
            if (rc != GOS_ENOMEM && rc != GOS_EUNSUPPORTED)
                goto fail;
            fprintf(stderr, "gpuos: request %d refused: %s\n", i + 1, gos_last_error());
            json_array_append_new(sets, json_pack("{s:{s:i, s:i, s:i, s:b}, s:s}", "request", "sms", req[i].sms,
                                                  "cluster", req[i].cluster, "partition", req[i].partition,
                                                  "gpc_align", req[i].gpc_align, "refused", gos_last_error()));
            refused++;
            continue;
        }
        json_t *sj = set_json(&s);
        if (!quiet)
            print_set(&s);
        if (verify && (rc = place_verify(d, pool, &s, sj, quiet, &bad))) {
            json_decref(sj);
            goto fail;
        }
        if (as_json)
            json_array_append_new(sets, sj);
        else
            json_decref(sj);
    }
    if (as_json) {
        json_t *all = sets;
        sets = NULL;
        if ((rc = place_save(d, pool, all, json_out)))
            goto fail;
    }
    json_decref(sets);
    gos_smset_pool_free(pool);
    gos_chip_free(chart);
    gos_device_close(d);
    return refused || bad ? 1 : 0;
fail:
    json_decref(sets);
    gos_smset_pool_free(pool);
    gos_chip_free(chart);
    if (d)
        gos_device_close(d);
    return cli_fail();
}
