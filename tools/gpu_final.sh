#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_final.sh: one GPU run over the merged tree (device machine,
# repository root, build/ carried: the machine has no jansson headers), most
# important first, each part under its own time limit:
#   1. unmodified CUDA programs through gpuos run (tests/gpu/cudashim.sh: Driver
#      API and runtime programs, module globals, GPU-timestamp events against the
#      driver's, Gdev's benchmarks, shares, NVML, PyTorch);
#   2. the fast path's ring test on the GPU, isolation per mode (attack, fault),
#      and executor = per-vgpu (tests/t_xshare.sh on the GPU);
#   3. shared memory and swapping, read-only attachments (tests/gpu/shm.sh);
#   4. partition-local memory for a vGPU client (bench/placement_client.sh);
#   5. the vGPU benchmark per isolation mode (bench/vgpu_bench, native side by side;
#      copies up to 1 GB, BAND with 2/4/8 vGPUs, switching with grant_us = auto).
# Everything lands in one archive $OUT/final.tar.gz (the device tool returns at
# most 8 files) with $OUT/summary.txt.
set -u
. tools/gpu_lib.sh
gpu_run_begin final tools/gpu_final.sh
mkdir -p "$W/cudashim" "$W/shm" "$W/placement" "$W/bench"
part cudashim 200 env OUT="$W/cudashim" sh tests/gpu/cudashim.sh
part ring 45 env RING_SIM=none sh tests/t_ring.sh
part isolation 90 env ISOLATION_MODES="process mps" sh tests/gpu/isolation.sh
part xshare 90 env XSHARE_SIM=none sh tests/t_xshare.sh
part shm 90 env OUT="$W/shm" sh tests/gpu/shm.sh
part placement 45 env RES="$W/placement" sh bench/placement_client.sh
part bench 420 env GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" build/bench/vgpu_bench --gpuos build/gpuos \
    --results "$W/bench" --policies band --vgpus 2,4,8 --seconds 3 --switch-grants 4000,16000 \
    --isolation process,mps,none --only small,copy,ringprobe,launch,switch,fairness
cp "$W/machine.txt" "$S" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/final.tar.gz" final)
cat "$W/machine.txt"
tail -25 "$W/cudashim.log"
tail -4 "$W/ring.log"; grep -h "^RESULT\|^ok\|^FAIL" "$W/isolation.log" "$W/xshare.log" | head -16
tail -4 "$W/shm.log"; tail -6 "$W/placement.log"
grep -h "isolation =\|switch\|launch\|fair" "$W/bench.log" | head -30
cat "$S"
