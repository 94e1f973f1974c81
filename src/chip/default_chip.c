/* SPDX-License-Identifier: Apache-2.0 */
/* default_chip.c: the built-in simulated chip used by `--sim default` and when
 * no GPU is present; runs wherever a simulated device opens (cli, daemon,
 * executor). Shaped like the typical H200 of paper 001 (section 5.2.1,
 * figure 3): 132 SMs in 8 GPCs, six of 16 SMs and two of 18, TPCs (2k, 2k+1)
 * dealt round-robin over the GPCs, SMs 124..131 free-floating in the two large
 * GPCs, GPCs split 4 + 4 over the two memory partitions.
 *
 * Each pillar's simulated parameters live in a function of their own below. */
#include "common/jsonio.h"
#include "chip/chip.h"

#include <stdlib.h>

static void default_device(json_t *root)
{
    json_object_set_new(root, "device",
                        json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:i, s:b}", "name", "NVIDIA H200", "uuid",
                                  "SIM-00000000-0000-0000-0000-000000000200", "cc", "9.0", "sm_count", 132,
                                  "l2_bytes", (json_int_t)62914560, "mem_bytes", (json_int_t)150754820096LL,
                                  "sm_clock_mhz", 1980, "simulated", 1));
}

/* GPC g of the 8 gets normal TPCs t with t % 8 == g (t < 62): six GPCs with 8
 * TPCs, two (6 and 7) with 7; the free-floating TPCs 62,63 go to GPC 6 and
 * 64,65 to GPC 7, giving 6x16 + 2x18. */
static int default_gpc_of_tpc(int t)
{
    if (t < 62)
        return t % 8;
    return t < 64 ? 6 : 7;
}

static void default_topology(json_t *root)
{
    json_t *gpcs = json_array();
    for (int g = 0; g < 8; g++) {
        json_t *sms = json_array(), *cl = json_array(), *tpcs = json_array();
        for (int t = 0; t < 66; t++) {
            if (default_gpc_of_tpc(t) != g)
                continue;
            json_t *pair = json_array();
            for (int k = 0; k < 2; k++) {
                json_array_append_new(sms, json_integer(2 * t + k));
                if (t < 62)
                    json_array_append_new(cl, json_integer(2 * t + k));
                json_array_append_new(pair, json_integer(2 * t + k));
            }
            json_array_append_new(tpcs, pair);
        }
        json_array_append_new(gpcs, json_pack("{s:o, s:o, s:o}", "sms", sms, "cluster_sms", cl, "tpcs", tpcs));
    }
    json_object_set_new(root, "topology", json_pack("{s:o}", "gpcs", gpcs));
}

/* Partition 0 holds GPCs 0,2,4,6; partition 1 GPCs 1,3,5,7. */
static void default_numa(json_t *root)
{
    json_t *parts = json_array();
    for (int p = 0; p < 2; p++) {
        json_t *sms = json_array();
        for (int t = 0; t < 66; t++)
            if (default_gpc_of_tpc(t) % 2 == p) {
                json_array_append_new(sms, json_integer(2 * t));
                json_array_append_new(sms, json_integer(2 * t + 1));
            }
        json_array_append_new(parts, json_pack("{s:o}", "sms", sms));
    }
    static const int in_page[] = {12, 13, 15, 17, 19};
    static const int physical[] = {12, 13, 15, 17, 19, 21, 22, 25, 27, 30, 33};
    json_object_set_new(root, "numa",
                        json_pack("{s:o, s:{s:i, s:o, s:o}, s:{s:f, s:f, s:f, s:f}}", "partitions", parts, "hash",
                                  "granularity_bytes", 4096, "in_page_bits", gos_json_ints(in_page, 5),
                                  "physical_bits", gos_json_ints(physical, 11), "latency_cycles", "hbm_local", 490.0,
                                  "hbm_remote", 655.0, "l2_local", 309.0, "l2_remote", 466.0));
}

/* sim.dvfs: the switching-latency model of the simulated device (read by
 * src/device/sim_dvfs.c, which documents every parameter and gives each a
 * default, so chip files without them work). Shaped after paper 000's GH200
 * findings: the target frequency dominates (per-target distributions), most
 * pairs form one cluster, some several, a few percent of outliers, and now and
 * then a thermal throttling event. */
static void default_sim_dvfs(json_t *sim)
{
    /* the timing workload (cycles_per_work .. sync_rtt_ns) as measured on the lent
     * H200 (results/GPU-341ba1d8-.../dvfs: 4.875 cycles per dependent FMA + 55 per
     * iteration, spread at the 32 ns timer resolution, timer exchange round trip
     * ~1.5 us); "1755-1410" is a two-cluster pair (paper 000 figure 5) */
    json_object_set_new(
        sim, "dvfs",
        json_pack("{s:[i,i,i,i,i], s:{s:f, s:f}, s:{s:{s:f, s:f}, s:{s:f, s:f}},"
                  " s:{s:{s:[{s:f, s:f, s:f}, {s:f, s:f, s:f}]}}, s:f, s:[f,f],"
                  " s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:f}",
                  "freqs_mhz", 1980, 1755, 1605, 1410, 1260, "switch_ms", "mean", 20.0, "sd", 4.0, "targets",
                  "1980", "mean", 8.0, "sd", 1.0, "1260", "mean", 35.0, "sd", 6.0, "pairs", "1755-1410", "clusters",
                  "mean", 12.0, "sd", 1.0, "weight", 0.6, "mean", 30.0, "sd", 1.5, "weight", 0.4, "outlier_rate",
                  0.03, "outlier_ms", 60.0, 150.0, "cycles_per_work", 4.875, "overhead_cycles", 55.0, "iter_jitter",
                  0.00005, "timer_step_ns", 32, "sync_rtt_ns", 1500.0, "glitch_rate", 1e-6, "wakeup_ms", 30.0,
                  "thermal_rate", 0.003, "thermal_ms", 4000.0));
}

/* Pillar 1b: the memory model of sim_mem.c, set to what our H200 measured
 * (results/GPU-ed40b8f5-aa50-0df5-7128-71d1a0dfa41e) where the paper is silent,
 * and to the paper's 65.8 % effective L2 when every SM reads every page. */
static void default_sim_mem(json_t *sim)
{
    json_object_set_new(sim, "mem",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:f}", "hbm_gbps_per_partition", 2245.0,
                                  "fabric_gbps", 1274.0, "sm_hbm_gbps", 40.0, "l2_gbps", 8000.0,
                                  "l2_effective_fraction_shared", 0.658, "l2_effective_fraction_private", 1.0,
                                  "replicate", 1, "outlier_rate", 0.05));
}

static void default_sim(json_t *root)
{
    json_t *sim = json_pack("{s:i, s:f, s:f, s:f}", "seed", 1, "jitter", 0.03, "l2_gbps_per_sm", 180.0,
                            "l2_gbps_per_gpc", 1300.0);
    default_sim_dvfs(sim);
    default_sim_mem(sim);
    json_object_set_new(root, "sim", sim);
}

const char *gos_chip_default_json(void)
{
    static char *text;
    if (!text) {
        json_t *root = json_object();
        json_object_set_new(root, "schema", json_string(GOS_CHIP_SCHEMA));
        default_device(root);
        default_topology(root);
        default_numa(root);
        default_sim(root);
        text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_COMPACT);
        json_decref(root);
    }
    return text;
}
