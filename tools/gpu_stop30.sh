#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop30.sh: the first GPU run of stop 30 (device machine, repository
# root, build/ carried): issue 21 with cuGetProcAddress answering the signature
# of the version asked (cudaTypedefs.h): PyTorch's, CuPy's GEMMs and training
# natively and under gpuos run on a 70 % vGPU, cuBLASLt's errors logged.
set -u
. tools/gpu_lib.sh
gpu_run_begin stop30 tools/gpu_stop30.sh
mkdir -p "$W/fw"
part frameworks "${FW_PART_S:-330}" env OUT="$W/fw" FW_BUDGET_S="${FW_BUDGET_S:-320}" FW_KEEP_ERR=1 CUBLASLT_LOG_LEVEL=2 \
    ${FW_ONLY:+FW_ONLY="$FW_ONLY"} GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
cp "$W/machine.txt" "$S" "$OUT/"
cp "$W/fw/frameworks.json" "$OUT/" 2>/dev/null
(cd "$(dirname "$W")" && tar czf "$OUT/stop30.tar.gz" stop30)
grep -h "^=== \|RESULT\|TIME\|Unsupported\|Error\]\|rc [0-9]\|Error:" "$W/fw/frameworks.log" | cut -c1-300 | head -60
tail -25 "$W/fw/frameworks.log"
cat "$S"
