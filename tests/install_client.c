/* SPDX-License-Identifier: Apache-2.0 */
/* install_client.c: a libgpuos program as a user would write it, built by
 * tests/t_install.sh against the installed tree with only `pkg-config gpuos`.
 * Opens a vGPU, allocates, copies a pattern host -> device -> device -> host and
 * checks the bytes; prints "roundtrip ok BYTES" and exits 0, else the error. */
#include <gpuos/gpuos.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: install_client SOCKET VGPU\n");
        return 2;
    }
    const size_t n = 3 << 20; /* 3 MiB: several chunks of the pipeline */
    unsigned char *src = malloc(n), *dst = malloc(n);
    gpuos_vgpu *g = NULL;
    gpuos_dptr a = 0, b = 0;
    if (!src || !dst)
        return 1;
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i * 2654435761u >> 13);
    memset(dst, 0, n);
    if (gpuos_open(argv[1], argv[2], &g) || gpuos_mem_alloc(g, n, &a) || gpuos_mem_alloc(g, n, &b) ||
        gpuos_memcpy_htod(g, a, src, n) || gpuos_memcpy_dtod(g, b, a, n) ||
        gpuos_memcpy_dtoh(g, dst, b, n) || gpuos_synchronize(g)) {
        fprintf(stderr, "install_client: %s\n", gpuos_error());
        return 1;
    }
    if (memcmp(src, dst, n)) {
        fprintf(stderr, "install_client: bytes differ after the round trip\n");
        return 1;
    }
    gpuos_mem_free(g, a);
    gpuos_mem_free(g, b);
    gpuos_close(g);
    printf("roundtrip ok %zu\n", n);
    free(src);
    free(dst);
    return 0;
}
