/* SPDX-License-Identifier: Apache-2.0 */
/* hostile_client.c: a hostile tenant of `gpuos serve` for tests/t_hostile.sh
 * (issue 15). Each subcommand attacks one hole through the public library (as a
 * tenant would) and exits 0 only when the daemon held: the attack is refused with
 * the right error and everything else still works, byte-exact.
 *
 *   fill A B              built-in fill aimed past A's block, at B's buffer, with a
 *                         word count whose size wraps: each refused (EINVAL), B's
 *                         bytes intact, A's session usable
 *   overquota A           (quota already shrunk below usage by the script) any
 *                         allocation is refused with EBUSY naming the share
 *   alloc A BYTES         allocates BYTES and holds them until stdin closes
 *   args A                allocation over 2^50, copy over 2^40, block over 1024
 *                         threads, grid not a multiple of the cluster: errors of
 *                         those calls (returned, or by gpuos_synchronize), the
 *                         session and its data survive
 *   open A N SECONDS      opens N handles of A, prints "opened K" and the first
 *                         refusal's code and message, holds the opened ones
 *   queue A               queues 200 asynchronous launches with a small
 *                         max_queued_requests: synchronize reports ELIMIT, the
 *                         session continues
 *   flood N SECONDS       N raw connections that never say HELLO, held
 *   connect-timeout PATH  fills the backlog of a listener that never accepts, then
 *                         gpuos_open must fail with ETIMEDOUT within the timeout
 *   sleep A NS            one launch of sleep_ns(NS), synchronised
 *   list-null             gpuos_admin_list(NULL output) must be EINVAL, no crash
 *   oversize A            copies larger than the caller's buffers and sizes that
 *                         wrap (issue 23.5): 2^40 and SIZE_MAX bytes from a 4 KB
 *                         buffer followed by an unmapped page, 1 MB into a 4 KB
 *                         allocation, each direction, synchronous and
 *                         asynchronous: GPUOS_EINVAL (at the call or at
 *                         gpuos_synchronize), never a crash or a success; the
 *                         buffer's bytes intact, the session usable
 *   create NAME KEYS      gpuos_admin_create with KEYS as given (lines and all:
 *                         what a client that bypasses the CLI sends, issue 44.7)
 *   set NAME KEY VALUE    gpuos_admin_set as given; both print rc= and error=
 * The socket comes from $GPUOS_SOCKET. */
#include "gpuos/gpuos.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ELIMIT_CODE (-12) /* GPUOS_ELIMIT, spelled out so this file builds against older headers */

#define CLIENT_NAME "hostile_client"
#include "client_util.h"

struct fill_prm {
    uint64_t p;
    uint32_t v, pad;
    uint64_t count;
};

static int launch_fill(gpuos_vgpu *g, gpuos_function f, uint64_t p, uint64_t count)
{
    struct fill_prm prm = {p, 0xDEADBEEFu, 0, count};
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    int rc = gpuos_launch(g, f, &c, &prm, sizeof prm);
    int rs = gpuos_synchronize(g);
    return rc ? rc : rs;
}

/* A's session still works: a verified round trip. */
static void roundtrip(gpuos_vgpu *g, size_t n)
{
    unsigned char *a = malloc(n), *b = malloc(n);
    gpuos_dptr d;
    CHECK(a && b, "malloc");
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 131 + 7);
    CHECK(!gpuos_mem_alloc(g, n, &d), "alloc after the attack");
    CHECK(!gpuos_memcpy_htod(g, d, a, n), "htod after the attack");
    CHECK(!gpuos_memcpy_dtoh(g, b, d, n), "dtoh after the attack");
    CHECK(!memcmp(a, b, n), "round trip corrupted");
    CHECK(!gpuos_mem_free(g, d), "free");
    free(a);
    free(b);
}

static int cmd_fill(const char *va, const char *vb)
{
    gpuos_vgpu *a = open_or_die(va), *b = open_or_die(vb);
    gpuos_module m;
    gpuos_function f;
    /* "sim:builtin": the simulated module's name before and after it became "builtin" */
    CHECK(!gpuos_module_load_builtin(a, "sim:builtin", &m), "module");
    CHECK(!gpuos_module_function(a, m, "fill", &f), "fill");
    enum { NB = 1 << 20 };
    gpuos_dptr da, db;
    CHECK(!gpuos_mem_alloc(a, 4096, &da), "alloc a");
    CHECK(!gpuos_mem_alloc(b, NB, &db), "alloc b");
    unsigned char *pat = malloc(NB), *back = malloc(NB);
    for (size_t i = 0; i < NB; i++)
        pat[i] = (unsigned char)(i * 7 + 3);
    CHECK(!gpuos_memcpy_htod(b, db, pat, NB), "b htod");
    /* own block, in range: works */
    CHECK(!launch_fill(a, f, da, 1024), "fill of A's own block");
    uint32_t w[1024];
    CHECK(!gpuos_memcpy_dtoh(a, w, da, sizeof w), "dtoh a");
    for (int i = 0; i < 1024; i++)
        CHECK(w[i] == 0xDEADBEEFu, "fill wrote 0x%x at word %d", w[i], i);
    /* one word past the block */
    int rc = launch_fill(a, f, da, 1025);
    CHECK(rc == GPUOS_EINVAL, "fill one word past the block: rc %d", rc);
    /* 1 GiB past the block (the daemon died of this) */
    rc = launch_fill(a, f, da + (1ull << 30), 1 << 20);
    CHECK(rc == GPUOS_EINVAL, "fill 1 GiB past the block: rc %d", rc);
    /* another tenant's buffer */
    rc = launch_fill(a, f, db + 4096, 1024);
    CHECK(rc == GPUOS_EINVAL, "fill of vGPU %s's buffer: rc %d", vb, rc);
    CHECK(strstr(gpuos_error(), "not inside an allocation of this client") || strstr(gpuos_error(), "illegal"),
          "message does not say why");
    /* a count whose size in bytes wraps 2^64 */
    rc = launch_fill(a, f, da + 8, (1ull << 62) + 1);
    CHECK(rc == GPUOS_EINVAL, "fill with a wrapping count: rc %d", rc);
    /* a misaligned word pointer (UB on the host, a fault on a GPU) */
    rc = launch_fill(a, f, da + 2, 4);
    CHECK(rc == GPUOS_EINVAL, "fill at a misaligned address: rc %d", rc);
    /* B's bytes intact, A usable */
    CHECK(!gpuos_memcpy_dtoh(b, back, db, NB), "b dtoh");
    CHECK(!memcmp(pat, back, NB), "vGPU %s's buffer was overwritten", vb);
    roundtrip(a, 1 << 16);
    gpuos_close(a);
    gpuos_close(b);
    printf("fill refused\n");
    return 0;
}

static int cmd_alloc(const char *va, uint64_t bytes)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, bytes, &d), "alloc %llu", (unsigned long long)bytes);
    printf("allocated\n");
    fflush(stdout);
    char buf[16];
    while (read(0, buf, sizeof buf) > 0)
        ;
    gpuos_close(g);
    return 0;
}

static int cmd_overquota(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    uint64_t sizes[] = {4096, 1ull << 20, 1ull << 30, 137ull << 30};
    for (int i = 0; i < 4; i++) {
        gpuos_dptr d;
        int rc = gpuos_mem_alloc(g, sizes[i], &d);
        CHECK(rc == GPUOS_EBUSY, "allocation of %llu bytes over a shrunk quota: rc %d", (unsigned long long)sizes[i],
              rc);
        CHECK(strstr(gpuos_error(), "memory share"), "message does not name the share");
    }
    gpuos_close(g);
    printf("over quota refused\n");
    return 0;
}

static gpuos_function builtin(gpuos_vgpu *g, const char *name)
{
    gpuos_module m;
    gpuos_function f;
    CHECK(!gpuos_module_load_builtin(g, "sim:builtin", &m), "module");
    CHECK(!gpuos_module_function(g, m, name, &f), "%s", name);
    return f;
}

/* A launch with a bad geometry: its error comes back from the launch or from the
 * next synchronize, and the session goes on. */
static void bad_launch(gpuos_vgpu *g, gpuos_function f, gpuos_launch_config c, const char *needle)
{
    uint64_t ns = 1000;
    int rc = gpuos_launch(g, f, &c, &ns, sizeof ns);
    if (rc == 0)
        rc = gpuos_synchronize(g);
    CHECK(rc == GPUOS_EINVAL, "launch (%s): rc %d, expected GPUOS_EINVAL", needle, rc);
    CHECK(strstr(gpuos_error(), needle), "message does not say \"%s\"", needle);
    CHECK(!gpuos_synchronize(g), "synchronize after the error must succeed");
}

static int cmd_args(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    enum { N = 1 << 16 };
    unsigned char *a = malloc(N), *b = malloc(N);
    for (size_t i = 0; i < N; i++)
        a[i] = (unsigned char)(i * 13 + 1);
    gpuos_dptr d;
    CHECK(!gpuos_mem_alloc(g, N, &d), "alloc");
    CHECK(!gpuos_memcpy_htod(g, d, a, N), "htod");
    gpuos_dptr x;
    int rc = gpuos_mem_alloc(g, (1ull << 50) + 4096, &x);
    CHECK(rc == GPUOS_EINVAL, "allocation over 2^50: rc %d", rc);
    rc = gpuos_memcpy_dtod(g, d, d, (1ull << 40) + 1);
    CHECK(rc == GPUOS_EINVAL, "copy over 2^40: rc %d", rc);
    gpuos_function f = builtin(g, "sleep_ns");
    bad_launch(g, f, (gpuos_launch_config){{1, 1, 1}, {2048, 1, 1}, {0, 0, 0}, 0, 0}, "1024");
    bad_launch(g, f, (gpuos_launch_config){{3, 1, 1}, {32, 1, 1}, {2, 1, 1}, 0, 0}, "multiple of the cluster");
    /* the session, its memory and its data are still there */
    CHECK(!gpuos_memcpy_dtoh(g, b, d, N), "dtoh after the errors");
    CHECK(!memcmp(a, b, N), "data lost after argument errors");
    roundtrip(g, 4096);
    gpuos_close(g);
    printf("argument errors contained\n");
    return 0;
}

/* rc of an asynchronous call, or of the synchronise after it when the call
 * itself was accepted. */
static int async_rc(gpuos_vgpu *g, int rc) { return rc ? rc : gpuos_synchronize(g); }

static int cmd_oversize(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    long pg = sysconf(_SC_PAGESIZE);
    /* a 4 KB host buffer with nothing mapped after it: a copy that reads or
     * writes past it crashes */
    unsigned char *h = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(h != MAP_FAILED && !mprotect(h + pg, (size_t)pg, PROT_NONE), "guard page");
    unsigned char *back = malloc(4096), *shared = NULL;
    for (int i = 0; i < 4096; i++)
        h[i] = (unsigned char)(i * 29 + 5);
    gpuos_dptr d, d2;
    CHECK(!gpuos_mem_alloc(g, 4096, &d) && !gpuos_mem_alloc(g, 4096, &d2), "alloc");
    CHECK(!gpuos_memcpy_htod(g, d, h, 4096), "htod");
    CHECK(!gpuos_host_alloc(g, 4096, (void **)&shared), "host_alloc");
    const size_t sizes[] = {(size_t)1 << 40, SIZE_MAX, SIZE_MAX - 4095, (size_t)1 << 20, 4097};
    int tried = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        int rc[10] = {
            gpuos_memcpy_htod(g, d, h, n),
            async_rc(g, gpuos_memcpy_htod_async(g, d, h, n)),
            gpuos_memcpy_dtoh(g, h, d, n),
            async_rc(g, gpuos_memcpy_dtoh_async(g, h, d, n)),
            gpuos_memcpy_dtod(g, d2, d, n),
            async_rc(g, gpuos_memcpy_dtod_async(g, d2, d, n)),
            gpuos_memcpy_htod(g, d, shared, n),
            gpuos_memcpy_dtoh(g, shared, d, n),
            gpuos_memcpy_htod(g, d + 4095, h + 4095, n), /* one byte in, the rest past the end */
            gpuos_memcpy_dtoh(g, h + 4095, d + 4095, n),
        };
        for (int i = 0; i < 10; i++, tried++)
            CHECK(rc[i] == GPUOS_EINVAL, "copy %d of %zu bytes: rc %d, want GPUOS_EINVAL", i, n, rc[i]);
    }
    /* a device address that wraps with a small size */
    int rc = gpuos_memcpy_htod(g, UINT64_MAX - 15, h, 64);
    CHECK(rc == GPUOS_EINVAL, "htod at a wrapping address: rc %d", rc);
    rc = gpuos_memcpy_dtod(g, d, UINT64_MAX - 15, 64);
    CHECK(rc == GPUOS_EINVAL, "dtod from a wrapping address: rc %d", rc);
    /* nothing was written: the host buffer and the device bytes are intact */
    for (int i = 0; i < 4096; i++)
        CHECK(h[i] == (unsigned char)(i * 29 + 5), "host byte %d changed", i);
    CHECK(!gpuos_memcpy_dtoh(g, back, d, 4096) && !memcmp(back, h, 4096), "device bytes changed");
    roundtrip(g, 1 << 20);
    gpuos_close(g);
    printf("oversize copies refused: %d\n", tried + 2);
    return 0;
}

static int cmd_open(const char *va, int n, double secs)
{
    gpuos_vgpu **h = calloc((size_t)n, sizeof *h);
    int k = 0, first_rc = 0;
    char first_msg[300] = "";
    for (int i = 0; i < n; i++) {
        int rc = gpuos_open(NULL, va, &h[k]);
        if (rc == 0)
            k++;
        else if (!first_rc) {
            first_rc = rc;
            snprintf(first_msg, sizeof first_msg, "%s", gpuos_error());
        }
    }
    printf("opened %d refused %d %s\n", k, first_rc, first_msg);
    fflush(stdout);
    double end = now_s() + secs;
    while (now_s() < end)
        usleep(20000);
    for (int i = 0; i < k; i++)
        roundtrip(h[i], 4096); /* every opened one still served */
    for (int i = 0; i < k; i++)
        gpuos_close(h[i]);
    return 0;
}

static int cmd_queue(const char *va)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = builtin(g, "sleep_ns");
    uint64_t ns = 2000000;
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    int refused = 0;
    for (int i = 0; i < 200; i++) {
        int rc = gpuos_launch(g, f, &c, &ns, sizeof ns);
        if (rc == ELIMIT_CODE)
            refused++;
        else
            CHECK(rc == 0, "launch %d: rc %d", i, rc);
    }
    int rc = gpuos_synchronize(g);
    CHECK(rc == ELIMIT_CODE || refused > 0, "200 queued launches over max_queued_requests: rc %d", rc);
    CHECK(strstr(gpuos_error(), "max_queued_requests"), "message does not name the limit");
    CHECK(!gpuos_synchronize(g), "synchronize after the limit");
    roundtrip(g, 4096);
    gpuos_close(g);
    printf("queue limited\n");
    return 0;
}

static int raw_connect(const char *path, int nonblock)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int cmd_flood(int n, double secs)
{
    const char *path = getenv("GPUOS_SOCKET");
    int *fds = malloc(sizeof(int) * (size_t)n), k = 0;
    for (int i = 0; i < n; i++) {
        int fd = raw_connect(path, 1);
        if (fd >= 0)
            fds[k++] = fd;
    }
    printf("flood %d connections\n", k);
    fflush(stdout);
    double end = now_s() + secs;
    while (now_s() < end)
        usleep(20000);
    for (int i = 0; i < k; i++)
        close(fds[i]);
    return 0;
}

static int cmd_connect_timeout(const char *path)
{
    /* fill the listener's backlog (it never accepts) */
    int n = 0;
    while (n < 10000 && raw_connect(path, 1) >= 0)
        n++;
    setenv("GPUOS_TIMEOUT_MS", "1000", 1);
    double t0 = now_s();
    gpuos_vgpu *g = NULL;
    int rc = gpuos_open(path, "a", &g);
    double dt = now_s() - t0;
    CHECK(rc == GPUOS_ETIMEDOUT, "gpuos_open to a daemon that does not accept: rc %d after %.1f s", rc, dt);
    CHECK(dt < 3.0, "gpuos_open took %.1f s with GPUOS_TIMEOUT_MS=1000", dt);
    printf("connect timed out after %.2f s (%d connections filled the backlog)\n", dt, n);
    return 0;
}

static int cmd_sleep(const char *va, uint64_t ns)
{
    gpuos_vgpu *g = open_or_die(va);
    gpuos_function f = builtin(g, "sleep_ns");
    gpuos_launch_config c = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, 0};
    printf("launching\n");
    fflush(stdout);
    int rc = gpuos_launch(g, f, &c, &ns, sizeof ns);
    if (!rc)
        rc = gpuos_synchronize(g);
    printf("sleep rc %d\n", rc);
    return rc ? 1 : 0;
}

static int cmd_list_null(void)
{
    int n = -1;
    int rc = gpuos_admin_list(NULL, NULL, 8, &n);
    CHECK(rc == GPUOS_EINVAL, "gpuos_admin_list(NULL output): rc %d", rc);
    rc = gpuos_admin_list(NULL, NULL, 0, NULL);
    CHECK(rc == GPUOS_EINVAL, "gpuos_admin_list(NULL count): rc %d", rc);
    printf("list-null refused\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: hostile_client CMD ARGS (see the source)\n");
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "fill") && argc == 4)
        return cmd_fill(argv[2], argv[3]);
    if (!strcmp(c, "alloc") && argc == 4)
        return cmd_alloc(argv[2], strtoull(argv[3], NULL, 0));
    if (!strcmp(c, "overquota") && argc == 3)
        return cmd_overquota(argv[2]);
    if (!strcmp(c, "args") && argc == 3)
        return cmd_args(argv[2]);
    if (!strcmp(c, "oversize") && argc == 3)
        return cmd_oversize(argv[2]);
    if (!strcmp(c, "open") && argc == 5)
        return cmd_open(argv[2], atoi(argv[3]), atof(argv[4]));
    if (!strcmp(c, "queue") && argc == 3)
        return cmd_queue(argv[2]);
    if (!strcmp(c, "flood") && argc == 4)
        return cmd_flood(atoi(argv[2]), atof(argv[3]));
    if (!strcmp(c, "connect-timeout") && argc == 3)
        return cmd_connect_timeout(argv[2]);
    if (!strcmp(c, "sleep") && argc == 4)
        return cmd_sleep(argv[2], strtoull(argv[3], NULL, 0));
    if (!strcmp(c, "list-null"))
        return cmd_list_null();
    if ((!strcmp(c, "create") && argc == 4) || (!strcmp(c, "set") && argc == 5)) {
        int rc = argc == 4 ? gpuos_admin_create(NULL, argv[2], argv[3])
                           : gpuos_admin_set(NULL, argv[2], argv[3], argv[4]);
        printf("%s rc=%d error=%s\n", c, rc, rc ? gpuos_error() : "");
        return 0;
    }
    fprintf(stderr, "hostile_client: bad command\n");
    return 2;
}
