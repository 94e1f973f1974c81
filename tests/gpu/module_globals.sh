#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/module_globals.sh: a module's __device__ globals are charged to its
# vGPU's memory share on the real GPU (issue 44.2). Device machine, repository
# root; builds what it needs (make, nvcc). tests/gpu/progs/globals.cu (1 GiB of
# __device__ arrays) as a cubin, a fatbin and PTX, loaded by
# tests/gpu/progs/drv_globals.c:
#   native        NVIDIA's driver: loads, every byte written and read back
#   small/FORM    through `gpuos run` on a vGPU of 64 MiB: refused with
#                 CUDA_ERROR_OUT_OF_MEMORY (cubin, fatbin, PTX)
#   big/FORM      on a vGPU of 4 GiB: loads, cuMemGetInfo falls by 1 GiB at least
#                 (the charge), every byte written by a kernel reads back
#   list          `gpuos vgpu list` shows mem_used 0 on both vGPUs afterwards
# Logs under $OUT/module_globals/; prints a PASS/FAIL table; exit 1 on a FAIL.
#   run: sh tests/gpu/module_globals.sh   (OUT set by the device tool)
set -u
OUT=${OUT:-out}
L="$OUT/module_globals"
mkdir -p "$L"
# (GPU_PREBUILT=1: build/ was built elsewhere and carried: no make here)
[ -n "${GPU_PREBUILT:-}" ] || make -s -j16 >"$L/make.log" 2>&1 || { tail -20 "$L/make.log"; echo "FAIL make"; exit 1; }
. tests/gpu/daemon_lib.sh
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_INC=$(dirname "$(dirname "$NVCC")")/include
P="$T/progs"
mkdir -p "$P"
"$NVCC" -cubin -arch=sm_90 -o "$P/globals.cubin" tests/gpu/progs/globals.cu >>"$L/build.log" 2>&1 &&
    "$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
        -o "$P/globals.fatbin" tests/gpu/progs/globals.cu >>"$L/build.log" 2>&1 &&
    "$NVCC" -ptx -arch=sm_90 -o "$P/globals.ptx" tests/gpu/progs/globals.cu >>"$L/build.log" 2>&1 &&
    cc -O2 -std=c11 -D_GNU_SOURCE -I"$CUDA_INC" -Itests/gpu/progs -o "$P/drv_globals" tests/gpu/progs/drv_globals.c \
        -L"$B/shim" -lcuda >>"$L/build.log" 2>&1 || { cat "$L/build.log"; echo "FAIL build"; exit 1; }
gpu_daemon "[device 0]
isolation = process
[vgpu small]
memory = 64M
[vgpu big]
memory = 4G" "$L/serve.log"
fails=0
table=""
row() { # name, rc, output file
    if [ "$2" = 0 ]; then r=PASS; else r=FAIL; fails=$((fails + 1)); fi
    table="$table$(printf '%-14s %s  %s' "$1" "$r" "$(tr '\n' ' ' < "$3")")
"
}
timeout 120 "$P/drv_globals" "$P/globals.cubin" native > "$L/native.txt" 2>&1
row native $? "$L/native.txt"
for form in cubin fatbin ptx; do
    timeout 120 "$G" run --vgpu small -- "$P/drv_globals" "$P/globals.$form" refuse > "$L/small-$form.txt" 2>&1
    row "small/$form" $? "$L/small-$form.txt"
    timeout 300 "$G" run --vgpu big -- "$P/drv_globals" "$P/globals.$form" run > "$L/big-$form.txt" 2>&1
    row "big/$form" $? "$L/big-$form.txt"
done
"$G" vgpu list > "$L/list.txt" 2>&1
"$G" vgpu list --json - 2>/dev/null | python3 -c "
import json, sys
u = {v['name']: v['mem_used'] for v in json.load(sys.stdin)['vgpus']}
print('mem_used', u)
sys.exit(0 if u.get('small') == 0 and u.get('big') == 0 else 1)" > "$L/list-check.txt" 2>&1
row list $? "$L/list-check.txt"
echo "module_globals: a module's globals on vGPUs of 64 MiB and 4 GiB"
printf '%s' "$table"
[ "$fails" = 0 ] && echo "PASS module_globals" || echo "FAIL module_globals ($fails)"
[ "$fails" = 0 ]
