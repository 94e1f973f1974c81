/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_share.c: issue 22's sections of vgpu_bench: busy tenants sharing the
 * GPU (sharing) and one tenant's launches and copies beside a busy one
 * (neighbour), each through the daemon in the mode measured and as plain CUDA
 * processes side by side in the same run.
 *
 *   sharing    2, 4 and 8 busy tenants of equal vGPUs launching full-GPU kernels
 *              of 100 us and 1 ms, synchronising after every kernel (sync) or
 *              every 32 (streaming): the GPU's busy fraction (kernels x length
 *              alone over wall time), beside as many plain CUDA processes. The
 *              kernels are fixed work (`loop`, its iterations calibrated alone
 *              to the length), not a wait on the GPU's clock, which passes while
 *              a time-sliced kernel is preempted and would count the same time
 *              twice. "light" kernels are one warp per SM (they leave the SMs
 *              room: two at once under MPS run about as fast as one, so the
 *              fraction passes 100 % where kernels overlap); "dense" ones two
 *              blocks of 1024 threads per SM, which fill the SMs' issue slots:
 *              overlapping tenants then gain only the gaps between kernels.
 *   neighbour  a tenant's launch + synchronise round trips (median, 90th
 *              percentile) and 64 MB pinned copies each way, alone and while an
 *              equal vGPU streams 1 ms kernels, and the same for plain CUDA
 *              processes: what a tenant keeps of its speed next to a busy one. */
#include "vgpu_lib.h"

#include "common/status.h"
#include "device/exec_ops.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHARE_STREAM_EVERY 32 /* the streaming tenant synchronises every 32 kernels */

/* Child: `loop` of iters on the whole GPU, synchronised after every one (sync)
 * or every SHARE_STREAM_EVERY, until its window ends; writes how many
 * completed to fd. */
static void child_tenant(const char *vgpu, uint64_t iters, int sync, double secs, int fd)
{
    gpuos_vgpu *g = vopen(vgpu);
    struct wl_backend gb = wl_gpuos(g, (unsigned)dev->info.sm_count);
    gpuos_function f = gfn(g, "loop");
    struct gos_launch_cfg c = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = &iters, .param_bytes = 8};
    shape(gb.sms, &c.grid[0], &c.block[0]);
    double until = gate_pass() + secs;
    long k = wl_stream(&gb, f, &c, sync ? 1 : SHARE_STREAM_EVERY, until);
    if (k < 0)
        _exit(2);
    gpuos_close(g);
    dprintf(fd, "%ld\n", k);
    _exit(0);
}

/* A plain CUDA process (the native baseline), started by exec (the parent's
 * CUDA context does not survive a fork): `vgpu_bench --native-tenant ITERS SYNC
 * SECS light|dense [--sim CHIP]`. Opens the device itself, says it is ready on
 * stdout, waits for the start instant (now()) on stdin, runs as child_tenant
 * does and prints its count. */
int native_tenant_main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[2], "periodic")) /* the mixed section's tenants */
        return mixed_tenant_main(argc, argv);
    if (argc >= 3 && !strcmp(argv[2], "locker")) /* the swappath section's other process */
        return swappath_locker_main(argc, argv);
    if (argc < 6) {
        fprintf(stderr, "vgpu_bench --native-tenant ITERS SYNC SECS light|dense [--sim CHIP]\n");
        return 2;
    }
    uint64_t iters = strtoull(argv[2], NULL, 10);
    int sync = atoi(argv[3]);
    double secs = atof(argv[4]);
    share_dense = !strcmp(argv[5], "dense");
    if (argc == 8 && !strcmp(argv[6], "--sim"))
        sim_chip = argv[7];
    gos_device_spec spec = {.sim = sim_chip, .ordinal = 0};
    gos_device *d;
    void *st;
    uint64_t fn;
    if (gos_device_open(&spec, &d) || gos_exec_init(d) || gos_exec_stream_create(d, &st)) {
        fprintf(stderr, "native tenant: %s\n", gos_last_error());
        return 1;
    }
    struct wl_backend nb = wl_native(d, st);
    if (nb.ops->kernel(&nb, "loop", &fn)) {
        fprintf(stderr, "native tenant: %s\n", gos_last_error());
        return 1;
    }
    struct gos_launch_cfg c = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = &iters, .param_bytes = 8};
    shape(nb.sms, &c.grid[0], &c.block[0]);
    double start = native_ready_wait();
    if (start < 0)
        return 1;
    long k = wl_stream(&nb, fn, &c, sync ? 1 : SHARE_STREAM_EVERY, start + secs);
    if (k < 0)
        return 2;
    printf("%ld\n", k);
    return 0;
}

/* n plain CUDA processes, ready and told when to start (0.05 s from now);
 * the start time. out[i]: their stdout. */
static double natives_start(int n, uint64_t iters, int sync, double secs, pid_t *kids, FILE **out)
{
    char a1[32], a2[16], a3[32];
    snprintf(a1, sizeof a1, "%llu", (unsigned long long)iters);
    snprintf(a2, sizeof a2, "%d", sync);
    snprintf(a3, sizeof a3, "%.3f", secs);
    char *av[] = {"vgpu_bench", "--native-tenant", a1, a2, a3, share_dense ? "dense" : "light",
                  sim_chip ? "--sim" : NULL, (char *)sim_chip, NULL};
    char **avs[8];
    for (int i = 0; i < n; i++)
        avs[i] = av;
    return natives_go(n, avs, kids, out);
}

/* Their kernel counts, once they end. */
static long natives_end(int n, pid_t *kids, FILE **out)
{
    long tot = 0, k;
    for (int i = 0; i < n; i++) {
        if (fscanf(out[i], "%ld", &k) == 1)
            tot += k;
        fclose(out[i]);
        waitpid(kids[i], NULL, 0);
    }
    return tot;
}

struct tenant_args {
    uint64_t iters;
    int sync;
    double secs;
};

static void tenant_client(const char *vgpu, int i, int fd, const void *arg)
{
    const struct tenant_args *a = arg;
    (void)i;
    child_tenant(vgpu, a->iters, a->sync, a->secs, fd);
}

/* n tenants for secs: through the daemon (native 0) or as plain processes,
 * each launching `loop` of iters; the kernels completed in all. */
static long tenants_run(int n, uint64_t iters, int sync, double secs, int native)
{
    pid_t kids[8];
    if (native) {
        FILE *out[8];
        natives_start(n, iters, sync, secs, kids, out);
        return natives_end(n, kids, out);
    }
    struct tenant_args a = {iters, sync, secs};
    int fd = clients_fork(n, 0, tenant_client, &a, kids);
    gate_open(n);
    clients_wait(n, kids);
    return read_counts(fd, n);
}


/* ---- sharing ------------------------------------------------------------- */

/* One row: kernels of nominal length nominal_ns, each measured alone to take
 * ns (GPU time = kernels x ns). iso: "native" or the mode measured. */
static json_t *sharing_one(const char *iso, int n, uint64_t nominal_ns, uint64_t ns, int sync, double secs,
                           long kernels)
{
    int native = !strcmp(iso, "native");
    const char *label = native ? "native" : mode_label(), *kind = share_dense ? "dense" : "light";
    double busy = (double)kernels * (double)ns / (secs * 1e9);
    fprintf(stderr, "sharing %-9s %d tenants, %4llu us %s kernels, %s: %ld kernels in %.1f s, GPU busy %.1f %%\n",
            label, n, (unsigned long long)(nominal_ns / 1000), kind, sync ? "sync     " : "streaming", kernels, secs,
            100 * busy);
    return json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:b, s:I, s:f, s:f}", "isolation", iso, "overlap",
                     native ? "off" : overlap_label(), "kernel", kind, "tenants", n, "kernel_us",
                     (json_int_t)(nominal_ns / 1000), "kernel_ns_alone", (json_int_t)ns, "sync", sync, "kernels",
                     (json_int_t)kernels, "seconds", secs, "busy_fraction", busy);
}

/* Light kernels: every count of --vgpus (--quick: 8 tenants synchronising
 * only), both lengths, synchronising and streaming; dense kernels: two and
 * four tenants synchronising. Plain processes (two and four) once per run,
 * beside the first mode measured. */
json_t *sharing(void)
{
    static const int counts[] = {2, 4, 8};
    static const uint64_t lens[] = {100000, 1000000};
    static int native_done[2];
    json_t *list = json_array();
    double secs = quick ? 1.5 : 3.0;
    for (int dense = 0; dense < 2; dense++) {
        share_dense = dense;
        uint64_t iters[2], len[2];
        for (int li = 0; li < 2; li++) {
            iters[li] = loop_iters(lens[li], &len[li]);
            fprintf(stderr, "sharing: %s loop of %llu iterations takes %.1f us alone (for %llu us)\n",
                    dense ? "dense" : "light", (unsigned long long)iters[li], len[li] / 1e3,
                    (unsigned long long)(lens[li] / 1000));
        }
        for (int ci = 0; ci < 3; ci++)
            for (int li = 0; li < 2; li++)
                for (int sync = 1; sync >= 0; sync--) {
                    int n = counts[ci];
                    char nb[4];
                    snprintf(nb, sizeof nb, "%d", n);
                    if (!want(fair_counts, nb) || (dense && (n > 4 || !sync)) || (quick && n == 8 && !sync))
                        continue;
                    if (!native_done[dense] && n <= 4)
                        json_array_append_new(list, sharing_one("native", n, lens[li], len[li], sync, secs,
                                                                tenants_run(n, iters[li], sync, secs, 1)));
                    daemon_start("band", "mrq", n, "5%");
                    long k = tenants_run(n, iters[li], sync, secs, 0);
                    daemon_stop();
                    json_array_append_new(list, sharing_one(iso_mode ? iso_mode : "-", n, lens[li], len[li], sync,
                                                            secs, k));
                }
        native_done[dense] = 1;
    }
    share_dense = 0;
    return list;
}

/* ---- one tenant beside a busy one ---------------------------------------- */

static json_t *probe_json(struct wl_probe p)
{
    return json_pack("{s:f, s:f, s:i, s:f, s:f}", "launch_sync_us", p.rt_us, "launch_sync_p90_us", p.rt_p90_us,
                     "rounds", p.rounds, "htod_gbps", p.htod_gbps, "dtoh_gbps", p.dtoh_gbps);
}

static void probe_print(const char *who, const char *when, struct wl_probe p)
{
    fprintf(stderr,
            "neighbour %-9s %-22s launch+sync %8.1f us (p90 %8.1f, %4d rounds), 64 MB pinned htod %6.2f dtoh %6.2f "
            "GB/s\n",
            who, when, p.rt_us, p.rt_p90_us, p.rounds, p.htod_gbps, p.dtoh_gbps);
}

/* The ratios beside / alone of one side. */
static json_t *probe_ratios(struct wl_probe alone, struct wl_probe beside)
{
    return json_pack("{s:f, s:f, s:f}", "launch_sync", alone.rt_us / beside.rt_us, "htod",
                     beside.htod_gbps / alone.htod_gbps, "dtoh", beside.dtoh_gbps / alone.dtoh_gbps);
}

/* Natively once per run (beside the first mode), then through the daemon:
 * alone, and while an equal vGPU (a plain process natively) streams light
 * 1 ms kernels. Ratios: higher is better (round trips as rates). */
json_t *neighbour(void)
{
    static json_t *native;
    static struct wl_tally tally[2]; /* native's probes, alone and beside */
    uint64_t len, iters = loop_iters(1000000, &len);
    double busy_s = 7.0; /* longer than a probe (5.5 s at most) after 0.3 s */
    if (!native) {
        pid_t kid;
        FILE *out;
        wl_begin(&nat_be, &nat_be);
        struct wl_probe alone = wl_probe(&nat_be);
        tally[0] = nat_be.tally;
        wl_begin(&nat_be, &nat_be);
        double start = natives_start(1, iters, 0, busy_s, &kid, &out);
        while (now() < start + 0.3)
            usleep(1000);
        struct wl_probe beside = wl_probe(&nat_be);
        tally[1] = nat_be.tally;
        long k = natives_end(1, &kid, &out);
        probe_print("native", "alone", alone);
        probe_print("native", "beside a busy process", beside);
        native = json_pack("{s:o, s:o, s:o, s:I}", "alone", probe_json(alone), "beside_busy", probe_json(beside),
                           "ratio", probe_ratios(alone, beside), "busy_kernels", (json_int_t)k);
    }
    daemon_start("band", "mrq", 2, "10%");
    gpuos_vgpu *g = vopen("v1");
    struct wl_backend gb = wl_gpuos(g, (unsigned)dev->info.sm_count);
    struct wl_probe alone = wl_probe(&gb);
    wl_note("neighbour", "alone", &tally[0], &gb.tally);
    wl_begin(&gb, &gb);
    struct tenant_args a = {iters, 0, busy_s};
    pid_t kid;
    int fd = clients_fork(1, 0, tenant_client, &a, &kid);
    double start = gate_open(1);
    while (now() < start + 0.3)
        usleep(1000);
    struct wl_probe beside = wl_probe(&gb);
    wl_note("neighbour", "beside a busy one", &tally[1], &gb.tally);
    clients_wait(1, &kid);
    long k = read_counts(fd, 1);
    gpuos_close(g);
    daemon_stop();
    probe_print(mode_label(), "alone", alone);
    probe_print(mode_label(), "beside a busy vGPU", beside);
    return json_pack("{s:s, s:s, s:f, s:o, s:{s:o, s:o, s:o, s:I}, s:s}", "isolation", iso_mode ? iso_mode : "-",
                     "overlap", overlap_label(), "busy_kernel_us", len / 1e3, "native", json_incref(native),
                     "gpuos", "alone", probe_json(alone), "beside_busy", probe_json(beside), "ratio",
                     probe_ratios(alone, beside), "busy_kernels", (json_int_t)k, "method",
                     "the neighbour (an equal vGPU; natively a plain process) streams light 1 ms kernels, synchronising "
                     "every 32; launch + synchronise of an empty kernel, 64 MB pinned copies; ratio = beside / alone "
                     "(round trips as rates)");
}
