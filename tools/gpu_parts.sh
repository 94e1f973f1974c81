#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_parts.sh: device-machine runs in one command, build/ carried (built
# here by tools/mkcarry.sh as build-gpu/; GPU_PREBUILT=1: no make there). PARTS
# picks, in order:
#   mixed    tests/gpu/mixed.sh (issue 41: a latency tenant beside training, shares)
#   probe    tests/gpu/probe_repeat.sh, 10 charts of the same chip (issue 44)
#   modglob  tests/gpu/module_globals.sh (issue 44.2)
#   doctor   tests/gpu/doctor.sh (issue 43.1)
#   oversub  tests/gpu/oversub.sh (issue 42), pd tests/gpu/pd_multiplex.sh (issue 45)
#   sharing  the vgpu bench's launch and sharing rows (no regression: issue 40/41)
#   fairness the vgpu bench's BAND rows (spin kernels, 2, 4 and 8 vGPUs and 70/30, process)
#   hostile  tests/gpu/hostile.sh (a training job on 70 % beside a hostile 30 %, issue 21)
#   copies   the vgpu bench's copy rows, native and through gpuos (--quick: 4 KB..16 MB)
#   frameworks tests/gpu/frameworks.sh (PyTorch, Triton, CuPy, JAX native and under gpuos)
#   req      tests/gpu/req.sh (issue 40.1: the one request form on the GPU, ~3 min)
#   work     tests/gpu/vgpu_work.sh (issue 40.5: native and vGPU run the same work, ~1.5 min)
#   mixbench the vgpu bench's mixed section (issue 41.3: its own kernels, ~3 min)
#   swappath the vgpu bench's swappath section (issue 42: page-locking, pageable
#            and locked copies into a memfd pool, launches while another thread
#            locks; SWAP_MB, 4096 by default: ~6 x that of host memory, ~30 s)
# Each part has its own limit (seconds, PART_S_<name>), its output in
# $OUT/<name>.txt and its logs packed into $OUT/logs.tgz; machine.txt says
# which card, driver, time and tree.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -d build-gpu ] && { rm -rf build; mv build-gpu build; }
export GPU_PREBUILT=1 GPUOS=$PWD/build/gpuos BUILD=build
{ nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv,noheader; date -u
  echo "tree ${GPUOS_COMMIT:-unknown}"; echo "parts ${PARTS:-}"; } > "$OUT/machine.txt"
cat "$OUT/machine.txt"
L=$(mktemp -d)
lim() { eval "echo \${PART_S_$1:-$2}"; }
for p in ${PARTS:-mixed probe modglob}; do
    t0=$(date +%s)
    case $p in
    mixed) GPUOS_GRANT_LOG=1 OUT=$L timeout "$(lim mixed 330)" sh tests/gpu/mixed.sh ;;
    probe) OUT=$L/probe RUNS=${RUNS:-10} timeout "$(lim probe 170)" sh tests/gpu/probe_repeat.sh ;;
    modglob) OUT=$L timeout "$(lim modglob 60)" sh tests/gpu/module_globals.sh ;;
    doctor) OUT=$L timeout "$(lim doctor 60)" sh tests/gpu/doctor.sh ;;
    oversub) OUT=$L timeout "$(lim oversub 560)" sh tests/gpu/oversub.sh ;; # (its three row may wait: issue 42)
    pd) OUT=$L timeout "$(lim pd 180)" sh tests/gpu/pd_multiplex.sh ;;
    frameworks) OUT=$L/fw FW_BUDGET_S=$(( $(lim frameworks 300) - 30 )) timeout "$(lim frameworks 300)" sh tests/gpu/frameworks.sh ;;
    req) OUT=$L timeout "$(lim req 240)" sh tests/gpu/req.sh ;;
    work) OUT=$L/work timeout "$(lim work 150)" sh tests/gpu/vgpu_work.sh ;;
    mixbench) timeout "$(lim mixbench 240)" build/bench/vgpu_bench --gpuos build/gpuos --only mixed --quick \
                  --out "$L/mixed-bench.json" ;;
    swappath) timeout "$(lim swappath 90)" build/bench/vgpu_bench --gpuos build/gpuos --only swappath --isolation process \
                  --swap-mb "${SWAP_MB:-4096}" --results "$L/bench-swappath" ;;
    fairness) timeout "$(lim fairness 150)" build/bench/vgpu_bench --gpuos build/gpuos --results "$L/bench-fair" --seconds 2 \
                  --quick --isolation process --only fairness --policies band --vgpus 2,4,8,70/30 ;;
    hostile) OUT=$L timeout "$(lim hostile 150)" sh tests/gpu/hostile.sh ;;
    copies) timeout "$(lim copies 120)" build/bench/vgpu_bench --gpuos build/gpuos --results "$L/bench-copy" --quick \
                --isolation process --only copy ;;
    sharing) timeout "$(lim sharing 150)" build/bench/vgpu_bench --gpuos build/gpuos --results "$L/bench" --seconds 2 --quick \
                 --isolation process,mps --only launch,sharing --vgpus 2 ;;
    *) echo "unknown part $p" ;;
    esac > "$OUT/$p.txt" 2>&1
    echo "== $p rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/machine.txt"
done
(cd "$L" && tar czf "$OUT/logs.tgz" .) 2>/dev/null
for p in ${PARTS:-mixed probe modglob}; do echo "=== $p"; tail -"${TAIL:-14}" "$OUT/$p.txt"; done
