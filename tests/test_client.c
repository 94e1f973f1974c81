/* SPDX-License-Identifier: Apache-2.0 */
/* test_client.c: libgpuos without a GPU: error codes with one-line messages for
 * an absent daemon, a daemon of another protocol version (a fake one in a
 * thread), bad arguments; CUDA's parameter packing rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "gpuos/gpuos.h"
#include "proto/proto.h"
#include "proto/wire.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void test_no_daemon(void **state)
{
    (void)state;
    gpuos_vgpu *g = NULL;
    int rc = gpuos_open("/nonexistent-dir/gpuos.sock", "a", &g);
    assert_int_equal(rc, GPUOS_EIO);
    assert_null(g);
    assert_non_null(strstr(gpuos_error(), "cannot reach gpuos serve at /nonexistent-dir/gpuos.sock"));
    assert_null(strchr(gpuos_error(), '\n'));
    assert_int_equal(gpuos_open(NULL, "", &g), GPUOS_EINVAL);
    char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    longname[99] = 0;
    assert_int_equal(gpuos_open(NULL, longname, &g), GPUOS_EINVAL);
    assert_int_equal(gpuos_mem_alloc(NULL, 16, NULL), GPUOS_EINVAL);
    int n;
    gpuos_vgpu_facts f[2];
    assert_int_equal(gpuos_admin_list("/nonexistent-dir/s", f, 2, &n), GPUOS_EIO);
    assert_int_equal(gpuos_admin_set("/nonexistent-dir/s", "a", "compute", ""), GPUOS_EINVAL);
}

static void test_params(void **state)
{
    (void)state;
    gpuos_params p;
    gpuos_params_init(&p);
    char c = 1;
    uint64_t q = 2;
    uint32_t w = 3;
    uint16_t h = 4;
    assert_int_equal(gpuos_params_add(&p, &c, 1), GPUOS_OK);
    assert_int_equal(gpuos_params_add(&p, &q, 8), GPUOS_OK); /* aligned to 8 */
    assert_int_equal(p.len, 16);
    assert_int_equal(gpuos_params_add(&p, &h, 2), GPUOS_OK);
    assert_int_equal(gpuos_params_add(&p, &w, 4), GPUOS_OK); /* 18 -> 20 */
    assert_int_equal(p.len, 24);
    uint64_t q2;
    memcpy(&q2, p.buf + 8, 8);
    assert_int_equal(q2, 2);
    uint32_t w2;
    memcpy(&w2, p.buf + 20, 4);
    assert_int_equal(w2, 3);
    unsigned char big[4096] = {0};
    assert_int_equal(gpuos_params_add(&p, big, sizeof big), GPUOS_EINVAL);
    assert_int_equal(p.len, 24);
}

/* A fake daemon of another protocol version (ours + 1): answers HELLO with its own header. */
static int lfd;
static void *fake_daemon(void *arg)
{
    (void)arg;
    int fd = accept(lfd, NULL, NULL);
    unsigned char buf[256];
    ssize_t n = read(fd, buf, sizeof buf);
    (void)n;
    struct {
        struct gos_msg_hdr h;
        struct gos_rep_hdr r;
        char text[8];
    } m;
    memset(&m, 0, sizeof m);
    gos_proto_hdr(&m.h, GOS_MSG_REPLY, 1, sizeof m.r + 8);
    m.h.version = GOS_PROTOCOL_VERSION + 1;
    m.r.status = GPUOS_EPROTO;
    m.r.req_type = GOS_MSG_HELLO;
    m.r.text_len = 8;
    strcpy(m.text, "version");
    ssize_t w = write(fd, &m, sizeof m);
    (void)w;
    usleep(100000);
    close(fd);
    return NULL;
}

static void test_foreign_daemon(void **state)
{
    (void)state;
    char dir[] = "/tmp/gpuos-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 1), 0);
    pthread_t t;
    pthread_create(&t, NULL, fake_daemon, NULL);
    gpuos_vgpu *g = NULL;
    int rc = gpuos_open(a.sun_path, "a", &g);
    pthread_join(t, NULL);
    assert_int_equal(rc, GPUOS_EPROTO);
    assert_null(g);
    char want[32];
    snprintf(want, sizeof want, "protocol version %d", GOS_PROTOCOL_VERSION + 1);
    if (!strstr(gpuos_error(), "another protocol") || !strstr(gpuos_error(), want))
        fail_msg("unclear message: %s", gpuos_error());
    close(lfd);
    unlink(a.sun_path);
    rmdir(dir);
}

/* A daemon that never answers: the library gives up after $GPUOS_TIMEOUT_MS. */
static void *mute_daemon(void *arg)
{
    (void)arg;
    int fd = accept(lfd, NULL, NULL);
    usleep(800000);
    close(fd);
    return NULL;
}

static void test_timeout(void **state)
{
    (void)state;
    char dir[] = "/tmp/gpuos-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 1), 0);
    setenv("GPUOS_TIMEOUT_MS", "200", 1);
    pthread_t t;
    pthread_create(&t, NULL, mute_daemon, NULL);
    gpuos_vgpu *g = NULL;
    int rc = gpuos_open(a.sun_path, "a", &g);
    pthread_join(t, NULL);
    unsetenv("GPUOS_TIMEOUT_MS");
    assert_int_equal(rc, GPUOS_ETIMEDOUT);
    assert_non_null(strstr(gpuos_error(), "within 200 ms"));
    close(lfd);
    unlink(a.sun_path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_daemon),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_foreign_daemon),
        cmocka_unit_test(test_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
