#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_issue9.sh: the issue-9 GPU run in one command on the device machine
# (repository root): build, the fast path's ring test on the GPU (t_ring.sh),
# isolation per mode (attack + fault), and the benchmark per isolation mode
# (native side by side). Logs and JSON under $OUT; a short summary last.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export GPUOS=build/gpuos BUILD=build
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
hostname >> "$OUT/gpu.txt"
date -u >> "$OUT/gpu.txt"
if [ -z "${NO_BUILD:-}" ]; then
    make -j16 > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
timeout ${RING_S:-60} env RING_SIM=none sh tests/t_ring.sh > "$OUT/ring.txt" 2>&1
echo "ring (GPU, process) rc=$?" >> "$OUT/summary.txt"
if [ -z "${SKIP_ISO:-}" ]; then
    timeout ${ISO_S:-120} env ISOLATION_MODES="${ISO_MODES:-process mps}" sh tests/gpu/isolation.sh > "$OUT/isolation.txt" 2>&1
    echo "isolation (${ISO_MODES:-process mps}) rc=$?" >> "$OUT/summary.txt"
fi
if [ -n "${BYPASS:-}" ]; then
    timeout 60 sh tests/gpu/bypass.sh > "$OUT/bypass.txt" 2>&1; echo "bypass rc=$?" >> "$OUT/summary.txt"
fi
GPUOS_COMMIT=${GPUOS_COMMIT:-unknown} timeout ${BENCH_S:-200} build/bench/vgpu_bench --gpuos build/gpuos \
    --results "$OUT/results" --quick --policies band --vgpus ${BENCH_VGPUS:-2,4,8} --seconds ${BENCH_SECONDS:-3} \
    --switch-grants ${BENCH_GRANTS:-8000} --isolation ${BENCH_MODES:-process,mps,none} \
    --only ${BENCH_ONLY:-small,copy,launch,switch,fairness} > "$OUT/bench.log" 2>&1
echo "bench rc=$?" >> "$OUT/summary.txt"
# PIECES="262144 131072": the ring's staged copies with smaller pieces and the
# copy threads from PAR_MIN on (process mode, copies only), for the defaults
for p in ${PIECES:-}; do
    echo "== GPUOS_RING_PIECE=$p GPUOS_PAR_MIN=${PAR_MIN:-262144}" >> "$OUT/pieces.log"
    GPUOS_RING_PIECE=$p GPUOS_PAR_MIN=${PAR_MIN:-262144} timeout 60 build/bench/vgpu_bench --gpuos build/gpuos \
        --results /tmp/pieces-$p --quick --isolation process --only copy >> "$OUT/pieces.log" 2>&1
done
tail -3 "$OUT/ring.txt"
grep -h "^RESULT\|^  \|^ok\|^FAIL" "$OUT/isolation.txt" | head -30
grep -h "isolation =\|switch\|launch\|^copy .*\(4096\|1048576\|16777216\) \|fair\|error" "$OUT/bench.log" | head -60
[ -f "$OUT/pieces.log" ] && grep "^==\|^copy .*\(1048576\|4194304\|16777216\) .*pageable" "$OUT/pieces.log"
cat "$OUT/summary.txt"
