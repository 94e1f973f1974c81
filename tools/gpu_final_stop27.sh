#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_final_stop27.sh: the closing GPU run of stop 27 over the merged tree
# (device machine, repository root, build/ carried), each part under its own
# time limit, most important first:
#   1. rings for every busy tenant: the ring test (two busy clients rotating,
#      kill -9, a fault), isolation (attack, fault), a forged ring grant
#      (tests/t_ring_forge.sh on the GPU), oversize copies (tests/gpu/hostile2.sh);
#   2. unmodified frameworks under gpuos run (tests/gpu/frameworks.sh, PyTorch
#      first, while its budget lasts);
#   3. the sharing table (1, 2, 4 busy tenants, 100 us / 1 ms fixed-work
#      kernels, synchronised and streaming, process / mps / none, plain processes
#      beside them), 8 tenants under process, BAND 2/4/8 on rings.
# Everything lands in $OUT/final.tar.gz with $OUT/summary.txt.
set -u
. tools/gpu_lib.sh
gpu_run_begin final tools/gpu_final_stop27.sh
mkdir -p "$W/bench" "$W/fw" "$W/h2"
part ring 45 env RING_SIM=none sh tests/t_ring.sh
part isolation 30 env ISOLATION_MODES="process" sh tests/gpu/isolation.sh
part forge 30 env FORGE_SIM=none sh tests/t_ring_forge.sh
part hostile2 40 env OUT="$W/h2" sh tests/gpu/hostile2.sh
part frameworks 200 env OUT="$W/fw" FW_BUDGET_S=170 GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
part sharing 150 build/bench/vgpu_bench --gpuos build/gpuos --results "$W/bench" --quick \
    --isolation process,mps,none --only launch,sharing --vgpus 1,2,4
part sharing8 35 build/bench/vgpu_bench --gpuos build/gpuos --out "$W/sharing8.json" \
    --isolation process --only sharing --vgpus 8
part fairness 35 build/bench/vgpu_bench --gpuos build/gpuos --out "$W/fair.json" --seconds 2 \
    --isolation process --only fairness --policies band --vgpus 2,4,8
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/final.tar.gz" final)
cat "$W/machine.txt"
tail -2 "$W/ring.log"; grep -h "^RESULT\|^ok\|^FAIL" "$W/isolation.log" | head -4
grep -v "^    serve" "$W/forge.log" | tail -3; tail -3 "$W/hostile2.log"
tail -22 "$W/frameworks.log"
grep -h "launch us\|^sharing" "$W/sharing.log" "$W/sharing8.log"
grep -h "^fairness" "$W/fairness.log"
cat "$S"
