#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vgpu_tables.py FILE.json: the tables (markdown) of docs/readme-vgpu.md from a
vgpu-bench result (bench/vgpu_bench.c, schema gpuos.vgpu-bench/1). Standard library
only."""
import json
import sys


def size(n):
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= k and n % k == 0:
            return "%d %s" % (n // k, unit)
    return "%d B" % n


def main(path):
    d = json.load(open(path))
    out = []
    p = d.get("provenance", {})
    dev = d.get("device", {})
    out.append("Device: %s%s (%s), driver %s, host %s, %s, commit %s.\n" % (
        "simulated " if dev.get("simulated") else "", dev.get("name"), dev.get("uuid"),
        p.get("driver") or "?", p.get("host"), p.get("date"), (p.get("commit") or "?")[:12]))
    if "copy" in d:
        out.append("**Copies** (GB/s; native = CUDA driver in-process, gpuos = through the daemon)\n")
        out.append("| bytes | dir | host memory | native | gpuos | gpuos/native |")
        out.append("|---:|---|---|---:|---:|---:|")
        for c in d["copy"]:
            out.append("| %s | %s | %s | %.2f | %.2f | %.0f %% |" % (
                size(c["bytes"]), c["dir"], c["host_mem"], c["native_gbps"], c["gpuos_gbps"],
                100 * c["gpuos_gbps"] / c["native_gbps"] if c["native_gbps"] else 0))
        out.append("")
    if "chunk_sweep" in d:
        s = d["chunk_sweep"]
        out.append("**Chunk size x pipeline depth** (pageable %s through the daemon; best: %s, depth %d)\n" % (
            size(s["bytes"]), size(s["best_chunk"]), s["best_depth"]))
        out.append("| chunk | depth | pageable htod | pageable dtoh | pinned htod | pinned dtoh |")
        out.append("|---:|---:|---:|---:|---:|---:|")
        for x in s["points"]:
            out.append("| %s | %d | %.2f | %.2f | %.2f | %.2f |" % (size(x["chunk"]), x["depth"], x["htod_gbps"],
                       x["dtoh_gbps"], x.get("htod_pinned_gbps", 0), x.get("dtoh_pinned_gbps", 0)))
        out.append("")
    if "small_copy" in d:
        s = d["small_copy"]
        out.append("**Small-copy path vs pipeline** (us per copy; crossover htod %s, dtoh %s)\n" % (
            size(s["crossover_htod"]) if s["crossover_htod"] else "none",
            size(s["crossover_dtoh"]) if s["crossover_dtoh"] else "none"))
        out.append("| bytes | dir | pipelined | small path |")
        out.append("|---:|---|---:|---:|")
        for x in s["points"]:
            out.append("| %s | %s | %.1f | %.1f |" % (size(x["bytes"]), x["dir"], x["pipelined_us"], x["small_path_us"]))
        out.append("")
    if "launch_us" in d:
        l = d["launch_us"]
        out.append("**Launch overhead** (us per launch)\n")
        out.append("| | native | gpuos | added |")
        out.append("|---|---:|---:|---:|")
        out.append("| back-to-back launches | %.2f | %.2f | %.2f |" % (l["native"], l["gpuos"], l["added"]))
        s = l["launch_sync_us"]
        out.append("| launch + synchronise | %.2f | %.2f | %.2f |" % (s["native"], s["gpuos"], s["added"]))
        out.append("")
    if "standalone" in d:
        out.append("**Gdev's standalone benchmarks** (seconds)\n")
        out.append("| program | native | gpuos | relative speed |")
        out.append("|---|---:|---:|---:|")
        for x in d["standalone"]:
            out.append("| %s | %.4f | %.4f | %.2f |" % (x["name"], x["native_s"], x["gpuos_s"], x["relative_speed"]))
        out.append("")
    if "fairness" in d:
        out.append("**Fairness** (equal shares; bursty clients, kernels 1 ms and 10 ms alternating across vGPUs; "
                   "error = max |achieved - share| in points of GPU time)\n")
        out.append("| policy | vGPUs | achieved (GPU time) | max error (points) | relative to share | "
                   "achieved (GPU + held time) |")
        out.append("|---|---:|---|---:|---:|---|")
        for x in d["fairness"]:
            pol = x["policy"]
            if pol == "band" and x.get("band_charge_hold", -1) == 0:
                pol = "band, holds not charged"
            elif pol == "band" and x.get("band_charge_hold", -1) == 1:
                pol = "band, holds charged"
            eng = x.get("achieved_engine_time")
            out.append("| %s | %d | %s | %.2f | %.1f %% | %s |" % (
                pol, x["vgpus"], " ".join("%.3f" % a for a in x["achieved"]), x["max_error_pct"],
                x.get("max_rel_error_pct", 0), " ".join("%.3f" % a for a in eng) if eng else "-"))
        out.append("")
    if "queues" in d:
        out.append("**MRQ vs SDQ** (2 compute clients with 2 ms kernels + 2 copy clients, together)\n")
        out.append("| queues | kernels/s | compute busy | copy GB/s |")
        out.append("|---|---:|---:|---:|")
        for x in d["queues"]:
            out.append("| %s | %.1f | %.2f | %.2f |" % (x["queue"], x["kernels_per_s"], x["compute_busy"], x["copy_gbps"]))
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
