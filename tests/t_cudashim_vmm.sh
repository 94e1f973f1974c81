#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_cudashim_vmm.sh: CUDA's virtual memory management through gpuos's libcuda
# (tests/cudashim_vmm.c, src/cudashim/vmm.c, src/serve/vmm_cl.c) on the
# simulated device, as real processes through `gpuos run`:
#  - under isolation = process, none and executor = per-vgpu: reserve, create,
#    map two handles side by side, access, bytes in and out equal (across the
#    handles too), release while mapped, read-only, unmap then access fails,
#    charges back, the driver's refusals;
#  - creating past the vGPU's share is CUDA_ERROR_OUT_OF_MEMORY at exactly
#    the share (16 handles of 2 MiB on 32 MiB), a release makes room again;
#  - another tenant cannot map, release, unmap, free or copy the first one's
#    handle and range (CUDA_ERROR_INVALID_VALUE), and the first one's bytes are
#    intact afterwards;
#  - kill -9 of a client holding VMM memory gives its share back.
set -u
. tests/serve_lib.sh
V="$B/tests/cudashim_vmm"
need_shim

for mode in $ISOLATIONS; do
    iso=$(iso_conf "$mode")
    start_sim_daemon "$mode" "[vgpu a]
memory = 64M
[vgpu b]
memory = 32M"
    out=$(timeout 60 "$G" run --vgpu a -- "$V" basic 2>"$T/err") || { cat "$T/err"; fail "basic ($iso): $out"; }
    [ "$out" = ok ] || fail "basic ($iso) printed: $out"
    for l in "cuMemCreate (host or NUMA memory: the vGPU's memory is its device's)" \
             "cuMemMap (an offset into the allocation: map it from its start)" \
             "cuMemExportToShareableHandle (VMM memory is not shared between processes here)"; do
        [ "$(grep -cxF "gpuos libcuda: $l is not supported" "$T/err")" = 1 ] || fail "not named once: $l: $(cat "$T/err")"
    done
    [ "$(grep -vc "is not supported" "$T/err")" = 0 ] || fail "unexpected stderr ($iso): $(cat "$T/err")"
    wait_field a mem_used 0 # what basic left mapped went with its process
    out=$(timeout 60 "$G" run --vgpu b -- "$V" oom 2>&1) || fail "oom ($iso): $out"
    [ "$out" = "oom 16" ] || fail "VMM past a 32 MiB share ($iso): $out (want 16 handles of 2 MiB)"
    wait_field b mem_used 0

    # a tenant holding 4 MiB; another one names its handle and range
    rm -f "$T/held" "$T/go" "$T/intact"
    "$G" run --vgpu a -- "$V" hold "$T" > "$T/hold.out" 2>&1 &
    hp=$!
    i=0
    while [ ! -f "$T/held" ]; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "holder did not start: $(cat "$T/hold.out")"
        sleep 0.05
    done
    wait_field a mem_used 4194304
    set -- $(cat "$T/held")
    out=$(timeout 60 "$G" run --vgpu b -- "$V" foreign "$1" "$2" 2>&1) || fail "foreign ($iso): $out"
    [ "$out" = ok ] || fail "foreign ($iso) printed: $out"
    [ "$(vgpu_field a mem_used)" = 4194304 ] || fail "the holder's charge changed: $(vgpu_field a mem_used)"
    touch "$T/go"
    i=0
    while [ ! -f "$T/intact" ]; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "holder's bytes not intact ($iso): $(cat "$T/hold.out")"
        sleep 0.05
    done
    # kill -9: the share comes back
    kill -9 $hp
    wait $hp 2>/dev/null
    wait_field a mem_used 0
    stop_daemon
done
echo "t_cudashim_vmm: ok"
