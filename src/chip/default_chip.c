/* default_chip.c: the built-in simulated chip used by `--sim default` and when
 * no GPU is present. Shaped like the typical H200 of paper 001 (section 5.2.1,
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
    json_t *d = json_object();
    json_object_set_new(d, "name", json_string("NVIDIA H200"));
    json_object_set_new(d, "uuid", json_string("SIM-00000000-0000-0000-0000-000000000200"));
    json_object_set_new(d, "cc", json_string("9.0"));
    json_object_set_new(d, "sm_count", json_integer(132));
    json_object_set_new(d, "l2_bytes", json_integer(62914560));
    json_object_set_new(d, "mem_bytes", json_integer(150754820096LL));
    json_object_set_new(d, "sm_clock_mhz", json_integer(1980));
    json_object_set_new(d, "simulated", json_true());
    json_object_set_new(root, "device", d);
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
        json_t *o = json_object();
        json_object_set_new(o, "sms", sms);
        json_object_set_new(o, "cluster_sms", cl);
        json_object_set_new(o, "tpcs", tpcs);
        json_array_append_new(gpcs, o);
    }
    json_t *topo = json_object();
    json_object_set_new(topo, "gpcs", gpcs);
    json_object_set_new(root, "topology", topo);
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
        json_t *o = json_object();
        json_object_set_new(o, "sms", sms);
        json_array_append_new(parts, o);
    }
    static const int in_page[] = {12, 13, 15, 17, 19};
    static const int physical[] = {12, 13, 15, 17, 19, 21, 22, 25, 27, 30, 33};
    json_t *hash = json_object();
    json_object_set_new(hash, "granularity_bytes", json_integer(4096));
    json_object_set_new(hash, "in_page_bits", gos_json_ints(in_page, 5));
    json_object_set_new(hash, "physical_bits", gos_json_ints(physical, 11));
    json_t *lat = json_object();
    json_object_set_new(lat, "hbm_local", json_real(490));
    json_object_set_new(lat, "hbm_remote", json_real(655));
    json_object_set_new(lat, "l2_local", json_real(309));
    json_object_set_new(lat, "l2_remote", json_real(466));
    json_t *numa = json_object();
    json_object_set_new(numa, "partitions", parts);
    json_object_set_new(numa, "hash", hash);
    json_object_set_new(numa, "latency_cycles", lat);
    json_object_set_new(root, "numa", numa);
}

/* sim.dvfs: the switching-latency model of the simulated device (read by
 * src/device/sim_dvfs.c, which documents every parameter and gives each a
 * default, so chip files without them work). Shaped after paper 000's GH200
 * findings: the target frequency dominates (per-target distributions), most
 * pairs form one cluster, some several, a few percent of outliers, and now and
 * then a thermal throttling event. */
static void default_sim_dvfs(json_t *sim)
{
    static const int freqs[] = {1980, 1755, 1605, 1410, 1260};
    json_t *dvfs = json_object();
    json_object_set_new(dvfs, "freqs_mhz", gos_json_ints(freqs, 5));
    json_t *sw = json_object();
    json_object_set_new(sw, "mean", json_real(20.0));
    json_object_set_new(sw, "sd", json_real(4.0));
    json_object_set_new(dvfs, "switch_ms", sw);
    json_t *targets = json_object(), *t;
    t = json_object();
    json_object_set_new(t, "mean", json_real(8.0));
    json_object_set_new(t, "sd", json_real(1.0));
    json_object_set_new(targets, "1980", t);
    t = json_object();
    json_object_set_new(t, "mean", json_real(35.0));
    json_object_set_new(t, "sd", json_real(6.0));
    json_object_set_new(targets, "1260", t);
    json_object_set_new(dvfs, "targets", targets);
    /* a two-cluster pair (paper 000 figure 5) */
    json_t *pairs = json_object(), *p = json_object(), *cl = json_array(), *c;
    c = json_object();
    json_object_set_new(c, "mean", json_real(12.0));
    json_object_set_new(c, "sd", json_real(1.0));
    json_object_set_new(c, "weight", json_real(0.6));
    json_array_append_new(cl, c);
    c = json_object();
    json_object_set_new(c, "mean", json_real(30.0));
    json_object_set_new(c, "sd", json_real(1.5));
    json_object_set_new(c, "weight", json_real(0.4));
    json_array_append_new(cl, c);
    json_object_set_new(p, "clusters", cl);
    json_object_set_new(pairs, "1755-1410", p);
    json_object_set_new(dvfs, "pairs", pairs);
    json_object_set_new(dvfs, "outlier_rate", json_real(0.03));
    json_t *om = json_array();
    json_array_append_new(om, json_real(60));
    json_array_append_new(om, json_real(150));
    json_object_set_new(dvfs, "outlier_ms", om);
    /* the timing workload as measured on the lent H200 (results/GPU-341ba1d8-.../dvfs:
     * 4.875 cycles per dependent FMA + 55 per iteration, spread at the 32 ns
     * timer resolution, timer exchange round trip ~1.5 us) */
    json_object_set_new(dvfs, "cycles_per_work", json_real(4.875));
    json_object_set_new(dvfs, "overhead_cycles", json_real(55));
    json_object_set_new(dvfs, "iter_jitter", json_real(0.00005));
    json_object_set_new(dvfs, "timer_step_ns", json_integer(32));
    json_object_set_new(dvfs, "sync_rtt_ns", json_real(1500));
    json_object_set_new(dvfs, "glitch_rate", json_real(1e-6));
    json_object_set_new(dvfs, "wakeup_ms", json_real(30));
    json_object_set_new(dvfs, "thermal_rate", json_real(0.003));
    json_object_set_new(dvfs, "thermal_ms", json_real(4000));
    json_object_set_new(sim, "dvfs", dvfs);
}

/* Pillar 1b: the memory model of sim_mem.c, set to what our H200 measured
 * (results/GPU-ed40b8f5-aa50-0df5-7128-71d1a0dfa41e) where the paper is silent,
 * and to the paper's 65.8 % effective L2 when every SM reads every page. */
static void default_sim_mem(json_t *sim)
{
    json_t *m = json_object();
    json_object_set_new(m, "hbm_gbps_per_partition", json_real(2245));
    json_object_set_new(m, "fabric_gbps", json_real(1274));
    json_object_set_new(m, "sm_hbm_gbps", json_real(40));
    json_object_set_new(m, "l2_gbps", json_real(8000));
    json_object_set_new(m, "l2_effective_fraction_shared", json_real(0.658));
    json_object_set_new(m, "l2_effective_fraction_private", json_real(1.0));
    json_object_set_new(m, "replicate", json_true());
    json_object_set_new(m, "outlier_rate", json_real(0.05));
    json_object_set_new(sim, "mem", m);
}

static void default_sim(json_t *root)
{
    json_t *sim = json_object();
    json_object_set_new(sim, "seed", json_integer(1));
    json_object_set_new(sim, "jitter", json_real(0.03));
    json_object_set_new(sim, "l2_gbps_per_sm", json_real(180));
    json_object_set_new(sim, "l2_gbps_per_gpc", json_real(1300));
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
