#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_vgpu_slots.sh: vGPU slots that never came back (issue 44.3), on the
# simulated device. 64 vGPUs made by `vgpu create`, each left a 1-byte shared
# segment by a tenant's job and then deleted, hold the whole table:
#  - the 65th create is refused in one line naming the deleted vGPUs that keep
#    their slots and `gpuos shm rm --vgpu NAME`;
#  - `gpuos shm list --vgpu NAME` lists a deleted vGPU's segment by its name;
#  - the operator's `gpuos shm rm --vgpu NAME` removes a deleted vGPU's segment
#    (f2db5de: "no vGPU named") and the next create gets its slot;
#  - another tenant can remove neither a segment of a deleted vGPU (RMID:
#    EPERM) nor anything by `gpuos shm rm`; the segment stays;
#  - the tenant that made a segment removes it itself (RMID through another
#    vGPU): that slot comes back too;
#  - 70 create/delete rounds that each leave a segment removed at once never
#    run out of slots.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: $(basename "$0") needs root (tenants of other uids, setpriv)"; exit 0; }
. tests/serve_lib.sh
S="$B/tests/shm_client"
A="setpriv --reuid 4242 --regid 4242 --clear-groups"
E="setpriv --reuid 4243 --regid 4243 --clear-groups"
chmod 755 "$T"
start_daemon "socket_mode = 0666
shm_segments_per_user = 200
[device 0]
sim = default
isolation = none"

# 64 jobs: create rI, a tenant leaves a segment (key 0x1000 + I), delete rI
i=0
while [ $i -lt 64 ]; do
    "$G" vgpu create "r$i" compute=1 memory=1% >/dev/null || fail "round $i: create"
    r=$($A "$S" "r$i" create $((0x1000 + i)) 1 0600 2>&1)
    echo "$r" | grep -q "create rc=0 " || fail "round $i: the tenant's segment: $r"
    "$G" vgpu delete "r$i" --force >/dev/null || fail "round $i: delete"
    i=$((i + 1))
done
[ "$("$G" shm list | grep -c ' r[0-9]*$')" = 64 ] || fail "not 64 segments of deleted vGPUs: $("$G" shm list)"
expect_fail "maximum of 64 vGPUs (deleted ones still in use count): 64 deleted keep slots by shared segments (\`gpuos shm rm --vgpu NAME\`): r0, r1, r2," \
    "$G" vgpu create b compute=10 memory=10%

# listed by its name
r=$("$G" shm list --vgpu r7 --json - | $PY -c "
import json, sys
s = json.load(sys.stdin)['segments']
print(len(s), s[0]['key'], s[0]['uid'], s[0]['vgpu'])")
[ "$r" = "1 $((0x1007)) 4242 r7" ] || fail "shm list --vgpu r7: $r"

# the operator frees a deleted vGPU's slot by its name
r=$("$G" shm rm --vgpu r0 2>&1) || fail "shm rm --vgpu r0 (deleted): $r"
echo "$r" | grep -q "^1 segment marked removed" || fail "shm rm --vgpu r0: $r"
"$G" vgpu create b compute=10 memory=10% || fail "create after r0's segment was removed"
expect_fail "maximum of 64 vGPUs" "$G" vgpu create late compute=1 memory=1%
expect_fail 'no vGPU named "r0" (nor a deleted one holding shared segments)' "$G" shm rm --vgpu r0

# another tenant (on b) removes nothing
r=$($E "$S" b rm $((0x1001)) 2>&1)
echo "$r" | grep -q "rm rc=-6 .*only its owner, its creator or root may remove it" || fail "another tenant's RMID on r1's segment: $r"
r=$($E "$G" shm rm --vgpu r1 2>&1) && fail "another tenant ran shm rm --vgpu r1: $r"
echo "$r" | grep -q "only root or the daemon's owner" || fail "another tenant's shm rm: $r"
[ "$("$G" shm list --vgpu r1 | grep -c '0x00001001')" = 1 ] || fail "r1's segment went: $("$G" shm list)"
expect_fail "maximum of 64 vGPUs" "$G" vgpu create late compute=1 memory=1%

# the owner removes its own segment of deleted r1 through vGPU b
r=$($A "$S" b rm $((0x1001)) 2>&1)
echo "$r" | grep -q "rm rc=0 " || fail "the owner's RMID of its segment of deleted r1: $r"
"$G" vgpu create late compute=1 memory=1% || fail "create after the owner removed r1's segment"

# free the rest; then 70 rounds that each leave a segment, removed at once
"$G" vgpu delete late >/dev/null || fail "delete late"
i=2
while [ $i -lt 64 ]; do
    "$G" shm rm --vgpu "r$i" >/dev/null || fail "rm --vgpu r$i"
    i=$((i + 1))
done
[ -z "$("$G" shm list | sed 1d)" ] || fail "segments left: $("$G" shm list)"
i=0
while [ $i -lt 70 ]; do
    "$G" vgpu create "q$i" compute=1 memory=1% >/dev/null || fail "round q$i: create"
    $A "$S" "q$i" create $((0x2000 + i)) 1 0600 | grep -q "create rc=0 " || fail "round q$i: segment"
    "$G" vgpu delete "q$i" --force >/dev/null || fail "round q$i: delete"
    "$G" shm rm --vgpu "q$i" >/dev/null || fail "round q$i: rm"
    i=$((i + 1))
done
kill -0 "$DPID" || fail "daemon died"
stop_daemon
echo "t_vgpu_slots: ok"
