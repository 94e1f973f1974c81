/* cmd_probe.c: `gpuos probe [topology|numa|memory|all] [--device N] [--sim CHIP]
 * [--json OUT] [--verify SIZE|all] [--repeat N]`: charts the chip section by
 * section into one gos_chip and writes it as gpuos.chip/1. */
#include "common/clock.h"
#include "cli/cli.h"
#include "cli/probe.h"
#include "common/jsonio.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#pragma weak probe_topology
#pragma weak probe_numa
#pragma weak probe_memory

static const char usage_text[] =
    "usage: gpuos probe [topology|numa|memory|all] [--device N] [--sim CHIP.json|default]\n"
    "                   [--json OUT.json|-] [--verify SIZE|all] [--repeat N]\n"
    "Charts this GPU die: GPCs and free-floating SMs (topology), memory partitions,\n"
    "address hash and latency tiers (numa), L2/HBM costs (memory); all of them by\n"
    "default. Without --device or --sim it uses GPU 0, or, when there is no GPU, the\n"
    "built-in simulated H200 (labelled as simulated).\n"
    "  --device N   real GPU N only (fails without one)\n"
    "  --sim CHIP   the simulated chip of a gpuos.chip/1 file, or 'default'\n"
    "  --json OUT   also write the chart as gpuos.chip/1 ('-' = stdout, no text)\n"
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

/* Whether the chart can be written to path: the temporary file gos_chip_save
 * writes first is created and removed (so that a probe of minutes does not end
 * in "cannot write"). */
static int writable(const char *path)
{
    struct stat st;
    if (!stat(path, &st) && S_ISDIR(st.st_mode))
        return gos_fail(GOS_EIO, "--json %s: is a directory", path);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return gos_fail(GOS_EIO, "--json %s: cannot write there: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    return GOS_OK;
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
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f}", "date", date, "command", cmd, "host", u.nodename,
                     "driver", d->info.driver_version, "backend", d->info.backend, "seconds", seconds);
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

int cmd_probe(int argc, char **argv)
{
    const char *section = "all", *sim = NULL, *json_out = NULL, *verify = NULL;
    long ordinal = -1, repeats = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "topology") || !strcmp(a, "numa") || !strcmp(a, "memory") || !strcmp(a, "all"))
            section = a;
        else if (!strcmp(a, "--device")) {
            if (i + 1 >= argc || cli_parse_int(argv[++i], 0, 63, &ordinal))
                return cli_usage("probe", "--device needs a GPU number 0..63");
        } else if (!strcmp(a, "--sim")) {
            if (i + 1 >= argc)
                return cli_usage("probe", "--sim needs a chip file or 'default'");
            sim = argv[++i];
        } else if (!strcmp(a, "--json")) {
            if (i + 1 >= argc)
                return cli_usage("probe", "--json needs an output path");
            json_out = argv[++i];
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
    int all = !strcmp(section, "all");
    struct {
        const char *name;
        int (*fn)(gos_probe_ctx *);
    } sections[] = {{"topology", probe_topology}, {"numa", probe_numa}, {"memory", probe_memory}};
    for (int s = 0; s < 3; s++)
        if (!strcmp(section, sections[s].name) && !sections[s].fn) {
            fprintf(stderr, "gpuos: the %s probe is not built into this binary\n", section);
            return 1;
        }

    if (json_out && strcmp(json_out, "-") && writable(json_out))
        return cli_fail(); /* before the probe, not after it (issue 15.7) */
    double t0 = gos_now_s();
    gos_device *d = NULL;
    int rc = cli_open_device(sim, (int)ordinal, &d);
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
        json_object_set_new(chip->json, "probe", provenance(d, argc, argv, secs));
        if ((rc = gos_chip_validate(chip, "probe result")) || (rc = gos_chip_save(chip, json_out)))
            goto fail;
    }
    gos_chip_free(chip);
    gos_device_close(d);
    return 0;
fail:
    gos_chip_free(chip);
    gos_device_close(d);
    return cli_fail();
}
