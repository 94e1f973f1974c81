/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_report.c: `gpuos report CHIP.json --html OUT.html`: renders a chart (any
 * gpuos.chip/1 file, probed or simulated) as one self-contained HTML page. */
#include "cli/cli.h"
#include "common/status.h"
#include "report/report.h"


#include <stdio.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: gpuos report CHIP.json [MORE.json...] [--html OUT.html] [--markdown OUT.md|-]\n"
    "       gpuos report [--device SEL | --sim CHIP[,...]] --html OUT.html\n"
    "Renders a chart written by `gpuos probe --json` as one self-contained HTML page:\n"
    "floor plan coloured by memory partition, HBM and L2 latency histograms, the\n"
    "bandwidth-versus-working-set curve, and the figures beside paper 001's.\n"
    "  --html OUT      the page (inline SVG, no scripts, nothing fetched)\n"
    "  --markdown OUT  only the table beside the paper, as Markdown ('-' = stdout)\n"
    "  MORE.json       charts of the same GPU whose verification / repeat results\n"
    "                  complete CHIP.json's (e.g. from `probe numa --verify all`);\n"
    "                  charts of different GPUs make a fleet page comparing them\n"
    CLI_HELP_DEVICE "                   charted first (gpuos probe), then rendered (one GPU: its page;\n"
    "                   more: the fleet)\n" CLI_HELP_SIM;

/* Charts the selected GPUs with `gpuos probe` into dir; the paths into paths[]. */
static int probe_selected(const char *device, const char *sim, const char *dir, char paths[][4096], int max, int *n)
{
    cli_devices sel;
    if (cli_select_devices(device, sim, &sel))
        return GOS_EINVAL;
    char out[4096];
    if (sel.n == 1)
        snprintf(out, sizeof out, "%s/chart.json", dir);
    else
        snprintf(out, sizeof out, "%s", dir);
    char *args[9] = {"probe", "--json", out};
    int k = 3;
    if (device)
        args[k++] = "--device", args[k++] = (char *)device;
    if (sim)
        args[k++] = "--sim", args[k++] = (char *)sim;
    int oind = optind; /* cmd_probe parses args with getopt: its own scan */
    args[k] = NULL;
    int prc = cmd_probe(k, args);
    optind = oind;
    if (prc)
        return gos_fail(GOS_EIO, "charting the GPUs failed (above)");
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return gos_fail(GOS_EIO, "cannot read %s: %m", dir);
    for (struct dirent *e; (e = readdir(d)) && *n < max;)
        if (strstr(e->d_name, ".json"))
            snprintf(paths[(*n)++], 4096, "%s/%s", dir, e->d_name);
    closedir(d);
    return *n ? GOS_OK : gos_fail(GOS_EIO, "the probe wrote no chart");
}

int cmd_report(int argc, char **argv)
{
    const char *out = NULL, *md = NULL, *device = NULL, *sim = NULL;
    static char paths[CLI_MAX_DEVICES][4096];
    const char *in[CLI_MAX_DEVICES];
    int n_in = 0;
    enum { O_HTML = CLI_FIRST_OWN, O_MARKDOWN };
    static const struct option opts[] = {CLI_OPT_HELP, {"html", required_argument, NULL, O_HTML},
                                         {"markdown", required_argument, NULL, O_MARKDOWN}, CLI_OPT_DEVICE,
                                         CLI_OPT_SIM, CLI_OPT_END};
    cli_args a = CLI_ARGS("report", argc, argv, opts);
    for (int o; (o = cli_next(&a)) != -1;)
        switch (o) {
        case 'h': fputs(usage_text, stdout); return 0;
        case O_HTML: out = optarg; break;
        case O_MARKDOWN: md = optarg; break;
        case CLI_DEVICE: device = optarg; break;
        case CLI_SIM: sim = optarg; break;
        case CLI_STOP: return a.rc;
        }
    for (int i = optind; i < argc; i++) {
        if (n_in == CLI_MAX_DEVICES)
            return cli_usage("report", "at most %d charts", CLI_MAX_DEVICES);
        in[n_in++] = argv[i];
    }
    if ((device || sim) && n_in)
        return cli_usage("report", "either chart files or --device/--sim, not both");
    if (!n_in && !device && !sim)
        return cli_usage("report", "which chip file?");
    if (!out && !md)
        return cli_usage("report", "--html OUT.html or --markdown OUT.md is required");
    char tmp[] = "/tmp/gpuos-report.XXXXXX";
    int rc = GOS_OK, made_tmp = 0;
    if (device || sim) {
        if (!mkdtemp(tmp)) {
            gos_fail(GOS_EIO, "cannot create a temporary directory: %m");
            return cli_fail();
        }
        made_tmp = 1;
        if ((rc = probe_selected(device, sim, tmp, paths, CLI_MAX_DEVICES, &n_in)))
            goto done;
        for (int i = 0; i < n_in; i++)
            in[i] = paths[i];
    }
    /* charts of one GPU (same UUID) complete the first; different GPUs make a fleet */
    gos_chip *g[CLI_MAX_DEVICES] = {0};
    int n_g = 0;
    for (int i = 0; i < n_in && !rc; i++) {
        gos_chip *c;
        if ((rc = gos_chip_load(in[i], &c)))
            break;
        int k = 0;
        while (k < n_g && strcmp(g[k]->device.uuid, c->device.uuid))
            k++;
        if (k < n_g) {
            rc = gos_report_merge(g[k], c, in[i]);
            gos_chip_free(c);
        } else
            g[n_g++] = c;
    }
    if (!rc && md && n_g > 1)
        rc = gos_fail(GOS_EINVAL, "%s: another GPU (%s, the chart is of %s): --markdown takes one GPU's charts",
                      in[n_in - 1], g[n_g - 1]->device.uuid, g[0]->device.uuid);
    if (!rc && out)
        rc = n_g > 1 ? gos_report_fleet_html((const gos_chip *const *)g, n_g, out) : gos_report_html(g[0], out);
    if (!rc && md)
        rc = gos_report_markdown(g[0], md);
    for (int i = 0; i < n_g; i++)
        gos_chip_free(g[i]);
done:
    if (made_tmp) {
        for (int i = 0; i < n_in; i++)
            unlink(paths[i]);
        rmdir(tmp);
    }
    if (rc)
        return cli_fail();
    if (out)
        printf("wrote %s\n", out);
    return 0;
}
