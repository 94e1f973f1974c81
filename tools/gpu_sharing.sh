#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_sharing.sh: the GPU run of issue 22 (rings for every busy tenant),
# device machine, repository root, build/ carried (the machine has no jansson
# headers). Each part under its own time limit:
#   1. the ring test on the GPU: two busy clients on their rings at once,
#      byte-exact, kill -9, a fault (tests/t_ring.sh);
#   2. isolation under process and mps while grants rotate: attack, fault
#      (tests/gpu/isolation.sh); executor = per-vgpu (tests/t_xshare.sh);
#   3. the sharing table: 2, 4, 8 busy tenants, 100 us and 1 ms full-GPU
#      kernels, synchronised and streaming, per isolation mode, beside plain
#      CUDA processes; launch + synchronise of a lone client;
#   4. BAND with 2, 4, 8 vGPUs on rings.
# Everything lands in $OUT/sharing.tar.gz with $OUT/summary.txt.
set -u
. tools/gpu_lib.sh
gpu_run_begin sharing tools/gpu_sharing.sh
mkdir -p "$W/bench"
# SHARING_QUICK=1: 1.5 s windows, 2 and 4 tenants, process and mps (a short lease)
Q=${SHARING_QUICK:-0}
if [ "$Q" = 1 ]; then QA=--quick; MODES=process,mps; ISO="process"; else QA=; MODES=process,mps,none; ISO="process mps"; fi
part ring 60 env RING_SIM=none sh tests/t_ring.sh
part isolation 90 env ISOLATION_MODES="$ISO" sh tests/gpu/isolation.sh
[ "$Q" = 1 ] || part xshare 60 env XSHARE_SIM=none sh tests/t_xshare.sh
part sharing 270 build/bench/vgpu_bench --gpuos build/gpuos --results "$W/bench" --seconds 3 $QA \
    --isolation "$MODES" --only launch,sharing --vgpus 2,4,8
part fairness 75 build/bench/vgpu_bench --gpuos build/gpuos --out "$W/fair.json" --seconds 2 \
    --isolation process --only fairness --policies band --vgpus 2,4,8
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/sharing.tar.gz" sharing)
cat "$W/machine.txt"
tail -3 "$W/ring.log"; grep -h "^RESULT\|^ok\|^FAIL" "$W/isolation.log" "$W/xshare.log" | head -16
grep -h "launch us\|^sharing" "$W/sharing.log"
grep -h "^fairness\|error" "$W/fairness.log" | head -12
cat "$S"
