#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/swap_pool.sh: swapping through the daemon with the pre-pinned host swap
# pool (issue 10.2, docs/readme-shm.md), on the real GPU:
#   ceiling  pinned DtoH / HtoD and device-level evict / restore of the same
#            sizes (shm_bench --only rate), the ceiling of this run;
#   turns    two vGPUs of TURN_N x TURN_MB (default 24 x 4 GiB = 103 GB) each, on
#            a device pool of SWAP_POOL (132G), host swap SWAP (72G: 60 GiB + one 4 GiB buffer swapped, + one more at the peak): real client
#            processes' handles (tests/shm_client turns), every word of every
#            buffer written and checked by the pattern kernel at every turn;
#            per-swap evict / restore time and GB/s from the daemon's log;
#   swapcost what one swap costs a BAND tenant (shm_client swapcost), sizes
#            SWAPCOST_MB (256 .. 16384), run twice: cold (pool chunks page-locked
#            during the swap) and warm (already page-locked).
# Writes $RES/shm-swappool.json (schemas/shm-swappool.schema.json) and the
# logs; RES defaults to results/<gpu-uuid>/swap-pool. SIM=CHIP runs it all on
# the simulated device instead (small sizes: tests/t_swap_pool_bench.sh).
set -u
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
C=${SHM_CLIENT:-$BUILD/tests/shm_client}
B=${SHM_BENCH:-$BUILD/bench/shm_bench}
SIM=${SIM:-}
if [ -n "$SIM" ]; then
    uuid=sim-$SIM SIMARG="--sim $SIM" DEVLINE="sim = $SIM"
else
    uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1) SIMARG= DEVLINE=
fi
[ -n "$uuid" ] || { echo "swap_pool.sh: no GPU (nvidia-smi gave no UUID)"; exit 1; }
RES=${RES:-results/$uuid/swap-pool}
mkdir -p "$RES"
TURN_N=${TURN_N:-24} TURN_MB=${TURN_MB:-4096} ROUNDS=${ROUNDS:-3}
SWAP=${SWAP:-72G} SWAP_POOL=${SWAP_POOL:-132G}
SWAPCOST_MB=${SWAPCOST_MB:-256 1024 4096 16384}
t0=$(date +%s)
rc=0
echo "== ceiling: shm_bench --only rate"
# shellcheck disable=SC2086
"$B" $SIMARG --only rate --rate-mb ${RATE_MB:-256,1024,4096} --out "$RES/shm-rate.json" > "$RES/shm-rate.log" 2>&1 || rc=1
tail -6 "$RES/shm-rate.log"
daemon() { # daemon CONF LOG: starts it, DP its pid
    "$G" serve --config "$1" --verbose 2> "$2" &
    DP=$!
    i=0; while [ ! -S "$D/s" ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.1; done
}
D=$(mktemp -d)
export GPUOS_SOCKET="$D/s"
printf 'socket = %s\nmemory_oversubscribe = 1\n[device 0]\n%s\npolicy = band\nswap = %s\nswap_pool = %s\n[vgpu a]\ncompute = 50\ncopy = 50\nmemory = 100G\n[vgpu b]\ncompute = 50\ncopy = 50\nmemory = 100G\n' \
    "$D/s" "$DEVLINE" "$SWAP" "$SWAP_POOL" > "$D/conf"
echo "== turns: 2 x $TURN_N x $TURN_MB MB, $ROUNDS rounds"
daemon "$D/conf" "$RES/turns-serve.log"
timeout ${TURNS_TIMEOUT:-400} "$C" a turns b "$TURN_N" "$TURN_MB" "$ROUNDS" 2>&1 | tee "$RES/turns.log"
"$G" vgpu list >> "$RES/turns.log"
kill $DP; wait $DP
grep -q "^turns rc=0 rounds=$ROUNDS mismatches=0 final_mismatches=0" "$RES/turns.log" || rc=1
rm -f "$D/s"
COST_POOL_MB=${COST_POOL_MB:-32768}
printf 'socket = %s\nmemory_oversubscribe = 1\n[device 0]\n%s\npolicy = band\nswap = %sM\nswap_pool = %sM\n[vgpu a]\ncompute = 50\ncopy = 50\nmemory = %sM\n[vgpu b]\ncompute = 50\ncopy = 50\nmemory = %sM\n' \
    "$D/s" "$DEVLINE" $((COST_POOL_MB * 5 / 4)) "$COST_POOL_MB" $((COST_POOL_MB * 5 / 4)) $((COST_POOL_MB * 5 / 4)) > "$D/conf2"
echo "== swapcost (BAND), cold then warm: $SWAPCOST_MB"
daemon "$D/conf2" "$RES/swapcost-serve.log"
# shellcheck disable=SC2086
timeout ${SWAPCOST_TIMEOUT:-300} "$C" a swapcost b "$COST_POOL_MB" $SWAPCOST_MB $SWAPCOST_MB 2>&1 | tee "$RES/swapcost.log"
kill $DP; wait $DP
rm -rf "$D"
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$drv" ] || drv=none
/usr/bin/python3 - "$RES" "$uuid" "$drv" "${GOS_COMMIT:-unknown}" "$(hostname)" "$TURN_N" "$TURN_MB" "$ROUNDS" \
    "$SWAP" "$SWAP_POOL" "$(echo $SWAPCOST_MB | wc -w)" "$COST_POOL_MB" <<'PY' || rc=1
import json, re, sys, time
res, uuid, drv, commit, host, tn, tmb, rounds, swap, pool, ncost, cost_pool = sys.argv[1:]
def kv(line):
    return {k: (float(v) if "." in v else int(v)) for k, v in (x.split("=", 1) for x in line.split()[1:] if "=" in x and not x.startswith("error"))}
def size(s):
    return int(float(s[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]]) if s[-1] in "KMG" else int(s)
rate = json.load(open(res + "/shm-rate.json"))
ceil = [{k: r[k] for k in ("bytes", "evict_gbps", "restore_gbps", "d2h_pinned_gbps", "h2d_pinned_gbps")} for r in rate["rate"]]
turns = [kv(l) for l in open(res + "/turns.log") if l.startswith("turn round=") and " ms=" in l]
summary = [kv(l) for l in open(res + "/turns.log") if l.startswith("turns rc=")]
pat = re.compile(r"swap: (evicted|restored) vGPU (\w+): (\d+) MB in ([\d.]+) ms \(copy ([\d.]+) ms, [\d.]+ GB/s; page-locking ([\d.]+) ms")
def steps(path):
    out = []
    for l in open(path):
        m = pat.search(l)
        if m:
            out.append({"dir": m.group(1), "vgpu": m.group(2), "bytes": int(m.group(3)) << 20, "ms": float(m.group(4)),
                        "copy_ms": float(m.group(5)), "lock_ms": float(m.group(6))})
    return out
def agg(st, d, locked):
    s = [x for x in st if x["dir"] == d and ((x["lock_ms"] > 0) == locked)]
    b = sum(x["bytes"] for x in s)
    return {"steps": len(s), "bytes": b, "copy_s": sum(x["copy_ms"] for x in s) / 1e3,
            "lock_s": sum(x["lock_ms"] for x in s) / 1e3, "wall_s": sum(x["ms"] for x in s) / 1e3,
            "copy_gbps": b / (sum(x["copy_ms"] for x in s) / 1e3) / 1e9 if s else 0.0,
            "wall_gbps": b / (sum(x["ms"] for x in s) / 1e3) / 1e9 if s else 0.0}
ts = steps(res + "/turns-serve.log")
cost = [kv(l) for l in open(res + "/swapcost.log") if l.startswith("swapcost bytes=")]
n = int(ncost)
for i, c in enumerate(cost):
    c["pass"] = "cold" if i < n else "warm"
out = {"schema": "gpuos.shm-swappool/1",
       "provenance": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
                      "command": "sh bench/swap_pool.sh", "driver": drv, "host": host, "gpu_uuid": uuid},
       "ceiling": ceil,
       "turns": {"vgpu_bytes": int(tn) * (int(tmb) << 20), "buffers": int(tn), "rounds": int(rounds),
                 "swap_bytes": size(swap), "device_pool_bytes": size(pool), "turns": turns,
                 "byte_exact": bool(summary) and summary[0].get("rc") == 0 and summary[0].get("mismatches") == 0
                               and summary[0].get("final_mismatches") == 0,
                 "evict_cold": agg(ts, "evicted", True), "evict_warm": agg(ts, "evicted", False),
                 "restore_cold": agg(ts, "restored", True), "restore_warm": agg(ts, "restored", False)},
       "swapcost": {"policy": "band", "pool_bytes": int(cost_pool) << 20, "rows": cost}}
json.dump(out, open(res + "/shm-swappool.json", "w"), indent=2)
t = out["turns"]
print("ceiling (pinned, device level):", ", ".join("%d MB d2h %.1f h2d %.1f GB/s" % (c["bytes"] >> 20, c["d2h_pinned_gbps"], c["h2d_pinned_gbps"]) for c in ceil))
for k in ("evict_cold", "evict_warm", "restore_cold", "restore_warm"):
    a = t[k]
    print("%-13s %3d steps %7.1f GB  copy %6.2f GB/s  wall %6.2f GB/s  page-locking %.1f s" % (k, a["steps"], a["bytes"] / 1e9, a["copy_gbps"], a["wall_gbps"], a["lock_s"]))
for x in turns:
    print("turn round=%d vgpu=%d %.0f ms mismatches=%d swapped_before=%.1f GB rc=%d" % (x["round"], x["vgpu"], x.get("ms", -1), x.get("mismatches", -1), x.get("swapped_before", 0) / 1e9, x.get("rc", 0)))
for c in cost:
    print("swapcost %-4s %6d MB resident %.0f us after swap %.1f ms byte_exact=%d" % (c["pass"], c["bytes"] >> 20, c["resident_us"], c["after_swap_us"] / 1e3, c["byte_exact"]))
assert t["byte_exact"], "turns not byte-exact"
assert cost and all(c["byte_exact"] == 1 for c in cost), "swapcost not byte-exact"
PY
echo "swap_pool.sh: $([ $rc -eq 0 ] && echo done || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $rc
