#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/run.sh (make bench): every benchmark. Simulated-device benchmarks always
# run (they measure algorithms, never stand in for GPU numbers); the GPU
# benchmarks run when a GPU is present (through the device tool on the lent H200)
# and write results/<gpu-uuid>/. Output of the simulated ones: $OUT (bench/out).
set -u
BUILD=${BUILD:-build}
OUT=${OUT:-bench/out}
export BUILD OUT GPUOS=${GPUOS:-$BUILD/gpuos}
mkdir -p "$OUT"
status=0
step() { echo "== $*"; "$@" || { echo "FAILED: $*"; status=1; }; }
step sh bench/dvfs_efficiency.sh
if [ -x "$BUILD/bench/sched_sim" ]; then
    echo "== $BUILD/bench/sched_sim (simulated scheduler fairness)"
    "$BUILD/bench/sched_sim" >"$OUT/sched_sim.json" && echo "wrote $OUT/sched_sim.json" || status=1
fi
if "$GPUOS" info --json - 2>/dev/null | grep -q '"simulated": false'; then
    step sh bench/vgpu.sh
    step sh bench/placement.sh
    step sh bench/placement_client.sh
    step sh bench/attn_decode.sh
    step sh bench/shm.sh
else
    echo "== no GPU: bench/vgpu.sh skipped (it measures native vs gpuos on a real GPU)"
fi
exit $status
