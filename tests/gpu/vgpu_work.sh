#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/vgpu_work.sh: on the real GPU (device machine, repository root,
# build/ carried; GPU_PREBUILT=1: nothing is built there), vgpu_bench's native
# and vGPU sides run the same work (issue 40 item 5): the paired sections
# (copy, ringprobe, launch, standalone, neighbour) under isolation process and
# none, --quick, with --ops; tests/vgpu_ops_check.py then checks that every
# pair's operations (launches, synchronises, copies and bytes each way,
# allocations) are equal and what the workloads say. Prints the run's native
# and gpuos numbers beside those of the newest committed vgpu-bench.json of a
# GPU of the same name (for the eye: no threshold), then a PASS/FAIL table.
# Full logs and both JSON files under $OUT. About 1.5 minutes.
set -u
OUT=${OUT:-out}
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
mkdir -p "$OUT"
if [ "${GPU_PREBUILT:-0}" != 1 ]; then make -s -j"$(nproc)" >"$OUT/vgpu-work-make.log" 2>&1 || { echo "FAIL make"; exit 1; }; fi
PY=$(command -v python3)
status=0
table=""
row() { # PASS|FAIL, what
    table="$table$1 $2
"
    [ "$1" = PASS ] || status=1
}
if [ ! -x "$B/bench/vgpu_bench" ]; then
    echo "FAIL no $B/bench/vgpu_bench: build it with make before carrying build/"
    exit 1
fi
t0=$(date +%s)
timeout 300 "$B/bench/vgpu_bench" --gpuos "$G" --quick --only copy,ringprobe,launch,standalone,neighbour \
    --isolation process,none --ops "$OUT/vgpu-work-ops.json" --out "$OUT/vgpu-work.json" >"$OUT/vgpu-work.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then row PASS "vgpu_bench --quick, 5 paired sections x 2 modes ($(( $(date +%s) - t0 )) s)"
else row FAIL "vgpu_bench exit $rc (see $OUT/vgpu-work.log)"; tail -15 "$OUT/vgpu-work.log"; fi
if [ $rc -eq 0 ]; then
    "$PY" tests/vgpu_ops_check.py "$OUT/vgpu-work-ops.json" "$OUT/vgpu-work.json" --quick >"$OUT/vgpu-work-check.txt" 2>&1
    if [ $? -eq 0 ]; then row PASS "native and gpuos issued the same operations: $(tail -1 "$OUT/vgpu-work-check.txt")"
    else row FAIL "native and gpuos differ"; head -20 "$OUT/vgpu-work-check.txt"; fi
    grep -E "^(launch us|standalone|neighbour|copy (htod|dtoh) +16777216)" "$OUT/vgpu-work.log"
    "$PY" - "$OUT/vgpu-work.json" <<'EOF'
import glob, json, sys
now = json.load(open(sys.argv[1]))
name, last = now["device"]["name"], None
for f in glob.glob("results/*/vgpu-bench.json"):
    d = json.load(open(f))
    if d.get("device", {}).get("name") == name and "launch_us" in d:
        if not last or d["provenance"]["date"] > last[1]["provenance"]["date"]:
            last = (f, d)
if not last:
    print("no committed vgpu-bench.json of a %s to set beside" % name)
    sys.exit(0)
f, d = last
print("beside the newest committed run of a %s (%s, %s):" % (name, f, d["provenance"]["date"]))
a, b = now["launch_us"], d["launch_us"]
print("  launch us      native %6.2f gpuos %6.2f   (then native %6.2f gpuos %6.2f)" % (a["native"], a["gpuos"], b["native"], b["gpuos"]))
a, b = a["launch_sync_us"], b["launch_sync_us"]
print("  launch+sync us native %6.2f gpuos %6.2f   (then native %6.2f gpuos %6.2f)" % (a["native"], a["gpuos"], b["native"], b["gpuos"]))
then = {p["name"]: p for p in d.get("standalone", [])}
for p in now.get("standalone", []):
    q = then.get(p["name"])
    print("  %-6s gpuos/native %.2fx%s" % (p["name"], p["gpuos_s"] / p["native_s"],
                                        "   (then %.2fx)" % (q["gpuos_s"] / q["native_s"]) if q else ""))
EOF
fi
echo "== tests/gpu/vgpu_work.sh"
printf '%s' "$table"
exit $status
