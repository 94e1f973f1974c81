#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/req.sh: issue 40.1 (one request form, struct gos_req) on the real
# GPU. Device machine, repository root, build/ carried (GPU_PREBUILT=1: no make
# or nvcc here; everything it runs is built by `make`). Checks, each a row of
# the table at the end, full logs under $OUT/req/:
#   ring      tests/t_ring.sh on GPU 0 (RING_SIM=none): byte-exact copies of
#             every kind and launches through the ring (entries are gos_req
#             heads) and through the socket (GPUOS_RING=0), hostile entries
#             refused by the executor's one decoder, a fault through the ring;
#   vgpu      tests/gpu/vgpu.sh: copies of every kind byte for byte (1 B to
#             300 MB, DIRECT small copies), the fill kernel with clusters, a
#             PTX module, hostile clients, the version refusal (protocol 9);
#   none      isolation = none: the daemon's own decoding (srv_op.dev) of
#             copies (serve_client copy) and launches (fill in the daemon's
#             context, a module from bytes: PTX on a GPU, SIMMOD simulated);
#   bench     build/bench/vgpu_bench --quick --only small,copy,launch: native
#             and vGPU side by side in one run (numbers for the lead to set
#             beside the last run's; PASS: it ran and wrote its JSON).
# About 3 minutes. Usage: OUT=out GPU_PREBUILT=1 sh tests/gpu/req.sh
# (REQ_SIM=default: the same on the simulated device, without the vgpu row: a
# dry run of this script where there is no GPU.)
set -u
OUT=${OUT:-out}
L="$OUT/req"
mkdir -p "$L"
B=${BUILD:-build}
export BUILD="$B" GPUOS=${GPUOS:-$PWD/$B/gpuos}
if [ -z "${GPU_PREBUILT:-}" ]; then
    make -s -j"$(nproc)" > "$L/make.log" 2>&1 || { tail -20 "$L/make.log"; echo "FAIL make"; exit 1; }
fi
for f in "$GPUOS" "$B/tests/ring_client" "$B/tests/serve_client" "$B/bench/vgpu_bench"; do
    [ -x "$f" ] || { echo "FAIL $f missing (build here with make and carry build/)"; exit 1; }
done
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader > "$L/gpu.txt" 2>&1
# `sh tests/gpu/req.sh none`: the isolation = none row (a process of its own,
# for timeout)
if [ "${1:-}" = none ]; then
    T=$(mktemp -d)
    printf 'socket = %s\n[device 0]\n%s\nisolation = none\n[vgpu a]\nmemory = 10%%\n' "$T/s" "${SIMLINE:-}" > "$T/conf"
    "$GPUOS" serve --config "$T/conf" 2> "$T/serve.log" &
    d=$!
    i=0; while [ ! -S "$T/s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    rc=0
    for n in 1 4096 1000000 30000000; do
        GPUOS_SOCKET="$T/s" "$B/tests/serve_client" copy a $n || rc=1
    done
    GPUOS_SOCKET="$T/s" "$B/tests/serve_client" fill a builtin || rc=1
    # (a module from bytes: a SIMMOD image on the simulated device, PTX text on a GPU)
    if [ -n "${SIMLINE:-}" ]; then m=module; else m=ptx; fi
    GPUOS_SOCKET="$T/s" "$B/tests/serve_client" $m a || rc=1
    kill -TERM $d; wait $d
    sed 's/^/    serve: /' "$T/serve.log" | tail -5
    rm -rf "$T"
    [ $rc = 0 ] && echo "none: copies byte-exact, fill and a module from bytes in the daemon's context"
    exit $rc
fi
TABLE=""
row() { # name, seconds limit, command...
    n=$1 lim=$2; shift 2
    t0=$(date +%s)
    if timeout "$lim" "$@" > "$L/$n.log" 2>&1; then r=PASS; else r="FAIL(rc $?)"; fi
    TABLE="$TABLE$(printf '%-6s %-10s %4d s  %s' "$n" "$r" "$(( $(date +%s) - t0 ))" "$(tail -1 "$L/$n.log" | cut -c1-90)")
"
}
SIM=${REQ_SIM:-none}
SIMLINE= SIMARG=
[ "$SIM" = none ] || { SIMLINE="sim = $SIM"; SIMARG="--sim $SIM"; }
row ring 240 env RING_SIM="$SIM" sh tests/t_ring.sh
[ "$SIM" = none ] && row vgpu 240 sh tests/gpu/vgpu.sh
row none 120 env SIMLINE="$SIMLINE" sh "$0" none
# shellcheck disable=SC2086
row bench 240 "$B/bench/vgpu_bench" --gpuos "$GPUOS" $SIMARG --results "$L/bench" --quick --only small,copy,launch
echo "== tests/gpu/req.sh on $(head -1 "$L/gpu.txt" | cut -d, -f1)"
printf '%s' "$TABLE" | tee "$L/table.txt"
! grep -q FAIL "$L/table.txt"
