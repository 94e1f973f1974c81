#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/expandable.sh: PyTorch's expandable-segments allocator (CUDA's VMM:
# cuMemCreate, cuMemMap, cuMemSetAccess, cuMemAddressReserve) natively and
# under `gpuos run` on a 70 % vGPU (issue 21): the MLP's losses and speed, and
# an out-of-memory at the share caught as torch.OutOfMemoryError. Device
# machine, repository root, build/ present. Prints "case rc steps_per_s".
set -u
. tests/gpu/daemon_lib.sh
OUT=${OUT:-out}
mkdir -p "$OUT"
gpu_daemon "[device 0]
policy = band
isolation = process
[vgpu p70]
compute = 70
memory = 70%" "$OUT/expandable-serve.log"
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
for m in mlp oom; do
    timeout 60 python3 tests/gpu/progs/fw_torch.py $m > "$OUT/expandable-$m-native.txt" 2>&1; rn=$?
    GPUOS_CUDASHIM_TRACE=1 timeout 60 "$G" run --vgpu p70 -- python3 tests/gpu/progs/fw_torch.py $m \
        > "$OUT/expandable-$m-gpuos.txt" 2>&1; rg=$?
    echo "$m native rc $rn: $(grep '^RESULT\|^TIME' "$OUT/expandable-$m-native.txt" | tr '\n' ' ')"
    echo "$m gpuos rc $rg: $(grep '^RESULT\|^TIME' "$OUT/expandable-$m-gpuos.txt" | tr '\n' ' ')"
    grep -h "not supported\|Error\|cuMem[A-Z][a-zA-Z]*:" "$OUT/expandable-$m-gpuos.txt" | sort | uniq -c | sort -rn | head -5
done
