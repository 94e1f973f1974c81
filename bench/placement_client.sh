#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/placement_client.sh: partition-local memory for a vGPU client on the real
# GPU (issue 12). Charts this chip (`gpuos probe numa`), starts `gpuos serve`
# with the chart as its device's `chip =` (isolation = process: the client's
# executor allocates and probes), and runs build/bench/placement_client against
# it: placement by latency, byte-exact copies through the views, and the
# client's own READ kernel from partition 0's SMs on view 0 / view 1 /
# interleaved. Writes $RES/placement-client.json (RES default
# results/<gpu-uuid>) with provenance; copies it, the log and the chart to $OUT
# when set (the device tool).
set -u
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
BYTES=${BYTES:-8589934592}
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
[ -n "$uuid" ] || { echo "placement_client.sh: no GPU (nvidia-smi gave no UUID)"; exit 1; }
RES=${RES:-results/$uuid}
mkdir -p "$RES"
RES=$(cd "$RES" && pwd)
t0=$(date +%s)
T=$(mktemp -d)
DPID=
cleanup() { [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null; sleep 1; [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
echo "== chart ($G probe numa)"
"$G" probe numa --json "$RES/chip.json" > "$RES/placement-client-chart.log" 2>&1 || { cat "$RES/placement-client-chart.log"; exit 1; }
tail -4 "$RES/placement-client-chart.log"
cat > "$T/conf" <<CONF
socket = $T/s
[device 0]
isolation = process
chip = $RES/chip.json
[vgpu a]
compute = 100
copy = 100
memory = 50%
CONF
"$G" serve --config "$T/conf" 2> "$RES/placement-client-serve.log" &
DPID=$!
i=0
while [ ! -S "$T/s" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && { echo "daemon did not come up"; cat "$RES/placement-client-serve.log"; exit 1; }
    sleep 0.1
done
echo "== $BUILD/bench/placement_client (vGPU a, $BYTES bytes per view)"
GPUOS_SOCKET="$T/s" "$BUILD/bench/placement_client" a "$BUILD/kernels/place.fatbin" "$BYTES" \
    "$RES/placement-client.json" 2>&1 | tee "$RES/placement-client.log"
rc=$?
[ -s "$RES/placement-client.json" ] && grep -q "placement_client: pass" "$RES/placement-client.log" || rc=1
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
prov=$(printf '{"date": "%s", "commit": "%s", "command": "sh bench/placement_client.sh", "driver": "%s", "host": "%s", "gpu_uuid": "%s", "seconds": %s}' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${GOS_COMMIT:-unknown}" "$drv" "$(hostname)" "$uuid" "$(( $(date +%s) - t0 ))")
if [ -s "$RES/placement-client.json" ]; then
    python3 - "$RES/placement-client.json" "$prov" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["provenance"] = json.loads(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
fi
if [ -n "${OUT:-}" ]; then
    cp "$RES"/chip.json "$RES"/placement-client*.json "$RES"/placement-client*.log "$OUT"/ 2>/dev/null
fi
echo "placement_client.sh: $([ $rc -eq 0 ] && echo done || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $rc
