#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop29d.sh: the closing GPU run of stop 29 (device machine,
# repository root, build/ carried): decode attention on the 40-byte views
# (issue 26.3), the sharing table with whole grants for equal shares and BAND's
# fairness on rings (issue 22), the 10 % vGPU next to a busy 90 % one.
set -u
. tools/gpu_lib.sh
gpu_run_begin stop29d tools/gpu_stop29d.sh
mkdir -p "$W/bench" "$W/attn"
part attn 90 env RES="$W/attn" OUT="$W/attn" ATTN_NO_BUILD=1 ATTN_BATCH=1,32,128 ATTN_CTX=8192 \
    GOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh bench/attn_decode.sh
sharing_parts
cp "$W/machine.txt" "$S" "$OUT/"
cp "$W/attn/attn-decode.json" "$W/attn/attn-decode-ours.json" "$OUT/" 2>/dev/null
(cd "$(dirname "$W")" && tar czf "$OUT/stop29d.tar.gz" stop29d)
tail -6 "$W/attn.log"
sharing_summary
cat "$S"
