#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop28b.sh: the second GPU run of stop 28: the frameworks that
# failed in the first (GPUOS_CUDASHIM_TRACE=2: every attribute and occupancy
# answered, a backtrace on a fatal signal), and Slurm's shards again (slurmd
# with a cgroup.conf of its own on a cgroup v2 host without systemd's bus).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop28b tools/gpu_stop28b.sh
mkdir -p "$W/fw" "$W/slurm"
part slurm 110 env OUT="$W/slurm" SECS=20 sh tools/gpu_issue25.sh
part frameworks 200 env OUT="$W/fw" FW_BUDGET_S=190 FW_KEEP_ERR=1 FW_TRACE=2 \
    FW_ONLY="torch_basic triton_vadd cupy_matmul torch_mlp" \
    GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/stop28b.tar.gz" stop28b)
tail -8 "$W/slurm.log"; cat "$W/slurm/issue25.txt" 2>/dev/null
tail -8 "$W/frameworks.log"
cat "$S"
