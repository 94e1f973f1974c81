#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop28d.sh: the fourth GPU run of stop 28: Slurm's shards (the
# relocated scontrol named with its libraries for the Prolog), and PyTorch's
# first GEMM under GPUOS_CUDASHIM_TRACE=2 (every answer it got before cuBLASLt's
# fatal signal).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop28d tools/gpu_stop28d.sh
mkdir -p "$W/fw" "$W/slurm"
[ "${SKIP_SLURM:-0}" = 1 ] || part slurm 100 env OUT="$W/slurm" SECS=15 sh tools/gpu_issue25.sh
part frameworks 170 env OUT="$W/fw" FW_BUDGET_S=160 FW_KEEP_ERR=1 FW_TRACE=2 FW_ONLY="torch_basic cupy_matmul" \
    GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/stop28d.tar.gz" stop28d)
tail -5 "$W/slurm.log"; cat "$W/slurm/progress.txt" 2>/dev/null; cat "$W/slurm/issue25.txt" 2>/dev/null
cat "$S"
