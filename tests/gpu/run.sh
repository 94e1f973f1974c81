#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/run.sh (make test-gpu): every check that needs the real GPU, one
# script per pillar, logs under $OUT. Run through the device tool, e.g.
#   run: make test-gpu OUT=$OUT  (with build carried)
set -u
OUT=${OUT:-out}
export OUT GPUOS=${GPUOS:-build/gpuos}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv | tee "$OUT/nvidia-smi.txt"
status=0
for t in tests/gpu/topology.sh tests/gpu/numa.sh tests/gpu/placement.sh tests/gpu/dvfs.sh tests/gpu/vgpu.sh tests/gpu/isolation.sh tests/gpu/bypass.sh tests/gpu/doctor.sh tests/gpu/smset.sh tests/gpu/multi.sh tests/gpu/cudashim.sh tests/gpu/shm.sh tests/gpu/hostile2.sh; do
    [ -f "$t" ] || continue
    echo "== $t"
    if sh "$t"; then echo "PASS $t"; else echo "FAIL $t"; status=1; fi
done
exit $status
