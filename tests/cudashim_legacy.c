/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_legacy.c: a Driver API program of the CUDA 4 era and of what cuda.h
 * added since (issue 21), linked against libcuda.so.1 (gpuos's, through `gpuos
 * run`), for tests/t_cudashim.sh on the simulated device. Its kernels are the
 * daemon's built-in madd (C = A + B, computed by the simulated device) and
 * fill, loaded from image FILES by path (cuModuleLoad): the escape image
 * "gpuos-builtin", and a SIMMOD image that names madd "vecadd".
 *   cudashim_legacy DIR [RECORD]   DIR holds builtin.img and vecadd.img; RECORD
 *                                  the fatbin registrations recorded on a GPU
 *                                  (tests/cudashim_torch_fatbins.txt); prints
 *                                  "registered N" for those, then "ok"
 * Checks, each against arithmetic done here:
 *   - cuFuncSetBlockShape / cuFuncSetSharedSize / cuParamSetv / Seti / Setf /
 *     SetSize, cuLaunch, cuLaunchGrid, cuLaunchGridAsync: C = A + B exactly, a
 *     fill of a float's bits; the errors (no block shape, too large a block or
 *     buffer, a texture reference named once);
 *   - every cuCtxCreate (v1 .. v4 through cuGetProcAddress), cuCtxAttach/Detach;
 *   - cuMemAllocPitch, cuMemsetD2D8/16/32 (sync, async) and cuMemcpy2D: the
 *     rows set, the pitch padding untouched; cuMemcpy3D of a box; cuMemcpyPeer;
 *   - memory pools: stream-ordered allocation counted in the pool's attributes;
 *     the allocation granularity; pointer attributes (plural) of device, host,
 *     registered and unknown memory; DEVICEMAP host memory;
 *   - a single-input JIT link loaded as a module; launch attribute hints and a
 *     completion event; stream attributes; the capture mode exchange;
 *   - stream capture and a CUDA graph: nothing runs while capturing, each
 *     launch of the graph runs the captured memset, kernel, copy, event and
 *     host function in order (twice: twice the host function, the kernel's
 *     sums of the second run); the capture's errors;
 *   - stream memory operations: writes in order, waits that hold, one that
 *     cannot (refused), a batch;
 *   - a kernel that faults: CUDA_ERROR_ILLEGAL_ADDRESS, as the device named it;
 *   - libraries load lazily: one whose fatbin holds code for other GPUs only
 *     (as cuBLAS and cuDNN ship them) loads, its kernel's launch fails with
 *     CUDA_ERROR_NO_BINARY_FOR_GPU, an eager cuModuleLoadData of it fails; one
 *     that runs is loaded at its first launch (which computes), a kernel it
 *     lacks fails at its launch (NOT_FOUND).
 * Exit 0 only when every check passed; each failure names itself. */
#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudashim_check.h"

#define N 64 /* madd's n: n x n floats */

static CUdeviceptr dalloc(size_t n)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, n));
    return p;
}

/* madd by the CUDA 4 API: C = A + B for n x n floats, checked exactly. */
static void test_param_api(CUmodule m, CUmodule vec)
{
    CUfunction f, fv, fill;
    CHECK(cuModuleGetFunction(&f, m, "madd"));
    CHECK(cuModuleGetFunction(&fv, vec, "vecadd"));
    CHECK(cuModuleGetFunction(&fill, m, "fill"));
    size_t bytes = (size_t)N * N * 4;
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (int i = 0; i < N * N; i++) {
        a[i] = (float)(i % 1000) * 0.5f;
        b[i] = (float)(i / 7) - 3.25f;
    }
    CUdeviceptr da = dalloc(bytes), db = dalloc(bytes), dc = dalloc(bytes);
    CHECK(cuMemcpyHtoD(da, a, bytes));
    CHECK(cuMemcpyHtoD(db, b, bytes));

    /* errors first: no block shape yet */
    EXPECT(cuLaunchGrid(f, 4, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuFuncSetBlockShape(f, 2048, 1, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuParamSetSize(f, 1u << 20), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuParamSetv(f, 4090, &da, 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuParamSetTexRef(f, CU_PARAM_TR_DEFAULT, NULL), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuFuncSetBlockShape(NULL, 1, 1, 1), CUDA_ERROR_INVALID_HANDLE);

    CUfunction fns[2] = {f, fv};
    for (int k = 0; k < 2; k++) {
        CUfunction g = fns[k];
        CHECK(cuFuncSetBlockShape(g, 256, 1, 1));
        CHECK(cuFuncSetSharedSize(g, 0));
        CHECK(cuFuncSetCacheConfig(g, CU_FUNC_CACHE_PREFER_L1));
        CHECK(cuParamSetv(g, 0, &da, sizeof da));
        CHECK(cuParamSetv(g, 8, &db, sizeof db));
        CHECK(cuParamSetv(g, 16, &dc, sizeof dc));
        CHECK(cuParamSeti(g, 24, N));
        CHECK(cuParamSetSize(g, 28));
        CHECK(cuMemsetD32(dc, 0, (size_t)N * N));
        if (k == 0) {
            CHECK(cuLaunchGrid(g, 16, 1));
        } else {
            CUstream s;
            CHECK(cuStreamCreate(&s, 0));
            CHECK(cuLaunchGridAsync(g, 16, 1, s));
            CHECK(cuStreamSynchronize(s));
            CHECK(cuStreamDestroy(s));
        }
        CHECK(cuMemcpyDtoH(c, dc, bytes));
        int bad = 0;
        for (int i = 0; i < N * N; i++)
            bad += c[i] != a[i] + b[i];
        TRUE(bad == 0);
    }
    /* cuLaunch: one block; fill writes count words of a value set by cuParamSetf */
    unsigned count = 100;
    unsigned long long cnt = count;
    CHECK(cuFuncSetBlockShape(fill, 128, 1, 1));
    CHECK(cuParamSetv(fill, 0, &dc, 8));
    CHECK(cuParamSetf(fill, 8, 1.5f));
    CHECK(cuParamSeti(fill, 12, 0));
    CHECK(cuParamSetv(fill, 16, &cnt, 8));
    CHECK(cuParamSetSize(fill, 24));
    CHECK(cuLaunch(fill));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(c, dc, (count + 1) * 4));
    int bad = 0;
    for (unsigned i = 0; i < count; i++)
        bad += c[i] != 1.5f;
    TRUE(bad == 0);
    TRUE(c[count] == a[count] + b[count]); /* nothing past count */
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    free(a);
    free(b);
    free(c);
}

static void test_contexts(void)
{
    CUdevice d;
    CHECK(cuDeviceGet(&d, 0));
    CUcontext cur, c1, c2, c3, c4, at;
    CHECK(cuCtxGetCurrent(&cur));
    void *p2, *p3, *p4;
    CUdriverProcAddressQueryResult st;
    CHECK(cuGetProcAddress("cuCtxCreate", &p2, 3020, 0, &st));
    CHECK(cuGetProcAddress("cuCtxCreate", &p3, 11040, 0, &st));
    CHECK(cuGetProcAddress("cuCtxCreate", &p4, 12050, 0, &st));
    TRUE(p2 != p3 && p3 != p4 && p2 != p4);
    /* the form a caller built for an older CUDA expects */
    void *ci;
    CHECK(cuGetProcAddress("cuStreamGetCaptureInfo", &ci, 12000, 0, &st));
    TRUE(ci == dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo_v2"));
    CHECK(cuGetProcAddress("cuStreamGetCaptureInfo", &ci, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    TRUE(ci == dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo_v3_ptsz"));
    CHECK(((CUresult(*)(CUcontext *, unsigned, CUdevice))p2)(&c2, 0, d));
    CHECK(((CUresult(*)(CUcontext *, CUexecAffinityParam *, int, unsigned, CUdevice))p3)(&c3, NULL, 0, 0, d));
    CHECK(((CUresult(*)(CUcontext *, CUctxCreateParams *, unsigned, CUdevice))p4)(&c4, NULL, 0, d));
    CHECK(cuCtxCreate(&c1, NULL, 0, d));
    CUcontext now;
    CHECK(cuCtxGetCurrent(&now));
    TRUE(now == c1); /* a new context is current */
    CHECK(cuCtxAttach(&at, 0));
    TRUE(at == c1);
    CHECK(cuCtxDetach(at)); /* one reference left: still alive */
    CHECK(cuCtxSynchronize());
    CHECK(cuCtxDetach(c1)); /* the last: destroyed */
    EXPECT(cuCtxSetCurrent(c1), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuCtxDestroy(c2));
    CHECK(cuCtxDestroy(c3));
    CHECK(cuCtxDestroy(c4));
    CHECK(cuCtxSetCurrent(cur));
    CUsharedconfig sc;
    CHECK(cuCtxGetSharedMemConfig(&sc));
    CHECK(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE));
    int can = 1;
    CHECK(cuDeviceCanAccessPeer(&can, d, d));
    TRUE(can == 0);
}

/* Pitched memory: rows set by 2D memsets, the padding kept; a 3D box copy. */
static void test_pitch(void)
{
    const size_t w = 100, h = 37; /* bytes, rows */
    CUdeviceptr p;
    size_t pitch = 0;
    CHECK(cuMemAllocPitch(&p, &pitch, w, h, 4));
    TRUE(pitch >= w && pitch % 256 == 0);
    unsigned char *host = malloc(pitch * h), *want = malloc(pitch * h);
    CHECK(cuMemsetD8(p, 0xEE, pitch * h));
    CHECK(cuMemsetD2D8(p, pitch, 0x11, w, h));
    CHECK(cuMemsetD2D16(p + 2 * pitch, pitch, 0x2233, w / 2 - 1, 3));
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemsetD2D32Async(p + 10 * pitch + 4, pitch, 0x44556677u, 5, 2, s));
    CHECK(cuStreamSynchronize(s));
    memset(want, 0xEE, pitch * h);
    for (size_t y = 0; y < h; y++)
        memset(want + y * pitch, 0x11, w);
    for (size_t y = 2; y < 5; y++)
        for (size_t x = 0; x < w / 2 - 1; x++) {
            want[y * pitch + 2 * x] = 0x33;
            want[y * pitch + 2 * x + 1] = 0x22;
        }
    for (size_t y = 10; y < 12; y++)
        for (size_t x = 0; x < 5; x++) {
            uint32_t v = 0x44556677u;
            memcpy(want + y * pitch + 4 + 4 * x, &v, 4);
        }
    CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = p, .srcPitch = pitch,
                       .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = host, .dstPitch = pitch,
                       .WidthInBytes = pitch, .Height = h};
    CHECK(cuMemcpy2D(&c));
    TRUE(!memcmp(host, want, pitch * h));
    /* a 3D box: 3 slices of 4 rows of 20 bytes from x = 8, y = 1, z = 2 of a
     * volume of slices 8 rows high, into a packed host buffer */
    unsigned char box[3 * 4 * 20];
    CUDA_MEMCPY3D b = {.srcXInBytes = 8, .srcY = 1, .srcZ = 2, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                       .srcDevice = p, .srcPitch = pitch, .srcHeight = 8,
                       .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = box, .dstPitch = 20, .dstHeight = 4,
                       .WidthInBytes = 20, .Height = 4, .Depth = 3};
    CHECK(cuMemcpy3D(&b));
    int bad = 0;
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 4; y++)
            bad += memcmp(box + (z * 4 + y) * 20, want + ((size_t)(2 + z) * 8 + 1 + y) * pitch + 8, 20) != 0;
    TRUE(bad == 0);
    /* a peer copy on one device is a device-to-device copy */
    CUcontext ctx;
    CHECK(cuCtxGetCurrent(&ctx));
    CUdeviceptr q = dalloc(pitch);
    CHECK(cuMemcpyPeer(q, ctx, p + 10 * pitch, ctx, pitch));
    CHECK(cuMemcpyDtoH(host, q, pitch));
    TRUE(!memcmp(host, want + 10 * pitch, pitch));
    CHECK(cuMemFree(q));
    CHECK(cuStreamDestroy(s));
    CHECK(cuMemFree(p));
    free(host);
    free(want);
}

static void test_memory(void)
{
    CUdevice d;
    CHECK(cuDeviceGet(&d, 0));
    int v = 0;
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d));
    TRUE(v == 1);
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d));
    TRUE(v == 1); /* offered (vmm.c; tests/t_cudashim_vmm.sh) */
    CUmemoryPool pool;
    CHECK(cuDeviceGetDefaultMemPool(&pool, d));
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    cuuint64_t used0 = 1, used = 0, high = 0;
    CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used0));
    CUdeviceptr a, b;
    CHECK(cuMemAllocAsync(&a, 1 << 20, s));
    CHECK(cuMemAllocFromPoolAsync(&b, 3 << 20, pool, s));
    CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    TRUE(used == used0 + (4 << 20));
    CHECK(cuMemsetD32Async(b, 7, 16, s));
    CHECK(cuMemFreeAsync(a, s));
    CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    TRUE(used == used0 + (3 << 20) && high >= used0 + (4 << 20));
    cuuint64_t thr = 1ull << 30, got = 0;
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
    CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    TRUE(got == thr);
    CHECK(cuMemFreeAsync(b, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuStreamDestroy(s));

    size_t g = 0;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    TRUE(g == 2u << 20);
    prop.location.id = 3;
    EXPECT(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_VALUE);

    /* pointer attributes: device, DEVICEMAP host memory, registered, unknown */
    CUdeviceptr dp = dalloc(4096);
    void *hp = NULL;
    CHECK(cuMemHostAlloc(&hp, 8192, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    unsigned hf = 0;
    CHECK(cuMemHostGetFlags(&hf, hp));
    TRUE(hf == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    /* mapped host memory: the executor maps it at this process's address, the
     * device address is the host's (unified addressing) */
    CUdeviceptr mapped = 0;
    CHECK(cuMemHostGetDevicePointer(&mapped, hp, 0));
    TRUE(mapped == (CUdeviceptr)(uintptr_t)hp);
    CHECK(cuMemHostGetDevicePointer(&mapped, (char *)hp + 4096, 0));
    TRUE(mapped == (CUdeviceptr)(uintptr_t)hp + 4096);
    CHECK(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)(uintptr_t)hp + 8));
    TRUE(mapped == (CUdeviceptr)(uintptr_t)hp + 8);
    EXPECT(cuMemHostGetDevicePointer(&mapped, hp, 1), CUDA_ERROR_INVALID_VALUE);
    /* a memset by the unified address of page-locked host memory sets it, in order */
    uint32_t *hw = hp;
    memset(hp, 0, 8192);
    CHECK(cuMemsetD32Async((CUdeviceptr)(uintptr_t)hp + 16, 0xA5A5F00Du, 4, 0));
    CHECK(cuStreamSynchronize(0));
    TRUE(hw[3] == 0 && hw[4] == 0xA5A5F00Du && hw[7] == 0xA5A5F00Du && hw[8] == 0);
    CHECK(cuMemsetD8((CUdeviceptr)(uintptr_t)hp + 8191, 0x7e, 1));
    TRUE(((unsigned char *)hp)[8191] == 0x7e && ((unsigned char *)hp)[8190] == 0);
    /* and copies by it: read, written, to and from device memory */
    uint32_t rd[2] = {0, 0}, wr[2] = {0x600DF00Du, 0x0BADCAFEu};
    CHECK(cuMemcpyDtoH(rd, (CUdeviceptr)(uintptr_t)hp + 16, 8));
    TRUE(rd[0] == 0xA5A5F00Du && rd[1] == 0xA5A5F00Du);
    CHECK(cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)hp + 64, wr, 8, 0));
    CHECK(cuStreamSynchronize(0));
    TRUE(hw[16] == wr[0] && hw[17] == wr[1]);
    CUdeviceptr dv = dalloc(64);
    CHECK(cuMemcpyDtoD(dv, (CUdeviceptr)(uintptr_t)hp + 64, 8));
    CHECK(cuMemcpyDtoD((CUdeviceptr)(uintptr_t)hp + 128, dv, 8));
    TRUE(hw[32] == wr[0] && hw[33] == wr[1]);
    CHECK(cuMemFree(dv));
    static char mine[10000];
    CHECK(cuMemHostRegister(mine, sizeof mine, CU_MEMHOSTREGISTER_PORTABLE));
    EXPECT(cuMemHostRegister(mine, sizeof mine, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT(cuMemHostGetDevicePointer(&mapped, mine, 0), CUDA_ERROR_NOT_SUPPORTED); /* the program's own pages */
    CUpointer_attribute at[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    struct {
        CUdeviceptr p;
        unsigned type;
        size_t size;
        int ordinal;
    } want[4] = {{dp + 100, CU_MEMORYTYPE_DEVICE, 4096, 0},
                 {(CUdeviceptr)(uintptr_t)hp + 8, CU_MEMORYTYPE_HOST, 8192, 0},
                 {(CUdeviceptr)(uintptr_t)mine + 9999, CU_MEMORYTYPE_HOST, sizeof mine, 0},
                 {(CUdeviceptr)(uintptr_t)&g, 0, 0, -2}};
    for (int i = 0; i < 4; i++) {
        unsigned type = 99;
        size_t size = 99;
        int ord = 99;
        void *data[3] = {&type, &size, &ord};
        CHECK(cuPointerGetAttributes(3, at, data, want[i].p));
        TRUE(type == want[i].type && size == want[i].size && ord == want[i].ordinal);
    }
    unsigned type;
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)&g),
           CUDA_ERROR_INVALID_VALUE);
    /* copies from registered memory */
    for (size_t i = 0; i < sizeof mine; i++)
        mine[i] = (char)(i * 7);
    CHECK(cuMemcpyHtoD(dp, mine, 4096));
    CHECK(cuMemcpyDtoH(hp, dp, 4096));
    TRUE(!memcmp(hp, mine, 4096));
    /* a batch: host to device, device to device, device to host, in order */
    CUdeviceptr dq = dalloc(4096);
    CUdeviceptr bd[3] = {dp, dq, (CUdeviceptr)(uintptr_t)hp}, bs[3] = {(CUdeviceptr)(uintptr_t)(mine + 100), dp, dq};
    size_t bn[3] = {4096, 4096, 4096}, fail = 7;
    memset(hp, 0, 4096);
    CUmemcpyAttributes ca;
    memset(&ca, 0, sizeof ca);
    ca.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t ai = 0;
    CHECK(cuMemcpyBatchAsync(bd, bs, bn, 3, &ca, &ai, 1, NULL));
    CHECK(cuCtxSynchronize());
    TRUE(!memcmp(hp, mine + 100, 4096));
    CUresult (*b1)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t, size_t *,
                   CUstream) = NULL;
    CUdriverProcAddressQueryResult q;
    CHECK(cuGetProcAddress("cuMemcpyBatchAsync", (void **)&b1, 12080, 0, &q));
    TRUE(b1 != NULL && (void *)b1 == dlsym(RTLD_DEFAULT, "cuMemcpyBatchAsync")); /* 12.8's form, with failIdx */
    CHECK(b1(bd, bs, bn, 3, &ca, &ai, 1, &fail, NULL));
    TRUE(fail == ~(size_t)0);
    CHECK(cuMemFree(dq));
    CHECK(cuMemHostUnregister(mine));
    EXPECT(cuMemHostUnregister(mine), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK(cuMemFreeHost(hp));
    CHECK(cuMemFree(dp));
}

/* A one-input link, launch attributes, streams. */
static void test_link_launch(const char *simmod)
{
    CUlinkState l;
    CHECK(cuLinkCreate(0, NULL, NULL, &l));
    CHECK(cuLinkAddData(l, CU_JIT_INPUT_PTX, (void *)simmod, strlen(simmod), "vec", 0, NULL, NULL));
    EXPECT(cuLinkAddData(l, CU_JIT_INPUT_PTX, (void *)simmod, strlen(simmod), "again", 0, NULL, NULL),
           CUDA_ERROR_NOT_SUPPORTED);
    void *img;
    size_t n;
    CHECK(cuLinkComplete(l, &img, &n));
    TRUE(n == strlen(simmod) + 1);
    CUmodule m;
    CHECK(cuModuleLoadData(&m, img));
    CHECK(cuLinkDestroy(l));
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, m, "vecadd"));
    size_t bytes = (size_t)N * N * 4;
    CUdeviceptr a = dalloc(bytes), b = dalloc(bytes), c = dalloc(bytes);
    CHECK(cuMemsetD32(a, 0x3f800000u, (size_t)N * N)); /* 1.0f */
    CHECK(cuMemsetD32(b, 0x40000000u, (size_t)N * N)); /* 2.0f */
    unsigned nn = N;
    unsigned char buf[28];
    memcpy(buf, &a, 8);
    memcpy(buf + 8, &b, 8);
    memcpy(buf + 16, &c, 8);
    memcpy(buf + 24, &nn, 4);
    size_t len = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len, CU_LAUNCH_PARAM_END};
    CUstream s;
    CHECK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -1));
    CUevent done;
    CHECK(cuEventCreate(&done, 0));
    CUlaunchAttribute at[3];
    memset(at, 0, sizeof at);
    at[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at[0].value.programmaticStreamSerializationAllowed = 1;
    at[1].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    at[1].value.launchCompletionEvent.event = done;
    at[2].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
    at[2].value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    CUlaunchConfig cfg = {.gridDimX = 8, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128, .blockDimY = 1,
                          .blockDimZ = 1, .hStream = s, .attrs = at, .numAttrs = 3};
    CHECK(cuLaunchKernelEx(&cfg, f, NULL, extra));
    CHECK(cuEventSynchronize(done));
    float out[N];
    CHECK(cuMemcpyDtoH(out, c, sizeof out));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != 3.0f;
    TRUE(bad == 0);
    at[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    at[0].value.cooperative = 1;
    cfg.numAttrs = 1;
    EXPECT(cuLaunchKernelEx(&cfg, f, NULL, extra), CUDA_ERROR_NOT_SUPPORTED);
    /* cluster occupancy as driver 580 answers it (tests/gpu/progs/drv_answers.c
     * on an H200): none in the configuration, 0; above 8 blocks only with the
     * non-portable size allowed; 32 blocks, more than any GPC has SMs: 0;
     * bigger clusters, fewer of them */
    int clusters = -1, c2 = 0, c8 = 0, c12 = 0, np = -1, size = 0;
    cfg.numAttrs = 0;
    CHECK(cuOccupancyMaxActiveClusters(&clusters, f, &cfg));
    TRUE(clusters == 0);
    at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = 2;
    at[0].value.clusterDim.y = at[0].value.clusterDim.z = 1;
    cfg.numAttrs = 1;
    CHECK(cuOccupancyMaxActiveClusters(&c2, f, &cfg));
    at[0].value.clusterDim.x = 4;
    at[0].value.clusterDim.y = 2;
    CHECK(cuOccupancyMaxActiveClusters(&c8, f, &cfg));
    TRUE(c2 > 0 && c8 > 0 && c8 < c2);
    at[0].value.clusterDim.x = 12;
    at[0].value.clusterDim.y = 1;
    CHECK(cuFuncGetAttribute(&np, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, f));
    TRUE(np == 0);
    EXPECT(cuOccupancyMaxActiveClusters(&c12, f, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    CHECK(cuOccupancyMaxPotentialClusterSize(&size, f, &cfg));
    TRUE(size == 8);
    CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    CHECK(cuFuncGetAttribute(&np, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, f));
    TRUE(np == 1);
    CHECK(cuOccupancyMaxActiveClusters(&c12, f, &cfg));
    TRUE(c12 > 0 && c12 <= c8);
    CHECK(cuOccupancyMaxPotentialClusterSize(&size, f, &cfg));
    TRUE(size == 16);
    at[0].value.clusterDim.x = 32;
    c12 = -1;
    CHECK(cuOccupancyMaxActiveClusters(&c12, f, &cfg));
    TRUE(c12 == 0);
    at[0].value.clusterDim.x = 0;
    EXPECT(cuOccupancyMaxActiveClusters(&c12, f, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
    /* stream attributes read back; priority as created */
    CUstreamAttrValue v, r;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.num_bytes = 1 << 20;
    v.accessPolicyWindow.hitRatio = 0.5f;
    CHECK(cuStreamSetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
    CHECK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &r));
    TRUE(r.accessPolicyWindow.num_bytes == 1 << 20 && r.accessPolicyWindow.hitRatio == 0.5f);
    CHECK(cuStreamGetAttribute(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &r));
    TRUE(r.priority == -1);
    CUdevice sd = 7;
    CHECK(cuStreamGetDevice(s, &sd));
    TRUE(sd == 0);
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CHECK(cuThreadExchangeStreamCaptureMode(&mode));
    TRUE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK(cuThreadExchangeStreamCaptureMode(&mode));
    TRUE(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    CHECK(cuEventDestroy(done));
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(m));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CHECK(cuMemFree(c));
}

/* Stream memory operations: writes in queue order, a wait for a value that
 * holds, one that does not (refused, named), a batch. */
static void test_memops(void)
{
    CUdeviceptr p = dalloc(64);
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuMemsetD32Async(p, 0, 16, s));
    CHECK(cuStreamWriteValue32(s, p, 0xdeadbeefu, 0));
    CHECK(cuStreamWriteValue64(s, p + 8, 0x0123456789abcdefull, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
    CHECK(cuStreamWaitValue32(s, p, 0xdeadbeefu, CU_STREAM_WAIT_VALUE_EQ));
    CHECK(cuStreamWaitValue64(s, p + 8, 0x0123456789abcdeeull, CU_STREAM_WAIT_VALUE_GEQ));
    EXPECT(cuStreamWaitValue32(s, p, 0x1, CU_STREAM_WAIT_VALUE_EQ), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuStreamWriteValue32(s, p + 2, 1, 0), CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CUstreamBatchMemOpParams ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = p + 16;
    ops[0].writeValue.value = 7;
    ops[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    ops[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[2].waitValue.address = p + 16;
    ops[2].waitValue.value = 4;
    ops[2].waitValue.flags = CU_STREAM_WAIT_VALUE_AND;
    CHECK(cuStreamBatchMemOp(s, 3, ops, 0));
    uint32_t w[6];
    CHECK(cuMemcpyDtoH(w, p, sizeof w));
    uint64_t v64;
    memcpy(&v64, &w[2], 8);
    TRUE(w[0] == 0xdeadbeefu && w[1] == 0 && v64 == 0x0123456789abcdefull && w[4] == 7 && w[5] == 0);
    CHECK(cuStreamDestroy(s));
    CHECK(cuMemFree(p));
}

static void count_calls(void *p) { ++*(int *)p; }

/* Capture: memset a, memset b, c = a + b (madd), copy c to d, an event, a host
 * function; replayed twice; nothing of it runs during the capture. */
static void test_graph(CUmodule m)
{
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, m, "madd"));
    size_t bytes = (size_t)N * N * 4;
    CUdeviceptr a = dalloc(bytes), b = dalloc(bytes), c = dalloc(bytes), d = dalloc(bytes);
    CHECK(cuMemsetD32(c, 0, (size_t)N * N));
    CHECK(cuMemsetD32(d, 0, (size_t)N * N));
    CUstream s, other;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    EXPECT(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    EXPECT(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    CUgraph cg = NULL;
    const CUgraphNode *deps;
    size_t nd = 9;
    const CUgraphEdgeData *edges = (const CUgraphEdgeData *)1;
    CHECK(cuStreamGetCaptureInfo(s, &st, &id, &cg, &deps, &edges, &nd));
    TRUE(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && cg != NULL && nd == 0 && !edges);
    CHECK(cuStreamIsCapturing(other, &st));
    TRUE(st == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(cuMemsetD32Async(a, 0x3f800000u, (size_t)N * N, s)); /* 1.0f */
    CHECK(cuMemsetD32Async(b, 0x40400000u, (size_t)N * N, s)); /* 3.0f */
    unsigned nn = N;
    void *args[] = {&a, &b, &c, &nn};
    CHECK(cuLaunchKernel(f, 16, 1, 1, 256, 1, 1, 0, s, args, NULL));
    CHECK(cuMemcpyDtoDAsync(d, c, bytes, s));
    CUevent ev;
    CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventRecord(ev, s));
    int calls = 0;
    CHECK(cuLaunchHostFunc(s, count_calls, &calls));
    EXPECT(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g;
    EXPECT(cuStreamEndCapture(other, &g), CUDA_ERROR_ILLEGAL_STATE);
    CHECK(cuStreamEndCapture(s, &g));
    TRUE(g == cg);
    CHECK(cuStreamIsCapturing(s, &st));
    TRUE(st == CU_STREAM_CAPTURE_STATUS_NONE);
    float out[N];
    CHECK(cuMemcpyDtoH(out, d, sizeof out));
    TRUE(calls == 0 && out[0] == 0.0f && out[N - 1] == 0.0f); /* nothing ran while capturing */
    size_t nodes = 0;
    CHECK(cuGraphGetNodes(g, NULL, &nodes));
    TRUE(nodes == 6);
    CUgraphExec e;
    CHECK(cuGraphInstantiate(&e, g, 0));
    CHECK(cuGraphDestroy(g)); /* the instance keeps its own copy */
    CHECK(cuGraphLaunch(e, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(out, d, sizeof out));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != 4.0f;
    TRUE(bad == 0 && calls == 1);
    CHECK(cuMemsetD32(d, 0, (size_t)N * N));
    CHECK(cuGraphLaunch(e, s));
    CHECK(cuEventSynchronize(ev));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(out, d, sizeof out));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != 4.0f;
    TRUE(bad == 0 && calls == 2);
    CHECK(cuGraphExecDestroy(e));
    CHECK(cuEventDestroy(ev));
    CHECK(cuStreamDestroy(s));
    CHECK(cuStreamDestroy(other));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CHECK(cuMemFree(c));
    CHECK(cuMemFree(d));
}

/* A fatbin container of cubin entries for the given architectures (stand-in
 * payloads; ptx = 1: the first is PTX). */
static size_t fatbin_of(unsigned char *b, const unsigned *archs, int n, int ptx)
{
    const uint64_t payload = 64, ehdr = 0x40;
    uint64_t fat = (uint64_t)n * (ehdr + payload);
    memset(b, 0, 16 + fat);
    uint32_t magic = 0xBA55ED50u, eh = (uint32_t)ehdr;
    uint16_t ver = 1, hdr = 16;
    memcpy(b, &magic, 4);
    memcpy(b + 4, &ver, 2);
    memcpy(b + 6, &hdr, 2);
    memcpy(b + 8, &fat, 8);
    for (int i = 0; i < n; i++) {
        unsigned char *e = b + 16 + (size_t)i * (ehdr + payload);
        uint16_t kind = ptx && i == 0 ? 1 : 2;
        memcpy(e, &kind, 2);
        memcpy(e + 4, &eh, 4);
        memcpy(e + 8, &payload, 8);
        memcpy(e + 0x1c, &archs[i], 4);
        memcpy(e + 0x40, "\177ELF", 4);
    }
    return 16 + fat;
}
static size_t fatbin_for(unsigned char *b, unsigned arch) { return fatbin_of(b, &arch, 1, 0); }

static void test_lazy(void)
{
    static unsigned char img[256];
    fatbin_for(img, 100); /* sm_100 only */
    CUlibrary lib;
    CHECK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k;
    CHECK(cuLibraryGetKernel(&k, lib, "gemm_sm100"));
    CUfunction f;
    CHECK(cuKernelGetFunction(&f, k));
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(cuLibraryUnload(lib));
    CUmodule m;
    EXPECT(cuModuleLoadData(&m, img), CUDA_ERROR_NO_BINARY_FOR_GPU); /* eager: refused at once */
    /* code for this GPU: carried to the daemon at the first launch, where the
     * simulated device refuses it */
    fatbin_for(img, 90);
    CHECK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
    CHECK(cuLibraryGetKernel(&k, lib, "gemm_sm90"));
    CHECK(cuKernelGetFunction(&f, k));
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(cuLibraryUnload(lib));
    /* a library that runs: loaded at its first launch, which computes; a
     * kernel it lacks is NOT_FOUND at its launch */
    static const char simmod[] = "SIMMOD\nvecadd=madd\n";
    CHECK(cuLibraryLoadData(&lib, simmod, NULL, NULL, 0, NULL, NULL, 0));
    CUmoduleLoadingMode mode;
    CHECK(cuModuleGetLoadingMode(&mode));
    TRUE(mode == CU_MODULE_LAZY_LOADING);
    CHECK(cuLibraryGetKernel(&k, lib, "nosuch"));
    CHECK(cuKernelGetFunction(&f, k));
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NOT_FOUND);
    CHECK(cuLibraryGetKernel(&k, lib, "vecadd"));
    CHECK(cuKernelGetFunction(&f, k));
    size_t bytes = (size_t)N * N * 4;
    CUdeviceptr a = dalloc(bytes), b = dalloc(bytes), c = dalloc(bytes);
    CHECK(cuMemsetD32(a, 0x40a00000u, (size_t)N * N)); /* 5.0f */
    CHECK(cuMemsetD32(b, 0x3f000000u, (size_t)N * N)); /* 0.5f */
    unsigned nn = N;
    unsigned char buf[28]; /* a SIMMOD image has no cubin layout: the packed form */
    memcpy(buf, &a, 8);
    memcpy(buf + 8, &b, 8);
    memcpy(buf + 16, &c, 8);
    memcpy(buf + 24, &nn, 4);
    size_t len = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len, CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(f, 16, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    float out[N];
    CHECK(cuMemcpyDtoH(out, c, sizeof out));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != 5.5f;
    TRUE(bad == 0);
    CHECK(cuLibraryUnload(lib));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CHECK(cuMemFree(c));
}

/* The recorded registrations (tests/cudashim_torch_fatbins.txt): each line's
 * COUNT containers registered as libraries; returns how many. */
static int test_record(const char *path)
{
    FILE *f = fopen(path, "r");
    TRUE(f != NULL);
    if (!f)
        return 0;
    static unsigned char img[16 + 16 * 128];
    char line[512];
    int total = 0;
    CUlibrary first_nocode = NULL, first_sm90 = NULL;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *p = line, *end;
        long count = strtol(p, &end, 10);
        unsigned archs[16];
        int n = 0, ptx = 0, has90 = 0;
        for (p = end; n < 16;) {
            while (*p == ' ')
                p++;
            unsigned a;
            if (sscanf(p, "sm_%u", &a) == 1 || (sscanf(p, "ptx%u", &a) == 1 && n == 0 && (ptx = 1))) {
                archs[n++] = a;
                has90 |= a == 90;
            } else
                break;
            while (*p && *p != ' ' && *p != '\n')
                p++;
        }
        TRUE(count > 0 && n > 0);
        fatbin_of(img, archs, n, ptx);
        for (long i = 0; i < count; i++) {
            CUlibrary lib;
            CHECK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
            if (!has90 && !first_nocode)
                first_nocode = lib;
            if (has90 && !first_sm90)
                first_sm90 = lib;
            total++;
        }
    }
    fclose(f);
    /* a kernel of each kind: no code here fails without the daemon; sm_90 code
     * is carried, and the simulated device refuses it */
    CUkernel k;
    CUfunction fn;
    CUlibrary libs[2] = {first_nocode, first_sm90};
    for (int i = 0; i < 2; i++) {
        TRUE(libs[i] != NULL);
        if (!libs[i])
            continue;
        CHECK(cuLibraryGetKernel(&k, libs[i], "recorded_kernel"));
        CHECK(cuKernelGetFunction(&fn, k));
        EXPECT(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: cudashim_legacy DIR [RECORD] (DIR with builtin.img and vecadd.img)\n");
        return 2;
    }
    char p1[4096], p2[4096];
    snprintf(p1, sizeof p1, "%s/builtin.img", argv[1]);
    snprintf(p2, sizeof p2, "%s/vecadd.img", argv[1]);
    check_primary_context();
    CUmodule m, vec;
    EXPECT(cuModuleLoad(&m, "/nonexistent/k.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
    CHECK(cuModuleLoad(&m, p1));
    CHECK(cuModuleLoad(&vec, p2));
    test_param_api(m, vec);
    test_contexts();
    test_pitch();
    test_memory();
    test_link_launch("SIMMOD\nvecadd=madd\n");
    test_lazy();
    test_graph(m);
    test_memops();
    if (argc == 3) {
        int n = test_record(argv[2]);
        TRUE(n > 1024); /* over the daemon's per-client module limit: lazily */
        printf("registered %d\n", n);
    }
    CHECK(cuModuleUnload(vec));
    CHECK(cuModuleUnload(m));
    /* last (the fault ends the context): a device fault is reported as the
     * daemon's driver named it, not as a generic launch failure */
    CHECK(cuModuleLoad(&m, p1));
    CUfunction fault;
    CHECK(cuModuleGetFunction(&fault, m, "fault"));
    CHECK(cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    if (fails) {
        fprintf(stderr, "%d check(s) failed\n", fails);
        return 1;
    }
    printf("ok\n");
    return 0;
}
