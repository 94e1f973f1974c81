#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/colocation.sh: the co-location experiment (issue 13; paper 001 section
# 7.3) on the real GPU in one command: chart the chip (each lease may be another
# chip), then build/bench/colocation (naive successive green contexts vs the
# SM-set allocator, see bench/colocation.c), writing
# $RESULTS/<gpu-uuid>/colocation.json with provenance and the chart beside it.
#   sh bench/colocation.sh                 # GPU 0, results/ here
#   RESULTS=$OUT sh bench/colocation.sh    # through the device tool
# Extra arguments go to build/bench/colocation (e.g. --reps 3 --seconds 0.3).
set -eu
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
RESULTS=${RESULTS:-results}
mkdir -p "$RESULTS" || exit 1 # a results folder that does not exist yet is made
GPUOS_COMMIT=${GPUOS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
[ -x "$BUILD/bench/colocation" ] || { echo "bench/colocation.sh: build first (make)"; exit 1; }
"$G" info --json "$RESULTS/.info.json" >/dev/null
uuid=$(python3 -c 'import json,sys; d=[x for x in json.load(open(sys.argv[1]))["devices"] if not x["simulated"]]; print(d[0]["uuid"] if d else "")' "$RESULTS/.info.json")
[ -n "$uuid" ] || { echo "bench/colocation.sh: no real GPU"; exit 1; }
dir="$RESULTS/$uuid"
mkdir -p "$dir"
"$G" probe topology --device 0 --json "$dir/colocation-chart.json" >"$dir/colocation.log" 2>&1
"$BUILD/bench/colocation" --chart "$dir/colocation-chart.json" --out "$dir/colocation.json" "$@" 2>&1 | tee -a "$dir/colocation.log"
python3 - "$dir/colocation.json" "$RESULTS/.info.json" "$GPUOS_COMMIT" "$*" <<'PYEOF'
import json, sys, socket, datetime
path, info, commit, args = sys.argv[1:5]
doc = json.load(open(path))
dev = [x for x in json.load(open(info))["devices"] if not x["simulated"]][0]
doc["provenance"] = {
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "commit": commit,
    "command": ("sh bench/colocation.sh " + args).strip(),
    "driver": dev.get("driver", ""),
    "host": socket.gethostname(),
    "gpu": dev["name"],
    "uuid": dev["uuid"],
}
json.dump(doc, open(path, "w"), indent=1)
print("wrote", path)
print()
for key, title in (("naive", "driver's groups of 8 in order"), ("naive_split_by_count", "one split by count")):
    n = doc[key]
    print(f"naive, {title}: first set {n['first_set']['n_sms']} SMs ({n['first_set']['free_floating_sms']} "
          f"free-floating), second {n['second_set']['n_sms']} SMs ({n['second_set']['free_floating_sms']} free-floating)")
    print("| A's cluster | A on 1st set (TFLOP/s) | A on 2nd set | ratio | usable-SM ratio | paper |")
    print("|---|---|---|---|---|---|")
    for r in n["runs"]:
        print(f"| {r['cluster_a']} | {r['a_on_first']['median']:.2f} | {r['a_on_second']['median']:.2f} | "
              f"{r['a_first_over_second']:.3f} | {r['usable_sms_ratio']:.3f} | {r['paper_ratio']:.2f} |")
for r in doc["allocator"]["runs"]:
    print(f"allocator, {r['arrival']}: A {r['a']['median']:.2f} TFLOP/s on {r['a_set']['n_sms']} SMs, "
          f"B {r['b']['median']:.2f} on {r['b_set']['n_sms']} SMs ({r['b_set']['free_floating_sms']} free-floating)")
a = doc["allocator"]
print(f"order difference: A {a['a_order_difference_percent']:.2f} %, B {a['b_order_difference_percent']:.2f} %")
PYEOF
