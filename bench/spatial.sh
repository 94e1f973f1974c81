#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/spatial.sh: two spatial vGPUs side by side against two temporal (BAND)
# vGPUs of the same shares (issue 13), on the real GPU through `gpuos serve`:
#   spatial : A (sms = 64, cluster = 8) and B (sms = 64, cluster = 2), each on its
#             own SM set (a green context), both at once;
#   temporal: A and B with compute = 50 each on the whole GPU, time-shared by BAND.
# Tenant A launches kernels/gemm_cluster.cu with clusters of 8, B with clusters of
# 2 (build/bench/spatial_client, one block per SM), both for --seconds at once.
# Writes $RESULTS/<gpu-uuid>/spatial-vgpu.json (provenance included).
set -eu
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
RESULTS=${RESULTS:-results}
mkdir -p "$RESULTS" || exit 1 # a results folder that does not exist yet is made
SECONDS_RUN=${SECONDS_RUN:-3}
GPUOS_COMMIT=${GPUOS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
C="$BUILD/bench/spatial_client"
[ -x "$C" ] || { echo "bench/spatial.sh: build first (make)"; exit 1; }
"$G" info --json "$RESULTS/.info.json" >/dev/null
uuid=$(python3 -c 'import json,sys; d=[x for x in json.load(open(sys.argv[1]))["devices"] if not x["simulated"]]; print(d[0]["uuid"] if d else "")' "$RESULTS/.info.json")
[ -n "$uuid" ] || { echo "bench/spatial.sh: no real GPU"; exit 1; }
dir="$RESULTS/$uuid"
mkdir -p "$dir"
W=$(mktemp -d)
DPID=
trap '[ -n "$DPID" ] && kill -9 $DPID 2>/dev/null; rm -rf "$W"' EXIT
"$G" probe topology --device 0 --json "$dir/spatial-chart.json" >"$dir/spatial.log" 2>&1
for mode in spatial temporal; do
    {
        echo "socket = $W/s"
        echo "[device 0]"
        echo "chip = $dir/spatial-chart.json"
        echo "isolation = none"   # spatial vGPUs need the daemon's own context
        echo "policy = band"
        for v in A B; do
            echo "[vgpu $v]"
            echo "compute = 50"
            echo "memory = 10%"
            if [ $mode = spatial ]; then
                echo "sms = 64"
                [ $v = A ] && echo "cluster = 8" || echo "cluster = 2"
            fi
        done
    } >"$W/$mode.conf"
    "$G" serve --config "$W/$mode.conf" 2>>"$dir/spatial.log" &
    DPID=$!
    i=0
    while [ ! -S "$W/s" ]; do
        i=$((i + 1)); [ $i -le 300 ] || { echo "daemon did not come up"; exit 1; }
        sleep 0.1
    done
    GPUOS_SOCKET="$W/s" "$C" --vgpu A --cluster 8 --seconds "$SECONDS_RUN" >"$W/$mode-A.json" & pa=$!
    GPUOS_SOCKET="$W/s" "$C" --vgpu B --cluster 2 --seconds "$SECONDS_RUN" >"$W/$mode-B.json" & pb=$!
    wait $pa; wait $pb
    kill -TERM $DPID; wait $DPID || true; DPID=
done
python3 - "$W" "$dir/spatial-vgpu.json" "$RESULTS/.info.json" "$GPUOS_COMMIT" <<'PYEOF'
import json, sys, socket, datetime
w, path, info, commit = sys.argv[1:5]
dev = [x for x in json.load(open(info))["devices"] if not x["simulated"]][0]
doc = {"schema": "gpuos.spatial-vgpu/1", "gpu": dev["name"], "uuid": dev["uuid"], "runs": {}}
for mode in ("spatial", "temporal"):
    r = {v: json.load(open(f"{w}/{mode}-{v}.json")) for v in ("A", "B")}
    r["total_tflops"] = r["A"]["tflops"] + r["B"]["tflops"]
    doc["runs"][mode] = r
doc["provenance"] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "commit": commit, "command": "sh bench/spatial.sh", "driver": dev.get("driver", ""),
                     "host": socket.gethostname(), "gpu": dev["name"], "uuid": dev["uuid"]}
json.dump(doc, open(path, "w"), indent=1)
print("wrote", path)
print("| vGPUs | A (cluster 8) TFLOP/s | B (cluster 2) TFLOP/s | total |")
print("|---|---|---|---|")
for mode, r in doc["runs"].items():
    print(f"| {mode} | {r['A']['tflops']:.2f} | {r['B']['tflops']:.2f} | {r['total_tflops']:.2f} |")
PYEOF
