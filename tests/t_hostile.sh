#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_hostile.sh: issue 15, a hostile tenant against `gpuos serve` on the simulated
# device (real daemon, real processes). Each numbered case is a hole the attack
# campaign found; each must be closed:
#  1. built-in fill past a block / into another vGPU / with a wrapping count;
#  2. the memory share after `vgpu set` shrank it below usage;
#  4. argument errors are errors of the call, the session survives;
#  3. limits: clients per vGPU and per daemon, queued requests, idle connections,
#     a connection flood at the descriptor limit (no spinning accept loop), and
#     gpuos_open's timeout against a daemon that does not accept;
#  5. SIGTERM with a kernel that does not end: exit after the grace period;
#  7. gpuos_admin_list with a NULL output.
set -u
. tests/serve_lib.sh
H="$B/tests/hostile_client"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_daemon "max_clients = 12
max_clients_per_vgpu = 6
max_queued_requests = 32
hello_timeout_ms = 1500
shutdown_grace_ms = 1000
[device 0]
sim = default
policy = credit
[vgpu a]
memory = 128M
[vgpu b]
memory = 128M"

# 1. fill
out=$(timeout 30 "$H" fill a b 2>&1) || fail "1 fill: $out"
kill -0 "$DPID" 2>/dev/null || fail "1 fill: the daemon died"

# 2. memory share after shrinking below usage
mkfifo "$T/hold"
timeout 30 "$H" alloc a 100000000 <"$T/hold" >"$T/alloc.out" 2>&1 &
AP=$!
exec 3>"$T/hold"
i=0; until grep -q allocated "$T/alloc.out" 2>/dev/null; do i=$((i + 1)); [ $i -gt 100 ] && fail "2 alloc did not happen"; sleep 0.1; done
"$G" vgpu set a memory=32M || fail "2 vgpu set memory=32M refused"
out=$(timeout 30 "$H" overquota a 2>&1) || fail "2 quota bypass: $out"
[ "$(vgpu_field a mem_used)" = 100000000 ] || fail "2 usage changed: $(vgpu_field a mem_used)"
exec 3>&-
wait $AP
"$G" vgpu set a memory=128M || fail "2 vgpu set memory=128M refused"

# 4. argument errors
out=$(timeout 30 "$H" args a 2>&1) || fail "4 args: $out"

# 3a. clients per vGPU (6) and per daemon (12): refused with GPUOS_ELIMIT (-12)
#     and the named limit; the clients already there are served
timeout 30 "$H" open a 8 3 >"$T/open_a" 2>&1 &
O1=$!
i=0; until grep -q opened "$T/open_a" 2>/dev/null; do i=$((i + 1)); [ $i -gt 100 ] && fail "3a open a"; sleep 0.1; done
grep -q "opened 6 refused -12 .*max_clients_per_vgpu" "$T/open_a" || fail "3a per-vGPU limit: $(cat "$T/open_a")"
timeout 30 "$H" open b 8 3 >"$T/open_b" 2>&1 &
O2=$!
i=0; until grep -q opened "$T/open_b" 2>/dev/null; do i=$((i + 1)); [ $i -gt 100 ] && fail "3a open b"; sleep 0.1; done
grep -q "opened 6 refused -12 .*max_clients)" "$T/open_b" || fail "3a daemon limit: $(cat "$T/open_b")"
wait $O1 || fail "3a clients of a not served after the refusals: $(cat "$T/open_a")"
wait $O2 || fail "3a clients of b not served after the refusals: $(cat "$T/open_b")"
wait_field a clients 0
wait_field b clients 0

# 3b. queued requests per client
out=$(timeout 30 "$H" queue a 2>&1) || fail "3b queue: $out"
wait_field a clients 0 # released before the flood counts the slots

# 3c. idle connections that never say HELLO are dropped after hello_timeout_ms
timeout 30 "$H" flood 12 4 >"$T/flood" 2>&1 &
F=$!
sleep 0.5
r=$(timeout 10 "$H" open a 1 0 2>&1)
echo "$r" | grep -q "opened 0 refused -12" || fail "3c the flood should hold every slot: $r"
sleep 2.5
r=$(timeout 10 "$H" open a 1 0 2>&1)
echo "$r" | grep -q "opened 1" || fail "3c idle connections not dropped after hello_timeout_ms: $r"
wait $F

# 7. gpuos_admin_list(NULL)
out=$(timeout 10 "$H" list-null 2>&1) || fail "7 admin_list NULL: $out"

# 5. SIGTERM with a kernel of 50 s running: exit 0 within the grace (1 s) + 4 s
timeout 60 "$H" sleep a 50000000000 >"$T/sleep.out" 2>&1 &
S=$!
i=0; until grep -q launching "$T/sleep.out" 2>/dev/null; do i=$((i + 1)); [ $i -gt 100 ] && fail "5 sleep client"; sleep 0.1; done
sleep 0.5
start=$(date +%s)
kill -TERM "$DPID"
i=0
while kill -0 "$DPID" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "5 daemon still running 10 s after SIGTERM with a long kernel"
    sleep 0.1
done
wait "$DPID"; rc=$?
DPID=
el=$(( $(date +%s) - start ))
[ "$rc" -eq 0 ] || fail "5 exit status $rc"
[ "$el" -le 5 ] || fail "5 shutdown took $el s"
grep -q "abandoning" "$T/serve.log" || fail "5 no word of abandoned work"
wait $S && fail "5 the abandoned kernel reported success"

# 3d. at the descriptor limit: no spinning accept loop, the client there is served,
#     newcomers get a clear refusal, not a hang
rm -f "$T/s"
{ echo "socket = $T/s"; echo "max_clients = 1000
hello_timeout_ms = 20000
[device 0]
sim = default
[vgpu a]
[vgpu b]"; } >"$T/conf2"
( ulimit -n 96; exec "$G" serve --config "$T/conf2" --verbose ) 2>>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/s" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "3d daemon did not come up"; sleep 0.1; done
timeout 60 "$H" open a 1 6 >"$T/legit" 2>&1 &
L=$!
sleep 0.5
timeout 30 "$H" flood 300 5 >"$T/flood2" 2>&1 &
F=$!
sleep 1
c0=$(cpu_ticks "$DPID")
sleep 2
c1=$(cpu_ticks "$DPID")
[ $((c1 - c0)) -lt 60 ] || fail "3d daemon used $((c1 - c0)) ticks of CPU in 2 s under the flood (spinning)"
r=$(GPUOS_TIMEOUT_MS=3000 timeout 10 "$H" open b 1 0 2>&1)
echo "$r" | grep -q "refused -12\|refused -11" || fail "3d newcomer during the flood: $r"
grep -q "does not fit the descriptor limit" "$T/serve.log" || fail "3d max_clients not fitted to the descriptor limit"
wait $F
wait $L || fail "3d the client connected before the flood was not served: $(cat "$T/legit")"
sleep 2
r=$(timeout 10 "$H" open b 1 0 2>&1)
echo "$r" | grep -q "opened 1" || fail "3d no client served after the flood: $r"
stop_daemon

# 3e. gpuos_open honours GPUOS_TIMEOUT_MS against a listener that never accepts
$PY -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
print('ready', flush=True)
time.sleep(30)" "$T/stuck" >"$T/stuck.out" 2>&1 &
P=$!
i=0; until grep -q ready "$T/stuck.out" 2>/dev/null; do i=$((i + 1)); [ $i -gt 100 ] && fail "3e listener"; sleep 0.1; done
out=$(timeout 10 "$H" connect-timeout "$T/stuck" 2>&1) || fail "3e $out"
kill $P
echo "t_hostile: ok"
