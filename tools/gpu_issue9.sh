#!/bin/sh
# tools/gpu_issue9.sh: the issue-9 GPU run in one command on the device machine
# (repository root, build/ carried): isolation per mode, the bypass test, the
# existing vGPU checks under the default isolation = process, and the benchmark
# per isolation mode. Logs and JSON under $OUT; a short summary last.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export GPUOS=build/gpuos BUILD=build
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
hostname >> "$OUT/gpu.txt"
timeout 150 sh tests/gpu/isolation.sh > "$OUT/isolation.txt" 2>&1; echo "isolation rc=$?" >> "$OUT/summary.txt"
timeout 60 sh tests/gpu/bypass.sh > "$OUT/bypass.txt" 2>&1; echo "bypass rc=$?" >> "$OUT/summary.txt"
timeout 150 sh tests/gpu/vgpu.sh > "$OUT/vgpu-test.txt" 2>&1; echo "vgpu tests (process) rc=$?" >> "$OUT/summary.txt"
GPUOS_COMMIT=${GPUOS_COMMIT:-unknown} timeout ${BENCH_S:-200} build/bench/vgpu_bench --gpuos build/gpuos \
    --results "$OUT/results" --quick --policies band --isolation ${BENCH_MODES:-process,mps,none} \
    --only ${BENCH_ONLY:-small,copy,launch,switch,fairness} > "$OUT/bench.log" 2>&1
echo "bench rc=$?" >> "$OUT/summary.txt"
grep -h "^RESULT\|^  \|^ok\|^FAIL" "$OUT/isolation.txt" | head -30
grep -h "ok\|FAIL\|SKIP" "$OUT/bypass.txt" | tail -3
grep -h "^ok\|^FAIL" "$OUT/vgpu-test.txt" | head -20
grep -h "switch\|launch\|isolation =\|fair" "$OUT/bench.log" | head -30
cat "$OUT/summary.txt"
