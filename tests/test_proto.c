/* SPDX-License-Identifier: Apache-2.0 */
/* test_proto.c: the wire protocol (src/proto): exact header bytes, every
 * validation rule rejecting with a reason, the socket transport with descriptor
 * passing and timeouts, and the daemon's configuration parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "proto/proto.h"
#include "proto/wire.h"
#include "serve/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void test_header_bytes(void **state)
{
    (void)state;
    struct gos_msg_hdr h;
    gos_proto_hdr(&h, GOS_MSG_COPY, 7, 104);
    const unsigned char want[16] = {'G', 'O', 'S', 'P', GOS_PROTOCOL_VERSION, 0, 0x2c, 0x01, 7, 0, 0, 0, 104, 0, 0, 0};
    assert_memory_equal(&h, want, 16);
    assert_int_equal(gos_proto_check_hdr(&h), GOS_OK);
    assert_string_equal(gos_proto_name(GOS_MSG_LAUNCH), "LAUNCH");
    assert_string_equal(gos_proto_name(12345), "?");
}

static void reject(const struct gos_msg_hdr *h, const void *p, const char *needle)
{
    int rc = gos_proto_check(h, p);
    if (rc != GOS_EPROTO)
        fail_msg("accepted (rc %d), wanted \"%s\"", rc, needle);
    if (!strstr(gos_last_error(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", gos_last_error(), needle);
}

/* An argument error (issue 15.4): structurally fine (gos_proto_check accepts
 * it), refused by gos_proto_check_args with GOS_EINVAL: an error of the request,
 * not of the session. */
static void reject_arg(const struct gos_msg_hdr *h, const void *p, const char *needle)
{
    assert_int_equal(gos_proto_check(h, p), GOS_OK);
    int rc = gos_proto_check_args(h, p);
    if (rc != GOS_EINVAL)
        fail_msg("arguments accepted (rc %d), wanted \"%s\"", rc, needle);
    if (!strstr(gos_last_error(), needle))
        fail_msg("message \"%s\" lacks \"%s\"", gos_last_error(), needle);
}

static void test_header_rules(void **state)
{
    (void)state;
    struct gos_msg_hdr h;
    gos_proto_hdr(&h, GOS_MSG_SYNC, 1, 0);
    h.magic = 0x12345678;
    reject(&h, NULL, "not a gpuos message");
    gos_proto_hdr(&h, GOS_MSG_SYNC, 1, 0);
    h.version = GOS_PROTOCOL_VERSION + 1;
    char want_msg[80];
    snprintf(want_msg, sizeof want_msg, "protocol version %d, this side speaks version %d", GOS_PROTOCOL_VERSION + 1,
             GOS_PROTOCOL_VERSION);
    reject(&h, NULL, want_msg);
    gos_proto_hdr(&h, 777, 1, 0);
    reject(&h, NULL, "unknown message type 777");
    gos_proto_hdr(&h, GOS_MSG_COPY, 1, GOS_PROTO_MAX_PAYLOAD + 1);
    reject(&h, NULL, "exceeds");
    gos_proto_hdr(&h, GOS_MSG_COPY, 1, 103);
    reject(&h, NULL, "expected 104");
    gos_proto_hdr(&h, GOS_MSG_SYNC, 1, 1);
    reject(&h, NULL, "expected 0");
    gos_proto_hdr(&h, GOS_MSG_LAUNCH, 1, sizeof(struct gos_msg_launch) - 1);
    reject(&h, NULL, "outside");
    gos_proto_hdr(&h, GOS_MSG_LAUNCH, 1, sizeof(struct gos_msg_launch) + GOS_PARAM_MAX + 1);
    reject(&h, NULL, "outside");
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, 4);
    reject(&h, NULL, "shorter than its header");
}

static void test_payload_rules(void **state)
{
    (void)state;
    struct gos_msg_hdr h;
    struct gos_msg_hello he = {.version = GOS_PROTOCOL_VERSION};
    gos_proto_hdr(&h, GOS_MSG_HELLO, 1, sizeof he);
    reject(&h, &he, "name empty");
    memset(he.vgpu, 'a', sizeof he.vgpu);
    reject(&h, &he, "not terminated");
    strcpy(he.vgpu, "alice");
    assert_int_equal(gos_proto_check(&h, &he), GOS_OK);
    he.version = GOS_PROTOCOL_VERSION + 2;
    char want_msg[80];
    snprintf(want_msg, sizeof want_msg, "client speaks protocol version %d", GOS_PROTOCOL_VERSION + 2);
    reject(&h, &he, want_msg);

    struct gos_msg_copy c = {.op = GOS_OP_HTOD, .bytes = 16};
    gos_proto_hdr(&h, GOS_MSG_COPY, 1, sizeof c);
    assert_int_equal(gos_proto_check(&h, &c), GOS_OK);
    c.op = GOS_OP_LAUNCH; /* a kind, but no copy's */
    reject(&h, &c, "COPY opcode 4 unknown");
    c.op = 0;
    reject(&h, &c, "opcode");
    c.op = GOS_OP_DTOH;
    c.flags = GOS_F_ASYNC | GOS_F_DIRECT;
    assert_int_equal(gos_proto_check(&h, &c), GOS_OK);
    c.flags = GOS_F_INLINE; /* the ring's, not the socket's */
    reject(&h, &c, "flags");
    c.flags = 0;
    c.param_bytes = 8; /* a copy carries no parameters */
    reject(&h, &c, "says 8 parameter bytes, carries 0");
    c.param_bytes = 0;
    c.flags = GOS_F_ASYNC;
    c.bytes = 0;
    reject_arg(&h, &c, "copy of 0 bytes");
    c.bytes = (1ull << 40) + 1;
    reject_arg(&h, &c, "(1..2^40)");
    c.bytes = 16;
    c.region = GOS_MAX_REGIONS;
    reject_arg(&h, &c, "region");
    c.region = 0;
    c.offset = UINT64_MAX - 4;
    reject_arg(&h, &c, "overflows");

    struct gos_msg_mem_alloc a = {0};
    gos_proto_hdr(&h, GOS_MSG_MEM_ALLOC, 1, sizeof a);
    reject_arg(&h, &a, "allocation of 0 bytes");
    a.bytes = (1ull << 50) + 1;
    reject_arg(&h, &a, "(1..2^50)");
    a.bytes = 1ull << 50;
    assert_int_equal(gos_proto_check_args(&h, &a), GOS_OK);

    /* a shared region's client address: page-aligned, a user address, no wrap */
    struct gos_msg_region_add ra = {.bytes = 8192, .addr = 0x7f0000001000ull};
    gos_proto_hdr(&h, GOS_MSG_REGION_ADD, 1, sizeof ra);
    assert_int_equal(gos_proto_check_args(&h, &ra), GOS_OK);
    ra.addr = 0x7f0000001008ull;
    reject_arg(&h, &ra, "page-aligned");
    ra.addr = UINT64_MAX & ~4095ull;
    reject_arg(&h, &ra, "page-aligned user address");
    ra.addr = 1ull << 56;
    reject_arg(&h, &ra, "user address");
    ra.addr = 0;
    assert_int_equal(gos_proto_check_args(&h, &ra), GOS_OK);

    unsigned char buf[sizeof(struct gos_msg_launch) + 16];
    struct gos_msg_launch l = {.op = GOS_OP_LAUNCH, .func = 1, .grid = {4, 1, 1}, .block = {128, 1, 1},
                               .param_bytes = 16};
    memcpy(buf, &l, sizeof l);
    gos_proto_hdr(&h, GOS_MSG_LAUNCH, 1, sizeof buf);
    assert_int_equal(gos_proto_check(&h, buf), GOS_OK);
    l.param_bytes = 8;
    memcpy(buf, &l, sizeof l);
    reject(&h, buf, "says 8 parameter bytes, carries 16");
    l.param_bytes = 16;
    l.grid[1] = 0;
    memcpy(buf, &l, sizeof l);
    reject_arg(&h, buf, "grid dimension 1 is 0");
    l.grid[1] = 1;
    l.block[0] = 2048;
    memcpy(buf, &l, sizeof l);
    reject_arg(&h, buf, "block of 2048 threads");
    l.block[0] = 128;
    l.cluster[0] = 3;
    l.cluster[1] = l.cluster[2] = 1;
    memcpy(buf, &l, sizeof l);
    reject_arg(&h, buf, "not a multiple of the cluster");
    l.cluster[0] = 2;
    memcpy(buf, &l, sizeof l);
    assert_int_equal(gos_proto_check(&h, buf), GOS_OK);
    assert_int_equal(gos_proto_check_args(&h, buf), GOS_OK);

    struct gos_msg_admin_set s = {0};
    strcpy(s.vgpu, "a");
    strcpy(s.key, "compute");
    gos_proto_hdr(&h, GOS_MSG_ADMIN_SET, 1, sizeof s);
    reject(&h, &s, "ADMIN_SET field");
    strcpy(s.value, "30");
    assert_int_equal(gos_proto_check(&h, &s), GOS_OK);
    strcpy(s.value + 3, "x"); /* "30\0x": an embedded NUL (issue 44.7) */
    reject(&h, &s, "ADMIN_SET key or value with bytes after a NUL");
    memset(s.value + 2, 0, sizeof s.value - 2);

    /* vgpu create / delete (issue 25): names and keys terminated, known flags */
    static struct gos_msg_admin_create cr;
    memset(&cr, 'x', sizeof cr);
    gos_proto_hdr(&h, GOS_MSG_ADMIN_CREATE, 1, sizeof cr);
    reject(&h, &cr, "ADMIN_CREATE name empty or a field not terminated");
    memset(&cr, 0, sizeof cr);
    reject(&h, &cr, "ADMIN_CREATE name empty");
    strcpy(cr.vgpu, "j");
    assert_int_equal(gos_proto_check(&h, &cr), GOS_OK); /* keys may be empty: the daemon names what is missing */
    memset(cr.keys, 'k', sizeof cr.keys);
    reject(&h, &cr, "a field not terminated");
    /* keys that hide a line behind a NUL (issue 44.7) */
    memset(cr.keys, 0, sizeof cr.keys);
    strcpy(cr.keys, "compute=10\nmemory=1%");
    assert_int_equal(gos_proto_check(&h, &cr), GOS_OK);
    strcpy(cr.keys + strlen(cr.keys) + 1, "compute=100");
    reject(&h, &cr, "ADMIN_CREATE keys with bytes after a NUL");
    struct gos_msg_admin_delete de = {0};
    gos_proto_hdr(&h, GOS_MSG_ADMIN_DELETE, 1, sizeof de);
    reject(&h, &de, "ADMIN_DELETE name empty");
    strcpy(de.vgpu, "j");
    de.flags = GOS_DELETE_FORCE;
    assert_int_equal(gos_proto_check(&h, &de), GOS_OK);
    de.flags = 6;
    reject(&h, &de, "ADMIN_DELETE flags 0x6 unknown");
    de.flags = 0;
    de.pad = 1;
    reject(&h, &de, "ADMIN_DELETE padding not zero");
    gos_proto_hdr(&h, GOS_MSG_ADMIN_DELETE, 1, sizeof de - 4);
    reject(&h, &de, "ADMIN_DELETE payload is 68 bytes, expected 72");

    struct gos_msg_module_load m = {0};
    gos_proto_hdr(&h, GOS_MSG_MODULE_LOAD, 1, sizeof m);
    reject_arg(&h, &m, "needs image bytes");
    strcpy(m.name, "builtin");
    assert_int_equal(gos_proto_check(&h, &m), GOS_OK);

    /* partition-local memory (issue 12) */
    struct gos_msg_pmem_alloc pa = {0};
    gos_proto_hdr(&h, GOS_MSG_PMEM_ALLOC, 1, sizeof pa);
    reject_arg(&h, &pa, "per view (1..2^48)");
    pa.bytes = (1ull << 48) + 1;
    reject_arg(&h, &pa, "per view (1..2^48)");
    pa.bytes = 1ull << 48;
    assert_int_equal(gos_proto_check_args(&h, &pa), GOS_OK);
    gos_proto_hdr(&h, GOS_MSG_PMEM_ALLOC, 1, sizeof pa - 1);
    reject(&h, &pa, "PMEM_ALLOC");
    struct gos_msg_pmem_copy pc = {.base = 1ull << 21, .dir = GOS_OP_DTOH, .part = 1, .bytes = 5};
    gos_proto_hdr(&h, GOS_MSG_PMEM_COPY, 1, sizeof pc);
    assert_int_equal(gos_proto_check(&h, &pc), GOS_OK);
    assert_int_equal(gos_proto_check_args(&h, &pc), GOS_OK);
    pc.dir = GOS_OP_DTOD;
    reject_arg(&h, &pc, "direction");
    pc.dir = GOS_OP_HTOD;
    pc.part = 2;
    reject_arg(&h, &pc, "no view of partition 2");
    pc.part = 0;
    pc.bytes = 0;
    reject_arg(&h, &pc, "copy of 0 bytes");
    pc.bytes = 5;
    pc.region = GOS_MAX_REGIONS;
    reject_arg(&h, &pc, "region");
    pc.region = 0;
    pc.offset = UINT64_MAX;
    reject_arg(&h, &pc, "offset out of range");
    struct gos_msg_pmem_check pk = {.base = 1ull << 21, .samples = 9};
    gos_proto_hdr(&h, GOS_MSG_PMEM_CHECK, 1, sizeof pk);
    reject_arg(&h, &pk, "9 samples");
    pk.samples = 0;
    reject_arg(&h, &pk, "0 samples");
    pk.samples = 2;
    assert_int_equal(gos_proto_check_args(&h, &pk), GOS_OK);
}

/* VMM (proto.h GOS_MSG_VMM_*): a wrong size or an unknown access is a
 * protocol violation; sizes and addresses off the 2 MiB granularity, handle 0,
 * alignments that are not powers of two and ranges that wrap are argument
 * errors (CUDA_ERROR_INVALID_VALUE in the shim). */
/* TMAP_ENCODE (issue 43): what the daemon refuses before any driver sees it. */
static void test_tmap_rules(void **state)
{
    (void)state;
    struct gos_msg_hdr h;
    gpuos_tmap_args a = {.kind = GPUOS_TMAP_TILED, .dtype = 9, .rank = 2, .addr = 1ull << 20, .dim = {1024, 16},
                         .stride = {2048}, .box = {64, 16}, .estride = {1, 1}};
    gos_proto_hdr(&h, GOS_MSG_TMAP_ENCODE, 1, sizeof a - 8);
    assert_int_equal(gos_proto_check_hdr(&h), GOS_EPROTO);
    gos_proto_hdr(&h, GOS_MSG_TMAP_ENCODE, 1, sizeof a);
    assert_int_equal(gos_proto_check(&h, &a), GOS_OK);
    assert_int_equal(gos_proto_check_args(&h, &a), GOS_OK);
    gpuos_tmap_args b = a;
    b.rank = 6;
    reject_arg(&h, &b, "tensor map of rank 6 (1..5)");
    b.rank = 0;
    reject_arg(&h, &b, "rank 0");
    b = a;
    b.kind = GPUOS_TMAP_IM2COL; /* rank 2: im2col needs 3..5 */
    reject_arg(&h, &b, "rank 2 (3..5)");
    b.rank = 3;
    b.dim[2] = 4;
    b.stride[1] = 4096;
    b.estride[2] = 1;
    reject_arg(&h, &b, "0 channels per pixel");
    b.channels = 8;
    b.pixels = 16;
    assert_int_equal(gos_proto_check_args(&h, &b), GOS_OK);
    b = a;
    b.kind = 5;
    reject_arg(&h, &b, "tensor map kind 5");
    b = a;
    b.addr += 8;
    reject_arg(&h, &b, "not 16-byte aligned");
    b = a;
    b.interleave = 2;
    b.addr += 16; /* 32-byte interleave: 32-byte aligned */
    reject_arg(&h, &b, "not 16-byte aligned");
    b = a;
    b.stride[0] = 2056;
    reject_arg(&h, &b, "stride 0 of 2056 bytes");
    b = a;
    b.dim[1] = (1ull << 32) + 1;
    reject_arg(&h, &b, "dimension 1 of 4294967297");
    b = a;
    b.box[1] = 257;
    reject_arg(&h, &b, "box 257");
    b = a;
    b.estride[0] = 0;
    reject_arg(&h, &b, "element stride 0");
    b = a;
    b.oobfill = 2;
    reject_arg(&h, &b, "OOB fill 2");
    b = a;
    b.dim[4] = 0; /* past the rank: not looked at */
    b.box[3] = 999;
    assert_int_equal(gos_proto_check_args(&h, &b), GOS_OK);
    /* REPLACE: the map and an aligned address only */
    b = (gpuos_tmap_args){.kind = GPUOS_TMAP_REPLACE, .rank = 77, .addr = 4096};
    assert_int_equal(gos_proto_check_args(&h, &b), GOS_OK);
    b.addr = 4100;
    reject_arg(&h, &b, "not 16-byte aligned");
    /* its reply: 128 bytes of map */
    unsigned char rep[sizeof(struct gos_rep_hdr) + GPUOS_TMAP_BYTES] = {0};
    struct gos_rep_hdr rh = {.status = 0, .req_type = GOS_MSG_TMAP_ENCODE};
    memcpy(rep, &rh, sizeof rh);
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof rep);
    assert_int_equal(gos_proto_check(&h, rep), GOS_OK);
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof rep - 1);
    reject(&h, rep, "REPLY to TMAP_ENCODE has 127 body bytes, expected 128");
}

static void test_vmm_rules(void **state)
{
    (void)state;
    struct gos_msg_hdr h;
    const uint64_t G = GOS_VMM_GRANULE;
    struct gos_msg_vmm_map m = {.va = 8 * G, .bytes = 2 * G, .handle = 5};
    gos_proto_hdr(&h, GOS_MSG_VMM_MAP, 1, 16); /* a range's size, not a map's */
    int rc = gos_proto_check_hdr(&h);
    assert_int_equal(rc, GOS_EPROTO);
    assert_non_null(strstr(gos_last_error(), "VMM_MAP payload is 16 bytes, expected 24"));
    gos_proto_hdr(&h, GOS_MSG_VMM_MAP, 1, sizeof m);
    assert_int_equal(gos_proto_check(&h, &m), GOS_OK);
    assert_int_equal(gos_proto_check_args(&h, &m), GOS_OK);
    m.va = 8 * G + 4096;
    reject_arg(&h, &m, "not a multiple of the 2 MiB granularity");
    m.va = UINT64_MAX - G + 1; /* aligned, but the range wraps */
    reject_arg(&h, &m, "not a multiple of the 2 MiB granularity");
    m.va = 8 * G;
    m.bytes = G / 2;
    reject_arg(&h, &m, "map of 1048576 bytes");
    m.bytes = 2 * G;
    m.handle = 0;
    reject_arg(&h, &m, "VMM handle 0");

    struct gos_msg_vmm_access a = {.va = 8 * G, .bytes = G, .access = GOS_VMM_ACCESS_READ};
    gos_proto_hdr(&h, GOS_MSG_VMM_ACCESS, 1, sizeof a);
    assert_int_equal(gos_proto_check(&h, &a), GOS_OK);
    a.access = 2;
    reject(&h, &a, "VMM_ACCESS access 2 unknown");
    a.access = GOS_VMM_ACCESS_RW;
    a.pad = 1;
    reject(&h, &a, "padding");
    a.pad = 0;
    a.bytes = 0;
    reject_arg(&h, &a, "set access of 0 bytes");

    struct gos_msg_vmm_reserve r = {.bytes = 4 * G, .align = 3 * G};
    gos_proto_hdr(&h, GOS_MSG_VMM_RESERVE, 1, sizeof r);
    reject_arg(&h, &r, "not a power of two");
    r.align = 0;
    assert_int_equal(gos_proto_check_args(&h, &r), GOS_OK);
    r.align = 8 * G;
    assert_int_equal(gos_proto_check_args(&h, &r), GOS_OK);
    r.bytes = GOS_ALLOC_MAX + G;
    reject_arg(&h, &r, "at most 2^50");

    struct gos_msg_vmm_create c = {.bytes = G + 1};
    gos_proto_hdr(&h, GOS_MSG_VMM_CREATE, 1, sizeof c);
    reject_arg(&h, &c, "physical allocation of 2097153 bytes");
    struct gos_msg_vmm_release rl = {0};
    gos_proto_hdr(&h, GOS_MSG_VMM_RELEASE, 1, sizeof rl);
    reject_arg(&h, &rl, "release of VMM handle 0");
    struct gos_msg_vmm_range u = {.va = 0, .bytes = G};
    gos_proto_hdr(&h, GOS_MSG_VMM_UNMAP, 1, sizeof u);
    reject_arg(&h, &u, "unmap at 0x0");
    assert_string_equal(gos_proto_name(GOS_MSG_VMM_UNRESERVE), "VMM_UNRESERVE");
    assert_int_equal(gos_proto_reply_body(GOS_MSG_VMM_CREATE), sizeof(struct gos_rep_vmm));
}

static void test_reply_rules(void **state)
{
    (void)state;
    unsigned char buf[512];
    struct gos_msg_hdr h;
    struct gos_rep_hdr r = {.status = GOS_OK, .req_type = GOS_MSG_MEM_ALLOC};
    uint64_t dptr = 42;
    memcpy(buf, &r, sizeof r);
    memcpy(buf + sizeof r, &dptr, 8);
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof r + 8);
    assert_int_equal(gos_proto_check(&h, buf), GOS_OK);
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof r + 4);
    reject(&h, buf, "expected 8");
    r.status = GOS_EBUSY;
    r.text_len = 5;
    memcpy(buf, &r, sizeof r);
    memcpy(buf + sizeof r, "abcde", 5); /* not terminated */
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof r + 5);
    reject(&h, buf, "not terminated");
    memcpy(buf + sizeof r, "abcd", 5);
    assert_int_equal(gos_proto_check(&h, buf), GOS_OK);
    r.status = 5;
    memcpy(buf, &r, sizeof r);
    reject(&h, buf, "status 5 out of range");
    r.status = 0;
    r.req_type = GOS_MSG_ADMIN_LIST;
    r.text_len = 0;
    struct gos_rep_admin_list l = {.n = 2};
    memcpy(buf, &r, sizeof r);
    memcpy(buf + sizeof r, &l, sizeof l);
    gos_proto_hdr(&h, GOS_MSG_REPLY, 1, sizeof r + sizeof l + sizeof(struct gos_vgpu_rec));
    unsigned char *big = calloc(1, 4096);
    memcpy(big, buf, sizeof r + sizeof l);
    reject(&h, big, "ADMIN_LIST reply of 2 records");
    free(big);
}

static void test_wire_roundtrip_with_fd(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int mfd = memfd_create("t", 0);
    assert_true(mfd >= 0);
    assert_int_equal(ftruncate(mfd, 8192), 0);
    struct gos_msg_region_add m = {.bytes = 8192};
    assert_int_equal(gos_wire_send(sv[0], GOS_MSG_REGION_ADD, 9, &m, sizeof m, NULL, 0, mfd), GOS_OK);
    struct gos_msg_hdr h;
    unsigned char *p = malloc(GOS_PROTO_MAX_PAYLOAD);
    int fd = -1;
    assert_int_equal(gos_wire_recv(sv[1], &h, p, &fd, 1000), GOS_OK);
    assert_int_equal(h.type, GOS_MSG_REGION_ADD);
    assert_int_equal(h.seq, 9);
    assert_true(fd >= 0);
    struct stat a, b;
    fstat(mfd, &a);
    fstat(fd, &b);
    assert_int_equal(a.st_ino, b.st_ino);
    close(fd);
    close(mfd);
    /* error reply carries its text */
    gos_wire_reply(sv[1], 0, 9, GOS_MSG_REGION_ADD, GOS_EPERM, "nope", NULL, 0);
    assert_int_equal(gos_wire_recv(sv[0], &h, p, NULL, 1000), GOS_OK);
    struct gos_rep_hdr r;
    memcpy(&r, p, sizeof r);
    assert_int_equal(r.status, GOS_EPERM);
    assert_string_equal((char *)p + sizeof r, "nope");
    /* nothing to read: bounded wait */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(gos_wire_recv(sv[0], &h, p, NULL, 100), GOS_ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_true(dt >= 0.09 && dt < 2.0);
    /* peer gone mid-message */
    struct gos_msg_hdr hh;
    gos_proto_hdr(&hh, GOS_MSG_MEM_ALLOC, 1, 8);
    assert_int_equal(write(sv[1], &hh, sizeof hh), (ssize_t)sizeof hh);
    close(sv[1]);
    assert_int_equal(gos_wire_recv(sv[0], &h, p, NULL, 1000), GOS_EIO);
    assert_non_null(strstr(gos_last_error(), "middle of a message"));
    close(sv[0]);
    free(p);
}

static void test_config(void **state)
{
    (void)state;
    struct gos_serve_config c;
    const char *ok = "socket = /tmp/x.sock\nsocket_mode = 0600\n\n# comment\n[device 0]\npolicy = credit\n"
                     "queue = sdq\nperiod_ms = 10\nband_charge_hold = 0\n[vgpu a]\ncompute = 70\ncopy = 40\nmemory = 25%\n"
                     "[vgpu b]\ncompute = 30\nmemory = 2G\n";
    assert_int_equal(gos_serve_config_parse(ok, "t.conf", &c), GOS_OK);
    assert_string_equal(c.socket, "/tmp/x.sock");
    assert_int_equal(c.socket_mode, 0600);
    assert_int_equal(c.n_devs, 1);
    assert_string_equal(c.devs[0].policy, "credit");
    assert_string_equal(c.devs[0].queue, "sdq");
    assert_int_equal(c.devs[0].period_ns, 10000000ull);
    assert_int_equal(c.devs[0].ordinal, 0);
    assert_int_equal(c.devs[0].band_charge_hold, 0);
    assert_int_equal(c.n_vgpus, 2);
    assert_int_equal(c.vgpus[0].compute, 70);
    assert_int_equal(c.vgpus[0].copy, 40);
    assert_true(c.vgpus[0].mem_pct == 25.0);
    assert_int_equal(c.vgpus[1].copy, 30); /* copy defaults to compute */
    /* devices alone (a Slurm node: its vGPUs come from `vgpu create`) */
    static struct gos_serve_config c0;
    assert_int_equal(gos_serve_config_parse("[device 0]\nsim = default\n", "t.conf", &c0), GOS_OK);
    assert_int_equal(c0.n_vgpus, 0);
    assert_int_equal(c.vgpus[1].mem_bytes, 2ull << 30);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"[device 0]\npolicy = lottery\n[vgpu a]\n", "t.conf:2: policy must be"},
        {"[device 0]\n[vgpu a]\ncompute = 0\n", "t.conf:3: compute share must be 1..100"},
        {"[device 0]\n[vgpu a]\nmemory = 120%\n", "t.conf:3: memory share"},
        {"[device 0]\n[vgpu a]\n[vgpu a]\n", "t.conf:3: vGPU a defined twice"},
        {"# no sections\n", "no [device LABEL] section"},
        {"[vgpu a]\n", "has no device"},
        {"[device 0]\n[vgpu a]\ndevice = 7\n", "t.conf:3: no [device 7]"},
        {"bogus\n", "t.conf:1: expected key = value"},
        {"[gpu 0]\n", "t.conf:1: unknown section"},
        {"socket_mode = 999\n", "octal"},
        {"[device 0]\nband_charge_hold = 2\n[vgpu a]\n", "t.conf:2: band_charge_hold must be 0 or 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (gos_serve_config_parse(bad[i].text, "t.conf", &c) == GOS_OK)
            fail_msg("accepted: %s", bad[i].text);
        if (!strstr(gos_last_error(), bad[i].needle))
            fail_msg("message \"%s\" lacks \"%s\"", gos_last_error(), bad[i].needle);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_bytes),     cmocka_unit_test(test_header_rules),
        cmocka_unit_test(test_payload_rules),    cmocka_unit_test(test_reply_rules),
        cmocka_unit_test(test_vmm_rules),        cmocka_unit_test(test_tmap_rules),
        cmocka_unit_test(test_wire_roundtrip_with_fd), cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
