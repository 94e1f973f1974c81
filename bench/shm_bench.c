/* SPDX-License-Identifier: Apache-2.0 */
/* shm_bench.c: shared device memory and swapping at the device layer (issue 10;
 * paper 002 sections 4.2, 4.3 and 7), on a GPU or the simulated device.
 *
 *   shm_bench [--sim CHIP] [--out FILE] [--only chain,turns,rate]
 *             [--chain-n N,N,...] [--rounds R] [--turn-mb M] [--buf-mb B] [--pool-mb P]
 *             [--rate-mb a,b,c]
 *
 * chain  Gdev's dataflow case: a kernel chain across two processes, each with
 *        its own device context (as gpuos executors have), R rounds of
 *        A: c = x + y; B: u = c + c, strictly in turn (n x n floats, for each
 *        n of --chain-n; default 1024, 4096, 8192: 4, 64, 256 MB). "shm": c is one VMM
 *        allocation exported by A as a file descriptor and mapped by B; "host":
 *        A copies c to pinned shared host memory, B copies it in. Makespan of
 *        both, the speedup, and B's result checked word by word (exact floats).
 * turns  Two vGPUs of M bytes each (buffers of B bytes) on a pool of P bytes
 *        (default: the device's free memory) that cannot hold both: A allocates
 *        and writes its set, B allocates (A's buffers evicted as the swap policy
 *        of src/vmem/swap_policy.c picks them), A runs (all of A restored, B evicted),
 *        B runs. Each buffer holds v_b + (i & 0xffff) in word i (written by the
 *        built-in fill and madd kernels); every buffer of the running vGPU is
 *        copied back and checked word by word at each turn. Host swap space is
 *        pinned memory sized for the overflow.
 * rate   Eviction (copy out + unmap + release) and restore (create + map at the
 *        same address + copy in) time against size, against the plain pinned
 *        copy of the same bytes in the same run (the ceiling).
 *
 * Writes one JSON file (schema gpuos.shm-bench/1) with the provenance; prints a
 * short table. Exit status 0 only when every check was byte-exact. */
#include "common/jsonio.h"
#include "common/provenance.h"
#include "common/status.h"
#include "device/device.h"
#include "device/exec_ops.h"
#include "device/vmm_ops.h"
#include "vmem/swap_policy.h"
#include "proto/wire.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB (1ull << 20)

static const char *SIM;
static void *FN_MADD, *FN_FILL;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "shm_bench: %s: %s\n", what, gos_last_error());
    exit(2);
}

static gos_device *open_dev(void)
{
    gos_device *d;
    gos_device_spec spec = {.sim = SIM, .ordinal = 0};
    void *mod;
    if (gos_device_open(&spec, &d) || gos_exec_init(d))
        die("device");
    if (gos_exec_module_load(d, NULL, 0, GOS_EXEC_BUILTIN, &mod) || gos_exec_function(d, mod, "madd", &FN_MADD) ||
        gos_exec_function(d, mod, "fill", &FN_FILL))
        die("built-in module");
    return d;
}

static int launch_madd(gos_device *d, uint64_t a, uint64_t b, uint64_t c, uint32_t n, void *st)
{
    struct {
        uint64_t a, b, c;
        uint32_t n, pad;
    } p = {a, b, c, n, 0};
    uint64_t words = (uint64_t)n * n, blocks = (words + 255) / 256;
    struct gos_launch_cfg cfg = {.grid = {(unsigned)(blocks < 4096 ? blocks : 4096), 1, 1},
                                 .block = {256, 1, 1}, .params = &p, .param_bytes = 28};
    return gos_exec_launch(d, FN_MADD, &cfg, st);
}

static int launch_fill(gos_device *d, uint64_t ptr, uint32_t v, uint64_t words, void *st)
{
    struct {
        uint64_t p;
        uint32_t v, pad;
        uint64_t n;
    } p = {ptr, v, 0, words};
    uint64_t blocks = (words + 255) / 256;
    struct gos_launch_cfg cfg = {.grid = {(unsigned)(blocks < 4096 ? blocks : 4096), 1, 1},
                                 .block = {256, 1, 1}, .params = &p, .param_bytes = sizeof p};
    return gos_exec_launch(d, FN_FILL, &cfg, st);
}

/* ---- chain ---- */


static int rd(int s, char want)
{
    char c;
    return read(s, &c, 1) == 1 && c == want ? 0 : -1;
}
static int wr(int s, char c) { return write(s, &c, 1) == 1 ? 0 : -1; }

/* Process B: its own context; u = c + c each round; checks u at the end. */
static int chain_b(int s, int shm, uint32_t n, int rounds, float *host)
{
    uint64_t bytes = (uint64_t)n * n * 4;
    gos_device *d = open_dev();
    void *st;
    uint64_t u, v = 0, cptr;
    gos_vmm_buf seg;
    if (gos_exec_stream_create(d, &st) || gos_exec_mem_alloc(d, bytes, &u))
        return 20;
    if (shm) {
        int fd = gos_wire_recv_fd(s);
        if (fd < 0 || gos_vmm_buf_attach(d, fd, bytes, &seg))
            return 21;
        close(fd);
        cptr = seg.va;
    } else {
        if (gos_exec_mem_alloc(d, bytes, &v) || gos_exec_host_register(d, host, bytes))
            return 22;
        cptr = v;
    }
    if (wr(s, 'r'))
        return 23;
    for (int r = 0; r <= rounds; r++) { /* round 0: warm-up, as A's */
        if (rd(s, 'c'))
            return 24;
        if (!shm && gos_exec_copy_htod(d, v, host, bytes, st))
            return 25;
        if (launch_madd(d, cptr, cptr, u, n, st) || gos_exec_stream_sync(d, st) || wr(s, 'd'))
            return 26;
    }
    float *out = malloc(bytes);
    if (!out || gos_exec_copy_dtoh_sync(d, out, u, bytes))
        return 27;
    for (uint64_t i = 0; i < (uint64_t)n * n; i++)
        if (out[i] != 2.0f * ((float)(i % 1000) + 1.0f))
            return 28;
    return 0;
}

/* Returns the makespan of the rounds in seconds, or < 0 when B's check failed. */
static double chain(int shm, uint32_t n, int rounds)
{
    uint64_t bytes = (uint64_t)n * n * 4;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        die("socketpair");
    float *host = NULL;
    if (!shm) { /* pinned shared host memory between the two processes */
        host = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (host == MAP_FAILED)
            die("host memory");
    }
    fflush(NULL);
    pid_t pid = fork(); /* before any device is opened here */
    if (pid == 0) {
        close(sv[0]);
        _exit(chain_b(sv[1], shm, n, rounds, host));
    }
    close(sv[1]);
    int s = sv[0];
    gos_device *d = open_dev();
    void *st;
    uint64_t x, y, c = 0;
    gos_vmm_buf seg;
    float *init = malloc(bytes);
    for (uint64_t i = 0; i < (uint64_t)n * n; i++)
        init[i] = (float)(i % 1000);
    if (gos_exec_stream_create(d, &st) || gos_exec_mem_alloc(d, bytes, &x) || gos_exec_mem_alloc(d, bytes, &y) ||
        gos_exec_copy_htod_sync(d, x, init, bytes))
        die("chain buffers");
    for (uint64_t i = 0; i < (uint64_t)n * n; i++)
        init[i] = 1.0f;
    if (gos_exec_copy_htod_sync(d, y, init, bytes))
        die("chain buffers");
    free(init);
    if (shm) {
        int fd;
        if (gos_vmm_buf_alloc(d, bytes, &seg) || gos_vmm_buf_export(d, &seg, &fd) || gos_wire_send_fd(s, fd))
            die("shared segment");
        close(fd);
        c = seg.va;
    } else if (gos_exec_mem_alloc(d, bytes, &c) || gos_exec_host_register(d, host, bytes))
        die("host path");
    double t0 = 0, t1 = 0;
    int ok = !rd(s, 'r');
    for (int r = 0; ok && r <= rounds; r++) {
        if (r == 1)
            t0 = now_s(); /* round 0 warms both contexts up */
        ok = !launch_madd(d, x, y, c, n, st) && (shm || !gos_exec_copy_dtoh(d, host, c, bytes, st)) &&
             !gos_exec_stream_sync(d, st) && !wr(s, 'c') && !rd(s, 'd');
    }
    t1 = now_s();
    int status = 0;
    waitpid(pid, &status, 0);
    close(s);
    if (shm)
        gos_vmm_buf_free(d, &seg);
    else {
        gos_exec_host_unregister(d, host);
        munmap(host, bytes);
    }
    gos_device_close(d);
    if (!ok || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "shm_bench: chain (%s): consumer exit %d\n", shm ? "shm" : "host",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return t1 - t0;
}

/* Runs chain() in a process of its own: CUDA must not be initialised in a
 * process that forks again later, so this one (which forks every pair) never
 * opens a device before the chains are done. */
static double chain_isolated(int shm, uint32_t n, int rounds)
{
    int p[2];
    if (pipe(p))
        die("pipe");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        double t = chain(shm, n, rounds);
        _exit(write(p[1], &t, sizeof t) == sizeof t ? 0 : 1);
    }
    close(p[1]);
    double t = -1;
    if (read(p[0], &t, sizeof t) != sizeof t)
        t = -1;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return t;
}

/* ---- turns ---- */

struct tbuf {
    gos_vmm_buf b;
    uint64_t id; /* swap object */
    int slot;    /* host swap slot while evicted */
    uint32_t v;  /* float bits of v_b */
};

struct checker {
    const uint32_t *w;
    uint64_t from, to;
    float base;
    uint64_t bad;
};

static void *check_part(void *arg)
{
    struct checker *c = arg;
    for (uint64_t i = c->from; i < c->to; i++) {
        float f = c->base + (float)(i & 0xffff);
        uint32_t e;
        memcpy(&e, &f, 4);
        c->bad += c->w[i] != e;
    }
    return NULL;
}

static uint64_t check_words(const uint32_t *w, uint64_t words, float base)
{
    enum { T = 16 };
    struct checker c[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        c[t] = (struct checker){w, words * t / T, words * (t + 1) / T, base, 0};
        pthread_create(&th[t], NULL, check_part, &c[t]);
    }
    uint64_t bad = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        bad += c[t].bad;
    }
    return bad;
}

struct turn_ctx {
    gos_device *d;
    gos_swap *sw;
    struct tbuf *B[2];
    int nb, slots, *slot_used;
    void *swap;
    uint64_t buf, ev_b, re_b;
    double t_ev, t_re;
};

static struct tbuf *tbuf_of(struct turn_ctx *X, uint64_t id)
{
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < X->nb; k++)
            if (X->B[w][k].id == id)
                return &X->B[w][k];
    return NULL;
}

/* Carries a plan out in its order (each restore after the evictions that make
 * its room), reporting every step to the policy. */
static void apply(struct turn_ctx *X, const gos_swap_plan *p)
{
    gos_swap_begin(X->sw, p);
    for (int i = 0; i < p->n_steps; i++) {
        struct tbuf *t = tbuf_of(X, p->step[i].id);
        if (!t)
            die("turns: plan names an unknown buffer");
        double t0 = now_s();
        if (p->step[i].evict) {
            int sl = 0;
            while (sl < X->slots && X->slot_used[sl])
                sl++;
            if (sl == X->slots)
                die("turns: no free swap slot");
            if (gos_vmm_buf_evict(X->d, &t->b, (char *)X->swap + (uint64_t)sl * X->buf))
                die("turns: evict");
            X->t_ev += now_s() - t0;
            X->ev_b += X->buf;
            X->slot_used[sl] = 1;
            t->slot = sl;
            gos_swap_evicted(X->sw, t->id, 1);
        } else {
            if (gos_vmm_buf_restore(X->d, &t->b, (char *)X->swap + (uint64_t)t->slot * X->buf))
                die("turns: restore");
            X->t_re += now_s() - t0;
            X->re_b += X->buf;
            X->slot_used[t->slot] = 0;
            gos_swap_restored(X->sw, t->id, 1);
        }
    }
    gos_swap_end(X->sw, p);
}

static json_t *turns(gos_device *d, uint64_t per_vgpu, uint64_t buf, uint64_t pool_arg, int *exact)
{
    uint32_t n = (uint32_t)sqrt((double)(buf / 4));
    buf = (uint64_t)n * n * 4;
    if (buf % GOS_VMM_PAGE) { /* n*n*4 a multiple of 2 MB: n a multiple of 1024 */
        n = n / 1024 * 1024;
        buf = (uint64_t)n * n * 4;
    }
    if (!n)
        die("turns: buffers below 4 MB");
    int nb = (int)(per_vgpu / buf);
    if (nb < 1)
        nb = 1;
    void *st;
    uint64_t ramp, fr, tot;
    float *r = malloc(buf);
    for (uint64_t i = 0; i < buf / 4; i++)
        r[i] = (float)(i & 0xffff);
    if (gos_exec_stream_create(d, &st) || gos_exec_mem_alloc(d, buf, &ramp) || gos_exec_copy_htod_sync(d, ramp, r, buf))
        die("turns: ramp");
    free(r);
    void *stage;
    if (gos_exec_host_alloc(d, buf, &stage) || gos_exec_mem_info(d, &fr, &tot))
        die("turns: staging");
    uint64_t pool = pool_arg ? pool_arg : (fr > (2048 * MB) ? fr - 2048 * MB : fr / 2);
    pool = pool / buf * buf;
    if (pool >= 2 * (uint64_t)nb * buf)
        fprintf(stderr, "shm_bench: turns: the pool (%llu MB) holds both vGPUs: nothing will swap\n",
                (unsigned long long)(pool / MB));
    uint64_t need_swap = 2 * (uint64_t)nb * buf > pool ? 2 * (uint64_t)nb * buf - pool : 0;
    int slots = (int)(need_swap / buf) + 1; /* plans interleave: the peak is the overflow + one buffer */
    uint64_t swap_bytes = (uint64_t)slots * buf;
    double t_pin = now_s();
    void *swap;
    if (gos_exec_host_alloc(d, swap_bytes, &swap))
        die("turns: pinned host swap space");
    t_pin = now_s() - t_pin;
    int *slot_used = calloc((size_t)slots, sizeof(int));
    gos_swap sw;
    if (gos_swap_init(&sw, pool, swap_bytes))
        die("turns: swap");
    struct tbuf *B[2];
    B[0] = calloc((size_t)nb, sizeof(struct tbuf));
    B[1] = calloc((size_t)nb, sizeof(struct tbuf));
    json_t *phases = json_array();
    *exact = 1;
    struct turn_ctx X = {.d = d, .sw = &sw, .B = {B[0], B[1]}, .nb = nb, .slots = slots, .slot_used = slot_used,
                         .swap = swap, .buf = buf};
    const int order[4] = {0, 1, 0, 1};
    for (int ph = 0; ph < 4; ph++) {
        int v = order[ph];
        X.t_ev = X.t_re = 0;
        X.ev_b = X.re_b = 0;
        uint64_t bad = 0;
        gos_swap_plan p;
        if (!B[v][0].id) { /* allocate and write the set */
            for (int k = 0; k < nb; k++) {
                struct tbuf *t = &B[v][k];
                if (gos_swap_plan_alloc(&sw, v, buf, &p))
                    die("turns: plan");
                apply(&X, &p);
                if (gos_vmm_buf_alloc(d, buf, &t->b) || gos_swap_add(&sw, v, (uint32_t)v + 1, t->b.va, buf, 0, &t->id))
                    die("turns: alloc");
                float base = (float)(((uint32_t)(v * nb + k) + 1) * 65536u);
                memcpy(&t->v, &base, 4);
                if (launch_fill(d, t->b.va, t->v, buf / 4, st) || launch_madd(d, t->b.va, ramp, t->b.va, n, st))
                    die("turns: write");
            }
            if (gos_exec_stream_sync(d, st))
                die("turns: sync");
        } else { /* its turn: everything of it resident, then checked */
            if (gos_swap_plan_launch(&sw, v, (uint32_t)v + 1, &p))
                die("turns: plan");
            apply(&X, &p);
        }
        if (gos_swap_check(&sw))
            die("turns: accounting");
        /* every buffer of the running vGPU, word by word */
        double t0 = now_s();
        for (int k = 0; k < nb; k++) {
            struct tbuf *t = &B[v][k];
            float base;
            memcpy(&base, &t->v, 4);
            if (gos_exec_copy_dtoh(d, stage, t->b.va, buf, st) || gos_exec_stream_sync(d, st))
                die("turns: read back");
            bad += check_words(stage, buf / 4, base);
        }
        double t_chk = now_s() - t0;
        *exact &= bad == 0;
        json_array_append_new(
            phases, GOS_JSON_OBJ(GOS_JS("vgpu", v ? "B" : "A"), GOS_JS("action", ph < 2 ? "allocate" : "run"),
                                 GOS_JI("evicted_bytes", X.ev_b), GOS_JR("evict_s", X.t_ev), GOS_JI("restored_bytes", X.re_b),
                                 GOS_JR("restore_s", X.t_re), GOS_JR("wait_s", X.t_ev + X.t_re),
                                 GOS_JR("evict_gbps", X.t_ev > 0 ? X.ev_b / X.t_ev / 1e9 : 0),
                                 GOS_JR("restore_gbps", X.t_re > 0 ? X.re_b / X.t_re / 1e9 : 0),
                                 GOS_JI("resident_A", sw.vgpu[0].resident), GOS_JI("swapped_A", sw.vgpu[0].swapped),
                                 GOS_JI("resident_B", sw.vgpu[1].resident), GOS_JI("swapped_B", sw.vgpu[1].swapped),
                                 GOS_JI("checked_bytes", (uint64_t)nb * buf), GOS_JI("bad_words", bad),
                                 GOS_JR("check_s", t_chk)));
        printf("turn %d vGPU %c %-8s evicted %7.2f GB in %6.3f s, restored %7.2f GB in %6.3f s, checked %7.2f GB: %s\n",
               ph, v ? 'B' : 'A', ph < 2 ? "allocate" : "run", X.ev_b / 1e9, X.t_ev, X.re_b / 1e9, X.t_re,
               (double)nb * buf / 1e9, bad ? "MISMATCH" : "byte-exact");
    }
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < nb; k++)
            gos_vmm_buf_free(d, &B[w][k].b);
    uint64_t left = 0;
    int hl = 0, ml = 0;
    gos_vmm_usage(d, &left, &hl, &ml);
    json_t *o = GOS_JSON_OBJ(GOS_JI("bytes_per_vgpu", (uint64_t)nb * buf), GOS_JI("buffers_per_vgpu", nb),
                             GOS_JI("buffer_bytes", buf), GOS_JI("pool_bytes", pool), GOS_JI("swap_bytes", swap_bytes),
                             GOS_JR("pin_swap_s", t_pin), GOS_JO("phases", phases), GOS_JB("byte_exact", *exact),
                             GOS_JI("vmm_bytes_left", left), GOS_JI("vmm_mappings_left", ml));
    *exact &= left == 0 && ml == 0;
    gos_swap_free(&sw);
    gos_exec_host_free(d, swap);
    gos_exec_host_free(d, stage);
    gos_exec_mem_free(d, ramp);
    gos_exec_stream_destroy(d, st);
    free(B[0]);
    free(B[1]);
    free(slot_used);
    return o;
}

/* ---- rate ---- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static json_t *rate(gos_device *d, const uint64_t *sizes, int n_sizes, int *exact)
{
    json_t *arr = json_array();
    printf("%12s %10s %10s %10s %10s %10s %10s\n", "bytes", "evict_ms", "restore_ms", "evict", "restore", "d2h",
           "h2d");
    for (int i = 0; i < n_sizes; i++) {
        uint64_t bytes = gos_vmm_round(sizes[i]);
        void *h;
        gos_vmm_buf b;
        if (gos_exec_host_alloc(d, bytes, &h) || gos_vmm_buf_alloc(d, bytes, &b))
            die("rate: buffers");
        memset(h, 0x3c, bytes);
        if (gos_vmm_copy_to_device(d, b.va, h, bytes))
            die("rate: write");
        enum { R = 5 };
        double ev[R], re[R], d2h[R], h2d[R];
        for (int r = 0; r < R; r++) {
            double t0 = now_s();
            if (gos_vmm_copy_to_host(d, h, b.va, bytes))
                die("rate: d2h");
            d2h[r] = now_s() - t0;
            t0 = now_s();
            if (gos_vmm_copy_to_device(d, b.va, h, bytes))
                die("rate: h2d");
            h2d[r] = now_s() - t0;
            t0 = now_s();
            if (gos_vmm_buf_evict(d, &b, h))
                die("rate: evict");
            ev[r] = now_s() - t0;
            t0 = now_s();
            if (gos_vmm_buf_restore(d, &b, h))
                die("rate: restore");
            re[r] = now_s() - t0;
        }
        /* still the bytes written first */
        memset(h, 0, bytes);
        if (gos_vmm_copy_to_host(d, h, b.va, bytes))
            die("rate: read back");
        for (uint64_t k = 0; k < bytes; k++)
            if (((unsigned char *)h)[k] != 0x3c) {
                *exact = 0;
                break;
            }
        qsort(ev, R, sizeof ev[0], cmp_d);
        qsort(re, R, sizeof re[0], cmp_d);
        qsort(d2h, R, sizeof d2h[0], cmp_d);
        qsort(h2d, R, sizeof h2d[0], cmp_d);
        double e = ev[R / 2], s = re[R / 2], a = d2h[R / 2], c = h2d[R / 2];
        printf("%12llu %10.3f %10.3f %8.2f G %8.2f G %8.2f G %8.2f G\n", (unsigned long long)bytes, e * 1e3, s * 1e3,
               bytes / e / 1e9, bytes / s / 1e9, bytes / a / 1e9, bytes / c / 1e9);
        json_array_append_new(arr, GOS_JSON_OBJ(GOS_JI("bytes", bytes), GOS_JR("evict_s", e), GOS_JR("restore_s", s),
                                                GOS_JR("evict_gbps", bytes / e / 1e9),
                                                GOS_JR("restore_gbps", bytes / s / 1e9),
                                                GOS_JR("d2h_pinned_gbps", bytes / a / 1e9),
                                                GOS_JR("h2d_pinned_gbps", bytes / c / 1e9), GOS_JI("repeats", R)));
        gos_vmm_buf_free(d, &b);
        gos_exec_host_free(d, h);
    }
    return arr;
}

static uint64_t arg_u64(const char *s)
{
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (*e || e == s) {
        fprintf(stderr, "shm_bench: not a number: %s\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *only = "chain,turns,rate", *rate_list = "2,8,32,128,512,2048,8192";
    const char *chain_list = "1024,4096,8192";
    int rounds = 20;
    uint64_t turn_mb = 100000, buf_mb = 4096, pool_mb = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "usage: shm_bench [--sim CHIP] [--out FILE] [--only chain,turns,rate] [--chain-n N,...] "
                            "[--rounds R] [--turn-mb M] [--buf-mb B] [--pool-mb P] [--rate-mb a,b,...]\n");
            return 2;
        }
        if (!strcmp(a, "--sim"))
            SIM = v;
        else if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--only"))
            only = v;
        else if (!strcmp(a, "--chain-n"))
            chain_list = v;
        else if (!strcmp(a, "--rounds"))
            rounds = (int)arg_u64(v);
        else if (!strcmp(a, "--turn-mb"))
            turn_mb = arg_u64(v);
        else if (!strcmp(a, "--buf-mb"))
            buf_mb = arg_u64(v);
        else if (!strcmp(a, "--pool-mb"))
            pool_mb = arg_u64(v);
        else if (!strcmp(a, "--rate-mb"))
            rate_list = v;
        else {
            fprintf(stderr, "shm_bench: unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    uint32_t chain_n[8];
    int n_chain = 0;
    {
        char *list = strdup(chain_list), *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok && n_chain < 8; tok = strtok_r(NULL, ",", &save))
            chain_n[n_chain++] = (uint32_t)arg_u64(tok);
        free(list);
    }
    for (int i = 0; i < n_chain; i++)
        if (!chain_n[i] || chain_n[i] % 512 || chain_n[i] > 32768)
            rounds = 0;
    if (!n_chain || rounds < 1) {
        fprintf(stderr, "shm_bench: --chain-n takes multiples of 512 up to 32768, --rounds >= 1\n");
        return 2;
    }
    int exact = 1;
    json_t *root = json_object();
    char cmd[1024];
    gos_command_line(cmd, sizeof cmd, NULL, argc, argv);
    json_object_set_new(root, "schema", json_string("gpuos.shm-bench/1"));
    if (strstr(only, "chain")) { /* first: no device open in this process before the forks */
        json_t *arr = json_array();
        for (int i = 0; i < n_chain; i++) {
            double t_shm = chain_isolated(1, chain_n[i], rounds), t_host = chain_isolated(0, chain_n[i], rounds);
            int ok = t_shm > 0 && t_host > 0;
            exact &= ok;
            uint64_t bytes = (uint64_t)chain_n[i] * chain_n[i] * 4;
            printf("chain: %d rounds of %4llu MB across two processes: shm %8.2f ms, host %8.2f ms, speedup %.2fx "
                   "(makespan -%.1f %%), %s\n",
                   rounds, (unsigned long long)(bytes / MB), t_shm * 1e3, t_host * 1e3, ok ? t_host / t_shm : 0,
                   ok ? 100 * (1 - t_shm / t_host) : 0, ok ? "byte-exact" : "MISMATCH");
            json_array_append_new(arr, GOS_JSON_OBJ(GOS_JI("bytes", bytes), GOS_JI("rounds", rounds),
                                                    GOS_JR("shm_s", t_shm), GOS_JR("host_s", t_host),
                                                    GOS_JR("speedup", ok ? t_host / t_shm : 0),
                                                    GOS_JR("makespan_reduction_pct", ok ? 100 * (1 - t_shm / t_host) : 0),
                                                    GOS_JB("byte_exact", ok)));
        }
        json_object_set_new(root, "chain", arr);
        if (out) /* saved after every part: a run cut short keeps what it measured */
            gos_json_save_atomic(root, out);
    }
    gos_device *d = open_dev();
    json_object_set_new(root, "device",
                        GOS_JSON_OBJ(GOS_JS("name", d->info.name), GOS_JS("uuid", d->info.uuid),
                                     GOS_JS("backend", d->info.backend), GOS_JI("mem_bytes", d->info.mem_bytes)));
    json_object_set_new(root, "provenance", gos_provenance(cmd, d->info.driver_version));
    if (strstr(only, "turns")) {
        int ok;
        json_t *t = turns(d, turn_mb * MB, buf_mb * MB, pool_mb * MB, &ok);
        exact &= ok;
        json_object_set_new(root, "turns", t);
        if (out)
            gos_json_save_atomic(root, out);
    }
    if (strstr(only, "rate")) {
        uint64_t sizes[32];
        int n = 0;
        char *list = strdup(rate_list), *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok && n < 32; tok = strtok_r(NULL, ",", &save))
            sizes[n++] = arg_u64(tok) * MB;
        free(list);
        json_object_set_new(root, "rate", rate(d, sizes, n, &exact));
    }
    json_object_set_new(root, "byte_exact", json_boolean(exact));
    if (out && gos_json_save_atomic(root, out))
        die("writing the result");
    json_decref(root);
    gos_device_close(d);
    printf("%s\n", exact ? "all checks byte-exact" : "CHECK FAILED");
    return exact ? 0 : 1;
}
