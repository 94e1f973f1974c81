/* SPDX-License-Identifier: Apache-2.0 */
/* test_proto_fuzz.c: deterministic in-process fuzzing of the protocol parser
 * (issue 4.7). Valid messages of every type are mutated (bit flips, random
 * bytes, length changes, truncation) and fed to gos_proto_check with a payload
 * buffer of exactly the claimed length (so that an out-of-bounds read would hit
 * the allocator's guard under ASan/valgrind); random byte streams are fed
 * through a socket to gos_wire_recv. Properties: nothing crashes or hangs, every
 * rejection carries a one-line reason, and every accepted message satisfies the
 * invariants the daemon relies on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "proto/proto.h"
#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint64_t rs = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static const uint16_t types[] = {GOS_MSG_HELLO,       GOS_MSG_BYE,          GOS_MSG_MEM_ALLOC,   GOS_MSG_MEM_FREE,
                                 GOS_MSG_REGION_ADD,  GOS_MSG_REGION_DEL,   GOS_MSG_COPY,        GOS_MSG_MODULE_LOAD,
                                 GOS_MSG_MODULE_UNLOAD, GOS_MSG_FUNC_GET,   GOS_MSG_LAUNCH,      GOS_MSG_SYNC,
                                 GOS_MSG_DEVICE_INFO, GOS_MSG_VGPU_INFO,    GOS_MSG_ADMIN_LIST,  GOS_MSG_ADMIN_SET,
                                 GOS_MSG_MODULE_GLOBAL, GOS_MSG_TMAP_ENCODE, GOS_MSG_REPLY};
#define NT (sizeof types / sizeof types[0])

/* A plausible seed message of type t into p; returns its length. */
static uint32_t seed(uint16_t t, unsigned char *p)
{
    memset(p, 0, 512);
    switch (t) {
    case GOS_MSG_HELLO: {
        struct gos_msg_hello m = {.version = GOS_PROTOCOL_VERSION};
        strcpy(m.vgpu, "a");
        memcpy(p, &m, sizeof m);
        return sizeof m;
    }
    case GOS_MSG_COPY: {
        struct gos_msg_copy m = {.op = GOS_OP_HTOD, .bytes = 4096, .offset = 64};
        memcpy(p, &m, sizeof m);
        return sizeof m;
    }
    case GOS_MSG_LAUNCH: {
        struct gos_msg_launch m = {.op = GOS_OP_LAUNCH, .func = 1, .grid = {2, 1, 1}, .block = {32, 1, 1},
                                   .param_bytes = 8};
        memcpy(p, &m, sizeof m);
        return sizeof m + 8;
    }
    case GOS_MSG_TMAP_ENCODE: {
        gpuos_tmap_args a = {.kind = GPUOS_TMAP_TILED, .dtype = 9, .rank = 2, .addr = 4096, .dim = {64, 8},
                             .stride = {128}, .box = {8, 8}, .estride = {1, 1}};
        memcpy(p, &a, sizeof a);
        return sizeof a;
    }
    case GOS_MSG_REPLY: {
        struct gos_rep_hdr r = {.status = GOS_EINVAL, .req_type = GOS_MSG_COPY, .text_len = 4};
        memcpy(p, &r, sizeof r);
        memcpy(p + sizeof r, "bad", 4);
        return sizeof r + 4;
    }
    default: {
        long f = gos_proto_fixed_size(t);
        for (long i = 0; i < f; i++)
            p[i] = (unsigned char)(i & 3 ? 0 : 'x');
        if (f > 0)
            p[f - 1] = 0;
        return f > 0 ? (uint32_t)f : 0;
    }
    }
}

/* What the daemon relies on once a message is accepted. */
static void invariants(const struct gos_msg_hdr *h, const unsigned char *p)
{
    assert_true(h->len <= GOS_PROTO_MAX_PAYLOAD);
    switch (h->type) {
    case GOS_MSG_HELLO:
        assert_non_null(memchr(((const struct gos_msg_hello *)p)->vgpu, 0, GOS_NAME_MAX));
        break;
    case GOS_MSG_COPY: {
        const struct gos_msg_copy *m = (const void *)p;
        assert_true(m->op >= GOS_OP_HTOD && m->op <= GOS_OP_DTOD && m->bytes > 0);
        if (m->op != GOS_OP_DTOD)
            assert_true(m->region < GOS_MAX_REGIONS && m->offset + m->bytes >= m->offset);
        break;
    }
    case GOS_MSG_LAUNCH: {
        const struct gos_msg_launch *m = (const void *)p;
        assert_int_equal(m->param_bytes, h->len - sizeof *m);
        assert_true(m->param_bytes <= GOS_PARAM_MAX);
        assert_true((uint64_t)m->block[0] * m->block[1] * m->block[2] <= 1024);
        for (int i = 0; i < 3; i++)
            assert_true(m->grid[i] > 0 && m->block[i] > 0);
        break;
    }
    case GOS_MSG_FUNC_GET:
    case GOS_MSG_MODULE_GLOBAL:
        assert_non_null(memchr(((const struct gos_msg_func_get *)p)->name, 0, GOS_FUNC_NAME_MAX));
        break;
    case GOS_MSG_TMAP_ENCODE: { /* what the encoders index by: kind and rank in bounds */
        const gpuos_tmap_args *a = (const void *)p;
        assert_true(a->kind >= GPUOS_TMAP_TILED && a->kind <= GPUOS_TMAP_REPLACE);
        if (a->kind != GPUOS_TMAP_REPLACE)
            assert_true(a->rank >= 1 && a->rank <= GPUOS_TMAP_RANK_MAX);
        break;
    }
    default:
        break;
    }
}

static void test_mutations(void **state)
{
    (void)state;
    unsigned char base[GOS_PROTO_MAX_PAYLOAD];
    long accepted = 0, rejected = 0;
    for (int it = 0; it < 1000000; it++) {
        uint16_t t = types[rnd() % NT];
        struct gos_msg_hdr h;
        uint32_t len = seed(t, base);
        gos_proto_hdr(&h, t, (uint32_t)it, len);
        int muts = 1 + (int)(rnd() % 4);
        for (int k = 0; k < muts; k++) {
            switch (rnd() % 6) {
            case 0: /* flip a payload bit */
                if (len)
                    base[rnd() % len] ^= (unsigned char)(1u << (rnd() % 8));
                break;
            case 1: /* random payload byte */
                if (len)
                    base[rnd() % len] = (unsigned char)rnd();
                break;
            case 2: /* change the length */
                len = (uint32_t)(rnd() % 300);
                h.len = len;
                break;
            case 3: /* flip a header bit */
                ((unsigned char *)&h)[rnd() % sizeof h] ^= (unsigned char)(1u << (rnd() % 8));
                break;
            case 4: /* big words in the payload */
                if (len >= 8) {
                    uint64_t v = rnd() % 2 ? UINT64_MAX - rnd() % 8 : rnd();
                    memcpy(base + (rnd() % (len - 7)), &v, 8);
                }
                break;
            default: /* truncate */
                if (len)
                    h.len = len = (uint32_t)(rnd() % len);
                break;
            }
        }
        if (gos_proto_check_hdr(&h) != GOS_OK) {
            rejected++;
            assert_true(strlen(gos_last_error()) > 0);
            continue;
        }
        /* exactly h.len bytes, as the daemon reads them */
        unsigned char *p = malloc(h.len ? h.len : 1);
        memcpy(p, base, h.len < sizeof base ? h.len : sizeof base);
        if (h.len > len)
            memset(p + len, 0xEE, h.len - len);
        /* What the daemon does: the structure (EPROTO ends the session), then
         * the arguments (EINVAL: an error of that request alone). */
        int rc = gos_proto_check(&h, p), arc = rc ? rc : gos_proto_check_args(&h, p);
        if (arc == GOS_OK) {
            accepted++;
            invariants(&h, p);
        } else {
            rejected++;
            assert_int_equal(arc, rc ? GOS_EPROTO : GOS_EINVAL);
            assert_null(strchr(gos_last_error(), '\n'));
        }
        free(p);
    }
    /* the mutator must explore both sides */
    assert_true(accepted > 1000);
    assert_true(rejected > 1000);
}

static void test_streams(void **state)
{
    (void)state;
    unsigned char *p = malloc(GOS_PROTO_MAX_PAYLOAD);
    for (int it = 0; it < 2000; it++) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        unsigned char buf[600];
        size_t n = rnd() % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)rnd();
        if (n >= 16 && rnd() % 2) { /* a valid header with a random rest */
            struct gos_msg_hdr h;
            gos_proto_hdr(&h, types[rnd() % NT], 1, (uint32_t)(rnd() % 600));
            memcpy(buf, &h, sizeof h);
        }
        assert_int_equal(write(sv[0], buf, n), (ssize_t)n);
        close(sv[0]);
        struct gos_msg_hdr h;
        int rc, k = 0;
        while ((rc = gos_wire_recv(sv[1], &h, p, NULL, 1000)) == GOS_OK && k < 100)
            k++;
        assert_true(rc == GOS_EIO || rc == GOS_EPROTO);
        close(sv[1]);
    }
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
