/* SPDX-License-Identifier: Apache-2.0 */
/* vgpu_work.c: vgpu_bench's workloads, one function each, and the two
 * backends they run against (vgpu_work.h): native, this process's context
 * through the device layer (gos_exec_*), and gpuos, a vGPU through libgpuos.
 * Each backend counts the operations it issued; --ops FILE records the two
 * counts of every paired workload. */
#include "vgpu_work.h"

#include "vgpu_lib.h"

#include "common/jsonio.h"
#include "common/status.h"

#include <string.h>
#include <unistd.h>

/* Every operation counts itself once issued (rc 0) in its backend's tally,
 * where the driver or the library is called. */
static int counted(long *c, int rc)
{
    *c += !rc;
    return rc;
}

static int copied(struct wl_backend *b, int htod, size_t n, int rc)
{
    if (!rc) {
        b->tally.copies[!htod]++;
        b->tally.bytes[!htod] += n;
    }
    return rc;
}

/* ---- native: the device layer on this process's context ---------------- */

static int n_alloc(struct wl_backend *b, size_t n, uint64_t *d)
{
    return counted(&b->tally.allocs, gos_exec_mem_alloc(b->dev, n, d));
}

static int n_free(struct wl_backend *b, uint64_t d) { return counted(&b->tally.frees, gos_exec_mem_free(b->dev, d)); }

static int n_host_alloc(struct wl_backend *b, size_t n, void **h)
{
    return counted(&b->tally.host_allocs, gos_exec_host_alloc(b->dev, n, h));
}

static int n_host_free(struct wl_backend *b, void *h)
{
    return counted(&b->tally.host_frees, gos_exec_host_free(b->dev, h));
}

static int n_kernel(struct wl_backend *b, const char *name, uint64_t *k)
{
    void *fn;
    if (!b->mod && gos_exec_module_load(b->dev, NULL, 0, GOS_EXEC_BUILTIN, &b->mod))
        return GOS_EDEVICE;
    if (gos_exec_function(b->dev, b->mod, name, &fn))
        return GOS_EDEVICE;
    *k = (uint64_t)(uintptr_t)fn;
    return 0;
}

static int n_launch(struct wl_backend *b, uint64_t k, const struct gos_launch_cfg *cfg)
{
    return counted(&b->tally.launches, gos_exec_launch(b->dev, (void *)(uintptr_t)k, cfg, b->stream));
}

/* pinned: the vendor's asynchronous copy on the stream; pageable: its
 * synchronous copy */
static int n_copy(struct wl_backend *b, int htod, void *host, uint64_t d, size_t n, int async)
{
    int rc;
    if (!async) {
        rc = htod ? gos_exec_copy_htod_sync(b->dev, d, host, n) : gos_exec_copy_dtoh_sync(b->dev, host, d, n);
    } else {
        b->pending = 1;
        rc = htod ? gos_exec_copy_htod(b->dev, d, host, n, b->stream) : gos_exec_copy_dtoh(b->dev, host, d, n, b->stream);
    }
    return copied(b, htod, n, rc);
}

/* a wait for the copies issued: the stream's synchronise after asynchronous
 * ones (the synchronous copies have waited) */
static int n_copies_done(struct wl_backend *b)
{
    int rc = b->pending ? gos_exec_stream_sync(b->dev, b->stream) : 0;
    b->pending = 0;
    return counted(&b->tally.waits, rc);
}

static int n_sync(struct wl_backend *b) { return counted(&b->tally.syncs, gos_exec_stream_sync(b->dev, b->stream)); }

static const struct wl_ops native_ops = {n_alloc, n_free, n_host_alloc, n_host_free, n_kernel,
                                         n_launch, n_copy, n_copies_done, n_sync};

struct wl_backend wl_native(gos_device *d, void *st)
{
    return (struct wl_backend){.name = "native", .ops = &native_ops, .dev = d, .stream = st,
                               .sms = (unsigned)d->info.sm_count};
}

/* ---- gpuos: a vGPU through libgpuos ------------------------------------- */

static int g_alloc(struct wl_backend *b, size_t n, uint64_t *d)
{
    return counted(&b->tally.allocs, gpuos_mem_alloc(b->g, n, d));
}

static int g_free(struct wl_backend *b, uint64_t d) { return counted(&b->tally.frees, gpuos_mem_free(b->g, d)); }

static int g_host_alloc(struct wl_backend *b, size_t n, void **h)
{
    return counted(&b->tally.host_allocs, gpuos_host_alloc(b->g, n, h));
}

static int g_host_free(struct wl_backend *b, void *h)
{
    return counted(&b->tally.host_frees, gpuos_host_free(b->g, h));
}

static int g_kernel(struct wl_backend *b, const char *name, uint64_t *k)
{
    *k = gfn(b->g, name);
    return 0;
}

static int g_launch(struct wl_backend *b, uint64_t k, const struct gos_launch_cfg *cfg)
{
    gpuos_launch_config c = {.shared_mem = cfg->smem};
    for (int i = 0; i < 3; i++) {
        c.grid[i] = cfg->grid[i];
        c.block[i] = cfg->block[i];
        c.cluster[i] = cfg->cluster[i];
    }
    return counted(&b->tally.launches, gpuos_launch(b->g, k, &c, cfg->params, cfg->param_bytes));
}

static int g_copy(struct wl_backend *b, int htod, void *host, uint64_t d, size_t n, int async)
{
    (void)async;
    return copied(b, htod, n, htod ? gpuos_memcpy_htod(b->g, d, host, n) : gpuos_memcpy_dtoh(b->g, host, d, n));
}

/* libgpuos's copies return once done */
static int g_copies_done(struct wl_backend *b) { return counted(&b->tally.waits, 0); }

static int g_sync(struct wl_backend *b) { return counted(&b->tally.syncs, gpuos_synchronize(b->g)); }

static const struct wl_ops gpuos_ops = {g_alloc, g_free, g_host_alloc, g_host_free, g_kernel,
                                        g_launch, g_copy, g_copies_done, g_sync};

struct wl_backend wl_gpuos(gpuos_vgpu *g, unsigned sms)
{
    return (struct wl_backend){.name = "gpuos", .ops = &gpuos_ops, .g = g, .sms = sms};
}

/* ---- the workloads' steps ------------------------------------------------ */

static uint64_t kernel(struct wl_backend *b, const char *name)
{
    uint64_t k;
    if (b->ops->kernel(b, name, &k))
        DIE("%s kernel %s", b->name, name);
    return k;
}

/* ---- the workloads --------------------------------------------------------- */

void wl_copy_times(struct wl_backend *b, int htod, int async, void *host, uint64_t d, size_t n, double *t, int r)
{
    for (int i = -1; i < r; i++) {
        double t0 = now();
        if (b->ops->copy(b, htod, host, d, n, async) || b->ops->copies_done(b))
            DIE("%s copy of %zu", b->name, n);
        if (i >= 0)
            t[i] = now() - t0;
    }
}

/* the empty kernel, one block of a warp */
static const struct gos_launch_cfg empty_cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}};

double wl_launch_rate(struct wl_backend *b, int n)
{
    uint64_t k = kernel(b, "empty");
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (b->ops->launch(b, k, &empty_cfg))
            DIE("%s launch", b->name);
    if (b->ops->sync(b))
        DIE("%s synchronise", b->name);
    return (now() - t0) / n * 1e6;
}

int wl_round_trips(struct wl_backend *b, int warm, int max, double secs, double *t)
{
    uint64_t k = kernel(b, "empty");
    double until = now() + secs;
    int n = 0;
    for (int i = -warm; i < max && (secs <= 0 || now() < until); i++) {
        double t0 = now();
        if (b->ops->launch(b, k, &empty_cfg) || b->ops->sync(b))
            DIE("%s launch + synchronise", b->name);
        if (i >= 0)
            t[n++] = (now() - t0) * 1e6;
    }
    return n;
}

long wl_stream(struct wl_backend *b, uint64_t k, const struct gos_launch_cfg *cfg, int every, double until)
{
    long done = 0;
    while (now() < until) {
        for (int i = 0; i < every; i++)
            if (b->ops->launch(b, k, cfg))
                return -1;
        if (b->ops->sync(b))
            return -1;
        done += every;
    }
    return done;
}

/* MADD and MMUL: two matrices of n x n floats up, one kernel, the result down */
static void matrices(struct wl_backend *b, int kind, void *hp)
{
    unsigned n = 1024;
    size_t mat = (size_t)n * n * 4;
    uint64_t a, m, c;
    if (b->ops->alloc(b, mat, &a) || b->ops->alloc(b, mat, &m) || b->ops->alloc(b, mat, &c))
        DIE("%s matrices", b->name);
    b->ops->copy(b, 1, hp, a, mat, 0);
    b->ops->copy(b, 1, hp, m, mat, 0);
    struct {
        uint64_t a, b, c;
        uint32_t n, pad;
    } p = {a, m, c, n, 0};
    struct gos_launch_cfg cfg = {.grid = {kind == 1 ? 1024u : n / 16, kind == 1 ? 1u : n / 16, 1},
                                 .block = {kind == 1 ? 256u : 16u, kind == 1 ? 1u : 16u, 1},
                                 .params = &p,
                                 .param_bytes = 28};
    if (b->ops->launch(b, kernel(b, kind == 1 ? "madd" : "mmul"), &cfg) || b->ops->sync(b))
        DIE("%s %s", b->name, kind == 1 ? "madd" : "mmul");
    b->ops->copy(b, 0, hp, c, mat, 0);
    b->ops->free(b, a);
    b->ops->free(b, m);
    b->ops->free(b, c);
}

double wl_standalone(struct wl_backend *b, int kind, void *hp, void *hpin, size_t big)
{
    double t0 = now();
    if (kind == 0) {
        uint64_t it = 20000000ull;
        struct gos_launch_cfg c = {.grid = {b->sms * 4, 1, 1}, .block = {256, 1, 1}, .params = &it, .param_bytes = 8};
        if (b->ops->launch(b, kernel(b, "loop"), &c) || b->ops->sync(b))
            DIE("%s loop", b->name);
    } else if (kind <= 2) {
        matrices(b, kind, hp);
    } else {
        uint64_t d;
        void *h = kind == 3 ? hp : hpin;
        if (b->ops->alloc(b, big, &d))
            DIE("%s %zu bytes", b->name, big);
        b->ops->copy(b, 1, h, d, big, kind == 4);
        b->ops->copy(b, 0, h, d, big, kind == 4);
        b->ops->copies_done(b);
        b->ops->free(b, d);
    }
    return now() - t0;
}

#define PROBE_COPY (64u << 20)

struct wl_probe wl_probe(struct wl_backend *b)
{
    static double rt[1000];
    struct wl_probe p = {0};
    p.rounds = wl_round_trips(b, 20, 1000, 1.5, rt);
    p.rt_p90_us = pctl(rt, p.rounds, 0.9);
    p.rt_us = median(rt, p.rounds);
    uint64_t d;
    void *host;
    if (b->ops->alloc(b, PROBE_COPY, &d) || b->ops->host_alloc(b, PROBE_COPY, &host))
        DIE("%s probe buffers", b->name);
    memset(host, 7, PROBE_COPY);
    for (int dir = 0; dir < 2; dir++) {
        double t[6];
        int n = 0;
        double until = now() + 2.0;
        for (int i = -1; i < 5 && now() < until; i++) {
            double t0 = now();
            if (b->ops->copy(b, !dir, host, d, PROBE_COPY, 1) || b->ops->copies_done(b))
                DIE("%s probe copy", b->name);
            if (i >= 0)
                t[n++] = now() - t0;
        }
        double gbps = n ? PROBE_COPY / median(t, n) / 1e9 : 0;
        *(dir ? &p.dtoh_gbps : &p.htod_gbps) = gbps;
    }
    b->ops->free(b, d);
    b->ops->host_free(b, host);
    return p;
}

/* ---- --ops FILE ------------------------------------------------------------ */

static json_t *ops_list;
static const char *ops_file;

void wl_ops_open(const char *file)
{
    ops_file = file;
    ops_list = file ? json_array() : NULL;
}

void wl_begin(struct wl_backend *a, struct wl_backend *b)
{
    memset(&a->tally, 0, sizeof a->tally);
    memset(&b->tally, 0, sizeof b->tally);
}

static json_t *tally_json(const struct wl_tally *t)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "launches", (json_int_t)t->launches,
                     "syncs", (json_int_t)t->syncs, "copy_waits", (json_int_t)t->waits, "allocs",
                     (json_int_t)t->allocs, "frees", (json_int_t)t->frees, "host_allocs", (json_int_t)t->host_allocs,
                     "host_frees", (json_int_t)t->host_frees, "copies_htod", (json_int_t)t->copies[0], "bytes_htod",
                     (json_int_t)t->bytes[0], "copies_dtoh", (json_int_t)t->copies[1], "bytes_dtoh",
                     (json_int_t)t->bytes[1]);
}

void wl_note(const char *section, const char *work, const struct wl_tally *native, const struct wl_tally *gpuos)
{
    if (ops_list)
        json_array_append_new(ops_list, json_pack("{s:s, s:s, s:s, s:o, s:o}", "section", section, "work", work,
                                                  "isolation", mode_label(), "native", tally_json(native), "gpuos",
                                                  tally_json(gpuos)));
}

void wl_ops_save(int last)
{
    if (!ops_list)
        return;
    json_t *root = json_pack("{s:s, s:O}", "schema", "gpuos.vgpu-bench-ops/1", "workloads", ops_list);
    if (json_dump_file(root, ops_file, JSON_INDENT(1)))
        DIE("cannot write %s", ops_file);
    if (last)
        gos_json_trace(root);
    json_decref(root);
}
