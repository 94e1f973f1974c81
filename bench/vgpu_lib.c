/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_lib.c: what every section of bench/vgpu_bench shares (vgpu_lib.h):
 * the run's settings, the native device, the daemon the benchmark starts for
 * each configuration, client handles and the built-in kernels, the start gate
 * of child clients, the start of plain CUDA processes, small statistics. */
#include "vgpu_lib.h"

#include "common/status.h"
#include "device/exec_ops.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *gpuos_bin, *sim_chip;
int quick;
long band_wait_us = -1; /* -1: the daemon's default (500 us, Gdev) */
int band_charge_hold = -1; /* -1: the daemon's default */
const int *vgpu_pcts, *vgpu_latency_ms;
long grant_us = -1;        /* -1: the daemon's default (grant_us) */
int exec_per_vgpu;         /* the next daemon says executor = per-vgpu */
const char *fair_policies = "fifo,credit,band", *fair_counts = "2,4,8";
/* isolation modes measured (issue 9): every section runs once per mode; the
 * first mode's tables are also the top-level ones (older readers). */
const char *iso_modes = "process,none", *iso_mode = NULL;
/* "mps+pairs" or "mps+off" in --isolation: mps with overlap = pairs
 * (companion grants, mps's default) or off (one grant at a time) */
const char *overlap = NULL;
const char *handover = NULL;
/* sharing's kernels: one warp per SM ("light", the default: full-GPU but it
 * leaves the SMs room, so two at once under MPS run about as fast as one), or
 * two blocks of 1024 threads per SM ("dense": fills every SM's issue slots,
 * so overlapping tenants gain only the gaps) */
int share_dense;
char tmpdir[256], sockpath[300];
gos_device *dev;
void *stream;
struct wl_backend nat_be;

pid_t main_pid;
double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the daemon's overlap setting now: mps's default is pairs */
const char *overlap_label(void)
{
    return overlap ? overlap : iso_mode && !strcmp(iso_mode, "mps") ? "pairs" : "off";
}

const char *mode_label(void)
{
    return overlap ? (strcmp(overlap, "off") ? "mps+pairs" : "mps+off") : iso_mode ? iso_mode : "-";
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double pctl(double *v, int n, double q)
{
    median(v, n); /* sorts */
    int i = (int)(q * (n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* ---- the daemon ---------------------------------------------------------- */

static pid_t daemon_pid;

void daemon_start(const char *policy, const char *queue, int n_vgpus, const char *mem)
{
    char cfg[400];
    snprintf(cfg, sizeof cfg, "%s/serve.conf", tmpdir);
    FILE *f = fopen(cfg, "w");
    if (!f)
        DIE("cannot write %s", cfg);
    fprintf(f, "socket = %s\nsocket_mode = 0600\n[device 0]\npolicy = %s\nqueue = %s\n", sockpath, policy, queue);
    if (sim_chip)
        fprintf(f, "sim = %s\n", sim_chip);
    if (iso_mode)
        fprintf(f, "isolation = %s\n", iso_mode);
    if (overlap)
        fprintf(f, "overlap = %s\n", overlap);
    if (handover)
        fprintf(f, "handover = %s\n", handover);
    if (band_wait_us >= 0)
        fprintf(f, "band_wait_us = %ld\n", band_wait_us);
    if (band_charge_hold >= 0)
        fprintf(f, "band_charge_hold = %d\n", band_charge_hold);
    if (grant_us > 0)
        fprintf(f, "grant_us = %ld\n", grant_us);
    if (exec_per_vgpu)
        fprintf(f, "executor = per-vgpu\n");
    for (int i = 0; i < n_vgpus; i++) {
        fprintf(f, "[vgpu v%d]\ncompute = %d\ncopy = %d\nmemory = %s\n", i, vgpu_pcts ? vgpu_pcts[i] : 100 / n_vgpus,
                vgpu_pcts ? vgpu_pcts[i] : 100 / n_vgpus, mem);
        if (vgpu_latency_ms && vgpu_latency_ms[i])
            fprintf(f, "latency_ms = %d\n", vgpu_latency_ms[i]);
    }
    fclose(f);
    unlink(sockpath);
    daemon_pid = fork();
    if (daemon_pid == 0) {
        char log[400];
        snprintf(log, sizeof log, "%s/serve.log", tmpdir);
        if (!freopen(log, "a", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(gpuos_bin, gpuos_bin, "serve", "--config", cfg, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) {
        struct stat st;
        if (!stat(sockpath, &st))
            return;
        int status;
        if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid)
            DIE("gpuos serve exited at start (see %s/serve.log)", tmpdir);
        usleep(50000);
    }
    DIE("gpuos serve did not come up within 20 s");
}

void daemon_stop(void)
{
    if (daemon_pid <= 0)
        return;
    kill(daemon_pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
            daemon_pid = 0;
            return;
        }
        usleep(50000);
    }
    kill(daemon_pid, SIGKILL);
    waitpid(daemon_pid, NULL, 0);
    daemon_pid = 0;
}

static int open_gen; /* handles opened so far (gfn's cache key) */
gpuos_vgpu *vopen(const char *name)
{
    gpuos_vgpu *g;
    open_gen++;
    if (gpuos_open(sockpath, name, &g))
        DIE("gpuos_open %s", name);
    return g;
}

/* ---- the built-in kernels, natively and through a handle ------------------ */

void *native_fn(const char *name)
{
    uint64_t k;
    if (nat_be.ops->kernel(&nat_be, name, &k))
        DIE("native kernel %s", name);
    return (void *)(uintptr_t)k;
}

/* Kernels of the built-in module, loaded once per handle. */
gpuos_function gfn(gpuos_vgpu *g, const char *name)
{
    static int mgen = -1;
    static gpuos_module m;
    static struct {
        char name[16];
        gpuos_function f;
    } cache[8];
    static int n;
    if (mgen != open_gen) {
        if (gpuos_module_load_builtin(g, GOS_EXEC_BUILTIN, &m))
            DIE("gpuos module %s", GOS_EXEC_BUILTIN);
        mgen = open_gen;
        n = 0;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(cache[i].name, name))
            return cache[i].f;
    gpuos_function f;
    if (gpuos_module_function(g, m, name, &f))
        DIE("gpuos kernel %s", name);
    if (n < 8) {
        snprintf(cache[n].name, sizeof cache[n].name, "%s", name);
        cache[n++].f = f;
    }
    return f;
}

/* Children open their vGPU (under isolation = process an executor and its CUDA
 * context each, hundreds of milliseconds with several at once), then wait at the
 * gate; the parent opens it once all are ready, so that a measured window never
 * holds a client that has not started yet. Shared anonymous memory. */
static struct gate {
    int ready;
    double start;
} *gate;

void gate_reset(void)
{
    if (!gate) {
        gate = mmap(NULL, sizeof *gate, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (gate == MAP_FAILED)
            DIE("gate");
    }
    __atomic_store_n(&gate->ready, 0, __ATOMIC_SEQ_CST);
    double z = 0;
    __atomic_store(&gate->start, &z, __ATOMIC_SEQ_CST);
}

/* Parent: waits until n children are ready, then starts them all; returns the
 * start time. */
double gate_open(int n)
{
    double t0 = now();
    while (__atomic_load_n(&gate->ready, __ATOMIC_SEQ_CST) < n) {
        if (now() - t0 > 60)
            DIE("%d of %d clients ready after 60 s", __atomic_load_n(&gate->ready, __ATOMIC_SEQ_CST), n);
        usleep(1000);
    }
    double start = now() + 0.02;
    __atomic_store(&gate->start, &start, __ATOMIC_SEQ_CST);
    return start;
}

/* Child: ready; returns once started, with the start time. */
double gate_pass(void)
{
    __atomic_add_fetch(&gate->ready, 1, __ATOMIC_SEQ_CST);
    double start;
    for (;;) {
        __atomic_load(&gate->start, &start, __ATOMIC_SEQ_CST);
        if (start > 0 && now() >= start)
            return start;
        usleep(500);
    }
}

int clients_fork(int n, int one_vgpu, client_fn run, const void *arg, pid_t *kids)
{
    gate_reset();
    int pfd[2];
    if (pipe(pfd))
        DIE("pipe");
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", one_vgpu ? 0 : i);
        if ((kids[i] = fork()) == 0) {
            run(name, i, pfd[1], arg);
            _exit(0);
        }
    }
    close(pfd[1]);
    return pfd[0];
}

void clients_wait(int n, const pid_t *kids)
{
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
}

double natives_go(int n, char **const *av, pid_t *kids, FILE **out)
{
    int in[8];
    for (int i = 0; i < n; i++) {
        int po[2], pi[2];
        if (pipe(po) || pipe(pi))
            DIE("pipe");
        if ((kids[i] = fork()) == 0) {
            dup2(pi[0], 0);
            dup2(po[1], 1);
            close(pi[1]);
            close(po[0]);
            execv("/proc/self/exe", av[i]);
            _exit(127);
        }
        close(pi[0]);
        close(po[1]);
        in[i] = pi[1];
        out[i] = fdopen(po[0], "r");
    }
    char line[64];
    for (int i = 0; i < n; i++)
        if (!out[i] || !fgets(line, sizeof line, out[i]) || strncmp(line, "ready", 5))
            DIE("native tenant %d did not start", i);
    double start = now() + 0.05;
    for (int i = 0; i < n; i++) {
        dprintf(in[i], "%.6f\n", start);
        close(in[i]);
    }
    return start;
}

double native_ready_wait(void)
{
    printf("ready\n");
    fflush(stdout);
    double start;
    if (scanf("%lf", &start) != 1)
        return -1;
    while (now() < start)
        usleep(200);
    return start;
}

long read_counts(int fd, int n)
{
    FILE *f = fdopen(fd, "r");
    long tot = 0, x;
    for (int i = 0; i < n && fscanf(f, "%ld", &x) == 1; i++)
        tot += x;
    fclose(f);
    return tot;
}

int want(const char *only, const char *s)
{
    if (!only)
        return 1;
    const char *p = strstr(only, s);
    return p && (p == only || p[-1] == ',') && (p[strlen(s)] == 0 || p[strlen(s)] == ',');
}

/* The launch shape of the kernels (share_dense: "dense" or "light"). */
void shape(unsigned sms, unsigned *grid, unsigned *block)
{
    *grid = share_dense ? 2 * sms : sms;
    *block = share_dense ? 1024 : 32;
}

/* The iterations of `loop` in the current shape that take ns alone, and what
 * they really take (*got_ns), measured on this process's context between
 * events (the shortest of five). */
uint64_t loop_iters(uint64_t ns, uint64_t *got_ns)
{
    void *fn = native_fn("loop"), *e0, *e1;
    if (gos_exec_event_create(dev, &e0) || gos_exec_event_create(dev, &e1))
        DIE("events");
    uint64_t iters = 1000, t = 0;
    for (int round = 0; round < 8; round++) {
        struct gos_launch_cfg c = {.geom = {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0}, .params = &iters, .param_bytes = 8};
        shape((unsigned)dev->info.sm_count, &c.grid[0], &c.block[0]);
        uint64_t best = UINT64_MAX;
        for (int r = 0; r < 5; r++) {
            if (gos_exec_event_record(dev, e0, stream) || gos_exec_launch(dev, fn, &c, stream) ||
                gos_exec_event_record(dev, e1, stream) || gos_exec_event_sync(dev, e1) ||
                gos_exec_event_elapsed_ns(dev, e0, e1, &t))
                DIE("loop calibration");
            best = t < best ? t : best;
        }
        t = best ? best : 1;
        double scale = (double)ns / (double)t;
        if (scale > 0.98 && scale < 1.02)
            break;
        iters = (uint64_t)((double)iters * (scale > 100 ? 100 : scale)) + 1;
    }
    gos_exec_event_destroy(dev, e0);
    gos_exec_event_destroy(dev, e1);
    *got_ns = t;
    return iters;
}
