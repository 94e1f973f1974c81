#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_shm_bench.sh: shared device memory and swapping end to end on the simulated
# device with real processes (bench/shm_bench.c, the same program as on the GPU):
#   - a kernel chain across two processes, each with its own simulated device,
#     through one exported VMM segment and through pinned host memory: the
#     consumer's result is checked word by word in both;
#   - two vGPUs of 64 MB each on a 96 MB pool take turns: every turn evicts the
#     other vGPU's buffers and restores its own (the swap policy picks them),
#     every buffer of the running vGPU is read back and checked word by word,
#     the per-vGPU resident/swapped accounting is what the turns imply, and no
#     VMM memory or mapping is left afterwards;
#   - eviction/restore rates are positive and the bytes survive 5 round trips;
#   - bad input: unknown option, --chain-n not a multiple of 512.
set -eu
BUILD=${BUILD:-build}
B=$BUILD/bench/shm_bench
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$B" --sim default --chain-n 512,1024 --rounds 4 --turn-mb 64 --buf-mb 4 --pool-mb 96 --rate-mb 2,8 \
    --out "$tmp/shm.json" > "$tmp/log"
grep -q "all checks byte-exact" "$tmp/log"
/usr/bin/python3 - "$tmp/shm.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "gpuos.shm-bench/1" and r["byte_exact"] is True
assert r["provenance"]["date"] and r["device"]["uuid"].startswith("SIM")
c = r["chain"]
assert [x["bytes"] for x in c] == [1 << 20, 4 << 20]
assert all(x["byte_exact"] and x["shm_s"] > 0 and x["host_s"] > 0 for x in c)
t = r["turns"]
MB = 1 << 20
assert t["bytes_per_vgpu"] == 64 * MB and t["pool_bytes"] == 96 * MB
ph = t["phases"]
assert [p["vgpu"] for p in ph] == ["A", "B", "A", "B"]
assert all(p["bad_words"] == 0 and p["checked_bytes"] == 64 * MB for p in ph)
# A alone fits; B's allocations evict 32 MB of A; each later turn restores what
# its vGPU lost and evicts the other's.
assert ph[0]["evicted_bytes"] == 0 and ph[1]["evicted_bytes"] == 32 * MB
assert ph[2]["restored_bytes"] == 32 * MB and ph[3]["restored_bytes"] == 32 * MB
assert ph[1]["resident_A"] == 32 * MB and ph[1]["swapped_A"] == 32 * MB and ph[1]["resident_B"] == 64 * MB
assert ph[2]["resident_A"] == 64 * MB and ph[2]["swapped_B"] == 32 * MB
assert ph[3]["resident_B"] == 64 * MB and ph[3]["swapped_A"] == 32 * MB
for p in ph:  # never more on the pool than it holds
    assert p["resident_A"] + p["resident_B"] <= t["pool_bytes"]
assert t["swap_bytes"] == 36 * MB  # the overflow (32 MB) + one buffer: plans interleave
assert t["vmm_bytes_left"] == 0 and t["vmm_mappings_left"] == 0
assert [x["bytes"] for x in r["rate"]] == [2 * MB, 8 * MB]
assert all(x["evict_gbps"] > 0 and x["restore_gbps"] > 0 for x in r["rate"])
PY
if "$B" --sim default --bogus 1 2> "$tmp/err"; then exit 1; fi
grep -q "unknown option --bogus" "$tmp/err"
if "$B" --sim default --chain-n 100 2> "$tmp/err"; then exit 1; fi
grep -q "multiples of 512" "$tmp/err"
echo ok
