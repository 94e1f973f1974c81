#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/attn_decode.sh: decode attention on the partition-aware runtime against
# the same kernel on interleaved memory and against PyTorch's
# scaled_dot_product_attention (issue 26 item 3; pillar 2, paper 001 section 7.1).
#
#   sh bench/attn_decode.sh            (on the GPU machine, from the repository root)
#
# Builds build/gpuos and build/bench/attn_decode (make), charts this chip (each
# lease may be another physical GPU), runs the kernel's variants on batch sizes
# ATTN_BATCH x contexts ATTN_CTX, then bench/attn_decode_ref.py (python3 with
# torch) checks the outputs against SDPA and times SDPA. Results go to $RES
# (default $OUT where the device tool sets it, else results/<gpu-uuid>):
# chip.json, attn-decode-ours.json (the kernel), attn-decode.json (everything),
# the logs and attn-provenance.json; the kernel's raw outputs ($RES/tmp) are
# removed at the end unless KEEP_TMP is set. ATTN_NO_BUILD=1 uses build/ as it
# is (a machine without the build's headers). The markdown table is printed
# last. Bounded: the kernel program gets 120 s, the Python side 100 s.
set -u
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
B=$BUILD/bench/attn_decode
PY=${PYTHON:-python3}
BATCH=${ATTN_BATCH:-1,8,32,128}
CTX=${ATTN_CTX:-1024,8192,32768}
t0=$(date +%s)
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
[ -n "$uuid" ] || { echo "attn_decode.sh: no GPU (nvidia-smi gave no UUID)"; exit 1; }
RES=${RES:-${OUT:-results/$uuid}}
mkdir -p "$RES"
GOS_COMMIT=${GOS_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export GOS_COMMIT
copy_out() {
    if [ -n "${OUT:-}" ] && [ "$OUT" != "$RES" ]; then
        cp "$RES"/chip.json "$RES"/attn-*.json "$RES"/attn-*.log "$OUT"/ 2>/dev/null
    fi
}
echo "== build ($B)"
if [ -n "${ATTN_NO_BUILD:-}" ] && [ -x "$B" ] && [ -x "$G" ]; then
    echo "    (ATTN_NO_BUILD: the carried build is used as it is)"
elif ! make -j"$(nproc 2>/dev/null || echo 4)" BUILD="$BUILD" "$BUILD/gpuos" "$B" > "$RES/attn-build.log" 2>&1; then
    tail -30 "$RES/attn-build.log"; copy_out; echo "attn_decode.sh: FAILED (build)"; exit 1
fi
grep -A2 -E "Function properties for _Z(10attn_plain|7attn_rtILb0)" "$BUILD/bench/attn_decode.ptxas.log" 2>/dev/null |
    grep -E "registers|spill" | sed 's/^ */    ptxas: /'
echo "== chart ($G probe numa)"
if ! "$G" probe numa --json "$RES/chip.json" > "$RES/attn-chart.log" 2>&1; then
    cat "$RES/attn-chart.log"; copy_out; echo "attn_decode.sh: FAILED (chart)"; exit 1
fi
tail -4 "$RES/attn-chart.log"
echo "== $B (batch $BATCH, context $CTX)"
rm -rf "$RES/tmp" "$RES/attn-decode-ours.json" "$RES/attn-decode.json"
timeout 120 "$B" --chart "$RES/chip.json" --out "$RES" --batch "$BATCH" --ctx "$CTX" ${ATTN_ARGS:-} \
    > "$RES/.attn-kernel.log.$$" 2>&1
rc=$?
mv -f "$RES/.attn-kernel.log.$$" "$RES/attn-kernel.log"
cat "$RES/attn-kernel.log"
[ $rc -eq 124 ] && echo "attn_decode.sh: the kernel program ran past 120 s"
if [ -f "$RES/attn-decode-ours.json" ] && grep -q '"rows"' "$RES/attn-decode-ours.json" && [ $rc -ne 124 ]; then
    echo "== SDPA ($PY bench/attn_decode_ref.py)"
    timeout 100 "$PY" bench/attn_decode_ref.py --ours "$RES/attn-decode-ours.json" --out "$RES/attn-decode.json" \
        > "$RES/.attn-sdpa.log.$$" 2>&1
    rc2=$?
    mv -f "$RES/.attn-sdpa.log.$$" "$RES/attn-sdpa.log"
    [ $rc2 -eq 124 ] && echo "attn_decode.sh: the SDPA side ran past 100 s"
    [ $rc -eq 0 ] && rc=$rc2
else
    [ $rc -eq 0 ] && rc=1
    echo "attn_decode.sh: no kernel results, SDPA not run" > "$RES/attn-sdpa.log"
fi
[ -n "${KEEP_TMP:-}" ] || rm -rf "$RES/tmp"
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
printf '{"date": "%s", "commit": "%s", "command": "sh bench/attn_decode.sh", "batch": "%s", "ctx": "%s", "driver": "%s", "host": "%s", "gpu_uuid": "%s", "seconds": %s, "rc": %s}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$GOS_COMMIT" "$BATCH" "$CTX" "$drv" "$(hostname)" "$uuid" "$(( $(date +%s) - t0 ))" "$rc" \
    > "$RES/attn-provenance.json"
copy_out
echo "attn_decode.sh: $([ $rc -eq 0 ] && echo done || echo FAILED) in $(( $(date +%s) - t0 )) s"
# the SDPA side's log ends with the table: last
cat "$RES/attn-sdpa.log"
exit $rc
