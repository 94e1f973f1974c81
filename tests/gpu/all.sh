#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/all.sh: one device-tool call for everything that needs the GPU:
# make test-gpu's checks (topology, numa, dvfs, vgpu) and the vGPU benchmark,
# with every output packed into $OUT/gpu-results.tar.gz (the device tool returns
# at most 8 files). GPUOS_COMMIT names the commit the build came from.
set -u
OUT=${OUT:-out}
W=/tmp/gpuos-all
rm -rf "$W"; mkdir -p "$W"
export GOS_COMMIT="${GPUOS_COMMIT:-unknown}" GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}"
( OUT="$W/gpu" RES="$W/numa" sh tests/gpu/run.sh ) >"$W/test-gpu.log" 2>&1
echo "test-gpu exit $?" >>"$W/test-gpu.log"
( RESULTS="$W/results" sh bench/vgpu.sh ) >"$W/bench.log" 2>&1
echo "bench exit $?" >>"$W/bench.log"
tar -czf "$OUT/gpu-results.tar.gz" -C "$W" .
grep -E "^(PASS|FAIL)|exit|identical|verification:|wall:" "$W/test-gpu.log" | tail -30
tail -25 "$W/bench.log"
