#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_pmem_client.sh: partition-local memory for vGPU clients through `gpuos serve`
# (issue 12) on the simulated H200 with real processes, the device charted by
# `gpuos probe numa` first as on a GPU (chip = FILE):
#   - isolation = process and none: a client gets two views; every logical unit
#     of view P is in partition P by the simulated chip's truth (>= 99.7 %, the
#     parity probes decide) and the latency check agrees within 0.2 %; host
#     writes/reads through the views are byte-exact (odd offsets, the zero-copy
#     path; view 1 written after view 0 leaves it intact);
#     the runtime table splits tasks by SM count;
#   - the charge (both views + the parity page) is the vGPU's mem_used, returned
#     by gpuos_pmem_free, after kill -9 of the client and of its executor;
#   - two clients allocate, copy and check at once, each byte-exact and placed;
#   - malformed requests are refused with GPUOS_EINVAL / EBUSY, the handle goes
#     on; a device without a chart, or with swap, refuses with GPUOS_EUNSUPPORTED.
set -u
. tests/serve_lib.sh
P="$B/tests/pmem_client"
MB=1048576
"$G" probe numa --sim default --json "$T/chart.json" > /dev/null 2>&1 || fail "probe numa"

check_views() { # LOG LABEL
    $PY - "$1" "$2" <<'PY' || fail "$2: $(cat "$1")"
import re, sys
t = open(sys.argv[1]).read()
kv = lambda line: dict(x.split("=", 1) for x in line.split()[1:])
a = kv(re.search(r"^alloc .*$", t, re.M).group(0))
assert int(a["used_delta"]) == int(a["charged"]) == int(a["bytes"]) + (2 << 20), a
for line in re.findall(r"^check .*$", t, re.M):
    c = kv(line)
    u = int(c["units"])
    assert c["truth"] == "1" and int(c["unit"]) == 4096, c
    assert int(c["truth_local"]) >= 0.997 * u, c
    assert abs(int(c["local"]) - int(c["truth_local"])) <= 0.002 * u, c
d = kv(re.search(r"^data .*$", t, re.M).group(0))
assert all(d[k] == "1" for k in ("exact0", "exact1", "exact_odd", "untouched1", "exact_shared")), d
# the simulated device's plain copies do not reach placement memory (raw_rc -1);
# where they do (a GPU), every unit pair must hold one unit of each view
assert d["raw_rc"] == "-1" or (int(d["pairs"]) > 0 and d["pairs"] == d["pairs_ok"]), d
r = kv(re.search(r"^runtime .*$", t, re.M).group(0))
s0, s1, t0, t1 = (int(r[k]) for k in ("sms0", "sms1", "tasks0", "tasks1"))
assert s0 > 0 and s1 > 0 and t0 + t1 == 1000 and abs(t0 - 1000 * s0 / (s0 + s1)) <= 0.5, r
f = kv(re.search(r"^free .*$", t, re.M).group(0))
assert f["mem_free_rc"] == "-1" and f["used_after"] == f["used_before"], f
print(sys.argv[2], "ok")
PY
}

for iso in process none; do
    start_daemon "[device 0]
sim = default
isolation = $iso
chip = $T/chart.json
$(vgpus_ab 64M)"
    timeout 60 "$P" a views $((12 * MB + 12345)) > "$T/views.$iso" 2>&1 || fail "views ($iso): $(cat "$T/views.$iso")"
    check_views "$T/views.$iso" "views ($iso)"
    [ "$(vgpu_field a mem_used)" = 0 ] || fail "$iso: a's share after the client: $(vgpu_field a mem_used)"

    # the charge, returned after kill -9 of the client
    "$P" b hold $((8 * MB)) > "$T/hold" 2>&1 &
    H=$!
    i=0; while ! grep -q held "$T/hold"; do i=$((i + 1)); [ $i -gt 300 ] && fail "hold: $(cat "$T/hold")"; sleep 0.1; done
    ch=$(sed -n 's/^held charged=//p' "$T/hold")
    [ "$ch" = $((18 * MB)) ] || fail "$iso: 8M per view charged $ch, expected 18M"
    [ "$(vgpu_field b mem_used)" = "$ch" ] || fail "$iso: b's mem_used $(vgpu_field b mem_used), charged $ch"
    kill -9 $H; wait $H 2>/dev/null
    wait_field b mem_used 0
    if [ $iso = process ]; then # kill -9 of the executor: the charge back while the client
        # lives, once its next request notices (issue 9), which fails with GPUOS_EDEVICE
        "$P" b hold $((8 * MB)) "$T/go" > "$T/hold2" 2>&1 &
        H=$!
        i=0; while ! grep -q held "$T/hold2"; do i=$((i + 1)); [ $i -gt 300 ] && fail "hold2: $(cat "$T/hold2")"; sleep 0.1; done
        [ "$(vgpu_field b mem_used)" = $((18 * MB)) ] || fail "b's mem_used $(vgpu_field b mem_used)"
        XP=$(grep "of vGPU b: executor pid" "$T/serve.log" | tail -1 | sed 's/.*executor pid //')
        kill -9 "$XP"
        touch "$T/go"
        i=0; while ! grep -q after "$T/hold2"; do i=$((i + 1)); [ $i -gt 300 ] && fail "hold2: $(cat "$T/hold2")"; sleep 0.1; done
        grep -q "after rc=-7" "$T/hold2" || fail "request after the executor's death: $(cat "$T/hold2")"
        kill -0 $H || fail "the client did not live on"
        wait_field b mem_used 0
        kill -9 $H; wait $H 2>/dev/null
    fi

    # two clients allocating, copying and checking at once
    timeout 60 "$P" a views $((6 * MB)) > "$T/c1" 2>&1 &
    C1=$!
    timeout 60 "$P" b views $((5 * MB + 99)) > "$T/c2" 2>&1 || fail "$iso: concurrent b: $(cat "$T/c2")"
    wait $C1 || fail "$iso: concurrent a: $(cat "$T/c1")"
    check_views "$T/c1" "concurrent a ($iso)"
    check_views "$T/c2" "concurrent b ($iso)"

    # malformed requests
    timeout 60 "$P" a bad > "$T/bad.$iso" 2>&1 || fail "bad ($iso): $(cat "$T/bad.$iso")"
    for e in "zero rc=-1" "huge rc=-10" "over rc=-10" "view2 rc=-1" "past rc=-1" "part rc=-1" "samples rc=-1" \
             "rawfree rc=-1" "rawdir rc=-1" "rawregion rc=-1" "rawbase rc=-1" "rawpast rc=-1" "memfree rc=-1" \
             "after rc=0,0 back=1" "free rc=0"; do
        grep -qx "$e" "$T/bad.$iso" || fail "$iso: expected \"$e\": $(cat "$T/bad.$iso")"
    done
    [ "$(vgpu_field a mem_used)" = 0 ] || fail "$iso: a's share after bad: $(vgpu_field a mem_used)"
    kill -0 "$DPID" || fail "daemon died"
    stop_daemon
done

# no chart, or a swapping device: a clear refusal
start_daemon "[device 0]
sim = default
[vgpu a]
compute = 50
copy = 50
memory = 64M"
r=$(timeout 30 "$P" a nochart 2>&1) || fail "nochart: $r"
echo "$r" | grep -q "nochart rc=-3 msg=.*no chart.*chip = FILE" || fail "no chart: $r"
stop_daemon
start_daemon "[device 0]
sim = default
chip = $T/chart.json
swap = 64M
[vgpu a]
compute = 50
copy = 50
memory = 64M"
r=$(timeout 30 "$P" a nochart 2>&1) || fail "swap: $r"
echo "$r" | grep -q "nochart rc=-3 msg=.*swaps.*not swappable" || fail "swap device: $r"
stop_daemon
echo "t_pmem_client: ok"
