/* SPDX-License-Identifier: Apache-2.0 */
/* client_util.h: what the libgpuos test clients (serve_client.c, hostile_client.c)
 * share: CHECK (print the line, the message and gpuos_error(), exit 1), a monotonic
 * clock in seconds, and opening a vGPU or dying. Define CLIENT_NAME first. */
#ifndef GOS_TEST_CLIENT_UTIL_H
#define GOS_TEST_CLIENT_UTIL_H

#include "gpuos/gpuos.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, CLIENT_NAME ": line %d: ", __LINE__);                                \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fprintf(stderr, " [%s]\n", gpuos_error());                                           \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline gpuos_vgpu *open_or_die(const char *name)
{
    gpuos_vgpu *g = NULL;
    int rc = gpuos_open(NULL, name, &g);
    CHECK(rc == GPUOS_OK, "open %s: rc %d", name, rc);
    return g;
}

#endif
