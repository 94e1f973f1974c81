/* SPDX-License-Identifier: Apache-2.0 */
/* common.h: what the Driver API test programs share: an error check that names
 * the call and the error, and loading the kernels' fatbin ($PROGS_FATBIN, else
 * kernels.fatbin beside the program). */
#ifndef PROGS_COMMON_H
#define PROGS_COMMON_H
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            const char *n_ = "?";                                                                                      \
            cuGetErrorName(r_, &n_);                                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, n_);                                \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* cuInit, device 0's primary context, current: how the programs start (exit 1
 * naming the call that failed). */
static inline CUcontext primary_context(void)
{
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* A CUuuid from its text "xxxxxxxx-xxxx-..." (the private tables' ids). */
static inline CUuuid uuid_of(const char *s)
{
    CUuuid u;
    for (int i = 0; i < 16; i++) {
        while (*s == '-')
            s++;
        unsigned v = 0;
        sscanf(s, "%2x", &v);
        u.bytes[i] = (char)v;
        s += 2;
    }
    return u;
}

static inline CUcontext init_ctx(void)
{
    CUdevice d;
    CUcontext c;
    CK(cuInit(0));
    CK(cuDeviceGet(&d, 0));
    CK(cuCtxCreate(&c, NULL, 0, d));
    return c;
}

static inline CUmodule load_kernels(const char *argv0)
{
    char path[4096];
    const char *e = getenv("PROGS_FATBIN");
    if (e)
        snprintf(path, sizeof path, "%s", e);
    else {
        snprintf(path, sizeof path, "%s", argv0);
        char *s = strrchr(path, '/');
        snprintf(s ? s + 1 : path, sizeof path - (size_t)(s ? s + 1 - path : 0), "kernels.fatbin");
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *img = malloc((size_t)n);
    if (!img || fread(img, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: read failed\n", path);
        exit(1);
    }
    fclose(f);
    CUmodule m;
    CK(cuModuleLoadData(&m, img));
    free(img);
    return m;
}

/* FNV-1a over bytes: one line of output per result. */
static inline unsigned long long fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
#endif
