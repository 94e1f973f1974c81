#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_vgpu_work.sh: vgpu_bench's native and vGPU sides do the same work (issue 40
# item 5). On the simulated device, `vgpu_bench --ops FILE` (copy, ringprobe,
# launch, standalone; isolation process and none) records what each backend
# of bench/vgpu_work.c issued for every paired workload, counted where it
# calls the driver or libgpuos; checked by tests/vgpu_ops_check.py:
#   - every paired workload's native and gpuos counts are equal (launches,
#     synchronises, copy waits, allocations, copies and bytes each way);
#   - a pair for every row the benchmark measured (28 copies, 12 ring probes
#     under process and none, skipped, under none, one launch, five programs);
#   - the counts are the workloads' own: launch's 2 x 200 + 50 launches and
#     2 + 50 synchronises, MADD's three runs of 2 matrices up, 1 kernel, 1 down,
#     PINCPY's three pinned 16 MiB round trips, every copy's bytes its size;
#   - both files validate against schemas/ (vgpu-bench-ops, vgpu-bench);
#   - the checker refuses a copy whose gpuos side moved one byte more, and a
#     run whose standalone section lost a pair.
set -u
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 120 "$B/bench/vgpu_bench" --gpuos "$G" --sim default --quick --only copy,ringprobe,launch,standalone \
    --isolation process,none --ops "$T/ops.json" --out "$T/bench.json" 2>"$T/log" || { tail -20 "$T/log"; fail "vgpu_bench"; }
$PY tests/schema_check.py "$T/ops.json" "$T/bench.json" >"$T/schema" 2>&1 || fail "schemas: $(cat "$T/schema")"
[ "$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["workloads"]))' "$T/ops.json")" -eq 80 ] ||
    fail "not 80 paired workloads (2 x (28 copies, 1 launch, 5 programs) + 12 ring probes)"
$PY tests/vgpu_ops_check.py "$T/ops.json" "$T/bench.json" --quick || fail "the two backends' operations"

# the checker fails when one side's work differs, or a pair is missing
mutate() { # python statement on d, the problem expected
    $PY -c "import json, sys
d = json.load(open(sys.argv[1]))
$1
json.dump(d, open(sys.argv[2], 'w'))" "$T/ops.json" "$T/bad.json" || fail "mutation"
    if $PY tests/vgpu_ops_check.py "$T/bad.json" "$T/bench.json" --quick >"$T/out"; then fail "passed: $1"; fi
    grep -qF "$2" "$T/out" || fail "not named ($2): $(cat "$T/out")"
}
mutate 'd["workloads"][2]["gpuos"]["bytes_dtoh"] += 1' "native and gpuos differ"
mutate 'd["workloads"] = [w for w in d["workloads"] if w["work"] != "MMUL"]' "standalone pairs: 4, expected 5"
echo "t_vgpu_work: ok"
