/* SPDX-License-Identifier: Apache-2.0 */
/* serve_client.c: a test client of `gpuos serve` for tests/t_serve*.sh. Each
 * subcommand exercises one feature through the public library (or raw bytes for
 * the hostile cases) and exits 0 only when the property it checks holds.
 *
 *   copy VGPU BYTES         pageable + shared-buffer + async + dtod round trips, verified
 *   quota VGPU BYTES        allocate BYTES-sized blocks until refused; prints the count
 *                           and checks the refusal is GPUOS_EBUSY naming the share
 *   burst VGPU NS SECONDS   bursty launches of sleep_ns(NS) (launch, sync, repeat)
 *   burst VGPU NS SECONDS K K launches per synchronise (K > 1 keeps a queue full)
 *   stream VGPU NS SECONDS GAP_US EVERY [COPY]  launches of sleep_ns(NS) without waiting,
 *                           a pause of GAP_US after every EVERY (a Python loop's steps),
 *                           a small asynchronous HtoD copy after every COPY (PyTorch's memsets)
 *   copyload VGPU BYTES SECONDS  repeated pageable htod copies
 *   die VGPU BYTES MS       starts a large copy and _exit()s after MS ms, mid-copy
 *   hold VGPU BYTES SECONDS allocates and sits (concurrency tests)
 *   hostile                 malformed / truncated / hostile byte streams; each must be
 *                           answered with an error or a close, never a crash
 *   version                 a client of protocol version 99: must get a clear error
 *   info VGPU               device and vGPU facts
 *   module VGPU             a module from bytes (SIMMOD image), kernel with parameters;
 *                           its global (cuModuleGetGlobal): zeroed, copies and a kernel
 *                           reach it byte-exact, nothing past its end, nothing after unload
 *   modshare VGPU SECS [leave]  issue 44.2: a module's globals are charged to the share:
 *                           one of 2 GiB is refused (GPUOS_EBUSY naming the share), one
 *                           of 24 MiB is charged exactly (gpuos_mem_info), the share's
 *                           rest is then all an allocation or another module gets;
 *                           prints "charged BYTES", holds SECS, then unloads (the charge
 *                           back) or, with leave, exits holding it
 *   modrace VGPU ROUNDS     two connections of VGPU (a share of 64 MiB) load a module of
 *                           40 MiB of globals at once, ROUNDS times: never both (the
 *                           daemon checks the share again after the device's answer)
 *   fill VGPU MODULE        built-in "fill" with cluster dims (exec on a GPU), verified
 *   prio VGPU PRIO NS COUNT COUNT kernels of NS at priority PRIO; prints elapsed ms
 *   ptx VGPU                a module from PTX text bytes, launched and verified (GPU only)
 *   owner VGPU WORDS SECS FILE  isolation victim (issue 9): a buffer of WORDS words with
 *                           a known pattern, its address written to FILE; for SECS
 *                           copies and launches run and are verified byte-exact; at
 *                           the end the buffer must still hold the pattern
 *   xread VGPU ADDR WORDS   raw kernel xcopy(own <- ADDR): prints "xread rc=R match=M"
 *                           (M: words equal to the owner's pattern) and the error
 *   xwrite VGPU ADDR WORDS  raw kernel xcopy(ADDR <- own words 0xBAD0BAD0)
 *   hostcache VGPU          freed host buffers kept and reused or given back (cmd_hostcache)
 *   hostmap VGPU WANT       gpuos_host_device_pointer of gpuos_host_alloc memory: WANT
 *                           "same" (the host address, inside and at its start) or "none"
 *                           (GPUOS_EUNSUPPORTED); foreign memory is GPUOS_EINVAL
 *   fault VGPU              built-in kernel fault; then the same session must refuse
 *                           work with GPUOS_EDEVICE, and a new session must work
 * The socket comes from $GPUOS_SOCKET. */
#include "gpuos/gpuos.h"
#include "proto/proto.h"
#include "proto/wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_NAME "serve_client"
#include "client_util.h"

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
}

static int cmd_copy(const char *name, size_t n)
{
    gpuos_vgpu *g = open_or_die(name);
    unsigned char *a = malloc(n), *b = malloc(n);
    CHECK(a && b, "malloc");
    fill_pattern(a, n, 1);
    gpuos_dptr d, d2;
    CHECK(!gpuos_mem_alloc(g, n, &d) && !gpuos_mem_alloc(g, n, &d2), "alloc");
    /* small chunks so that even a small test crosses many pipeline slots */
    size_t ck = getenv("SC_CHUNK") ? strtoull(getenv("SC_CHUNK"), NULL, 0) : 64 << 10;
    CHECK(!gpuos_set_copy_params(g, ck, 3), "set copy params");
    CHECK(!gpuos_memcpy_htod(g, d, a, n), "htod pageable");
    memset(b, 0, n);
    CHECK(!gpuos_memcpy_dtoh(g, b, d, n), "dtoh pageable");
    CHECK(!memcmp(a, b, n), "pageable round trip differs");
    CHECK(!gpuos_memcpy_dtod(g, d2, d, n), "dtod");
    void *h;
    CHECK(!gpuos_host_alloc(g, n, &h), "host alloc");
    memset(h, 0, n);
    CHECK(!gpuos_memcpy_dtoh(g, h, d2, n), "dtoh shared");
    CHECK(!memcmp(a, h, n), "dtod/shared round trip differs");
    fill_pattern(h, n, 2);
    CHECK(!gpuos_memcpy_htod_async(g, d, h, n), "htod async shared");
    CHECK(!gpuos_memcpy_dtod_async(g, d2, d, n), "dtod async");
    CHECK(!gpuos_synchronize(g), "sync");
    CHECK(!gpuos_memcpy_dtoh(g, b, d2, n), "dtoh");
    CHECK(!memcmp(h, b, n), "async round trip differs");
    /* unaligned offsets inside both buffers */
    if (n > 1000) {
        CHECK(!gpuos_memcpy_htod(g, d + 3, a + 5, n - 999), "htod offset");
        CHECK(!gpuos_memcpy_dtoh(g, b, d + 3, n - 999), "dtoh offset");
        CHECK(!memcmp(a + 5, b, n - 999), "offset round trip differs");
    }
    uint64_t used, quota, total;
    CHECK(!gpuos_mem_info(g, &used, &quota, &total), "mem info");
    CHECK(used >= 2 * n, "mem used %llu < %zu", (unsigned long long)used, 2 * n);
    CHECK(!gpuos_host_free(g, h), "host free");
    CHECK(!gpuos_mem_free(g, d) && !gpuos_mem_free(g, d2), "free");
    CHECK(gpuos_mem_free(g, d) == GPUOS_EINVAL, "double free must fail");
    gpuos_close(g);
    printf("copy ok %zu\n", n);
    return 0;
}

static int cmd_quota(const char *name, size_t n)
{
    gpuos_vgpu *g = open_or_die(name);
    int count = 0, rc;
    gpuos_dptr d;
    while ((rc = gpuos_mem_alloc(g, n, &d)) == GPUOS_OK && count < 100000)
        count++;
    CHECK(rc == GPUOS_EBUSY, "refusal code %d, expected GPUOS_EBUSY", rc);
    CHECK(strstr(gpuos_error(), "memory share") != NULL, "message does not name the share: %s", gpuos_error());
    printf("quota %d %s\n", count, gpuos_error());
    gpuos_close(g);
    return 0;
}

static gpuos_function sleep_fn(gpuos_vgpu *g)
{
    gpuos_module m;
    gpuos_function f;
    const char *mod = getenv("GPUOS_BUILTIN") ? getenv("GPUOS_BUILTIN") : "builtin";
    CHECK(!gpuos_module_load_builtin(g, mod, &m), "builtin module %s", mod);
    CHECK(!gpuos_module_function(g, m, "sleep_ns", &f), "sleep_ns");
    return f;
}

static void launch_sleep(gpuos_vgpu *g, gpuos_function f, uint64_t ns)
{
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    CHECK(!gpuos_launch(g, f, &c, &ns, sizeof ns), "launch");
}

static int cmd_burst(const char *name, uint64_t ns, double secs, int batch)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function f = sleep_fn(g);
    double end = now_s() + secs;
    long n = 0;
    while (now_s() < end) {
        for (int i = 0; i < batch; i++, n++)
            launch_sleep(g, f, ns);
        CHECK(!gpuos_synchronize(g), "sync");
    }
    printf("launches %ld\n", n);
    gpuos_close(g);
    return 0;
}

/* A streaming tenant with pauses, as a Python training loop is: launches
 * without waiting, a pause of gap_us after every `every` of them (the
 * interpreter between two steps), a synchronise every 1000. */
static int cmd_stream(const char *name, uint64_t ns, double secs, unsigned gap_us, int every, int copy_every)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function f = sleep_fn(g);
    gpuos_dptr d = 0;
    uint32_t word = 0;
    if (copy_every > 0)
        CHECK(!gpuos_mem_alloc(g, 4096, &d), "alloc");
    double end = now_s() + secs;
    long n = 0;
    while (now_s() < end) {
        launch_sleep(g, f, ns);
        n++;
        if (copy_every > 0 && n % copy_every == 0)
            CHECK(!gpuos_memcpy_htod_async(g, d, &word, sizeof word), "htod async");
        if (every > 0 && n % every == 0)
            usleep(gap_us);
        if (n % 1000 == 0)
            CHECK(!gpuos_synchronize(g), "sync");
    }
    CHECK(!gpuos_synchronize(g), "sync");
    printf("launches %ld\n", n);
    gpuos_close(g);
    return 0;
}

static int cmd_hostmap(const char *name, const char *want)
{
    gpuos_vgpu *g = open_or_die(name);
    void *h[2];
    gpuos_dptr d = 0;
    for (int i = 0; i < 2; i++)
        CHECK(!gpuos_host_alloc(g, 3 << 20, &h[i]), "host alloc");
    for (int i = 0; i < 2; i++) {
        int rc = gpuos_host_device_pointer(g, (char *)h[i] + 12345, &d);
        if (!strcmp(want, "same"))
            CHECK(!rc && d == (gpuos_dptr)(uintptr_t)h[i] + 12345, "device address of mapped host memory: rc %d, %s",
                  rc, rc ? gpuos_error() : "another address");
        else
            CHECK(rc == GPUOS_EUNSUPPORTED, "no device address wanted: rc %d", rc);
    }
    static char mine[64];
    CHECK(gpuos_host_device_pointer(g, mine, &d) == GPUOS_EINVAL, "memory not from gpuos_host_alloc must be refused");
    CHECK(gpuos_host_device_pointer(g, h[0], NULL) == GPUOS_EINVAL, "no result pointer must be refused");
    for (int i = 0; i < 2; i++)
        CHECK(!gpuos_host_free(g, h[i]), "host free");
    CHECK(gpuos_host_device_pointer(g, h[0], &d) == GPUOS_EINVAL, "freed memory must be refused");
    gpuos_close(g);
    printf("hostmap %s ok\n", want);
    return 0;
}

/* Freed host buffers kept for the next allocation (libgpuos's host buffer
 * cache; GPUOS_HOST_CACHE=0 keeps none): 200 allocations of two alternating
 * sizes, each filled, copied to the device and back through its region,
 * checked byte for byte and freed (far more than a client's 64 regions: the
 * kept ones are reused or given back), a freed one refused as host memory;
 * then 4 small buffers freed (kept) before 62 larger ones live at once, which
 * with the kept ones need more regions than a client has: the kept ones are
 * given back, every allocation succeeds. */
static int cmd_hostcache(const char *name)
{
    gpuos_vgpu *g = open_or_die(name);
    enum { N = 1 << 20 };
    gpuos_dptr d, dd;
    CHECK(!gpuos_mem_alloc(g, N, &d), "alloc");
    for (int i = 0; i < 200; i++) {
        size_t n = i % 2 ? N : N / 3 + 100;
        unsigned char *h;
        CHECK(!gpuos_host_alloc(g, n, (void **)&h), "host alloc %d", i);
        memset(h, 1 + i % 251, n);
        CHECK(!gpuos_memcpy_htod(g, d, h, n), "htod %d", i);
        memset(h, 0, n);
        CHECK(!gpuos_memcpy_dtoh(g, h, d, n), "dtoh %d", i);
        for (size_t k = 0; k < n; k++)
            CHECK(h[k] == 1 + i % 251, "round %d: byte %zu is %u", i, k, h[k]);
        CHECK(!gpuos_host_free(g, h), "host free %d", i);
        CHECK(gpuos_host_device_pointer(g, h, &dd) == GPUOS_EINVAL, "round %d: a freed buffer must be refused", i);
    }
    void *small[4], *big[62];
    for (int i = 0; i < 4; i++)
        CHECK(!gpuos_host_alloc(g, 16384, &small[i]), "small host alloc %d", i);
    for (int i = 0; i < 4; i++)
        CHECK(!gpuos_host_free(g, small[i]), "small host free %d", i);
    for (int i = 0; i < 62; i++)
        CHECK(!gpuos_host_alloc(g, 65536, &big[i]), "host alloc %d of 62 live ones", i);
    for (int i = 0; i < 62; i++)
        CHECK(!gpuos_host_free(g, big[i]), "host free %d", i);
    gpuos_close(g);
    printf("hostcache ok\n");
    return 0;
}

static int cmd_copyload(const char *name, size_t n, double secs)
{
    gpuos_vgpu *g = open_or_die(name);
    void *h;
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, n, &d), "alloc");
    CHECK(!gpuos_host_alloc(g, n, &h), "host alloc");
    double end = now_s() + secs;
    long k = 0;
    while (now_s() < end) {
        CHECK(!gpuos_memcpy_htod(g, d, h, n), "htod");
        k++;
    }
    printf("copies %ld\n", k);
    gpuos_close(g);
    return 0;
}

static int die_ms;
static void *killer(void *arg)
{
    usleep((useconds_t)die_ms * 1000);
    _exit(3);
    return NULL;
}

static int cmd_die(const char *name, size_t n, int ms)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, n, &d), "alloc");
    unsigned char *a = malloc(n);
    CHECK(a, "malloc");
    memset(a, 7, n);
    CHECK(!gpuos_set_copy_params(g, 256 << 10, 4), "params");
    gpuos_function f = sleep_fn(g);
    for (int i = 0; i < 50; i++)
        launch_sleep(g, f, 2000000); /* queued work that must be dropped */
    die_ms = ms;
    pthread_t t;
    pthread_create(&t, NULL, killer, NULL);
    for (;;)
        gpuos_memcpy_htod(g, d, a, n);
}

static int cmd_hold(const char *name, size_t n, double secs)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, n, &d), "alloc");
    unsigned char buf[4096], back[4096];
    fill_pattern(buf, sizeof buf, (unsigned)getpid());
    CHECK(!gpuos_memcpy_htod(g, d, buf, sizeof buf), "htod");
    usleep((useconds_t)(secs * 1e6));
    CHECK(!gpuos_memcpy_dtoh(g, back, d, sizeof back), "dtoh");
    CHECK(!memcmp(buf, back, sizeof buf), "data of client %d changed while others ran", (int)getpid());
    gpuos_close(g);
    printf("hold ok\n");
    return 0;
}

static int raw_connect(void)
{
    const char *path = getenv("GPUOS_SOCKET");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path ? path : GOS_DEFAULT_SOCKET);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof a), "connect: %s", strerror(errno));
    return fd;
}

/* Sends raw bytes; returns 1 if the daemon answered with an error REPLY or
 * closed the connection within 5 s. */
static int expect_rejected(const void *bytes, size_t n, int close_write, const char *what)
{
    int fd = raw_connect();
    ssize_t w = send(fd, bytes, n, MSG_NOSIGNAL);
    (void)w;
    if (close_write)
        shutdown(fd, SHUT_WR);
    struct gos_msg_hdr h;
    static unsigned char p[GOS_PROTO_MAX_PAYLOAD];
    int rc = gos_wire_recv(fd, &h, p, NULL, 5000);
    int ok;
    if (rc == GPUOS_OK) {
        struct gos_rep_hdr r;
        memcpy(&r, p, sizeof r);
        ok = h.type == GOS_MSG_REPLY && r.status != 0;
        if (ok)
            printf("%-28s rejected: %s\n", what, (const char *)p + sizeof r);
        /* and then the connection must be closed (unless it was a mere error reply) */
    } else {
        ok = rc == GPUOS_EIO; /* closed */
        if (ok)
            printf("%-28s closed\n", what);
    }
    if (!ok)
        fprintf(stderr, "%s: neither rejected nor closed (rc %d: %s)\n", what, rc, gpuos_error());
    close(fd);
    return ok;
}

static int cmd_hostile(void)
{
    int ok = 1;
    unsigned char buf[256];
    struct gos_msg_hdr h;
    /* garbage */
    memset(buf, 0xAB, sizeof buf);
    ok &= expect_rejected(buf, sizeof buf, 0, "garbage");
    /* truncated header then EOF */
    gos_proto_hdr(&h, GOS_MSG_HELLO, 1, sizeof(struct gos_msg_hello));
    ok &= expect_rejected(&h, 7, 1, "truncated header");
    /* header promising a payload that never comes */
    ok &= expect_rejected(&h, sizeof h, 1, "truncated payload");
    /* oversized length */
    gos_proto_hdr(&h, GOS_MSG_COPY, 1, 0x7fffffff);
    ok &= expect_rejected(&h, sizeof h, 0, "huge length");
    /* wrong length for the type */
    gos_proto_hdr(&h, GOS_MSG_MEM_ALLOC, 1, 4);
    memcpy(buf, &h, sizeof h);
    memset(buf + sizeof h, 1, 4);
    ok &= expect_rejected(buf, sizeof h + 4, 0, "wrong length");
    /* unknown type */
    gos_proto_hdr(&h, 4242, 1, 0);
    ok &= expect_rejected(&h, sizeof h, 0, "unknown type");
    /* request before HELLO */
    gos_proto_hdr(&h, GOS_MSG_SYNC, 1, 0);
    ok &= expect_rejected(&h, sizeof h, 0, "before hello");
    /* unterminated vGPU name */
    struct gos_msg_hello he;
    memset(&he, 'x', sizeof he);
    he.version = GOS_PROTOCOL_VERSION;
    gos_proto_hdr(&h, GOS_MSG_HELLO, 1, sizeof he);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, &he, sizeof he);
    ok &= expect_rejected(buf, sizeof h + sizeof he, 0, "unterminated name");
    /* a reply sent to the daemon */
    struct gos_rep_hdr rh = {0, GOS_MSG_SYNC, 0};
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof rh);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, &rh, sizeof rh);
    ok &= expect_rejected(buf, sizeof h + sizeof rh, 0, "reply as request");

    /* After HELLO: hostile pointers, regions and handles over a real session. */
    gpuos_vgpu *g = open_or_die(getenv("VGPU") ? getenv("VGPU") : "a");
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, 4096, &d), "alloc");
    unsigned char x[8192];
    memset(x, 0, sizeof x);
    int rc = gpuos_memcpy_htod(g, d + 4000, x, 200);
    CHECK(rc == GPUOS_EINVAL, "copy past an allocation: rc %d", rc);
    rc = gpuos_memcpy_htod(g, 0x1000, x, 16);
    CHECK(rc == GPUOS_EINVAL, "copy to a wild pointer: rc %d", rc);
    rc = gpuos_memcpy_dtod(g, d, d + (1ull << 40), 16);
    CHECK(rc == GPUOS_EINVAL, "dtod from a wild pointer: rc %d", rc);
    gpuos_launch_config c = {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, 0};
    CHECK(!gpuos_launch(g, 9999, &c, NULL, 0), "an async launch is queued");
    rc = gpuos_synchronize(g);
    CHECK(rc == GPUOS_EINVAL && strstr(gpuos_error(), "function handle"), "bad function handle: rc %d", rc);
    CHECK(!gpuos_synchronize(g), "the error is reported once");
    gpuos_module m;
    rc = gpuos_module_load(g, "not a module", 12, &m);
    CHECK(rc != GPUOS_OK, "garbage module image must fail");
    CHECK(!gpuos_memcpy_htod(g, d, x, 4096), "session still usable after errors");
    gpuos_close(g);
    printf("hostile %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}

static int cmd_version(void)
{
    int fd = raw_connect();
    struct {
        struct gos_msg_hdr h;
        struct gos_msg_hello m;
    } msg;
    memset(&msg, 0, sizeof msg);
    gos_proto_hdr(&msg.h, GOS_MSG_HELLO, 1, sizeof msg.m);
    msg.h.version = 99;
    msg.m.version = 99;
    strcpy(msg.m.vgpu, "a");
    CHECK(send(fd, &msg, sizeof msg, MSG_NOSIGNAL) == (ssize_t)sizeof msg, "send");
    struct gos_msg_hdr h;
    static unsigned char p[GOS_PROTO_MAX_PAYLOAD];
    int rc = gos_wire_recv(fd, &h, p, NULL, 5000);
    CHECK(rc == GPUOS_OK && h.type == GOS_MSG_REPLY, "no reply to a foreign version (rc %d)", rc);
    struct gos_rep_hdr r;
    memcpy(&r, p, sizeof r);
    const char *text = (const char *)p + sizeof r;
    char ours[32];
    snprintf(ours, sizeof ours, "version %d", GOS_PROTOCOL_VERSION);
    CHECK(r.status == GPUOS_EPROTO && strstr(text, "protocol version 99") && strstr(text, ours),
          "unclear version error: %s", text);
    printf("version: %s\n", text);
    close(fd);
    return 0;
}

static int cmd_info(const char *name)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_device_facts d;
    gpuos_vgpu_facts v;
    CHECK(!gpuos_device_info(g, &d), "device info");
    CHECK(!gpuos_vgpu_info(g, &v), "vgpu info");
    printf("device %s %s %s sm=%d mem=%llu\n", d.backend, d.name, d.uuid, d.sm_count,
           (unsigned long long)d.mem_bytes);
    printf("vgpu %s compute=%d copy=%d mem=%d%% quota=%llu clients=%d policy=%s queue=%s\n", v.name,
           v.compute_share, v.copy_share, v.mem_share, (unsigned long long)v.mem_quota, v.clients, v.policy,
           v.queue);
    gpuos_close(g);
    return 0;
}

/* A gate its client keeps closed for secs seconds, with a launch queued behind
 * it (a host function that takes long, or a hostile ring); opened, the launch
 * runs and the queue synchronises. */
static int cmd_gate(const char *name, double secs)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function f = sleep_fn(g);
    uint64_t *w = NULL;
    CHECK(!gpuos_host_alloc(g, 4096, (void **)&w), "host alloc");
    w[0] = 0;
    CHECK(gpuos_gate(g, w + 1, 0) == GPUOS_OK && gpuos_gate(g, (uint64_t *)((char *)w + 4), 1) == GPUOS_EINVAL &&
              gpuos_gate(g, (const uint64_t *)&secs, 1) == GPUOS_EINVAL,
          "gates on unaligned or unregistered words must be refused");
    CHECK(!gpuos_gate(g, w, 1), "gate: %s", gpuos_error());
    launch_sleep(g, f, 1000000);
    usleep((useconds_t)(secs * 1e6));
    __atomic_store_n(w, 1, __ATOMIC_RELEASE);
    CHECK(!gpuos_synchronize(g), "synchronise after the gate opened: %s", gpuos_error());
    printf("gate held %.1f s, then opened\n", secs);
    gpuos_close(g);
    return 0;
}

/* A connection that only asks questions, as the NVML shim's does beside a
 * framework's own: the vGPU's facts and memory every 5 ms for secs seconds. */
static int cmd_watch(const char *name, double secs)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_vgpu_facts v;
    uint64_t used, quota;
    long n = 0;
    for (double end = now_s() + secs; now_s() < end; n++) {
        CHECK(!gpuos_vgpu_info(g, &v) && !gpuos_mem_info(g, &used, &quota, NULL), "vgpu info");
        usleep(5000);
    }
    gpuos_close(g);
    printf("watched %ld\n", n);
    return 0;
}

static int cmd_modshare(const char *name, double secs, int leave)
{
    gpuos_vgpu *g = open_or_die(name);
    const char big[] = "SIMMOD\nk=fill\n@big=1073741824\n@big2=1073741824\n";
    const char img[] = "SIMMOD\nk=fill\n@a=16777216\n@b=8388608\n";
    const char more[] = "SIMMOD\n@c=50331648\n";
    const uint64_t charge = 16777216 + 8388608;
    uint64_t used0, used, quota;
    gpuos_module m, m2;
    CHECK(!gpuos_mem_info(g, &used0, &quota, NULL) && quota > charge, "mem info");
    int rc = gpuos_module_load(g, big, sizeof big - 1, &m);
    CHECK(rc == GPUOS_EBUSY && strstr(gpuos_error(), "memory share"), "2 GiB of globals on a share of %llu: rc %d",
          (unsigned long long)quota, rc);
    CHECK(!gpuos_mem_info(g, &used, NULL, NULL) && used == used0, "a refused module charged %llu",
          (unsigned long long)(used - used0));
    CHECK(!gpuos_module_load(g, img, sizeof img - 1, &m), "24 MiB of globals");
    CHECK(!gpuos_mem_info(g, &used, NULL, NULL) && used == used0 + charge, "charged %llu, want %llu",
          (unsigned long long)(used - used0), (unsigned long long)charge);
    gpuos_dptr d;
    CHECK(gpuos_mem_alloc(g, quota - used + 4096, &d) == GPUOS_EBUSY, "an allocation past the rest of the share");
    CHECK(!gpuos_mem_alloc(g, quota - used, &d) && !gpuos_mem_free(g, d), "the rest of the share");
    rc = gpuos_module_load(g, more, sizeof more - 1, &m2);
    CHECK(rc == GPUOS_EBUSY, "48 MiB more of globals past the share: rc %d", rc);
    printf("charged %llu\n", (unsigned long long)(used - used0));
    fflush(stdout);
    usleep((useconds_t)(secs * 1e6));
    if (leave)
        _exit(0); /* the daemon gives the charge back when the client is gone */
    CHECK(!gpuos_module_unload(g, m), "unload");
    CHECK(!gpuos_mem_info(g, &used, NULL, NULL) && used == used0, "%llu still charged after the unload",
          (unsigned long long)(used - used0));
    gpuos_close(g);
    printf("released\n");
    return 0;
}

struct modrace {
    gpuos_vgpu *g;
    pthread_barrier_t *go;
    gpuos_module m;
    int rc;
};
static void *modrace_one(void *arg)
{
    struct modrace *r = arg;
    const char img[] = "SIMMOD\nk=fill\n@a=41943040\n";
    pthread_barrier_wait(r->go);
    r->rc = gpuos_module_load(r->g, img, sizeof img - 1, &r->m);
    return NULL;
}

static int cmd_modrace(const char *name, int rounds)
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    struct modrace r[2] = {{open_or_die(name), &go, 0, 0}, {open_or_die(name), &go, 0, 0}};
    int one = 0;
    for (int i = 0; i < rounds; i++) {
        pthread_t t[2];
        for (int k = 0; k < 2; k++)
            pthread_create(&t[k], NULL, modrace_one, &r[k]);
        for (int k = 0; k < 2; k++)
            pthread_join(t[k], NULL);
        CHECK(r[0].rc || r[1].rc, "round %d: two modules of 40 MiB of globals on a share of 64 MiB", i);
        for (int k = 0; k < 2; k++) {
            CHECK(!r[k].rc || r[k].rc == GPUOS_EBUSY, "round %d: rc %d", i, r[k].rc);
            if (!r[k].rc) {
                one++;
                CHECK(!gpuos_module_unload(r[k].g, r[k].m), "unload");
            }
        }
    }
    printf("modrace %d of %d rounds loaded one\n", one, rounds);
    return 0;
}

static int cmd_module(const char *name)
{
    gpuos_vgpu *g = open_or_die(name);
    const char img[] = "SIMMOD\nmykernel=fill\n@table=8192\nwait=sleep_ns\n";
    const char bad[] = "SIMMOD\nmykernel=fill\n@table=0\n";
    gpuos_module m;
    gpuos_function f;
    CHECK(!gpuos_module_load(g, img, sizeof img - 1, &m), "module from bytes");
    CHECK(!gpuos_module_function(g, m, "mykernel", &f), "lookup");
    CHECK(gpuos_module_function(g, m, "nope", &f) == GPUOS_EINVAL, "missing kernel must fail");
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, 4096, &d), "alloc");
    gpuos_params p;
    gpuos_params_init(&p);
    uint64_t dp = d, count = 1024;
    uint32_t val = 0xC0FFEE;
    gpuos_params_add(&p, &dp, 8);
    gpuos_params_add(&p, &val, 4);
    uint32_t pad = 0;
    gpuos_params_add(&p, &pad, 4);
    gpuos_params_add(&p, &count, 8);
    gpuos_launch_config c = {{4, 1, 1}, {256, 1, 1}, {2, 1, 1}, 0, 3};
    CHECK(!gpuos_launch(g, f, &c, p.buf, p.len), "launch with cluster dims");
    CHECK(!gpuos_synchronize(g), "sync");
    uint32_t back[1024];
    CHECK(!gpuos_memcpy_dtoh(g, back, d, sizeof back), "dtoh");
    for (int i = 0; i < 1024; i++)
        CHECK(back[i] == val, "kernel result wrong at %d", i);
    /* the module's global: zeroed, reached by copies and kernels, nothing past it */
    uint64_t gd = 0;
    size_t gb = 0;
    CHECK(!gpuos_module_global(g, m, "table", &gd, &gb) && gd && gb == 8192, "global: %zu bytes", gb);
    CHECK(gpuos_module_global(g, m, "nope", &gd, &gb) == GPUOS_EINVAL && gd, "missing global must fail");
    uint32_t gw[2048];
    CHECK(!gpuos_memcpy_dtoh(g, gw, gd, sizeof gw), "global dtoh");
    for (int i = 0; i < 2048; i++)
        CHECK(gw[i] == 0, "a new global is not zero at %d", i);
    for (int i = 0; i < 2048; i++)
        gw[i] = 0x5EED0000u + (uint32_t)i * 2654435761u;
    CHECK(!gpuos_memcpy_htod(g, gd, gw, sizeof gw), "global htod");
    uint32_t gr[2048];
    CHECK(!gpuos_memcpy_dtoh(g, gr, gd, sizeof gr) && !memcmp(gr, gw, sizeof gw), "global round trip");
    CHECK(gpuos_memcpy_htod(g, gd + 8192 - 4, gw, 8) == GPUOS_EINVAL, "a copy past the global must be refused");
    CHECK(gpuos_memcpy_dtod(g, d, gd, 4096) == GPUOS_OK, "dtod from the global");
    CHECK(!gpuos_memcpy_dtoh(g, back, d, sizeof back) && !memcmp(back, gw, sizeof back), "dtod result");
    gpuos_params_init(&p);
    uint64_t gp = gd + 4096;
    uint32_t gv = 0xAB12CD34;
    gpuos_params_add(&p, &gp, 8);
    gpuos_params_add(&p, &gv, 4);
    gpuos_params_add(&p, &pad, 4);
    gpuos_params_add(&p, &count, 8);
    CHECK(!gpuos_launch(g, f, &c, p.buf, p.len) && !gpuos_synchronize(g), "kernel into the global");
    CHECK(!gpuos_memcpy_dtoh(g, gr, gd, sizeof gr), "global after kernel");
    for (int i = 0; i < 2048; i++)
        CHECK(gr[i] == (i < 1024 ? gw[i] : gv), "global word %d after the kernel", i);
    /* a second module's function outlives the first's unload; the first's does not */
    gpuos_module m2;
    gpuos_function f2;
    CHECK(!gpuos_module_load(g, img, sizeof img - 1, &m2) && !gpuos_module_function(g, m2, "mykernel", &f2),
          "a second module");
    CHECK(!gpuos_module_unload(g, m), "unload");
    CHECK(gpuos_memcpy_dtoh(g, gr, gd, 64) == GPUOS_EINVAL, "the global must be gone with its module");
    gpuos_params_init(&p);
    val = 0x2B0B;
    gpuos_params_add(&p, &dp, 8);
    gpuos_params_add(&p, &val, 4);
    gpuos_params_add(&p, &pad, 4);
    gpuos_params_add(&p, &count, 8);
    CHECK(!gpuos_launch(g, f2, &c, p.buf, p.len) && !gpuos_synchronize(g),
          "another module's function after an unload: %s", gpuos_error());
    CHECK(!gpuos_memcpy_dtoh(g, back, d, sizeof back) && back[0] == val && back[1023] == val,
          "another module's kernel after an unload");
    int rc = gpuos_launch(g, f, &c, p.buf, p.len);
    if (!rc)
        rc = gpuos_synchronize(g);
    CHECK(rc == GPUOS_EINVAL, "a function of the unloaded module must be refused (rc %d)", rc);
    CHECK(!gpuos_module_unload(g, m2), "unload of the second");
    CHECK(gpuos_module_load(g, bad, sizeof bad - 1, &m) == GPUOS_EINVAL, "a global of 0 bytes must be refused");
    gpuos_close(g);
    printf("module ok\n");
    return 0;
}

/* COUNT kernels of NS at priority PRIO, then synchronise: prints the elapsed ms. */
static int cmd_prio(const char *name, int prio, uint64_t ns, int count)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function f = sleep_fn(g);
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, prio};
    double t0 = now_s();
    for (int i = 0; i < count; i++)
        CHECK(!gpuos_launch(g, f, &c, &ns, sizeof ns), "launch");
    CHECK(!gpuos_synchronize(g), "sync");
    printf("elapsed_ms %.1f\n", (now_s() - t0) * 1e3);
    gpuos_close(g);
    return 0;
}

/* A module from PTX text (real GPU only): setval(p, v) writes v + i at p[i]. */
static const char setval_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry setval(.param .u64 setval_param_0, .param .u32 setval_param_1)\n{\n"
    ".reg .b32 %r<7>;\n.reg .b64 %rd<5>;\n"
    "ld.param.u64 %rd1, [setval_param_0];\nld.param.u32 %r1, [setval_param_1];\n"
    "mov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmov.u32 %r4, %tid.x;\n"
    "mad.lo.s32 %r5, %r2, %r3, %r4;\nadd.s32 %r6, %r5, %r1;\ncvta.to.global.u64 %rd2, %rd1;\n"
    "mul.wide.u32 %rd3, %r5, 4;\nadd.s64 %rd4, %rd2, %rd3;\nst.global.u32 [%rd4], %r6;\nret;\n}\n";

static int cmd_ptx(const char *name)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_module m;
    gpuos_function f;
    CHECK(!gpuos_module_load(g, setval_ptx, sizeof setval_ptx - 1, &m), "PTX module");
    CHECK(!gpuos_module_function(g, m, "setval", &f), "setval");
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, 1024 * 4, &d), "alloc");
    gpuos_params p;
    gpuos_params_init(&p);
    uint64_t dp = d;
    uint32_t v = 1000;
    gpuos_params_add(&p, &dp, 8);
    gpuos_params_add(&p, &v, 4);
    gpuos_launch_config c = {{4, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0};
    CHECK(!gpuos_launch(g, f, &c, p.buf, p.len), "launch");
    CHECK(!gpuos_synchronize(g), "sync");
    uint32_t back[1024];
    CHECK(!gpuos_memcpy_dtoh(g, back, d, sizeof back), "dtoh");
    for (uint32_t i = 0; i < 1024; i++)
        CHECK(back[i] == 1000 + i, "word %u is %u", i, back[i]);
    CHECK(!gpuos_module_unload(g, m), "unload");
    gpuos_close(g);
    printf("ptx ok\n");
    return 0;
}

/* The built-in fill kernel with cluster dimensions. */
static int cmd_fill(const char *name, const char *mod)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_module m;
    gpuos_function f;
    CHECK(!gpuos_module_load_builtin(g, mod, &m), "module %s", mod);
    CHECK(!gpuos_module_function(g, m, "fill", &f), "fill");
    size_t count = 1 << 20;
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, count * 4, &d), "alloc");
    struct {
        uint64_t p;
        uint32_t v, pad;
        uint64_t count;
    } prm = {d, 0xABCD1234u, 0, count};
    gpuos_launch_config c = {{8, 1, 1}, {256, 1, 1}, {2, 1, 1}, 0, 0};
    CHECK(!gpuos_launch(g, f, &c, &prm, sizeof prm), "launch");
    CHECK(!gpuos_synchronize(g), "sync");
    uint32_t *back = malloc(count * 4);
    CHECK(!gpuos_memcpy_dtoh(g, back, d, count * 4), "dtoh");
    for (size_t i = 0; i < count; i++)
        CHECK(back[i] == 0xABCD1234u, "word %zu is 0x%x", i, back[i]);
    free(back);
    gpuos_close(g);
    printf("fill ok\n");
    return 0;
}

#define OWNER_WORD(i) (0x5A000000u ^ (uint32_t)(i) * 2654435761u)

static gpuos_function builtin_fn(gpuos_vgpu *g, const char *name)
{
    gpuos_module m;
    gpuos_function f;
    CHECK(!gpuos_module_load_builtin(g, "builtin", &m), "builtin module");
    CHECK(!gpuos_module_function(g, m, name, &f), "kernel %s", name);
    return f;
}

static int cmd_owner(const char *name, size_t words, double secs, const char *file)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function fill = builtin_fn(g, "fill");
    uint32_t *pat = malloc(words * 4), *back = malloc(words * 4);
    CHECK(pat && back, "host memory");
    for (size_t i = 0; i < words; i++)
        pat[i] = OWNER_WORD(i);
    gpuos_dptr d, d2, d3;
    CHECK(!gpuos_mem_alloc(g, words * 4, &d) && !gpuos_mem_alloc(g, words * 4, &d2) &&
              !gpuos_mem_alloc(g, words * 4, &d3), "alloc");
    CHECK(!gpuos_memcpy_htod(g, d, pat, words * 4), "htod");
    FILE *f = fopen(file, "w");
    CHECK(f, "open %s", file);
    fprintf(f, "0x%llx\n", (unsigned long long)d);
    fclose(f);
    double end = now_s() + secs;
    long rounds = 0;
    while (now_s() < end) {
        /* copies (async, then sync) and a launch in flight, each verified */
        for (size_t i = 0; i < words; i++)
            back[i] = (uint32_t)(i * 7 + (size_t)rounds);
        CHECK(!gpuos_memcpy_htod_async(g, d2, back, words * 4), "htod async");
        struct {
            uint64_t p;
            uint32_t v, pad;
            uint64_t count;
        } prm = {d3, 0x600D0000u + (uint32_t)rounds, 0, words};
        gpuos_launch_config c = {{8, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0};
        CHECK(!gpuos_launch(g, fill, &c, &prm, sizeof prm), "launch");
        CHECK(!gpuos_synchronize(g), "sync (round %ld)", rounds);
        memset(back, 0, words * 4);
        CHECK(!gpuos_memcpy_dtoh(g, back, d2, words * 4), "dtoh");
        for (size_t i = 0; i < words; i++)
            CHECK(back[i] == (uint32_t)(i * 7 + (size_t)rounds), "copy round %ld word %zu wrong", rounds, i);
        CHECK(!gpuos_memcpy_dtoh(g, back, d3, words * 4), "dtoh");
        for (size_t i = 0; i < words; i++)
            CHECK(back[i] == 0x600D0000u + (uint32_t)rounds, "launch round %ld word %zu wrong", rounds, i);
        rounds++;
    }
    CHECK(!gpuos_memcpy_dtoh(g, back, d, words * 4), "dtoh");
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += back[i] != pat[i];
    printf("owner rounds=%ld corrupted=%zu\n", rounds, bad);
    gpuos_close(g);
    return bad ? 1 : 0;
}

static int cmd_xcopy(const char *name, uint64_t addr, size_t words, int write)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function xc = builtin_fn(g, "xcopy");
    gpuos_dptr own;
    CHECK(!gpuos_mem_alloc(g, words * 4, &own), "alloc");
    uint32_t *buf = malloc(words * 4);
    CHECK(buf, "host memory");
    for (size_t i = 0; i < words; i++)
        buf[i] = write ? 0xBAD0BAD0u : 0;
    CHECK(!gpuos_memcpy_htod(g, own, buf, words * 4), "htod");
    uint64_t prm[3] = {write ? addr : own, write ? own : addr, words};
    gpuos_launch_config c = {{8, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 0};
    int rc = gpuos_launch(g, xc, &c, prm, sizeof prm);
    if (!rc)
        rc = gpuos_synchronize(g);
    char err[256];
    snprintf(err, sizeof err, "%s", rc ? gpuos_error() : "");
    size_t match = 0;
    if (!rc && !write) {
        CHECK(!gpuos_memcpy_dtoh(g, buf, own, words * 4), "dtoh");
        for (size_t i = 0; i < words; i++)
            match += buf[i] == OWNER_WORD(i);
    }
    printf("%s rc=%d match=%zu own=0x%llx error=%s\n", write ? "xwrite" : "xread", rc, match,
           (unsigned long long)own, err);
    gpuos_close(g);
    return 0;
}

static int cmd_fault(const char *name)
{
    gpuos_vgpu *g = open_or_die(name);
    gpuos_function f = builtin_fn(g, "fault");
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    int rc = gpuos_launch(g, f, &c, NULL, 0);
    if (!rc)
        rc = gpuos_synchronize(g);
    printf("fault rc=%d error=%s\n", rc, rc ? gpuos_error() : "");
    gpuos_dptr d;
    int rc2 = gpuos_mem_alloc(g, 4096, &d);
    printf("after rc=%d error=%s\n", rc2, rc2 ? gpuos_error() : "");
    gpuos_close(g);
    /* reconnect: a new session, a new executor */
    g = open_or_die(name);
    uint32_t in[1024], out[1024];
    for (int i = 0; i < 1024; i++)
        in[i] = (uint32_t)i * 3u + 1u;
    CHECK(!gpuos_mem_alloc(g, sizeof in, &d), "alloc after reconnect");
    CHECK(!gpuos_memcpy_htod(g, d, in, sizeof in) && !gpuos_memcpy_dtoh(g, out, d, sizeof out), "copies");
    CHECK(!memcmp(in, out, sizeof in), "round trip after reconnect");
    printf("reconnected ok\n");
    gpuos_close(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: serve_client CMD ARGS (see the source)\n");
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "hostmap") && argc == 4)
        return cmd_hostmap(argv[2], argv[3]);
    if (!strcmp(c, "hostcache") && argc == 3)
        return cmd_hostcache(argv[2]);
    if (!strcmp(c, "copy") && argc == 4)
        return cmd_copy(argv[2], strtoull(argv[3], NULL, 0));
    if (!strcmp(c, "quota") && argc == 4)
        return cmd_quota(argv[2], strtoull(argv[3], NULL, 0));
    if (!strcmp(c, "stream") && (argc == 7 || argc == 8))
        return cmd_stream(argv[2], strtoull(argv[3], NULL, 0), atof(argv[4]), (unsigned)atoi(argv[5]), atoi(argv[6]),
                          argc == 8 ? atoi(argv[7]) : 0);
    if (!strcmp(c, "burst") && argc >= 5)
        return cmd_burst(argv[2], strtoull(argv[3], NULL, 0), atof(argv[4]), argc > 5 ? atoi(argv[5]) : 1);
    if (!strcmp(c, "copyload") && argc == 5)
        return cmd_copyload(argv[2], strtoull(argv[3], NULL, 0), atof(argv[4]));
    if (!strcmp(c, "die") && argc == 5)
        return cmd_die(argv[2], strtoull(argv[3], NULL, 0), atoi(argv[4]));
    if (!strcmp(c, "hold") && argc == 5)
        return cmd_hold(argv[2], strtoull(argv[3], NULL, 0), atof(argv[4]));
    if (!strcmp(c, "hostile"))
        return cmd_hostile();
    if (!strcmp(c, "version"))
        return cmd_version();
    if (!strcmp(c, "owner") && argc == 6)
        return cmd_owner(argv[2], strtoull(argv[3], NULL, 0), atof(argv[4]), argv[5]);
    if ((!strcmp(c, "xread") || !strcmp(c, "xwrite")) && argc == 5)
        return cmd_xcopy(argv[2], strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0), c[1] == 'w');
    if (!strcmp(c, "fault") && argc == 3)
        return cmd_fault(argv[2]);
    if (!strcmp(c, "info") && argc == 3)
        return cmd_info(argv[2]);
    if (!strcmp(c, "ptx") && argc == 3)
        return cmd_ptx(argv[2]);
    if (!strcmp(c, "prio") && argc == 6)
        return cmd_prio(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0), atoi(argv[5]));
    if (!strcmp(c, "fill") && argc == 4)
        return cmd_fill(argv[2], argv[3]);
    if (!strcmp(c, "gate") && argc == 4)
        return cmd_gate(argv[2], atof(argv[3]));
    if (!strcmp(c, "watch") && argc == 4)
        return cmd_watch(argv[2], atof(argv[3]));
    if (!strcmp(c, "module") && argc == 3)
        return cmd_module(argv[2]);
    if (!strcmp(c, "modrace") && argc == 4)
        return cmd_modrace(argv[2], atoi(argv[3]));
    if (!strcmp(c, "modshare") && (argc == 4 || (argc == 5 && !strcmp(argv[4], "leave"))))
        return cmd_modshare(argv[2], atof(argv[3]), argc == 5);
    fprintf(stderr, "serve_client: bad command\n");
    return 2;
}
