#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_vgpu_cgroup.sh: vGPUs bound to a cgroup (issue 43.2; [vgpu] cgroup =,
# serve/peercg.c), on the simulated device, with cgroups made here under the
# host's cgroup v2 (and v1 freezer) hierarchy and removed at the end:
#  - a vGPU of the file with cgroup = /T/job_7 serves a client in /T/job_7 and
#    one in /T/job_7/step_0, refuses clients of the same uid in /T/job_77 (a
#    prefix that is not a parent) and in /T/other, one line naming both cgroups;
#  - a socket connected from /T/other whose connecting process ended and whose
#    pid went to a process of /T/job_7 is refused (a pidfd, not the number);
#  - `gpuos vgpu create ... cgroup=...` the same; the binding is in the state
#    file and holds after a restart; a blank-separated list admits any of them; `cgroup=freezer:/...` binds by the v1
#    freezer hierarchy where the host has one;
#  - bad values (relative, /../, blanks, a controller with odd characters)
#    refused at create and in the file (file:line).
# Needs root and a writable cgroup v2 hierarchy; SKIPs (saying which) otherwise.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: $(basename "$0") needs root (makes cgroups)"; exit 0; }
. tests/serve_lib.sh
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG2" ] || { echo "SKIP: $(basename "$0"): no cgroup v2 hierarchy mounted"; exit 0; }
# the cgroup directories of this test, relative to the hierarchy's root as
# /proc/PID/cgroup names them (this process's own cgroup is their parent)
HERE=$(sed -n 's/^0:://p' /proc/self/cgroup)
REL="${HERE%/}/gpuos-t$$"
D="$CG2$REL"
mkdir "$D" 2>/dev/null || { echo "SKIP: $(basename "$0"): cannot make a cgroup under $CG2$HERE"; exit 0; }
FZ=$(awk '$3 == "cgroup" && $4 ~ /(^|,)freezer(,|$)/ { print $2; exit }' /proc/mounts)
FREL=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}freezer\(,[^:]*\)\{0,1\}:\(.*\)/\3/p' /proc/self/cgroup)
FREL="${FREL%/}/gpuos-t$$"
[ -n "$FZ" ] && mkdir -p "$FZ$FREL/job_7" 2>/dev/null || FZ=""
cg_cleanup() {
    [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
    jobs -p | xargs -r kill -9 2>/dev/null
    # whatever is left in our cgroups (an orphaned client), then the directories
    for d in "$D" ${FZ:+"$FZ$FREL"}; do
        [ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
    done
    i=0
    while [ $i -lt 30 ] && { [ -d "$D" ] || { [ -n "$FZ" ] && [ -d "$FZ$FREL" ]; }; }; do
        for d in "$D" ${FZ:+"$FZ$FREL"}; do [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
        i=$((i + 1)); sleep 0.1
    done
    cleanup
}
trap cg_cleanup EXIT
mkdir -p "$D/job_7/step_0" "$D/job_77" "$D/other"
chmod 755 "$T"
AS="setpriv --reuid=4242 --regid=4242 --clear-groups"

# serve_client info VGPU as uid 4242 from a process put (as root) into each
# cgroup directory of DIRS: its output and status
in_cg() { # "DIRS" VGPU
    sh -c 'for d in $1; do echo $$ > "$d/cgroup.procs" || exit 9; done; shift; exec "$@"' sh "$1" \
        $AS "$C" info "$2" 2>&1
}
served() { # "DIRS" VGPU
    out=$(in_cg "$1" "$2") || fail "a client in $1 refused on $2: $out"
}
refused() { # "DIRS" VGPU WANT
    out=$(in_cg "$1" "$2") && fail "a client in $1 served on $2: $out"
    echo "$out" | grep -qF -- "$3" || fail "a client in $1 on $2: expected \"$3\", got: $out"
}

start_daemon "socket_mode = 0666
state = $T/state.json
[device 0]
sim = default
[vgpu job]
compute = 40
memory = 10%
users = 4242
cgroup = $REL/job_7
[vgpu open]
compute = 40
memory = 10%"
served "$D/job_7" job
served "$D/job_7/step_0" job
refused "$D/job_77" job "vGPU \"job\" is open only to the processes of its cgroup: pid"
refused "$D/job_77" job "is in $REL/job_77, outside $REL/job_7"
refused "$D/other" job "is in $REL/other, outside $REL/job_7"
served "$D/other" open # an unbound vGPU: any cgroup

# a reused pid (issue 43.2): a process of /T/other connects, hands the socket
# to its child and ends; a process of /T/job_7 is made to get its pid
# (ns_last_pid); the child's HELLO must be refused (the daemon holds the
# connecting process by a pidfd, not by its number)
cat > "$T/handoff.py" <<'EOF2'
import os, socket, struct, sys, time
path, vgpu, go, ver = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
if os.fork():
    os._exit(0)  # the connecting process ends; its child keeps the socket
while not os.path.exists(go):
    time.sleep(0.01)
name = vgpu.encode()
body = struct.pack("<II64s", int(ver), 0, name)  # gos_msg_hello
s.sendall(struct.pack("<IHHII", 0x50534F47, int(ver), 100, 1, len(body)) + body)
h = s.recv(16, socket.MSG_WAITALL)
n = struct.unpack("<IHHII", h)[4]
r = s.recv(n, socket.MSG_WAITALL)
status, _, tl = struct.unpack("<iHH", r[:8])
print(status, r[8:8 + tl].rstrip(b"\0").decode())
EOF2
reused=0
PROTO=$(sed -n 's/^#define GOS_PROTOCOL_VERSION \([0-9]*\).*/\1/p' src/proto/proto.h)
for try in 1 2 3 4 5 6 7 8 9 10; do
    rm -f "$T/go"
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$D/other" $AS "$PY" "$T/handoff.py" "$T/s" job \
        "$T/go" "$PROTO" > "$T/handoff.out" 2>&1 &
    P=$!
    wait "$P" # the connecting process, reaped: its pid is free
    echo $((P - 1)) > /proc/sys/kernel/ns_last_pid
    sh -c 'echo $$ > "$1/cgroup.procs"; exec sleep 30' sh "$D/job_7" &
    B=$!
    if [ "$B" = "$P" ]; then reused=1; break; fi
    kill "$B"; touch "$T/go"; sleep 0.2 # another process took it: again
done
if [ $reused = 1 ]; then
    touch "$T/go"
    i=0; while [ ! -s "$T/handoff.out" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
    grep -q "^-6 vGPU \"job\" is open only to the processes of its cgroup: the connecting" "$T/handoff.out" ||
        fail "a HELLO from pid $P's socket after $P went to a process of job_7: $(cat "$T/handoff.out")"
    kill "$B"
else
    echo "t_vgpu_cgroup: no process got the reused pid in 10 tries (a busy host): the reuse case untested"
fi

# at run time, kept in the state file, again after a restart
"$G" vgpu create made device=0 compute=10 memory=1% "cgroup=$REL/job_77/" || fail "vgpu create with cgroup"
served "$D/job_77" made
refused "$D/job_7" made "is in $REL/job_7, outside $REL/job_77/"
$PY -c "
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if [e['keys'].get('cgroup') for e in d['created']] == [sys.argv[2]] else 1)" "$T/state.json" "$REL/job_77/" ||
    fail "the state file does not keep the binding: $(cat "$T/state.json")"
$PY tests/schema_check.py schemas/vgpu-state.schema.json "$T/state.json" >/dev/null 2>&1 ||
    fail "state file against its schema: $($PY tests/schema_check.py schemas/vgpu-state.schema.json "$T/state.json" 2>&1)"
stop_daemon
start_daemon "$(cat "$T/conf" | sed 1d)"
refused "$D/job_7" made "is in $REL/job_7, outside $REL/job_77/"
served "$D/job_77" made

# a list: inside any of them
"$G" vgpu create two device=0 compute=10 memory=1% "cgroup=/gpuos-nowhere-$$ $REL/other" || fail "vgpu create with a list"
served "$D/other" two
refused "$D/job_7" two "is in $REL/job_7, outside /gpuos-nowhere-$$ $REL/other"
"$G" vgpu delete two

# v1: the freezer hierarchy
if [ -n "$FZ" ]; then
    "$G" vgpu create fz device=0 compute=10 memory=1% "cgroup=freezer:$FREL/job_7" || fail "vgpu create freezer:"
    served "$FZ$FREL/job_7 $D/other" fz
    refused "$D/job_7" fz "is in freezer:/, outside freezer:$FREL/job_7"
else
    echo "t_vgpu_cgroup: no v1 freezer hierarchy here: the v1 form untested"
fi

# bad values: one line, nothing made
for bad in "job_7" "/a/../b" "/a b" "Freezer:/a" ":/a"; do
    out=$("$G" vgpu create bad device=0 compute=10 memory=1% "cgroup=$bad" 2>&1) && fail "cgroup=$bad accepted"
    [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "cgroup \"$bad\"" || fail "cgroup=$bad: $out"
done
out=$("$G" vgpu create bad device=0 compute=10 memory=1% "cgroup= " 2>&1) && fail "an empty cgroup= accepted"
echo "$out" | grep -q "cgroup = needs at least one /PATH or CONTROLLER:/PATH" || fail "cgroup= (empty): $out"
[ -z "$(vgpu_field bad name)" ] || fail "a vGPU with a bad cgroup was made"
printf 'socket = %s/s2\n[device 0]\nsim = default\n[vgpu x]\ncgroup = rel/x\n' "$T" > "$T/bad.conf"
out=$("$G" serve --config "$T/bad.conf" 2>&1) && fail "a file with cgroup = rel/x started"
echo "$out" | grep -q "bad.conf:5: .*cgroup \"rel/x\" must be a path" || fail "cgroup = rel/x in a file: $out"
stop_daemon
echo ok
