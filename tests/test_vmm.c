/* SPDX-License-Identifier: Apache-2.0 */
/* test_vmm.c: device virtual memory (device/vmm_ops.h) on the simulated device,
 * with real processes:
 *   - allocation at 2 MB granularity, copies round-trip, physical memory counted
 *     against the device (GOS_ENOMEM past it) and given back exactly;
 *   - bad arguments and misuse (unaligned, unmapped, overlapping, outside a
 *     reservation, a descriptor that is not device memory) are refused;
 *   - one allocation exported as a descriptor, sent with SCM_RIGHTS to another
 *     process that opens its own simulated device and maps it: each sees the
 *     other's writes, byte-exact; a second process killed with SIGKILL while
 *     attached leaves the owner's data and accounting intact;
 *   - evict (copy out, unmap, release) gives the physical memory back and makes
 *     the range unreachable (VMM copies and the execution pillar's copies both
 *     refuse it); a restore without room fails and leaves the buffer evicted with
 *     the host copy intact; a restore with room maps new memory at the SAME
 *     address with the same bytes; the execution pillar's copies and built-in
 *     fill reach VMM memory;
 *   - no descriptor, mapping or byte leaks afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/rng.h"
#include "common/status.h"
#include "device/exec_ops.h"
#include "device/vmm_ops.h"
#include "proto/wire.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MB (1ull << 20)

static gos_device *open_sim(uint64_t mem)
{
    gos_device *d = NULL;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    if (gos_device_open(&spec, &d))
        fail_msg("open: %s", gos_last_error());
    d->info.mem_bytes = mem; /* before the first VMM call: the pool's size */
    return d;
}

static void fill_pattern(uint8_t *p, uint64_t n, uint64_t seed)
{
    gos_rng r;
    gos_rng_seed(&r, seed);
    for (uint64_t i = 0; i < n; i += 8) {
        uint64_t v = gos_rng_u64(&r);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

static int same_pattern(const uint8_t *p, uint64_t n, uint64_t seed)
{
    uint8_t *q = malloc(n);
    fill_pattern(q, n, seed);
    int ok = !memcmp(p, q, n);
    free(q);
    return ok;
}

static int memfds_open(void) /* descriptors of simulated device memory */
{
    DIR *dir = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    char path[300], link[256];
    while (dir && (e = readdir(dir))) {
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k > 0) {
            link[k] = 0;
            n += strstr(link, "gpuos-sim-vmm") != NULL;
        }
    }
    if (dir)
        closedir(dir);
    return n;
}

static void expect_usage(gos_device *d, uint64_t bytes, int handles, int maps)
{
    uint64_t b;
    int h, m;
    assert_int_equal(gos_vmm_usage(d, &b, &h, &m), GOS_OK);
    assert_int_equal(b, bytes);
    assert_int_equal(h, handles);
    assert_int_equal(m, maps);
}

static void test_alloc_and_limits(void **st)
{
    gos_device *d = open_sim(64 * MB);
    assert_true(gos_vmm_supported(d));
    assert_int_equal(gos_vmm_round(1), 2 * MB);
    assert_int_equal(gos_vmm_round(4 * MB), 4 * MB);
    assert_int_equal(gos_vmm_round(0), 0);
    assert_int_equal(gos_vmm_round(UINT64_MAX), 0);

    gos_vmm_buf a;
    assert_int_equal(gos_vmm_buf_alloc(d, 5 * MB, &a), GOS_OK);
    assert_int_equal(a.bytes, 6 * MB);
    assert_int_equal(a.va % (2 * MB), 0);
    expect_usage(d, 6 * MB, 1, 1);
    uint8_t *in = malloc(6 * MB), *out = malloc(6 * MB);
    fill_pattern(in, 6 * MB, 11);
    assert_int_equal(gos_vmm_copy_to_device(d, a.va, in, 6 * MB), GOS_OK);
    assert_int_equal(gos_vmm_copy_to_host(d, out, a.va, 6 * MB), GOS_OK);
    assert_memory_equal(in, out, 6 * MB);
    /* Past the end of the mapping. */
    assert_int_equal(gos_vmm_copy_to_host(d, out, a.va + 4 * MB, 4 * MB), GOS_EINVAL);

    /* Arguments. */
    uint64_t h, va;
    assert_int_equal(gos_vmm_create(d, MB, &h), GOS_EINVAL);
    assert_int_equal(gos_vmm_create(d, 0, &h), GOS_EINVAL);
    assert_int_equal(gos_vmm_reserve(d, 3 * MB, &va), GOS_EINVAL);
    assert_int_equal(gos_vmm_map(d, a.va + 4096, 2 * MB, a.h), GOS_EINVAL);
    assert_int_equal(gos_vmm_map(d, a.va, 2 * MB, 0), GOS_EINVAL);
    assert_int_equal(gos_vmm_unmap(d, a.va, 2 * MB), GOS_EINVAL); /* not the whole mapping */
    assert_int_equal(gos_vmm_release(d, 999999), GOS_EINVAL);
    assert_int_equal(gos_vmm_import_fd(d, -1, &h), GOS_EINVAL);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    assert_int_equal(gos_vmm_import_fd(d, pfd[0], &h), GOS_EINVAL);
    assert_non_null(strstr(gos_last_error(), "not exported simulated device memory"));
    close(pfd[0]);
    close(pfd[1]);

    /* The pool: 64 MB, 6 taken; 58 more fit, 2 more do not. */
    assert_int_equal(gos_vmm_create(d, 58 * MB, &h), GOS_OK);
    uint64_t h2;
    assert_int_equal(gos_vmm_create(d, 2 * MB, &h2), GOS_ENOMEM);
    assert_non_null(strstr(gos_last_error(), "out of memory"));
    /* Mapping: inside a reservation only, never over another mapping. */
    assert_int_equal(gos_vmm_reserve(d, 64 * MB, &va), GOS_OK);
    assert_int_equal(gos_vmm_map(d, va + 8 * MB, 58 * MB, h), GOS_EINVAL); /* runs past the reservation */
    assert_int_equal(gos_vmm_map(d, va + 4 * MB, 58 * MB, h), GOS_OK);
    assert_int_equal(gos_vmm_map(d, va, 6 * MB, a.h), GOS_EINVAL); /* overlaps */
    assert_int_equal(gos_vmm_unreserve(d, va, 64 * MB), GOS_EINVAL); /* still mapped */
    /* Released while mapped: the memory lives on until unmapped. */
    assert_int_equal(gos_vmm_release(d, h), GOS_OK);
    expect_usage(d, 64 * MB, 1, 2);
    assert_int_equal(gos_vmm_unmap(d, va + 4 * MB, 58 * MB), GOS_OK);
    expect_usage(d, 6 * MB, 1, 1);
    assert_int_equal(gos_vmm_unreserve(d, va, 64 * MB), GOS_OK);

    gos_vmm_buf_free(d, &a);
    expect_usage(d, 0, 0, 0);
    assert_int_equal(memfds_open(), 0);
    free(in);
    free(out);
    gos_device_close(d);
}

static void test_evict_restore(void **st)
{
    gos_device *d = open_sim(32 * MB);
    assert_int_equal(gos_exec_init(d), GOS_OK);
    gos_vmm_buf a;
    assert_int_equal(gos_vmm_buf_alloc(d, 16 * MB, &a), GOS_OK);
    uint8_t *pat = malloc(16 * MB), *swap = malloc(16 * MB), *back = malloc(16 * MB);
    fill_pattern(pat, 16 * MB, 7);
    /* The execution pillar reaches VMM memory: its copies, and the built-in fill. */
    assert_int_equal(gos_exec_copy_htod_sync(d, a.va, pat, 16 * MB), GOS_OK);
    void *mod, *fn;
    assert_int_equal(gos_exec_module_load(d, NULL, 0, GOS_EXEC_BUILTIN, &mod), GOS_OK);
    assert_int_equal(gos_exec_function(d, mod, "fill", &fn), GOS_OK);
    struct {
        uint64_t p;
        uint32_t v, pad;
        uint64_t n;
    } prm = {a.va + 15 * MB, 0xabcdef01u, 0, MB / 4};
    struct gos_launch_cfg cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .params = &prm, .param_bytes = sizeof prm};
    assert_int_equal(gos_exec_launch(d, fn, &cfg, NULL), GOS_OK);
    assert_int_equal(gos_exec_stream_sync(d, NULL), GOS_OK);
    for (uint64_t i = 15 * MB; i < 16 * MB; i += 4)
        memcpy(pat + i, &prm.v, 4);

    uint64_t va = a.va;
    assert_int_equal(gos_vmm_buf_evict(d, &a, swap), GOS_OK);
    assert_false(a.resident);
    assert_int_equal(a.va, va);
    assert_memory_equal(swap, pat, 16 * MB);
    expect_usage(d, 0, 0, 0);
    /* Unreachable while evicted, through either pillar. */
    assert_int_equal(gos_vmm_copy_to_host(d, back, va, 4096), GOS_EINVAL);
    assert_int_equal(gos_exec_copy_dtoh_sync(d, back, va, 4096), GOS_EINVAL);
    assert_int_equal(gos_vmm_buf_evict(d, &a, swap), GOS_EINVAL); /* twice */

    /* Another tenant takes the whole device: the restore fails, nothing lost. */
    gos_vmm_buf b;
    assert_int_equal(gos_vmm_buf_alloc(d, 32 * MB, &b), GOS_OK);
    assert_int_equal(gos_vmm_buf_restore(d, &a, swap), GOS_ENOMEM);
    assert_false(a.resident);
    assert_memory_equal(swap, pat, 16 * MB);
    expect_usage(d, 32 * MB, 1, 1);
    /* Its turn is over: it is evicted, and a comes back at the same address. */
    uint8_t *swap_b = malloc(32 * MB);
    fill_pattern(back, 16 * MB, 99);
    assert_int_equal(gos_vmm_copy_to_device(d, b.va, back, 16 * MB), GOS_OK);
    assert_int_equal(gos_vmm_buf_evict(d, &b, swap_b), GOS_OK);
    assert_int_equal(gos_vmm_buf_restore(d, &a, swap), GOS_OK);
    assert_int_equal(a.va, va);
    memset(back, 0, 16 * MB);
    assert_int_equal(gos_exec_copy_dtoh_sync(d, back, a.va, 16 * MB), GOS_OK);
    assert_memory_equal(back, pat, 16 * MB);
    assert_true(same_pattern(swap_b, 16 * MB, 99));

    assert_int_equal(gos_exec_module_unload(d, mod), GOS_OK);
    gos_vmm_buf_free(d, &a);
    gos_vmm_buf_free(d, &b); /* evicted: only its addresses */
    expect_usage(d, 0, 0, 0);
    assert_int_equal(memfds_open(), 0);
    free(pat);
    free(swap);
    free(back);
    free(swap_b);
    gos_device_close(d);
}


/* The consumer: its own simulated device; maps the producer's segment, checks
 * the producer's half, writes its own, says so. Exit 0 only when all held. */
static int consumer(int sock, uint64_t bytes, int hang)
{
    gos_device *d = NULL;
    gos_device_spec spec = {.sim = "default", .ordinal = -1};
    if (gos_device_open(&spec, &d))
        return 10;
    int fd = gos_wire_recv_fd(sock);
    gos_vmm_buf b;
    if (fd < 0 || gos_vmm_buf_attach(d, fd, bytes, &b))
        return 11;
    close(fd);
    uint8_t *h = malloc(bytes);
    if (gos_vmm_copy_to_host(d, h, b.va, bytes / 2) || !same_pattern(h, bytes / 2, 1))
        return 12;
    if (gos_vmm_buf_evict(d, &b, h) != GOS_EINVAL) /* someone else's memory */
        return 13;
    fill_pattern(h, bytes / 2, 2);
    if (gos_vmm_copy_to_device(d, b.va + bytes / 2, h, bytes / 2))
        return 14;
    char ok = 'w';
    if (write(sock, &ok, 1) != 1)
        return 15;
    if (hang)
        for (;;)
            pause();
    /* The producer's second write, seen here. */
    if (read(sock, &ok, 1) != 1 || gos_vmm_copy_to_host(d, h, b.va, 4096))
        return 16;
    uint32_t v;
    memcpy(&v, h, 4);
    if (v != 0x5eed5eedu)
        return 17;
    gos_vmm_buf_free(d, &b);
    gos_device_close(d);
    free(h);
    return 0;
}

static void test_two_processes(void **st)
{
    const uint64_t bytes = 8 * MB;
    gos_device *d = open_sim(64 * MB);
    gos_vmm_buf a;
    assert_int_equal(gos_vmm_buf_alloc(d, bytes, &a), GOS_OK);
    uint8_t *h = malloc(bytes);
    fill_pattern(h, bytes / 2, 1);
    memset(h + bytes / 2, 0, bytes / 2);
    assert_int_equal(gos_vmm_copy_to_device(d, a.va, h, bytes), GOS_OK);

    for (int round = 0; round < 2; round++) { /* 0: cooperating; 1: killed while attached */
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(sv[0]);
            _exit(consumer(sv[1], bytes, round == 1));
        }
        close(sv[1]);
        int fd;
        assert_int_equal(gos_vmm_buf_export(d, &a, &fd), GOS_OK);
        assert_int_equal(gos_wire_send_fd(sv[0], fd), 0);
        close(fd);
        char c = 0;
        assert_int_equal(read(sv[0], &c, 1), 1);
        assert_int_equal(c, 'w');
        /* The consumer's write, seen by the producer. */
        assert_int_equal(gos_vmm_copy_to_host(d, h, a.va, bytes), GOS_OK);
        assert_true(same_pattern(h, bytes / 2, 1));
        assert_true(same_pattern(h + bytes / 2, bytes / 2, 2));
        int status;
        if (round == 0) {
            uint32_t v = 0x5eed5eedu;
            assert_int_equal(gos_vmm_copy_to_device(d, a.va, &v, 4), GOS_OK);
            assert_int_equal(write(sv[0], &c, 1), 1);
            assert_int_equal(waitpid(pid, &status, 0), pid);
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), 0);
            fill_pattern(h, 4, 1);
            assert_int_equal(gos_vmm_copy_to_device(d, a.va, h, 4), GOS_OK); /* undo for round 1 */
        } else {
            kill(pid, SIGKILL);
            assert_int_equal(waitpid(pid, &status, 0), pid);
            assert_true(WIFSIGNALED(status));
        }
        close(sv[0]);
        /* Nothing of the owner changed; its accounting is its own. */
        assert_int_equal(gos_vmm_copy_to_host(d, h, a.va, bytes), GOS_OK);
        assert_true(same_pattern(h, bytes / 2, 1));
        expect_usage(d, bytes, 1, 1);
    }
    /* The owner can still evict and restore its segment after the others left. */
    uint8_t *sw = malloc(bytes);
    assert_int_equal(gos_vmm_buf_evict(d, &a, sw), GOS_OK);
    assert_int_equal(gos_vmm_buf_restore(d, &a, sw), GOS_OK);
    assert_int_equal(gos_vmm_copy_to_host(d, h, a.va, bytes), GOS_OK);
    assert_true(same_pattern(h + bytes / 2, bytes / 2, 2));
    gos_vmm_buf_free(d, &a);
    expect_usage(d, 0, 0, 0);
    assert_int_equal(memfds_open(), 0);
    free(h);
    free(sw);
    gos_device_close(d);
}

static void test_missing(void **st)
{
    gos_device *sim = open_sim(64 * MB);
    struct gos_device_ops bare = {.name = sim->ops->name};
    gos_device d = *sim;
    d.ops = &bare;
    uint64_t h;
    assert_false(gos_vmm_supported(&d));
    assert_int_equal(gos_vmm_create(&d, 2 * MB, &h), GOS_EUNSUPPORTED);
    assert_non_null(strstr(gos_last_error(), "the sim device does not support"));
    gos_vmm_buf b;
    assert_int_equal(gos_vmm_buf_alloc(&d, 2 * MB, &b), GOS_EUNSUPPORTED);
    gos_device_close(sim);
}

/* Read-only access (SHM_RDONLY attachments): reads and the pool copies out
 * work, copies in and the built-in fill are refused and change nothing, the
 * pieces-wise evict / restore keep the bytes; set_access takes only a whole
 * mapping; read-write again allows writes. */
static void test_read_only(void **st)
{
    gos_device *d = open_sim(64 * MB);
    gos_vmm_buf b;
    uint8_t *h = malloc(4 * MB), *back = malloc(4 * MB);
    assert_non_null(h);
    assert_non_null(back);
    fill_pattern(h, 4 * MB, 77);
    assert_int_equal(gos_vmm_buf_alloc(d, 4 * MB, &b), GOS_OK);
    assert_int_equal(gos_vmm_copy_to_device(d, b.va, h, 4 * MB), GOS_OK);
    assert_int_equal(gos_vmm_set_access(d, b.va, 2 * MB, 1), GOS_EINVAL); /* not the whole mapping */
    assert_int_equal(gos_vmm_set_access(d, b.va + 1, 4 * MB, 1), GOS_EINVAL);
    assert_int_equal(gos_vmm_set_access(d, b.va, 4 * MB, 1), GOS_OK);
    assert_int_equal(gos_vmm_copy_to_device(d, b.va + 8, h, 8), GOS_EPERM);
    assert_non_null(strstr(gos_last_error(), "read-only"));
    assert_int_equal(gos_exec_init(d), GOS_OK);
    assert_int_not_equal(gos_exec_copy_htod_sync(d, b.va, h, 64), GOS_OK);
    void *m = NULL, *f = NULL;
    assert_int_equal(gos_exec_module_load(d, NULL, 0, "builtin", &m), GOS_OK);
    assert_int_equal(gos_exec_function(d, m, "fill", &f), GOS_OK);
    struct {
        uint64_t p;
        uint32_t v, pad;
        uint64_t n;
    } prm = {b.va, 5, 0, 16};
    struct gos_launch_cfg c = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .params = &prm, .param_bytes = sizeof prm};
    assert_int_not_equal(gos_exec_launch(d, f, &c, NULL), GOS_OK);
    memset(back, 0, 4 * MB);
    assert_int_equal(gos_vmm_copy_to_host(d, back, b.va, 4 * MB), GOS_OK);
    assert_true(same_pattern(back, 4 * MB, 77)); /* nothing written */
    /* read-write again */
    assert_int_equal(gos_vmm_set_access(d, b.va, 4 * MB, 0), GOS_OK);
    assert_int_equal(gos_exec_launch(d, f, &c, NULL), GOS_OK);
    assert_int_equal(gos_exec_stream_sync(d, NULL), GOS_OK);
    uint32_t w[16];
    assert_int_equal(gos_vmm_copy_to_host(d, w, b.va, sizeof w), GOS_OK);
    for (int i = 0; i < 16; i++)
        assert_int_equal(w[i], 5);
    /* evict / restore in pieces keep every byte (the swap pool's copies) */
    assert_int_equal(gos_vmm_copy_to_device(d, b.va, h, 4 * MB), GOS_OK);
    memset(back, 0, 4 * MB);
    assert_int_equal(gos_vmm_buf_evict_pieces(d, &b, back, 1 * MB + 4096, 1 * MB), GOS_OK);
    assert_true(same_pattern(back, 4 * MB, 77));
    assert_int_equal(gos_vmm_buf_restore_pieces(d, &b, back, 3 * MB, 512 * 1024), GOS_OK);
    memset(back, 0, 4 * MB);
    assert_int_equal(gos_vmm_copy_to_host(d, back, b.va, 4 * MB), GOS_OK);
    assert_true(same_pattern(back, 4 * MB, 77));
    gos_exec_module_unload(d, m);
    gos_vmm_buf_free(d, &b);
    free(h);
    free(back);
    gos_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_and_limits),
        cmocka_unit_test(test_evict_restore),
        cmocka_unit_test(test_two_processes),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_read_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
