/* SPDX-License-Identifier: Apache-2.0 */
/* cudashim_image.c: prints what gpuos's libcuda reads from a module image
 * (src/cudashim/image.c) for one kernel: "params N off:size ... bytes B regs R"
 * or "none: <why>". tests/t_cudashim.sh compares it with the kernel's source. */
#include "cudashim/shim.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: cudashim_image FILE KERNEL CC\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static unsigned char buf[64 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (shim_image_size(buf) != n && shim_image_size(buf) != n + 1) { /* text: + its NUL */
        fprintf(stderr, "image size %zu, file %zu\n", shim_image_size(buf), n);
        return 1;
    }
    struct shim_kinfo k;
    char why[160];
    shim_image_kernel(buf, n, atoi(argv[3]), argv[2], &k, why, sizeof why);
    if (!k.found) {
        printf("none: %s\n", why);
        return 0;
    }
    printf("params %d", k.nparams);
    for (int i = 0; i < k.nparams; i++)
        printf(" %u:%u", k.off[i], k.size[i]);
    printf(" bytes %d regs %d shared %d\n", k.param_bytes, k.regs, k.shared_bytes);
    return 0;
}
