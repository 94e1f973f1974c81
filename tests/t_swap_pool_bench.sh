#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_swap_pool_bench.sh: bench/swap_pool.sh (the GPU benchmark of the swap pool)
# on the simulated device at small sizes, so its plumbing is checked in CI: the
# turns ran byte-exact with every turn evicting the other vGPU (the daemon's
# per-swap log lines parsed: evictions and restores of the turns' bytes), the
# swapcost rows of both passes are byte-exact, and its JSON validates against
# schemas/shm-swappool.schema.json. Timings on the simulated device mean nothing
# and are not checked.
set -u
B=${BUILD:-build}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
SIM=default RES="$T/r" GPUOS=${GPUOS:-$B/gpuos} SHM_CLIENT=$B/tests/shm_client SHM_BENCH=$B/bench/shm_bench \
    TURN_N=3 TURN_MB=16 SWAP=64M SWAP_POOL=64M COST_POOL_MB=32 SWAPCOST_MB="8 4" RATE_MB=2,8 \
    sh bench/swap_pool.sh > "$T/log" 2>&1 || fail "swap_pool.sh: $(tail -20 "$T/log")"
$PY tests/schema_check.py --known-only "$T/r/shm-swappool.json" > "$T/v" 2>&1 || fail "schema: $(cat "$T/v")"
$PY - "$T/r/shm-swappool.json" <<'PY' || fail "shm-swappool.json: $(head -c 3000 "$T/r/shm-swappool.json")"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["turns"]
MB = 1 << 20
assert t["byte_exact"] and t["vgpu_bytes"] == 48 * MB
turns = [x for x in t["turns"] if x["round"] > 0]
assert len(turns) == 6 and all(x["mismatches"] == 0 and x["swapped_before"] == 48 * MB and x["other_evictions"] == 3 for x in turns), turns
ev = t["evict_cold"]["bytes"] + t["evict_warm"]["bytes"]
rs = t["restore_cold"]["bytes"] + t["restore_warm"]["bytes"]
assert ev >= 6 * 48 * MB and rs >= 6 * 48 * MB, (ev, rs)
rows = r["swapcost"]["rows"]
assert [x["pass"] for x in rows] == ["cold", "cold", "warm", "warm"] and all(x["byte_exact"] == 1 for x in rows), rows
assert r["ceiling"] and all(c["d2h_pinned_gbps"] > 0 for c in r["ceiling"])
PY
echo ok
