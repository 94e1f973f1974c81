/* SPDX-License-Identifier: Apache-2.0 */
/* ring_client.c: the fast path's test client (issue 9.4; tests/t_ring.sh).
 *   ring_client exact VGPU [secs]  byte-exact copies (inline, staged, pinned, DtoD)
 *                                  and fill launches, through the ring when it is
 *                                  granted; loops for secs (0: once). Prints how
 *                                  many entries the executor ran for it.
 *   ring_client granted VGPU       exit 0 when this client's ring is granted
 *   ring_client share VGPU S BYTES prints its executor's pid, allocates BYTES of
 *                                  device memory, byte-exact passes for S seconds
 *   ring_client hostile VGPU       writes malformed entries into its own ring
 *                                  (bad opcode, flags, ranges, lengths, functions, gates,
 *                                  geometry), and rewrites slots while the
 *                                  executor reads them: each refused with an error
 *                                  to this client, the session still works after
 *   ring_client wreck VGPU         sets the ring's tail far ahead (a corrupt ring)
 *                                  and exits: the executor stops that ring only
 *   ring_client behind VGPU        a small asynchronous HtoD behind a 300 ms kernel
 *                                  returns at once and lands in order with the
 *                                  bytes of the moment of the call; 2000 fills of
 *                                  one word each, back to back, land in order
 *                                  (the executor's look-ahead waits for half of
 *                                  its entries, not all); a refused asynchronous
 *                                  copy is the next synchronise's error
 *   ring_client busy VGPU S [forge] 1 ms kernels, synchronised, for S seconds;
 *                                  prints how many; forge: a thread meanwhile
 *                                  writes every word of the ring's control
 *                                  block a tenant could hope to gain by (open,
 *                                  client_ack, the executor's counters zeroed):
 *                                  issue 23.1, the schedule and the charge must
 *                                  not change
 *   ring_client fills VGPU S       for S seconds: a fill of 4096 words with the round's
 *                                  value, a 1 ms kernel, the words read back and
 *                                  checked (launches mostly: compute grants);
 *                                  prints the rounds and how many went through the ring
 *   ring_client pauses VGPU N MS   N rounds of a 100 us kernel and a synchronise,
 *                                  MS milliseconds of host time between them
 *                                  (a program that hashes or prints between
 *                                  bursts); prints the rounds and how many
 *                                  went through the ring
 *   ring_client periodic VGPU N MS K US [copy|pause]  a latency tenant (issue
 *                                  41): N requests every MS milliseconds, each
 *                                  K kernels of US microseconds and a
 *                                  synchronise (copy: its input copied in
 *                                  first and its output out and checked after;
 *                                  pause: that, and a synchronise and 1 ms on
 *                                  the host half-way); prints the requests'
 *                                  latencies (from their planned start to the
 *                                  synchronise's return) as p50, p99, max and
 *                                  p90 in ms
 *   ring_client kernels VGPU S US1 [US2]  kernels of US1 microseconds (US2: every
 *                                  other one that long), a synchronise after
 *                                  each, for S seconds; prints how many and
 *                                  their summed length in ms (the work done)
 *   ring_client stream VGPU S [copy]  a batch tenant: 1 ms kernels, a synchronise
 *                                  after every 8, for S seconds; prints how many;
 *                                  copy: a copy to the device first (its first
 *                                  grant a copy engine's)
 * Uses libgpuos's internals (client_internal.h) to reach the ring. */
#define CLIENT_NAME "ring_client"
#include "client_util.h"

#include "client/client_internal.h"
#include "proto/ring_shm.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static struct gos_ring_ctl *ctl_of(gpuos_vgpu *g) { return gos_ring_ctl(g->ring); }

static int granted(gpuos_vgpu *g)
{
    return g->ring && atomic_load(&ctl_of(g)->open);
}

static uint64_t entries(gpuos_vgpu *g)
{
    return g->ring ? atomic_load(&ctl_of(g)->entries) : 0;
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

/* A kernel of the daemon's built-in module. */
static gpuos_function builtin_fn(gpuos_vgpu *g, const char *name)
{
    gpuos_module m;
    gpuos_function f;
    CHECK(!gpuos_module_load_builtin(g, "builtin", &m), "builtin module");
    CHECK(!gpuos_module_function(g, m, name, &f), "%s", name);
    return f;
}

static gpuos_function fill_fn(gpuos_vgpu *g) { return builtin_fn(g, "fill"); }
static gpuos_function sleep_fn(gpuos_vgpu *g) { return builtin_fn(g, "sleep_ns"); }

/* One pass: every size class both ways, pageable and pinned, DtoD, a launch. */
static void pass(gpuos_vgpu *g, gpuos_function fill, unsigned seed)
{
    static const size_t sizes[] = {1, 3, 100, 4096, GOS_RING_DATA, GOS_RING_DATA + 1, 65536 + 5, (1u << 20) + 3,
                                   (5u << 20) + 17};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *a = malloc(n), *b = malloc(n), *pa = NULL, *pb = NULL;
        CHECK(a && b, "malloc");
        pattern(a, n, seed + (unsigned)k);
        gpuos_dptr d, d2;
        CHECK(!gpuos_mem_alloc(g, n, &d) && !gpuos_mem_alloc(g, n, &d2), "alloc %zu", n);
        CHECK(!gpuos_memcpy_htod(g, d, a, n), "htod %zu", n);
        memset(b, 0, n);
        CHECK(!gpuos_memcpy_dtoh(g, b, d, n), "dtoh %zu", n);
        CHECK(!memcmp(a, b, n), "pageable round trip of %zu bytes corrupted", n);
        CHECK(!gpuos_memcpy_dtod(g, d2, d, n), "dtod %zu", n);
        CHECK(!gpuos_host_alloc(g, n, (void **)&pa) && !gpuos_host_alloc(g, n, (void **)&pb), "host_alloc %zu", n);
        memset(pa, 0, n);
        CHECK(!gpuos_memcpy_dtoh_async(g, pa, d2, n), "pinned dtoh %zu", n);
        CHECK(!gpuos_synchronize(g), "sync");
        CHECK(!memcmp(a, pa, n), "dtod + pinned dtoh of %zu bytes corrupted", n);
        pattern(pa, n, seed + 1000 + (unsigned)k);
        CHECK(!gpuos_memcpy_htod(g, d, pa, n), "pinned htod %zu", n);
        CHECK(!gpuos_memcpy_dtoh(g, pb, d, n), "pinned dtoh %zu", n);
        CHECK(!memcmp(pa, pb, n), "pinned round trip of %zu bytes corrupted", n);
        gpuos_host_free(g, pa);
        gpuos_host_free(g, pb);
        gpuos_mem_free(g, d);
        gpuos_mem_free(g, d2);
        free(a);
        free(b);
    }
    /* Staged small HtoD copies (answered once issued from the executor's own
     * copy of the bytes): 300 of them, more than its 64 staging buffers, each
     * source overwritten as soon as the call returns, a launch that overwrites
     * the first copy's words right behind them (same order as submitted), then
     * one read back: every byte from the copy or the launch, in order. */
    {
        enum { N = 300, B = 4000 };
        unsigned char *src = malloc(B), *all = malloc((size_t)N * B), *want = malloc((size_t)N * B);
        gpuos_dptr big;
        CHECK(src && all && want && !gpuos_mem_alloc(g, (size_t)N * B, &big), "staged buffers");
        for (int i = 0; i < N; i++) {
            pattern(src, B, seed * 7919u + (unsigned)i);
            memcpy(want + (size_t)i * B, src, B);
            CHECK(!gpuos_memcpy_htod(g, big + (uint64_t)i * B, src, B), "staged htod %d", i);
            memset(src, 0xEE, B); /* the caller's buffer is free again */
        }
        struct {
            uint64_t p;
            uint32_t v, pad;
            uint64_t count;
        } prm = {big, 0xC0FFEE00u + seed, 0, 256};
        gpuos_launch_config c1 = {{1, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0};
        CHECK(!gpuos_launch(g, fill, &c1, &prm, sizeof prm), "launch after the staged copies");
        for (int i = 0; i < 256; i++)
            memcpy(want + (size_t)i * 4, &prm.v, 4);
        CHECK(!gpuos_memcpy_dtoh(g, all, big, (size_t)N * B), "staged read back");
        for (size_t i = 0; i < (size_t)N * B; i++)
            CHECK(all[i] == want[i], "staged htod: byte %zu (copy %zu) is 0x%02x, expected 0x%02x", i, i / B,
                  all[i], want[i]);
        gpuos_mem_free(g, big);
        free(src);
        free(all);
        free(want);
    }
    /* launches: fill(p, v, count) back to back, then read back */
    size_t words = 3000;
    gpuos_dptr p;
    CHECK(!gpuos_mem_alloc(g, words * 4, &p), "alloc fill");
    for (uint32_t v = 1; v <= 20; v++) {
        struct {
            uint64_t p;
            uint32_t v, pad;
            uint64_t count;
        } prm = {p, v + seed, 0, words};
        gpuos_launch_config c = {{(uint32_t)((words + 255) / 256), 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0};
        CHECK(!gpuos_launch(g, fill, &c, &prm, sizeof prm), "launch fill");
    }
    uint32_t *w = malloc(words * 4);
    CHECK(w && !gpuos_synchronize(g), "sync after launches");
    CHECK(!gpuos_memcpy_dtoh(g, w, p, words * 4), "dtoh fill");
    for (size_t i = 0; i < words; i++)
        CHECK(w[i] == 20 + seed, "fill word %zu: %u, expected %u", i, w[i], 20 + seed);
    free(w);
    gpuos_mem_free(g, p);
}

static int cmd_exact(const char *va, double secs)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = fill_fn(g);
    double t0 = now_s();
    unsigned seed = (unsigned)getpid();
    int passes = 0, ringed = 0;
    do {
        uint64_t e0 = entries(g);
        pass(g, f, seed + (unsigned)passes);
        ringed += entries(g) > e0;
        passes++;
        printf("pass %d\n", passes);
        fflush(stdout);
    } while (now_s() - t0 < secs);
    printf("exact passes %d ring_passes %d entries %llu granted %d\n", passes, ringed,
           (unsigned long long)entries(g), granted(g));
    gpuos_close(g);
    return 0;
}

/* executor = per-vgpu (t_xshare.sh): prints the executor's pid, allocates
 * bytes of device memory (0: none), then runs byte-exact passes for secs. */
static int cmd_share(const char *va, double secs, double bytes)
{
    gpuos_vgpu *g = open_or_die(va);
    CHECK(g->ring, "no ring: no executor pid to tell");
    printf("executor %d\n", (int)atomic_load(&ctl_of(g)->exec_pid));
    if (bytes > 0) {
        gpuos_dptr d;
        int rc = gpuos_mem_alloc(g, (size_t)bytes, &d);
        if (rc) {
            printf("alloc failed: %s\n", gpuos_error());
            return 1;
        }
        printf("allocated %.0f\n", bytes);
    }
    gpuos_function f = fill_fn(g);
    double t0 = now_s();
    int passes = 0;
    do {
        pass(g, f, (unsigned)getpid() + (unsigned)passes);
        passes++;
    } while (now_s() - t0 < secs);
    printf("share ok passes %d\n", passes);
    gpuos_close(g);
    return 0;
}

static int cmd_granted(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    int ok = granted(g);
    printf("ring %s\n", !g->ring ? "none" : ok ? "granted" : "revoked");
    gpuos_close(g);
    return ok ? 0 : 1;
}

/* Submits one raw entry and waits for its answer (bypassing the library's
 * checks: what a hostile client can write). */
static int raw(gpuos_vgpu *g, const struct gos_ring_ent *e, const void *data, size_t dlen, char *msg)
{
    struct gos_ring_ctl *k = ctl_of(g);
    struct gos_ring_ent *s = gos_ring_slot(g->ring, g->ring_tail);
    memcpy(s, e, offsetof(struct gos_ring_ent, rc));
    s->rc = 12345;
    if (dlen)
        memcpy(s->data, data, dlen);
    uint32_t idx = g->ring_tail++;
    atomic_store(&k->sq_tail, g->ring_tail);
    gos_ring_kick(&k->sq_futex, &k->exec_sleeping);
    double t0 = now_s();
    while ((int32_t)(atomic_load(&k->cq_done) - (idx + 1)) < 0) {
        CHECK(now_s() - t0 < 10, "no answer to a raw entry in 10 s");
        usleep(50);
    }
    g->ring_checked = g->ring_tail;
    atomic_store(&k->client_ack, g->ring_tail);
    snprintf(msg, GOS_RING_MSG, "%.*s", (int)GOS_RING_MSG - 1, s->msg);
    return s->rc;
}

struct rewriter {
    gpuos_vgpu *g;
    atomic_int stop;
};

static void *rewrite_main(void *arg)
{
    struct rewriter *w = arg;
    uint32_t x = 1;
    while (!atomic_load(&w->stop)) {
        for (uint32_t i = 0; i < GOS_RING_SLOTS; i++) {
            unsigned char *s = (unsigned char *)gos_ring_slot(w->g->ring, i);
            for (int j = 0; j < 8; j++) {
                x = x * 1103515245u + 12345u;
                s[(x >> 8) % offsetof(struct gos_ring_ent, rc)] = (unsigned char)(x >> 24);
            }
        }
    }
    return NULL;
}

static int cmd_hostile(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    CHECK(granted(g), "the lone client's ring is not granted");
    gpuos_function f = fill_fn(g);
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, 1 << 20, &d), "alloc");
    uint64_t refused0 = atomic_load(&ctl_of(g)->refused);
    struct {
        const char *what;
        struct gos_ring_ent e;
        int want; /* expected code */
        const char *says;
    } cases[] = {
        {"bad opcode", {.op = 99}, GPUOS_EPROTO, "opcode"},
        {"bad flags", {.op = GOS_OP_FENCE, .flags = 0x80}, GPUOS_EPROTO, "flags"},
        {"foreign device range", {.op = GOS_OP_HTOD, .flags = GOS_F_INLINE, .dptr = 0x10, .bytes = 8},
         GPUOS_EINVAL, "not inside an allocation"},
        {"range past the allocation", {.op = GOS_OP_DTOH, .flags = GOS_F_INLINE, .dptr = d + (1 << 20) - 4,
                                       .bytes = 8}, GPUOS_EINVAL, "not inside an allocation"},
        {"inline length over the slot", {.op = GOS_OP_HTOD, .flags = GOS_F_INLINE, .dptr = d,
                                         .bytes = GOS_RING_DATA + 1}, GPUOS_EINVAL, "inline"},
        {"huge length wrapping", {.op = GOS_OP_DTOD, .dptr = d + 16, .dptr2 = d, .bytes = UINT64_MAX - 8},
         GPUOS_EINVAL, "copy of"},
        {"copy past the allocation", {.op = GOS_OP_DTOD, .dptr = d + 16, .dptr2 = d, .bytes = 1 << 20},
         GPUOS_EINVAL, "not inside an allocation"},
        {"copy of no bytes", {.op = GOS_OP_DTOD, .dptr = d, .dptr2 = d}, GPUOS_EINVAL, "copy of 0 bytes"},
        {"launch that copies", {.op = GOS_OP_LAUNCH, .func = f, .grid = {1, 1, 1}, .block = {32, 1, 1},
                                .bytes = 8, .param_bytes = 24}, GPUOS_EPROTO, "a launch of"},
        {"unregistered region", {.op = GOS_OP_HTOD, .region = 63, .dptr = d, .bytes = 16}, GPUOS_EINVAL, "region"},
        {"region out of range", {.op = GOS_OP_DTOH, .region = 5000, .dptr = d, .bytes = 16}, GPUOS_EINVAL,
         "region"},
        {"region offset overflow", {.op = GOS_OP_DTOH, .region = g->stage_region, .offset = UINT64_MAX - 2,
                                    .dptr = d, .bytes = 16}, GPUOS_EINVAL, "region"},
        {"unknown function", {.op = GOS_OP_LAUNCH, .func = 200, .grid = {1, 1, 1}, .block = {1, 1, 1}},
         GPUOS_EINVAL, "function handle"},
        {"function 0", {.op = GOS_OP_LAUNCH, .func = 0, .grid = {1, 1, 1}, .block = {1, 1, 1}}, GPUOS_EINVAL,
         "function handle"},
        {"parameters over the limit", {.op = GOS_OP_LAUNCH, .func = f, .grid = {1, 1, 1}, .block = {1, 1, 1},
                                       .param_bytes = 100000}, GPUOS_EINVAL, "parameters"},
        {"block of 2048 threads", {.op = GOS_OP_LAUNCH, .func = f, .grid = {1, 1, 1}, .block = {2048, 1, 1},
                                   .param_bytes = 24}, GPUOS_EINVAL, "block"},
        {"zero grid", {.op = GOS_OP_LAUNCH, .func = f, .grid = {0, 1, 1}, .block = {1, 1, 1}, .param_bytes = 24},
         GPUOS_EINVAL, "grid"},
        {"fill of a foreign range", {.op = GOS_OP_LAUNCH, .func = f, .grid = {1, 1, 1}, .block = {32, 1, 1},
                                     .param_bytes = 24}, GPUOS_EINVAL, "not inside an allocation"},
        {"gate on no region", {.op = GOS_OP_GATE, .region = 63, .dptr2 = UINT64_MAX}, GPUOS_EINVAL, "region"},
        {"gate word unaligned", {.op = GOS_OP_GATE, .region = g->stage_region, .offset = 4, .dptr2 = UINT64_MAX},
         GPUOS_EINVAL, "8-aligned"},
        {"gate word past its region", {.op = GOS_OP_GATE, .region = g->stage_region, .offset = UINT64_MAX - 7,
                                       .dptr2 = UINT64_MAX}, GPUOS_EINVAL, "region"},
    };
    struct {
        uint64_t p;
        uint32_t v, pad;
        uint64_t count;
    } foreign = {0x7f0000000000ull, 1, 0, 1000};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[GOS_RING_MSG];
        int rc = raw(g, &cases[i].e, &foreign, sizeof foreign, msg);
        CHECK(rc == cases[i].want, "%s: rc %d, expected %d (%s)", cases[i].what, rc, cases[i].want, msg);
        CHECK(strstr(msg, cases[i].says), "%s: message \"%s\" does not say \"%s\"", cases[i].what, msg,
              cases[i].says);
        printf("refused %-28s %s\n", cases[i].what, msg);
    }
    CHECK(atomic_load(&ctl_of(g)->refused) - refused0 >= sizeof cases / sizeof cases[0] - 1, "refusals not counted");
    /* the session and the ring still work */
    CHECK(granted(g), "grant lost");
    pass(g, f, 77);
    /* slots rewritten at random while the executor copies them out: every entry
     * is answered (with whatever error), nothing crashes */
    struct rewriter w = {g, 0};
    pthread_t t;
    CHECK(!pthread_create(&t, NULL, rewrite_main, &w), "thread");
    int answered = 0;
    for (int i = 0; i < 3000; i++) {
        struct gos_ring_ent e = {.op = GOS_OP_HTOD, .flags = GOS_F_INLINE, .dptr = d, .bytes = 64};
        char msg[GOS_RING_MSG], buf[64] = {0};
        int rc = raw(g, &e, buf, sizeof buf, msg);
        answered += rc != 12345;
    }
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    CHECK(answered == 3000, "%d of 3000 rewritten entries answered", answered);
    pid_t ep = atomic_load(&ctl_of(g)->exec_pid);
    CHECK(ep > 0 && kill(ep, 0) == 0, "executor %d gone after the hostile entries", (int)ep);
    pass(g, f, 78);
    CHECK(!gpuos_synchronize(g), "sync");
    printf("hostile refused %zu cases, 3000 rewritten entries answered, executor %d alive\n",
           sizeof cases / sizeof cases[0], (int)ep);
    gpuos_close(g);
    return 0;
}

/* A kernel that faults, launched through the ring: GPUOS_EDEVICE with the
 * device's error to this client, then the same session refuses further work
 * with an error (never hangs). */
static int cmd_fault(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    CHECK(granted(g), "not granted");
    gpuos_function f = builtin_fn(g, "fault");
    gpuos_launch_config c = {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0};
    int rc = gpuos_launch(g, f, &c, NULL, 0);
    int rs = gpuos_synchronize(g);
    CHECK(rc == 0 && rs == GPUOS_EDEVICE, "fault through the ring: launch %d, sync %d", rc, rs);
    printf("fault: %s\n", gpuos_error());
    double t0 = now_s();
    gpuos_dptr d;
    unsigned char b[16] = {0};
    rc = gpuos_mem_alloc(g, 16, &d);
    if (!rc)
        rc = gpuos_memcpy_htod(g, d, b, 16);
    CHECK(rc != 0 && now_s() - t0 < 30, "work after the fault: rc %d after %.1f s", rc, now_s() - t0);
    printf("after the fault: rc %d: %s\n", rc, gpuos_error());
    gpuos_close(g);
    return 0;
}

static int cmd_wreck(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    CHECK(granted(g), "not granted");
    struct gos_ring_ctl *k = ctl_of(g);
    atomic_store(&k->sq_tail, g->ring_tail + 100000);
    gos_ring_kick(&k->sq_futex, &k->exec_sleeping);
    usleep(200000);
    printf("wrecked, executor %d\n", (int)atomic_load(&k->exec_pid));
    _exit(0); /* no goodbye: the daemon sees the connection drop */
}

struct forger {
    gpuos_vgpu *g;
    atomic_int stop;
};

static void *forge_main(void *arg)
{
    struct forger *w = arg;
    struct gos_ring_ctl *k = ctl_of(w->g);
    while (!atomic_load(&w->stop)) {
        atomic_store(&k->open, 1);
        atomic_store(&k->client_ack, atomic_load(&k->sq_tail));
        atomic_store(&k->busy_ns, 0);
        atomic_store(&k->entries, 0);
        atomic_store(&k->copy_busy_ns, 0);
        atomic_store(&k->copy_entries, 0);
        atomic_store(&k->spin_us, 1000);
        usleep(100);
    }
    return NULL;
}

static int cmd_behind(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function fill = fill_fn(g), sl = sleep_fn(g);
    CHECK(granted(g), "no ring granted");
    const size_t words = 2048;
    gpuos_dptr p;
    CHECK(!gpuos_mem_alloc(g, words * 4, &p), "alloc");
    uint64_t ns = 300000000ull, e0 = entries(g);
    gpuos_launch_config c1 = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    unsigned char b[64], want[64];
    pattern(want, sizeof want, 7);
    memcpy(b, want, sizeof b);
    double t0 = now_s();
    CHECK(!gpuos_launch(g, sl, &c1, &ns, 8), "sleep kernel");
    CHECK(!gpuos_memcpy_htod_async(g, p, b, sizeof b), "asynchronous HtoD");
    double dt = now_s() - t0;
    memset(b, 0, sizeof b); /* the copy took the bytes at the call */
    CHECK(!gpuos_synchronize(g), "synchronise");
    double total = now_s() - t0;
    /* a property, not a speed: the copy returned well before the kernel it is
     * queued behind could end (waiting for it, as before, makes dt ~ total) */
    CHECK(total >= 0.25 && dt < total / 2, "HtoD behind a 300 ms kernel returned after %.3f s (all done after %.3f s)",
          dt, total);
    CHECK(!gpuos_memcpy_dtoh(g, b, p, sizeof b) && !memcmp(b, want, sizeof b), "the asynchronous HtoD's bytes");
    /* word i gets i + 1, one launch each, after a fill of the whole buffer */
    struct {
        uint64_t p;
        uint32_t value, pad;
        uint64_t count;
    } prm = {p, 0xdeadbeefu, 0, words};
    gpuos_launch_config c = {{(uint32_t)((words + 255) / 256), 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0};
    CHECK(!gpuos_launch(g, fill, &c, &prm, sizeof prm), "fill all");
    for (size_t i = 0; i < words; i++) {
        prm.p = p + 4 * i;
        prm.value = (uint32_t)i + 1;
        prm.count = 1;
        CHECK(!gpuos_launch(g, fill, &c1, &prm, sizeof prm), "fill word %zu", i);
    }
    CHECK(!gpuos_synchronize(g), "synchronise the fills");
    uint32_t *w = malloc(words * 4);
    CHECK(w && !gpuos_memcpy_dtoh(g, w, p, words * 4), "read back");
    for (size_t i = 0; i < words; i++)
        CHECK(w[i] == i + 1, "word %zu: %u after %zu fills in order", i, w[i], words);
    free(w);
    CHECK(entries(g) - e0 >= words, "only %llu ring entries for %zu launches", (unsigned long long)(entries(g) - e0),
          words);
    /* an asynchronous copy the executor refuses (past the allocation's end) */
    int rc = gpuos_memcpy_htod_async(g, p + words * 4 - 16, want, sizeof want);
    int sync_rc = gpuos_synchronize(g);
    CHECK(rc || sync_rc, "an asynchronous HtoD past the allocation was not refused");
    CHECK(!gpuos_synchronize(g), "the session after the refused copy");
    gpuos_mem_free(g, p);
    printf("behind htod_return_s %.4f total_s %.3f ok\n", dt, total);
    gpuos_close(g);
    return 0;
}

static int cmd_busy(const char *va, double secs, int forge)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = sleep_fn(g);
    struct forger w = {g, 0};
    pthread_t t;
    if (forge)
        CHECK(g->ring && !pthread_create(&t, NULL, forge_main, &w), "forging thread");
    uint64_t ns = 1000000;
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    long k = 0;
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        CHECK(!gpuos_launch(g, f, &c, &ns, 8) && !gpuos_synchronize(g), "busy kernel %ld", k);
        k++;
    }
    if (forge) {
        atomic_store(&w.stop, 1);
        pthread_join(t, NULL);
    }
    printf("busy kernels %ld\n", k);
    gpuos_close(g);
    return 0;
}

static int cmd_fills(const char *va, double secs)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function sl = sleep_fn(g), fill = fill_fn(g);
    enum { W = 4096 };
    gpuos_dptr p;
    uint32_t *w = malloc(W * 4);
    CHECK(w && !gpuos_mem_alloc(g, W * 4, &p), "fills buffer");
    uint64_t ns = 1000000, e0 = entries(g);
    gpuos_launch_config c = {{W / 256, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0}, c1 = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    long k = 0;
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        struct {
            uint64_t p;
            uint32_t v, pad;
            uint64_t count;
        } prm = {p, (uint32_t)(0x5EED0000u + (uint32_t)k), 0, W};
        CHECK(!gpuos_launch(g, fill, &c, &prm, sizeof prm) && !gpuos_launch(g, sl, &c1, &ns, 8) &&
                  !gpuos_memcpy_dtoh(g, w, p, W * 4),
              "round %ld", k);
        for (int i = 0; i < W; i++)
            CHECK(w[i] == prm.v, "round %ld: word %d is 0x%08x, expected 0x%08x", k, i, w[i], prm.v);
        k++;
    }
    printf("fills rounds %ld ring_entries %llu\n", k, (unsigned long long)(entries(g) - e0));
    free(w);
    gpuos_mem_free(g, p);
    gpuos_close(g);
    return 0;
}

static int cmd_pauses(const char *va, int n, double ms)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = sleep_fn(g);
    uint64_t ns = 100000;
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    uint64_t e0 = entries(g);
    for (int i = 0; i < n; i++) {
        CHECK(!gpuos_launch(g, f, &c, &ns, 8) && !gpuos_synchronize(g), "round %d", i);
        long us = (long)(ms * 1000);
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    printf("pauses rounds %d ring_entries %llu\n", n, (unsigned long long)(entries(g) - e0));
    gpuos_close(g);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* periodic's request shapes: kernels only; its input copied in and its output
 * out; that and a pause on the host half-way */
enum periodic_shape { P_KERNELS, P_COPY, P_PAUSE };

static int cmd_periodic(const char *va, int n, double ms, int k, double us, enum periodic_shape shape)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = sleep_fn(g);
    uint64_t ns = (uint64_t)(us * 1000);
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    double *lat = calloc((size_t)n, sizeof *lat), t0 = now_s();
    CHECK(lat && n > 0, "periodic: %d requests", n);
    uint32_t tok[128] = {0}; /* copy: a request's input in, its output out, as a service's are */
    gpuos_dptr d = 0;
    if (shape != P_KERNELS)
        CHECK(!gpuos_mem_alloc(g, sizeof tok, &d), "periodic: its buffer");
    for (int i = 0; i < n; i++) {
        double plan = t0 + i * ms / 1e3, wait = plan - now_s();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        }
        if (shape != P_KERNELS) {
            tok[0] = (uint32_t)i;
            CHECK(!gpuos_memcpy_htod(g, d, tok, sizeof tok), "request %d: its input", i);
        }
        for (int j = 0; j < k; j++) {
            CHECK(!gpuos_launch(g, f, &c, &ns, 8), "request %d kernel %d", i, j);
            if (shape == P_PAUSE && j == k / 2 - 1) { /* a pause mid-request, as a Python service's host work */
                CHECK(!gpuos_synchronize(g), "request %d: its first half", i);
                struct timespec p = {0, 1000000};
                nanosleep(&p, NULL);
            }
        }
        if (shape != P_KERNELS) {
            CHECK(!gpuos_memcpy_dtoh(g, tok, d, sizeof tok), "request %d: its output", i);
            CHECK(tok[0] == (uint32_t)i, "request %d: its output is %u", i, tok[0]);
        }
        CHECK(!gpuos_synchronize(g), "request %d", i);
        lat[i] = (now_s() - plan) * 1e3;
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    printf("periodic p50 %.3f p99 %.3f max %.3f p90 %.3f\n", lat[n / 2],
           lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], lat[n - 1], lat[(n * 9) / 10]);
    free(lat);
    if (shape != P_KERNELS)
        gpuos_mem_free(g, d);
    gpuos_close(g);
    return 0;
}

static int cmd_kernels(const char *va, double secs, double us1, double us2)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = sleep_fn(g);
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    long k = 0;
    double t0 = now_s(), work = 0;
    while (now_s() - t0 < secs) {
        uint64_t ns = (uint64_t)((k % 2 && us2 > 0 ? us2 : us1) * 1000);
        CHECK(!gpuos_launch(g, f, &c, &ns, 8) && !gpuos_synchronize(g), "kernel %ld", k);
        work += (double)ns / 1e6;
        k++;
    }
    printf("kernels %ld work_ms %.1f\n", k, work);
    gpuos_close(g);
    return 0;
}

static int cmd_stream(const char *va, double secs, int copy_first)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = sleep_fn(g);
    uint64_t ns = 1000000;
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    long k = 0;
    if (copy_first) { /* a copy first, as a program moves its weights in before it computes */
        static unsigned char w[4096];
        gpuos_dptr d;
        CHECK(!gpuos_mem_alloc(g, sizeof w, &d) && !gpuos_memcpy_htod(g, d, w, sizeof w), "stream's first copy");
    }
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        CHECK(!gpuos_launch(g, f, &c, &ns, 8), "stream kernel %ld", k);
        if (++k % 8 == 0)
            CHECK(!gpuos_synchronize(g), "stream kernel %ld", k);
    }
    CHECK(!gpuos_synchronize(g), "stream's end");
    printf("stream kernels %ld\n", k);
    gpuos_close(g);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && !strcmp(argv[1], "exact"))
        return cmd_exact(argv[2], argc > 3 ? atof(argv[3]) : 0);
    if (argc == 5 && !strcmp(argv[1], "share"))
        return cmd_share(argv[2], atof(argv[3]), atof(argv[4]));
    if (argc == 3 && !strcmp(argv[1], "granted"))
        return cmd_granted(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "hostile"))
        return cmd_hostile(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "fault"))
        return cmd_fault(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "wreck"))
        return cmd_wreck(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "behind"))
        return cmd_behind(argv[2]);
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "busy"))
        return cmd_busy(argv[2], atof(argv[3]), argc == 5 && !strcmp(argv[4], "forge"));
    if (argc == 4 && !strcmp(argv[1], "fills"))
        return cmd_fills(argv[2], atof(argv[3]));
    if (argc == 5 && !strcmp(argv[1], "pauses"))
        return cmd_pauses(argv[2], atoi(argv[3]), atof(argv[4]));
    if ((argc == 7 || argc == 8) && !strcmp(argv[1], "periodic")) {
        enum periodic_shape sh = argc == 7                  ? P_KERNELS
                                 : !strcmp(argv[7], "copy")  ? P_COPY
                                 : !strcmp(argv[7], "pause") ? P_PAUSE
                                                             : (enum periodic_shape)-1;
        if (sh != (enum periodic_shape)-1)
            return cmd_periodic(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]), atof(argv[6]), sh);
    }
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "kernels"))
        return cmd_kernels(argv[2], atof(argv[3]), atof(argv[4]), argc == 6 ? atof(argv[5]) : 0);
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "stream"))
        return cmd_stream(argv[2], atof(argv[3]), argc == 5 && !strcmp(argv[4], "copy"));
    fprintf(stderr, "ring_client: bad command\n");
    return 2;
}
