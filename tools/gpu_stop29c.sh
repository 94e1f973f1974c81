#!/bin/sh
# tools/gpu_stop29c.sh: the third GPU run of stop 29 (device machine, repository
# root, build/ carried): every framework program of tests/gpu/frameworks.sh,
# natively and under gpuos run on a 70 % vGPU, with the static CUDA runtimes'
# driver-global tables {f8cff951} and {da9151d3} handed on from NVIDIA's
# driver (issue 21), cuBLASLt's errors logged.
set -u
. tools/gpu_lib.sh
gpu_run_begin stop29c tools/gpu_stop29c.sh
mkdir -p "$W/fw"
part frameworks 420 env OUT="$W/fw" FW_BUDGET_S=400 FW_KEEP_ERR=1 CUBLASLT_LOG_LEVEL=2 \
    ${FW_ONLY:+FW_ONLY="$FW_ONLY"} GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
cp "$W/machine.txt" "$S" "$OUT/"
cp "$W/fw/frameworks.json" "$OUT/" 2>/dev/null
(cd "$(dirname "$W")" && tar czf "$OUT/stop29c.tar.gz" stop29c)
tail -40 "$W/frameworks.log"
cat "$S"
