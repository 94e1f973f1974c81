/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_proto.c: libFuzzer target for the protocol parser (optional; CI runs the
 * deterministic tests/test_proto_fuzz.c instead). The input is one message as it
 * arrives on the socket: a header, then exactly `len` payload bytes in a buffer
 * of that size, so ASan catches any read past what the daemon received.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE \
 *         -Isrc tests/fuzz/fuzz_proto.c src/proto/proto.c src/common/status.c \
 *         -o /tmp/fuzz_proto && /tmp/fuzz_proto -max_total_time=60 */
#include "common/status.h"
#include "proto/proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gos_msg_hdr h;
    if (size < sizeof h)
        return 0;
    memcpy(&h, data, sizeof h);
    if (gos_proto_check_hdr(&h) != GOS_OK)
        return 0;
    size_t have = size - sizeof h;
    if (have < h.len)
        return 0; /* the daemon would still be waiting for the rest */
    unsigned char *p = malloc(h.len ? h.len : 1);
    if (!p)
        return 0;
    memcpy(p, data + sizeof h, h.len);
    if (gos_proto_check(&h, p) == GOS_OK && h.type == GOS_MSG_LAUNCH) {
        struct gos_msg_launch m;
        memcpy(&m, p, sizeof m);
        if (m.param_bytes != h.len - sizeof m)
            abort(); /* the invariant the daemon relies on */
    }
    free(p);
    return 0;
}
