#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/smset.sh: SM sets on the real GPU (issue 13). Charts the topology,
# then lets `gpuos place --verify` run every set's green context: one block per
# SM lands on exactly the set's SMs, all at once, and the promised clusters of the
# request's size are co-resident. Checks here: every set verified; for clusters
# > 2 the chart's promise is exact (one cluster more does not fit); the cluster-8
# set holds no free-floating SM, in either arrival order. Logs under $OUT.
set -eu
G=${GPUOS:-build/gpuos}
OUT=${OUT:-out}
mkdir -p "$OUT"
"$G" probe topology --device 0 --json "$OUT/smset-chart.json" >"$OUT/smset.log"
rc=0
"$G" place --device 0 --chart "$OUT/smset-chart.json" --verify --json - --sms 64 --cluster 8 --sms 64 --cluster 2 \
    >"$OUT/smset-a-first.json" 2>>"$OUT/smset.log" || rc=1
"$G" place --device 0 --chart "$OUT/smset-chart.json" --verify --json - --sms 64 --cluster 2 --sms 64 --cluster 8 \
    >"$OUT/smset-b-first.json" 2>>"$OUT/smset.log" || rc=1
"$G" place --device 0 --chart "$OUT/smset-chart.json" --verify --json - --sms 32 --cluster 8 --sms 24 --cluster 4 --sms 16 --cluster 16 \
    --sms 40 --cluster 2 --sms 16 --cluster 1 >"$OUT/smset-mixed.json" 2>>"$OUT/smset.log" || true
"$G" place --device 0 --chart "$OUT/smset-chart.json" --verify --json - --sms 16 --cluster 1 --align --sms 48 --cluster 8 \
    --align >"$OUT/smset-align.json" 2>>"$OUT/smset.log" || rc=1
# A measurement, not a check: do green contexts work inside an MPS client?
if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/gpuos-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gpuos-mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        if timeout 120 "$G" place --device 0 --chart "$OUT/smset-chart.json" --verify --sms 64 --cluster 8 --sms 64 \
            --cluster 2 >"$OUT/smset-mps.txt" 2>&1; then
            echo "green contexts inside an MPS client: sets verified" | tee -a "$OUT/smset.log"
        else
            echo "green contexts inside an MPS client: FAILED: $(tail -2 "$OUT/smset-mps.txt")" | tee -a "$OUT/smset.log"
        fi
        echo quit | nvidia-cuda-mps-control
        sleep 1
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
python3 - "$OUT" $rc <<'PYEOF' | tee -a "$OUT/smset.log"
import json, sys
out, rc = sys.argv[1], int(sys.argv[2])
chart = json.load(open(f"{out}/smset-chart.json"))
free = set()
for g in chart["topology"]["gpcs"]:
    free |= set(g["sms"]) - set(g["cluster_sms"])
ok = rc == 0
for name in ("a-first", "b-first", "mixed", "align"):
    doc = json.load(open(f"{out}/smset-{name}.json"))
    for s in doc["sets"]:
        if "refused" in s:
            expected = s["request"]["cluster"] > 8 and "at most 8" in s["refused"]
            print(f"{name}: request {s['request']} refused{' (expected)' if expected else ''}: {s['refused']}")
            ok &= expected; continue
        v = s["verified"]
        exact = s["request"]["cluster"] <= 2 or not v["one_more_fits"]
        print(f"{name}: set {s['id']}: {s['n_sms']} SMs, cluster {v['cluster']}: {v['promised_clusters']} promised, "
              f"fit {v['promised_fit']}, one more fits {v['one_more_fits']}, SMs seen {v['sms_seen']}, "
              f"outside {v['blocks_outside_set']}: {'OK' if v['ok'] and exact else 'FAIL'}")
        ok &= v["ok"] and exact
        if s["request"]["cluster"] == 8 and free & set(s["sms"]):
            print(f"{name}: the cluster-8 set holds free-floating SMs {sorted(free & set(s['sms']))}"); ok = False
sys.exit(0 if ok else 1)
PYEOF
