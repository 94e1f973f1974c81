#!/bin/sh
# tests/gpu/expandable.sh: PyTorch's expandable-segments allocator (CUDA's VMM:
# cuMemCreate, cuMemMap, cuMemSetAccess, cuMemAddressReserve) natively and
# under `gpuos run` on a 70 % vGPU (issue 21): the MLP's losses and speed, and
# an out-of-memory at the share caught as torch.OutOfMemoryError. Device
# machine, repository root, build/ present. Prints "case rc steps_per_s".
set -u
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
OUT=${OUT:-out}
mkdir -p "$OUT"
T=$(mktemp -d)
D=
cleanup() { [ -n "$D" ] && kill -TERM "$D" 2>/dev/null; sleep 1; [ -n "$D" ] && kill -9 "$D" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
cat > "$T/conf" <<CONF
socket = $T/s
[device 0]
policy = band
isolation = process
[vgpu p70]
compute = 70
memory = 70%
CONF
export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=120000 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
"$G" serve --config "$T/conf" 2>"$OUT/expandable-serve.log" &
D=$!
i=0; while [ ! -S "$T/s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$T/s" ] || { echo "FAIL daemon did not start"; exit 1; }
for m in mlp oom; do
    timeout 60 python3 tests/gpu/progs/fw_torch.py $m > "$OUT/expandable-$m-native.txt" 2>&1; rn=$?
    GPUOS_CUDASHIM_TRACE=1 timeout 60 "$G" run --vgpu p70 -- python3 tests/gpu/progs/fw_torch.py $m \
        > "$OUT/expandable-$m-gpuos.txt" 2>&1; rg=$?
    echo "$m native rc $rn: $(grep '^RESULT\|^TIME' "$OUT/expandable-$m-native.txt" | tr '\n' ' ')"
    echo "$m gpuos rc $rg: $(grep '^RESULT\|^TIME' "$OUT/expandable-$m-gpuos.txt" | tr '\n' ' ')"
    grep -h "not supported\|Error\|cuMem[A-Z][a-zA-Z]*:" "$OUT/expandable-$m-gpuos.txt" | sort | uniq -c | sort -rn | head -5
done
