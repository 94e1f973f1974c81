#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_shm.sh: shared device memory through `gpuos serve` (issue 10) on the simulated
# device with real processes: each client's work runs in its own executor
# process (issue 9), so a segment is one exported physical allocation mapped by
# two executors:
#   - a producer and a consumer, attached at the same time, see each other's
#     writes byte-exact (a host copy one way, a kernel the other way);
#   - a client of another uid (setpriv) without permission cannot attach,
#     read permission alone gives a read-only attachment (SHM_RDONLY) whose
#     copies and kernels cannot write the segment,
#     stat, change or remove the segment; after chmod 0666 it can attach but
#     still not remove or change it (only owner, creator, root);
#   - the segment is charged to the creating vGPU only, and the charges are right
#     after kill -9 of an attached client and of an executor; removal waits for
#     the last detach, then the share is back to 0;
#   - misuse: mem_free of an attachment, a copy past its end, a detach inside it;
#   - `gpuos shm list` shows it like ipcs -m, and --json.
set -u
. tests/serve_lib.sh
S="$B/tests/shm_client"
MB=1048576
start_daemon "socket_mode = 0666
[device 0]
sim = default
$(vgpus_ab 64M)"
chmod 755 "$T"

# ---- producer and consumer in two processes (two executors), attached at once ----
mkdir "$T/pc"
timeout 30 "$S" a producer 0x51 $((4 * MB)) "$T/pc" > "$T/prod" 2>&1 &
P=$!
r=$(timeout 30 "$S" b consumer 0x51 "$T/pc" 2>&1) || fail "consumer: $r"
wait $P || fail "producer: $(cat "$T/prod")"
echo "$r" | grep -q "consumer rc=0 match=1 detach=0 nattch=2" || fail "consumer did not see the producer's write: $r"
grep -q "producer rc=0 waited=0 match=1 detach=0" "$T/prod" || fail "producer did not see the consumer's kernel: $(cat "$T/prod")"
# charged to a (the creator), not b; still there (SysV: until removed)
[ "$(vgpu_field a mem_used)" = $((4 * MB)) ] || fail "a's share: $(vgpu_field a mem_used)"
[ "$(vgpu_field b mem_used)" = 0 ] || fail "b charged: $(vgpu_field b mem_used)"
"$G" shm list > "$T/list" || fail "shm list"
grep -Eq "^0x00000051 +[0-9]+ +0 +rw------- +4194304 +0 .*a$" "$T/list" || fail "shm list: $(cat "$T/list")"
"$G" shm list --json - > "$T/list.json" || fail "shm list --json"
$PY - "$T/list.json" <<'PY' || fail "shm list --json: $(cat "$T/list.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "gpuos.shm-list/1"
s = [x for x in r["segments"] if x["key"] == 0x51][0]
assert s["bytes"] == 4 << 20 and s["nattch"] == 0 and s["mode"] == "0600" and s["vgpu"] == "a" and s["uid"] == 0
PY

# ---- another uid without permission ----
U="setpriv --reuid 4242 --regid 4242 --clear-groups"
r=$($U "$S" b attach 0x51 2>&1); echo "$r" | grep -q "attach rc=-6" || fail "uid 4242 attached a 0600 segment: $r"
r=$($U "$S" b stat 0x51 2>&1); echo "$r" | grep -q "stat rc=-6" || fail "uid 4242 read a 0600 segment: $r"
r=$($U "$S" b rm 0x51 2>&1); echo "$r" | grep -q "rm rc=-6" || fail "uid 4242 removed someone else's segment: $r"
r=$($U "$S" b chmod 0x51 0666 2>&1); echo "$r" | grep -q "chmod rc=-6" || fail "uid 4242 changed the mode: $r"
GO=$(for_others "$G") || fail "copy of gpuos for uid 4242"
$U "$GO" shm list >"$T/list4242" 2>&1 || fail "uid 4242: shm list: $(cat "$T/list4242")"
grep -q 0x00000051 "$T/list4242" && fail "uid 4242 lists a segment it may not read"
# read-only attachments (SHM_RDONLY): read permission suffices, and is needed
r=$($U "$S" b ro 0x51 2>&1); echo "$r" | grep -q "ro attach=-6" || fail "uid 4242 attached a 0600 segment read-only: $r"
r=$("$S" a chmod 0x51 0644 2>&1); echo "$r" | grep -q "chmod rc=0" || fail "owner chmod 0644: $r"
r=$($U "$S" b attach 0x51 2>&1); echo "$r" | grep -q "attach rc=-6" || fail "uid 4242 attached a 0644 segment read-write: $r"
r=$($U "$S" b ro 0x51 2>&1)
echo "$r" | grep -q "ro attach=0 second_half=1 copy=-6 kernel=-[0-9]* unchanged=1" ||
    fail "read-only attachment: readable, copies and kernels refused, bytes unchanged: $r"
r=$("$S" a ro 0x51 2>&1)
echo "$r" | grep -q "ro attach=0 second_half=1 copy=-6 kernel=-[0-9]* unchanged=1" || fail "owner's read-only attachment: $r"
r=$("$S" a chmod 0x51 0666 2>&1); echo "$r" | grep -q "chmod rc=0" || fail "owner chmod: $r"
r=$($U "$S" b attach 0x51 2>&1); echo "$r" | grep -q "attach rc=0" || fail "uid 4242 cannot attach after chmod 0666: $r"
r=$($U "$S" b rm 0x51 2>&1); echo "$r" | grep -q "rm rc=-6" || fail "read-write access let uid 4242 remove: $r"
r=$($U "$S" b create 0x51 $MB 0600 2>&1); echo "$r" | grep -q "create rc=-10" || fail "exclusive create of an existing key: $r"

# ---- misuse ----
r=$("$S" a misuse 0x51 2>&1)
echo "$r" | grep -q "misuse free=-1 copy_past_end=-1 detach_inside=-1 copy_at_end=0" || fail "misuse: $r"

# ---- kill -9 while attached: the client, then an executor ----
"$S" b hold 0x51 "$T/h1" > /dev/null 2>&1 &
H1=$!
"$S" a hold 0x51 "$T/h2" > /dev/null 2>&1 &
H2=$!
i=0; until [ -f "$T/h1" ] && [ -f "$T/h2" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "holders"; sleep 0.1; done
r=$("$S" a stat 0x51); echo "$r" | grep -q "nattch=2" || fail "two holders: $r"
r=$("$S" a rm 0x51); echo "$r" | grep -q "rm rc=0" || fail "owner rm: $r"
r=$("$S" a stat 0x51); echo "$r" | grep -q "stat rc=-1" || fail "a removed key still found: $r"
"$G" shm list | grep -Eq "^0x00000051 .* 2 +dest +a$" || fail "removed segment not shown as dest: $("$G" shm list)"
[ "$(vgpu_field a mem_used)" = $((4 * MB)) ] || fail "a's share dropped before the last detach"
kill -9 $H1
wait $H1 2>/dev/null
i=0; until "$G" shm list | grep -Eq "^0x00000051 .* 1 +dest"; do i=$((i + 1)); [ $i -gt 100 ] && fail "kill -9 of a client: attachment not dropped: $("$G" shm list)"; sleep 0.1; done
[ "$(vgpu_field a mem_used)" = $((4 * MB)) ] || fail "a's share after b's holder died: $(vgpu_field a mem_used)"
[ "$(vgpu_field b mem_used)" = 0 ] || fail "b's share after its holder died: $(vgpu_field b mem_used)"
# the last holder's executor dies (kill -9 of the executor process)
XP=$(pgrep -f "gpuos executor" | while read -r p; do [ "$(ps -o ppid= -p "$p" | tr -d ' ')" = "$DPID" ] && echo "$p"; done | head -1)
[ -n "$XP" ] || fail "no executor found"
kill -9 "$XP"
# the executor's loss is noticed with its client's next request or end (issue 9);
# the client then goes too: the segment's last attachment, so it is destroyed
[ "$(vgpu_field a mem_used)" = $((4 * MB)) ] || fail "a's share after its executor died: $(vgpu_field a mem_used)"
kill -9 $H2
wait $H2 2>/dev/null
i=0; while "$G" shm list | grep -q 0x00000051; do i=$((i + 1)); [ $i -gt 100 ] && fail "segment not destroyed at its last detach: $("$G" shm list)"; sleep 0.1; done
wait_field a mem_used 0
[ "$(vgpu_field b mem_used)" = 0 ] || fail "b's share at the end: $(vgpu_field b mem_used)"

# ---- the share is enforced for segments too ----
r=$("$S" a create 0x52 $((65 * MB)) 0600 2>&1); echo "$r" | grep -q "create rc=-10 .*memory share" || fail "segment past the share: $r"
[ "$(vgpu_field a mem_used)" = 0 ] || fail "a failed create left a charge"
stop_daemon

# ---- isolation = none: the daemon's own device maps the segment twice ----
start_daemon "[device 0]
sim = default
isolation = none
[vgpu a]
memory = 64M
[vgpu b]
memory = 64M"
mkdir "$T/pc2"
timeout 30 "$S" a producer 0x61 $((4 * MB)) "$T/pc2" > "$T/prod2" 2>&1 &
P=$!
r=$(timeout 30 "$S" b consumer 0x61 "$T/pc2" 2>&1) || fail "none: consumer: $r"
wait $P || fail "none: producer: $(cat "$T/prod2")"
echo "$r" | grep -q "consumer rc=0 match=1 detach=0 nattch=2" || fail "none: consumer: $r"
grep -q "producer rc=0 waited=0 match=1 detach=0" "$T/prod2" || fail "none: producer: $(cat "$T/prod2")"
r=$("$S" a rm 0x61); echo "$r" | grep -q "rm rc=0" || fail "none: rm: $r"
wait_field a mem_used 0
stop_daemon
echo ok
