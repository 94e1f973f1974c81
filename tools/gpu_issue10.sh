#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_issue10.sh: the one GPU run of issue 10 (shared device memory and
# swapping), for the device tool: the swap pool benchmark through the daemon
# (bench/swap_pool.sh: pinned ceiling, two ~100 GB vGPUs in turns, what one swap
# costs a BAND tenant, cold and warm), then the quick check (tests/gpu/shm.sh).
# FULL=1 adds the device-level benchmark (bench/shm.sh). Uses the programs
# carried in prebuilt/ when they run on this machine, else builds them.
# Everything lands in $OUT (flat: the device tool brings back 8 files).
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
R=$OUT/r
mkdir -p "$R"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,memory.used --format=csv; free -g; hostname; } > "$R/machine.txt"
cat "$R/machine.txt"
echo "== bench/swap_pool.sh"; RES=$R TURNS_TIMEOUT=150 SWAPCOST_TIMEOUT=80 sh bench/swap_pool.sh; b=$?
echo "== tests/gpu/shm.sh"; OUT=$R/check timeout 60 sh tests/gpu/shm.sh > "$R/check.log" 2>&1; c=$?
tail -4 "$R/check.log"
f=0
if [ "${FULL:-0}" = 1 ]; then echo "== bench/shm.sh"; RES=$R/full sh bench/shm.sh; f=$?; fi
# at most 8 files back: the JSON, the client logs, the daemon's swap lines
cd "$R" && tar czf ../logs.tgz . && cd - >/dev/null
cp "$R/shm-swappool.json" "$R/turns.log" "$R/swapcost.log" "$R/shm-rate.json" "$R/machine.txt" "$R/check.log" "$OUT"/ 2>/dev/null
rm -rf "$R"
echo "swap_pool rc=$b check rc=$c full rc=$f"
