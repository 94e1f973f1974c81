/* cmd_report.c: `gpuos report CHIP.json --html OUT.html`: renders a chart (any
 * gpuos.chip/1 file, probed or simulated) as one self-contained HTML page. */
#include "cli/cli.h"
#include "common/status.h"
#include "report/report.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: gpuos report CHIP.json [MORE.json...] [--html OUT.html] [--markdown OUT.md|-]\n"
    "Renders a chart written by `gpuos probe --json` as one self-contained HTML page:\n"
    "floor plan coloured by memory partition, HBM and L2 latency histograms, the\n"
    "bandwidth-versus-working-set curve, and the figures beside paper 001's.\n"
    "  --html OUT      the page (inline SVG, no scripts, nothing fetched)\n"
    "  --markdown OUT  only the table beside the paper, as Markdown ('-' = stdout)\n"
    "  MORE.json       charts of the same GPU whose verification / repeat results\n"
    "                  complete CHIP.json's (e.g. from `probe numa --verify all`)\n";

int cmd_report(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *md = NULL, *more[8];
    int n_more = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--html")) {
            if (i + 1 >= argc)
                return cli_usage("report", "--html needs an output path");
            out = argv[++i];
        } else if (!strcmp(argv[i], "--markdown")) {
            if (i + 1 >= argc)
                return cli_usage("report", "--markdown needs an output path or -");
            md = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage("report", "unknown option \"%s\"", argv[i]);
        else if (!in)
            in = argv[i];
        else if (n_more < 8)
            more[n_more++] = argv[i];
        else
            return cli_usage("report", "at most 8 extra charts");
    }
    if (!in)
        return cli_usage("report", "which chip file?");
    if (!out && !md)
        return cli_usage("report", "--html OUT.html or --markdown OUT.md is required");
    gos_chip *c;
    if (gos_chip_load(in, &c))
        return cli_fail();
    int rc = GOS_OK;
    for (int i = 0; i < n_more && !rc; i++) {
        gos_chip *m;
        if (!(rc = gos_chip_load(more[i], &m))) {
            rc = gos_report_merge(c, m, more[i]);
            gos_chip_free(m);
        }
    }
    if (!rc && out)
        rc = gos_report_html(c, out);
    if (!rc && md)
        rc = gos_report_markdown(c, md);
    gos_chip_free(c);
    if (rc)
        return cli_fail();
    if (out)
        printf("wrote %s\n", out);
    return 0;
}
