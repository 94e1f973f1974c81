#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_swap_host.sh: swapping under host memory pressure (issue 23.3), inside a real
# memory cgroup (v1 or v2, created here; skipped where this host does not allow
# one). The daemon runs with `swap = 2G` in a cgroup of 320 MB: four vGPUs of 64
# MB working sets each (four 16 MB buffers, patterns written) take turns on a
# 64 MB pool, so evictions would need 448 MB of host swap that the cgroup cannot
# hold next to the executors. Checked:
#   - the daemon warns at start that the host can give less than `swap`;
#   - allocations whose evictions the host cannot hold are refused with
#     GPUOS_ENOMEM saying "host memory is short" (at least one is), after
#     waiting swap_host_wait_s (1 s here: the default 60 s would outlast the
#     tests' 20 s reply timeout) for another vGPU's memory to end, which here
#     it never does (the tenants hold theirs until told to check);
#   - the pool faulted in ahead (swap_prefault's default, auto) takes no room
#     the restores need: every tenant reads all it got back;
#   - no process in the cgroup is killed (the cgroup's oom_kill count stays 0)
#     and the daemon lives and stops cleanly;
#   - every buffer any tenant got reads back byte-exact (none lost);
#   - the OOM scores: the daemon -500 (or a line saying why it could not lower
#     its own), its executors +500.
set -u
. tests/serve_lib.sh
S="$B/tests/shm_client"
mem_cgroup gpuos_t_swap_host 320M
[ -n "$CG" ] || { echo "SKIP: cannot create a memory cgroup here"; exit 0; }
start_daemon_in_cgroup "memory_oversubscribe = 1
[device 0]
sim = default
swap = 2G
swap_pool = 128M
swap_host_wait_s = 1
$(vgpu_sections 1G v1 v2 v3 v4)"
grep -q "swap = 2048 MB, but this host can give" "$T/serve.log" || fail "no warning that the host cannot give swap = 2G"
# -500 where the daemon may lower its score (CAP_SYS_RESOURCE), else it says so
adj=$(cat "/proc/$DPID/oom_score_adj")
[ "$adj" = -500 ] || grep -q "oom_score_adj stays $adj (lowering it to -500 needs CAP_SYS_RESOURCE)" "$T/serve.log" ||
    fail "daemon's oom_score_adj $adj, and no word why"
mkdir "$T/d"
for k in 1 2 3 4; do
    timeout 120 "$S" "v$k" hold_alloc "$k" 8 16 "$T/d" > "$T/out.$k" 2>&1 &
    i=0; until [ -f "$T/d/ready.$k" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "tenant $k did not finish allocating: $(cat "$T/out.$k")"
        kill -0 "$DPID" 2>/dev/null || fail "the daemon died while tenant $k allocated (oom_kill $(OOMS))"
        sleep 0.1
    done
done
for p in $(pgrep -P "$DPID"); do
    [ "$(cat "/proc/$p/oom_score_adj")" = 500 ] || fail "executor $p's oom_score_adj: $(cat "/proc/$p/oom_score_adj")"
done
for k in 1 2 3 4; do
    touch "$T/d/go.$k"
    i=0; until grep -q "hold_alloc" "$T/out.$k" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "tenant $k did not check its buffers"
        sleep 0.1
    done
done
wait_clients() { i=0; while [ "$(jobs -p | wc -l)" -gt 1 ]; do i=$((i + 1)); [ $i -gt 100 ] && break; sleep 0.1; done; }
wait_clients
cat "$T"/out.* > "$T/all"
[ "$(OOMS)" = 0 ] || fail "the OOM killer struck inside the cgroup ($(OOMS) times): $(cat "$T/all")"
kill -0 "$DPID" || fail "the daemon died: $(cat "$T/all")"
[ "$(grep -c "check_rc=0 .*mismatches=0 " "$T/all")" = 4 ] || fail "a tenant's bytes were lost or unreadable: $(cat "$T/all")"
grep -q "alloc_rc=-4 .*host memory is short" "$T/all" || fail "no allocation was refused for host memory (the test proves nothing): $(cat "$T/all")"
grep "alloc_rc=" "$T/all" | grep -v "alloc_rc=0 \|alloc_rc=-4 .*host memory is short" && fail "a refusal that does not say why: $(cat "$T/all")"
got=$(sed -n 's/.*got=\([0-9]*\).*/\1/p' "$T/all" | paste -sd+ | bc)
[ "$got" -ge 6 ] || fail "only $got buffers in all: the pool and the host gave less than they should: $(cat "$T/all")"
stop_daemon
echo "t_swap_host: ok ($got buffers of 16 MB byte-exact, refusals clear, oom_kill 0)"
