#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/shm.sh: shared device memory and swapping on the real GPU (issue 10; paper
# 002 sections 4.2, 4.3): runs build/bench/shm_bench at full size:
#   chain  20 rounds of 256 MB kernels across two processes, data through one
#          exported VMM segment vs through pinned host memory (speedup);
#   turns  two vGPUs of ~100 GB each (4 GiB buffers) on the whole device,
#          taking turns, every buffer checked word by word at each turn;
#   rate   eviction and restore time against size (2 MB .. 8 GB) against the
#          pinned copy of the same bytes in the same run.
# Writes $RES/shm-bench.json (default results/<gpu-uuid>), the log and
# shm-provenance.json; copies them to $OUT when set (the device tool).
# SHM_BENCH overrides the binary (a prebuilt one carried to the GPU machine);
# SHM_ARGS adds options (e.g. --turn-mb 20000 for a shorter run).
set -u
BUILD=${BUILD:-build}
B=${SHM_BENCH:-$BUILD/bench/shm_bench}
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
[ -n "$uuid" ] || { echo "shm.sh: no GPU (nvidia-smi gave no UUID)"; exit 1; }
RES=${RES:-results/$uuid}
mkdir -p "$RES"
t0=$(date +%s)
# shellcheck disable=SC2086
"$B" --out "$RES/shm-bench.json" ${SHM_ARGS:-} 2>&1 | tee "$RES/shm-bench.log"
rc=$?
grep -q "all checks byte-exact" "$RES/shm-bench.log" || rc=1
# What one swap costs a BAND-scheduled tenant, through the daemon: vGPU a's
# buffer evicted by b's allocation, then a's next launch + synchronise (its
# buffer restored, one chunk of b evicted) against the same launch resident.
G=${GPUOS:-$BUILD/gpuos}
C=${SHM_CLIENT:-$BUILD/tests/shm_client}
D=$(mktemp -d)
printf 'socket = %s\nmemory_oversubscribe = 1\n[device 0]\npolicy = band\nswap = 40G\nswap_pool = 32G\n[vgpu a]\ncompute = 50\ncopy = 50\nmemory = 40G\n[vgpu b]\ncompute = 50\ncopy = 50\nmemory = 40G\n' "$D/s" > "$D/conf"
"$G" serve --config "$D/conf" 2> "$RES/shm-swapcost-serve.log" &
DP=$!
i=0; while [ ! -S "$D/s" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
GPUOS_SOCKET="$D/s" timeout 300 "$C" a swapcost b 32768 ${SWAPCOST_MB:-256 1024 4096 16384} 2>&1 | tee "$RES/shm-swapcost.log"
kill $DP; wait $DP
rm -rf "$D"
/usr/bin/python3 - "$RES/shm-bench.json" "$RES/shm-swapcost.log" "$RES/shm-swapcost.json" <<'PY' || rc=1
import json, sys
r = json.load(open(sys.argv[1]))
rows = []
for line in open(sys.argv[2]):
    if line.startswith("swapcost bytes="):
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        rows.append({k: (float(v) if "." in v else int(v)) for k, v in kv.items()})
out = {"schema": "gpuos.shm-swapcost/1", "provenance": r["provenance"], "device": r["device"],
       "policy": "band", "pool_bytes": 32 << 30, "rows": rows}
json.dump(out, open(sys.argv[3], "w"), indent=2)
assert rows and all(x["byte_exact"] == 1 for x in rows), rows
PY
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
printf '{"date": "%s", "commit": "%s", "command": "sh bench/shm.sh %s", "driver": "%s", "host": "%s", "gpu_uuid": "%s", "seconds": %s}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${GOS_COMMIT:-${GPUOS_COMMIT:-unknown}}" "${SHM_ARGS:-}" "$drv" "$(hostname)" "$uuid" \
    "$(( $(date +%s) - t0 ))" > "$RES/shm-provenance.json"
if [ -n "${OUT:-}" ]; then
    cp "$RES"/shm-bench.json "$RES"/shm-bench.log "$RES"/shm-provenance.json "$RES"/shm-swapcost.log "$RES"/shm-swapcost.json "$OUT"/ 2>/dev/null
fi
echo "shm.sh: $([ $rc -eq 0 ] && echo done || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $rc
