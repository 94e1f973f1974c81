#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/placement.sh: partition-local memory on the real GPU (pillar 2, paper 001
# section 7.1). Charts this chip first (each lease may be another physical GPU),
# then runs build/bench/placement_bench, which writes placement-check.json,
# placement-locality.json, placement-gemv.json and placement-unequal.json.
# Results go to $RES (default results/<gpu-uuid>), with chip.json, the log and
# provenance.json; when $OUT is set (the device tool) they are copied there too.
set -u
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
B=$BUILD/bench/placement_bench
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
[ -n "$uuid" ] || { echo "placement.sh: no GPU (nvidia-smi gave no UUID)"; exit 1; }
RES=${RES:-results/$uuid}
mkdir -p "$RES"
t0=$(date +%s)
echo "== chart ($G probe numa)"
"$G" probe numa --json "$RES/chip.json" > "$RES/placement-chart.log" 2>&1 || { cat "$RES/placement-chart.log"; exit 1; }
tail -8 "$RES/placement-chart.log"
echo "== $B"
# The log is written aside and moved into place at the end: a caller that sends
# this script's own output to placement.log too (sh bench/placement.sh >
# $RES/placement.log) then cannot interleave with it (two writers at two offsets
# of one file leave NUL bytes), and rc is the bench's, not tee's.
"$B" --chart "$RES/chip.json" --out "$RES" > "$RES/.placement.log.$$" 2>&1
rc=$?
cat "$RES/.placement.log.$$"
mv -f "$RES/.placement.log.$$" "$RES/placement.log"
[ -f "$RES/placement-unequal.json" ] || rc=1
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
printf '{"date": "%s", "commit": "%s", "command": "sh bench/placement.sh", "driver": "%s", "host": "%s", "gpu_uuid": "%s", "seconds": %s}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${GOS_COMMIT:-unknown}" "$drv" "$(hostname)" "$uuid" "$(( $(date +%s) - t0 ))" \
    > "$RES/placement-provenance.json"
if [ -n "${OUT:-}" ]; then
    cp "$RES"/chip.json "$RES"/placement-*.json "$RES"/placement.log "$OUT"/ 2>/dev/null
fi
echo "placement.sh: $([ $rc -eq 0 ] && echo done || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $rc
