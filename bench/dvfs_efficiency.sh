#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/dvfs_efficiency.sh: the switching-latency campaign's efficiency on the
# simulated device (the goal: LATEST takes hundreds of
# measurements per pair; ours should reach the same precision with fewer).
# Runs the same campaign twice on the built-in simulated H200:
#   adaptive: stop when the relative standard error of the kept latencies is
#             under 5 % (checked every 25 measurements, at least 25, at most 500);
#   raw:      the same with the paper's RSE over all viable latencies (--rse-raw);
#   fixed:    300 measurements per pair (--min 300 --max 300);
# and reports measurement counts, campaign time (the simulated device's
# virtual clock: kernels, sleeps, waits) and their ratios, plus per pair the
# mean, its 95 % interval and the error against the model's truth.
# Output: a table on stdout and $OUT/dvfs_efficiency.json (OUT default bench/out).
set -eu
G=${GPUOS:-build/gpuos}
OUT=${OUT:-bench/out}
FREQS=${FREQS:-1980,1605,1260}
mkdir -p "$OUT"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
common="--sim default --freqs $FREQS --sms 8 --max-iters 4000 --quiet"
start=$(date +%s)
"$G" dvfs run $common --rse 5 --json "$T/adaptive.json"
"$G" dvfs run $common --rse 5 --rse-raw --json "$T/raw.json"
"$G" dvfs run $common --min 300 --max 300 --json "$T/fixed.json"
/usr/bin/python3 - "$T" "$OUT/dvfs_efficiency.json" "$(( $(date +%s) - start ))" <<'PYEOF'
import json, sys
T, out, wall = sys.argv[1], sys.argv[2], int(sys.argv[3])
a = json.load(open(f"{T}/adaptive.json"))
f = json.load(open(f"{T}/fixed.json"))
raw = json.load(open(f"{T}/raw.json"))
# the built-in chip's model (src/chip/default_chip.c): per-target means,
# 20 ms elsewhere, one two-cluster pair
truth = lambda i, t: 19.2 if (i, t) == (1755, 1410) else {1980: 8.0, 1260: 35.0}.get(t, 20.0)
rows = []
print(f"{'pair':>12} {'adaptive n':>10} {'mean ms':>8} {'95% CI':>17} {'err %':>6} | "
      f"{'fixed n':>7} {'mean ms':>8} {'95% CI':>17} {'err %':>6}")
for pa, pf in zip(a["pairs"], f["pairs"]):
    key = (pa["init_mhz"], pa["target_mhz"])
    assert key == (pf["init_mhz"], pf["target_mhz"])
    if "mean_ms" not in pa or "mean_ms" not in pf:
        continue
    tr = truth(*key)
    r = {"init_mhz": key[0], "target_mhz": key[1], "truth_ms": tr}
    for name, p in (("adaptive", pa), ("fixed", pf)):
        r[name] = {k: p[k] for k in ("n_measurements", "n", "mean_ms", "ci95_ms", "rse_kept")}
        r[name]["error_pct"] = 100 * (p["mean_ms"] - tr) / tr
    rows.append(r)
    fa, ff = r["adaptive"], r["fixed"]
    print(f"{key[0]:>5}->{key[1]:<5} {fa['n_measurements']:>10} {fa['mean_ms']:>8.2f} "
          f"[{fa['ci95_ms'][0]:>6.2f},{fa['ci95_ms'][1]:>6.2f}] {fa['error_pct']:>6.1f} | "
          f"{ff['n_measurements']:>7} {ff['mean_ms']:>8.2f} [{ff['ci95_ms'][0]:>6.2f},{ff['ci95_ms'][1]:>6.2f}] "
          f"{ff['error_pct']:>6.1f}")
res = {"freqs_mhz": a["pairs"] and sorted({p["init_mhz"] for p in a["pairs"]}, reverse=True),
       "adaptive": {k: a[k] for k in ("measurements", "attempts", "total_s")},
       "fixed_300": {k: f[k] for k in ("measurements", "attempts", "total_s")},
       "adaptive_raw_rse": {k: raw[k] for k in ("measurements", "attempts", "total_s")},
       "ratio_measurements_raw_rse": raw["measurements"] / f["measurements"],
       "ratio_time_raw_rse": raw["total_s"] / f["total_s"],
       "ratio_measurements": a["measurements"] / f["measurements"],
       "ratio_attempts": a["attempts"] / f["attempts"],
       "ratio_time": a["total_s"] / f["total_s"],
       "max_abs_error_pct": {"adaptive": max(abs(r["adaptive"]["error_pct"]) for r in rows),
                             "fixed_300": max(abs(r["fixed"]["error_pct"]) for r in rows)},
       "truth_in_ci95": {"adaptive": sum(r["adaptive"]["ci95_ms"][0] <= r["truth_ms"] <= r["adaptive"]["ci95_ms"][1] for r in rows),
                         "fixed_300": sum(r["fixed"]["ci95_ms"][0] <= r["truth_ms"] <= r["fixed"]["ci95_ms"][1] for r in rows),
                         "pairs": len(rows)},
       "bench_wall_s": wall, "pairs": rows}
json.dump(res, open(out, "w"), indent=2)
print(f"\nadaptive (RSE < 5 %): {a['measurements']} measurements, {a['total_s']:.0f} s of device time; "
      f"fixed 300/pair: {f['measurements']} measurements, {f['total_s']:.0f} s")
print(f"paper's RSE over all latencies (--rse-raw): {raw['measurements']} measurements, {raw['total_s']:.0f} s; "
      f"ratio to fixed: measurements {res['ratio_measurements_raw_rse']:.3f}, time {res['ratio_time_raw_rse']:.3f}")
print(f"ratio adaptive/fixed: measurements {res['ratio_measurements']:.3f}, time {res['ratio_time']:.3f} "
      f"(x{1 / res['ratio_time']:.1f} faster); worst error vs truth {res['max_abs_error_pct']['adaptive']:.1f} % "
      f"vs {res['max_abs_error_pct']['fixed_300']:.1f} %")
PYEOF
