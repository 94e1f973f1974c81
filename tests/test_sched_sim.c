/* SPDX-License-Identifier: Apache-2.0 */
/* test_sched_sim.c: properties of the three policies on the discrete-event simulator
 * (src/sched/simulate.h), virtual time, fixed seeds (paper 002, section 5.2 and its
 * fairness evaluation):
 *  - FIFO does not honour shares when kernels differ 10x between vGPUs;
 *  - Credit is better than FIFO but fails on closed-loop (bursty) clients;
 *  - BAND keeps the error <= 2 points for 2, 4 and 8 vGPUs, equal and unequal
 *    shares, MRQ compute and copy engines and SDQ;
 *  - a share change takes effect within a few periods;
 *  - BAND's holds do not push other vGPUs below their share;
 *  - MRQ overlaps copies with kernels (more throughput than SDQ);
 *  - the simulation is deterministic;
 *  - BAND holds 40/30/20/10 for grant-shaped tasks (16 ms for the two large
 *    vGPUs, 3 and 2 ms for the small ones, capped as serve/grant.c caps
 *    them) with host gaps of up to 2 ms between them: on an H100
 *    (GPU-42e0660a, issue 41) the daemon gave the 40 % tenant 0.386 of the
 *    charged GPU time, and this says the policy's order is not why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/status.h"
#include "sched/simulate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define US 1000ull
#define MS 1000000ull
#define WARMUP (300 * MS)
#define DURATION (3000 * MS)

static const int shares2[] = {50, 50}, shares2w[] = {70, 30};
static const int shares4[] = {25, 25, 25, 25}, shares4w[] = {40, 30, 20, 10};
static const int shares8[] = {13, 13, 12, 12, 13, 13, 12, 12};
static const int shares8w[] = {20, 20, 15, 15, 10, 10, 5, 5};

/* Bursty closed-loop clients; even vGPUs run 100 us kernels, odd ones 1 ms (10x). */
static gos_sim_config bursty(const char *policy, int n, const int *shares)
{
    gos_sim_config c;
    gos_sim_bursty_config(&c, policy, GOS_SCHED_MRQ, n, shares);
    return c;
}

static double run_err(const gos_sim_config *c, int kind, gos_sim_result *r)
{
    assert_int_equal(gos_sim_run(c, WARMUP, DURATION, kind, r), GOS_OK);
    return r->max_error_pct;
}

static void print(const char *what, const gos_sim_result *r)
{
    printf("    %-28s err %6.2f  busy %5.1f  achieved", what, r->max_error_pct, r->busy_pct);
    for (int i = 0; i < r->nvgpus; i++)
        printf(" %.1f/%.0f", r->achieved_pct[i], r->target_pct[i]);
    printf("\n");
}

struct case_ { const char *name; int n; const int *shares; };
static const struct case_ cases[] = {
    {"2 vGPUs 50/50", 2, shares2},         {"2 vGPUs 70/30", 2, shares2w},
    {"4 vGPUs equal", 4, shares4},         {"4 vGPUs 40/30/20/10", 4, shares4w},
    {"8 vGPUs equal", 8, shares8},         {"8 vGPUs 20..5", 8, shares8w},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static void test_fifo_ignores_shares(void **state)
{
    (void)state;
    for (int k = 0; k < NCASES; k++) {
        gos_sim_config c = bursty("fifo", cases[k].n, cases[k].shares);
        gos_sim_result r;
        double e = run_err(&c, GOS_SCHED_COMPUTE, &r);
        print(cases[k].name, &r);
        /* Time follows kernel length: a long-kernel vGPU gets ~10x a short one. */
        assert_true(e > 10.0);
        assert_true(r.achieved_pct[1] > 5 * r.achieved_pct[0]);
    }
}

static void test_credit_better_than_fifo_but_not_enough(void **state)
{
    (void)state;
    int better = 0, over2 = 0;
    for (int k = 0; k < NCASES; k++) {
        gos_sim_config c = bursty("credit", cases[k].n, cases[k].shares);
        gos_sim_config f = bursty("fifo", cases[k].n, cases[k].shares);
        gos_sim_result r, rf;
        double e = run_err(&c, GOS_SCHED_COMPUTE, &r), ef = run_err(&f, GOS_SCHED_COMPUTE, &rf);
        print(cases[k].name, &r);
        assert_true(e <= ef + 0.5); /* never worse than FIFO */
        better += e < ef - 5.0;
        over2 += e > 2.0;
    }
    assert_true(better >= 3); /* clearly better where several vGPUs keep it busy */
    assert_true(over2 >= 3);  /* but non-preemptive bursts defeat it (Gdev 5.2) */
}

static void test_band_within_two_points(void **state)
{
    (void)state;
    for (int k = 0; k < NCASES; k++) {
        gos_sim_config c = bursty("band", cases[k].n, cases[k].shares);
        gos_sim_result r;
        double e = run_err(&c, GOS_SCHED_COMPUTE, &r);
        print(cases[k].name, &r);
        assert_true(e <= 2.0);
        /* a different seed, heavier jitter: still within 2 points */
        c.seed = 7;
        for (int i = 0; i < c.nvgpus; i++)
            c.vgpu[i].jitter = 0.5;
        assert_true(run_err(&c, GOS_SCHED_COMPUTE, &r) <= 2.0);
    }
}

/* Copy engine (MRQ) and the single queue (SDQ) are held to their shares too. */
static void test_band_copy_and_sdq(void **state)
{
    (void)state;
    for (int k = 0; k < NCASES; k++) {
        gos_sim_config c = bursty("band", cases[k].n, cases[k].shares);
        for (int i = 0; i < c.nvgpus; i++) { /* copy-only clients, 10x apart */
            c.vgpu[i].copy_ns = c.vgpu[i].kernel_ns;
            c.vgpu[i].kernel_ns = 0;
        }
        gos_sim_result r;
        assert_true(run_err(&c, GOS_SCHED_COPY, &r) <= 2.0);
        gos_sim_config d = bursty("band", cases[k].n, cases[k].shares);
        d.mode = GOS_SCHED_SDQ;
        for (int i = 0; i < d.nvgpus; i++) /* a copy before every kernel */
            d.vgpu[i].copy_ns = d.vgpu[i].kernel_ns / 4;
        double e = run_err(&d, GOS_SIM_ALL, &r);
        print(cases[k].name, &r);
        assert_true(e <= 2.0);
        d.policy = "fifo";
        assert_true(run_err(&d, GOS_SIM_ALL, &r) > 10.0);
    }
}

/* MRQ: compute and copy shares are independent. vGPU 0 has the long kernels and
 * short copies, vGPU 1 the reverse; each engine is held to its own shares. */
static void test_mrq_independent_shares(void **state)
{
    (void)state;
    const char *pol[] = {"fifo", "credit", "band"};
    for (int p = 0; p < 3; p++) {
        gos_sim_config c = bursty(pol[p], 2, shares2);
        c.vgpu[0].compute_share = 70;
        c.vgpu[0].copy_share = 30;
        c.vgpu[1].compute_share = 30;
        c.vgpu[1].copy_share = 70;
        c.vgpu[0].kernel_ns = 1 * MS;
        c.vgpu[0].copy_ns = 100 * US;
        c.vgpu[1].kernel_ns = 100 * US;
        c.vgpu[1].copy_ns = 1 * MS;
        c.vgpu[0].split = c.vgpu[1].split = 1;
        gos_sim_result rc, rk;
        double ec = run_err(&c, GOS_SCHED_COMPUTE, &rc), ek = run_err(&c, GOS_SCHED_COPY, &rk);
        printf("    %-6s compute %.1f/%.1f (70/30) err %.2f, copy %.1f/%.1f (30/70) err %.2f\n",
               pol[p], rc.achieved_pct[0], rc.achieved_pct[1], ec, rk.achieved_pct[0],
               rk.achieved_pct[1], ek);
        if (p == 2) {
            assert_true(ec <= 2.0 && ek <= 2.0);
        } else if (p == 0) {
            assert_true(ec > 10.0 && ek > 10.0);
        }
    }
}

/* Shares changed at run time: the new split holds within a few periods. */
static void test_share_change(void **state)
{
    (void)state;
    gos_sim_config c = bursty("band", 2, shares2);
    gos_sim *sim;
    assert_int_equal(gos_sim_new(&c, &sim), GOS_OK);
    uint64_t period = gos_sched_period_ns(gos_sim_sched(sim));
    gos_sim_snapshot a, b;
    gos_sim_result r;
    gos_sim_run_until(sim, 1000 * MS);
    gos_sim_snapshot_get(sim, &a);
    gos_sim_run_until(sim, 1300 * MS);
    gos_sim_snapshot_get(sim, &b);
    gos_sim_result_between(sim, &a, &b, GOS_SCHED_COMPUTE, &r);
    assert_true(fabs(r.achieved_pct[0] - 50) <= 2.0);
    /* 50/50 -> 20/80 (the long-kernel vGPU gets more) */
    assert_int_equal(gos_sim_set_shares(sim, 0, 20, 20), GOS_OK);
    assert_int_equal(gos_sim_set_shares(sim, 1, 80, 80), GOS_OK);
    assert_int_equal(gos_sim_set_shares(sim, 5, 80, 80), GOS_EINVAL);
    uint64_t t0 = gos_sim_now(sim);
    int settled = -1;
    for (int p = 0; p < 10; p++) { /* windows of 3 periods after the change */
        gos_sim_snapshot_get(sim, &a);
        gos_sim_run_until(sim, t0 + (uint64_t)(p + 1) * 3 * period);
        gos_sim_snapshot_get(sim, &b);
        gos_sim_result_between(sim, &a, &b, GOS_SCHED_COMPUTE, &r);
        printf("    window %d after the change: %.1f / %.1f (target %.0f / %.0f)\n", p,
               r.achieved_pct[0], r.achieved_pct[1], r.target_pct[0], r.target_pct[1]);
        if (r.max_error_pct <= 3.0 && settled < 0)
            settled = p;
        if (settled >= 0 && p >= settled + 1)
            assert_true(r.max_error_pct <= 3.0); /* and it stays */
    }
    assert_true(settled >= 0 && settled <= 1); /* within 6 periods (180 ms) */
    gos_sim_free(sim);
}

/* A vGPU whose client cannot use its share (long think time) gets engine time
 * reserved for it by BAND's holds, but the others still get their shares of
 * elapsed time: holds are charged to the vGPU they wait for. */
static void test_band_holds_do_not_starve(void **state)
{
    (void)state;
    gos_sim_config c = bursty("band", 2, shares2w);
    c.vgpu[0].think_ns = 150 * US; /* 100 us kernels, 150 us think: at most 40 % */
    c.vgpu[0].burst = 0;
    gos_sim_result r;
    run_err(&c, GOS_SCHED_COMPUTE, &r);
    print("demand-limited 70/30", &r);
    assert_true(r.util_pct[1] >= 30.0 - 2.0); /* the 30 % vGPU is not starved */
    assert_true(r.max_error_pct <= 2.0);
}

/* BAND with holds not charged shares GPU time alone: within 2 points of GPU time in
 * every case; the price is that a vGPU whose client cannot use its share pushes the
 * others below their share of elapsed time (which the default prevents). Also the
 * daemon's case: 1 ms vs 10 ms kernels, 400 us client turnaround, no bursts. */
static void test_band_gpu_time_mode(void **state)
{
    (void)state;
    for (int k = 0; k < NCASES; k++) {
        gos_sim_config c = bursty("band", cases[k].n, cases[k].shares);
        c.band_free_hold = 1;
        gos_sim_result r;
        double e = run_err(&c, GOS_SCHED_COMPUTE, &r);
        print(cases[k].name, &r);
        assert_true(e <= 2.0);
        for (int i = 0; i < r.nvgpus; i++)
            assert_true(fabs(r.gpu_pct[i] - r.achieved_pct[i]) < 1e-9); /* GPU time */
    }
    gos_sim_result charged, free_;
    gos_sim_config c = bursty("band", 2, shares2w);
    c.vgpu[0].think_ns = 150 * US;
    c.vgpu[0].burst = 0;
    run_err(&c, GOS_SCHED_COMPUTE, &charged);
    c.band_free_hold = 1;
    run_err(&c, GOS_SCHED_COMPUTE, &free_);
    printf("    demand-limited 70/30: the 30 %% vGPU gets %.1f %% of the time charged, "
           "%.1f %% not\n", charged.util_pct[1], free_.util_pct[1]);
    assert_true(charged.util_pct[1] >= 28.0);
    assert_true(free_.util_pct[1] < 25.0);

    gos_sim_config d = bursty("band", 2, shares2);
    for (int i = 0; i < 2; i++) {
        d.vgpu[i].kernel_ns = i ? 10 * MS : 1 * MS;
        d.vgpu[i].think_ns = 400 * US;
        d.vgpu[i].burst = 0;
    }
    for (int f = 0; f < 2; f++) {
        d.band_free_hold = f;
        gos_sim_result r;
        double e = run_err(&d, GOS_SCHED_COMPUTE, &r);
        printf("    1 ms vs 10 ms, 400 us turnaround, %s: err %.2f, GPU time %.1f/%.1f\n",
               f ? "GPU time" : "charged", e, r.gpu_pct[0], r.gpu_pct[1]);
        assert_true(e <= 2.0);
    }
}

/* MRQ: copies of one vGPU overlap kernels of another; SDQ serialises them. */
static void test_mrq_overlaps(void **state)
{
    (void)state;
    gos_sim_config c;
    memset(&c, 0, sizeof c);
    c.policy = "band";
    c.band_wait_ns = -1;
    c.seed = 3;
    c.nvgpus = 2;
    for (int i = 0; i < 2; i++) {
        c.vgpu[i].compute_share = c.vgpu[i].copy_share = 50;
        c.vgpu[i].copy_ns = 300 * US;
        c.vgpu[i].kernel_ns = 300 * US;
        c.vgpu[i].jitter = 0.1;
        c.vgpu[i].think_ns = 10 * US;
    }
    const char *pol[] = {"fifo", "credit", "band"};
    for (int p = 0; p < 3; p++) {
        gos_sim_result m, d;
        c.policy = pol[p];
        c.mode = GOS_SCHED_MRQ;
        run_err(&c, GOS_SIM_ALL, &m);
        c.mode = GOS_SCHED_SDQ;
        run_err(&c, GOS_SIM_ALL, &d);
        printf("    %-6s cycles/s MRQ %.0f SDQ %.0f (busy %.0f%% vs %.0f%%)\n", pol[p],
               m.total_cycles_per_s, d.total_cycles_per_s, m.busy_pct, d.busy_pct);
        assert_true(m.total_cycles_per_s > 1.4 * d.total_cycles_per_s);
        assert_true(m.busy_pct > 120.0); /* two engines busy at once */
        assert_true(d.busy_pct <= 100.0 + 1e-9);
    }
}

static void test_band_grant_shaped(void **state)
{
    (void)state;
    static const int sh[4] = {40, 30, 20, 10};
    static const uint64_t task[4] = {16 * MS, 16 * MS, 3 * MS, 2 * MS};
    static const uint64_t gaps[] = {20 * US, 300 * US, 2 * MS};
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        gos_sim_config c;
        memset(&c, 0, sizeof c);
        c.policy = "band";
        c.mode = GOS_SCHED_MRQ;
        c.band_wait_ns = -1;
        c.seed = 42;
        c.nvgpus = 4;
        for (int i = 0; i < 4; i++) {
            c.vgpu[i].compute_share = c.vgpu[i].copy_share = sh[i];
            c.vgpu[i].kernel_ns = task[i];
            c.vgpu[i].jitter = 0.1;
            c.vgpu[i].think_ns = gaps[g];
        }
        gos_sim_result r;
        assert_int_equal(gos_sim_run(&c, WARMUP, 2 * DURATION, GOS_SCHED_COMPUTE, &r), GOS_OK);
        printf("band, grant-shaped 40/30/20/10, %llu us gaps: %.2f %.2f %.2f %.2f (max error %.2f)\n",
               (unsigned long long)(gaps[g] / US), r.achieved_pct[0], r.achieved_pct[1], r.achieved_pct[2],
               r.achieved_pct[3], r.max_error_pct);
        assert_true(r.max_error_pct < 1.0);
    }
}

static void test_deterministic(void **state)
{
    (void)state;
    gos_sim_config c = bursty("band", 4, shares4w);
    gos_sim_result a, b;
    run_err(&c, GOS_SCHED_COMPUTE, &a);
    run_err(&c, GOS_SCHED_COMPUTE, &b);
    assert_memory_equal(&a, &b, sizeof a);
    gos_sim_config bad = c;
    bad.nvgpus = 0;
    assert_int_equal(gos_sim_run(&bad, 0, MS, GOS_SCHED_COMPUTE, &a), GOS_EINVAL);
    bad = c;
    bad.policy = "nope";
    assert_int_equal(gos_sim_run(&bad, 0, MS, GOS_SCHED_COMPUTE, &a), GOS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_ignores_shares),
        cmocka_unit_test(test_credit_better_than_fifo_but_not_enough),
        cmocka_unit_test(test_band_within_two_points),
        cmocka_unit_test(test_band_copy_and_sdq),
        cmocka_unit_test(test_mrq_independent_shares),
        cmocka_unit_test(test_share_change),
        cmocka_unit_test(test_band_holds_do_not_starve),
        cmocka_unit_test(test_band_gpu_time_mode),
        cmocka_unit_test(test_mrq_overlaps),
        cmocka_unit_test(test_band_grant_shaped),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
