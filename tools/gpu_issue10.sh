#!/bin/sh
# tools/gpu_issue10.sh: the one GPU run of issue 10 (shared device memory and
# swapping), for the device tool: the quick check (tests/gpu/shm.sh), then the
# full benchmark (bench/shm.sh). Uses the shm_bench carried in prebuilt/ when
# it runs on this machine, else builds it. Everything lands in $OUT.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
B=prebuilt/shm_bench
export GPUOS=prebuilt/gpuos SHM_CLIENT=prebuilt/shm_client
if ! "$B" --bogus 1 2>&1 | grep -q "unknown option"; then
    echo "prebuilt programs do not run here: building"
    make -j16 build/bench/shm_bench build/gpuos build/tests/shm_client > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
    B=build/bench/shm_bench
    export GPUOS=build/gpuos SHM_CLIENT=build/tests/shm_client
fi
export SHM_BENCH=$B
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,memory.used --format=csv | tee "$OUT/nvidia-smi.txt"
free -g | tee -a "$OUT/nvidia-smi.txt"
echo "== tests/gpu/shm.sh"; sh tests/gpu/shm.sh; c=$?
echo "== bench/shm.sh"; RES=$OUT/res sh bench/shm.sh; b=$?
cp "$OUT"/res/* "$OUT"/ 2>/dev/null; rm -rf "$OUT/res"
echo "check rc=$c bench rc=$b"
