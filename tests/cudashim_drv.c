/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_drv.c: a Driver API program, written as CUDA users write them,
 * linked against libcuda.so.1 (gpuos's, through `gpuos run`), for
 * tests/t_cudashim.sh on the simulated device. Kernels come from the daemon's
 * built-in module through gpuos's escape image "gpuos-builtin" (the simulated
 * device cannot run a fatbin).
 *   cudashim_drv all QUOTA_BYTES   allocations, copies of every kind, memset,
 *                                  streams, events, launches, error paths; every
 *                                  result byte-exact; prints "ok" at the end
 *   cudashim_drv oom               allocates 1 MB blocks until refused; prints
 *                                  the error name and the bytes it got
 *   cudashim_drv sleep MS          busy for MS ms in 10 ms built-in sleep kernels
 *   cudashim_drv attrs             a few device attributes, one line
 *   cudashim_drv noinit            cuMemAlloc before cuInit
 *   cudashim_drv oversize          copies and memsets larger than the buffers or
 *                                  with sizes that wrap (issue 23.5): every one
 *                                  CUDA_ERROR_INVALID_VALUE, no crash, the bytes
 *                                  intact; prints "oversize ok N"
 * Exit 0 only when every check passed; each failure names itself. */
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudashim_check.h"


static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (unsigned char)(x >> 24);
    }
}

static void test_devices(unsigned long long quota)
{
    int n = 0, v = 0, major = 0;
    char name[256];
    size_t total = 0;
    CUdevice d;
    CHECK(cuDeviceGetCount(&n));
    TRUE(n == 1);
    EXPECT(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDeviceGetName(name, sizeof name, d));
    TRUE(strlen(name) > 0);
    CHECK(cuDeviceTotalMem(&total, d));
    TRUE(total == quota); /* the vGPU's share is the device total */
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    TRUE(major == 9);
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
    TRUE(v > 0);
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d));
    TRUE(v == 32);
    EXPECT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, d), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuDriverGetVersion(&v));
    TRUE(v >= 12000);
    size_t fr = 0, tot = 0;
    CHECK(cuMemGetInfo(&fr, &tot));
    TRUE(tot == quota && fr <= tot);
}

/* Copies of every kind, byte-exact: pageable sync and async, shared-host
 * (cuMemHostAlloc) async, device to device, unified cuMemcpy, unaligned. */
static void test_copies(void)
{
    const size_t n = (3u << 20) + 77; /* several chunks, odd tail */
    unsigned char *src = malloc(n), *dst = malloc(n), *pin = NULL, *pin2 = NULL;
    CUdeviceptr a, b;
    TRUE(src && dst);
    pattern(src, n, 1);
    CHECK(cuMemAlloc(&a, n));
    CHECK(cuMemAlloc(&b, n));
    CHECK(cuMemcpyHtoD(a, src, n));
    CHECK(cuMemcpyDtoD(b, a, n));
    memset(dst, 0, n);
    CHECK(cuMemcpyDtoH(dst, b, n));
    TRUE(!memcmp(src, dst, n));
    /* unaligned pieces */
    memset(dst, 0, n);
    CHECK(cuMemcpyDtoH(dst + 3, a + 5, 1001));
    TRUE(!memcmp(dst + 3, src + 5, 1001) && dst[2] == 0 && dst[1004] == 0);
    /* unified: the library tells host from device */
    memset(dst, 0, n);
    CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)dst, a, n));
    TRUE(!memcmp(src, dst, n));
    pattern(src, n, 2);
    CHECK(cuMemcpy(a, (CUdeviceptr)(uintptr_t)src, n));
    CHECK(cuMemcpy(b, a, n));
    memset(dst, 0, n);
    CHECK(cuMemcpyDtoH(dst, b, n));
    TRUE(!memcmp(src, dst, n));
    /* async on a stream, from pinned (shared) memory and from pageable */
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemHostAlloc((void **)&pin, n, 0));
    CHECK(cuMemAllocHost((void **)&pin2, n));
    pattern(pin, n, 3);
    CHECK(cuMemcpyHtoDAsync(a, pin, n, s));
    CHECK(cuMemcpyDtoDAsync(b, a, n, s));
    CHECK(cuMemcpyDtoHAsync(pin2, b, n, s));
    CHECK(cuStreamSynchronize(s));
    TRUE(!memcmp(pin, pin2, n));
    pattern(src, n, 4);
    CHECK(cuMemcpyHtoDAsync(a, src, n, s));
    memset(dst, 0, n);
    CHECK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, a, n, s));
    CHECK(cuStreamSynchronize(s));
    TRUE(!memcmp(src, dst, n));
    unsigned f = 1;
    CHECK(cuMemHostGetFlags(&f, pin));
    EXPECT(cuMemFreeHost(src), CUDA_ERROR_INVALID_VALUE); /* not from cuMemHostAlloc */
    CHECK(cuMemFreeHost(pin));
    CHECK(cuMemFreeHost(pin2));
    /* 2D: a 100 x 37 window of a host matrix into pitched device memory and back */
    {
        size_t pitch = 0, w = 100, hgt = 37, hp = 1000;
        CUdeviceptr p2;
        CHECK(cuMemAllocPitch(&p2, &pitch, w, hgt, 4));
        TRUE(pitch >= w && pitch % 256 == 0);
        pattern(src, n, 5);
        memset(dst, 0, n);
        CUDA_MEMCPY2D c = {.srcXInBytes = 7, .srcY = 3, .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src,
                           .srcPitch = hp, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = p2,
                           .dstPitch = pitch, .WidthInBytes = w, .Height = hgt};
        CHECK(cuMemcpy2D(&c));
        CUDA_MEMCPY2D back = {.srcMemoryType = CU_MEMORYTYPE_UNIFIED, .srcDevice = p2, .srcPitch = pitch,
                              .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst, .dstPitch = w,
                              .WidthInBytes = w, .Height = hgt};
        CHECK(cuMemcpy2DAsync(&back, s));
        CHECK(cuStreamSynchronize(s));
        int ok2 = 1;
        for (size_t y = 0; y < hgt; y++)
            ok2 &= !memcmp(dst + y * w, src + (3 + y) * hp + 7, w);
        TRUE(ok2);
        CHECK(cuMemFree(p2));
    }
    /* pointer attributes and ranges */
    CUdeviceptr base = 0;
    size_t sz = 0;
    CHECK(cuMemGetAddressRange(&base, &sz, a + 100));
    TRUE(base == a && sz == n);
    unsigned mt = 0;
    CHECK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 7));
    TRUE(mt == CU_MEMORYTYPE_DEVICE);
    CHECK(cuStreamDestroy(s));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    EXPECT(cuMemFree(a), CUDA_ERROR_INVALID_VALUE); /* double free */
    free(src);
    free(dst);
}

/* memset D8/D16/D32, sync and async, with the bytes around left alone. */
static void test_memset(void)
{
    const size_t n = 1 << 20;
    unsigned char *h = malloc(n);
    CUdeviceptr a;
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuMemAlloc(&a, n));
    CHECK(cuMemsetD8(a, 0xab, n));
    CHECK(cuMemsetD8(a + 1, 0x11, 3));
    CHECK(cuMemsetD16(a + 16, 0x2233, 5));
    CHECK(cuMemsetD32(a + 64, 0x44556677u, 7));
    CHECK(cuMemsetD8Async(a + 200, 0x99, 1000, s));
    CHECK(cuMemsetD16Async(a + 2000, 0xbeef, 300, s));
    CHECK(cuMemsetD32Async(a + 4096, 0xcafef00du, (n - 4096) / 4, s));
    CHECK(cuStreamSynchronize(s));
    /* large and unaligned: the device kernel for the middle, host copies at the ends */
    CHECK(cuMemsetD8(a + 500001, 0x5c, 100001));
    CHECK(cuMemsetD16(a + 700002, 0x1234, 70001));
    CHECK(cuMemcpyDtoH(h, a, n));
    unsigned char *want = malloc(n);
    memset(want, 0xab, n);
    memset(want + 1, 0x11, 3);
    for (int i = 0; i < 5; i++) {
        uint16_t v = 0x2233;
        memcpy(want + 16 + 2 * i, &v, 2);
    }
    for (int i = 0; i < 7; i++) {
        uint32_t v = 0x44556677u;
        memcpy(want + 64 + 4 * i, &v, 4);
    }
    memset(want + 200, 0x99, 1000);
    for (int i = 0; i < 300; i++) {
        uint16_t v = 0xbeef;
        memcpy(want + 2000 + 2 * i, &v, 2);
    }
    for (size_t i = 0; i < (n - 4096) / 4; i++) {
        uint32_t v = 0xcafef00du;
        memcpy(want + 4096 + 4 * i, &v, 4);
    }
    memset(want + 500001, 0x5c, 100001);
    for (int i = 0; i < 70001; i++) {
        uint16_t v = 0x1234;
        memcpy(want + 700002 + 2 * i, &v, 2);
    }
    TRUE(!memcmp(h, want, n));
    EXPECT(cuMemsetD32(a + 2, 1, 1), CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CHECK(cuMemFree(a));
    CHECK(cuStreamDestroy(s));
    free(h);
    free(want);
}

/* A host function: reads what a copy queued before it wrote into pinned
 * memory, writes what a copy queued after it takes, and may call no CUDA. */
static struct {
    uint32_t *pin; /* [0]: in, [1]: out */
    pthread_t caller, ran_in;
    CUresult inside;
} hf;
static void host_fn(void *arg)
{
    (void)arg;
    hf.pin[1] = hf.pin[0] + 1;
    hf.ran_in = pthread_self();
    hf.inside = cuCtxSynchronize();
}

/* A host function that waits (up to 5 s) until the caller says go, then
 * writes its value into pinned memory. */
struct waiting_fn {
    volatile int go, waited;
    unsigned *pin, value;
};
static void waiting_fn(void *arg)
{
    struct waiting_fn *w = arg;
    for (int i = 0; i < 5000 && !w->go; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    w->waited = w->go;
    *w->pin = w->value;
}

/* The built-in module: fill through kernelParams and through the packed
 * buffer, a cluster launch with cuLaunchKernelEx, sleep timed by events. */
static void test_launch(void)
{
    CUmodule m;
    CUfunction fill, sleepk, empty;
    CHECK(cuModuleLoadData(&m, "gpuos-builtin"));
    CHECK(cuModuleGetFunction(&fill, m, "fill"));
    CHECK(cuModuleGetFunction(&sleepk, m, "sleep_ns"));
    CHECK(cuModuleGetFunction(&empty, m, "empty"));
    EXPECT(cuModuleGetFunction(&empty, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    const size_t words = 4096;
    CUdeviceptr a;
    CHECK(cuMemAlloc(&a, words * 4));
    CHECK(cuMemsetD32(a, 0, words));
    unsigned v = 0x5eed1234u, pad = 0;
    unsigned long long count = words / 2;
    void *args[] = {&a, &v, &pad, &count};
    CHECK(cuLaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    /* second half through CU_LAUNCH_PARAM_BUFFER_POINTER */
    struct {
        unsigned long long p;
        unsigned v, pad;
        unsigned long long n;
    } pk = {a + words * 2, 0x0badf00du, 0, words / 2};
    size_t pks = sizeof pk;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &pk, CU_LAUNCH_PARAM_BUFFER_SIZE, &pks, CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
    uint32_t *h = malloc(words * 4);
    CHECK(cuMemcpyDtoH(h, a, words * 4));
    int good = 1;
    for (size_t i = 0; i < words; i++)
        good &= h[i] == (i < words / 2 ? 0x5eed1234u : 0x0badf00du);
    TRUE(good);
    /* cluster launch */
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    at.value.clusterDim.x = 2;
    at.value.clusterDim.y = 1;
    at.value.clusterDim.z = 1;
    CUlaunchConfig cfg = {.gridDimX = 8, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1,
                          .blockDimZ = 1, .attrs = &at, .numAttrs = 1};
    CHECK(cuLaunchKernelEx(&cfg, empty, NULL, NULL));
    CHECK(cuCtxSynchronize());
    /* more launches without a synchronise than the daemon queues for a client */
    for (int i = 0; i < 5000; i++)
        CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    /* events around a 20 ms sleep on a stream */
    CUstream s;
    CUevent e0, e1;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&e0, 0));
    CHECK(cuEventCreate(&e1, 0));
    unsigned long long ns = 20000000ull;
    void *sargs[] = {&ns};
    CHECK(cuEventRecord(e0, s));
    CHECK(cuLaunchKernel(sleepk, 1, 1, 1, 1, 1, 1, 0, s, sargs, NULL));
    CHECK(cuEventRecord(e1, s));
    CHECK(cuEventSynchronize(e1));
    CHECK(cuEventQuery(e1));
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    TRUE(ms >= 19.5f && ms < 2000.0f);
    /* GPU timestamps: a record is queued work (it does not wait for the 200 ms
     * kernel before it), and the elapsed time is the device's, not the host's */
    struct timespec h0, h1;
    ns = 200000000ull;
    CHECK(cuEventRecord(e0, s));
    clock_gettime(CLOCK_MONOTONIC, &h0);
    CHECK(cuLaunchKernel(sleepk, 1, 1, 1, 1, 1, 1, 0, s, sargs, NULL));
    CHECK(cuEventRecord(e1, s));
    clock_gettime(CLOCK_MONOTONIC, &h1);
    double host_ms = (double)(h1.tv_sec - h0.tv_sec) * 1e3 + (double)(h1.tv_nsec - h0.tv_nsec) / 1e6;
    TRUE(host_ms < 100.0);
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    TRUE(ms >= 199.5f && ms < 2000.0f);
    /* an event without timing still waits for the work before it */
    CUevent e3;
    CHECK(cuEventCreate(&e3, CU_EVENT_DISABLE_TIMING));
    ns = 100000000ull;
    clock_gettime(CLOCK_MONOTONIC, &h0);
    CHECK(cuLaunchKernel(sleepk, 1, 1, 1, 1, 1, 1, 0, s, sargs, NULL));
    CHECK(cuEventRecord(e3, s));
    CHECK(cuEventSynchronize(e3));
    clock_gettime(CLOCK_MONOTONIC, &h1);
    host_ms = (double)(h1.tv_sec - h0.tv_sec) * 1e3 + (double)(h1.tv_nsec - h0.tv_nsec) / 1e6;
    TRUE(host_ms >= 99.0);
    EXPECT(cuEventElapsedTime(&ms, e3, e3), CUDA_ERROR_INVALID_HANDLE);
    /* a query does not wait: NOT_READY while the work before the record runs;
     * a synchronise of the event waits for that work, not for what is queued
     * behind it (each once drained the whole queue: JAX at 0.77 x native) */
    ns = 200000000ull;
    clock_gettime(CLOCK_MONOTONIC, &h0);
    CHECK(cuLaunchKernel(sleepk, 1, 1, 1, 1, 1, 1, 0, s, sargs, NULL));
    CHECK(cuEventRecord(e3, s));
    CHECK(cuEventRecord(e1, s));
    EXPECT(cuEventQuery(e3), CUDA_ERROR_NOT_READY);
    EXPECT(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
    ns = 800000000ull;
    CHECK(cuLaunchKernel(sleepk, 1, 1, 1, 1, 1, 1, 0, s, sargs, NULL));
    CHECK(cuEventSynchronize(e3));
    CHECK(cuEventSynchronize(e1));
    clock_gettime(CLOCK_MONOTONIC, &h1);
    host_ms = (double)(h1.tv_sec - h0.tv_sec) * 1e3 + (double)(h1.tv_nsec - h0.tv_nsec) / 1e6;
    CHECK(cuEventQuery(e3));
    CHECK(cuEventQuery(e1));
    CHECK(cuCtxSynchronize());
    clock_gettime(CLOCK_MONOTONIC, &h0);
    double rest_ms = (double)(h0.tv_sec - h1.tv_sec) * 1e3 + (double)(h0.tv_nsec - h1.tv_nsec) / 1e6;
    TRUE(host_ms >= 199.0 && rest_ms >= 700.0); /* the 800 ms kernel still ran after both */
    EXPECT(cuStreamQuery(s), CUDA_SUCCESS); /* (a stream query waits for the queue) */
    CHECK(cuEventDestroy(e3));
    /* no stream is ever capturing (PyTorch asks before its first kernel) */
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    cuuint64_t cid = 7;
    CHECK(cuStreamIsCapturing(s, &cs));
    TRUE(cs == CU_STREAM_CAPTURE_STATUS_NONE);
    cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CHECK(cuStreamGetCaptureInfo(s, &cs, &cid, NULL, NULL, NULL, NULL));
    TRUE(cs == CU_STREAM_CAPTURE_STATUS_NONE && cid == 0);
    EXPECT(cuStreamIsCapturing(s, NULL), CUDA_ERROR_INVALID_VALUE);
    /* order across streams: work on s2 after an event of s */
    CUstream s2;
    CHECK(cuStreamCreate(&s2, 0));
    CHECK(cuMemsetD32Async(a, 7, words, s));
    CHECK(cuEventRecord(e0, s));
    CHECK(cuStreamWaitEvent(s2, e0, 0));
    CHECK(cuMemcpyDtoHAsync(h, a, words * 4, s2));
    CHECK(cuStreamSynchronize(s2));
    good = 1;
    for (size_t i = 0; i < words; i++)
        good &= h[i] == 7;
    TRUE(good);
    /* a host function runs after the work queued before it (here behind a
     * 100 ms kernel, without the caller waiting for it: in another thread) and
     * before the work queued after it; CUDA calls inside it are refused */
    CHECK(cuMemHostAlloc((void **)&hf.pin, 8, 0));
    hf.pin[0] = hf.pin[1] = 0;
    hf.caller = pthread_self();
    CHECK(cuMemsetD32Async(a, 9, words, s));
    ns = 100000000ull;
    clock_gettime(CLOCK_MONOTONIC, &h0);
    CHECK(cuLaunchKernel(sleepk, 1, 1, 1, 1, 1, 1, 0, s, sargs, NULL));
    CHECK(cuMemcpyDtoHAsync(&hf.pin[0], a + 100, 4, s));
    CHECK(cuLaunchHostFunc(s, host_fn, NULL));
    CHECK(cuMemcpyHtoDAsync(a + 200, &hf.pin[1], 4, s));
    clock_gettime(CLOCK_MONOTONIC, &h1);
    host_ms = (double)(h1.tv_sec - h0.tv_sec) * 1e3 + (double)(h1.tv_nsec - h0.tv_nsec) / 1e6;
    TRUE(host_ms < 90.0);
    unsigned got = 0;
    CHECK(cuMemcpyDtoH(&got, a + 200, 4));
    TRUE(hf.pin[1] == 10 && got == 10);
    TRUE(!pthread_equal(hf.ran_in, hf.caller) && hf.inside == CUDA_ERROR_NOT_PERMITTED);
    CHECK(cuMemFreeHost(hf.pin));
    /* a host function on a stream of the program's own (JAX's callback
     * stream) holds back the work queued after it on that stream and on the
     * legacy stream, not another stream's: here it waits until the other
     * stream's memset is seen done through an event, which never happens when
     * it holds back everything queued after it */
    {
        CUstream sa, sb;
        CUevent ea;
        unsigned *pin;
        CHECK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
        CHECK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
        CHECK(cuEventCreate(&ea, CU_EVENT_DISABLE_TIMING));
        CHECK(cuMemHostAlloc((void **)&pin, 8, 0));
        pin[0] = pin[1] = 0;
        struct waiting_fn w1 = {0, 0, &pin[0], 42}, w2 = {1, 0, &pin[1], 43};
        CHECK(cuLaunchHostFunc(sb, waiting_fn, &w1));
        CHECK(cuMemsetD32Async(a + 304, 5, 1, sa));
        CHECK(cuEventRecord(ea, sa));
        CUresult q = CUDA_ERROR_NOT_READY;
        for (int i = 0; i < 1500 && q == CUDA_ERROR_NOT_READY; i++) { /* (the event's patience is 2 s) */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            q = cuEventQuery(ea);
        }
        TRUE(q == CUDA_SUCCESS); /* the other stream's work ran while the function waited */
        w1.go = 1;
        CHECK(cuMemcpyHtoDAsync(a + 308, &pin[0], 4, sb)); /* after it on its stream: its value */
        CHECK(cuLaunchHostFunc(sb, waiting_fn, &w2));
        CHECK(cuMemcpyHtoDAsync(a + 312, &pin[1], 4, NULL)); /* the legacy stream waits for it too */
        CHECK(cuStreamSynchronize(sb));
        CHECK(cuCtxSynchronize());
        unsigned got3[3] = {0, 0, 0};
        CHECK(cuMemcpyDtoH(got3, a + 304, sizeof got3));
        TRUE(w1.waited && got3[0] == 5 && got3[1] == 42 && got3[2] == 43);
        CHECK(cuMemFreeHost(pin));
        CHECK(cuEventDestroy(ea));
        CHECK(cuStreamDestroy(sa));
        CHECK(cuStreamDestroy(sb));
    }
    /* error paths on handles */
    CUevent e2;
    CHECK(cuEventCreate(&e2, 0));
    EXPECT(cuEventElapsedTime(&ms, e0, e2), CUDA_ERROR_INVALID_HANDLE); /* e2 never recorded */
    CHECK(cuEventDestroy(e2));
    EXPECT(cuEventRecord(e2, s), CUDA_ERROR_INVALID_HANDLE);          /* destroyed */
    CHECK(cuStreamDestroy(s2));
    EXPECT(cuStreamSynchronize(s2), CUDA_ERROR_INVALID_HANDLE);       /* destroyed */
    EXPECT(cuModuleGetFunction(&empty, NULL, "fill"), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuLaunchKernel(fill, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    int regs = -1;
    CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fill));
    TRUE(regs == 1024);
    int occ = 0;
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fill, 256, 0));
    TRUE(occ >= 1 && occ <= 32);
    CHECK(cuEventDestroy(e0));
    CHECK(cuEventDestroy(e1));
    CHECK(cuStreamDestroy(s));
    CHECK(cuMemFree(a));
    CHECK(cuModuleUnload(m));
    EXPECT(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    /* malformed image (the simulated device's text format, naming no kernel) */
    EXPECT(cuModuleLoadData(&m, "SIMMOD\nk=no_such_builtin\n"), CUDA_ERROR_INVALID_IMAGE);
    free(h);
}

/* Entry points: the table, an unimplemented one, an unknown name, errors. */
static void test_entry_points(void)
{
    void *p = NULL, *q = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CHECK(cuGetProcAddress("cuMemAlloc", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    q = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    TRUE(p && p == q && st == CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK(cuGetProcAddress("cuMemcpyHtoD", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    TRUE(p && p == dlsym(RTLD_DEFAULT, "cuMemcpyHtoD_v2_ptds"));
    /* a caller built for CUDA 11.0 gets cuCtxCreate with the signature it knows */
    CHECK(cuGetProcAddress("cuCtxCreate", &p, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    TRUE(p && p == dlsym(RTLD_DEFAULT, "cuCtxCreate_v2"));
    CHECK(cuGetProcAddress("cuCtxCreate", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    TRUE(p && p == dlsym(RTLD_DEFAULT, "cuCtxCreate_v4"));
    /* the signature a caller of each CUDA version was built for (cudaTypedefs.h):
     * a v2 caller of cuStreamGetCtx reads the green context the v1 never writes */
    static const struct {
        const char *base;
        int version;
        unsigned long long flags;
        const char *want;
    } versioned[] = {
        {"cuStreamGetCtx", 12040, 0, "cuStreamGetCtx"},
        {"cuStreamGetCtx", 12050, 0, "cuStreamGetCtx_v2"},
        {"cuCtxGetDevice", 12090, 0, "cuCtxGetDevice"},
        {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
        {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
        {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
        {"cuStreamBeginCapture", 10010, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuStreamBeginCapture_v2_ptsz"},
        {"cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo"},
        {"cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2"},
        {"cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3"},
        {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
        {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
        {"cuMemcpyBatchAsync", 12080, 0, "cuMemcpyBatchAsync"},
        {"cuMemcpyBatchAsync", 13000, 0, "cuMemcpyBatchAsync_v2"},
        {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
    };
    for (size_t i = 0; i < sizeof versioned / sizeof versioned[0]; i++) {
        p = NULL;
        CHECK(cuGetProcAddress(versioned[i].base, &p, versioned[i].version, versioned[i].flags, &st));
        q = dlsym(RTLD_DEFAULT, versioned[i].want);
        if (!p || p != q) {
            fprintf(stderr, "cuGetProcAddress %s at %d: not %s\n", versioned[i].base, versioned[i].version,
                    versioned[i].want);
            TRUE(0);
        }
    }
    /* a name newer than the caller's CUDA: not found, the version too low */
    EXPECT(cuGetProcAddress("cuMemAllocAsync", &p, 11010, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_ERROR_NOT_FOUND);
    TRUE(p == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(cuGetProcAddress("cuNoSuchEntryPoint", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st),
           CUDA_ERROR_NOT_FOUND);
    TRUE(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* an entry point gpuos does not implement: NOT_SUPPORTED, named on stderr once */
    EXPECT(cuTexObjectDestroy(1), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuTexObjectDestroy(1), CUDA_ERROR_NOT_SUPPORTED);
    CUresult (*td)(CUtexObject) = NULL;
    CHECK(cuGetProcAddress("cuTexObjectDestroy", (void **)&td, 13000, 0, &st));
    TRUE(td && td(1) == CUDA_ERROR_NOT_SUPPORTED);
    const char *s = NULL;
    CHECK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    TRUE(s && !strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY"));
    CHECK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    TRUE(s && !strcmp(s, "invalid argument"));
    EXPECT(cuGetErrorName((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
    /* contexts: an ordinary one, then back to the primary */
    CUcontext c, cur;
    CUdevice d;
    CHECK(cuCtxCreate(&c, NULL, 0, 0));
    CHECK(cuCtxGetCurrent(&cur));
    TRUE(cur == c);
    CHECK(cuCtxGetDevice(&d));
    TRUE(d == 0);
    /* push/pop restore the context below */
    CUcontext pri, popped;
    CHECK(cuDevicePrimaryCtxRetain(&pri, 0));
    CHECK(cuCtxPushCurrent(pri));
    CHECK(cuCtxGetCurrent(&cur));
    TRUE(cur == pri);
    CHECK(cuCtxPopCurrent(&popped));
    CHECK(cuCtxGetCurrent(&cur));
    TRUE(popped == pri && cur == c);
    CHECK(cuCtxDestroy(c));
    EXPECT(cuCtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuCtxGetCurrent(&cur));
    TRUE(cur == NULL);
    EXPECT(cuMemGetInfo(NULL, NULL), CUDA_ERROR_INVALID_CONTEXT);
}

static int oom(void)
{
    CUdeviceptr p;
    CUresult r;
    unsigned long long got = 0;
    while ((r = cuMemAlloc(&p, 1 << 20)) == CUDA_SUCCESS)
        got += 1 << 20;
    const char *n = NULL;
    cuGetErrorName(r, &n);
    printf("%s %llu\n", n ? n : "?", got);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}

/* The result of an asynchronous call, or of the synchronise after it. */
static CUresult async_result(CUresult r) { return r ? r : cuCtxSynchronize(); }

static int oversize(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    /* a 4 KB host buffer with nothing mapped after it */
    unsigned char *h = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TRUE(h != MAP_FAILED && !mprotect(h + pg, (size_t)pg, PROT_NONE));
    unsigned char back[4096];
    pattern(h, 4096, 7);
    CUdeviceptr d, d2;
    CHECK(cuMemAlloc(&d, 4096));
    CHECK(cuMemAlloc(&d2, 4096));
    CHECK(cuMemcpyHtoD(d, h, 4096));
    const size_t sizes[] = {(size_t)1 << 40, SIZE_MAX, SIZE_MAX - 4095, (size_t)1 << 20, 4097};
    int n = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++, n += 9) {
        size_t s = sizes[k];
        EXPECT(cuMemcpyHtoD(d, h, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT(async_result(cuMemcpyHtoDAsync(d, h, s, NULL)), CUDA_ERROR_INVALID_VALUE);
        EXPECT(cuMemcpyDtoH(h, d, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT(async_result(cuMemcpyDtoHAsync(h, d, s, NULL)), CUDA_ERROR_INVALID_VALUE);
        EXPECT(cuMemcpyDtoD(d2, d, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT(cuMemcpy(d, (CUdeviceptr)(uintptr_t)h, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT(cuMemcpyHtoD(d + 4095, h + 4095, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT(cuMemsetD8(d, 0x5a, s), CUDA_ERROR_INVALID_VALUE);
        EXPECT(async_result(cuMemsetD32Async(d, 0x5a5a5a5a, s, NULL)), CUDA_ERROR_INVALID_VALUE);
    }
    /* counts whose bytes wrap 2^64: nothing set, never a success */
    EXPECT(cuMemsetD32(d, 0, ((size_t)1 << 62) + 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemsetD16(d, 0, (size_t)1 << 63), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemsetD32(d, 0, (size_t)1 << 62), CUDA_ERROR_INVALID_VALUE);
    /* 2D: rows that wrap, a pitch times height past the allocation */
    CUDA_MEMCPY2D c2 = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = h, .srcPitch = 64,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d, .dstPitch = 64,
                        .WidthInBytes = 64, .Height = SIZE_MAX / 32};
    EXPECT(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    c2.Height = 1;
    c2.srcY = SIZE_MAX / 16;
    EXPECT(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    c2.srcY = 0;
    c2.Height = 4096; /* 256 KB of rows: past the 4 KB allocation and the host buffer */
    EXPECT(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    n += 6;
    /* nothing was written */
    unsigned char want[4096];
    pattern(want, 4096, 7);
    TRUE(!memcmp(h, want, 4096));
    CHECK(cuMemcpyDtoH(back, d, 4096));
    TRUE(!memcmp(back, want, 4096));
    CHECK(cuCtxSynchronize());
    if (fails) {
        fprintf(stderr, "%d checks failed\n", fails);
        return 1;
    }
    printf("oversize ok %d\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cudashim_drv all QUOTA | oom | sleep MS | fpe\n");
        return 2;
    }
    if (!strcmp(argv[1], "fpe")) { /* a library's integer division by zero, after cuInit */
        cuInit(0);
        volatile int one = 1, zero = 0; /* both read at run time: a real idiv, not 1/x folded to a compare */
        return one / zero;
    }
    if (!strcmp(argv[1], "noinit")) {
        CUdeviceptr p;
        return cuMemAlloc(&p, 16) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1;
    }
    CUcontext c = check_primary_context();
    if (!strcmp(argv[1], "all") && argc == 3) {
        test_devices(strtoull(argv[2], NULL, 0));
        test_copies();
        test_memset();
        test_launch();
        test_entry_points();
        CHECK(cuCtxSetCurrent(c));
        if (fails) {
            fprintf(stderr, "%d checks failed\n", fails);
            return 1;
        }
        printf("ok\n");
        return 0;
    }
    if (!strcmp(argv[1], "oom"))
        return oom();
    if (!strcmp(argv[1], "oversize"))
        return oversize();
    if (!strcmp(argv[1], "attrs")) {
        int sms = 0, l2 = 0, ccmaj = 0, ccmin = 0, clk = 0;
        CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
        CHECK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0));
        CHECK(cuDeviceGetAttribute(&ccmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
        CHECK(cuDeviceGetAttribute(&ccmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
        CHECK(cuDeviceGetAttribute(&clk, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
        printf("sms %d l2 %d cc %d.%d clock_khz %d\n", sms, l2, ccmaj, ccmin, clk);
        return 0;
    }
    if (!strcmp(argv[1], "sleep") && argc == 3) {
        /* busy for MS milliseconds in 10 ms kernels of the built-in module */
        CUmodule m;
        CUfunction f;
        CHECK(cuModuleLoadData(&m, "gpuos-builtin"));
        CHECK(cuModuleGetFunction(&f, m, "sleep_ns"));
        unsigned long long ns = 10000000ull;
        void *args[] = {&ns};
        for (int i = 0, n = atoi(argv[2]) / 10; i < n; i++) {
            CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
            if (i % 4 == 3)
                CHECK(cuCtxSynchronize());
        }
        CHECK(cuCtxSynchronize());
        return 0;
    }
    if (!strcmp(argv[1], "clusters")) {
        /* what cuBLAS asks before its first GEMM: how many clusters of 1..32
         * blocks of a kernel holding all of an SM's shared memory run at once;
         * "clusters K": of blocks holding a K-th of it (K blocks per SM) */
        CUmodule m;
        CUfunction f;
        int smem = 0, k = argc > 2 ? atoi(argv[2]) : 1;
        CHECK(cuModuleLoadData(&m, "gpuos-builtin"));
        CHECK(cuModuleGetFunction(&f, m, "empty"));
        CHECK(cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
        CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
        CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
        smem = k > 1 ? smem / k - 2048 : smem;
        int per_sm = 0;
        CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 128, (size_t)smem));
        printf("clusters per_sm %d:", per_sm);
        for (unsigned cs = 1; cs <= 32; cs++) {
            CUlaunchAttribute at;
            memset(&at, 0, sizeof at);
            at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            at.value.clusterDim.x = cs;
            at.value.clusterDim.y = at.value.clusterDim.z = 1;
            CUlaunchConfig cfg = {.gridDimX = cs, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 128, .blockDimY = 1,
                                  .blockDimZ = 1, .sharedMemBytes = (unsigned)smem, .attrs = &at, .numAttrs = 1};
            int n = -1;
            CHECK(cuOccupancyMaxActiveClusters(&n, f, &cfg));
            printf(" %d", n);
        }
        printf("\n");
        return 0;
    }
    fprintf(stderr, "cudashim_drv: unknown mode %s\n", argv[1]);
    return 2;
}
