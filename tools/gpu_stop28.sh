#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop28.sh: the first GPU run of stop 28 (device machine, repository
# root, build/ and build-slurmroot/ carried), each part under its own limit:
#   1. frameworks with every gpuos stderr kept and Triton's cubins probed
#      (issue 21: cuBLAS after the tools TLS / context tables, Triton's launch);
#   2. issue 25 on the GPU: Slurm's 30 + 70 shards (tools/gpu_issue25.sh);
#   3. issue 20's check: copies, launch + sync and BAND through the daemon
#      (vgpu_bench --quick, isolation = process), as the run of d195ffb measured.
# Everything lands in $OUT/stop28.tar.gz with $OUT/summary.txt.
set -u
. tools/gpu_lib.sh
gpu_run_begin stop28 tools/gpu_stop28.sh
mkdir -p "$W/fw" "$W/slurm" "$W/bench"
part frameworks 230 env OUT="$W/fw" FW_BUDGET_S=215 FW_KEEP_ERR=1 FW_PROBE_TRITON=1 \
    FW_ONLY="torch_basic torch_mlp torch_matmul triton_vadd cupy_matmul torch_cnn" \
    GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
part slurm 110 env OUT="$W/slurm" SECS=20 sh tools/gpu_issue25.sh
part bench 200 build/bench/vgpu_bench --gpuos build/gpuos --results "$W/bench" --quick --policies band \
    --isolation process --only launch,copy,fairness
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/stop28.tar.gz" stop28)
cat "$W/machine.txt"
tail -12 "$W/frameworks.log"
grep -A12 "real driver" "$W/fw/triton/probe.txt" 2>/dev/null | head -40
tail -6 "$W/slurm.log"
grep -h "launch us\|^copy\|^fairness" "$W/bench.log" | head -20
cat "$S"
