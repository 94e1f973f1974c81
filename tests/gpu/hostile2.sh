#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/hostile2.sh: issue 23.5 on the real GPU: copies larger than the
# caller's buffers and sizes that wrap (tests/hostile_client.c oversize,
# tests/cudashim_drv.c oversize), through libgpuos and through the shim, on the
# ring and on the socket path ($GPUOS_RING=0), against a daemon on device 0 with
# executors (isolation = process). Every one must be GPUOS_EINVAL /
# CUDA_ERROR_INVALID_VALUE, no crash, the bytes intact. Device machine,
# repository root, build/ built there. Writes $OUT/hostile2.log.
set -u
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
OUT=${OUT:-out}
mkdir -p "$OUT"
LOG="$OUT/hostile2.log"
T=$(mktemp -d)
D=
cleanup() { [ -n "$D" ] && kill -TERM "$D" 2>/dev/null; sleep 1; [ -n "$D" ] && kill -9 "$D" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
printf 'socket = %s/s\n[device 0]\nisolation = process\n[vgpu a]\nmemory = 4G\n' "$T" > "$T/conf"
"$G" serve --config "$T/conf" 2>>"$LOG" &
D=$!
i=0; while [ ! -S "$T/s" ]; do i=$((i + 1)); [ $i -gt 300 ] && { echo "FAIL: no daemon"; exit 1; }; sleep 0.1; done
export GPUOS_SOCKET="$T/s"
fail=0
for ring in 1 0; do
    r=$(GPUOS_RING=$ring timeout 120 "$B/tests/hostile_client" oversize a 2>&1); rc=$?
    echo "libgpuos ring=$ring rc=$rc: $r" | tee -a "$LOG"
    [ $rc -eq 0 ] && echo "$r" | grep -q "oversize copies refused: 52" || fail=1
    r=$(GPUOS_RING=$ring timeout 120 "$G" run --vgpu a -- "$B/tests/cudashim_drv" oversize 2>&1); rc=$?
    echo "shim ring=$ring rc=$rc: $r" | tee -a "$LOG"
    [ $rc -eq 0 ] && echo "$r" | grep -q "oversize ok 51" || fail=1
done
kill -0 "$D" || { echo "FAIL: the daemon died"; fail=1; }
[ $fail -eq 0 ] && echo "hostile2 (GPU): ok" || echo "FAIL: hostile2 (GPU)"
exit $fail
