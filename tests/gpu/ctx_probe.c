/* SPDX-License-Identifier: Apache-2.0 */
/* ctx_probe.c: can this process create a CUDA context? (issue 9, bypass test)
 * Loads libcuda.so.1 itself and calls cuInit, cuDeviceGet(0), cuCtxCreate: the
 * three steps a tenant would take to use the GPU without the daemon. Prints one
 * line; exit 0 when a context was created, 1 when a step failed (named). Kept
 * free of cuda.h (the Driver API's types are ints and pointers here). */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_fn)(unsigned);
typedef int (*devget_fn)(int *, int);
typedef int (*ctx_fn)(void **, unsigned, int);
typedef int (*name_fn)(int, const char **);

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        printf("ctx_probe: no libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    init_fn cu_init = (init_fn)dlsym(h, "cuInit");
    devget_fn cu_dev = (devget_fn)dlsym(h, "cuDeviceGet");
    ctx_fn cu_ctx = (ctx_fn)dlsym(h, "cuCtxCreate_v2");
    name_fn cu_name = (name_fn)dlsym(h, "cuGetErrorName");
    if (!cu_init || !cu_dev || !cu_ctx || !cu_name) {
        printf("ctx_probe: libcuda.so.1 lacks the Driver API entry points\n");
        return 1;
    }
    const char *n = "?";
    int dev = 0, rc = cu_init(0);
    if (rc) {
        cu_name(rc, &n);
        printf("ctx_probe: cuInit failed: %s\n", n);
        return 1;
    }
    if ((rc = cu_dev(&dev, 0))) {
        cu_name(rc, &n);
        printf("ctx_probe: cuDeviceGet failed: %s\n", n);
        return 1;
    }
    void *ctx = NULL;
    if ((rc = cu_ctx(&ctx, 0, dev))) {
        cu_name(rc, &n);
        printf("ctx_probe: cuCtxCreate failed: %s\n", n);
        return 1;
    }
    printf("ctx_probe: context created\n");
    return 0;
}
