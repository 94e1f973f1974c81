#!/bin/sh
# tools/gpu_stop31.sh: the first GPU run of stop 31 (device machine, repository
# root, build/ carried): issue 21, cuBLAS's GEMM under gpuos: the Driver API
# calls of PyTorch's and CuPy's GEMMs natively and on a vGPU, side by side
# (tests/gpu/cutrace.sh), then the frameworks (FW_ONLY, FW_PART_S), a training
# job next to each kind of hostile tenant (HS_PART_S, tests/gpu/hostile.sh) and
# PyTorch's expandable segments on VMM (EX_PART_S, tests/gpu/expandable.sh).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop31 tools/gpu_stop31.sh
[ "${CT_PART_S:-240}" -gt 0 ] && part cutrace "${CT_PART_S:-240}" env OUT="$W" CT_PROGS="${CT_PROGS:-torch_matmul cupy_matmul}" sh tests/gpu/cutrace.sh
if [ "${FW_PART_S:-0}" -gt 0 ]; then
    mkdir -p "$W/fw"
    part frameworks "$FW_PART_S" env OUT="$W/fw" FW_BUDGET_S="$((FW_PART_S - 10))" FW_KEEP_ERR=1 \
        ${FW_ONLY:+FW_ONLY="$FW_ONLY"} GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
    cp "$W/fw/frameworks.json" "$OUT/" 2>/dev/null
fi
[ "${HS_PART_S:-0}" -gt 0 ] && part hostile "$HS_PART_S" env OUT="$W" sh tests/gpu/hostile.sh
[ "${EX_PART_S:-0}" -gt 0 ] && part expandable "$EX_PART_S" env OUT="$W" sh tests/gpu/expandable.sh
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/stop31.tar.gz" stop31)
[ -f "$W/cutrace.log" ] && cut -c1-240 "$W/cutrace.log" | head -200
[ -f "$W/frameworks.log" ] && tail -20 "$W/frameworks.log"
[ -f "$W/hostile.log" ] && cat "$W/hostile.log"
[ -f "$W/expandable.log" ] && cat "$W/expandable.log"
cat "$S"
