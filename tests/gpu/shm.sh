#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/shm.sh: shared device memory and swapping on the real GPU, small and
# quick (bench/shm.sh measures at full size): a kernel chain across two
# processes through one exported VMM segment (POSIX file descriptor) and through
# pinned host memory, the consumer's result checked word by word; two vGPUs of
# 8 GiB on a pool forced to 12 GiB, so every turn evicts and restores 4 GiB,
# every buffer checked word by word, no VMM memory or mapping left; evict/restore
# round trips of 2 MB .. 256 MB keep the bytes; a read-only attachment cannot be
# written (copy refused, a kernel's write faults only its client). Fails unless
# all is byte-exact.
set -u
BUILD=${BUILD:-build}
B=${SHM_BENCH:-$BUILD/bench/shm_bench}
OUT=${OUT:-out}
mkdir -p "$OUT"
"$B" --chain-n 2048 --rounds 5 --turn-mb 8192 --buf-mb 1024 --pool-mb 12288 --rate-mb 2,32,256 \
    --out "$OUT/shm-check.json" 2>&1 | tee "$OUT/shm-check.log"
grep -q "all checks byte-exact" "$OUT/shm-check.log" || exit 1
/usr/bin/python3 - "$OUT/shm-check.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
t = r["turns"]
assert r["byte_exact"] and all(c["byte_exact"] for c in r["chain"])
assert t["phases"][1]["evicted_bytes"] > 0 and t["phases"][2]["restored_bytes"] > 0
assert all(p["bad_words"] == 0 for p in t["phases"])
assert t["vmm_bytes_left"] == 0 and t["vmm_mappings_left"] == 0
print("shm.sh: byte-exact; chain speedup %.2fx" % r["chain"][0]["speedup"])
PY
# ---- through the daemon on the GPU: segments between two executors, swapping ----
G=${GPUOS:-build/gpuos}
C=${SHM_CLIENT:-build/tests/shm_client}
D=$(mktemp -d); export GPUOS_SOCKET="$D/s"
printf 'socket = %s\nmemory_oversubscribe = 1\n[device 0]\npolicy = band\nswap = 256M\nswap_pool = 128M\n[vgpu a]\ncompute = 50\ncopy = 50\nmemory = 160M\n[vgpu b]\ncompute = 50\ncopy = 50\nmemory = 160M\n' "$D/s" > "$D/conf"
"$G" serve --config "$D/conf" 2> "$OUT/shm-serve.log" &
DP=$!
i=0; while [ ! -S "$D/s" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
mkdir "$D/pc"
timeout 60 "$C" a producer 0x51 $((64 << 20)) "$D/pc" > "$D/prod" 2>&1 &
P=$!
r=$(timeout 60 "$C" b consumer 0x51 "$D/pc" 2>&1); wait $P
echo "daemon shm: $r / $(cat "$D/prod")" | tee -a "$OUT/shm-check.log"
ok=1
echo "$r" | grep -q "consumer rc=0 match=1" && grep -q "producer rc=0 waited=0 match=1" "$D/prod" || ok=0
# read-only attachment (SHM_RDONLY, cuMemSetAccess PROT_READ): readable, the copy
# refused by the daemon, the fill kernel's write faults b's own context only; a
# second read-only attachment (a new executor) still reads the consumer's bytes
r=$(timeout 60 "$C" b ro 0x51 2>&1)
echo "daemon shm read-only: $r" | tee -a "$OUT/shm-check.log"
echo "$r" | grep -q "ro attach=0 second_half=1 copy=-6 kernel=-" || ok=0
r=$(timeout 60 "$C" b ro 0x51 2>&1)
echo "daemon shm read-only again: $r" | tee -a "$OUT/shm-check.log"
echo "$r" | grep -q "ro attach=0 second_half=1 copy=-6" || ok=0
# the segment stays (System V) and is charged to a: remove it before a's swap work
timeout 30 "$C" a rm 0x51 | tee -a "$OUT/shm-check.log" | grep -q "rm rc=0" || ok=0
timeout 120 "$C" a work 11 3 32 40 > "$D/wa" 2>&1 &
WA=$!
r=$(timeout 120 "$C" b work 22 3 32 40 2>&1); wait $WA
echo "daemon swap: $r / $(cat "$D/wa")" | tee -a "$OUT/shm-check.log"
"$G" vgpu list | tee -a "$OUT/shm-check.log"
echo "$r" | grep -q "work rc=0 mismatches=0" && grep -q "work rc=0 mismatches=0" "$D/wa" || ok=0
kill $DP; wait $DP
rm -rf "$D"
[ $ok = 1 ] || { echo "shm.sh: daemon checks FAILED"; exit 1; }
echo "shm.sh: daemon shm and swap byte-exact"
