/* SPDX-License-Identifier: Apache-2.0 */
/* pmem_client.c: partition-local memory through `gpuos serve` (issue 12), the
 * client of tests/t_pmem_client.sh. Modes (vGPU first):
 *   VGPU views BYTES   two views; the device checks placement (latency and, on a
 *                      simulated chip, its truth); host writes/reads through the
 *                      views byte-exact at odd offsets; the raw allocation shows
 *                      each unit pair split between the views; freed, charge back
 *   VGPU hold BYTES [FILE]  allocates, prints the charge, sleeps (for kill -9);
 *                      with FILE: once it exists, one more request (its result)
 *   VGPU bad           malformed requests, each refused (prints the codes)
 *   VGPU nochart       an allocation on a device without a chart
 * Lines are "key=value" for the shell to assert on. */
#define CLIENT_NAME "pmem_client"
#include "client_util.h"

#include "client/client_internal.h"

#include <string.h>
#include <unistd.h>

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (uint8_t)(seed >> 56);
    }
}

static int views(gpuos_vgpu *g, size_t bytes)
{
    uint64_t used0, quota, total, used1;
    CHECK(gpuos_mem_info(g, &used0, &quota, &total) == 0, "mem_info");
    gpuos_pmem *m;
    int rc = gpuos_pmem_alloc(g, bytes, &m);
    CHECK(rc == 0, "pmem_alloc %zu: rc %d", bytes, rc);
    gpuos_dptr base;
    size_t all, charged;
    gpuos_pmem_extent(m, &base, &all, &charged);
    CHECK(gpuos_mem_info(g, &used1, &quota, &total) == 0, "mem_info");
    printf("alloc charged=%zu bytes=%zu used_delta=%llu\n", charged, all, (unsigned long long)(used1 - used0));
    gpuos_pmem_view v[2];
    for (int p = 0; p < 2; p++)
        CHECK(gpuos_pmem_get_view(m, p, &v[p]) == 0, "view %d", p);
    CHECK(v[0].bytes == bytes && v[0].base == base && v[0].part == 0 && v[1].part == 1, "views");
    gpuos_pmem_check_result r;
    CHECK(gpuos_pmem_check(m, 2, &r) == 0, "check");
    for (int p = 0; p < 2; p++)
        printf("check view=%d units=%llu local=%llu truth=%d truth_local=%llu unit=%u\n", p,
               (unsigned long long)r.units[p], (unsigned long long)r.local[p], r.truth,
               (unsigned long long)r.truth_local[p], r.unit_bytes);
    /* byte-exact through the views, at odd offsets and lengths */
    uint8_t *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes), *raw = malloc(all);
    CHECK(a && b && c && raw, "malloc");
    fill(a, bytes, 1);
    fill(b, bytes, 2);
    CHECK(gpuos_pmem_write(m, 0, 0, a, bytes) == 0, "write 0");
    CHECK(gpuos_pmem_write(m, 1, 0, b, bytes) == 0, "write 1");
    CHECK(gpuos_pmem_read(m, 0, 0, c, bytes) == 0, "read 0");
    int exact0 = !memcmp(a, c, bytes);
    CHECK(gpuos_pmem_read(m, 1, 0, c, bytes) == 0, "read 1");
    int exact1 = !memcmp(b, c, bytes);
    /* an unaligned piece across unit boundaries */
    size_t off = 4095, n = bytes / 3 + 17;
    CHECK(gpuos_pmem_write(m, 0, off, b + 5, n) == 0, "write odd");
    memcpy(a + off, b + 5, n);
    CHECK(gpuos_pmem_read(m, 0, 0, c, bytes) == 0, "read 0 again");
    int exact_odd = !memcmp(a, c, bytes);
    CHECK(gpuos_pmem_read(m, 1, 0, c, bytes) == 0, "read 1 again");
    int untouched1 = !memcmp(b, c, bytes);
    /* zero-copy path: memory of gpuos_host_alloc */
    void *hb;
    CHECK(gpuos_host_alloc(g, bytes, &hb) == 0, "host_alloc");
    fill(hb, bytes, 3);
    CHECK(gpuos_pmem_write(m, 1, 0, hb, bytes) == 0, "write shared");
    CHECK(gpuos_pmem_read(m, 1, 0, c, bytes) == 0, "read shared");
    int exact_shared = !memcmp(hb, c, bytes);
    memcpy(b, hb, bytes);
    /* the raw allocation: every aligned unit pair holds one unit of each view */
    /* (a GPU: plain copies reach the allocation; the simulated device keeps
     * placement memory apart from its execution pillar's, raw_rc != 0) */
    int raw_rc = gpuos_memcpy_dtoh(g, raw, base, all);
    uint64_t unit = 1ull << v[0].shift, pairs_ok = 0, pairs = bytes / unit;
    for (uint64_t j = 0; j < pairs && !raw_rc; j++) {
        const uint8_t *u0 = raw + 2 * j * unit, *u1 = u0 + unit;
        int x = !memcmp(u0, a + j * unit, unit) && !memcmp(u1, b + j * unit, unit);
        int y = !memcmp(u1, a + j * unit, unit) && !memcmp(u0, b + j * unit, unit);
        pairs_ok += x != y;
    }
    printf("data exact0=%d exact1=%d exact_odd=%d untouched1=%d exact_shared=%d raw_rc=%d pairs=%llu pairs_ok=%llu\n",
           exact0, exact1, exact_odd, untouched1, exact_shared, raw_rc, (unsigned long long)pairs,
           (unsigned long long)pairs_ok);
    /* the runtime table: every SM in its partition, tasks split by SM count */
    gos_prt_table t;
    CHECK(gpuos_pmem_runtime(m, NULL, 0, 1000, 0, &t) == 0, "runtime");
    uint32_t w[2];
    gos_prt_sm_counts(&t, w);
    printf("runtime sms0=%u sms1=%u tasks0=%u tasks1=%u\n", w[0], w[1], t.count[0], t.count[1]);
    int mf = gpuos_mem_free(g, base);
    CHECK(gpuos_pmem_free(m) == 0, "pmem_free");
    CHECK(gpuos_mem_info(g, &used1, &quota, &total) == 0, "mem_info");
    printf("free mem_free_rc=%d used_after=%llu used_before=%llu\n", mf, (unsigned long long)used1,
           (unsigned long long)used0);
    gpuos_host_free(g, hb);
    free(a);
    free(b);
    free(c);
    free(raw);
    return 0;
}

static int bad(gpuos_vgpu *g)
{
    gpuos_pmem *m;
    printf("zero rc=%d\n", gpuos_pmem_alloc(g, 0, &m));
    printf("huge rc=%d\n", gpuos_pmem_alloc(g, (size_t)1 << 46, &m));   /* past the share */
    printf("over rc=%d\n", gpuos_pmem_alloc(g, (size_t)60 << 20, &m));  /* 64M share: 2 x 60M */
    CHECK(gpuos_pmem_alloc(g, 1 << 20, &m) == 0, "alloc");
    gpuos_pmem_view v;
    printf("view2 rc=%d\n", gpuos_pmem_get_view(m, 2, &v));
    char buf[64] = {0};
    printf("past rc=%d\n", gpuos_pmem_write(m, 0, (1 << 20) - 10, buf, 11));
    printf("part rc=%d\n", gpuos_pmem_read(m, 3, 0, buf, 1));
    printf("samples rc=%d\n", gpuos_pmem_check(m, 0, &(gpuos_pmem_check_result){0}));
    /* raw requests a library would never send */
    gpuos_dptr base;
    gpuos_pmem_extent(m, &base, NULL, NULL);
    struct gos_msg_pmem_free f = {.base = base + 4096};
    printf("rawfree rc=%d\n", gcl_call(g, GOS_MSG_PMEM_FREE, &f, sizeof f, -1, NULL, 0));
    struct gos_msg_pmem_copy q = {.base = base, .dir = 7, .bytes = 16};
    printf("rawdir rc=%d\n", gcl_call(g, GOS_MSG_PMEM_COPY, &q, sizeof q, -1, NULL, 0));
    q.dir = GOS_OP_HTOD;
    q.region = 40; /* not a region of this client */
    printf("rawregion rc=%d\n", gcl_call(g, GOS_MSG_PMEM_COPY, &q, sizeof q, -1, NULL, 0));
    q.region = 0;
    q.base = 0x1000;
    printf("rawbase rc=%d\n", gcl_call(g, GOS_MSG_PMEM_COPY, &q, sizeof q, -1, NULL, 0));
    q.base = base;
    q.offset = (1 << 20) - 8; /* past the view's end, checked on the device side */
    printf("rawpast rc=%d\n", gcl_call(g, GOS_MSG_PMEM_COPY, &q, sizeof q, -1, NULL, 0));
    printf("memfree rc=%d\n", gpuos_mem_free(g, base));
    /* the handle goes on */
    char one = 0x5a, back = 0;
    int w = gpuos_pmem_write(m, 1, 77, &one, 1), r = gpuos_pmem_read(m, 1, 77, &back, 1);
    printf("after rc=%d,%d back=%d\n", w, r, back == 0x5a);
    printf("free rc=%d\n", gpuos_pmem_free(m));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pmem_client VGPU views BYTES | hold BYTES | bad | nochart\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpuos_vgpu *g = open_or_die(argv[1]);
    const char *mode = argv[2];
    size_t bytes = argc > 3 ? (size_t)strtoull(argv[3], NULL, 0) : 0;
    int rc = 0;
    if (!strcmp(mode, "views"))
        rc = views(g, bytes);
    else if (!strcmp(mode, "hold")) {
        gpuos_pmem *m;
        CHECK(gpuos_pmem_alloc(g, bytes, &m) == 0, "alloc");
        size_t charged;
        gpuos_pmem_extent(m, NULL, NULL, &charged);
        printf("held charged=%zu\n", charged);
        if (argc > 4) { /* once FILE exists (the executor killed): one more request */
            for (int i = 0; i < 600 && access(argv[4], F_OK); i++)
                usleep(100000);
            char x = 1;
            printf("after rc=%d\n", gpuos_pmem_write(m, 0, 0, &x, 1));
        }
        sleep(600);
    } else if (!strcmp(mode, "bad"))
        rc = bad(g);
    else if (!strcmp(mode, "nochart")) {
        gpuos_pmem *m;
        rc = gpuos_pmem_alloc(g, 1 << 20, &m);
        printf("nochart rc=%d msg=%s\n", rc, gpuos_error());
        rc = 0;
    } else {
        fprintf(stderr, "pmem_client: unknown mode %s\n", mode);
        return 2;
    }
    gpuos_close(g);
    return rc;
}
