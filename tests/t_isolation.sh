#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_isolation.sh: issue 9 on the simulated device, with real processes. Each
# client's device work runs in an executor process of its own (isolation =
# process, the default), each with its own simulated address space, so:
#   - a raw kernel (built-in xcopy: no range check, as a tenant's own PTX) of
#     vGPU b reading or writing vGPU a's buffer by address gets its own memory or
#     a fault, never a's data, and a's buffer stays intact;
#   - a faulting kernel (built-in fault) of b returns GPUOS_EDEVICE with the CUDA
#     error name to b only, while a's copies and launches in flight complete
#     byte-exact; b's session refuses further work, a new session works; the
#     fault is counted for b in `gpuos vgpu list`;
#   - kill -9 of b's executor in the middle of b's copies loses nothing of a's;
#   - isolation = mps: b's fault is told to a's session by name (one fate), b
#     alone counts it, a reconnects;
# and, as the known truth that makes these checks able to fail, the same attack
# under isolation = none (one address space) does read and corrupt a's buffer,
# and a fault there reaches every client.
set -u
. tests/serve_lib.sh

CONF="[device 0]
sim = default
policy = band
queue = mrq
ISO
[vgpu a]
compute = 50
copy = 50
memory = 256M
[vgpu b]
compute = 50
copy = 50
memory = 256M"
W=65536

addr_of() { # waits for the owner's address file
    i=0; until [ -s "$1" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "owner did not start"; sleep 0.1; done
    cat "$1"
}

# ---- isolation = process (the default: no isolation line) ----
start_daemon "$(echo "$CONF" | sed 's/^ISO$//')"
[ "$(vgpu_field a isolation)" = process ] || fail "default isolation is not process"
# mapped host memory: the executor maps it at the client's own address
out=$(timeout 20 "$C" hostmap a same 2>&1) || fail "process: mapped host memory at the client's address: $out"
# freed host buffers kept by libgpuos for the next allocation: reused with the
# executor's mapping intact, given back when a client needs its regions; the
# same with none kept (GPUOS_HOST_CACHE=0)
out=$(timeout 60 "$C" hostcache a 2>&1) || fail "process: host buffers kept and reused: $out"
out=$(GPUOS_HOST_CACHE=0 timeout 60 "$C" hostcache a 2>&1) || fail "process: host buffers, none kept: $out"

timeout 60 "$C" owner a $W 4 "$T/addr" >"$T/owner" 2>&1 &
OW=$!
A=$(addr_of "$T/addr")
r=$(timeout 20 "$C" xread b "$A" $W 2>&1) || fail "xread client: $r"
echo "$r" | grep -q "match=0 " || fail "process: b's raw kernel read a's data: $r"
echo "$r" | grep -Eq "rc=0 |CUDA_ERROR_ILLEGAL_ADDRESS" || fail "process: xread neither own memory nor a fault: $r"
r=$(timeout 20 "$C" xwrite b "$A" $W 2>&1) || fail "xwrite client: $r"
r2=$(timeout 20 "$C" fault b 2>&1) || fail "fault client: $r2"
echo "$r2" | grep -q "^fault rc=-7 error=.*CUDA_ERROR_ILLEGAL_ADDRESS" || fail "fault: no GPUOS_EDEVICE with the CUDA error name: $r2"
echo "$r2" | grep -q "^after rc=-7 .*executor is gone.*reconnect" || fail "faulted session still accepted work: $r2"
echo "$r2" | grep -q "reconnected ok" || fail "no new session after the fault: $r2"
wait $OW || fail "process: a's work failed or its buffer was corrupted while b attacked and faulted: $(cat "$T/owner")"
grep -q "corrupted=0" "$T/owner" || fail "owner: $(cat "$T/owner")"
f=$(vgpu_field b faults)
[ "$f" -ge 2 ] || fail "faults of b: $f (xread or xwrite fault + fault kernel expected)"
[ "$(vgpu_field a faults)" = 0 ] || fail "a's faults counted: $(vgpu_field a faults)"
grep -q "vGPU b: .*executor pid .* lost: device fault" "$T/serve.log" || fail "fault not logged"
wait_field b mem_used 0

# kill -9 of b's executor in the middle of b's copies
rm -f "$T/addr"
timeout 60 "$C" owner a $W 4 "$T/addr" >"$T/owner" 2>&1 &
OW=$!
addr_of "$T/addr" >/dev/null
timeout 30 "$C" copyload b 8000000 3 >"$T/cl" 2>&1 &
CL=$!
i=0; until grep -q "of vGPU b: executor pid" "$T/serve.log"; do i=$((i + 1)); [ $i -gt 100 ] && fail "b's executor"; sleep 0.1; done
sleep 0.7
XP=$(grep "of vGPU b: executor pid" "$T/serve.log" | tail -1 | sed 's/.*executor pid //')
kill -0 "$XP" || fail "b's executor $XP not running"
kill -9 "$XP"
wait $CL && fail "b's copies reported success after its executor was killed"
wait $OW || fail "a lost work when b's executor was killed: $(cat "$T/owner")"
grep -q "lost: executor (pid $XP) died" "$T/serve.log" || fail "executor death not logged"
kill -0 "$DPID" || fail "daemon died"
timeout 20 "$C" copy b 100000 >/dev/null || fail "b cannot work again after the kill"
stop_daemon
for xp in $(grep "executor pid" "$T/serve.log" | sed -n 's/.*of vGPU .: executor pid \([0-9]*\)$/\1/p'); do
    i=0 # killed ones may take a moment to go (zombies count as gone)
    while kill -0 "$xp" 2>/dev/null && ! grep -q "^State:.*Z" "/proc/$xp/status" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 50 ] && fail "executor $xp left behind after the daemon stopped"
        sleep 0.1
    done
done

# ---- isolation = mps: isolated address spaces, one fate. On the simulated
# device there is no MPS server; the daemon's side (every client of the GPU told
# which vGPU faulted, never a hang; reconnection works) is the same code ----
rm -f "$T/addr" "$T/s"
start_daemon "$(echo "$CONF" | sed 's/^ISO$/isolation = mps/')"
[ "$(vgpu_field a isolation)" = mps ] || fail "isolation mps not reported"
out=$(timeout 20 "$C" module a 2>&1) || fail "mps: modules, globals and launches in an executor: $out"
out=$(timeout 20 "$C" hostmap a same 2>&1) || fail "mps: mapped host memory at the client's address: $out"
timeout 60 "$C" owner a $W 6 "$T/addr" >"$T/owner" 2>&1 &
OW=$!
A=$(addr_of "$T/addr")
r=$(timeout 20 "$C" xread b "$A" $W 2>&1) || fail "mps xread client: $r"
echo "$r" | grep -q "match=0 " || fail "mps: b's raw kernel read a's data: $r"
wait $OW && fail "mps: a fault of b must reach a's session"
grep -q "vGPU b faulted on this GPU's MPS server" "$T/owner" || fail "mps: a was not told which vGPU faulted: $(cat "$T/owner")"
grep -q "MPS fault of vGPU b: 1 other client(s) told" "$T/serve.log" || fail "mps: fault fan-out not logged"
[ "$(vgpu_field b faults)" = 1 ] || fail "mps: faults of b: $(vgpu_field b faults)"
[ "$(vgpu_field a faults)" = 0 ] || fail "mps: a counted as faulting: $(vgpu_field a faults)"
timeout 20 "$C" copy a 100000 >/dev/null || fail "mps: a cannot reconnect after the fault"
stop_daemon

# ---- isolation = none: the same attack succeeds, a fault reaches everyone ----
rm -f "$T/addr" "$T/s"
start_daemon "$(echo "$CONF" | sed 's/^ISO$/isolation = none/')"
[ "$(vgpu_field a isolation)" = none ] || fail "isolation none not reported"
out=$(timeout 20 "$C" module a 2>&1) || fail "none: modules, globals and launches in the daemon's context: $out"
out=$(timeout 20 "$C" hostmap a none 2>&1) || fail "none: mapped host memory has no device address there: $out"
timeout 60 "$C" owner a $W 3 "$T/addr" >"$T/owner" 2>&1 &
OW=$!
A=$(addr_of "$T/addr")
r=$(timeout 20 "$C" xread b "$A" $W 2>&1) || fail "xread client: $r"
echo "$r" | grep -q "rc=0 match=$W " || fail "none: the raw read should see a's data (one address space): $r"
r=$(timeout 20 "$C" xwrite b "$A" $W 2>&1) || fail "xwrite client: $r"
wait $OW && fail "none: a's buffer should be corrupted by b's raw write"
grep -q "corrupted=$W" "$T/owner" || fail "none: owner: $(cat "$T/owner")"
timeout 20 "$C" fault b >/dev/null 2>&1
out=$(timeout 20 "$C" copy a 100000 2>&1) && fail "none: a fault should reach every client (sticky context)"
echo "ok"
