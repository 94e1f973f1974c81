#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_hostile2.sh: the second attack campaign (issue 23) on the simulated device with
# real processes, one block per item:
#   2. credentials come from the socket: a client that names another process's
#      pid in its HELLO gets none of that process's supplementary groups (a 0660
#      segment of that group stays closed to it), while a real member of the
#      group (SO_PEERGROUPS) attaches it;
#   4. shared-memory segments per vGPU and per user: one tenant's vGPU holds
#      at most shm_segments_per_vgpu (8 here), its uid at most
#      shm_segments_per_user (12) over all its vGPUs, with a clear ELIMIT naming
#      the key; another user still creates; each segment is charged to its
#      creator's memory share; `gpuos shm rm --vgpu|--key|ID` works for root (the
#      charge comes back, the tenant can create again) and is refused to others;
#   5. copies larger than the caller's buffers, sizes that wrap: 2^40 and
#      SIZE_MAX bytes from a 4 KB buffer followed by an unmapped page, 1 MB into
#      a 4 KB allocation, HtoD/DtoH/DtoD, synchronous and asynchronous, memsets
#      and 2D copies whose sizes wrap: GPUOS_EINVAL through libgpuos and
#      CUDA_ERROR_INVALID_VALUE through the shim, on the ring and on the socket
#      path ($GPUOS_RING=0), never a crash or a success; bytes intact;
#   6. `socket =` naming a regular file, a symbolic link or a directory is
#      refused at start and the file survives byte-exact; a stale socket is
#      replaced; a file put over the socket while the daemon runs survives its
#      exit;
#   7. slowloris on /metrics: 80 slow connections from 8 loopback addresses
#      (127.0.0.2-9), each sending a byte a second: at most 8 per address are
#      held, a silent one is dropped within 8 s, and 9 of 9 scrapes from
#      127.0.0.1 are answered meanwhile.
set -u
. tests/serve_lib.sh
S="$B/tests/shm_client"
MB=1048576

# ---- 6. the socket path ----
body="[device 0]
sim = default
[vgpu a]"
printf 'precious\n' > "$T/file"
for kind in file link dir; do
    case $kind in
    file) P="$T/file" ;;
    link) ln -s "$T/file" "$T/link"; P="$T/link" ;;
    dir) mkdir "$T/dir"; P="$T/dir" ;;
    esac
    { echo "socket = $P"; echo "$body"; } > "$T/c6"
    out=$(timeout 10 "$G" serve --config "$T/c6" 2>&1) && fail "6 started on a $kind: $out"
    echo "$out" | grep -q "exists and is not a socket" || fail "6 $kind: no clear refusal: $out"
done
[ "$(cat "$T/file")" = precious ] || fail "6 the regular file was changed"
[ -L "$T/link" ] && [ -d "$T/dir" ] || fail "6 the link or the directory was removed"
# a stale socket (nobody listening) is replaced
$PY -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$T/s"
[ -S "$T/s" ] || fail "6 no stale socket made"
start_daemon "$body"
i=0; until grep -q "listening on $T/s" "$T/serve.log"; do i=$((i + 1)); [ $i -gt 100 ] && fail "6 not listening"; sleep 0.1; done
r=$("$S" a stat 0x1 2>&1); echo "$r" | grep -q "stat rc=" || fail "6 daemon on a replaced stale socket: $r"
# a file put over the socket while the daemon runs survives its exit
mv "$T/s" "$T/s.old"
printf 'precious\n' > "$T/s"
kill -TERM "$DPID"; wait "$DPID"; rc=$?; DPID=
[ $rc -eq 0 ] || fail "6 exit status $rc"
[ "$(cat "$T/s" 2>/dev/null)" = precious ] || fail "6 the daemon unlinked a file that replaced its socket"
rm -f "$T/s" "$T/s.old"

# ---- 2. credentials from the socket, never from the HELLO ----
start_daemon "socket_mode = 0666
$body"
chmod 755 "$T"
r=$(setpriv --reuid 4241 --regid 4300 --clear-groups "$S" a create 0x23 $MB 0660 2>&1)
echo "$r" | grep -q "create rc=0" || fail "2 create by uid 4241 gid 4300: $r"
# a process of uid 4241 with supplementary group 4300: the groups to borrow
setpriv --reuid 4241 --regid 4241 --groups 4300 sleep 60 &
V=$!
i=0; until grep -q "^Groups:.*4300" "/proc/$V/status" 2>/dev/null; do i=$((i + 1)); [ $i -gt 50 ] && fail "2 no victim"; sleep 0.1; done
LIAR="setpriv --reuid 4242 --regid 4242 --clear-groups env SHM_CLIENT_HELLO_PID=$V"
r=$($LIAR "$S" a attach 0x23 2>&1); echo "$r" | grep -q "attach rc=-6" || fail "2 a forged HELLO pid lent its groups (attach): $r"
r=$($LIAR "$S" a stat 0x23 2>&1); echo "$r" | grep -q "stat rc=-6" || fail "2 a forged HELLO pid lent its groups (stat): $r"
# a real member of group 4300 (its supplementary groups, from the socket) attaches
r=$(setpriv --reuid 4243 --regid 4243 --groups 4300 "$S" a attach 0x23 2>&1)
echo "$r" | grep -q "attach rc=0" || fail "2 a member of the segment's group refused: $r"
# what the daemon records is the kernel's pid, not the claimed one
r=$(SHM_CLIENT_HELLO_PID=1 "$S" a create 0x24 $MB 0600 2>&1); echo "$r" | grep -q "create rc=0" || fail "2 create: $r"
r=$("$S" a stat 0x24 2>&1); echo "$r" | grep -q "stat rc=0 " || fail "2 stat: $r"
cpid=$(echo "$r" | sed -n 's/.* cpid=\([0-9-]*\) .*/\1/p')
[ -n "$cpid" ] && [ "$cpid" -gt 1 ] || fail "2 the segment records the claimed pid 1 as its creator: $r"
kill $V 2>/dev/null
stop_daemon

# ---- 4. segment limits per vGPU and per user, gpuos shm rm ----
start_daemon "socket_mode = 0666
shm_segments_per_vgpu = 8
shm_segments_per_user = 12
[device 0]
sim = default
$(vgpu_sections 64M a b c)"
T1="setpriv --reuid 4242 --regid 4242 --clear-groups"
r=$($T1 "$S" a many 0x400 100 1 2>&1)
echo "$r" | grep -q "many created=8 rc=-12 .*shm_segments_per_vgpu" || fail "4 per-vGPU limit: $r"
r=$($T1 "$S" b many 0x500 100 1 2>&1)
echo "$r" | grep -q "many created=4 rc=-12 .*uid 4242 .*shm_segments_per_user" || fail "4 per-user limit: $r"
r=$(setpriv --reuid 4243 --regid 4243 --clear-groups "$S" c many 0x600 3 1 2>&1)
echo "$r" | grep -q "many created=3 rc=0" || fail "4 another user was denied segments: $r"
# each (2 MB-rounded) segment is charged to its creator's share
[ "$(vgpu_field a mem_used)" = $((8 * 2 * MB)) ] || fail "4 a's charge: $(vgpu_field a mem_used)"
[ "$(vgpu_field b mem_used)" = $((4 * 2 * MB)) ] || fail "4 b's charge: $(vgpu_field b mem_used)"
# the operator removes them; nobody else may
r=$($T1 "$G" shm rm --vgpu a 2>&1) && fail "4 uid 4242 ran shm rm: $r"
echo "$r" | grep -q "only root or the daemon's owner" || fail "4 shm rm refusal: $r"
r=$("$G" shm rm --vgpu a 2>&1) || fail "4 shm rm --vgpu a: $r"
echo "$r" | grep -q "^8 segments marked removed" || fail "4 shm rm --vgpu a: $r"
wait_field a mem_used 0
r=$("$G" shm rm --key 0x500 2>&1); echo "$r" | grep -q "^1 segment marked removed" || fail "4 shm rm --key: $r"
id=$("$G" shm list | awk '$1 == "0x00000501" {print $2}')
[ -n "$id" ] || fail "4 no id of key 0x501: $("$G" shm list)"
r=$("$G" shm rm "$id" 2>&1); echo "$r" | grep -q "^1 segment marked removed" || fail "4 shm rm ID: $r"
[ "$(vgpu_field b mem_used)" = $((2 * 2 * MB)) ] || fail "4 b's charge after two rm: $(vgpu_field b mem_used)"
r=$("$G" shm rm --key 0x500 2>&1) && fail "4 rm of a removed key succeeded: $r"
echo "$r" | grep -q "no shared segment with key 0x500" || fail "4 rm of a missing key: $r"
"$G" shm list | grep -q "0x0000040" && fail "4 a's segments still listed: $("$G" shm list)"
r=$($T1 "$S" a many 0x700 2 1 2>&1); echo "$r" | grep -q "many created=2 rc=0" || fail "4 a cannot create after rm: $r"
stop_daemon

# ---- 5. oversize and wrapping copies, ring and socket paths ----
start_daemon "$body"
for ring in 1 0; do
    r=$(GPUOS_RING=$ring timeout 60 "$B/tests/hostile_client" oversize a 2>&1) || fail "5 libgpuos (ring=$ring): $r"
    echo "$r" | grep -q "oversize copies refused: 52" || fail "5 libgpuos (ring=$ring): $r"
    if [ -f "$B/shim/libcuda.so.1" ]; then
        r=$(GPUOS_RING=$ring timeout 60 "$G" run --vgpu a -- "$B/tests/cudashim_drv" oversize 2>&1) ||
            fail "5 shim (ring=$ring): $r"
        echo "$r" | grep -q "oversize ok 51" || fail "5 shim (ring=$ring): $r"
    fi
done
stop_daemon

# ---- 7. slowloris on /metrics ----
PORT=$(free_port)
start_daemon "metrics_listen = 127.0.0.1:$PORT
$body"
i=0; until grep -q "metrics on" "$T/serve.log"; do i=$((i + 1)); [ $i -gt 50 ] && fail "7 no metrics"; sleep 0.1; done
r=$(timeout 30 $PY tests/slowloris.py "$PORT" 2>&1) || fail "7 slowloris.py: $r"
echo "$r" | grep -q "scrapes=9/9" || fail "7 scrapes not answered under 80 slow connections: $r"
echo "$r" | grep -q "held=64 " || fail "7 not 8 connections per address held: $r"
echo "$r" | grep -q "idle_dropped=1" || fail "7 a silent connection was not dropped: $r"
kill -0 "$DPID" || fail "7 daemon died"
stop_daemon
echo "t_hostile2: ok"
