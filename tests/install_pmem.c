/* SPDX-License-Identifier: Apache-2.0 */
/* install_pmem.c: the partition-local memory host API (gpuos/pmem.h) as a user
 * would call it, built by tests/t_install.sh against the installed tree with only
 * `pkg-config gpuos-pmem`: two views of 3 MiB on the simulated chip (argv[1] a
 * chart of it, gpuos probe numa --sim default --json), a pattern written through
 * each and read back, and the runtime table's split. Prints "pmem ok BYTES SMS". */
#include <gpuos/pmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: install_pmem CHART.json\n");
        return 2;
    }
    const uint64_t n = 3 << 20;
    gos_pmem_opts o = {.device = 0, .sim = "default", .chart = argv[1]};
    gos_pmem *pm = NULL;
    unsigned char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst || gos_pmem_open(&o, n, &pm)) {
        fprintf(stderr, "install_pmem: %s\n", gos_pmem_error());
        return 1;
    }
    for (int part = 0; part < 2; part++) {
        for (uint64_t i = 0; i < n; i++)
            src[i] = (unsigned char)((i * 2654435761u >> 11) + part);
        memset(dst, 0, n);
        gos_pmem_view v;
        if (gos_pmem_get_view(pm, part, &v) || gos_pmem_write(pm, part, 0, src, n) ||
            gos_pmem_read(pm, part, 0, dst, n)) {
            fprintf(stderr, "install_pmem: view %d: %s\n", part, gos_pmem_error());
            return 1;
        }
        if (memcmp(src, dst, n)) {
            fprintf(stderr, "install_pmem: view %d: bytes differ after the round trip\n", part);
            return 1;
        }
    }
    gos_prt_table t;
    if (gos_pmem_view_bytes(pm) != n || gos_pmem_runtime(pm, NULL, 0, 1000, GOS_PMEM_SPLIT_EQUAL, &t) ||
        t.count[0] + t.count[1] != 1000) {
        fprintf(stderr, "install_pmem: view size or runtime table wrong: %s\n", gos_pmem_error());
        return 1;
    }
    printf("pmem ok %llu %d\n", (unsigned long long)n, gos_pmem_sm_count(pm));
    gos_pmem_close(pm);
    free(src);
    free(dst);
    return 0;
}
