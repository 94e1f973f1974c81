#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_swap_wait.sh: an allocation short of host memory waits for another vGPU's
# memory to end (issue 42: three jobs of 45 GB on a host of 128 GB), inside a
# real memory cgroup (v1 or v2, created here; skipped where this host does not
# allow one), on the simulated device with real processes. The daemon runs in a
# cgroup of 256 MB with swap = 512M on a 64 MB pool: three busy tenants of one
# 48 MB buffer each (shm_client work: copies and launches, every round). Two of
# them take turns (the pool holds at most 96 MB then: one tenant swapped out
# and the holder evicted before the waiter comes back); the third one's
# allocation would need 144 MB (a second tenant evicted, and room kept for a
# restore), more than the cgroup leaves the pool (~126 MB: 256 MB less the
# reserve of 80 MB, the simulated device's 48 MB and the processes). Checked:
#   - the third's allocation waits for host memory (the daemon says so) while
#     the first two go on taking turns, and gets it once the first one has
#     ended: the order in the daemon's log is "c waits", "a released", "c got
#     host memory", and no request is refused;
#   - all three end byte-exact, each buffer read back word by word;
#   - no process in the cgroup is killed by the OOM killer;
#   - with swap_host_wait_s = 0 (the old behaviour) the third is refused at once
#     with "host memory is short" while the other two end byte-exact.
set -u
. tests/serve_lib.sh
S="$B/tests/shm_client"
mem_cgroup gpuos_t_swap_wait 256M
[ -n "$CG" ] || { echo "SKIP: cannot create a memory cgroup here"; exit 0; }
# three WAIT_S: the three tenants on a daemon with swap_host_wait_s = WAIT_S
# (c starts once a and b both hold their buffer); their outputs in $T/w.*
three() {
    : > "$T/serve.log"
    start_daemon_in_cgroup "memory_oversubscribe = 1
[device 0]
sim = default
swap = 512M
swap_pool = 64M
swap_turn_ms = 300
swap_host_wait_s = $1
$(vgpu_sections 64M a b c)"
    timeout 120 "$S" a work 31 1 48 40 > "$T/w.a" 2>&1 &
    WA=$!
    wait_field a mem_used 50331648
    timeout 120 "$S" b work 32 1 48 150 > "$T/w.b" 2>&1 &
    WB=$!
    wait_field b mem_used 50331648
    [ "$(vgpu_field a mem_used)" = 50331648 ] || fail "a does not hold its buffer beside b's"
    timeout 120 "$S" c work 33 1 48 40 > "$T/w.c" 2>&1 &
    WC=$!
    wait $WA; wait $WB; wait $WC
}
exact() { grep -q "work rc=0 mismatches=0" "$T/w.$1" || fail "$1 not byte-exact ($2): $(cat "$T/w.$1")"; }
# line PATTERN: the first line of the daemon's log matching PATTERN (0: none)
line() { grep -n "$1" "$T/serve.log" | head -1 | cut -d: -f1 | grep . || echo 0; }

three 15
for v in a b c; do exact $v "the third waits"; done
grep -q " refused: " "$T/serve.log" && fail "a request was refused: $(grep " refused: " "$T/serve.log" | head -3)"
ca=$(sed -n 's/.*client \([0-9]*\) (pid [0-9]*) of vGPU a: executor.*/\1/p' "$T/serve.log" | head -1)
w=$(line "swap: vGPU c: an allocation waits for host memory")
r=$(line "client $ca (pid [0-9]*) released")
g=$(line "swap: vGPU c: an allocation got host memory after")
[ "$w" -gt 0 ] || fail "c's allocation did not wait for host memory (the test proves nothing): $(grep swap: "$T/serve.log" | tail -5)"
[ "$r" -gt "$w" ] && [ "$g" -gt "$r" ] ||
    fail "c got host memory before a ended (lines: waits $w, a released $r, got $g): $(grep "vGPU c" "$T/serve.log" | head -5)"
for v in a b; do
    [ "$(vgpu_field $v swap_turns)" -ge 1 ] || fail "$v took no turn while c waited (the test proves nothing)"
done
[ "$(OOMS)" = 0 ] || fail "the OOM killer took $(OOMS) processes in the cgroup"
waited=$(sed -n 's/.*vGPU c: an allocation got host memory after \([0-9.]*\) s.*/\1/p' "$T/serve.log" | head -1)
stop_daemon

# the old behaviour: no wait, the third refused at once, the others unharmed
three 0
for v in a b; do exact $v "beside a refused third"; done
grep -q "work alloc rc=-4 error=swap: host memory is short" "$T/w.c" || fail "c with swap_host_wait_s = 0: $(cat "$T/w.c")"
grep -q "waits for host memory" "$T/serve.log" && fail "c waited with swap_host_wait_s = 0"
[ "$(OOMS)" = 0 ] || fail "the OOM killer took $(OOMS) processes in the cgroup"
stop_daemon
echo "t_swap_wait: ok (the third tenant waited $waited s for host memory until the first ended; all byte-exact)"
