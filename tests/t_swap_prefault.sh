#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_swap_prefault.sh: swap_prefault = auto follows the vGPUs' memory quotas
# (issue 42.2) on the simulated device. Two vGPUs of 32 MB on a 64 MB pool fit
# it together: nothing is faulted in ahead, and the daemon says so. A `vgpu
# create` of a third 32 MB vGPU makes the quotas sum past the pool (96 MB):
# the daemon faults the host pool in toward that sum (at least 96 MB held,
# at most `swap`), not only what the configuration said at start. A `vgpu
# delete` gives nothing back and faults nothing more; the daemon stops at once
# (its prefault thread wakes for the stop).
set -u
. tests/serve_lib.sh
start_daemon "memory_oversubscribe = 1
[device 0]
sim = default
swap = 256M
swap_pool = 64M
$(vgpu_sections 32M v1 v2)"
i=0; until grep -q "host pool not faulted in ahead" "$T/serve.log"; do
    i=$((i + 1)); [ $i -gt 50 ] && fail "no line saying that 2 x 32 MB on a 64 MB pool need no prefault"
    sleep 0.1
done
grep -q "host pool faulted in ahead" "$T/serve.log" && fail "faulted in ahead although the quotas fit the pool"
"$G" vgpu create v3 compute=10 memory=32M > "$T/create" 2>&1 || fail "vgpu create v3: $(cat "$T/create")"
i=0; until grep -q "host pool faulted in ahead (the vGPUs' quotas changed)" "$T/serve.log"; do
    i=$((i + 1)); [ $i -gt 50 ] && fail "the prefault did not follow vgpu create (3 x 32 MB on a 64 MB pool)"
    sleep 0.1
done
held=$(sed -n "s/.*faulted in ahead (the vGPUs' quotas changed): .* \([0-9]*\) of 256 MB held.*/\1/p" "$T/serve.log" | tail -1)
[ -n "$held" ] && [ "$held" -ge 96 ] && [ "$held" -le 256 ] || fail "held ${held:-?} MB of the pool after vgpu create (want 96-256)"
n=$(grep -c "host pool faulted in ahead" "$T/serve.log")
"$G" vgpu delete v3 > "$T/delete" 2>&1 || fail "vgpu delete v3: $(cat "$T/delete")"
sleep 1.5
[ "$(grep -c "host pool faulted in ahead" "$T/serve.log")" = "$n" ] || fail "vgpu delete faulted more in"
t0=$(date +%s%N)
kill -TERM "$DPID"; wait "$DPID"; rc=$?; DPID=
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 0 ] || fail "the daemon exited $rc at its stop"
[ "$ms" -lt 3000 ] || fail "the daemon took $ms ms to stop"
echo "ok: no prefault while 2 x 32 MB fit the 64 MB pool; after vgpu create $held MB of 256 held; stopped in $ms ms"
echo "PASS: t_swap_prefault"
