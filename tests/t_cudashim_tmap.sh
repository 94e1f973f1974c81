#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_cudashim_tmap.sh: tensor maps encoded by the daemon's device, not by
# NVIDIA's libcuda in the tenant's process (issue 43; src/serve/tmap.c,
# src/cudashim/tmap.c), on the simulated device, under isolation = process
# (the client's executor encodes), none (the daemon's device) and executor =
# per-vgpu:
#  - cuTensorMapEncodeTiled / Im2col / Im2colWide / ReplaceAddress through
#    gpuos's libcuda answer the simulated device's packing, word by word
#    (tests/cudashim_tmap.c), bad arguments CUDA_ERROR_INVALID_VALUE, and the
#    program maps one libcuda.so.1, gpuos's, even with NVIDIA's (a stand-in,
#    tests/fake_nvidia_cuda.c) named by GPUOS_REAL_LIBCUDA;
#  - TMAP_ENCODE as a hostile tenant sends it through libgpuos
#    (tests/tmap_raw.c): each malformed request is GPUOS_EINVAL with a one-line
#    reason, and the daemon and the executor live on to answer the next.
set -u
. tests/serve_lib.sh
need_shim
F=$PWD/$B/tests/fake_nvidia/libcuda.so.1

for mode in $ISOLATIONS; do
    start_sim_daemon "$mode" "[vgpu a]
memory = 64M"
    out=$(GPUOS_REAL_LIBCUDA=$F timeout 60 "$G" run --vgpu a -- "$B/tests/cudashim_tmap" 2>"$T/err") ||
        { cat "$T/err"; fail "cudashim_tmap ($mode): $out"; }
    [ "$out" = ok ] || fail "cudashim_tmap ($mode) printed: $out"
    grep . "$T/err" && fail "unexpected stderr ($mode)"

    out=$(timeout 60 "$B/tests/tmap_raw" a 2>&1) || fail "tmap_raw ($mode): $out"
    echo "$out" | tail -1 | grep -qx ok || fail "tmap_raw ($mode) did not end with ok: $out"
    for l in "rank6 -1 tensor map of rank 6 (1..5)" "im2col2 -1 tensor map of rank 2 (3..5)" \
             "rankmax -1 tensor map of rank 4294967295 (1..5)" \
             "kind9 -1 tensor map kind 9 (tiled 1, im2col 2, im2col wide 3, replace 4)" \
             "misaligned -1 tensor map address 0x100008 is not 16-byte aligned (32 with 32-byte interleave)" \
             "good 0 "; do
        echo "$out" | grep -qxF "$l" || fail "tmap_raw ($mode): no line \"$l\" in: $out"
    done
    [ "$(echo "$out" | grep -c ' -1 ')" = 14 ] || fail "tmap_raw ($mode): want 14 refusals: $out"
    kill -0 "$DPID" 2>/dev/null || fail "daemon gone after the hostile requests ($mode)"
    stop_daemon
done
echo "ok: tensor maps by the daemon's device (process, none, per-vgpu), none by NVIDIA's library in the tenant"
