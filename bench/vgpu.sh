#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/vgpu.sh: the pillar-3 benchmark in one command (issue 4): native device
# vs `gpuos serve` + libgpuos on the real GPU (or --sim CHIP), writing
# results/<gpu-uuid>/vgpu-bench.json (schema gpuos.vgpu-bench/1, with provenance)
# and printing the tables of docs/readme-vgpu.md. Extra arguments go to
# build/bench/vgpu_bench (e.g. --quick, --only copy,launch).
#   sh bench/vgpu.sh                 # real GPU 0
#   RESULTS=/tmp/r sh bench/vgpu.sh  # elsewhere
set -eu
BUILD=${BUILD:-build}
RESULTS=${RESULTS:-results}
GPUOS_COMMIT=${GPUOS_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
export GPUOS_COMMIT
[ -x "$BUILD/bench/vgpu_bench" ] || { echo "bench/vgpu.sh: build first (make)"; exit 1; }
"$BUILD/bench/vgpu_bench" --gpuos "$BUILD/gpuos" --results "$RESULTS" "$@" 2>&1 | tee "$RESULTS.vgpu.log"
file=$(sed -n 's/^vgpu_bench: wrote //p' "$RESULTS.vgpu.log" | tail -1)
[ -n "$file" ] || exit 1
mv "$RESULTS.vgpu.log" "$(dirname "$file")/vgpu-bench.log"
PY=$(command -v python3 || true)
[ -n "$PY" ] && "$PY" bench/vgpu_tables.py "$file"
exit 0
