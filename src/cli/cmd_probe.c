/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_probe.c: `gpuos probe [topology|numa|memory|all] [--device SEL] [--sim CHIP[,...]]
 * [--json OUT|DIR] [--nfd FILE] [--verify SIZE|all] [--repeat N]`: charts each selected
 * chip section by section into one gos_chip, writes it as gpuos.chip/1, and the
 * node-feature-discovery labels of all of them (src/topology/labels.h). */
#include "chart/chart.h"
#include "cli/cli.h"
#include "common/clock.h"
#include "common/status.h"
#include "topology/labels.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: gpuos probe [topology|numa|memory|all] [--device SEL] [--sim CHIP[,CHIP...]]\n"
    "                   [--json FILE|DIR|-] [--nfd FILE] [--nfd-expiry DURATION] [--verify SIZE|all]\n"
    "                   [--repeat N]\n"
    "Charts this GPU die: GPCs and free-floating SMs (topology), memory partitions,\n"
    "address hash and latency tiers (numa), L2/HBM costs (memory); all of them by\n"
    "default. Without --device or --sim it uses GPU 0, or, when there is no GPU, the\n"
    "built-in simulated H200 (labelled as simulated).\n" CLI_HELP_DEVICE CLI_HELP_SIM
    CLI_HELP_JSON("the chart (gpuos.chip/1)") "                   with several GPUs a directory: DIR/<uuid>.json each\n"
    "  --nfd FILE       also write node-feature-discovery labels (see gpuos labels --help);\n"
    "                   of GPU 0 without --device: fails where there is none, unless --sim\n"
    "  --nfd-expiry D   the labels' lifetime (default 24h; 0: never expire)\n"
    "  --verify SIZE    numa: classify every 4 KB page of a SIZE-byte allocation (or 'all')\n"
    "  --repeat N       sections that support it measure N times and report the spread\n";

/* Whether the chart can be written to path: the temporary file gos_chip_save
 * writes first is created and removed, so that a probe of minutes does not end
 * in "cannot write" (issue 15.7). */
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

/* With several GPUs --json names a directory the charts go into. */
static int writable_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode))
        return gos_fail(GOS_EIO, "--json %s: with several GPUs --json names an existing directory", path);
    if (access(path, W_OK))
        return gos_fail(GOS_EIO, "--json %s: cannot write there: %s", path, strerror(errno));
    return GOS_OK;
}

/* Charts selected device `index`; with `kept`, hands the chart over (for labels). */
static int probe_one(const cli_devices *sel, int index, const char *section, const char *json_out,
                     unsigned long long verify_bytes, long repeats, int argc, char **argv, gos_chip **kept)
{
    int nfd_real = kept && !sel->sim[index]; /* labels of a real GPU: no fallback */
    const char *sim = sel->sim[index];
    double t0 = gos_now_s();
    gos_device *d = NULL;
    int rc = cli_open_selected(sel, index, &d);
    if (rc && nfd_real) {
        fprintf(stderr, "gpuos: %s: no labels written (--sim CHIP labels a simulated chip)\n", gos_last_error());
        return 1;
    }
    if (rc)
        return cli_fail();
    gos_chip *chip = gos_chip_new();
    if (!chip) {
        gos_device_close(d);
        gos_fail(GOS_ENOMEM, "out of memory");
        return cli_fail();
    }
    int quiet = json_out && !strcmp(json_out, "-");
    gos_chart_ctx ctx = {.dev = d, .chip = chip, .out = quiet ? NULL : stdout, .verify_bytes = verify_bytes,
                         .repeats = (int)repeats};
    if (ctx.out && d->info.simulated)
        fprintf(ctx.out, "[simulated device: %s, from %s]\n", d->info.name,
                sim && strcmp(sim, "default") ? sim : "the built-in chip");
    if ((rc = gos_chart_probe(&ctx, section)))
        goto fail;
    double secs = gos_now_s() - t0;
    if (ctx.out)
        fprintf(ctx.out, "Chart of %s%s done in %.2f s\n", gos_dev_label(d), d->info.name, secs);
    if (json_out) {
        char path[4096];
        if (sel->n > 1)
            snprintf(path, sizeof path, "%s/%s.json", json_out, d->info.uuid);
        else
            snprintf(path, sizeof path, "%s", json_out);
        json_object_set_new(chip->json, "probe", gos_chart_provenance(d, argc, argv, secs));
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

int cmd_probe(int argc, char **argv)
{
    const char *section = "all", *sim = NULL, *json_out = NULL, *verify = NULL, *device = NULL, *nfd = NULL;
    unsigned long long verify_bytes = 0;
    long repeats = 1, expiry = GOS_NFD_EXPIRY_S;
    enum { O_NFD = CLI_FIRST_OWN, O_EXPIRY, O_VERIFY, O_REPEAT };
    static const struct option opts[] = {CLI_OPT_HELP, CLI_OPT_DEVICE, CLI_OPT_SIM, CLI_OPT_JSON,
                                         {"nfd", required_argument, NULL, O_NFD},
                                         {"nfd-expiry", required_argument, NULL, O_EXPIRY},
                                         {"verify", required_argument, NULL, O_VERIFY},
                                         {"repeat", required_argument, NULL, O_REPEAT}, CLI_OPT_END};
    cli_args a = CLI_ARGS("probe", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': fputs(usage_text, stdout); return 0;
        case CLI_DEVICE: device = optarg; break;
        case CLI_SIM: sim = optarg; break;
        case CLI_JSON: json_out = optarg; break;
        case O_NFD: nfd = optarg; break;
        case O_EXPIRY:
            if (cli_parse_expiry("probe", optarg, &expiry))
                return 2;
            break;
        case O_VERIFY:
            if (!strcmp(optarg, "all"))
                verify_bytes = GOS_CHART_VERIFY_ALL;
            else if (cli_parse_size(optarg, 1, ~0ull, &verify_bytes))
                return cli_usage("probe", "--verify: %s (e.g. 16G, 1.5G) or 'all'", gos_last_error());
            verify = optarg;
            break;
        case O_REPEAT:
            if (cli_parse_int(optarg, 1, 100, &repeats))
                return cli_usage("probe", "--repeat needs a count 1..100");
            break;
        case CLI_STOP: return a.rc;
        }
    for (int i = optind; i < argc; i++) {
        if (!gos_chart_is_section(argv[i]))
            return cli_usage("probe", "unexpected argument \"%s\" (sections: topology, numa, memory, all)", argv[i]);
        section = argv[i];
    }
    if (verify && strcmp(section, "numa") && strcmp(section, "all"))
        return cli_usage("probe", "--verify belongs to the numa section");
    /* Labels describe this node's GPUs: never the simulated fallback's unless asked
     * (issue 43.7: a node without a driver published an H200 it does not have). */
    if (nfd && !device && !sim)
        device = "0";
    cli_devices sel;
    if (cli_select_devices(device, sim, &sel))
        return cli_fail();
    if (sel.n > 1 && json_out && !strcmp(json_out, "-"))
        return cli_usage("probe", "--json - writes one chart: with several GPUs give a directory");
    if (json_out && strcmp(json_out, "-") && (sel.n > 1 ? writable_dir(json_out) : writable(json_out)))
        return cli_fail(); /* before the probe, not after it */
    gos_chip *kept[CLI_MAX_DEVICES] = {0};
    int rc = GOS_OK;
    for (int i = 0; i < sel.n && !rc; i++) {
        if (sel.n > 1 && !(json_out && !strcmp(json_out, "-")))
            printf("%s== GPU %d of %d ==\n", i ? "\n" : "", i, sel.n);
        rc = probe_one(&sel, i, section, json_out, verify_bytes, repeats, argc, argv, nfd ? &kept[i] : NULL);
    }
    if (!rc && nfd)
        rc = gos_labels_save((const gos_chip *const *)kept, sel.n, expiry, cli_served_vgpus(), nfd) ? cli_fail() : 0;
    for (int i = 0; i < sel.n; i++)
        gos_chip_free(kept[i]);
    return rc;
}
