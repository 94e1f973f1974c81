#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_ops.sh: `gpuos serve` as a system daemon (issue 14): the default socket
# under /run/gpuos and its directory (created 0755, refused when anyone may
# replace the socket, a clear error when not writable), $GPUOS_SOCKET shared by
# the daemon and the clients, sd_notify READY/RELOADING/STOPPING received on a
# real notify socket, log priorities under journald ($JOURNAL_STREAM) and
# --log-level, the hint to --sim without a GPU, per-vGPU users/groups checked
# against the peer's credentials with two uids, human units in `vgpu list`.
set -u
. tests/serve_lib.sh

# waits up to 10 s for PATTERN in FILE
wait_grep() {
    i=0
    while ! grep -q "$1" "$2" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 100 ] && { cat "$2"; fail "no \"$1\" in $2"; }
        sleep 0.1
    done
}

# --- the default socket, its directory, $GPUOS_SOCKET ---------------------------
"$G" serve --help | grep -q "/run/gpuos/gpuos.sock" || fail "serve --help does not name /run/gpuos/gpuos.sock"
out=$(env -u GPUOS_SOCKET "$G" vgpu list 2>&1) && fail "vgpu list without a daemon succeeded"
echo "$out" | grep -q "cannot reach gpuos serve at /run/gpuos/gpuos.sock" || fail "client default socket: $out"

printf '[device 0]\nsim = default\n[vgpu a]\nmemory = 64M\n' > "$T/nosock.conf"
# no socket = in the file: $GPUOS_SOCKET decides, its missing directory is created 0755
GPUOS_SOCKET="$T/run/gpuos.sock" "$G" serve --config "$T/nosock.conf" 2>>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/run/gpuos.sock" ]; do i=$((i+1)); [ $i -gt 100 ] && fail "daemon on \$GPUOS_SOCKET"; sleep 0.1; done
[ "$(stat -c %a "$T/run")" = 755 ] || fail "socket directory mode $(stat -c %a "$T/run"), expected 755"
GPUOS_SOCKET="$T/run/gpuos.sock" "$G" vgpu list >"$T/list" || fail "vgpu list through \$GPUOS_SOCKET"
grep -q "^a " "$T/list" || fail "vgpu list: $(cat "$T/list")"
kill -TERM $DPID; wait $DPID; DPID=
[ ! -e "$T/run/gpuos.sock" ] || fail "socket left behind"

mkdir -m 777 "$T/open"; chmod 777 "$T/open"
out=$("$G" serve --config "$T/nosock.conf" --socket "$T/open/s" 2>&1) && fail "socket in a world-writable directory"
echo "$out" | grep -q "writable by anyone without the sticky bit" || fail "world-writable message: $out"
out=$("$G" serve --config "$T/nosock.conf" --socket "$T/file/x/s" 2>&1) && fail "socket under a missing parent"
echo "$out" | grep -q "cannot create the socket's directory $T/file/x" || fail "missing parent message: $out"
if [ "$(id -u)" = 0 ]; then
    chmod 755 "$T"; mkdir -m 755 "$T/rootdir"
    GO=$(for_others "$G") || fail "copy of gpuos for nobody"
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$GO" serve --config "$T/nosock.conf" \
          --socket "$T/rootdir/s" 2>&1) && fail "daemon of uid nobody wrote into a root directory"
    echo "$out" | grep -q "cannot create the socket in $T/rootdir: Permission denied" || fail "not writable: $out"
    echo "$out" | grep -q "RuntimeDirectory=gpuos" || fail "not writable hint: $out"
fi

# --- no GPU: a hint to --sim (skipped where a GPU is present) -----------------------
printf '[device 0]\n[vgpu a]\n' > "$T/gpu.conf"
out=$(timeout 10 "$G" serve --config "$T/gpu.conf" --socket "$T/gpu.sock" 2>&1); rc=$?
if echo "$out" | grep -q "no GPU"; then
    [ $rc -ne 0 ] || fail "serve without a GPU exited 0"
    echo "$out" | grep -q "pass --sim default" || fail "no hint to --sim: $out"
fi

# --- sd_notify on a real notify socket ------------------------------------------------
cat > "$T/notify.py" <<'PY'
import os, socket, sys
path, out, sock = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(60)
with open(out, "a", buffering=1) as f:
    f.write("LISTENING\n")
    while True:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            break
        for line in m.split("\n"):
            if line == "READY=1":  # the daemon must already accept connections
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    c.connect(sock)
                    line += " connect=ok"
                except OSError as e:
                    line += " connect=" + str(e)
                c.close()
            f.write(line + "\n")
        if "STOPPING=1" in m:
            break
PY
$PY "$T/notify.py" "$T/notify" "$T/notify.log" "$T/s" &
NP=$!
wait_grep LISTENING "$T/notify.log"
printf 'socket = %s\n[device 0]\nsim = default\n[vgpu a]\ncompute = 50\n' "$T/s" > "$T/conf"
NOTIFY_SOCKET="$T/notify" "$G" serve --config "$T/conf" 2>>"$T/serve.log" &
DPID=$!
wait_grep "READY=1" "$T/notify.log"
grep -q "READY=1 connect=ok" "$T/notify.log" || fail "READY=1 before the socket accepted: $(cat "$T/notify.log")"
grep -q "MAINPID=$DPID" "$T/notify.log" || fail "MAINPID: $(cat "$T/notify.log")"
kill -HUP $DPID
wait_grep "RELOADING=1" "$T/notify.log"
wait_grep "MONOTONIC_USEC=" "$T/notify.log"
i=0; while [ "$(grep -c '^READY=1' "$T/notify.log")" -lt 2 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no READY=1 after the reload: $(cat "$T/notify.log")"; sleep 0.1
done
# order: READY, RELOADING, READY
grep -oE '^(READY|RELOADING)=1' "$T/notify.log" | tr '\n' ' ' | grep -q "^READY=1 RELOADING=1 READY=1 $" ||
    fail "notify order: $(cat "$T/notify.log")"
kill -TERM $DPID; wait $DPID || fail "daemon exit status under NOTIFY_SOCKET"; DPID=
wait $NP
grep -q "^STOPPING=1" "$T/notify.log" || fail "no STOPPING=1: $(cat "$T/notify.log")"
# without NOTIFY_SOCKET nothing is sent and nothing fails (the other tests)

# --- log priorities ---------------------------------------------------------------
printf 'socket = %s\n[device 0]\nsim = default\n[vgpu a]\ncompute = 70\n[vgpu b]\ncompute = 40\n' "$T/s" > "$T/over.conf"
: > "$T/j.log"
JOURNAL_STREAM="$(stat -c %d:%i "$T/j.log")" "$G" serve --config "$T/over.conf" 2>>"$T/j.log" &
DPID=$!
wait_grep "listening on" "$T/j.log"
kill -TERM $DPID; wait $DPID; DPID=
grep -q "^<5>listening on $T/s" "$T/j.log" || fail "notice without <5>: $(cat "$T/j.log")"
grep -q "^<4>device 0: compute shares sum to 110 %, copy shares to 110 % at start: oversubscribed" "$T/j.log" ||
    fail "warning without <4>: $(cat "$T/j.log")"
grep -q "^<6>device 0: simulated" "$T/j.log" || fail "info without <6>: $(cat "$T/j.log")"
grep -v -q "^<[0-7]>" "$T/j.log" && fail "a journal line without a priority: $(cat "$T/j.log")"
# a start that fails says why at priority err
: > "$T/e.log"
JOURNAL_STREAM="$(stat -c %d:%i "$T/e.log")" "$G" serve --config "$T/bad-journal.conf" 2>>"$T/e.log" &&
    fail "daemon started without its configuration file"
grep -q "^<3>$T/bad-journal.conf: No such file" "$T/e.log" || fail "start failure in the journal: $(cat "$T/e.log")"
# JOURNAL_STREAM naming another stream (inherited, stderr redirected): plain lines
: > "$T/p.log"
JOURNAL_STREAM="$(stat -c %d:%i "$T/j.log")" "$G" serve --config "$T/over.conf" --log-level warning 2>>"$T/p.log" &
DPID=$!
wait_grep "oversubscribed" "$T/p.log"
GPUOS_SOCKET="$T/s" "$G" vgpu list >/dev/null || fail "daemon at --log-level warning"
kill -TERM $DPID; wait $DPID; DPID=
grep -q "^gpuos serve: warning: device 0: compute shares sum to 110 %" "$T/p.log" || fail "plain warning: $(cat "$T/p.log")"
grep -q "<[0-7]>" "$T/p.log" && fail "priority prefix outside the journal: $(cat "$T/p.log")"
grep -q "listening on" "$T/p.log" && fail "--log-level warning let a notice through: $(cat "$T/p.log")"
"$G" serve --config "$T/over.conf" --log-level loud >/dev/null 2>&1; [ $? -eq 2 ] || fail "--log-level loud not a usage error"
# a balanced configuration: no warning at all
printf 'socket = %s\n[device 0]\nsim = default\n[vgpu a]\ncompute = 60\n[vgpu b]\ncompute = 40\n' "$T/s" > "$T/bal.conf"
: > "$T/b.log"
"$G" serve --config "$T/bal.conf" 2>>"$T/b.log" &
DPID=$!
wait_grep "listening on" "$T/b.log"
kill -TERM $DPID; wait $DPID; DPID=
grep -q "warning" "$T/b.log" && fail "warning for shares adding up to 100 %: $(cat "$T/b.log")"

# --- users = / groups = against the peer's credentials -------------------------------
me=$(id -un)
start_daemon "socket_mode = 0666
[device 0]
sim = default
[vgpu mine]
compute = 30
memory = 64M
users = $me
[vgpu theirs]
compute = 30
memory = 64M
users = nobody
[vgpu grp]
compute = 30
memory = 64M
groups = nogroup
[vgpu open]
compute = 10
memory = 1G"
timeout 20 "$C" info mine >/dev/null || fail "vGPU mine refused to its user"
out=$(timeout 20 "$C" info theirs 2>&1) && fail "vGPU theirs opened by uid $(id -u)"
echo "$out" | grep -q "vGPU \"theirs\" is not open to uid $(id -u)" || fail "refusal message: $out"
echo "$out" | grep -q "it admits users 65534" || fail "refusal names who may: $out"
grep -q "refused: vGPU \"theirs\" is not open to uid $(id -u)" "$T/serve.log" || fail "refusal not logged"
timeout 20 "$C" copy open 100000 >/dev/null || fail "vGPU without users/groups refused"
if [ "$(id -u)" = 0 ]; then
    chmod 755 "$T"
    AS_NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
    GO=$(for_others "$G") || fail "copy of gpuos for nobody"
    $AS_NOBODY timeout 20 "$C" info theirs >"$T/out" 2>&1 || { cat "$T/out"; fail "vGPU theirs refused to nobody"; }
    $AS_NOBODY timeout 20 "$C" copy theirs 1000000 >"$T/out" 2>&1 || { cat "$T/out"; fail "copy as nobody"; }
    out=$($AS_NOBODY timeout 20 "$C" info mine 2>&1) && fail "vGPU mine opened by nobody"
    echo "$out" | grep -q "not open to uid 65534 gid 65534" || fail "refusal of nobody: $out"
    # groups: the primary group, then a supplementary one (SO_PEERGROUPS)
    $AS_NOBODY timeout 20 "$C" info grp >"$T/out" 2>&1 || { cat "$T/out"; fail "vGPU grp refused to group nogroup"; }
    setpriv --reuid=nobody --regid=4242 --groups=65534 timeout 20 "$C" info grp >"$T/out" 2>&1 ||
        { cat "$T/out"; fail "vGPU grp refused to a supplementary member of nogroup"; }
    out=$(setpriv --reuid=nobody --regid=4242 --clear-groups timeout 20 "$C" info grp 2>&1) &&
        fail "vGPU grp opened by a non-member"
    echo "$out" | grep -q "it admits groups 65534" || fail "group refusal: $out"
    out=$(timeout 20 "$C" info grp 2>&1) && fail "root opened vGPU grp (root is not exempt)"
    # vgpu set stays the owner's
    out=$($AS_NOBODY "$GO" vgpu set open compute=20 2>&1) && fail "nobody changed a share"
    echo "$out" | grep -q "only the daemon's owner" || fail "vgpu set as nobody: $out"
else
    echo "t_serve_ops: not root: the second uid is not tried"
fi

# --- human units in vgpu list ---------------------------------------------------------
"$G" vgpu list >"$T/list" || fail "vgpu list"
grep -q "^mine .* 0 B  *64.0 MiB  " "$T/list" || { cat "$T/list"; fail "human units: 64M"; }
grep -q "^open .* 1.0 GiB " "$T/list" || { cat "$T/list"; fail "human units: 1G"; }
"$G" vgpu list --bytes >"$T/list" || fail "vgpu list --bytes"
grep -q "^mine .*  *0  *67108864  " "$T/list" || { cat "$T/list"; fail "--bytes"; }
[ "$(vgpu_field open mem_quota)" = 1073741824 ] || fail "--json mem_quota not in bytes"
"$G" vgpu list --json - --bytes >/dev/null 2>&1 && fail "--json - --bytes accepted"
stop_daemon
echo "t_serve_ops: ok"
