#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop28c.sh: the third GPU run of stop 28: Slurm's shards with the
# progress written as it goes, then every framework program (tests/gpu/frameworks.sh,
# all of its list while the budget lasts, GPUOS_CUDASHIM_TRACE=1, stderr kept).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop28c tools/gpu_stop28c.sh
mkdir -p "$W/fw" "$W/slurm"
part slurm 150 env OUT="$W/slurm" SECS=15 sh tools/gpu_issue25.sh
part frameworks 345 env OUT="$W/fw" FW_BUDGET_S=335 FW_KEEP_ERR=1 \
    GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/stop28c.tar.gz" stop28c)
tail -5 "$W/slurm.log"; cat "$W/slurm/progress.txt" 2>/dev/null
tail -16 "$W/frameworks.log"
cat "$S"
