/* SPDX-License-Identifier: Apache-2.0 */
/* test_req.c: the one checker of a request (proto/req.h, issue 40.1), by
 * carrier: each malformed request is refused with the code (GOS_EPROTO for its
 * form, GOS_EINVAL for its arguments) and the words the daemon and the
 * executor answer with; the requests the client library sends pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "proto/req.h"
#include "proto/ring_shm.h"

#include <stdint.h>
#include <string.h>

static void refused(const struct gos_req *r, const struct gos_req_via *via, size_t tail, int code, const char *says)
{
    int rc = gos_req_check(r, via, tail);
    if (rc != code)
        fail_msg("%s: rc %d, wanted %d (\"%s\")", via->name, rc, code, says);
    if (!strstr(gos_last_error(), says))
        fail_msg("%s: message \"%s\" lacks \"%s\"", via->name, gos_last_error(), says);
}

static struct gos_req launch(void)
{
    return (struct gos_req){.op = GOS_OP_LAUNCH, .flags = GOS_F_ASYNC, .func = 1, .grid = {4, 1, 1},
                            .block = {128, 1, 1}, .param_bytes = 16};
}

static void test_launch(void **state)
{
    (void)state;
    const struct gos_req_via *vias[] = {&gos_req_launch, &gos_req_ring, &gos_req_run};
    for (int v = 0; v < 3; v++) {
        const struct gos_req_via *via = vias[v];
        struct gos_req r = launch();
        assert_int_equal(gos_req_check(&r, via, 16), GOS_OK);
        r.grid[0] = 0;
        refused(&r, via, 16, GOS_EINVAL, "grid dimension 0 is 0");
        r = launch();
        r.grid[2] = 0;
        refused(&r, via, 16, GOS_EINVAL, "grid dimension 2 is 0");
        r = launch();
        r.block[1] = 0;
        refused(&r, via, 16, GOS_EINVAL, "block dimension 1 is 0");
        r = launch();
        r.block[0] = 1025;
        refused(&r, via, 16, GOS_EINVAL, "block of 1025 threads");
        r.block[0] = 32, r.block[1] = 32, r.block[2] = 2; /* 2048: each dimension fine, the product not */
        refused(&r, via, 16, GOS_EINVAL, "block of 2048 threads");
        r.block[0] = 1u << 16, r.block[1] = 1u << 16, r.block[2] = 1u << 16; /* the product past 2^32 */
        refused(&r, via, 16, GOS_EINVAL, "threads");
        r = launch();
        r.block[0] = 1024;
        assert_int_equal(gos_req_check(&r, via, 16), GOS_OK);
        r = launch();
        r.cluster[0] = 3, r.cluster[1] = r.cluster[2] = 1;
        refused(&r, via, 16, GOS_EINVAL, "not a multiple of the cluster");
        r.cluster[0] = 2;
        assert_int_equal(gos_req_check(&r, via, 16), GOS_OK);
        r.cluster[1] = 0;
        refused(&r, via, 16, GOS_EINVAL, "cluster dimension 1 is 0");
        r.grid[0] = 32, r.cluster[0] = 32, r.cluster[1] = 1;
        refused(&r, via, 16, GOS_EINVAL, "cluster of more than 16");
    }
    /* parameters: on the wire exactly what follows (a lie is the stream's
     * error); on the ring and in a RUN at most what the carrier holds */
    struct gos_req r = launch();
    refused(&r, &gos_req_launch, 8, GOS_EPROTO, "LAUNCH says 16 parameter bytes, carries 8");
    refused(&r, &gos_req_launch, 24, GOS_EPROTO, "carries 24");
    assert_int_equal(gos_req_check(&r, &gos_req_ring, GOS_RING_DATA), GOS_OK);
    refused(&r, &gos_req_run, 15, GOS_EPROTO, "RUN of 16 parameter bytes carries 15");
    r.param_bytes = GOS_PARAM_MAX + 1;
    refused(&r, &gos_req_ring, GOS_RING_DATA, GOS_EINVAL, "kernel parameters of 4097 bytes");
    refused(&r, &gos_req_run, 1u << 20, GOS_EINVAL, "kernel parameters");
    r.param_bytes = UINT32_MAX;
    refused(&r, &gos_req_ring, GOS_RING_DATA, GOS_EINVAL, "kernel parameters");
    r.param_bytes = GOS_PARAM_MAX;
    assert_int_equal(gos_req_check(&r, &gos_req_ring, GOS_RING_DATA), GOS_OK);
    r.bytes = 1; /* a launch copies nothing */
    refused(&r, &gos_req_ring, GOS_RING_DATA, GOS_EPROTO, "a launch of 1 bytes");
}

static void test_copy(void **state)
{
    (void)state;
    struct gos_req c = {.op = GOS_OP_HTOD, .region = 3, .offset = 64, .dptr = 1 << 20, .bytes = 4096};
    const struct gos_req_via *vias[] = {&gos_req_copy, &gos_req_ring, &gos_req_run};
    for (int v = 0; v < 3; v++) {
        const struct gos_req_via *via = vias[v];
        size_t tail = via == &gos_req_ring ? GOS_RING_DATA : 0;
        struct gos_req r = c;
        assert_int_equal(gos_req_check(&r, via, tail), GOS_OK);
        r.bytes = 0;
        refused(&r, via, tail, GOS_EINVAL, "copy of 0 bytes");
        r.bytes = (1ull << 40) + 1;
        refused(&r, via, tail, GOS_EINVAL, "(1..2^40)");
        r.bytes = 1ull << 40;
        assert_int_equal(gos_req_check(&r, via, tail), GOS_OK);
        r = c;
        r.offset = UINT64_MAX - 4095; /* offset + bytes wraps to 0 */
        refused(&r, via, tail, GOS_EINVAL, "overflows");
        r.offset = UINT64_MAX - 4096; /* ends at 2^64 - 1: no wrap here (the region's size decides) */
        assert_int_equal(gos_req_check(&r, via, tail), GOS_OK);
        r = c;
        r.region = GOS_MAX_REGIONS;
        refused(&r, via, tail, GOS_EINVAL, "region 64, out of range");
        r.op = GOS_OP_DTOD; /* no host side: region and offset not read */
        r.offset = UINT64_MAX;
        assert_int_equal(gos_req_check(&r, via, tail), GOS_OK);
        r.op = 0;
        refused(&r, via, tail, GOS_EPROTO, "opcode 0 unknown");
        r.op = 99;
        refused(&r, via, tail, GOS_EPROTO, "opcode 99 unknown");
        r.op = 1u << 31;
        refused(&r, via, tail, GOS_EPROTO, "unknown");
    }
    /* inline bytes (the ring's): the slot's data area holds them */
    struct gos_req r = c;
    r.flags = GOS_F_INLINE;
    r.region = 5000; /* not read for inline bytes */
    r.bytes = GOS_RING_DATA;
    assert_int_equal(gos_req_check(&r, &gos_req_ring, GOS_RING_DATA), GOS_OK);
    r.bytes = GOS_RING_DATA + 1;
    refused(&r, &gos_req_ring, GOS_RING_DATA, GOS_EINVAL, "inline bytes");
    /* a copy carries no parameters on the wire */
    r = c;
    r.param_bytes = 8;
    refused(&r, &gos_req_copy, 0, GOS_EPROTO, "says 8 parameter bytes, carries 0");
}

/* Each carrier its own ops and flags. */
static void test_carriers(void **state)
{
    (void)state;
    struct gos_req c = {.op = GOS_OP_DTOH, .dptr = 1 << 20, .bytes = 16};
    c.flags = GOS_F_ASYNC | GOS_F_DIRECT;
    assert_int_equal(gos_req_check(&c, &gos_req_copy, 0), GOS_OK);
    refused(&c, &gos_req_copy_check, 0, GOS_EPROTO, "COPY_CHECK flags 0x3 unknown");
    refused(&c, &gos_req_ring, GOS_RING_DATA, GOS_EPROTO, "ring entry flags 0x3 unknown");
    assert_int_equal(gos_req_check(&c, &gos_req_run, 0), GOS_OK);
    c.flags = GOS_F_INLINE;
    refused(&c, &gos_req_copy, 0, GOS_EPROTO, "COPY flags 0x4 unknown");
    refused(&c, &gos_req_run, 0, GOS_EPROTO, "RUN flags 0x4 unknown");
    c.flags = GOS_F_SYNC; /* the daemon's word to its executor, never a client's */
    refused(&c, &gos_req_copy, 0, GOS_EPROTO, "flags 0x8 unknown");
    refused(&c, &gos_req_ring, GOS_RING_DATA, GOS_EPROTO, "flags 0x8 unknown");
    assert_int_equal(gos_req_check(&c, &gos_req_run, 0), GOS_OK);
    c.flags = 0x80;
    refused(&c, &gos_req_run, 0, GOS_EPROTO, "flags 0x80 unknown");
    /* a launch is no COPY, a copy no LAUNCH; fences and gates only on the ring */
    struct gos_req l = launch();
    refused(&l, &gos_req_copy, 16, GOS_EPROTO, "COPY opcode 4 unknown");
    c.flags = 0;
    refused(&c, &gos_req_launch, 0, GOS_EPROTO, "LAUNCH opcode 2 unknown");
    struct gos_req f = {.op = GOS_OP_FENCE};
    assert_int_equal(gos_req_check(&f, &gos_req_ring, GOS_RING_DATA), GOS_OK);
    refused(&f, &gos_req_run, 0, GOS_EPROTO, "RUN opcode 5 unknown");
    f.op = GOS_OP_GATE;
    assert_int_equal(gos_req_check(&f, &gos_req_ring, GOS_RING_DATA), GOS_OK);
    refused(&f, &gos_req_copy, 0, GOS_EPROTO, "opcode 6 unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_carriers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
