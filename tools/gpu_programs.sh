#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_programs.sh: issue 21's GPU run (device machine, repository root,
# build/ carried), each part optional by its time limit: the Driver API calls
# of real programs natively and on a vGPU, side by side (CT_PART_S, CT_PROGS,
# tests/gpu/cutrace.sh), the frameworks (FW_PART_S, FW_ONLY,
# tests/gpu/frameworks.sh), a training job next to each kind of hostile tenant
# (HS_PART_S, tests/gpu/hostile.sh, the daemon's GPUOS_GRANT_LOG on), PyTorch's
# expandable segments on VMM (EX_PART_S, tests/gpu/expandable.sh), the bf16
# product with cuBLASLt's private table handed on and stubbed, round-robin
# (BF_PART_S, tests/gpu/bf16_ab.sh), the tenants of issue 9 kept apart while the
# rings rotate (IS_PART_S, IS_MODES, tests/gpu/isolation.sh) and issue 22's quick figures (SH=1,
# gpu_lib.sh's sharing_parts; FG=1: only its forging tenant). The work folder
# is $OUT/$GPU_RUN.tar.gz (default "programs": too many files for $OUT itself).
set -u
. tools/gpu_lib.sh
RUN=${GPU_RUN:-programs}
gpu_run_begin "$RUN" tools/gpu_programs.sh
[ "${CT_PART_S:-0}" -gt 0 ] && part cutrace "${CT_PART_S:-240}" env OUT="$W" CT_PROGS="${CT_PROGS:-torch_matmul cupy_matmul}" sh tests/gpu/cutrace.sh
if [ "${FW_PART_S:-0}" -gt 0 ]; then
    mkdir -p "$W/fw"
    part frameworks "$FW_PART_S" env OUT="$W/fw" FW_BUDGET_S="$((FW_PART_S - 10))" FW_KEEP_ERR=1 \
        ${FW_ONLY:+FW_ONLY="$FW_ONLY"} GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
    cp "$W/fw/frameworks.json" "$OUT/" 2>/dev/null
fi
[ "${HS_PART_S:-0}" -gt 0 ] && part hostile "$HS_PART_S" env OUT="$W" GPUOS_GRANT_LOG=1 ${HS_CASES:+HS_CASES="$HS_CASES"} sh tests/gpu/hostile.sh
[ "${EX_PART_S:-0}" -gt 0 ] && part expandable "$EX_PART_S" env OUT="$W" sh tests/gpu/expandable.sh
[ "${BF_PART_S:-0}" -gt 0 ] && part bf16 "$BF_PART_S" env OUT="$W" sh tests/gpu/bf16_ab.sh
[ "${IS_PART_S:-0}" -gt 0 ] && part isolation "$IS_PART_S" env ISOLATION_MODES="${IS_MODES:-process mps}" sh tests/gpu/isolation.sh
[ "${SH:-0}" = 1 ] && sharing_parts
[ "${FG:-0}" = 1 ] && part forge 45 env FORGE_SIM=none sh tests/t_ring_forge.sh
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/$RUN.tar.gz" "$RUN")
[ -f "$W/cutrace.log" ] && cut -c1-240 "$W/cutrace.log" | head -200
[ -f "$W/frameworks.log" ] && tail -20 "$W/frameworks.log"
[ -f "$W/hostile.log" ] && cat "$W/hostile.log"
[ -f "$W/expandable.log" ] && cat "$W/expandable.log"
[ -f "$W/bf16_ab.log" ] && cat "$W/bf16_ab.log"
[ -f "$W/isolation.log" ] && grep -h "RESULT\|FAIL" "$W/isolation.log"
[ "${SH:-0}" = 1 ] && sharing_summary
[ "${FG:-0}" = 1 ] && tail -3 "$W/forge.log"
cat "$S"
