#!/bin/sh
# tests/gpu/shm.sh: shared device memory and swapping on the real GPU, small and
# quick (bench/shm.sh measures at full size): a kernel chain across two
# processes through one exported VMM segment (POSIX file descriptor) and through
# pinned host memory, the consumer's result checked word by word; two vGPUs of
# 8 GiB on a pool forced to 12 GiB, so every turn evicts and restores 4 GiB,
# every buffer checked word by word, no VMM memory or mapping left; evict/restore
# round trips of 2 MB .. 256 MB keep the bytes. Fails unless all is byte-exact.
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
