#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/hostile_cases.sh: runs each case of issue 15 against a build and prints
# "CASE name: held" or "CASE name: HOLE (...)", to compare a build before the
# fixes with one after (tests/t_hostile*.sh are the pass/fail tests):
#   BUILD=DIR GPUOS=DIR/gpuos sh tools/hostile_cases.sh
# DIR/tests/hostile_client must exist (tests/hostile_client.c builds against the
# public header of any version). The limits' keys are given when the daemon knows
# them; a daemon that refuses them runs without (it has no limits then).
set -u
. tests/serve_lib.sh
H="$B/tests/hostile_client"
res() { echo "CASE $1: $2"; }
PLAIN="[device 0]
sim = default
policy = credit
[vgpu a]
memory = 128M
[vgpu b]
memory = 128M"
LIMITS="max_clients_per_vgpu = 6
max_queued_requests = 32
hello_timeout_ms = 1500
shutdown_grace_ms = 1000
$PLAIN"
restart() {
    [ -n "$DPID" ] && kill -9 $DPID 2>/dev/null; DPID=; rm -f "$T/s"
    { echo "socket = $T/s"; echo "$LIMITS"; } >"$T/conf"
    "$G" serve --config "$T/conf" 2>>"$T/serve.log" & DPID=$!
    i=0; while [ ! -S "$T/s" ] && kill -0 $DPID 2>/dev/null && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.1; done
    [ -S "$T/s" ] || { DPID=; echo "(this daemon does not know the limits' keys: running without)"; start_daemon "$PLAIN"; }
}
restart
timeout 30 "$H" fill a b >/dev/null 2>&1 && kill -0 $DPID 2>/dev/null && res 1-fill held || res 1-fill HOLE
restart
mkfifo "$T/hold"; timeout 30 "$H" alloc a 100000000 <"$T/hold" >"$T/alloc.out" 2>&1 & AP=$!
exec 3>"$T/hold"; sleep 1
"$G" vgpu set a memory=32M
timeout 30 "$H" overquota a >/dev/null 2>&1 && res 2-quota held || res 2-quota HOLE
exec 3>&-; wait $AP
timeout 30 "$H" args a >/dev/null 2>&1 && res 4-args held || res 4-args HOLE
r=$(timeout 30 "$H" open a 8 0 2>&1); echo "$r" | grep -q "opened 6 refused -12" && res 3a-per-vgpu held || res 3a-per-vgpu "HOLE ($r)"
r=$(timeout 30 "$H" queue a 2>&1) && res 3b-queue held || res 3b-queue HOLE
timeout 30 "$H" flood 12 30 >/dev/null 2>&1 & F=$!
sleep 12; n=$(ls /proc/$DPID/task | wc -l); [ $n -lt 10 ] && res 3c-idle-reaped held || res 3c-idle-reaped "HOLE ($n threads after 12 s)"
kill $F
timeout 10 "$H" list-null >/dev/null 2>&1 && res 7-list-null held || res 7-list-null HOLE
timeout 60 "$H" sleep a 50000000000 >/dev/null 2>&1 & S=$!
sleep 1; start=$(date +%s); kill -TERM $DPID
i=0; while kill -0 $DPID 2>/dev/null && [ $i -lt 50 ]; do i=$((i+1)); sleep 0.1; done
kill -0 $DPID 2>/dev/null && res 5-shutdown "HOLE (running 5 s after SIGTERM under a 50 s kernel)" || res 5-shutdown held
kill -9 $DPID 2>/dev/null; DPID=; rm -f "$T/s"
{ echo "socket = $T/s"; echo "$PLAIN"; } >"$T/conf2"
( ulimit -n 96; exec "$G" serve --config "$T/conf2" ) 2>>"$T/serve.log" & DPID=$!
sleep 1
timeout 30 "$H" flood 300 5 >/dev/null 2>&1 & F=$!
sleep 1; c0=$(awk '{print $14+$15}' /proc/$DPID/stat); sleep 2; c1=$(awk '{print $14+$15}' /proc/$DPID/stat)
r=$(GPUOS_TIMEOUT_MS=3000 timeout 10 "$H" open b 1 0 2>&1); rc=$?
[ $((c1-c0)) -lt 60 ] && [ $rc -ne 124 ] && res 3d-fd-limit held || res 3d-fd-limit "HOLE ($((c1-c0)) ticks in 2 s; newcomer rc $rc: $r)"
wait $F
$PY -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1); time.sleep(30)" "$T/stuck" & P=$!
sleep 0.5
timeout 10 "$H" connect-timeout "$T/stuck" >/dev/null 2>&1 && res 3e-connect-timeout held || res 3e-connect-timeout HOLE
kill $P
# configuration cases: refused within 10 s with a non-zero exit?
cfg() { { echo "socket = $T/r"; printf '%s\n' "$2"; } >"$T/c.conf"; timeout 5 "$G" serve --config "$T/c.conf" >"$T/c.out" 2>&1; rc=$?; rm -f "$T/r"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && res "6-$1" "held ($(head -c 100 $T/c.out))" || res "6-$1" "HOLE (rc $rc)"; }
VG="[device 0]
sim = default"
cfg mem-nan "$VG
[vgpu a]
memory = nan"
cfg mem-inf "$VG
[vgpu a]
memory = inf"
cfg mem-neg "$VG
[vgpu a]
memory = -1G"
cfg mem-overflow "$VG
[vgpu a]
memory = 99999999999T"
cfg mem-1T "$VG
[vgpu a]
memory = 1T"
cfg mem-80+80 "$VG
[vgpu a]
memory = 80%
[vgpu b]
memory = 80%"
cfg socket_mode-empty "socket_mode =
$VG
[vgpu a]"
cfg socket-empty "socket =
$VG
[vgpu a]"
cfg vgpu-extra-word "$VG
[vgpu a b]"
{ echo "socket = $T/r"; echo "$VG"; echo "[vgpu a]"; head -c 1100000 /dev/zero | tr '\0' '#'; echo; } >"$T/big.conf"
timeout 5 "$G" serve --config "$T/big.conf" >/dev/null 2>&1; rc=$?; rm -f "$T/r"; [ $rc -ne 0 ] && [ $rc -ne 124 ] && res 6-big-file held || res 6-big-file "HOLE (rc $rc)"
out=$(timeout 5 "$G" serve --config "$T" 2>&1); echo "$out" | grep -q "cannot read" && res 7-config-dir held || res 7-config-dir "HOLE ($out)"
"$G" probe topology --sim default --json "$T/chip.json" >/dev/null 2>&1
for e in "c['device']['sm_clock_mhz'] = 1e300" "c['sim'] = {'exec': {'htod_gbps': 0}}"; do
  $PY -c "
import json, sys
c = json.load(open(sys.argv[1]))
$e
json.dump(c, open(sys.argv[2], 'w'))" "$T/chip.json" "$T/bad_chip.json"
  { echo "socket = $T/r"; echo "[device 0]"; echo "sim = $T/bad_chip.json"; echo "[vgpu a]"; } >"$T/chip.conf"
  timeout 5 "$G" serve --config "$T/chip.conf" >/dev/null 2>&1; rc=$?; rm -f "$T/r"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && res "6-chip $e" held || res "6-chip $e" "HOLE (rc $rc)"
done
s=$(date +%s); timeout 60 "$G" probe all --sim default --json /nonexistent/d/c.json >/dev/null 2>&1; echo "CASE 7-probe-json: $(( $(date +%s) - s )) s to fail"
