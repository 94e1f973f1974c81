/* SPDX-License-Identifier: Apache-2.0 */
/* tmap_raw.c: TMAP_ENCODE as a hostile tenant sends it, through libgpuos
 * without gpuos's libcuda and its checks (tests/t_cudashim_tmap.sh): every
 * malformed request (an unknown kind, rank 0, 6 and 2^32 - 1, im2col of rank 2,
 * dimensions of 0 and 2^33, a box of 0, an element stride of 9, unknown enums,
 * an address 8 bytes off) is GPUOS_EINVAL with its one-line reason printed, and
 * a good request after them all is still answered (the daemon and the
 * executor lived). Prints one line per request: "NAME rc reason", then "ok"
 * when all are as expected. Usage: tmap_raw VGPU (socket from $GPUOS_SOCKET). */
#include "gpuos/gpuos.h"

#include <stdio.h>
#include <string.h>

static gpuos_tmap_args good(void)
{
    gpuos_tmap_args a = {.kind = GPUOS_TMAP_TILED, .dtype = 9, .rank = 2, .addr = 1ull << 20,
                         .dim = {1024, 16}, .stride = {2048}, .box = {64, 16}, .estride = {1, 1}};
    return a;
}

int main(int argc, char **argv)
{
    gpuos_vgpu *g;
    if (argc != 2 || gpuos_open(NULL, argv[1], &g)) {
        fprintf(stderr, "usage: tmap_raw VGPU (with $GPUOS_SOCKET): %s\n", argc == 2 ? gpuos_error() : "");
        return 2;
    }
    struct {
        const char *name;
        gpuos_tmap_args a;
    } bad[16];
    int n = 0;
#define BAD(nm, field, value)                                                                                          \
    do {                                                                                                               \
        bad[n].name = nm;                                                                                              \
        bad[n].a = good();                                                                                             \
        bad[n].a.field = value;                                                                                        \
        n++;                                                                                                           \
    } while (0)
    BAD("kind0", kind, 0);
    BAD("kind9", kind, 9);
    BAD("rank0", rank, 0);
    BAD("rank6", rank, 6);
    BAD("rankmax", rank, 0xffffffffu);
    BAD("im2col2", kind, GPUOS_TMAP_IM2COL);
    BAD("dim0", dim[1], 0);
    BAD("dimhuge", dim[0], 1ull << 33);
    BAD("box0", box[0], 0);
    BAD("estride9", estride[1], 9);
    BAD("dtype", dtype, 1000);
    BAD("swizzle", swizzle, 7);
    BAD("misaligned", addr, (1ull << 20) + 8);
    BAD("stride", stride[0], 2047);
    int fails = 0;
    unsigned char map[GPUOS_TMAP_BYTES];
    for (int i = 0; i < n; i++) {
        int rc = gpuos_tmap_encode(g, &bad[i].a, map);
        printf("%s %d %s\n", bad[i].name, rc, rc ? gpuos_error() : "");
        fails += rc != GPUOS_EINVAL;
    }
    gpuos_tmap_args a = good();
    int rc = gpuos_tmap_encode(g, &a, map);
    printf("good %d %s\n", rc, rc ? gpuos_error() : "");
    fails += rc != GPUOS_OK;
    gpuos_close(g);
    if (fails)
        return 1;
    puts("ok");
    return 0;
}
