#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/dvfs.sh: pillar 1c on the real GPU, changing no clock (docs/contracts.md:
# on lent machines everything except the switch runs for real):
#   1. `gpuos dvfs run` without --allow-clock-changes must refuse in one line,
#      exit 1, and leave the clocks as they were (nvidia-smi read before/after);
#   2. `gpuos dvfs probe`: the timing workload on every SM at the current clock
#      (iteration time, spread, iterations needed to separate 15 MHz steps),
#      work sizing for a 15 MHz pair, phase 1 at the current clock, timer
#      synchronisation uncertainty and drift, throttle reasons idle and loaded.
# Logs and JSON go to $OUT (default out/). GPUOS_COMMIT names the commit.
set -u
G=${GPUOS:-build/gpuos}
OUT=${OUT:-out}
mkdir -p "$OUT"
status=0
clocks() {
    nvidia-smi --query-gpu=clocks.sm,clocks.applications.graphics,clocks.default_applications.graphics,clocks_event_reasons.active \
        --format=csv,noheader 2>/dev/null || echo "nvidia-smi unavailable"
}
echo "== refusal without --allow-clock-changes"
before=$(clocks)
"$G" dvfs run --freqs 1980,1965 --device 0 >"$OUT/refusal.out" 2>"$OUT/refusal.err"
rc=$?
after=$(clocks)
cat "$OUT/refusal.err"
echo "exit status $rc; clocks before: $before; after: $after"
lines=$(wc -l <"$OUT/refusal.err")
if [ "$rc" -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -q -- "--allow-clock-changes" "$OUT/refusal.err"; then
    echo "FAIL: expected exit 1 and one line naming --allow-clock-changes"
    status=1
fi
# application clocks (the settable ones) must be unchanged
b=$(echo "$before" | cut -d, -f2-3); a=$(echo "$after" | cut -d, -f2-3)
[ "$a" = "$b" ] || { echo "FAIL: application clocks changed ($b -> $a)"; status=1; }

echo "== dvfs probe (no clock changes)"
"$G" dvfs probe --device 0 --freqs 1980,1965 --json "$OUT/dvfs_probe.json" || status=1
echo "clocks after the probe: $(clocks)"
exit $status
