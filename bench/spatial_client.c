/* SPDX-License-Identifier: Apache-2.0 */
/* spatial_client.c: one tenant of bench/spatial.sh: through `gpuos serve` and
 * libgpuos, launches kernels/gemm_cluster.cu's GEMM (clusters of --cluster, one
 * block per SM by --smem bytes of dynamic shared memory) back to back for
 * --seconds, synchronising every --batch launches, and prints one JSON line:
 * launches, wall seconds, TFLOP/s. */
#include "gpuos/gpuos.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define TRY(call)                                                                                \
    do {                                                                                         \
        int rc_ = (call);                                                                        \
        if (rc_) {                                                                               \
            fprintf(stderr, "spatial_client: %s: %s\n", #call, gpuos_error());                   \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

int main(int argc, char **argv)
{
    const char *vgpu = NULL, *fatbin = "build/kernels/gemm_cluster.fatbin", *sock = getenv("GPUOS_SOCKET");
    int cs = 2, M = 8192, N = 8192, K = 1024, batch = 4;
    unsigned smem = 198656;
    double seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--vgpu"))
            vgpu = v;
        else if (!strcmp(a, "--fatbin"))
            fatbin = v;
        else if (!strcmp(a, "--cluster"))
            cs = atoi(v);
        else if (!strcmp(a, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(a, "--smem"))
            smem = (unsigned)atoi(v);
        else if (!strcmp(a, "--batch"))
            batch = atoi(v);
        else {
            fprintf(stderr, "spatial_client: unexpected argument %s\n", a);
            return 2;
        }
    }
    if (!vgpu || (cs != 1 && cs != 2 && cs != 4 && cs != 8) || batch < 1) {
        fprintf(stderr, "usage: spatial_client --vgpu NAME [--cluster 1|2|4|8] [--seconds S] [--smem B] "
                        "[--batch N] [--fatbin F]\n");
        return 2;
    }
    FILE *f = fopen(fatbin, "rb");
    if (!f) {
        fprintf(stderr, "spatial_client: cannot open %s\n", fatbin);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *img = malloc((size_t)sz);
    if (!img || fread(img, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "spatial_client: cannot read %s\n", fatbin);
        return 1;
    }
    fclose(f);
    gpuos_vgpu *g;
    TRY(gpuos_open(sock, vgpu, &g));
    gpuos_module mod;
    gpuos_function fn;
    TRY(gpuos_module_load(g, img, (size_t)sz, &mod));
    TRY(gpuos_module_function(g, mod, "gos_gemm_cluster", &fn));
    gpuos_dptr a, b, c;
    TRY(gpuos_mem_alloc(g, sizeof(float) * (size_t)M * K, &a));
    TRY(gpuos_mem_alloc(g, sizeof(float) * (size_t)K * N, &b));
    TRY(gpuos_mem_alloc(g, sizeof(float) * (size_t)M * N, &c));
    float *h = calloc((size_t)M * K > (size_t)K * N ? (size_t)M * K : (size_t)K * N, sizeof(float));
    for (size_t i = 0; i < (size_t)M * K; i++)
        h[i] = (float)(i % 7) * 0.125f;
    TRY(gpuos_memcpy_htod(g, a, h, sizeof(float) * (size_t)M * K));
    TRY(gpuos_memcpy_htod(g, b, h, sizeof(float) * (size_t)K * N));
    free(h);
    gpuos_params p;
    gpuos_params_init(&p);
    int32_t pad = 0;
    TRY(gpuos_params_add(&p, &a, sizeof a));
    TRY(gpuos_params_add(&p, &b, sizeof b));
    TRY(gpuos_params_add(&p, &c, sizeof c));
    TRY(gpuos_params_add(&p, &M, sizeof M));
    TRY(gpuos_params_add(&p, &N, sizeof N));
    TRY(gpuos_params_add(&p, &K, sizeof K));
    TRY(gpuos_params_add(&p, &pad, sizeof pad));
    gpuos_launch_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid[0] = (unsigned)(N / 128);
    cfg.grid[1] = (unsigned)(M / 128);
    cfg.block[0] = 256;
    cfg.cluster[0] = (unsigned)cs;
    cfg.cluster[1] = cfg.cluster[2] = 1;
    cfg.shared_mem = smem;
    TRY(gpuos_launch(g, fn, &cfg, p.buf, p.len)); /* warm-up */
    TRY(gpuos_synchronize(g));
    double t0 = now_s(), t;
    long launches = 0;
    do {
        for (int i = 0; i < batch; i++)
            TRY(gpuos_launch(g, fn, &cfg, p.buf, p.len));
        TRY(gpuos_synchronize(g));
        launches += batch;
        t = now_s() - t0;
    } while (t < seconds);
    double tflops = 2.0 * M * N * (double)K * (double)launches / t / 1e12;
    printf("{\"vgpu\": \"%s\", \"cluster\": %d, \"launches\": %ld, \"seconds\": %.4f, \"tflops\": %.4f}\n", vgpu, cs,
           launches, t, tflops);
    gpuos_close(g);
    return 0;
}
