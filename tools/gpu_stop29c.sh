#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop29c.sh: the third GPU run of stop 29 (device machine, repository
# root, build/ carried):
#   1. issue 21: PyTorch's and CuPy's GEMMs, a PyTorch training loop, natively and
#      under gpuos run on a 70 % vGPU, with the static CUDA runtimes'
#      driver-global tables {f8cff951} and {da9151d3} handed on from NVIDIA's
#      driver, cuBLASLt's errors logged;
#   2. issue 22: the sharing table (2 and 4 tenants, process and mps, beside
#      plain processes) with grants of 100 x the switch the executors measure and
#      capped by credit; BAND with 2, 4 and 8 vGPUs on rings; a 10 % vGPU next to
#      a busy 90 % one, honest and forging (tests/t_ring_forge.sh on the GPU);
#   3. issue 26: the chart of this H200 by the N-partition probe (gpuos.chip/2,
#      two partitions found by the old path) and decode attention on the merged
#      partition-local memory (two shapes).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop29c tools/gpu_stop29c.sh
mkdir -p "$W/fw" "$W/bench" "$W/attn"
part numa 60 build/gpuos probe numa --json "$W/chip.json"
part attn 90 env RES="$W/attn" OUT="$W/attn" ATTN_NO_BUILD=1 ATTN_BATCH=1,32 ATTN_CTX=8192 \
    GOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh bench/attn_decode.sh
part frameworks 200 env OUT="$W/fw" FW_BUDGET_S=190 FW_KEEP_ERR=1 CUBLASLT_LOG_LEVEL=2 \
    FW_ONLY="${FW_ONLY:-torch_basic torch_matmul cupy_matmul torch_mlp}" GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" \
    sh tests/gpu/frameworks.sh
sharing_parts
cp "$W/machine.txt" "$S" "$OUT/"
cp "$W/fw/frameworks.json" "$W/chip.json" "$OUT/" 2>/dev/null
(cd "$(dirname "$W")" && tar czf "$OUT/stop29c.tar.gz" stop29c)
grep -h "^=== \|RESULT\|TIME\|Unsupported\|Error\]\|rc [0-9]" "$W/fw/frameworks.log" | head -40
sharing_summary
tail -6 "$W/numa.log"; tail -5 "$W/attn.log"
cat "$S"
