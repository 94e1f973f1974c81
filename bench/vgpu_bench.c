/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_bench.c: pillar 3 benchmark, native device vs the same work through
 * `gpuos serve` + libgpuos (issue 4). One command (bench/vgpu.sh) runs it on the
 * real GPU and writes results/<gpu-uuid>/vgpu-bench.json; with --sim it runs on
 * the simulated device (CI smoke test and fairness tests).
 *
 *   usage: vgpu_bench --gpuos BUILD/gpuos [--sim CHIP] [--quick] [--only SECTIONS]
 *                     [--seconds S] (--out FILE.json | --results DIR)
 *   --isolation MODES (comma-separated, default process,none): each section once
 *   per mode; "mps+off" and "mps+pairs" are mps with overlap = off / pairs (mps's
 *   default); --vgpus 2,4,8,mix,70/30 picks fairness's configurations.
 *   --results DIR writes DIR/<gpu-uuid>/vgpu-bench.json; provenance (date, commit
 *   from $GPUOS_COMMIT, command, driver, host) is recorded in the file.
 *   --ops FILE: the operations each paired workload issued natively and
 *   through gpuos (launches, synchronises, copies and bytes each way,
 *   allocations; schemas/vgpu-bench-ops.schema.json): one function runs each
 *   workload against both backends (vgpu_work.h), and the counts show it.
 *   SECTIONS (comma-separated): sweep,small,copy,hostmem,launch,standalone,fairness,queues,switch,
 *   sharing,neighbour,mixed,swappath (--swap-mb N: its buffer; bench/vgpu_swappath.c)
 *
 * Sections (numbers are medians of repetitions after a warm-up):
 *   sweep      copy chunk size x pipeline depth through the daemon (pageable),
 *              the best pair becomes the library's defaults (paper 002, fig. 3);
 *   small      small-copy path vs pipelined path per size: the crossover (fig. 4);
 *   copy       {dir, bytes, host_mem, native_gbps, gpuos_gbps} for 4 KB..1 GB,
 *              native and gpuos in alternating blocks;
 *   ringprobe  small copies through the ring: client, executor and native time;
 *   hostmem    native copies from each kind of host memory (driver-pinned,
 *              registered memfd, with MADV_HUGEPAGE, registered malloc);
 *   launch     microseconds per launch, native vs gpuos (async stream of empty
 *              kernels, and launch+synchronise round trips);
 *   standalone Gdev's LOOP, MADD, MMUL, CPY, PINCPY (table 1), seconds;
 *   fairness   FIFO, Credit, BAND with 2, 4, 8 vGPUs of equal shares whose
 *              kernels differ 10x in length, bursty (launch, synchronise, repeat):
 *              achieved share of GPU time, from the daemon's own accounting, over
 *              a window where every client runs; --vgpus also takes "mix" (four
 *              vGPUs of 25 %, 0.2/1/5/20 ms kernels) and "70/30" (two vGPUs of
 *              70 % and 30 %, equal 1 ms kernels);
 *   queues     MRQ vs SDQ with two compute and two copy clients: throughput;
 *   sharing    2, 4 and 8 busy tenants of equal vGPUs launching full-GPU kernels
 *              of 100 us and 1 ms, synchronising after every kernel (sync) or
 *              every 32 (streaming): the GPU's busy fraction (kernels x length
 *              over wall time), beside as many plain CUDA processes (issue 22).
 *              The kernels are fixed work (`loop`, its iterations calibrated
 *              alone to the length), not a wait on the GPU's clock, which
 *              passes while a time-sliced kernel is preempted and would count
 *              the same time twice.
 * The daemon is started by this program for each configuration it needs.
 * Where a section runs native and gpuos side by side (copy, ringprobe, launch,
 * standalone, neighbour, sharing), both run the same function of vgpu_work.c
 * against two backends (issue 40.5). */
#include "vgpu_lib.h"

#include "common/jsonio.h"
#include "common/provenance.h"
#include "common/status.h"
#include "device/device.h"
#include "device/exec_ops.h"
#include "gpuos/gpuos.h"
#include "client/client_internal.h"
#include "proto/ring_shm.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double fair_seconds = 4.0;
static const char *switch_grants = "8000,16000"; /* switching: grant_us values tried besides the default */

/* ---- copies -------------------------------------------------------------- */

static int reps_for(size_t n)
{
    size_t r = (quick ? (32u << 20) : (512u << 20)) / n;
    return r < 3 ? 3 : r > (quick ? 10 : 40) ? (quick ? 10 : 40) : (int)r;
}

/* r copies (reps_for(n) when 0) of n bytes after a warm-up: GB/s of the
 * median. async: natively the vendor's asynchronous copy + stream sync (pinned
 * memory), else its synchronous copy (pageable); libgpuos picks its path by
 * the memory. */
static double copy_gbps(struct wl_backend *b, int htod, int async, void *host, uint64_t d, size_t n, int reps)
{
    int r = reps ? reps : reps_for(n);
    double t[64];
    wl_copy_times(b, htod, async, host, d, n, t, r);
    return (double)n / median(t, r) / 1e9;
}

/* the handle's backend of the workloads (vgpu_work.h) */
static struct wl_backend gpuos_be(gpuos_vgpu *g) { return wl_gpuos(g, (unsigned)dev->info.sm_count); }

/* a copy workload's operations, native's and gpuos's (--ops) */
static void note_copy(const char *section, int dir, size_t n, int pinned, struct wl_backend *gb)
{
    char work[64];
    snprintf(work, sizeof work, "%s %zu %s", dir ? "dtoh" : "htod", n, pinned ? "pinned" : "pageable");
    wl_note(section, work, &nat_be.tally, &gb->tally);
}

/* Native copies from the kinds of host memory a client can hold: the driver's
 * own pinned allocation (the "native pinned" of the copy table), a shared
 * memfd page-locked with cuMemHostRegister (what gpuos_host_alloc and the ring
 * use), the same with MADV_HUGEPAGE, and malloc'ed memory registered. Tells
 * how much of a pinned copy's gap is the memory kind rather than gpuos. */
static json_t *hostmem(void)
{
    size_t maxn = 16u << 20;
    uint64_t d;
    void *kinds[4] = {NULL, NULL, NULL, NULL};
    const char *names[4] = {"cuMemHostAlloc", "memfd", "memfd_thp", "malloc_registered"};
    if (gos_exec_mem_alloc(dev, maxn, &d) || gos_exec_host_alloc(dev, maxn, &kinds[0]))
        DIE("native buffers");
    for (int k = 1; k < 4; k++) {
        if (k < 3) {
            int fd = memfd_create("probe", MFD_CLOEXEC);
            if (fd < 0 || ftruncate(fd, (off_t)maxn))
                DIE("memfd");
            kinds[k] = mmap(NULL, maxn, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            if (kinds[k] == MAP_FAILED)
                DIE("mmap");
            if (k == 2)
                madvise(kinds[k], maxn, MADV_HUGEPAGE);
        } else if (posix_memalign(&kinds[k], 4096, maxn)) {
            DIE("malloc");
        }
        memset(kinds[k], k, maxn);
        if (gos_exec_host_register(dev, kinds[k], maxn))
            DIE("register %s: %s", names[k], gos_last_error());
    }
    json_t *list = json_array();
    for (size_t n = 4096; n <= maxn; n *= 4)
        for (int dir = 0; dir < 2; dir++)
            for (int k = 0; k < 4; k++) {
                double g = copy_gbps(&nat_be, dir == 0, 1, kinds[k], d, n, 0);
                fprintf(stderr, "hostmem %s %9zu %-18s %7.2f GB/s\n", dir ? "dtoh" : "htod", n, names[k], g);
                json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:f}", "dir", dir ? "dtoh" : "htod", "bytes",
                                                      (json_int_t)n, "host_mem", names[k], "gbps", g));
            }
    gos_exec_mem_free(dev, d);
    gos_exec_host_free(dev, kinds[0]);
    for (int k = 1; k < 4; k++) {
        gos_exec_host_unregister(dev, kinds[k]);
        if (k < 3)
            munmap(kinds[k], maxn);
        else
            free(kinds[k]);
    }
    return list;
}

/* The end of a copy section: its native and gpuos buffers, handle, daemon. */
static void copy_bench_end(gpuos_vgpu *g, uint64_t nd, void *npin, void *page)
{
    gos_exec_mem_free(dev, nd);
    gos_exec_host_free(dev, npin);
    free(page);
    gpuos_close(g);
    daemon_stop();
}

/* Where a small copy's time goes through the ring: per copy, the client's time
 * (median), the executor's time running the entry (from the ring's counters:
 * checks, the copy, its synchronisation) and the native copy's, one after the
 * other in one run. The client's time beyond the executor's is the hand-off. */
static json_t *ringprobe(void)
{
    daemon_start("band", "mrq", 1, "60%");
    gpuos_vgpu *g = vopen("v0");
    uint64_t nd;
    gpuos_dptr gd;
    void *npin, *gpin, *page = malloc(65536);
    memset(page, 3, 65536);
    if (gos_exec_mem_alloc(dev, 65536, &nd) || gos_exec_host_alloc(dev, 65536, &npin) ||
        gpuos_mem_alloc(g, 65536, &gd) || gpuos_host_alloc(g, 65536, &gpin))
        DIE("ringprobe buffers");
    if (!g->ring || !atomic_load(&gos_ring_ctl(g->ring)->open)) { /* isolation = none, or GPUOS_RING=0 */
        fprintf(stderr, "ringprobe: no ring granted (isolation = %s): skipped\n", iso_mode ? iso_mode : "-");
        copy_bench_end(g, nd, npin, page);
        return json_pack("{s:s}", "skipped", "no ring: isolation = none or GPUOS_RING=0");
    }
    struct gos_ring_ctl *k = gos_ring_ctl(g->ring);
    struct wl_backend gb = gpuos_be(g);
    json_t *list = json_array();
    static const size_t sizes[] = {64, 4096, 8192};
    for (int si = 0; si < 3; si++)
        for (int dir = 0; dir < 2; dir++)
            for (int pinned = 1; pinned >= 0; pinned--) {
                size_t n = sizes[si];
                /* native and gpuos in alternating blocks: close in time, and each
                 * block's first copy (the GPU switching between this process's
                 * context and the executor's, ~140 us) left out */
                enum { BLOCKS = 8, PER = 50, R = BLOCKS * PER };
                double tc[R], tn[R];
                void *host = pinned ? gpin : page;
                wl_begin(&nat_be, &gb);
                for (int b = 0; b < BLOCKS; b++) {
                    wl_copy_times(&nat_be, dir == 0, 1, pinned ? npin : page, nd, n, tn + b * PER, PER);
                    wl_copy_times(&gb, dir == 0, 1, host, gd, n, tc + b * PER, PER);
                }
                note_copy("ringprobe", dir, n, pinned, &gb);
                /* the executor's time per entry: the same copies, uncounted */
                uint64_t b0 = atomic_load(&k->copy_busy_ns), e0 = atomic_load(&k->copy_entries);
                for (int i = 0; i < R; i++)
                    if (gb.ops->copy(&gb, dir == 0, host, gd, n, 1))
                        DIE("ringprobe copy");
                uint64_t b1 = atomic_load(&k->copy_busy_ns), e1 = atomic_load(&k->copy_entries);
                double ex = e1 > e0 ? (double)(b1 - b0) / (double)(e1 - e0) / 1e3 : 0;
                double mc = median(tc, R) * 1e6, mn = median(tn, R) * 1e6;
                fprintf(stderr, "ringprobe %s %5zu %-8s native %6.2f us, gpuos %6.2f us (%.0f%%), executor %6.2f us/entry\n",
                        dir ? "dtoh" : "htod", n, pinned ? "pinned" : "pageable", mn, mc, 100 * mn / mc, ex);
                json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:f, s:f, s:f}", "dir", dir ? "dtoh" : "htod",
                                                      "bytes", (json_int_t)n, "host_mem", pinned ? "pinned" : "pageable",
                                                      "native_us", mn, "gpuos_us", mc, "executor_us", ex));
            }
    copy_bench_end(g, nd, npin, page);
    return list;
}

static size_t best_chunk = 0;
static int best_depth = 0;
static size_t best_small[2] = {0, 0};

static json_t *sweep(void)
{
    size_t n = quick ? (16u << 20) : (256u << 20);
    static const size_t chunks[] = {256u << 10, 1u << 20, 2u << 20, 4u << 20, 8u << 20, 16u << 20, 32u << 20};
    static const int depths[] = {2, 3, 4};
    daemon_start("band", "mrq", 1, "60%");
    gpuos_vgpu *g = vopen("v0");
    gpuos_dptr d;
    void *h = malloc(n), *pin;
    memset(h, 1, n);
    if (gpuos_mem_alloc(g, n, &d) || gpuos_host_alloc(g, n, &pin))
        DIE("alloc");
    memset(pin, 1, n);
    struct wl_backend gb = gpuos_be(g);
    json_t *list = json_array();
    double best = 0;
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
        for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
            if (chunks[c] > n)
                continue;
            if (gpuos_set_copy_params(g, chunks[c], depths[k]))
                DIE("set copy params");
            double up = copy_gbps(&gb, 1, 0, h, d, n, 3), down = copy_gbps(&gb, 0, 0, h, d, n, 3);
            double pup = copy_gbps(&gb, 1, 1, pin, d, n, 3), pdown = copy_gbps(&gb, 0, 1, pin, d, n, 3);
            json_array_append_new(list, json_pack("{s:I, s:i, s:f, s:f, s:f, s:f}", "chunk", (json_int_t)chunks[c],
                                                  "depth", depths[k], "htod_gbps", up, "dtoh_gbps", down,
                                                  "htod_pinned_gbps", pup, "dtoh_pinned_gbps", pdown));
            fprintf(stderr, "sweep chunk %zu depth %d: pageable htod %.2f dtoh %.2f, pinned htod %.2f dtoh %.2f GB/s\n",
                    chunks[c], depths[k], up, down, pup, pdown);
            if (up + down > best) {
                best = up + down;
                best_chunk = chunks[c];
                best_depth = depths[k];
            }
        }
    gpuos_close(g);
    free(h);
    daemon_stop();
    return json_pack("{s:I, s:o, s:I, s:i}", "bytes", (json_int_t)n, "points", list, "best_chunk",
                     (json_int_t)best_chunk, "best_depth", best_depth);
}

static json_t *small_path(void)
{
    daemon_start("band", "mrq", 1, "60%");
    gpuos_vgpu *g = vopen("v0");
    if (best_chunk)
        gpuos_set_copy_params(g, best_chunk, best_depth);
    size_t maxn = 1u << 20;
    gpuos_dptr d;
    void *h = malloc(maxn);
    memset(h, 2, maxn);
    if (gpuos_mem_alloc(g, maxn, &d))
        DIE("alloc");
    struct wl_backend gb = gpuos_be(g);
    json_t *list = json_array();
    for (int dir = 0; dir < 2; dir++) {
        size_t cross = 0;
        for (size_t n = 1024; n <= maxn; n *= 2) {
            double t[2];
            for (int path = 0; path < 2; path++) {
                gpuos_set_copy_small(g, path ? (size_t)-1 : 0);
                t[path] = (double)n / 1e3 / copy_gbps(&gb, dir == 0, 0, h, d, n, quick ? 9 : 41); /* us */
            }
            if (t[1] < t[0])
                cross = n;
            json_array_append_new(list, json_pack("{s:s, s:I, s:f, s:f}", "dir", dir == 0 ? "htod" : "dtoh", "bytes",
                                                  (json_int_t)n, "pipelined_us", t[0], "small_path_us", t[1]));
        }
        best_small[dir] = cross;
    }
    gpuos_close(g);
    free(h);
    daemon_stop();
    return json_pack("{s:o, s:I, s:I}", "points", list, "crossover_htod", (json_int_t)best_small[0],
                     "crossover_dtoh", (json_int_t)best_small[1]);
}

static void tune(gpuos_vgpu *g)
{
    if (best_chunk)
        gpuos_set_copy_params(g, best_chunk, best_depth);
    if (best_small[0] || best_small[1])
        gpuos_set_copy_small(g, best_small[0] < best_small[1] ? best_small[0] : best_small[1]);
}

static json_t *copies(void)
{
    size_t maxn = quick ? (16u << 20) : (1u << 30);
    daemon_start("band", "mrq", 1, "60%");
    gpuos_vgpu *g = vopen("v0");
    tune(g);
    uint64_t nd;
    gpuos_dptr gd;
    void *npin, *gpin, *page = malloc(maxn);
    memset(page, 3, maxn);
    if (gos_exec_mem_alloc(dev, maxn, &nd) || gos_exec_host_alloc(dev, maxn, &npin))
        DIE("native buffers");
    if (gpuos_mem_alloc(g, maxn, &gd) || gpuos_host_alloc(g, maxn, &gpin))
        DIE("gpuos buffers");
    memset(npin, 4, maxn);
    memset(gpin, 5, maxn);
    struct wl_backend gb = gpuos_be(g);
    json_t *list = json_array();
    for (size_t n = 4096; n <= maxn; n *= 4)
        for (int dir = 0; dir < 2; dir++)
            for (int pinned = 1; pinned >= 0; pinned--) {
                /* native and gpuos in alternating blocks, each block after its
                 * own warm-up (the GPU switches between this process's context
                 * and the executor's): both sides see the same drift of the
                 * machine, medians over all blocks */
                int blocks = n <= (64u << 20) ? 4 : 2, r = reps_for(n), per = r / blocks < 3 ? 3 : r / blocks;
                double tn[4 * 64], tg[4 * 64];
                wl_begin(&nat_be, &gb);
                for (int b = 0; b < blocks; b++) {
                    wl_copy_times(&nat_be, dir == 0, pinned, pinned ? npin : page, nd, n, tn + b * per, per);
                    wl_copy_times(&gb, dir == 0, pinned, pinned ? gpin : page, gd, n, tg + b * per, per);
                }
                note_copy("copy", dir, n, pinned, &gb);
                double nat = (double)n / median(tn, blocks * per) / 1e9, gos = (double)n / median(tg, blocks * per) / 1e9;
                fprintf(stderr, "copy %s %10zu %-8s native %7.2f gpuos %7.2f GB/s (%.0f%%)\n", dir ? "dtoh" : "htod", n,
                        pinned ? "pinned" : "pageable", nat, gos, 100 * gos / nat);
                json_array_append_new(list, json_pack("{s:s, s:I, s:s, s:f, s:f, s:f}", "dir", dir ? "dtoh" : "htod",
                                                      "bytes", (json_int_t)n, "host_mem",
                                                      pinned ? "pinned" : "pageable", "native_gbps", nat,
                                                      "gpuos_gbps", gos, "ratio", gos / nat));
            }
    copy_bench_end(g, nd, npin, page);
    return list;
}

/* ---- launches ------------------------------------------------------------ */

/* us per launch (the second of two runs of n) and per launch + synchronise
 * (the mean of m) */
static void launch_times(struct wl_backend *b, int n, int m, double *async, double *sync)
{
    static double t[1000];
    for (int w = 0; w < 2; w++)
        *async = wl_launch_rate(b, n);
    int k = wl_round_trips(b, 0, m, 0, t);
    double sum = 0;
    for (int i = 0; i < k; i++)
        sum += t[i];
    *sync = sum / k;
}

static json_t *launches(void)
{
    int n = quick ? 200 : 5000, m = quick ? 50 : 1000;
    double nat_async, nat_sync, gos_async, gos_sync;
    struct wl_backend gb = gpuos_be(NULL);
    wl_begin(&nat_be, &gb);
    launch_times(&nat_be, n, m, &nat_async, &nat_sync);
    daemon_start("band", "mrq", 1, "10%");
    gpuos_vgpu *g = gb.g = vopen("v0");
    launch_times(&gb, n, m, &gos_async, &gos_sync);
    wl_note("launch", "empty kernel", &nat_be.tally, &gb.tally);
    gpuos_close(g);
    daemon_stop();
    fprintf(stderr, "launch us: native %.2f gpuos %.2f; launch+sync native %.2f gpuos %.2f\n", nat_async, gos_async,
            nat_sync, gos_sync);
    return json_pack("{s:f, s:f, s:f, s:{s:f, s:f, s:f}, s:s}", "native", nat_async, "gpuos", gos_async, "added",
                     gos_async - nat_async, "launch_sync_us", "native", nat_sync, "gpuos", gos_sync, "added",
                     gos_sync - nat_sync, "method",
                     "empty kernel, 1 block; per launch = time of N back-to-back launches + one synchronise / N");
}

/* ---- Gdev's standalone benchmarks --------------------------------------- */

struct prog {
    const char *name;
    int kind; /* 0 LOOP, 1 MADD, 2 MMUL, 3 CPY, 4 PINCPY */
};

static json_t *standalone(void)
{
    static const struct prog progs[] = {{"LOOP", 0}, {"MADD", 1}, {"MMUL", 2}, {"CPY", 3}, {"PINCPY", 4}};
    size_t big = quick ? (16u << 20) : (256u << 20);
    void *hp = malloc(big), *npin, *gpin;
    memset(hp, 0, big);
    if (gos_exec_host_alloc(dev, big, &npin))
        DIE("pinned");
    daemon_start("band", "mrq", 1, "60%");
    gpuos_vgpu *g = vopen("v0");
    tune(g);
    if (gpuos_host_alloc(g, big, &gpin))
        DIE("gpuos pinned");
    struct wl_backend gb = gpuos_be(g);
    json_t *list = json_array();
    int reps = quick ? 2 : 5;
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        double tn[8], tg[8];
        int kind = progs[i].kind;
        wl_begin(&nat_be, &gb);
        wl_standalone(&nat_be, kind, hp, npin, big);
        wl_standalone(&gb, kind, hp, gpin, big);
        for (int r = 0; r < reps; r++) {
            tn[r] = wl_standalone(&nat_be, kind, hp, npin, big);
            tg[r] = wl_standalone(&gb, kind, hp, gpin, big);
        }
        wl_note("standalone", progs[i].name, &nat_be.tally, &gb.tally);
        double a = median(tn, reps), b = median(tg, reps);
        fprintf(stderr, "standalone %-6s native %.4f s gpuos %.4f s (%.2fx)\n", progs[i].name, a, b, b / a);
        json_array_append_new(list, json_pack("{s:s, s:f, s:f, s:f}", "name", progs[i].name, "native_s", a,
                                              "gpuos_s", b, "relative_speed", a / b));
    }
    gpuos_close(g);
    daemon_stop();
    gos_exec_host_free(dev, npin);
    free(hp);
    return list;
}

/* ---- a common start for child clients ----------------------------------- */

/* ---- switching between two busy clients (issue 9) ----------------------- */

/* Child: busy compute, 8 kernels of ns per synchronise, until `until`. */
static void child_busy(const char *vgpu, uint64_t ns, double secs, int fd)
{
    gpuos_vgpu *g = vopen(vgpu);
    struct wl_backend gb = gpuos_be(g);
    gpuos_function f = gfn(g, "sleep_ns");
    double until = gate_pass() + secs;
    struct gos_launch_cfg c = {.grid = {gb.sms, 1, 1}, .block = {32, 1, 1}, .params = &ns, .param_bytes = 8};
    long k = wl_stream(&gb, f, &c, 8, until);
    if (k < 0)
        _exit(2);
    gpuos_close(g);
    dprintf(fd, "%ld\n", k);
    _exit(0);
}

/* n busy clients, of vGPUs v0, v1, ... (one_vgpu: all of v0) */
static long busy_run_on(int n, uint64_t ns, double secs, int one_vgpu);
static long busy_run(int n, uint64_t ns, double secs) { return busy_run_on(n, ns, secs, 0); }

struct busy_args {
    uint64_t ns;
    double secs;
};

static void busy_client(const char *vgpu, int i, int fd, const void *arg)
{
    const struct busy_args *a = arg;
    (void)i;
    child_busy(vgpu, a->ns, a->secs, fd);
}

static long busy_run_on(int n, uint64_t ns, double secs, int one_vgpu)
{
    pid_t kids[2];
    struct busy_args a = {ns, secs};
    int fd = clients_fork(n, one_vgpu, busy_client, &a, kids);
    gate_open(n);
    clients_wait(n, kids);
    long tot = 0, k;
    FILE *f = fdopen(fd, "r");
    while (f && fscanf(f, "%ld", &k) == 1)
        tot += k;
    if (f)
        fclose(f);
    return tot;
}

/* Kernels of 1 ms: one busy client alone, then two busy clients of two vGPUs
 * (two executors under isolation = process: the GPU switches between their
 * contexts); the throughput lost to switching is 1 - two / one. */
static json_t *switching(void)
{
    uint64_t ns = 1000000;
    double secs = quick ? 1.5 : 3.0;
    char oldlog[400];
    snprintf(oldlog, sizeof oldlog, "%s/serve.log", tmpdir);
    unlink(oldlog); /* the log read below is this daemon's alone */
    daemon_start("band", "mrq", 2, "10%");
    long one = busy_run(1, ns, secs), two = busy_run(2, ns, secs);
    daemon_stop();
    /* grant_us = auto (the default): the grant the daemon settled on, from its log */
    double sw_us = 0, auto_us = 0;
    {
        char log[400], line[512];
        snprintf(log, sizeof log, "%s/serve.log", tmpdir);
        FILE *lf = fopen(log, "r");
        while (lf && fgets(line, sizeof line, lf)) {
            const char *p = strstr(line, "executors costs ");
            double a, b;
            if (p && sscanf(p, "executors costs %lf us: grants of %lf us", &a, &b) == 2)
                sw_us = a, auto_us = b;
        }
        if (lf)
            fclose(lf);
        unlink(log);
    }
    double ideal = secs * 1e9 / (double)ns, loss = one > 0 ? 1.0 - (double)two / (double)one : 0;
    int is_auto = grant_us <= 0 && !(iso_mode && !strcmp(iso_mode, "none"));
    if (is_auto && auto_us == 0)
        auto_us = 4000; /* no switch measured: the floor */
    fprintf(stderr, "switch (%s): 1 ms kernels in %.1f s: one client %ld, two clients %ld (ideal %.0f): lost %.1f %%",
            iso_mode ? iso_mode : "-", secs, one, two, ideal, 100 * loss);
    if (is_auto)
        fprintf(stderr, " (grant_us = auto: %.0f us for a measured switch of %.0f us)", auto_us, sw_us);
    fprintf(stderr, "\n");
    /* the trade-off: longer grants amortise the switch, and make the other
     * client wait longer (up to one grant) */
    json_t *by = json_array();
    char buf[128];
    snprintf(buf, sizeof buf, "%s", switch_grants);
    for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        long g0 = grant_us;
        grant_us = atol(t);
        if (grant_us < 100)
            continue;
        daemon_start("band", "mrq", 2, "10%");
        long two_g = busy_run(2, ns, secs);
        daemon_stop();
        double l = one > 0 ? 1.0 - (double)two_g / (double)one : 0;
        fprintf(stderr, "switch (%s) grant_us %ld: two clients %ld: lost %.1f %%\n", iso_mode ? iso_mode : "-",
                grant_us, two_g, 100 * l);
        json_array_append_new(by, json_pack("{s:I, s:I, s:f}", "grant_us", (json_int_t)grant_us, "two_clients",
                                            (json_int_t)two_g, "lost_fraction", l));
        grant_us = g0;
    }
    /* two busy clients of ONE vGPU: an executor each (per-client, the
     * default) against one shared executor (executor = per-vgpu): no context
     * switch between them */
    json_t *same = json_object();
    if (iso_mode && strcmp(iso_mode, "none")) {
        for (int pv = 0; pv < 2; pv++) {
            exec_per_vgpu = pv;
            daemon_start("band", "mrq", 2, "10%");
            long k = busy_run_on(2, ns, secs, 1);
            daemon_stop();
            double l = one > 0 ? 1.0 - (double)k / (double)one : 0;
            fprintf(stderr, "switch (%s) two clients of one vGPU, executor = %s: %ld: lost %.1f %%\n", iso_mode,
                    pv ? "per-vgpu" : "per-client", k, 100 * l);
            json_object_set_new(same, pv ? "per_vgpu" : "per_client",
                                json_pack("{s:I, s:f}", "two_clients", (json_int_t)k, "lost_fraction", l));
        }
        exec_per_vgpu = 0;
    }
    return json_pack("{s:I, s:f, s:I, s:I, s:f, s:f, s:s, s:f, s:f, s:o, s:o}", "kernel_ns", (json_int_t)ns, "seconds",
                     secs, "one_client", (json_int_t)one, "two_clients", (json_int_t)two, "ideal", ideal,
                     "lost_fraction", loss, "grant", grant_us > 0 ? "fixed" : is_auto ? "auto" : "default",
                     "auto_grant_us", auto_us, "switch_cost_us", sw_us, "by_grant", by, "one_vgpu", same);
}

/* ---- fairness and queues (child processes) ------------------------------ */

/* Child: bursty compute (launch one kernel of ns, synchronise, repeat) until
 * `until`; writes its launch count to fd (after "INDEX " when index >= 0). */
static void child_compute_n(const char *vgpu, uint64_t ns, double secs, int fd, int index)
{
    gpuos_vgpu *g = vopen(vgpu);
    struct wl_backend gb = gpuos_be(g);
    gpuos_function f = gfn(g, "sleep_ns");
    double until = gate_pass() + secs;
    struct gos_launch_cfg c = {.grid = {gb.sms, 1, 1}, .block = {32, 1, 1}, .params = &ns, .param_bytes = 8};
    long k = wl_stream(&gb, f, &c, 1, until);
    if (k < 0)
        _exit(2);
    gpuos_close(g);
    if (index >= 0)
        dprintf(fd, "%d %ld\n", index, k);
    else
        dprintf(fd, "%ld\n", k);
    _exit(0);
}

static void child_compute(const char *vgpu, uint64_t ns, double secs, int fd) { child_compute_n(vgpu, ns, secs, fd, -1); }

static void child_copy(const char *vgpu, size_t n, double secs, int fd)
{
    gpuos_vgpu *g = vopen(vgpu);
    gpuos_dptr d;
    void *h;
    if (gpuos_mem_alloc(g, n, &d) || gpuos_host_alloc(g, n, &h))
        _exit(2);
    tune(g);
    double until = gate_pass() + secs;
    long k = 0;
    while (now() < until) {
        if (gpuos_memcpy_htod(g, d, h, n))
            _exit(2);
        k++;
    }
    gpuos_close(g);
    dprintf(fd, "%ld\n", k);
    _exit(0);
}

static void snapshot(uint64_t *ns, uint64_t *held, int n, int copy)
{
    gpuos_vgpu_facts v[64];
    int m = 0;
    if (gpuos_admin_list(sockpath, v, 64, &m))
        DIE("admin list");
    for (int i = 0; i < n && i < m; i++) {
        ns[i] = copy ? v[i].copy_ns : v[i].compute_ns;
        held[i] = copy ? v[i].copy_held_ns : v[i].compute_held_ns;
    }
}

/* BAND's kernel mix of issue 22: four vGPUs of 25 % with kernels of 200 us,
 * 1 ms, 5 ms and 20 ms. */
static const uint64_t mix_ns[4] = {200000, 1000000, 5000000, 20000000};

/* 70/30 with equal kernels (issue 22): two vGPUs of 70 % and 30 %, both
 * clients launching 1 ms kernels. */
static const int pcts_70_30[2] = {70, 30};
static const uint64_t equal_ns[2] = {1000000, 1000000};

/* n vGPUs of shares pcts[i] (NULL: equal), bursty clients of kernel lengths
 * kns[i], for secs.
 * Two measures of each vGPU's share: the daemon's accounting over a window
 * where every client runs (achieved), and the clients' own work, kernels
 * completed x their length over the whole run (achieved_work: what the tenants
 * got done, independent of how the daemon charges, e.g. a companion grant). */
struct compute_args {
    const uint64_t *kns;
    double secs;
};

static void compute_client(const char *vgpu, int i, int fd, const void *arg)
{
    const struct compute_args *a = arg;
    child_compute_n(vgpu, a->kns[i], a->secs, fd, i);
}

static json_t *fairness_one(const char *policy, int n, const int *pcts, const uint64_t *kns, double secs,
                            double *maxerr)
{
    vgpu_pcts = pcts;
    daemon_start(policy, "mrq", pcts ? n : 8, "10%");
    vgpu_pcts = NULL;
    pid_t kids[8];
    struct compute_args ca = {kns, secs};
    int rfd = clients_fork(n, 0, compute_client, &ca, kids);
    double start = gate_open(n), until = start + secs;
    uint64_t a[8] = {0}, b[8] = {0}, ha[8] = {0}, hb[8] = {0};
    double warm = secs * 0.25;
    while (now() < start + warm)
        usleep(10000);
    snapshot(a, ha, n, 0);
    double t_a = now();
    while (now() < until - warm * 0.5)
        usleep(10000);
    snapshot(b, hb, n, 0);
    double t_b = now();
    clients_wait(n, kids);
    long done[8] = {0};
    FILE *cf = fdopen(rfd, "r");
    int idx;
    long cnt;
    while (cf && fscanf(cf, "%d %ld", &idx, &cnt) == 2)
        if (idx >= 0 && idx < n)
            done[idx] = cnt;
    if (cf)
        fclose(cf);
    daemon_stop();
    double tot = 0, tot_e = 0, tot_w = 0;
    for (int i = 0; i < n; i++) {
        tot += (double)(b[i] - a[i]);
        tot_e += (double)(b[i] - a[i]) + (double)(hb[i] - ha[i]);
        tot_w += (double)done[i] * (double)kns[i];
    }
    json_t *shares = json_array(), *ach = json_array(), *kern = json_array(), *ach_e = json_array(),
           *ach_w = json_array(), *kdone = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(kdone, json_integer(done[i]));
    for (int i = 0; i < n; i++)
        json_array_append_new(ach_e, json_real(tot_e > 0 ? ((double)(b[i] - a[i]) + (double)(hb[i] - ha[i])) / tot_e : 0));
    *maxerr = 0;
    double maxrel = 0, maxerr_w = 0;
    for (int i = 0; i < n; i++) {
        double s = pcts ? pcts[i] / 100.0 : 1.0 / n, x = tot > 0 ? (double)(b[i] - a[i]) / tot : 0;
        double w = tot_w > 0 ? (double)done[i] * (double)kns[i] / tot_w : 0;
        json_array_append_new(shares, json_real(s));
        json_array_append_new(ach, json_real(x));
        json_array_append_new(ach_w, json_real(w));
        json_array_append_new(kern, json_integer((json_int_t)kns[i]));
        /* Gdev's utilisation error: achieved minus assigned, in percentage points
         * of the GPU; also relative to the share. */
        double e = 100 * (x > s ? x - s : s - x), ew = 100 * (w > s ? w - s : s - w);
        if (e > *maxerr)
            *maxerr = e;
        if (e / s > maxrel)
            maxrel = e / s;
        if (ew > maxerr_w)
            maxerr_w = ew;
    }
    fprintf(stderr, "fairness %-6s %d vGPUs%s%s: max error %.2f points (%.1f%% of a share; GPU busy %.1f%%); by the clients' work %.2f points\n",
            policy, n, kns == mix_ns ? " (mix 0.2/1/5/20 ms)" : pcts ? " (70/30, 1 ms kernels)" : "",
            !strcmp(policy, "band") ? (band_charge_hold == 0 ? " (holds not charged)" : " (holds charged)") : "",
            *maxerr, maxrel, 100 * tot / 1e9 / (t_b - t_a), maxerr_w);
    return json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:f, s:f, s:f, s:f, s:f, s:s}", "policy",
                     policy, "isolation", mode_label(), "mix",
                     kns == mix_ns ? "0.2/1/5/20 ms" : pcts ? "70/30, 1 ms" : "1/10 ms", "vgpus", n,
                     "shares", shares, "achieved", ach, "achieved_engine_time", ach_e, "achieved_work", ach_w,
                     "kernels_done", kdone, "kernel_ns", kern, "band_charge_hold", band_charge_hold, "max_error_pct", *maxerr,
                     "max_rel_error_pct", maxrel, "max_error_work_pct", maxerr_w, "window_s", t_b - t_a, "gpu_busy",
                     tot / 1e9 / (t_b - t_a), "error_metric",
                     "max_error_pct: max over vGPUs of |achieved - share| x 100 (percentage points of GPU "
                     "time, the daemon's accounting); max_rel_error_pct: the same divided by the share; "
                     "max_error_work_pct: the same for the clients' own work (kernels completed x length, whole run)");
}

static json_t *fairness(void)
{
    static const char *pol[] = {"fifo", "credit", "band"};
    static const uint64_t alt[8] = {1000000, 10000000, 1000000, 10000000, /* 1 ms and 10 ms kernels, alternately */
                                    1000000, 10000000, 1000000, 10000000};
    /* --vgpus names; the uneven ones (the mix's 20 ms kernels, 70/30's 30 %
     * vGPU) run at least 4 s, so that one kernel is a small part of a share */
    static const struct {
        const char *name;
        int n;
        const uint64_t *kns;
        const int *pcts;
        double min_secs;
    } cfgs[] = {{"2", 2, alt, NULL, 0},       {"4", 4, alt, NULL, 0},
                {"8", 8, alt, NULL, 0},       {"mix", 4, mix_ns, NULL, 4},
                {"70/30", 2, equal_ns, pcts_70_30, 4}};
    json_t *list = json_array();
    for (int p = 0; p < 3; p++)
        for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
            if (!want(fair_policies, pol[p]) || !want(fair_counts, cfgs[k].name))
                continue;
            double secs = fair_seconds >= cfgs[k].min_secs ? fair_seconds : cfgs[k].min_secs, e;
            if (p == 2 && band_charge_hold < 0) {
                /* BAND both ways: holds charged (engine-time shares, the daemon's
                 * default) and not (GPU-time shares, Gdev's utilisation). */
                for (int h = 1; h >= 0; h--) {
                    band_charge_hold = h;
                    json_array_append_new(list, fairness_one(pol[p], cfgs[k].n, cfgs[k].pcts, cfgs[k].kns, secs, &e));
                }
                band_charge_hold = -1;
            } else {
                json_array_append_new(list, fairness_one(pol[p], cfgs[k].n, cfgs[k].pcts, cfgs[k].kns, secs, &e));
            }
        }
    return list;
}

static json_t *queues(void)
{
    static const char *modes[] = {"mrq", "sdq"};
    json_t *list = json_array();
    double secs = quick ? 1.5 : 4.0;
    size_t cbytes = quick ? (4u << 20) : (64u << 20);
    uint64_t kns = 2000000;
    for (int m = 0; m < 2; m++) {
        daemon_start("band", modes[m], 4, "10%");
        gate_reset();
        int pc[2], px[2];
        if (pipe(pc) || pipe(px))
            DIE("pipe");
        pid_t kids[4];
        for (int i = 0; i < 4; i++) {
            char name[16];
            snprintf(name, sizeof name, "v%d", i);
            if ((kids[i] = fork()) == 0) {
                if (i < 2)
                    child_compute(name, kns, secs, pc[1]);
                else
                    child_copy(name, cbytes, secs, px[1]);
            }
        }
        close(pc[1]);
        close(px[1]);
        gate_open(4);
        for (int i = 0; i < 4; i++)
            waitpid(kids[i], NULL, 0);
        long kernels = read_counts(pc[0], 2), ncopies = read_counts(px[0], 2);
        daemon_stop();
        double kps = kernels / secs, gbps = (double)ncopies * (double)cbytes / secs / 1e9;
        /* normalised: each resource's throughput relative to running it alone */
        double compute_busy = kps * kns / 1e9;
        fprintf(stderr, "queues %s: %.1f kernels/s (compute busy %.2f), copies %.2f GB/s\n", modes[m], kps,
                compute_busy, gbps);
        json_array_append_new(list, json_pack("{s:s, s:f, s:f, s:f, s:I, s:I}", "queue", modes[m], "kernels_per_s",
                                              kps, "compute_busy", compute_busy, "copy_gbps", gbps, "kernel_ns",
                                              (json_int_t)kns, "copy_bytes", (json_int_t)cbytes));
    }
    return list;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *only = NULL, *results = NULL, *ops = NULL;
    if (argc >= 2 && !strcmp(argv[1], "--native-tenant")) /* sharing's plain process */
        return native_tenant_main(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpuos") && i + 1 < argc)
            gpuos_bin = argv[++i];
        else if (!strcmp(argv[i], "--sim") && i + 1 < argc)
            sim_chip = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--results") && i + 1 < argc)
            results = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            fair_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--band-wait-us") && i + 1 < argc)
            band_wait_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--band-charge-hold") && i + 1 < argc)
            band_charge_hold = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--policies") && i + 1 < argc)
            fair_policies = argv[++i];
        else if (!strcmp(argv[i], "--vgpus") && i + 1 < argc)
            fair_counts = argv[++i];
        else if (!strcmp(argv[i], "--grant-us") && i + 1 < argc)
            grant_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--switch-grants") && i + 1 < argc)
            switch_grants = argv[++i];
        else if (!strcmp(argv[i], "--isolation") && i + 1 < argc)
            iso_modes = argv[++i];
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            ops = argv[++i];
        else if (!strcmp(argv[i], "--swap-mb") && i + 1 < argc) {
            char *e;
            swap_mb = strtol(argv[++i], &e, 10);
            if (*e || swap_mb < 1 || swap_mb > (1L << 20)) {
                fprintf(stderr, "vgpu_bench: --swap-mb wants megabytes, 1 to 1048576, not '%s'\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: vgpu_bench --gpuos BIN [--sim CHIP] [--quick] [--only LIST] [--seconds S] [--ops FILE] --out FILE\n");
            return 2;
        }
    }
    if (!gpuos_bin || (!out && !results)) {
        fprintf(stderr, "vgpu_bench: --gpuos and --out or --results are required\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    main_pid = getpid();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gpuos-bench.XXXXXX");
    if (!mkdtemp(tmpdir))
        DIE("mkdtemp");
    snprintf(sockpath, sizeof sockpath, "%s/s", tmpdir);
    gos_device_spec spec = {.sim = sim_chip, .ordinal = 0};
    if (gos_device_open(&spec, &dev))
        DIE("open device");
    if (gos_exec_init(dev) || gos_exec_stream_create(dev, &stream))
        DIE("device execution");
    nat_be = wl_native(dev, stream);
    wl_ops_open(ops);
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("gpuos.vgpu-bench/1"));
    {
        char cmd[2048];
        gos_command_line(cmd, sizeof cmd, NULL, argc, argv);
        json_object_set_new(root, "provenance", gos_provenance(cmd, dev->info.driver_version));
    }
    json_object_set_new(root, "device", json_pack("{s:s, s:s, s:b, s:s}", "name", dev->info.name, "uuid",
                                                  dev->info.uuid, "simulated", dev->info.simulated, "driver",
                                                  dev->info.driver_version));
    char path[1024];
    if (!out) {
        snprintf(path, sizeof path, "%s/%s", results, dev->info.uuid);
        mkdir(results, 0755);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/%s/vgpu-bench.json", results, dev->info.uuid);
        out = path;
    }
    /* The file is rewritten after every section: a run cut short keeps what it measured. */
    json_t *modes = json_object();
    json_object_set_new(root, "isolation_modes", modes);
    char modes_buf[64];
    snprintf(modes_buf, sizeof modes_buf, "%s", iso_modes);
    int first_mode = 1;
    for (char *save = NULL, *m = strtok_r(modes_buf, ",", &save); m; m = strtok_r(NULL, ",", &save), first_mode = 0) {
    /* "mps+pairs", "mps+off": isolation = mps with overlap = pairs (companion
     * grants, also mps's default) or off (one grant at a time) */
    iso_mode = strncmp(m, "mps+", 4) ? m : "mps";
    overlap = strncmp(m, "mps+", 4) ? NULL : m + 4;
    json_t *mobj = json_object();
    json_object_set_new(modes, m, mobj);
    fprintf(stderr, "vgpu_bench: isolation = %s\n", m);
#define SECTION(name, key, fn)                                                                   \
    if (want(only, name)) {                                                                      \
        json_t *sec_ = fn();                                                                     \
        json_object_set(mobj, key, sec_);                                                        \
        if (first_mode)                                                                          \
            json_object_set(root, key, sec_);                                                    \
        json_decref(sec_);                                                                       \
        json_object_set_new(root, "defaults",                                                    \
                            json_pack("{s:I, s:i, s:I, s:I}", "chunk", (json_int_t)best_chunk,   \
                                      "depth", best_depth, "small_htod", (json_int_t)best_small[0], \
                                      "small_dtoh", (json_int_t)best_small[1]));                 \
        if (json_dump_file(root, out, JSON_INDENT(2)))                                           \
            DIE("cannot write %s", out);                                                         \
        wl_ops_save(0);                                                                          \
    }
    SECTION("sweep", "chunk_sweep", sweep)
    SECTION("small", "small_copy", small_path)
    SECTION("copy", "copy", copies)
    SECTION("hostmem", "hostmem", hostmem)
    SECTION("ringprobe", "ringprobe", ringprobe)
    SECTION("launch", "launch_us", launches)
    SECTION("fairness", "fairness", fairness)
    SECTION("queues", "queues", queues)
    SECTION("standalone", "standalone", standalone)
    SECTION("switch", "switch", switching)
    SECTION("sharing", "sharing", sharing)
    SECTION("neighbour", "neighbour", neighbour)
    SECTION("mixed", "mixed", mixed)
    SECTION("swappath", "swappath", swappath)
    }
    wl_ops_save(1);
    fprintf(stderr, "vgpu_bench: wrote %s\n", out);
    gos_json_trace(root);
    json_decref(root);
    gos_exec_stream_destroy(dev, stream);
    gos_device_close(dev);
    char log[400];
    snprintf(log, sizeof log, "%s/serve.log", tmpdir);
    unlink(log);
    snprintf(log, sizeof log, "%s/serve.conf", tmpdir);
    unlink(log);
    rmdir(tmpdir);
    return 0;
}
