/* cmd_probe.c: `gpuos probe [topology|numa|memory|all] [--device N] [--sim CHIP]
 * [--json OUT] [--verify SIZE|all] [--repeat N]`: charts the chip section by
 * section into one gos_chip and writes it as gpuos.chip/1. */
#include "common/clock.h"
#include "cli/cli.h"
#include "cli/probe.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "common/version.h"
#include "topology/labels.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>

#pragma weak probe_topology
#pragma weak probe_numa
#pragma weak probe_memory

static const char usage_text[] =
    "usage: gpuos probe [topology|numa|memory|all] [--device SEL] [--sim CHIP.json|default[,...]]\n"
    "                   [--json OUT.json|DIR|-] [--nfd FILE] [--verify SIZE|all] [--repeat N]\n"
    "Charts this GPU die: GPCs and free-floating SMs (topology), memory partitions,\n"
    "address hash and latency tiers (numa), L2/HBM costs (memory); all of them by\n"
    "default. Without --device or --sim it uses GPU 0, or, when there is no GPU, the\n"
    "built-in simulated H200 (labelled as simulated).\n"
    "  --device SEL real GPU N only (fails without one); 'all', a UUID, a PCI bus id,\n"
    "               or a comma-separated list of them (as nvidia-smi -i)\n"
    "  --sim CHIP   the simulated chip of a gpuos.chip/1 file, or 'default'; A,B,...\n"
    "               simulates one GPU per chip\n"
    "  --json OUT   also write the chart as gpuos.chip/1 ('-' = stdout, no text); with\n"
    "               several GPUs OUT is a directory and each chart is OUT/<uuid>.json\n"
    "  --nfd FILE   also write node-feature-discovery labels (see gpuos labels --help)\n"
    "  --verify S   numa: classify every 4 KB page of an S-byte allocation (or 'all')\n"
    "  --repeat N   sections that support it measure N times and report the spread\n";

static void fill_device(gos_chip *c, const gos_device *d)
{
    const gos_device_info *I = &d->info;
    snprintf(c->device.name, sizeof c->device.name, "%s", I->name);
    snprintf(c->device.uuid, sizeof c->device.uuid, "%s", I->uuid);
    c->device.cc_major = I->cc_major;
    c->device.cc_minor = I->cc_minor;
    c->device.sm_count = I->sm_count;
    c->device.l2_bytes = I->l2_bytes;
    c->device.mem_bytes = I->mem_bytes;
    c->device.sm_clock_mhz = I->has_clocks ? I->sm_clock_mhz : 0;
    c->device.simulated = I->simulated;
}

static json_t *provenance(const gos_device *d, int argc, char **argv, double seconds)
{
    char date[64], cmd[1024] = "gpuos";
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(cmd);
        snprintf(cmd + len, sizeof cmd - len, " %s", argv[i]);
    }
    struct utsname u;
    uname(&u);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:s}", "date", date, "command", cmd, "host", u.nodename,
                     "driver", d->info.driver_version, "backend", d->info.backend, "seconds", seconds,
                     "version", GOS_VERSION);
}

/* When both are known, do the GPC groups that share bandwidth above the GPC
 * (topology) coincide with the memory partitions (numa, from latencies)? Two
 * independent measurements of one floor plan; the answer is recorded. */
static void crosscheck_partitions(gos_chip *c, FILE *out)
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

static int probe_one(const cli_devices *sel, int index, const char *section, const char *json_out,
                     const char *verify, long repeats, int argc, char **argv, gos_chip **kept);

int cmd_probe(int argc, char **argv)
{
    const char *section = "all", *sim = NULL, *json_out = NULL, *verify = NULL, *device = NULL, *nfd = NULL;
    long ordinal = -1, repeats = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "topology") || !strcmp(a, "numa") || !strcmp(a, "memory") || !strcmp(a, "all"))
            section = a;
        else if (!strcmp(a, "--device")) {
            if (i + 1 >= argc)
                return cli_usage("probe", "--device needs a GPU number 0..63, 'all', a UUID or a PCI bus id");
            device = argv[++i];
            if (!cli_parse_int(device, 0, 63, &ordinal))
                ;
            else if (strcmp(device, "all") && strncasecmp(device, "GPU-", 4) && strncasecmp(device, "MIG-", 4) &&
                     strncasecmp(device, "SIM-", 4) && !strchr(device, ':') && !strchr(device, ','))
                return cli_usage("probe", "--device needs a GPU number 0..63, 'all', a UUID or a PCI bus id");
        } else if (!strcmp(a, "--sim")) {
            if (i + 1 >= argc)
                return cli_usage("probe", "--sim needs a chip file or 'default'");
            sim = argv[++i];
        } else if (!strcmp(a, "--json")) {
            if (i + 1 >= argc)
                return cli_usage("probe", "--json needs an output path");
            json_out = argv[++i];
        } else if (!strcmp(a, "--nfd")) {
            if (i + 1 >= argc)
                return cli_usage("probe", "--nfd needs an output file");
            nfd = argv[++i];
        } else if (!strcmp(a, "--verify")) {
            unsigned long long bytes;
            if (i + 1 >= argc)
                return cli_usage("probe", "--verify needs a size (e.g. 16G) or 'all'");
            if (strcmp(argv[i + 1], "all") && (cli_parse_size(argv[i + 1], &bytes) || !bytes))
                return cli_usage("probe", "--verify: \"%s\" is not a size (e.g. 16G) or 'all'", argv[i + 1]);
            verify = argv[++i];
        } else if (!strcmp(a, "--repeat")) {
            if (i + 1 >= argc || cli_parse_int(argv[++i], 1, 100, &repeats))
                return cli_usage("probe", "--repeat needs a count 1..100");
        } else
            return cli_usage("probe", "unexpected argument \"%s\"", a);
    }
    if (sim && ordinal >= 0)
        return cli_usage("probe", "--sim and --device exclude each other");
    if (verify && strcmp(section, "numa") && strcmp(section, "all"))
        return cli_usage("probe", "--verify belongs to the numa section");
    struct {
        const char *name;
        int (*fn)(gos_probe_ctx *);
    } sections[] = {{"topology", probe_topology}, {"numa", probe_numa}, {"memory", probe_memory}};
    for (int s = 0; s < 3; s++)
        if (!strcmp(section, sections[s].name) && !sections[s].fn) {
            fprintf(stderr, "gpuos: the %s probe is not built into this binary\n", section);
            return 1;
        }

    cli_devices sel;
    if (cli_select_devices(device, sim, &sel))
        return cli_fail();
    if (sel.n > 1 && json_out && !strcmp(json_out, "-"))
        return cli_usage("probe", "--json - writes one chart: with several GPUs give a directory");
    gos_chip *kept[CLI_MAX_DEVICES] = {0};
    int rc = GOS_OK;
    for (int i = 0; i < sel.n && !rc; i++) {
        if (sel.n > 1 && !(json_out && !strcmp(json_out, "-")))
            printf("%s== GPU %d of %d ==\n", i ? "\n" : "", i, sel.n);
        rc = probe_one(&sel, i, section, json_out, verify, repeats, argc, argv, nfd ? &kept[i] : NULL);
    }
    if (!rc && nfd)
        rc = gos_labels_save((const gos_chip *const *)kept, sel.n, nfd) ? cli_fail() : 0;
    for (int i = 0; i < sel.n; i++)
        gos_chip_free(kept[i]);
    return rc;
}

/* Charts selected device `index`; with `kept`, hands the chart over (for labels). */
static int probe_one(const cli_devices *sel, int index, const char *section, const char *json_out,
                     const char *verify, long repeats, int argc, char **argv, gos_chip **kept)
{
    int all = !strcmp(section, "all");
    struct {
        const char *name;
        int (*fn)(gos_probe_ctx *);
    } sections[] = {{"topology", probe_topology}, {"numa", probe_numa}, {"memory", probe_memory}};
    const char *sim = sel->sim[index];
    double t0 = gos_now_s();
    gos_device *d = NULL;
    int rc = cli_open_selected(sel, index, &d);
    if (rc)
        return cli_fail();
    gos_chip *chip = gos_chip_new();
    if (!chip) {
        gos_device_close(d);
        gos_fail(GOS_ENOMEM, "out of memory");
        return cli_fail();
    }
    chip->json = json_object();
    fill_device(chip, d);
    int quiet = json_out && !strcmp(json_out, "-");
    gos_probe_ctx ctx = {.dev = d, .chip = chip, .out = quiet ? NULL : stdout, .verify = verify,
                         .repeats = (int)repeats};
    if (ctx.out && d->info.simulated)
        fprintf(ctx.out, "[simulated device: %s, from %s]\n", d->info.name,
                sim && strcmp(sim, "default") ? sim : "the built-in chip");
    for (int s = 0; s < 3; s++) {
        if (!all && strcmp(section, sections[s].name))
            continue;
        if (!sections[s].fn) {
            if (ctx.out)
                fprintf(ctx.out, "(%s probe not built into this binary: skipped)\n", sections[s].name);
            continue;
        }
        if ((rc = sections[s].fn(&ctx))) {
            /* In `all`, a section whose measurements give no answer (say, one
             * latency tier: no NUMA split to find) does not discard the rest of
             * the chart: the reason is printed and recorded, and the sections
             * that need it are skipped. Any other failure stops the probe. */
            if (!all || rc != GOS_EAMBIGUOUS || s == 0)
                goto fail;
            fprintf(stderr, "gpuos: %s: %s (recorded in the chart; continuing)\n", sections[s].name,
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
        if (ctx.out)
            fflush(ctx.out);
    }
    crosscheck_partitions(chip, ctx.out);
    double secs = gos_now_s() - t0;
    if (ctx.out)
        fprintf(ctx.out, "Chart of %s%s done in %.2f s\n", gos_dev_label(d), d->info.name, secs);
    if (json_out) {
        char path[4096];
        if (sel->n > 1)
            snprintf(path, sizeof path, "%s/%s.json", json_out, d->info.uuid);
        else
            snprintf(path, sizeof path, "%s", json_out);
        json_object_set_new(chip->json, "probe", provenance(d, argc, argv, secs));
        if ((rc = gos_chip_validate(chip, "probe result")) || (rc = gos_chip_save(chip, path)))
            goto fail;
    }
    if (kept)
        *kept = chip, chip = NULL;
    gos_chip_free(chip);
    gos_device_close(d);
    return 0;
fail:
    gos_chip_free(chip);
    gos_device_close(d);
    return cli_fail();
}
