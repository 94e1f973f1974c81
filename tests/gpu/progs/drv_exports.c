/* SPDX-License-Identifier: Apache-2.0 */
/* drv_exports.c: what the real driver's private tables that cuBLASLt asks for
 * answer, seen from outside (issue 21): each table's size field, and how many
 * bytes the tools-TLS thread-context slot (2) and the tools-context number slot
 * (4) write into a buffer filled with 0xAA (a 4-byte and an 8-byte answer look
 * alike to a caller that zeroed its variable, not to one that did not), beside
 * cuCtxGetCurrent and cuCtxGetId. Run natively (links the real libcuda) and
 * under `gpuos run` (gpuos's) by tests/gpu/frameworks.sh (FW_PROBE_EXPORTS=1);
 * prints "key value" lines. */
#include "common.h"

#include <stdio.h>
#include <string.h>

static void show(const char *what, const unsigned char *b, int n)
{
    int written = 0;
    for (int i = 0; i < n; i++)
        if (b[i] != 0xAA)
            written = i + 1;
    printf("%s bytes_written %d value", what, written);
    for (int i = 0; i < n; i++)
        printf("%s%02x", i % 8 ? "" : " ", b[i]);
    printf("\n");
}

int main(void)
{
    CUcontext ctx = primary_context(), cur = NULL;
    const void *tls = NULL, *tctx = NULL;
    CUuuid u;
    /* ids the runtimes ask for that gpuos does not serve: what the driver answers */
    static const char *other[] = {"f8cff951-2146-8b4e-b9e2-fb469e7c0dd9", "da9151d3-3ae6-cc41-a5c0-4f26d533e328",
                                  "00000000-0000-0000-0000-000000000000"};
    for (int i = 0; i < 3; i++) {
        const void *t = NULL;
        u = uuid_of(other[i]);
        CUresult r = cuGetExportTable(&t, &u);
        printf("table %s rc %d size %zu\n", other[i], (int)r, t ? (size_t) * (void *const *)t : (size_t)0);
    }
    u = uuid_of("42d85a81-23f6-cb47-8298-f6e78a3aecdc");
    printf("tls rc %d\n", (int)cuGetExportTable(&tls, &u));
    u = uuid_of("21318c60-9714-3248-8ca6-41ff7324c8f2");
    printf("tctx rc %d\n", (int)cuGetExportTable(&tctx, &u));
    unsigned long long cid = 0;
    cuCtxGetCurrent(&cur);
    cuCtxGetId(ctx, &cid);
    printf("cuCtxGetCurrent %p cuCtxGetId %llu\n", (void *)cur, cid);
    if (tls) {
        void *const *t = tls;
        printf("tls size %zu\n", (size_t)t[0]);
        unsigned char b[16];
        memset(b, 0xAA, sizeof b);
        int rc = ((CUresult(*)(void *))t[2])(b);
        printf("tls slot2 rc %d\n", rc);
        show("tls slot2", b, 16);
    }
    if (tctx) {
        void *const *t = tctx;
        printf("tctx size %zu\n", (size_t)t[0]);
        unsigned char b[16];
        memset(b, 0xAA, sizeof b);
        int rc = ((CUresult(*)(CUcontext, void *))t[4])(ctx, b);
        printf("tctx slot4 rc %d\n", rc);
        show("tctx slot4", b, 16);
        memset(b, 0xAA, sizeof b);
        rc = ((CUresult(*)(CUcontext, void *))t[4])(NULL, b);
        printf("tctx slot4(NULL) rc %d\n", rc);
        show("tctx slot4(NULL)", b, 16);
    }
    return 0;
}
