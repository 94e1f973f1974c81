#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_spatial.sh: spatial vGPUs (issue 13) in `gpuos serve` on the simulated
# H200: configuration errors name file, line or vGPU; a request the chip cannot
# meet stops the daemon with the allocator's reason; vGPUs get disjoint SM sets
# of the promised capability, vGPUs naming one smset share one set (one scheduler),
# vGPUs without sms stay on the device; clients of every kind run work; SIGTERM
# releases everything.
set -u
. tests/serve_lib.sh

bad() { # CONFIG_BODY EXPECTED_MESSAGE
    { echo "socket = $T/bad.sock"; printf '%s\n' "$1"; } > "$T/bad.conf"
    out=$(timeout 20 "$G" serve --config "$T/bad.conf" 2>&1) && fail "accepted: $1"
    echo "$out" | grep -q "$2" || fail "message for [$1]: $out (expected $2)"
}
bad "[device 0]
sim = default
isolation = none
[vgpu a]
cluster = 8" "vGPU a: cluster and smset describe a spatial vGPU: give sms = N too"
bad "[device 0]
sim = default
isolation = none
[vgpu a]
sms = 300" "bad.conf:6: sms must be 1..256"
bad "[device 0]
sim = default
isolation = none
[vgpu a]
sms = 8
cluster = 0" "bad.conf:7: cluster must be 1..16"
bad "[device 0]
sim = default
isolation = none
[vgpu a]
sms = 16
smset = x
[vgpu b]
sms = 24
smset = x" "vGPUs a and b share smset x but ask for different"
bad "[device 0]
sim = default
isolation = none
[vgpu a]
sms = 120
cluster = 8" "vGPU a: sms = 120, cluster = 8 on device 0: cannot give 120 SMs that run clusters of 8"
bad "[device 0]
sim = default
isolation = none
[vgpu a]
sms = 64
cluster = 8
[vgpu b]
sms = 64
cluster = 8" "vGPU b: sms = 64, cluster = 8 on device 0: cannot give 64 SMs"
bad "[device 0]
sim = default
isolation = none
[vgpu a]
sms = 16
cluster = 16" "clusters of 16: green contexts made of the driver's groups run clusters of at most 8"
bad "[device 0]
sim = default
isolation = none
chip = $T/missing.json
[vgpu a]
sms = 16" "missing.json"

bad "[device 0]
sim = default
[vgpu a]
sms = 16" "spatial vGPUs (sms =) need isolation = none"
bad "[device 0]
sim = default
isolation = mps
[vgpu a]
sms = 16" "spatial vGPUs (sms =) need isolation = none"

# A chart of the device, and the daemon on it.
"$G" probe topology --sim default --json "$T/chart.json" >/dev/null || fail "probe topology"
start_daemon "[device 0]
sim = default
isolation = none
chip = $T/chart.json
[vgpu big]
sms = 64
cluster = 8
compute = 50
[vgpu low1]
sms = 56
cluster = 2
smset = low
[vgpu low2]
sms = 56
cluster = 2
smset = low
[vgpu whole]
compute = 10"
grep -q "SM set 0/big: 64 SMs (0 free-floating) in 8 GPCs, 8 clusters of 8 at once" "$T/serve.log" || fail "big's set"
grep -q "SM set 0/low: 56 SMs" "$T/serve.log" || fail "low's set"
[ "$(grep -c 'SM set' "$T/serve.log")" -eq 2 ] || fail "two sets expected: $(grep 'SM set' "$T/serve.log")"
[ "$(vgpu_field big device)" = 1 ] || fail "big on scheduler $(vgpu_field big device)"
[ "$(vgpu_field low1 device)" = 2 ] && [ "$(vgpu_field low2 device)" = 2 ] || fail "low1/low2 do not share a set"
[ "$(vgpu_field whole device)" = 0 ] || fail "whole left the device"
# A reload (SIGHUP) of the same file keeps every vGPU on its set; changing a set is
# refused (only at a restart) and the daemon keeps running.
kill -HUP "$DPID"; sleep 1
grep -q "reload rejected\|vGPU big: sms" "$T/serve.log" && fail "reload of the same file: $(tail -3 "$T/serve.log")"
[ "$(vgpu_field big device)" = 1 ] || fail "big left its set on reload"
sed -i 's/^sms = 64$/sms = 48/' "$T/conf"
kill -HUP "$DPID"; sleep 1
grep -q "vGPU big: sms, cluster and smset change only at a restart" "$T/serve.log" || fail "set change on reload: $(tail -3 "$T/serve.log")"
kill -0 "$DPID" || fail "daemon died on reload"
for v in big low1 low2 whole; do
    out=$(timeout 30 "$C" copy "$v" 3000000 2>&1) || fail "copy on $v: $out"
    out=$(timeout 30 "$C" module "$v" 2>&1) || fail "module on $v: $out"
done
timeout 30 "$C" burst big 200000 1 >"$T/b1" 2>&1 & p1=$!
timeout 30 "$C" burst low1 200000 1 >"$T/b2" 2>&1 & p2=$!
timeout 30 "$C" burst low2 200000 1 >"$T/b3" 2>&1 & p3=$!
for p in $p1 $p2 $p3; do wait $p || fail "burst: $(cat "$T/b1" "$T/b2" "$T/b3")"; done
stop_daemon
echo "t_serve_spatial: OK"
