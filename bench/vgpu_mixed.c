/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_mixed.c: issue 41's section of vgpu_bench (mixed), with the bench's own
 * kernels, so that it runs on the simulated device too (tests/gpu/mixed.sh
 * does the same with PyTorch tenants on the GPU).
 *
 *   latency rows  a latency tenant (a request every P ms: four light `loop`
 *                 kernels of 500 us, 2 ms of GPU time alone, and a
 *                 synchronise; each request's latency from its planned start
 *                 to the synchronise's return) beside a batch tenant (dense
 *                 1 ms `loop` kernels back to back, a synchronise every 8), at
 *                 latency shares of 50, 30 and 10 % (P = the burst over 40 % of
 *                 the share: its demand stays within it): the latency tenant
 *                 alone (a plain process), both as plain processes (driver
 *                 time-slicing), both as clients of NVIDIA's MPS (a server the
 *                 bench starts in a directory of its own under /tmp and quits
 *                 at the end, also when it dies), and through gpuos under
 *                 `process` and `mps` with the latency vGPU in the latency class
 *                 (latency_ms = 2) under either handover (preempt, beside;
 *                 --quick: the mode's other one at 50/50 only) and without
 *                 it. The plain processes and NVIDIA's MPS need a real GPU (one simulated device per process
 *                 shares nothing): on --sim their rows say why they were
 *                 skipped. Each row: p50/p99/max, p99 over alone, the batch
 *                 tenant's kernels/s over alone and over the plain processes.
 *   shares rows   batch tenants at 10/90, 30/70 and 40/30/20/10 through gpuos
 *                 per mode: each tenant's kernels/s over the same tenant alone
 *                 (a plain process) against its share, and their sum.
 * The gpuos daemons run grant_us = 16000 (--grant-us overrides), what
 * grant_us = auto gave the tenants on an H100; on the simulated
 * device auto would give 4 ms grants. */
#include "vgpu_lib.h"

#include "common/status.h"
#include "device/exec_ops.h"
#include "serve/mps.h"

#include <ftw.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAT_KERNELS 4          /* a request: four kernels ... */
#define LAT_KERNEL_NS 500000u  /* ... of 500 us alone */
#define LAT_DEMAND 0.4         /* of the latency vGPU's share */
#define LAT_CLASS_MS 2         /* latency_ms of the latency vGPU */
#define BATCH_KERNEL_NS 1000000u
#define BATCH_EVERY 8          /* the batch tenant synchronises every 8 kernels */
#define MIXED_GRANT_US 16000
#define MIXED_MAX 4            /* tenants in one run at most */

/* A tenant: bursts of k `loop` kernels of iters (dense or light shape) and a
 * synchronise; period_s > 0: a burst every period_s (a latency tenant), 0:
 * back to back (a batch tenant). */
struct tenant {
    uint64_t iters;
    int dense, k;
    double period_s;
};

/* What a tenant did in its window: kernels, requests and their latencies. */
struct outcome {
    long kernels;
    int requests;
    double p50, p99, max;
};

/* Launches k kernels and synchronises (natively or through a handle). */
typedef int (*burst_fn)(void *ctx, int k);

/* The tenant's loop from start for secs (a latency tenant's first request a
 * tenth of a second later, once the batch tenant is busy). */
static struct outcome tenant_loop(const struct tenant *t, double start, double secs, burst_fn burst, void *ctx)
{
    struct outcome o = {0};
    double until = start + secs;
    if (t->period_s <= 0) {
        while (now() < until) {
            if (burst(ctx, t->k))
                _exit(2);
            o.kernels += t->k;
        }
        return o;
    }
    int cap = (int)(secs / t->period_s) + 1;
    double *lat = calloc((size_t)cap, sizeof *lat);
    if (!lat)
        _exit(2);
    for (double plan = start + 0.1; plan < until && o.requests < cap; plan += t->period_s) {
        double wait = plan - now();
        if (wait > 0)
            usleep((useconds_t)(wait * 1e6));
        if (burst(ctx, t->k))
            _exit(2);
        lat[o.requests++] = (now() - plan) * 1e3;
        o.kernels += t->k;
    }
    if (o.requests) {
        o.p50 = pctl(lat, o.requests, 0.5);
        o.p99 = pctl(lat, o.requests, 0.99);
        o.max = lat[o.requests - 1];
    }
    free(lat);
    return o;
}

static void outcome_write(int fd, int i, struct outcome o)
{
    dprintf(fd, "%d %ld %d %.4f %.4f %.4f\n", i, o.kernels, o.requests, o.p50, o.p99, o.max);
}

/* One line of outcome_write into out[i]; 0 if none. */
static int outcome_read(FILE *f, struct outcome *out, int n)
{
    struct outcome o;
    int i;
    if (fscanf(f, "%d %ld %d %lf %lf %lf", &i, &o.kernels, &o.requests, &o.p50, &o.p99, &o.max) != 6 || i < 0 ||
        i >= n)
        return 0;
    out[i] = o;
    return 1;
}

static void tenant_cfg(unsigned sms, const struct tenant *t, unsigned *grid, unsigned *block)
{
    int keep = share_dense;
    share_dense = t->dense;
    shape(sms, grid, block);
    share_dense = keep;
}

/* ---- through gpuos: child clients of the daemon --------------------------- */

struct gctx {
    gpuos_vgpu *g;
    gpuos_function f;
    gpuos_launch_config c;
    uint64_t iters;
};

static int gburst(void *p, int k)
{
    struct gctx *x = p;
    for (int i = 0; i < k; i++)
        if (gpuos_launch(x->g, x->f, &x->c, &x->iters, 8))
            return 1;
    return gpuos_synchronize(x->g) != 0;
}

struct grun {
    const struct tenant *t;
    double secs;
};

static void gtenant(const char *vgpu, int i, int fd, const void *arg)
{
    const struct grun *r = arg;
    struct gctx x = {.g = vopen(vgpu), .c = {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0}, .iters = r->t[i].iters};
    x.f = gfn(x.g, "loop");
    tenant_cfg((unsigned)dev->info.sm_count, &r->t[i], &x.c.grid[0], &x.c.block[0]);
    struct outcome o = tenant_loop(&r->t[i], gate_pass(), r->secs, gburst, &x);
    gpuos_close(x.g);
    outcome_write(fd, i, o);
}

/* n tenants on vGPUs v0.. of the daemon running now, for secs. */
static void gpuos_run(int n, const struct tenant *t, double secs, struct outcome *out)
{
    pid_t kids[MIXED_MAX];
    struct grun r = {t, secs};
    int fd = clients_fork(n, 0, gtenant, &r, kids);
    gate_open(n);
    clients_wait(n, kids);
    FILE *f = fdopen(fd, "r");
    int got = 0;
    while (f && got < n && outcome_read(f, out, n))
        got++;
    if (f)
        fclose(f);
    if (got < n)
        DIE("mixed: %d of %d gpuos tenants reported", got, n);
}

/* ---- plain processes ------------------------------------------------------ */

struct nctx {
    gos_device *d;
    void *fn, *st;
    struct gos_launch_cfg c;
};

static int nburst(void *p, int k)
{
    struct nctx *x = p;
    for (int i = 0; i < k; i++)
        if (gos_exec_launch(x->d, x->fn, &x->c, x->st))
            return 1;
    return gos_exec_stream_sync(x->d, x->st) != 0;
}

/* A plain CUDA process, exec'd (the parent's context does not survive a
 * fork): `vgpu_bench --native-tenant periodic ITERS DENSE K PERIOD_S SECS
 * [--sim CHIP]`. Says "ready" on stdout, reads its start instant (now()) on
 * stdin, runs the tenant and prints its outcome. */
int mixed_tenant_main(int argc, char **argv)
{
    if (argc != 8 && argc != 10) {
        fprintf(stderr, "vgpu_bench --native-tenant periodic ITERS DENSE K PERIOD_S SECS [--sim CHIP]\n");
        return 2;
    }
    struct tenant t = {strtoull(argv[3], NULL, 10), atoi(argv[4]), atoi(argv[5]), atof(argv[6])};
    double secs = atof(argv[7]), start;
    if (argc == 10)
        sim_chip = argv[9];
    gos_device_spec spec = {.sim = sim_chip, .ordinal = 0};
    struct nctx x = {.c = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = &t.iters, .param_bytes = 8}};
    void *mod;
    if (gos_device_open(&spec, &x.d) || gos_exec_init(x.d) || gos_exec_stream_create(x.d, &x.st) ||
        gos_exec_module_load(x.d, NULL, 0, GOS_EXEC_BUILTIN, &mod) || gos_exec_function(x.d, mod, "loop", &x.fn)) {
        fprintf(stderr, "mixed tenant: %s\n", gos_last_error());
        return 1;
    }
    tenant_cfg((unsigned)x.d->info.sm_count, &t, &x.c.grid[0], &x.c.block[0]);
    printf("ready\n");
    fflush(stdout);
    if (scanf("%lf", &start) != 1)
        return 1;
    while (now() < start)
        usleep(200);
    outcome_write(1, 0, tenant_loop(&t, start, secs, nburst, &x));
    return 0;
}

/* n plain processes side by side for secs (MPS clients where the
 * environment names a server). */
static void native_run(int n, const struct tenant *t, double secs, struct outcome *out)
{
    pid_t kids[MIXED_MAX];
    FILE *res[MIXED_MAX];
    char a[MIXED_MAX][5][32], **avs[MIXED_MAX], *av[MIXED_MAX][11];
    for (int i = 0; i < n; i++) {
        snprintf(a[i][0], sizeof a[i][0], "%llu", (unsigned long long)t[i].iters);
        snprintf(a[i][1], sizeof a[i][1], "%d", t[i].dense);
        snprintf(a[i][2], sizeof a[i][2], "%d", t[i].k);
        snprintf(a[i][3], sizeof a[i][3], "%.6f", t[i].period_s);
        snprintf(a[i][4], sizeof a[i][4], "%.3f", secs);
        char *v[11] = {"vgpu_bench", "--native-tenant", "periodic", a[i][0], a[i][1], a[i][2], a[i][3], a[i][4],
                       sim_chip ? "--sim" : NULL, (char *)sim_chip, NULL};
        memcpy(av[i], v, sizeof v);
        avs[i] = av[i];
    }
    natives_go(n, avs, kids, res);
    int got = 0;
    for (int i = 0; i < n; i++) {
        struct outcome o[1];
        if (outcome_read(res[i], o, 1))
            out[i] = o[0], got++;
        fclose(res[i]);
        waitpid(kids[i], NULL, 0);
    }
    if (got < n)
        DIE("mixed: %d of %d plain tenants reported", got, n);
}

/* ---- NVIDIA's MPS, started by the bench ----------------------------------- */

static char mps_dir[128];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

/* Quits the server (srv_mps_stop waits until it is gone) and removes its
 * directory; in the bench's own process only (atexit runs in forked clients
 * too). */
static void mps_quit(void)
{
    if (!mps_dir[0] || getpid() != main_pid)
        return;
    srv_mps_stop(mps_dir);
    if (nftw(mps_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS))
        fprintf(stderr, "vgpu_bench: could not remove %s\n", mps_dir);
    mps_dir[0] = 0;
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    unsetenv("CUDA_MPS_LOG_DIRECTORY");
}

/* SIGINT, SIGTERM while the server runs: quit it, then die of the signal. */
static void mps_on_signal(int sig)
{
    mps_quit();
    daemon_stop();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Starts a server (plain processes started next are its clients); 0, or -1
 * with why it was not started. */
static int mps_begin(char *why, size_t cap)
{
    static int hooked;
    if (sim_chip) {
        snprintf(why, cap, "NVIDIA's MPS needs a real GPU (simulated device)");
        return -1;
    }
    if (!hooked) {
        atexit(mps_quit); /* DIE's exit too */
        hooked = 1;
    }
    if (srv_mps_start(mps_dir, sizeof mps_dir)) {
        snprintf(why, cap, "NVIDIA's MPS did not start (%s)", gos_last_error());
        mps_quit();
        return -1;
    }
    char env[160];
    snprintf(env, sizeof env, "%s/pipe", mps_dir);
    setenv("CUDA_MPS_PIPE_DIRECTORY", env, 1);
    snprintf(env, sizeof env, "%s/log", mps_dir);
    setenv("CUDA_MPS_LOG_DIRECTORY", env, 1);
    signal(SIGINT, mps_on_signal);
    signal(SIGTERM, mps_on_signal);
    return 0;
}

static void mps_end(void)
{
    mps_quit();
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
}

/* ---- rows ----------------------------------------------------------------- */

static const int splits[] = {50, 30, 10};
#define N_SPLITS 3

/* The run's tenants, window and baselines. */
struct mix {
    json_t *list;
    struct tenant lat, batch;
    double secs, batch_alone_kps;
    struct outcome alone[N_SPLITS], plain[N_SPLITS][2];
    int plain_ok;
    char mps_why[256]; /* NVIDIA's MPS could not start: why ("" if it did) */
};

static json_t *num_or_null(int ok, double v) { return ok ? json_real(v) : json_null(); }

/* The latency tenant at split s (its period) and the batch tenant beside it. */
static void pair_at(const struct mix *x, int s, struct tenant *t)
{
    t[0] = x->lat;
    t[0].period_s = LAT_KERNELS * LAT_KERNEL_NS / 1e9 / (LAT_DEMAND * splits[s] / 100.0);
    t[1] = x->batch;
}

static void latency_print(const char *kase, const char *iso, int cls, int split, double period_ms,
                          const struct outcome *o, double over_alone, double kps, const char *why)
{
    char b[48] = "";
    if (strcmp(kase, "alone"))
        snprintf(b, sizeof b, ", batch %.0f kernels/s", kps);
    if (why)
        fprintf(stderr, "mixed %-10s %-7s %2d/%-2d skipped: %s\n", kase, iso ? iso : "", split, 100 - split, why);
    else
        fprintf(stderr,
                "mixed %-10s %-7s %-13s %2d/%-2d period %5.1f ms: p50 %6.2f p99 %6.2f max %6.2f ms (%.2f x alone)%s\n",
                kase, iso ? iso : "", !iso ? "" : !cls ? "batch" : handover ? handover : "class", split, 100 - split,
                period_ms, o[0].p50, o[0].p99, o[0].max, over_alone, b);
}

/* A latency row at split s: case, isolation (NULL for plain processes),
 * class; o NULL: skipped for why. */
static json_t *latency_row(const struct mix *x, const char *kase, const char *iso, int cls, int s,
                           const struct outcome *o, const char *why)
{
    struct tenant t[2];
    pair_at(x, s, t);
    int ok = o != NULL, batch = ok && strcmp(kase, "alone");
    double kps = ok ? o[1].kernels / x->secs : 0, plain_kps = x->plain[s][1].kernels / x->secs,
           alone_p99 = x->alone[s].p99;
    char sp[16];
    snprintf(sp, sizeof sp, "%d/%d", splits[s], 100 - splits[s]);
    json_t *r = json_pack("{s:s, s:s, s:o, s:b, s:s, s:i, s:f, s:f, s:i, s:f, s:f}", "kind", "latency", "case", kase,
                          "isolation", iso ? json_string(iso) : json_null(), "latency_class", cls, "split", sp,
                          "latency_share", splits[s], "period_ms", t[0].period_s * 1e3, "burst_ms",
                          LAT_KERNELS * LAT_KERNEL_NS / 1e6, "latency_ms", cls ? LAT_CLASS_MS : 0, "seconds", x->secs,
                          "batch_kernel_ms", BATCH_KERNEL_NS / 1e6);
    json_object_set_new(r, "requests", ok ? json_integer(o[0].requests) : json_null());
    json_object_set_new(r, "p50_ms", num_or_null(ok, ok ? o[0].p50 : 0));
    json_object_set_new(r, "p99_ms", num_or_null(ok, ok ? o[0].p99 : 0));
    json_object_set_new(r, "max_ms", num_or_null(ok, ok ? o[0].max : 0));
    json_object_set_new(r, "p99_over_alone", num_or_null(ok && alone_p99 > 0, ok ? o[0].p99 / alone_p99 : 0));
    json_object_set_new(r, "batch_kernels_per_s", num_or_null(batch, kps));
    json_object_set_new(r, "batch_over_alone", num_or_null(batch, kps / x->batch_alone_kps));
    json_object_set_new(r, "batch_over_plain",
                        num_or_null(batch && x->plain_ok && plain_kps > 0, plain_kps > 0 ? kps / plain_kps : 0));
    json_object_set_new(r, "grant_us", iso ? json_integer(grant_us) : json_null());
    json_object_set_new(r, "handover", iso && cls && handover ? json_string(handover) : json_null());
    json_object_set_new(r, "skipped", why ? json_string(why) : json_null());
    latency_print(kase, iso, cls, splits[s], t[0].period_s * 1e3, o, ok && alone_p99 > 0 ? o[0].p99 / alone_p99 : 0,
                  kps, why);
    return r;
}

/* A shares row: tenants of pcts under iso, each over alone against its share. */
static json_t *shares_row(const struct mix *x, const char *iso, int n, const int *pcts, const struct outcome *o)
{
    json_t *sh = json_array(), *kps = json_array(), *over = json_array(), *prom = json_array();
    double sum = 0;
    char line[256] = "";
    for (int i = 0; i < n; i++) {
        double k = o[i].kernels / x->secs, f = k / x->batch_alone_kps;
        sum += f;
        json_array_append_new(sh, json_integer(pcts[i]));
        json_array_append_new(kps, json_real(k));
        json_array_append_new(over, json_real(f));
        json_array_append_new(prom, json_real(f / (pcts[i] / 100.0)));
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, " %d %%: %.3f of its promise;", pcts[i], f / (pcts[i] / 100.0));
    }
    fprintf(stderr, "mixed shares %-7s%s sum %.3f of one alone\n", iso, line, sum);
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:f, s:f, s:f, s:I}", "kind", "shares", "case", "gpuos",
                     "isolation", iso, "shares", sh, "kernels_per_s", kps, "over_alone", over, "over_promise", prom,
                     "sum_over_alone", sum, "alone_kernels_per_s", x->batch_alone_kps, "seconds", x->secs, "grant_us",
                     (json_int_t)grant_us);
}

/* Plain processes: the batch tenant alone, then per split the latency
 * tenant alone and both side by side (on a GPU), then both as clients of
 * NVIDIA's MPS (on a GPU with it). */
static void plain_rows(struct mix *x)
{
    struct outcome o[2];
    struct tenant t[2];
    native_run(1, &x->batch, x->secs, o);
    x->batch_alone_kps = o[0].kernels / x->secs;
    fprintf(stderr, "mixed: the batch tenant alone: %.0f kernels/s\n", x->batch_alone_kps);
    x->plain_ok = !sim_chip;
    for (int s = 0; s < N_SPLITS; s++) {
        pair_at(x, s, t);
        native_run(1, t, x->secs, &x->alone[s]);
        json_array_append_new(x->list, latency_row(x, "alone", NULL, 0, s, (struct outcome[2]){x->alone[s]}, NULL));
        if (x->plain_ok)
            native_run(2, t, x->secs, x->plain[s]);
        json_array_append_new(x->list, latency_row(x, "plain", NULL, 0, s, x->plain_ok ? x->plain[s] : NULL,
                                                   x->plain_ok ? NULL
                                                               : "one simulated device per process shares nothing: "
                                                                 "time-slicing needs a real GPU"));
    }
    int mps = mps_begin(x->mps_why, sizeof x->mps_why) == 0;
    for (int s = 0; s < N_SPLITS; s++) {
        pair_at(x, s, t);
        if (mps)
            native_run(2, t, x->secs, o);
        json_array_append_new(x->list,
                              latency_row(x, "driver_mps", NULL, 0, s, mps ? o : NULL, mps ? NULL : x->mps_why));
    }
    if (mps)
        mps_end();
}

/* Through gpuos under iso: per split with and without the latency class,
 * then the shares. */
static void gpuos_rows(struct mix *x, const char *iso)
{
    const char *keep_iso = iso_mode, *keep_overlap = overlap;
    iso_mode = iso;
    overlap = NULL; /* mps: pairs, its default (latency companions) */
    /* the class with each handover, written in the daemon's configuration
     * (the mode's default first; under --quick the other at the first split
     * only), then without it */
    int mps = !strcmp(iso, "mps");
    const char *hos[3] = {mps ? "beside" : "preempt", mps ? "preempt" : "beside", NULL};
    for (int s = 0; s < N_SPLITS; s++)
        for (int v = 0; v < 3; v++) {
            int cls = v < 2;
            if (v == 1 && quick && s)
                continue;
            struct tenant t[2];
            struct outcome o[2];
            int pcts[2] = {splits[s], 100 - splits[s]}, lms[2] = {cls ? LAT_CLASS_MS : 0, 0};
            pair_at(x, s, t);
            vgpu_pcts = pcts;
            vgpu_latency_ms = lms;
            handover = hos[v];
            daemon_start("band", "mrq", 2, "10%");
            gpuos_run(2, t, x->secs, o);
            daemon_stop();
            json_array_append_new(x->list, latency_row(x, "gpuos", iso, cls, s, o, NULL));
        }
    handover = NULL;
    vgpu_latency_ms = NULL;
    static const int sh[3][MIXED_MAX] = {{10, 90}, {30, 70}, {40, 30, 20, 10}};
    static const int nsh[3] = {2, 2, 4};
    for (int c = 0; c < 3; c++) {
        struct tenant t[MIXED_MAX];
        struct outcome o[MIXED_MAX];
        for (int i = 0; i < nsh[c]; i++)
            t[i] = x->batch;
        vgpu_pcts = sh[c];
        daemon_start("band", "mrq", nsh[c], "10%");
        gpuos_run(nsh[c], t, x->secs, o);
        daemon_stop();
        json_array_append_new(x->list, shares_row(x, iso, nsh[c], sh[c], o));
    }
    vgpu_pcts = NULL;
    iso_mode = keep_iso;
    overlap = keep_overlap;
}

/* The whole section once per run (whatever --isolation says: it measures
 * every mode itself); later modes get the same list. */
json_t *mixed(void)
{
    static json_t *done;
    if (done)
        return json_incref(done);
    static struct mix x;
    x.list = json_array();
    x.secs = quick ? (sim_chip ? 1.5 : 2.0) : 6.0;
    long keep_grant = grant_us;
    if (grant_us <= 0)
        grant_us = MIXED_GRANT_US;
    int keep_dense = share_dense;
    uint64_t got_lat, got_batch;
    share_dense = 0;
    x.lat = (struct tenant){loop_iters(LAT_KERNEL_NS, &got_lat), 0, LAT_KERNELS, 1};
    share_dense = 1;
    x.batch = (struct tenant){loop_iters(BATCH_KERNEL_NS, &got_batch), 1, BATCH_EVERY, 0};
    share_dense = keep_dense;
    fprintf(stderr, "mixed: latency kernels %.1f us, batch kernels %.1f us alone; %.1f s windows, grants of %ld us\n",
            got_lat / 1e3, got_batch / 1e3, x.secs, grant_us);
    plain_rows(&x);
    gpuos_rows(&x, "process");
    /* the daemon's mps needs what NVIDIA's MPS needs on a GPU (the simulated
     * device models it) */
    if (sim_chip || !x.mps_why[0])
        gpuos_rows(&x, "mps");
    else
        for (int s = 0; s < N_SPLITS; s++)
            json_array_append_new(x.list, latency_row(&x, "gpuos", "mps", 1, s, NULL, x.mps_why));
    grant_us = keep_grant;
    done = x.list;
    return json_incref(done);
}
