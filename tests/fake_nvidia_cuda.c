/* SPDX-License-Identifier: Apache-2.0 */
/* fake_nvidia_cuda.c: a stand-in for NVIDIA's libcuda.so.1 where gpuos's
 * libcuda opens it by path (GPUOS_REAL_LIBCUDA under GPUOS_CUDASHIM_LT=real;
 * src/cudashim/real.c), for
 * tests/t_cudashim.sh on machines without a GPU. It has what the shim takes from
 * the real driver and behaves as the driver was traced to
 * (results/GPU-0db54fca-.../cutrace-2d173c6):
 *  - cuInit, device 0, a primary context to push and pop (a depth counter);
 *  - the private table {1734dc26-...} of 16 slots (size 0x88): slot 4 hands
 *    out two objects; slot 13 fills them from byte 16 on with the patterns
 *    seen on an H200 (0 1 .. 7 0 1 .., and 0 x8, 1 x8, ..: i mod (d+1) and
 *    i / (d+1) for its arguments c = 66 and d = 7) and, as the hardest case
 *    for the shim, refuses without a current context
 *    (CUDA_ERROR_INVALID_CONTEXT); every other slot answers 999.
 * Every slot call is recorded (fake_nvidia_calls) with its six integer
 * arguments and whether a context was current, for the test to read through
 * dlopen(RTLD_NOLOAD) of the same path. Any other table: CUDA_ERROR_NOT_FOUND. */
#include <stdint.h>
#include <string.h>

typedef int CUresult;
enum { OK = 0, INVALID_VALUE = 1, INVALID_CONTEXT = 201, NOT_FOUND = 500 };

struct fake_call {
    int slot, ctx;
    uintptr_t a[6];
};
struct fake_log {
    int inits, depth, n;
    struct fake_call calls[64];
    unsigned char obj[2][128];
};
__attribute__((visibility("default"))) struct fake_log fake_nvidia_calls;
static struct fake_log *L = &fake_nvidia_calls;
static int primary = 0x5ca1ab1e;

static void record(int slot, uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e, uintptr_t f)
{
    if (L->n < 64) {
        struct fake_call *k = &L->calls[L->n++];
        k->slot = slot;
        k->ctx = L->depth > 0;
        uintptr_t v[6] = {a, b, c, d, e, f};
        memcpy(k->a, v, sizeof v);
    }
}

#define ARGS uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e, uintptr_t f
static CUresult slot_other(ARGS)
{
    record(0, a, b, c, d, e, f);
    return 999;
}
static CUresult slot_4(ARGS)
{
    record(4, a, b, c, d, e, f);
    if (!a || !b)
        return INVALID_VALUE;
    *(void **)a = L->obj[0];
    *(void **)b = L->obj[1];
    return OK;
}
static CUresult slot_13(ARGS)
{
    record(13, a, b, c, d, e, f);
    if (L->depth <= 0)
        return INVALID_CONTEXT;
    unsigned char *o0 = (unsigned char *)a, *o1 = (unsigned char *)b;
    if (o0 != L->obj[0] || o1 != L->obj[1] || c > 100 || !d)
        return INVALID_VALUE;
    for (uintptr_t t = 0; t < c; t++) {
        o0[16 + t] = (unsigned char)(t % (d + 1));
        o1[16 + t] = (unsigned char)(t / (d + 1));
    }
    return OK;
}
static CUresult (*const lt[17])(ARGS) = {
    (CUresult(*)(ARGS))(uintptr_t)(17 * sizeof(void *)),
    slot_other, slot_other, slot_other, slot_4, slot_other, slot_other, slot_other, slot_other,
    slot_other, slot_other, slot_other, slot_other, slot_13, slot_other, slot_other, slot_other};
static const unsigned char lt_id[16] = {0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
                                        0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca};

#define X __attribute__((visibility("default")))
X CUresult cuInit(unsigned flags)
{
    L->inits++;
    return flags ? INVALID_VALUE : OK;
}
X CUresult cuDeviceGet(int *d, int ordinal)
{
    if (!d || ordinal)
        return INVALID_VALUE;
    *d = 0;
    return OK;
}
X CUresult cuDevicePrimaryCtxRetain(void **c, int dev)
{
    if (!c || dev)
        return INVALID_VALUE;
    *c = &primary;
    return OK;
}
X CUresult cuCtxPushCurrent_v2(void *c)
{
    if (c != &primary)
        return INVALID_CONTEXT;
    L->depth++;
    return OK;
}
X CUresult cuCtxPopCurrent_v2(void **c)
{
    if (L->depth <= 0)
        return INVALID_CONTEXT;
    L->depth--;
    if (c)
        *c = &primary;
    return OK;
}
X CUresult cuGetExportTable(const void **t, const unsigned char *id)
{
    if (!t || !id)
        return INVALID_VALUE;
    if (memcmp(id, lt_id, 16))
        return NOT_FOUND;
    *t = lt;
    return OK;
}
