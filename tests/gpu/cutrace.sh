#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/cutrace.sh: what a framework asks of the driver natively and under
# `gpuos run` on a 70 % vGPU, call by call (tools/cutrace/cutrace.c), and where
# the two first part (tools/cutrace/diff.py). Device machine, repository root,
# build/ present (built where cuda.h is; build/shim/trace/libcuda.so.1).
#   CT_PROGS="torch_basic cupy_matmul"   programs (names as tests/gpu/frameworks.sh's)
# Writes $OUT/cutrace/NAME.{native,gpuos}.tar.gz (the logs, one per process),
# NAME.{native,gpuos}.out (the programs' output) and NAME.diff; prints each diff.
set -u
B=${BUILD:-build}
OUT=${OUT:-out}/cutrace
TRACE=$PWD/$B/shim/trace
[ -f "$TRACE/libcuda.so.1" ] || { echo "FAIL $TRACE/libcuda.so.1 not built"; exit 1; }
REAL=$(python3 -c 'import ctypes.util, os; n = ctypes.util.find_library("cuda"); print(n or "")')
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64; do
    [ -e "$d/libcuda.so.1" ] && { REAL=$d/libcuda.so.1; break; }
done
case $REAL in /*) ;; *) echo "FAIL NVIDIA's libcuda.so.1 not found"; exit 1 ;; esac
mkdir -p "$OUT"
. tests/gpu/daemon_lib.sh
gpu_daemon "[device 0]
policy = band
isolation = process
[vgpu p70]
compute = 70
memory = 70%" "$OUT/serve.log"
# the driver's answers to a library's first queries (tests/gpu/progs/drv_answers.c),
# natively and on the vGPU: $OUT/answers.{native,gpuos}, their differences
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
P=$B/gpu-progs
mkdir -p "$P"
if "$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -o "$P/kernels.fatbin" tests/gpu/progs/kernels.cu &&
    cc -O2 -std=c11 -D_GNU_SOURCE -I"$(dirname "$(dirname "$NVCC")")/include" -Itests/gpu/progs -o "$P/drv_answers" \
        tests/gpu/progs/drv_answers.c -L"$B/shim" -lcuda; then
    "$P/drv_answers" > "$OUT/answers.native" 2>&1
    "$G" run --vgpu p70 -- "$P/drv_answers" > "$OUT/answers.gpuos" 2>&1
    diff "$OUT/answers.native" "$OUT/answers.gpuos" > "$OUT/answers.diff"
    echo "=== drv_answers: $(grep -c '^<' "$OUT/answers.diff") of $(wc -l < "$OUT/answers.native") answers differ"
    grep '^[<>]' "$OUT/answers.diff" | head -120
else
    echo "FAIL building drv_answers"
fi
cmd_of() {
    case $1 in
        torch_*) echo "python3 tests/gpu/progs/fw_torch.py ${1#torch_}" ;;
        *) echo "python3 tests/gpu/progs/fw_other.py $1" ;;
    esac
}
for name in ${CT_PROGS:-torch_basic cupy_matmul}; do
    cmd=$(cmd_of "$name")
    mkdir -p "$T/$name.native" "$T/$name.gpuos"
    CUTRACE_REAL=$REAL CUTRACE_OUT=$T/$name.native/log LD_LIBRARY_PATH=$TRACE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timeout 90 $cmd > "$OUT/$name.native.out" 2>&1
    echo "rc $?" >> "$OUT/$name.native.out"
    CUTRACE_REAL=$PWD/$B/shim/libcuda.so.1 CUTRACE_OUT=$T/$name.gpuos/log GPUOS_CUDASHIM_TRACE=1 \
        timeout 90 "$G" run --vgpu p70 -- sh -c 'LD_LIBRARY_PATH=$0:$LD_LIBRARY_PATH exec "$@"' "$TRACE" $cmd \
        > "$OUT/$name.gpuos.out" 2>&1
    echo "rc $?" >> "$OUT/$name.gpuos.out"
    (cd "$T" && tar czf "$OUT/$name.native.tar.gz" "$name.native" && tar czf "$OUT/$name.gpuos.tar.gz" "$name.gpuos")
    python3 tools/cutrace/diff.py "$T/$name.native/log" "$T/$name.gpuos/log" > "$OUT/$name.diff" 2>&1
    echo "=== $name: native $(tail -1 "$OUT/$name.native.out"), gpuos $(tail -1 "$OUT/$name.gpuos.out")"
    grep -v "^rc " "$OUT/$name.gpuos.out" | grep -i "error\|unsupported\|fail" | head -5 | cut -c1-240
    head -70 "$OUT/$name.diff" | cut -c1-240
done
