#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop29b.sh: the second GPU run of stop 29 (device machine,
# repository root, build/ carried): cuBLAS's and cuBLASLt's own logs of the
# first GEMM natively and under gpuos run (issue 21: where their paths part),
# and the sharing table with grants of the default (auto), 8 and 16 ms side by
# side (issue 22: what the hand-over between two tenants costs per grant).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop29b tools/gpu_stop29b.sh
mkdir -p "$W/fw" "$W/bench" "$W/attn"
part attn 200 env RES="$W/attn" OUT="$W/attn" ATTN_NO_BUILD=1 GOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh bench/attn_decode.sh
cp "$W/attn/attn-decode.json" "$W/attn/attn-decode-ours.json" "$W/attn/chip.json" "$OUT/" 2>/dev/null
part frameworks 120 env OUT="$W/fw" FW_BUDGET_S=110 FW_KEEP_ERR=1 FW_ONLY="torch_basic torch_matmul" \
    CUBLASLT_LOG_LEVEL=5 CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=stderr \
    GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
for g in auto 8000 16000; do
    a=; [ $g = auto ] || a="--grant-us $g"; mkdir -p "$W/b$g"
    part sharing-$g 120 build/bench/vgpu_bench --gpuos build/gpuos --results "$W/b$g" --seconds 3 --quick \
        --isolation process,mps --only sharing --vgpus 2 $a
done
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/stop29b.tar.gz" stop29b)
tail -22 "$W/attn.log"
for g in auto 8000 16000; do echo "== grant $g"; grep -h "^sharing.*tenants" "$W/sharing-$g.log"; done
cat "$S"
