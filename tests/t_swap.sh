#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_swap.sh: swapping inside `gpuos serve` (issue 10.2) on the simulated device with
# real processes (one executor per client): two vGPUs whose working sets (48 MB
# each, 2 MB-rounded VMM allocations) do not fit the 64 MB pool together run
# copies and launches at the same time; every allocation a copy needs, and all of
# a launching client's, is made resident first, evicting the other vGPU's idle
# allocations into bounded host swap space. Both clients read back every buffer
# at the end: byte-exact. `gpuos vgpu list` shows resident + swapped = the
# working set, evictions and restores on both; after kill -9 of a client mid-run
# the other still ends byte-exact and every byte is accounted back (0 resident,
# 0 swapped, 0 used); a working set larger than pool + swap is refused with a
# clear error, never a silent loss. With the pre-pinned host swap pool (one
# memfd per device, ranges of it per swapped allocation): two vGPUs in turns
# (shm_client turns) byte-exact, every word checked on the device by the pattern
# kernel (itself checked to find corruption), a kill -9 in the middle of the
# turns leaks no range of a pool sized exactly to the peak, and a pool too small
# for the turns is a clear error.
set -u
. tests/serve_lib.sh
S="$B/tests/shm_client"
MB=1048576
# start_swap SWAP POOL MEMORY: the daemon with swapping on the simulated device
# and two vGPUs a and b of MEMORY each (equal shares), memory oversubscribed
start_swap() {
    start_daemon "memory_oversubscribe = 1
[device 0]
sim = default
swap = $1
swap_pool = $2
$(vgpus_ab "$3")"
}
start_swap 64M 64M 48M
timeout 120 "$S" a work 11 3 16 24 > "$T/wa" 2>&1 &
WA=$!
r=$(timeout 120 "$S" b work 22 3 16 24 2>&1) || fail "b: $r"
wait $WA || fail "a: $(cat "$T/wa")"
echo "$r" | grep -q "work rc=0 mismatches=0" || fail "b not byte-exact: $r"
grep -q "work rc=0 mismatches=0" "$T/wa" || fail "a not byte-exact: $(cat "$T/wa")"
"$G" vgpu list --json - > "$T/v.json"
$PY - "$T/v.json" <<'PY' || fail "vgpu list: $(cat "$T/v.json")"
import json, sys
v = {x["name"]: x for x in json.load(open(sys.argv[1]))["vgpus"]}
# the clients are gone: nothing resident or swapped, no charge
for n in "ab":
    assert v[n]["mem_resident"] == 0 and v[n]["mem_swapped"] == 0 and v[n]["mem_used"] == 0, v[n]
assert v["a"]["evictions"] + v["b"]["evictions"] > 0, "nothing was ever evicted: the test proves nothing"
assert v["a"]["restores"] + v["b"]["restores"] > 0
PY
# while running: resident + swapped is the working set, the pool never exceeded
timeout 120 "$S" a work 33 3 16 80 > "$T/wa2" 2>&1 &
WA=$!
timeout 120 "$S" b work 44 3 16 80 > "$T/wb2" 2>&1 &
WB=$!
sleep 1
"$G" vgpu list --json - > "$T/v2.json"
$PY - "$T/v2.json" <<'PY' || fail "vgpu list while running: $(cat "$T/v2.json")"
import json, sys
v = {x["name"]: x for x in json.load(open(sys.argv[1]))["vgpus"]}
MB = 1 << 20
for n in "ab":
    assert v[n]["mem_resident"] + v[n]["mem_swapped"] in (0, 16 * MB, 32 * MB, 48 * MB), v[n]
assert v["a"]["mem_resident"] + v["b"]["mem_resident"] <= 64 * MB
PY
"$G" vgpu list | grep -q "RESIDENT" || fail "vgpu list has no RESIDENT column"
kill -9 $WB
wait $WB 2>/dev/null
wait $WA || fail "a after b was killed: $(cat "$T/wa2")"
grep -q "work rc=0 mismatches=0" "$T/wa2" || fail "a not byte-exact after b's kill -9: $(cat "$T/wa2")"
wait_field b mem_used 0
wait_field b mem_swapped 0
wait_field b mem_resident 0
wait_field a mem_resident 0
# more than pool + swap: refused, clearly
r=$(timeout 60 "$S" a work 55 3 16 2 2>&1)
echo "$r" | grep -q "work rc=0 mismatches=0" || fail "a alone: $r"
stop_daemon
start_swap 16M 32M 48M
# what one swap costs a tenant (bench/shm.sh measures it on the GPU under BAND);
# here its mechanics: a's buffer really was swapped out by b's allocation and
# came back byte-exact for a's launch
r=$(timeout 60 "$S" a swapcost b 32 8 4 2>&1)
[ "$(echo "$r" | grep -c "a_swapped_before=[1-9].* byte_exact=1")" = 2 ] || fail "swapcost: $r"
timeout 60 "$S" a work 66 2 16 2 > "$T/wa3" 2>&1 || fail "a: $(cat "$T/wa3")"
r=$(timeout 60 "$S" b work 77 3 16 2 2>&1)
echo "$r" | grep -q "work alloc rc=-4 error=.*swap space exhausted\|work alloc rc=-4 error=.*device memory" || fail "over pool + swap not refused clearly: $r"
stop_daemon
# the pre-pinned swap pool: two vGPUs of 3 x 16 MB (+ a 2 MB counter) on a 64 MB
# pool take turns; every word written and checked by the pattern kernel, the
# other vGPU evicted into the pool at every turn. The swap pool is exactly what
# the turns need at the peak (48 MB swapped + 16 MB evicted before the first
# restore gives its range back): a range leaked by the kill -9 below would make
# the second run fail ("swap space exhausted"), not pass.
start_swap 64M 64M 50M
# the check the turns rely on finds corruption: 3 overwritten words, every word
# against another seed; its counter outside the client's memory is refused
r=$(timeout 60 "$S" a patcheck 0 2>&1)
echo "$r" | grep -q "^patcheck rc=0 clean=0 corrupted=3 other_seed=1048576 words=1048576 outside_rc=-" ||
    fail "pattern kernel check: $r"
r=$(timeout 120 "$S" a turns b 3 16 3 2>&1) || fail "turns: $r"
echo "$r" | grep -q "^turns rc=0 rounds=3 mismatches=0 final_mismatches=0" || fail "turns not byte-exact: $r"
[ "$(echo "$r" | grep -c "^turn round=[1-9].* mismatches=0 swapped_before=50331648 swapped_after=0 restores=3 other_evictions=3")" = 6 ] ||
    fail "turns did not swap 48 MB each way at every turn: $r"
grep -q "swap: evicted vGPU a: 16 MB" "$T/serve.log" && grep -q "swap: restored vGPU b: 16 MB" "$T/serve.log" ||
    fail "no per-swap log lines"
# kill -9 of a client in the middle of its turns (evictions and restores run
# most of the time): nothing of the pool or the device is lost
"$S" a turns b 3 16 200 > "$T/tk" 2>&1 &
TK=$!
i=0
while [ "$(grep -c "^turn round=[1-9]" "$T/tk")" -lt 2 ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "turns before the kill: $(cat "$T/tk")"
    sleep 0.05
done
kill -9 $TK
wait $TK 2>/dev/null
for v in a b; do
    wait_field $v mem_used 0
    wait_field $v mem_swapped 0
    wait_field $v mem_resident 0
done
r=$(timeout 120 "$S" a turns b 3 16 2 2>&1) || fail "turns after kill -9: $r"
echo "$r" | grep -q "^turns rc=0 rounds=2 mismatches=0 final_mismatches=0" || fail "turns after kill -9: $r"
stop_daemon
# more than the pool holds: a clear error, never a silent loss
start_swap 32M 64M 50M
r=$(timeout 60 "$S" a turns b 3 16 1 2>&1)
echo "$r" | grep -q "swap space exhausted" || fail "pool exhaustion not refused clearly: $r"
stop_daemon
echo ok
