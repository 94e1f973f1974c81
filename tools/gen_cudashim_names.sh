#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gen_cudashim_names.sh CUDA_INCLUDE_DIR OUT_DIR
# The Driver API names of the cuda.h at hand, for gpuos's libcuda.so.1
# (src/cudashim/): every function cuda.h declares, with the versioned symbol each
# base name maps to by default and with CUDA_API_PER_THREAD_DEFAULT_STREAM.
# Writes OUT_DIR/names.inc (N(base, default_symbol, ptds_symbol) lines, for the
# cuGetProcAddress table) and OUT_DIR/symbols.txt (every symbol to export: those
# and the unversioned legacy names cuda.h still declares) and OUT_DIR/symbols.inc
# (S(symbol) lines).
set -eu
inc=$1; out=$2
h="$inc/cuda.h"
[ -f "$h" ] || { echo "gen_cudashim_names: no $h" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# cuda.h and cudaProfiler.h (cuProfilerStart/Stop); declarations may span lines.
hs="$h"
[ -f "$inc/cudaProfiler.h" ] && hs="$hs $inc/cudaProfiler.h"
cat $hs | tr '\n' ' ' | grep -oE 'CUDAAPI[[:space:]]+cu[A-Za-z0-9_]+[[:space:]]*\(' |
    sed -E 's/CUDAAPI[[:space:]]+//; s/[[:space:]]*\(//' | sort -u > "$tmp/base"
{ echo '#include <cuda.h>'; [ -f "$inc/cudaProfiler.h" ] && echo '#include <cudaProfiler.h>'
  awk '{ printf "@@ %d %s\n", NR, $1 }' "$tmp/base"; } > "$tmp/x.c"
${CC:-cc} -E -P -I"$inc" "$tmp/x.c" | grep '^@@' > "$tmp/plain"
${CC:-cc} -E -P -DCUDA_API_PER_THREAD_DEFAULT_STREAM -I"$inc" "$tmp/x.c" | grep '^@@' > "$tmp/ptds"
awk 'NR == FNR { base[NR] = $1; next } { print $2, $3 }' "$tmp/base" "$tmp/plain" > "$tmp/p"
awk '{ print $2, $3 }' "$tmp/ptds" > "$tmp/q"
# N(base, default, ptds)
awk 'NR == FNR { q[$1] = $2; next } { print $1, $2, q[FNR] }' "$tmp/q" "$tmp/p" > "$tmp/n"
awk 'NR == FNR { b[NR] = $1; next } { printf "N(%s, %s, %s)\n", b[FNR], $2, $3 }' "$tmp/base" "$tmp/n" > "$out/names.inc.tmp"
{ cat "$tmp/base"; awk '{ print $2; print $3 }' "$tmp/n"; } | sort -u > "$out/symbols.txt.tmp"
mv "$out/names.inc.tmp" "$out/names.inc"
sed 's/.*/S(&)/' "$out/symbols.txt.tmp" > "$out/symbols.inc"
mv "$out/symbols.txt.tmp" "$out/symbols.txt"
# V(base, version, symbol, ptds_symbol) lines: which symbol cuGetProcAddress
# gives for a base name asked at a CUDA version. cudaTypedefs.h names every
# signature a base name has had (PFN_cuCtxCreate_v3020, _v11040, _v12050);
# the k-th of them, oldest first, is the symbol base_vk (base for k = 1), which
# holds for every name of CUDA 13.0's headers. A row whose symbol cuda.h does
# not declare is left out (the base name's default stands).
if [ -f "$inc/cudaTypedefs.h" ]; then
    tr '\n' ' ' < "$inc/cudaTypedefs.h" | grep -oE '\*PFN_cu[A-Za-z0-9_]+\)' |
        sed -nE 's/^\*PFN_(cu[A-Za-z0-9_]*)_v([0-9]+)\)$/\1 \2/p' | sort -u -k1,1 -k2,2n |
        awk -v syms="$out/symbols.txt" '
            BEGIN { while ((getline s < syms) > 0) have[s] = 1 }
            { k = ($1 == prev) ? k + 1 : 1; prev = $1
              sym = (k == 1) ? $1 : $1 "_v" k
              if (!have[sym]) next
              pt = have[sym "_ptds"] ? sym "_ptds" : have[sym "_ptsz"] ? sym "_ptsz" : sym
              printf "V(%s, %s, %s, %s)\n", $1, $2, sym, pt }' > "$out/versions.inc.tmp"
else
    : > "$out/versions.inc.tmp"
fi
mv "$out/versions.inc.tmp" "$out/versions.inc"
# E(CUDA_ERROR_X) lines: every CUresult name of this cuda.h (cuGetErrorName).
grep -oE '^[[:space:]]*CUDA_(SUCCESS|ERROR_[A-Z0-9_]+)[[:space:]]*=' "$h" | sed -E 's/[[:space:]=]//g; s/.*/E(&)/' |
    sort -u > "$out/errors.inc"
