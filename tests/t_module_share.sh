#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_module_share.sh: a module's global memory is charged to its vGPU's memory
# share (issue 44.2: a vGPU of 64 MiB held 16 GiB as __device__ arrays) on the
# simulated device, under isolation = process, none and executor = per-vgpu
# (tests/serve_client.c modshare, SIMMOD images whose "@name=bytes" globals the
# simulated device allocates):
#  - a module whose globals (2 GiB) exceed the share is refused with GPUOS_EBUSY
#    naming the share, and nothing is charged;
#  - one of 24 MiB is charged exactly: `gpuos vgpu list` shows mem_used 25165824
#    while it is loaded, an allocation past the rest of the share and a second
#    module of 48 MiB are refused;
#  - the charge goes back at the unload, and when the client leaves holding it;
#  - two connections loading a module of 40 MiB at once, 30 times: never both
#    (the daemon checks the share again when the device answers; without that
#    check both load in the first rounds);
#  - through gpuos's libcuda (where built): cuModuleLoad and cuModuleLoadData of
#    the 2 GiB image answer CUDA_ERROR_OUT_OF_MEMORY.
set -u
. tests/serve_lib.sh

for mode in process none per-vgpu; do
    case $mode in
    per-vgpu) iso="isolation = process
executor = per-vgpu" ;;
    *) iso="isolation = $mode" ;;
    esac
    start_daemon "$(printf '[device 0]\nsim = default\n%s\n' "$iso")
$(vgpu_sections 64M a)"
    "$C" modshare a 2 > "$T/out" 2> "$T/err" &
    pid=$!
    i=0
    until grep -q charged "$T/out"; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "modshare ($iso): $(cat "$T/out" "$T/err")"
        kill -0 $pid 2>/dev/null || { wait $pid; fail "modshare ($iso) ended: $(cat "$T/out" "$T/err")"; }
        sleep 0.1
    done
    [ "$(vgpu_field a mem_used)" = 25165824 ] || fail "vgpu list mem_used $(vgpu_field a mem_used) while 24 MiB of globals are loaded ($iso)"
    wait $pid || fail "modshare ($iso): $(cat "$T/out" "$T/err")"
    grep -q released "$T/out" || fail "modshare ($iso): $(cat "$T/out")"
    [ "$(vgpu_field a mem_used)" = 0 ] || fail "mem_used $(vgpu_field a mem_used) after the unload ($iso)"
    "$C" modshare a 0 leave > "$T/out" 2>&1 || fail "modshare leave ($iso): $(cat "$T/out")"
    wait_field a mem_used 0
    "$C" modrace a 30 > "$T/out" 2>&1 || fail "modrace ($iso): $(cat "$T/out")"
    wait_field a mem_used 0
    stop_daemon
done

X="$B/tests/cudashim_badimg"
if [ -f "$B/shim/libcuda.so.1" ] && [ -x "$X" ]; then
    start_daemon "[device 0]
sim = default
[vgpu a]
memory = 64M"
    mkdir -p "$T/img"
    printf 'SIMMOD\nk=fill\n@big=1073741824\n@big2=1073741824\n' > "$T/img/big.img"
    out=$(timeout 60 "$G" run --vgpu a -- "$X" "$T/img" big 2>&1) || fail "cudashim_badimg: $out"
    case "$out" in *"mod=CUDA_ERROR_OUT_OF_MEMORY data=CUDA_ERROR_OUT_OF_MEMORY"*) ;;
    *) fail "2 GiB of globals through libcuda on a 64 MiB share: $out" ;; esac
    wait_field a mem_used 0
fi
echo "t_module_share: ok"
