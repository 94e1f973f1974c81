#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_robust.sh: clients that die (by _exit mid-copy with work queued, by
# SIGKILL mid-copy) release their memory, queued work and client slot without
# disturbing a client of another vGPU running at the same time; 40 clients at
# once; SIGTERM with clients connected ends the daemon cleanly and the clients
# get an error, not a hang.
set -u
. tests/serve_lib.sh

start_daemon "[device 0]
sim = default
policy = credit
[vgpu a]
memory = 64M
[vgpu b]
memory = 64M"

# a bystander on b that checks its data after the deaths
timeout 30 "$C" hold b 1000000 4 >"$T/bystander" 2>&1 &
BY=$!

# 1. _exit in the middle of a pipelined copy, 50 kernels queued
timeout 20 "$C" die a 40000000 400 >/dev/null 2>&1
[ $? -eq 3 ] || fail "die client did not die as planned"
wait_field a clients 0
wait_field a mem_used 0

# 2. SIGKILL in the middle of zero-copy copies
timeout 20 "$C" copyload a 30000000 10 >/dev/null 2>&1 &
K=$!
sleep 0.7
[ "$(vgpu_field a clients)" = 1 ] || fail "copyload client not connected"
kill -9 $K
wait $K 2>/dev/null
wait_field a clients 0
wait_field a mem_used 0

# the whole share is available again
out=$(timeout 20 "$C" quota a 30000000) || fail "quota after deaths: $out"
[ "$(echo "$out" | cut -d' ' -f2)" = 2 ] || fail "memory not returned: $out"

wait $BY || { cat "$T/bystander"; fail "bystander disturbed"; }
kill -0 "$DPID" || fail "daemon died"

# 3. 40 clients at once, each checking its own data
i=0
while [ $i -lt 40 ]; do
    v=a; [ $((i % 2)) -eq 1 ] && v=b
    timeout 60 "$C" hold $v 1048576 8 >"$T/h$i" 2>&1 &
    i=$((i + 1))
done
k=0
while :; do
    n=$(( $(vgpu_field a clients) + $(vgpu_field b clients) ))
    [ "$n" -eq 40 ] && break
    k=$((k + 1)); [ $k -gt 60 ] && fail "$n clients connected after 6 s, expected 40"
    sleep 0.1
done
wait_field a mem_used 20971520
bad=0
for p in $(jobs -p); do wait $p || bad=$((bad + 1)); done
[ $bad -eq 0 ] || { cat "$T"/h*; fail "$bad of 40 concurrent clients failed"; }
wait_field a clients 0
wait_field b mem_used 0

# 4. SIGTERM with clients connected and busy
timeout 30 "$C" burst a 5000000 20 >/dev/null 2>&1 &
B1=$!
timeout 30 "$C" copyload b 8000000 20 >/dev/null 2>&1 &
B2=$!
sleep 1
start=$(date +%s)
stop_daemon
[ $(( $(date +%s) - start )) -le 5 ] || fail "shutdown took more than 5 s"
wait $B1 && fail "client of a stopped daemon reported success"
wait $B2 && fail "client of a stopped daemon reported success"
echo "t_serve_robust: ok"
