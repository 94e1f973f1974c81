/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_dvfs.c: `gpuos dvfs run | analyze | report | probe` (pillar 1c, paper 000).
 *
 *   run      a switching-latency campaign (changes SM clocks: on a real GPU only
 *            with --allow-clock-changes; clocks are restored on every exit path)
 *   analyze  phases 1 and 3 + outlier filtering from a saved trace directory
 *   report   an HTML page from analysis or run directories (several: one GPU
 *            each, and the fleet view)
 *   probe    everything except the switch, at the current clock (never changes
 *            a clock): timing workload, timer synchronisation, throttle reasons */
#include "cli/cli.h"
#include "common/provenance.h"
#include "common/jsonio.h"
#include "common/status.h"
#include "dvfs/dvfs.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: gpuos dvfs run --freqs MHZ,MHZ[,...] [--device SEL | --sim CHIP] [--rse PCT]\n"
    "                      [--min N] [--max N] [--out RUN] [--sms N|all] [--max-iters N]\n"
    "                      [--rse-raw] [--json FILE|-] [--allow-clock-changes] [--quiet]\n"
    "       gpuos dvfs analyze RUN --out DIR [--quiet]\n"
    "       gpuos dvfs report DIR... --html OUT.html [--quiet]\n"
    "       gpuos dvfs probe [--device SEL | --sim CHIP] [--freqs MHZ,...] [--json FILE|-]\n"
    "\n"
    "SM frequency switching latency (paper 000): a per-SM timing workload with %globaltimer\n"
    "stamps, CPU-GPU timer synchronisation, phase 1 calibration, phase 2/3 switching runs\n"
    "until the relative standard error of the latencies falls under --rse (default 5 %,\n"
    "checked every 25 measurements, --min 25, --max 500 per pair), throttle checks every 5.\n"
    "The RSE is that of the latencies the outlier filter keeps; --rse-raw uses all of them\n"
    "(as the paper does: one outlier can then keep a pair running for hundreds of passes).\n"
    "\n"
    "run: changing clocks is system-wide; on a real GPU it needs --allow-clock-changes and\n"
    "     root; without it the command refuses and changes nothing. --sim runs the whole\n"
    "     campaign on a simulated device (virtual time). --out saves raw traces:\n"
    "     RUN/run.json, RUN/calib/<mhz>.csv, RUN/pairs/<init>-<target>/<k>.csv|.json.\n"
    "     --sms: SMs whose iterations are recorded (default 16 spread over the chip; every\n"
    "     SM runs the workload).\n"
    "analyze: writes DIR/<init>_<target>_<host>_<gpu>.csv per pair and DIR/summary.json.\n"
    "report: DIR is an analysis (summary.json) or a run directory (run.json, analysed on the\n"
    "     fly). Per GPU: heatmaps of best/worst latency, increasing vs decreasing switches,\n"
    "     table II, a scatter of every measured switch per pair (paper 000 figures 5, 6).\n"
    "     Several DIRs, one GPU each (by the UUID in run.json; the same GPU twice is an\n"
    "     error), add the fleet view: ranges of the best and worst case across the GPUs and\n"
    "     per GPU, box plots of the 3 pairs that spread most (figures 7-9).\n"
    "probe: the timing workload's iteration time at the current clock, how many iterations\n"
    "     separate 15 MHz steps, the timer synchronisation uncertainty, throttle reasons.\n"
    "\n" CLI_HELP_DEVICE "                   (one GPU)\n" CLI_HELP_SIM
    CLI_HELP_JSON("run: the campaign's summary (gpuos.dvfs-campaign/1); probe: gpuos.dvfs-probe/1")
    "  --quiet, -q      no progress or tables (implied by --json -)\n";

static int help(void)
{
    fputs(usage_text, stdout);
    return 0;
}

static int parse_freqs(const char *s, gos_dvfs_config *cfg)
{
    cfg->n_freqs = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100000 || (*end && *end != ','))
            return -1;
        if (cfg->n_freqs == GOS_DVFS_MAX_FREQS)
            return -1;
        cfg->freqs[cfg->n_freqs++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p)
            return -1;
    }
    return cfg->n_freqs > 0 ? 0 : -1;
}

/* Common option parsing (cfg starts from the defaults; takes_pos: 0 no
 * positional argument, 1 one, 2 any number); returns 0, or the exit status
 * when it should stop. */
typedef struct {
    const char *sim, *device, *out, *json, *html, *pos;
    char **all_pos; /* every positional argument (takes_pos 2) */
    int n_pos;
    int allow, quiet, have_freqs;
} opts;

static int parse(const char *sub, int argc, char **argv, int takes_pos, gos_dvfs_config *cfg, opts *o, int *stop)
{
    *stop = 1;
    gos_dvfs_config_default(cfg);
    memset(o, 0, sizeof *o);
    char cmd[16];
    snprintf(cmd, sizeof cmd, "dvfs %s", sub);
    enum { O_FREQS = CLI_FIRST_OWN, O_OUT, O_HTML, O_RSE, O_MIN, O_MAX, O_MAX_ITERS, O_SMS, O_RSE_RAW, O_ALLOW };
    static const struct option table[] = {CLI_OPT_HELP,
                                          {"freqs", required_argument, NULL, O_FREQS},
                                          CLI_OPT_DEVICE,
                                          CLI_OPT_SIM,
                                          {"rse", required_argument, NULL, O_RSE},
                                          {"min", required_argument, NULL, O_MIN},
                                          {"max", required_argument, NULL, O_MAX},
                                          {"out", required_argument, NULL, O_OUT},
                                          {"sms", required_argument, NULL, O_SMS},
                                          {"max-iters", required_argument, NULL, O_MAX_ITERS},
                                          {"rse-raw", no_argument, NULL, O_RSE_RAW},
                                          CLI_OPT_JSON,
                                          {"allow-clock-changes", no_argument, NULL, O_ALLOW},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"html", required_argument, NULL, O_HTML},
                                          CLI_OPT_END};
    cli_args a = CLI_ARGS(cmd, argc, argv, table);
    for (int c; (c = cli_next(&a)) != -1;) {
        long x;
        switch (c) {
        case 'h': return help();
        case O_FREQS:
            if (parse_freqs(optarg, cfg))
                return cli_usage(cmd, "--freqs wants MHz values separated by commas, got \"%s\"", optarg);
            o->have_freqs = 1;
            break;
        case CLI_DEVICE: o->device = optarg; break;
        case CLI_SIM: o->sim = optarg; break;
        case O_OUT: o->out = optarg; break;
        case CLI_JSON: o->json = optarg; break;
        case O_HTML: o->html = optarg; break;
        case O_RSE: {
            char *end;
            double r = strtod(optarg, &end);
            if (end == optarg || *end || !(r > 0 && r < 100))
                return cli_usage(cmd, "--rse wants a percentage in (0, 100), got \"%s\"", optarg);
            cfg->rse = r / 100;
            break;
        }
        case O_MIN:
        case O_MAX:
        case O_MAX_ITERS:
            if (cli_parse_int(optarg, 2, 100000000, &x))
                return cli_usage(cmd, "bad %s \"%s\"", argv[optind - 1], optarg);
            *(c == O_MIN ? &cfg->min_n : c == O_MAX ? &cfg->max_n : &cfg->max_iters) = (int)x;
            break;
        case O_SMS:
            if (!strcmp(optarg, "all"))
                cfg->n_record = 0;
            else if (cli_parse_int(optarg, 1, 100000, &x))
                return cli_usage(cmd, "--sms wants a count or \"all\", got \"%s\"", optarg);
            else
                cfg->n_record = (int)x;
            break;
        case O_RSE_RAW: cfg->rse_raw = 1; break;
        case O_ALLOW: o->allow = 1; break;
        case 'q': o->quiet = 1; break;
        case CLI_STOP: return a.rc;
        }
    }
    for (int i = optind; i < argc; i++) {
        if ((o->pos && takes_pos < 2) || !takes_pos)
            return cli_usage(cmd, "unexpected argument \"%s\"", argv[i]);
        if (!o->pos)
            o->pos = argv[i], o->all_pos = argv + i;
        o->n_pos++;
    }
    if (o->json && !strcmp(o->json, "-"))
        o->quiet = 1; /* standard output is the JSON's alone */
    *stop = 0;
    return 0;
}

static json_t *num_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* The campaign's outcome as JSON (--json): totals and the online per-pair summaries. */
static int save_campaign(const gos_device *d, const gos_dvfs_config *cfg, const gos_dvfs_campaign *r,
                         const char *path)
{
    json_t *ps = json_array();
    for (int p = 0; p < r->n_pairs; p++) {
        const gos_dvfs_pair_result *pr = &r->pairs[p];
        const gos_dvfs_pair_summary *s = &pr->sum;
        json_t *j = GOS_JSON_OBJ(GOS_JI("init_mhz", pr->init_mhz), GOS_JI("target_mhz", pr->target_mhz),
                                 GOS_JB("valid", pr->valid), GOS_JI("attempts", pr->n_attempts),
                                 GOS_JI("n_measurements", pr->n));
        if (pr->n)
            GOS_JSON_PUT(j, GOS_JI("n", s->n), GOS_JI("n_outliers", s->n_outliers), GOS_JO("min_ms", num_or_null(s->min_ms)),
                         GOS_JO("mean_ms", num_or_null(s->mean_ms)), GOS_JO("max_ms", num_or_null(s->max_ms)),
                         GOS_JO("sd_ms", num_or_null(s->sd_ms)),
                         GOS_JO("ci95_ms", json_pack("[o,o]", num_or_null(s->ci_lo_ms), num_or_null(s->ci_hi_ms))),
                         GOS_JO("rse_kept", num_or_null(s->rse_kept)), GOS_JI("clusters", s->n_clusters));
        if (pr->skipped[0])
            json_object_set_new(j, "skipped", json_string(pr->skipped));
        json_array_append_new(ps, j);
    }
    json_t *o = GOS_JSON_OBJ(
        GOS_JS("schema", "gpuos.dvfs-campaign/1"), GOS_JS("device", d->info.name), GOS_JB("simulated", d->info.simulated),
        GOS_JR("rse", cfg->rse), GOS_JI("min", cfg->min_n), GOS_JI("max", cfg->max_n), GOS_JR("total_s", r->total_s),
        GOS_JI("measurements", r->n_measurements), GOS_JI("attempts", r->n_attempts), GOS_JI("work_fma", r->work),
        GOS_JR("window_ms", r->window_ms), GOS_JR("upper_bound_ms", r->upper_bound_ms),
        GOS_JI("thermal_events", r->thermal_events), GOS_JI("power_events", r->power_events),
        GOS_JR("sync_uncertainty_ns", r->sync.uncertainty_ns));
    json_object_set_new(o, "pairs", ps);
    int rc = gos_json_save_atomic(o, path);
    json_decref(o);
    return rc;
}

/* dvfs run on a terminal (issue 47): the last line is "pair k of n, about M
 * minutes left", redrawn in place; the campaign's log lines go through a
 * stream (fopencookie) that clears it, prints the line above it and draws it
 * again. Not on a terminal the log lines are plain, as before. */
typedef struct {
    FILE *out;
    char status[96];
    int shown; /* the status line is on the screen */
    int bol;   /* the output is at the start of a line */
} run_status;

static void status_clear(run_status *s)
{
    if (s->shown)
        fputs("\r\033[K", s->out);
    s->shown = 0;
}

static void status_draw(run_status *s)
{
    if (s->bol && s->status[0]) {
        status_clear(s);
        fputs(s->status, s->out);
        s->shown = 1;
    }
    fflush(s->out);
}

static ssize_t status_write(void *arg, const char *buf, size_t len)
{
    run_status *s = arg;
    if (!len)
        return 0;
    status_clear(s);
    fwrite(buf, 1, len, s->out);
    s->bol = buf[len - 1] == '\n';
    status_draw(s);
    return (ssize_t)len;
}

static void status_progress(void *arg, int k, int n, double left_s)
{
    run_status *s = arg;
    int min = (int)lround(left_s / 60);
    if (left_s < 0)
        snprintf(s->status, sizeof s->status, "pair %d of %d", k, n);
    else if (min < 1)
        snprintf(s->status, sizeof s->status, "pair %d of %d, under a minute left", k, n);
    else
        snprintf(s->status, sizeof s->status, "pair %d of %d, about %d minute%s left", k, n, min,
                 min == 1 ? "" : "s");
    status_draw(s);
}

/* The subcommands get the parsed configuration and options by value. */
static int dvfs_run(int argc, char **argv, gos_dvfs_config cfg, opts o)
{
    int rc;
    if (cfg.min_n > cfg.max_n)
        return cli_usage("dvfs run", "--min %d is larger than --max %d", cfg.min_n, cfg.max_n);
    /* safety first: nothing is opened, nothing is changed */
    if (!o.sim && !o.allow) {
        fprintf(stderr, "gpuos: dvfs run changes the GPU's SM clocks system-wide; refusing without "
                        "--allow-clock-changes (nothing was changed; --sim CHIP runs a simulated campaign)\n");
        return 1;
    }
    gos_device *d;
    if ((rc = cli_open_one(o.device, o.sim, &d)))
        return cli_fail();
    if (gos_dvfs_clock_permission(d, o.allow)) { /* fell back? never on a real GPU without the flag */
        rc = cli_fail(); /* before close: it prints the permission message */
        gos_device_close(d);
        return rc;
    }
    if (!o.have_freqs) { /* a model's few clocks may be the default; a real GPU's never */
        if ((d->info.caps & GOS_CAP_SYSTEM_CLOCKS) || d->info.n_supported_sm_clocks < 2 ||
            d->info.n_supported_sm_clocks > 16) {
            gos_device_close(d);
            return cli_usage("dvfs run", "--freqs is required");
        }
        cfg.n_freqs = d->info.n_supported_sm_clocks;
        memcpy(cfg.freqs, d->info.supported_sm_clocks_mhz, cfg.n_freqs * sizeof(int));
    }
    char command[1024];
    gos_command_line(command, sizeof command, "gpuos", argc, argv);
    cfg.command = command;
    cfg.allow_clock_changes = o.allow;
    cfg.out = o.out;
    cfg.log = o.quiet ? NULL : stdout;
    run_status st = {.out = stdout, .bol = 1};
    FILE *tty_log = NULL;
    if (!o.quiet && isatty(fileno(stdout)) &&
        (tty_log = fopencookie(&st, "w", (cookie_io_functions_t){.write = status_write}))) {
        setvbuf(tty_log, NULL, _IOLBF, 0);
        cfg.log = tty_log;
        cfg.progress = status_progress;
        cfg.progress_arg = &st;
    }
    /* traces of MBs are allocated and freed per measurement: keep them in the
     * heap instead of fresh mmap()s (page faults dominated simulated runs) */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    gos_dvfs_campaign res;
    rc = gos_dvfs_campaign_run(d, &cfg, &res);
    if (tty_log) {
        fclose(tty_log); /* flushes through status_write */
        status_clear(&st);
        fflush(stdout);
    }
    if (!rc && o.json)
        rc = save_campaign(d, &cfg, &res, o.json);
    if (rc) {
        gos_dvfs_campaign_free(&res);
        gos_device_close(d);
        return cli_fail();
    }
    if (!o.quiet) {
        printf("\n%-7s %-7s %5s %5s %9s %9s %9s %7s %4s\n", "init", "target", "n", "out", "min ms",
               "mean ms", "max ms", "RSE %", "clus");
        for (int p = 0; p < res.n_pairs; p++) {
            const gos_dvfs_pair_result *pr = &res.pairs[p];
            if (!pr->valid || pr->n == 0) {
                printf("%-7d %-7d %s\n", pr->init_mhz, pr->target_mhz, pr->skipped[0] ? pr->skipped : "no data");
                continue;
            }
            const gos_dvfs_pair_summary *s = &pr->sum;
            printf("%-7d %-7d %5zu %5zu %9.3f %9.3f %9.3f %7.2f %4d%s%s\n", pr->init_mhz, pr->target_mhz,
                   s->n, s->n_outliers, s->min_ms, s->mean_ms, s->max_ms, 100 * s->rse_kept, s->n_clusters,
                   pr->skipped[0] ? "  " : "", pr->skipped);
        }
        printf("\n%sGPU campaign: %zu measurements (%zu attempts) in %.1f s of %s time, %d thermal / %d "
               "power throttling events, timer sync +-%.0f ns (worst %.0f ns)\n",
               gos_dev_label(d), res.n_measurements, res.n_attempts, res.total_s,
               d->info.caps & GOS_CAP_VIRTUAL_TIME ? "virtual" : "wall", res.thermal_events, res.power_events,
               res.sync.uncertainty_ns, res.sync_unc_max_ns);
        if (o.out)
            printf("traces in %s (gpuos dvfs analyze %s --out DIR)\n", o.out, o.out);
    }
    gos_dvfs_campaign_free(&res);
    gos_device_close(d);
    return 0;
}

/* `analyze RUN --out DIR` and `report DIR... --html OUT`: directories in, a path out. */
static int dvfs_dir_step(int argc, char **argv, gos_dvfs_config cfg, opts o)
{
    int report = !strcmp(argv[0], "report");
    char cmd[16];
    snprintf(cmd, sizeof cmd, "dvfs %s", argv[0]);
    if (!o.pos)
        return cli_usage(cmd, report ? "which directory? (gpuos dvfs report DIR... --html OUT)"
                                     : "which trace directory? (gpuos dvfs analyze RUN --out DIR)");
    if (!(report ? o.html : o.out))
        return cli_usage(cmd, "%s is required", report ? "--html OUT" : "--out DIR");
    if (report ? gos_dvfs_report((const char *const *)o.all_pos, o.n_pos, o.html)
               : gos_dvfs_analyze(o.pos, o.out, o.quiet ? NULL : stdout))
        return cli_fail();
    if (report && !o.quiet)
        printf("wrote %s\n", o.html);
    return 0;
}

static int dvfs_probe(int argc, char **argv, gos_dvfs_config cfg, opts o)
{
    int rc;
    if (o.allow)
        return cli_usage("dvfs probe", "probe never changes clocks; --allow-clock-changes does not apply");
    gos_device *d;
    if (cli_open_one(o.device, o.sim, &d))
        return cli_fail();
    char command[1024];
    gos_command_line(command, sizeof command, "gpuos", argc, argv);
    cfg.command = command;
    rc = gos_dvfs_probe(d, &cfg, o.json, o.quiet ? NULL : stdout);
    gos_device_close(d);
    return rc ? cli_fail() : 0;
}

int cmd_dvfs(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage("dvfs", "which subcommand? run | analyze | report | probe");
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help"))
        return help();
    if (!strcmp(sub, "--options")) { /* the subcommands' one table */
        gos_dvfs_config cfg;
        opts o;
        int stop;
        return parse("dvfs", argc, argv, 0, &cfg, &o, &stop);
    }
    static const struct {
        const char *name;
        int takes_pos; /* positional arguments (directories): 1 one, 2 several */
        int (*fn)(int, char **, gos_dvfs_config, opts);
    } subs[] = {{"run", 0, dvfs_run}, {"analyze", 1, dvfs_dir_step}, {"report", 2, dvfs_dir_step},
                {"probe", 0, dvfs_probe}};
    for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++)
        if (!strcmp(sub, subs[k].name)) {
            gos_dvfs_config cfg;
            opts o;
            int stop, rc = parse(sub, argc - 1, argv + 1, subs[k].takes_pos, &cfg, &o, &stop);
            return stop ? rc : subs[k].fn(argc - 1, argv + 1, cfg, o);
        }
    return cli_usage("dvfs", "unknown subcommand \"%s\" (run | analyze | report | probe)", sub);
}
