#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_xshare.sh: executor = per-vgpu (issue 9) on the simulated device, with real
# processes. The clients of one vGPU share one executor (one process, one
# context: no switch between them), each with a channel and a ring of its own:
#   - two clients of vGPU a run byte-exact passes at the same time through the
#     same executor pid; vGPU b's client has another;
#   - a client that leaves (kill -9) while another client of a keeps the
#     executor alive has its device memory released there: a second allocation
#     of 60 % of the device in the same executor succeeds (it fails if the first
#     one leaked: both do not fit);
#   - a fault of one client of a ends the shared executor: the other client of a
#     is told why by name, vGPU b carries on, the next client of a gets a new
#     executor and works;
#   - per-client (the default) gives every client its own executor;
#   - executor = per-vgpu under isolation = none is refused with one line.
# XSHARE_SIM=none runs the same on GPU 0 (tools/gpu_final.sh).
set -u
. tests/serve_lib.sh
R="$B/tests/ring_client"
SIM=${XSHARE_SIM:-default}
if [ "$SIM" = none ]; then SIMLINE=""; INFO="--device 0"; else SIMLINE="sim = $SIM"; INFO="--sim $SIM"; fi

CONF="[device 0]
$SIMLINE
policy = band
queue = mrq
isolation = process
executor = per-vgpu
[vgpu a]
compute = 50
copy = 50
memory = 85%
[vgpu b]
compute = 50
copy = 50
memory = 10%"
start_daemon "$CONF"
total=$("$G" info $INFO --json - 2>/dev/null | $PY -c "import json,sys; print(json.load(sys.stdin)['devices'][0]['mem_bytes'])")
[ -n "$total" ] || fail "device memory unknown"
BIG=$(( total * 6 / 10 ))

pid_of() { sed -n 's/^executor \([0-9]*\)$/\1/p' "$1" | head -1; }
wait_line() { # file pattern
    i=0; until grep -q "$2" "$1" 2>/dev/null; do i=$((i + 1)); [ $i -gt 200 ] && fail "no '$2' in $1: $(cat "$1")"; sleep 0.05; done
}

# 1. two clients of a at once: one executor; b's client another
timeout 60 "$R" share a 2 0 > "$T/a1" 2>&1 & A1=$!
timeout 60 "$R" share a 2 0 > "$T/a2" 2>&1 & A2=$!
timeout 60 "$R" share b 1 0 > "$T/b1" 2>&1 & B1=$!
wait $A1 || fail "client 1 of a: $(cat "$T/a1")"
wait $A2 || fail "client 2 of a: $(cat "$T/a2")"
wait $B1 || fail "client of b: $(cat "$T/b1")"
p1=$(pid_of "$T/a1"); p2=$(pid_of "$T/a2"); pb=$(pid_of "$T/b1")
[ -n "$p1" ] && [ "$p1" = "$p2" ] || fail "the clients of a have executors $p1 and $p2, not one"
[ "$pb" != "$p1" ] || fail "vGPU b's client shares a's executor $p1"
grep -q "share ok passes" "$T/a1" && grep -q "share ok passes" "$T/a2" || fail "byte-exact passes of a"
echo "ok   two clients of a, one executor ($p1), b's own ($pb); byte-exact at once"

# 2. memory of a client that leaves is released in the shared executor
timeout 60 "$R" share a 8 0 > "$T/keep" 2>&1 & K=$!
wait_line "$T/keep" "^executor "
pk=$(pid_of "$T/keep")
"$R" share a 30 $BIG > "$T/big1" 2>&1 & X=$! # no timeout wrapper: kill -9 must reach the client itself
wait_line "$T/big1" "^allocated"
[ "$(pid_of "$T/big1")" = "$pk" ] || fail "the big client is not in the kept executor $pk"
kill -9 $X; wait $X 2>/dev/null
wait_field a clients 1
out=$(timeout 60 "$R" share a 0 $BIG 2>&1) || fail "60 % of the device again after the first holder was killed: $out"
[ "$(echo "$out" | sed -n 's/^executor \([0-9]*\)$/\1/p')" = "$pk" ] || fail "not the same executor: $out"
wait $K || fail "the client that kept the executor: $(cat "$T/keep")"
echo "ok   a killed client's $BIG bytes released in the shared executor $pk"

# 3. a fault in the shared executor: its clients told, b unharmed, a new one for a
timeout 60 "$R" share a 6 0 > "$T/sib" 2>&1 & S=$!
wait_line "$T/sib" "^executor "
timeout 60 "$R" share b 4 0 > "$T/b2" 2>&1 & B2=$!
out=$(timeout 30 "$C" fault a 2>&1) || fail "fault client: $out"
echo "$out" | grep -q "^fault rc=-7 error=.*CUDA_ERROR_ILLEGAL_ADDRESS" || fail "no GPUOS_EDEVICE with the CUDA error name: $out"
echo "$out" | grep -q "reconnected ok" || fail "the faulting client could not reconnect: $out"
wait $S && fail "the other client of a went on after its shared executor died: $(cat "$T/sib")"
echo "  the other client of a: $(tail -1 "$T/sib")"
grep -q "the executor its clients share (executor = per-vgpu) was lost" "$T/sib" ||
    fail "the other client of a was not told why: $(cat "$T/sib")"
wait $B2 || fail "vGPU b's client after a's fault: $(cat "$T/b2")"
out=$(timeout 60 "$R" share a 0 0 2>&1) || fail "a new client of a after the fault: $out"
pn=$(echo "$out" | sed -n 's/^executor \([0-9]*\)$/\1/p')
[ -n "$pn" ] && [ "$pn" != "$pk" ] || fail "the new client of a got executor $pn (the dead one was $pk)"
f=$(vgpu_field a faults); [ "$f" -ge 1 ] || fail "the fault was not counted for a: $f"
echo "ok   a fault ends a's shared executor: its other client told, b carries on, a new executor ($pn)"
stop_daemon

# 4. per-client (the default): one executor each
start_daemon "$(echo "$CONF" | sed 's/^executor = per-vgpu$//')"
timeout 60 "$R" share a 1 0 > "$T/c1" 2>&1 & C1=$!
timeout 60 "$R" share a 1 0 > "$T/c2" 2>&1 & C2=$!
wait $C1 && wait $C2 || fail "per-client: $(cat "$T/c1" "$T/c2")"
[ "$(pid_of "$T/c1")" != "$(pid_of "$T/c2")" ] || fail "per-client clients share executor $(pid_of "$T/c1")"
echo "ok   per-client: executors $(pid_of "$T/c1") and $(pid_of "$T/c2")"
stop_daemon

# 5. per-vgpu without executors is refused
{ echo "socket = $T/s2"; echo "$CONF" | sed 's/^isolation = process$/isolation = none/'; } > "$T/bad.conf"
out=$(timeout 20 "$G" serve --config "$T/bad.conf" 2>&1) && fail "per-vgpu under isolation = none was accepted"
[ "$(echo "$out" | wc -l)" -le 2 ] && echo "$out" | grep -q "per-vgpu needs isolation = process or mps" ||
    fail "no clear refusal: $out"
echo "ok   per-vgpu under isolation = none refused: $out"
echo "t_xshare: ok"
