/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_exports.c: cuGetExportTable of gpuos's libcuda.so.1 without the CUDA
 * runtime (tests/t_cudashim.sh; no nvcc needed). Linked against our libcuda,
 * run through `gpuos run` on the simulated device. Checks:
 *  - every table the CUDA 13 runtime asks for is served, with its size field
 *    (slot 0) where the table has one, and the same pointer each time;
 *  - an unknown id, a NULL table or id: CUDA_ERROR_NOT_SUPPORTED (named once on
 *    stderr; t_cudashim.sh counts) / CUDA_ERROR_INVALID_VALUE;
 *  - a slot we do not implement (CUDART_INTERFACE slot 3) returns
 *    CUDA_ERROR_NOT_SUPPORTED (named once);
 *  - the primary-context slot gives the context cuDevicePrimaryCtxRetain gives;
 *  - the tools TLS slot gives the thread's current context and the tools
 *    context slot the number cuCtxGetId gives, through pushes, pops and
 *    contexts created and destroyed (a number is never given twice);
 *  - context-local storage: put / get / overwrite / delete per (context, key),
 *    NULL = current context, a missing key CUDA_ERROR_INVALID_HANDLE;
 *  - context checks report nothing;
 *  - integrity: MD2 of RFC 1319's test suite (the digest under the HMAC);
 *    versions ending in 0 and 1 give the fixed answers, others a hash that is
 *    deterministic and depends on the time argument;
 *  - the module slot refuses a wrapper with a bad magic (CUDA_ERROR_INVALID_IMAGE).
 * Prints "ok" when all hold; each failure names itself. */
#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudashim_check.h"

static CUuuid id(const char *s)
{
    CUuuid u;
    for (int i = 0; i < 16; i++) {
        while (*s == '-')
            s++;
        unsigned v;
        sscanf(s, "%2x", &v);
        u.bytes[i] = (char)v;
        s += 2;
    }
    return u;
}

typedef CUresult (*primary_fn)(CUcontext *, CUdevice);
typedef CUresult (*cls_put_fn)(CUcontext, void *, void *, void (*)(CUcontext, void *, void *));
typedef CUresult (*cls_del_fn)(CUcontext, void *);
typedef CUresult (*cls_get_fn)(void **, CUcontext, void *);
typedef CUresult (*check_fn)(CUcontext, uint32_t *, const void **);
typedef CUresult (*integrity_fn)(uint32_t, uint64_t, uint64_t[2]);
typedef CUresult (*module_fn)(CUmodule *, const void *);
typedef CUresult (*noarg_fn)(void);
typedef CUresult (*tls_fn)(CUcontext *);
typedef CUresult (*number_fn)(CUcontext, unsigned long long *);

/* tests/fake_nvidia_cuda.c's record of what reached it */
struct fake_log {
    int inits, depth, n;
    struct {
        int slot, ctx;
        uintptr_t a[6];
    } calls[64];
    unsigned char obj[2][128];
};
typedef CUresult (*six_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

/* With GPUOS_REAL_LIBCUDA naming the fake NVIDIA library (path in fake) and
 * GPUOS_CUDASHIM_LT=real: the slots of {1734dc26-...} reach NVIDIA's with
 * every argument and its answers come back; a slot that refuses without a
 * context is called again inside NVIDIA's primary context, which is popped
 * after; the library is initialised once. */
static void check_handed_on(void *const *lt, const char *fake)
{
    void *o0 = NULL, *o1 = NULL;
    TRUE(((six_fn)lt[4])((uintptr_t)&o0, (uintptr_t)&o1, 0, 0, 0, 0) == CUDA_SUCCESS);
    void *h = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
    struct fake_log *L = h ? (struct fake_log *)dlsym(h, "fake_nvidia_calls") : NULL;
    TRUE(L != NULL);
    if (!L)
        return;
    TRUE(L->inits == 1 && L->n == 1 && L->calls[0].slot == 4 && o0 == L->obj[0] && o1 == L->obj[1]);
    TRUE(((six_fn)lt[13])((uintptr_t)o0, (uintptr_t)o1, 66, 7, 0, 0) == CUDA_SUCCESS);
    TRUE(L->n == 3 && L->calls[1].slot == 13 && !L->calls[1].ctx && L->calls[2].slot == 13 && L->calls[2].ctx &&
         L->depth == 0);
    int chart_ok = 1;
    for (int k = 0; k < 66; k++)
        chart_ok &= L->obj[0][16 + k] == k % 8 && L->obj[1][16 + k] == k / 8;
    TRUE(chart_ok);
    TRUE(((six_fn)lt[9])(1, 2, 3, 4, 5, 0x123456789abcull) == 999);
    TRUE(L->n == 4 && L->calls[3].a[0] == 1 && L->calls[3].a[4] == 5 && L->calls[3].a[5] == 0x123456789abcull);
    TRUE(((six_fn)lt[4])(0, 0, 0, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE); /* its errors are the caller's */
    TRUE(L->inits == 1);
}

int main(void)
{
    static const struct {
        const char *id;
        size_t slots; /* 0: no size field */
    } known[] = {
        {"6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", 13}, {"42d85a81-23f6-cb47-8298-f6e78a3aecdc", 3},
        {"a094798c-2e74-2e74-93f2-0800200c0a66", 7},  {"c693336e-1121-df11-a8c3-68f355d89593", 0},
        {"263e8860-7cd2-6143-92f6-bbd5006dfa7e", 4},  {"d4082055-bde6-704b-8d34-ba123c66e1f2", 3},
        {"21318c60-9714-3248-8ca6-41ff7324c8f2", 93}, {"1734dc26-800d-4745-8726-c0f1e7dd8bca", 17},
    };
    enum { N_KNOWN = sizeof known / sizeof known[0] };
    const void *t[N_KNOWN], *again;
    if (cuInit(0) != CUDA_SUCCESS) {
        fprintf(stderr, "FAIL cuInit\n");
        return 1;
    }
    for (int i = 0; i < N_KNOWN; i++) {
        CUuuid u = id(known[i].id);
        TRUE(cuGetExportTable(&t[i], &u) == CUDA_SUCCESS && t[i]);
        TRUE(cuGetExportTable(&again, &u) == CUDA_SUCCESS && again == t[i]);
        if (t[i] && known[i].slots)
            TRUE(*(const size_t *)t[i] == known[i].slots * sizeof(void *));
    }
    CUuuid unknown = id("f8cff951-2146-8b4e-b9e2-fb469e7c0dd9"), zero = {{0}};
    const void *x = (const void *)1;
    TRUE(cuGetExportTable(&x, &unknown) == CUDA_ERROR_NOT_SUPPORTED && x == NULL);
    TRUE(cuGetExportTable(&x, &unknown) == CUDA_ERROR_NOT_SUPPORTED); /* named once only */
    TRUE(cuGetExportTable(&x, &zero) == CUDA_ERROR_NOT_SUPPORTED);
    TRUE(cuGetExportTable(NULL, &unknown) == CUDA_ERROR_INVALID_VALUE);
    TRUE(cuGetExportTable(&x, NULL) == CUDA_ERROR_INVALID_VALUE);
    if (fails)
        return 1;
    void *const *rt = t[0], *const *tls = t[1], *const *cls = t[3], *const *chk = t[4], *const *integ = t[5],
                *const *tctx = t[6];

    /* an unimplemented slot names itself and fails */
    TRUE(((noarg_fn)rt[3])() == CUDA_ERROR_NOT_SUPPORTED);
    TRUE(((noarg_fn)rt[3])() == CUDA_ERROR_NOT_SUPPORTED);
    /* cuBLASLt's table: by default (issue 43) every slot a stub it can see
     * fail (not a NULL table), and NVIDIA's library (the fake where one is
     * named) is never loaded into this process, tables asked or not; with
     * GPUOS_CUDASHIM_LT=real, NVIDIA's slots handed on */
    const char *fake = getenv("CUDASHIM_TEST_FAKE"), *lt_mode = getenv("GPUOS_CUDASHIM_LT");
    if (fake && lt_mode && !strcmp(lt_mode, "real")) {
        check_handed_on((void *const *)t[7], fake);
    } else {
        for (int k = 1; k <= 16; k++)
            TRUE(((noarg_fn)((void *const *)t[7])[k])() == CUDA_ERROR_NOT_SUPPORTED);
        if (fake)
            TRUE(dlopen(fake, RTLD_NOW | RTLD_NOLOAD) == NULL);
    }

    /* primary context */
    CUcontext pc = NULL, pr = NULL;
    TRUE(((primary_fn)rt[2])(&pc, 0) == CUDA_SUCCESS && pc);
    TRUE(cuDevicePrimaryCtxRetain(&pr, 0) == CUDA_SUCCESS && pr == pc);
    TRUE(((primary_fn)rt[2])(&pc, 7) == CUDA_ERROR_INVALID_DEVICE);
    TRUE(cuCtxSetCurrent(pr) == CUDA_SUCCESS);

    /* the thread's context and the context number (what cuBLASLt asks) */
    tls_fn current = (tls_fn)tls[2];
    number_fn number = (number_fn)tctx[4];
    unsigned long long seen[9], na = 0, nb = 0;
    CUcontext here = NULL;
    TRUE(current(&here) == CUDA_SUCCESS && here == pr);
    TRUE(number(pr, &na) == CUDA_SUCCESS && cuCtxGetId(pr, &nb) == CUDA_SUCCESS && na == nb && na != 0);
    TRUE(number(NULL, &nb) == CUDA_SUCCESS && nb == 0); /* no context: 0, as the driver */
    TRUE(number(pr, NULL) == CUDA_ERROR_INVALID_VALUE);
    seen[0] = na;
    for (int i = 1; i < 9; i++) {
        CUcontext c = NULL, popped = NULL;
        TRUE(cuCtxCreate(&c, NULL, 0, 0) == CUDA_SUCCESS);
        TRUE(current(&here) == CUDA_SUCCESS && here == c);
        TRUE(number(c, &seen[i]) == CUDA_SUCCESS && cuCtxGetId(c, &nb) == CUDA_SUCCESS && nb == seen[i]);
        for (int j = 0; j < i; j++)
            TRUE(seen[j] != seen[i]);
        TRUE(cuCtxPushCurrent(pr) == CUDA_SUCCESS && current(&here) == CUDA_SUCCESS && here == pr);
        TRUE(cuCtxPopCurrent(&popped) == CUDA_SUCCESS && popped == pr);
        TRUE(current(&here) == CUDA_SUCCESS && here == c);
        TRUE(cuCtxSetCurrent(pr) == CUDA_SUCCESS && cuCtxDestroy(c) == CUDA_SUCCESS);
        TRUE(number(c, &nb) == CUDA_ERROR_INVALID_CONTEXT);
    }
    TRUE(number(pr, &nb) == CUDA_SUCCESS && nb == seen[0]);
    TRUE(((noarg_fn)tctx[5])() == CUDA_ERROR_NOT_SUPPORTED); /* na slot of it we do not know */

    /* the module slot checks the wrapper */
    struct {
        unsigned magic, version;
        const void *data, *more;
    } bad = {0x12345678, 1, "x", NULL};
    CUmodule m;
    TRUE(((module_fn)rt[1])(&m, &bad) == CUDA_ERROR_INVALID_IMAGE);
    TRUE(((module_fn)rt[1])(NULL, &bad) == CUDA_ERROR_INVALID_VALUE);

    /* context-local storage */
    int k1, k2, v1, v2;
    void *v = NULL;
    cls_put_fn put = (cls_put_fn)cls[0];
    cls_del_fn del = (cls_del_fn)cls[1];
    cls_get_fn get = (cls_get_fn)cls[2];
    TRUE(get(&v, pr, &k1) == CUDA_ERROR_INVALID_HANDLE);
    TRUE(put(pr, &k1, &v1, NULL) == CUDA_SUCCESS);
    TRUE(put(NULL, &k2, &v2, NULL) == CUDA_SUCCESS); /* the current context: pr */
    TRUE(get(&v, pr, &k1) == CUDA_SUCCESS && v == &v1);
    TRUE(get(&v, pr, &k2) == CUDA_SUCCESS && v == &v2);
    TRUE(put(pr, &k1, &v2, NULL) == CUDA_SUCCESS);
    TRUE(get(&v, NULL, &k1) == CUDA_SUCCESS && v == &v2);
    CUcontext other;
    TRUE(cuCtxCreate(&other, NULL, 0, 0) == CUDA_SUCCESS);
    TRUE(get(&v, other, &k1) == CUDA_ERROR_INVALID_HANDLE); /* per context */
    TRUE(del(pr, &k1) == CUDA_SUCCESS);
    TRUE(get(&v, pr, &k1) == CUDA_ERROR_INVALID_HANDLE);
    TRUE(get(&v, pr, &k2) == CUDA_SUCCESS && v == &v2);
    TRUE(get(NULL, pr, &k2) == CUDA_ERROR_INVALID_VALUE);

    /* context checks */
    uint32_t r1 = 99;
    const void *r2 = NULL;
    TRUE(((check_fn)chk[2])(pr, &r1, &r2) == CUDA_SUCCESS && r1 == 0);

    /* integrity: the digest under the HMAC is RFC 1319's MD2 */
    void (*md2)(const void *, size_t, unsigned char *) = (void (*)(const void *, size_t, unsigned char *))dlsym(
        RTLD_DEFAULT, "gpuos_shim_md2");
    TRUE(md2 != NULL);
    if (md2) {
        static const char *msg[] = {"",
                                    "a",
                                    "abc",
                                    "message digest",
                                    "abcdefghijklmnopqrstuvwxyz",
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                                    "12345678901234567890123456789012345678901234567890123456789012345678901234567890"};
        static const char *want[] = {"8350e5a3e24c153df2275c9f80692773", "32ec01ec4a6dac72c0ab96fb34c0b5d1",
                                     "da853b0d3f88d99b30283a69e6ded6bb", "ab4f496bfb2a530b219ff33031fe06b0",
                                     "4e8ddff3650292ab5a4108c3aa47940b", "da33def2a42df13975352846c30338cd",
                                     "d5976f79d83d3a0dc9806c3c66f3efd8"};
        for (int i = 0; i < 7; i++) {
            unsigned char o[16];
            char hex[33];
            md2(msg[i], strlen(msg[i]), o);
            for (int j = 0; j < 16; j++)
                snprintf(hex + 2 * j, 3, "%02x", o[j]);
            if (strcmp(hex, want[i])) {
                fprintf(stderr, "FAIL MD2(\"%s\") = %s, RFC 1319: %s\n", msg[i], hex, want[i]);
                fails++;
            }
        }
    }
    integrity_fn ic = (integrity_fn)integ[1];
    uint64_t h0[2], h1[2], a[2], b[2], c[2];
    TRUE(ic(13000, 1000, h0) == CUDA_SUCCESS && h0[0] == 0x3341181C03CB675Cull && h0[1] == 0x8ED383AA1F4CD1E8ull);
    TRUE(ic(12081, 1000, h1) == CUDA_SUCCESS && h1[0] == 0x1841181C03CB675Cull && h1[1] == 0x8ED383AA1F4CD1E8ull);
    TRUE(ic(13002, 1796000000, a) == CUDA_SUCCESS);
    TRUE(ic(13002, 1796000000, b) == CUDA_SUCCESS && !memcmp(a, b, 16));
    TRUE(ic(13002, 1796000001, c) == CUDA_SUCCESS && memcmp(a, c, 16));
    TRUE(ic(13002, 1, NULL) == CUDA_ERROR_INVALID_VALUE);
    if (fails)
        return 1;
    puts("ok");
    return 0;
}
