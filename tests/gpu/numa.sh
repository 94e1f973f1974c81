#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/numa.sh: pillar 1b on the real GPU (run on the device machine from
# the repository root, with build/ carried from the build machine).
#
#   1. SASS check: in gos_numa_probe / gos_numa_sweep the timed load must sit
#      between the two clock reads, followed by its shared-memory store;
#   2. `probe all` three times (timing must be under 10 s; partitions and hash
#      must agree across the runs);
#   3. `probe numa --verify all` (whole memory, under 60 s, agreement rate);
#   4. `report` of the first chart.
# Results go to $RES (default /tmp/gpuos-numa): chip1..3.json, verify.json,
# report.html, numa.sass, provenance.json, the outputs; when $OUT is set (the
# device tool's folder) they are also packed into $OUT/numa-results.tar.gz.
# Exit status: non-zero if a check fails.
set -u
G=${GPUOS:-build/gpuos}
RES=${RES:-/tmp/gpuos-numa}
mkdir -p "$RES"
fail=0
say() { echo "== $*"; }

say "SASS of the latency probes"
if command -v cuobjdump >/dev/null 2>&1; then
    cuobjdump -sass build/kernels/numa.fatbin > "$RES/numa.sass" 2>&1
    grep -c "SR_CLOCK" "$RES/numa.sass" | sed 's/^/clock reads: /'
    # gos_numa_sweep from the warm-up load to the second clock read: the discard
    # (CCTL.E.RML2) must come after the warm-up value is stored (STS), and the
    # timed LDG + STS must sit between the two SR_CLOCK reads.
    awk '/Function : / {on = /gos_numa_sweep/} on {l[n++] = $0} END {
           for (i = 0; i < n; i++) if (l[i] ~ /SR_CLOCK/) { c[k++] = i }
           s = c[0] - 24; if (s < 0) s = 0
           for (i = s; i <= c[1]; i++) if (l[i] ~ /\/\*[0-9a-f]+\*\//) print l[i] }' "$RES/numa.sass"
else
    echo "cuobjdump not found: SASS not checked"
fi

say "probe numa alone, three discoveries (--repeat 3)"
"$G" probe numa --repeat 3 --json "$RES/numa.json" > "$RES/numa.txt" 2>&1 || fail=1; cat "$RES/numa.txt"
say "probe memory alone"
"$G" probe memory > "$RES/memory.txt" 2>&1 || fail=1; cat "$RES/memory.txt"

for k in 1 2 3; do
    say "probe all, run $k"
    t0=$(date +%s.%N)
    "$G" probe all --json "$RES/chip$k.json" > "$RES/all$k.txt" 2>&1 || { fail=1; echo "probe all failed"; }
    t1=$(date +%s.%N)
    cat "$RES/all$k.txt"
    echo "wall: $(awk "BEGIN{print $t1 - $t0}") s"
done

say "agreement of the three runs"
if ! command -v python3 >/dev/null; then
    echo "python3 missing: agreement not checked"
else
python3 - "$RES" <<'PY' || fail=1
import json, sys
out = sys.argv[1]
runs = [json.load(open(f"{out}/chip{k}.json")) for k in (1, 2, 3)]
def key(c):
    parts = sorted(tuple(sorted(p["sms"])) for p in c["numa"]["partitions"])
    return parts, c["numa"]["hash"]["in_page_bits"], c["numa"]["hash"]["granularity_bytes"]
ok = all(key(r) == key(runs[0]) for r in runs)
print("partitions and hash identical in 3 runs:", ok)
for r in runs:
    l = r["numa"]["latency_cycles"]; m = r.get("memory", {})
    print("  latency", {k: round(v) for k, v in l.items()},
          "L2eff %.1f %%" % (100 * m.get("l2_effective_fraction", 0)),
          "bw", {k: round(v) for k, v in m.get("hbm_bandwidth_gbps", {}).items() if k != "working_set_bytes"},
          "time %.2f s" % r["probe"]["seconds"])
sys.exit(0 if ok else 1)
PY
fi

say "verify all memory"
t0=$(date +%s.%N)
"$G" probe numa --verify all --json "$RES/verify.json" > "$RES/verify.txt" 2>&1 || { fail=1; echo "verify failed"; }
t1=$(date +%s.%N)
tail -20 "$RES/verify.txt"
echo "wall: $(awk "BEGIN{print $t1 - $t0}") s"

say "diagnostic: verify 16G with every SM probing at once (GPUOS_SWEEP_SMS=999)"
GPUOS_SWEEP_SMS=999 "$G" probe numa --verify 16G > "$RES/verify-allsms.txt" 2>&1 || echo "(failed)"
grep -E "verification|gpuos:" "$RES/verify-allsms.txt"

say "report"
if "$G" report "$RES/chip1.json" --html "$RES/report.html"; then ls -la "$RES/report.html"; else fail=1; fi

say "provenance"
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
printf '{"date": "%s", "commit": "%s", "command": "sh tests/gpu/numa.sh", "driver": "%s", "host": "%s", "gpu_uuid": "%s"}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${GOS_COMMIT:-unknown}" "$drv" "$(hostname)" "$uuid" > "$RES/provenance.json"
cat "$RES/provenance.json"
[ -n "${OUT:-}" ] && tar -czf "$OUT/numa-results.tar.gz" -C "$RES" .
echo "numa.sh: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
