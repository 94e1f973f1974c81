/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_check.h: the checks of the Driver API test programs run under
 * `gpuos run` (tests/cudashim_drv.c, tests/cudashim_exports.c): CHECK ends the
 * program on an unexpected error, EXPECT and TRUE count a failure and go on;
 * check_primary_context makes device 0's primary context current. */
#ifndef GOS_TESTS_CUDASHIM_CHECK_H
#define GOS_TESTS_CUDASHIM_CHECK_H

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>

static int fails;

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            const char *n_ = NULL;                                                                                     \
            cuGetErrorName(r_, &n_);                                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s = %s\n", __FILE__, __LINE__, #call, n_ ? n_ : "?");                      \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#define EXPECT(call, want)                                                                                             \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != (want)) {                                                                                            \
            const char *n_ = NULL, *w_ = NULL;                                                                         \
            cuGetErrorName(r_, &n_);                                                                                   \
            cuGetErrorName(want, &w_);                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s = %s, expected %s\n", __FILE__, __LINE__, #call, n_ ? n_ : "?", w_);     \
            fails++;                                                                                                   \
        }                                                                                                              \
    } while (0)

#define TRUE(cond)                                                                                                     \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                                            \
            fails++;                                                                                                   \
        }                                                                                                              \
    } while (0)

/* cuInit, device 0's primary context, current: how the programs start. */
static inline CUcontext check_primary_context(void)
{
    CUdevice d;
    CUcontext c;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&c, d));
    CHECK(cuCtxSetCurrent(c));
    return c;
}

#endif
