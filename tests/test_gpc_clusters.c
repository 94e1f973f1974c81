/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpc_clusters.c: the cluster model of device/gpc_clusters.h against
 * NVIDIA's driver and against known truth:
 *   - the H200's answers: from its table at one block per SM (what cuBLAS's
 *     cluster discovery got natively for 3..32 blocks on GPU-0db54fca, driver
 *     580.159.04, results/GPU-0db54fca-.../cutrace-2d173c6/torch_matmul-native-log.tgz;
 *     1 block: its 132 SMs; 2 blocks: 66, since 2 blocks per SM answer 132 for
 *     pairs), the model predicts every answer drv_answers recorded on an H200
 *     (GPU-e7aac9fd, the same driver, results/GPU-e7aac9fd-.../frameworks-858d86a/
 *     answers.native) at 2 and 8 blocks per SM, 1-D and 2-D shapes of 1..32;
 *   - random GPC layouts: their table gives back exactly their sizes, and the
 *     model's counts equal a greedy placement of clusters on the SMs;
 *   - a table no GPCs give (more clusters of 2 than SMs) is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/rng.h"
#include "device/gpc_clusters.h"

#include <string.h>

#define MAX 32

static void test_h200(void **state)
{
    (void)state;
    /* t(1..32) at one block per SM */
    static const int32_t t[MAX] = {132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7,
                                   2,   2,  0,  0,  0,  0,  0,  0,  0, 0, 0, 0, 0, 0, 0, 0};
    int h[MAX + 1];
    assert_int_equal(gos_gpc_sizes(t, MAX, h), 1);
    for (int cs = 1; cs <= MAX; cs++)
        assert_int_equal(gos_gpc_clusters(h, MAX, cs, 1), t[cs - 1]);
    /* drv_answers on the H200: shape (x, y, z), blocks per SM (128 threads,
     * a 64- or 256-thread block: 8, the most of a cluster on one SM; 1024
     * threads: 2), the driver's answer */
    static const struct {
        int x, y, z, k, n;
    } a[] = {{1, 1, 1, 8, 1056}, {2, 1, 1, 8, 528}, {3, 1, 1, 8, 327}, {4, 1, 1, 8, 248}, {5, 1, 1, 8, 193},
             {6, 1, 1, 8, 163},  {7, 1, 1, 8, 139}, {8, 1, 1, 8, 124}, {9, 1, 1, 8, 102}, {10, 1, 1, 8, 88},
             {12, 1, 1, 8, 74},  {15, 1, 1, 8, 58}, {16, 1, 1, 8, 58}, {17, 1, 1, 8, 16}, {20, 1, 1, 8, 0},
             {24, 1, 1, 8, 0},   {32, 1, 1, 8, 0},  {2, 2, 1, 8, 248}, {4, 2, 1, 8, 124}, {2, 4, 1, 8, 124},
             {4, 4, 1, 8, 58},   {8, 2, 1, 8, 58},  {2, 2, 2, 8, 124}, {1, 8, 1, 8, 124}, {1, 16, 1, 8, 58},
             {8, 4, 1, 8, 0},    {1, 1, 1, 2, 264}, {2, 1, 1, 2, 132}, {3, 1, 1, 2, 79},  {4, 1, 1, 2, 62},
             {5, 1, 1, 2, 47},   {6, 1, 1, 2, 39},  {7, 1, 1, 2, 32},  {8, 1, 1, 2, 30},  {9, 1, 1, 2, 23},
             {10, 1, 1, 2, 21},  {12, 1, 1, 2, 16}, {15, 1, 1, 2, 14}, {16, 1, 1, 2, 14}, {17, 1, 1, 2, 4},
             {20, 1, 1, 2, 0},   {24, 1, 1, 2, 0},  {32, 1, 1, 2, 0},  {2, 2, 1, 2, 62},  {4, 2, 1, 2, 30},
             {2, 4, 1, 2, 30},   {4, 4, 1, 2, 14},  {8, 2, 1, 2, 14},  {2, 2, 2, 2, 30},  {1, 8, 1, 2, 30},
             {1, 16, 1, 2, 14},  {8, 4, 1, 2, 0}};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        long n = gos_gpc_clusters(h, MAX, a[i].x * a[i].y * a[i].z, a[i].k);
        if (n != a[i].n)
            fail_msg("clusters %dx%dx%d at %d blocks per SM: model %ld, the driver %d", a[i].x, a[i].y, a[i].z, a[i].k,
                     n, a[i].n);
    }
    assert_int_equal(gos_gpc_clusters(h, MAX, 0, 1), 0);
    assert_int_equal(gos_gpc_clusters(h, MAX, 4, 0), 0);
}

/* the most clusters of cs blocks, each block on an SM of its own within one
 * GPC, k blocks per SM: one at a time on the cs SMs with the most room left */
static long greedy(const int *sizes, int n, int cs, int k)
{
    long total = 0;
    for (int i = 0; i < n; i++) {
        int room[MAX];
        for (int s = 0; s < sizes[i]; s++)
            room[s] = k;
        for (;;) {
            /* the cs SMs with the most room: sort descending (small n) */
            for (int a = 0; a < sizes[i]; a++)
                for (int b = a + 1; b < sizes[i]; b++)
                    if (room[b] > room[a]) {
                        int x = room[a];
                        room[a] = room[b], room[b] = x;
                    }
            if (cs > sizes[i] || room[cs - 1] == 0)
                break;
            for (int s = 0; s < cs; s++)
                room[s]--;
            total++;
        }
    }
    return total;
}

static void test_random(void **state)
{
    (void)state;
    gos_rng r;
    gos_rng_seed(&r, 20261206);
    for (int trial = 0; trial < 300; trial++) {
        int n = 1 + (int)gos_rng_below(&r, 12), sizes[12], want[MAX + 1];
        memset(want, 0, sizeof want);
        for (int i = 0; i < n; i++) {
            sizes[i] = 1 + (int)gos_rng_below(&r, MAX);
            want[sizes[i]]++;
        }
        int32_t t[MAX];
        for (int cs = 1; cs <= MAX; cs++)
            t[cs - 1] = (int32_t)greedy(sizes, n, cs, 1);
        int h[MAX + 1];
        assert_int_equal(gos_gpc_sizes(t, MAX, h), 1);
        for (int g = 1; g <= MAX; g++)
            if (h[g] != want[g])
                fail_msg("trial %d: %d GPCs of %d SMs found, %d there", trial, h[g], g, want[g]);
        for (int k = 1; k <= 8; k++)
            for (int cs = 1; cs <= MAX; cs++)
                if (gos_gpc_clusters(h, MAX, cs, k) != greedy(sizes, n, cs, k))
                    fail_msg("trial %d: clusters of %d at %d per SM: model %ld, placement %ld", trial, cs, k,
                             gos_gpc_clusters(h, MAX, cs, k), greedy(sizes, n, cs, k));
    }
}

static void test_refused(void **state)
{
    (void)state;
    int32_t t[MAX] = {10, 6};
    int h[MAX + 1];
    assert_int_equal(gos_gpc_sizes(t, MAX, h), 0); /* 6 pairs need 12 SMs */
    int32_t u[MAX] = {8, 4, 2, 2};
    assert_int_equal(gos_gpc_sizes(u, MAX, h), 1); /* two GPCs of 4 SMs */
    assert_true(h[4] == 2 && h[3] == 0 && h[2] == 0 && h[1] == 0);
    u[2] = 3; /* a third triple: a GPC of 3 SMs, which leaves no room for 4 pairs */
    assert_int_equal(gos_gpc_sizes(u, MAX, h), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
