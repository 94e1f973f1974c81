#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_doctor.sh: one secure setup, checked by a command (issue 43.1). Device nodes
# made with mknod in a temporary directory (--dev) stand in for /dev/nvidia*
# (root:DG 0660, DG the daemon's group); a real `gpuos serve --sim default` runs
# as the daemon's user with socket_group = TG (the tenants' group): the socket
# must be DU:TG 0660. `gpuos doctor` must then say, by uid and groups alone:
#   - a tenant (in TG only): the nodes closed, the socket reachable, exit 0, also
#     when the tenant runs it itself (default: the caller);
#   - an outsider: the nodes closed, the socket not (what to change: usermod -aG TG),
#     exit 0;
#   - a tenant left in DG: FAIL naming the group and gpasswd -d, exit 1;
#   - root and the daemon's user: may open the nodes, exit 0;
#   - a node at 0666: FAIL for the tenant with the driver's module options and the
#     gid, exit 1, the other nodes still on their own "closed" line;
#   - a socket directory closed to the tenant, no socket: warned;
#   - bad input: one line, non-zero exit.
# Needs root (mknod, useradd, setpriv); skipped otherwise.
set -u
G=${GPUOS:-${BUILD:-build}/gpuos}
case "$G" in /*) ;; *) G="$PWD/$G" ;; esac
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
    echo "SKIP: t_doctor needs root, useradd and setpriv"; exit 0
fi
T=$(mktemp -d)
DPID= USERS= GROUPS_MADE=
cleanup() {
    [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    for u in $USERS; do userdel "$u" 2>/dev/null; done
    for g in $GROUPS_MADE; do groupdel "$g" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && sed 's/^/    doctor: /' "$T/out"; exit 1; }
chmod 755 "$T"
n=$$; DG=gdd$n TG=gdt$n DU=gdu$n TU=gdn$n OU=gdo$n BU=gdb$n
groupadd "$DG" && GROUPS_MADE="$DG" && groupadd "$TG" && GROUPS_MADE="$DG $TG" || fail "groupadd"
useradd -M -N -g "$DG" -G "$TG" -s /usr/sbin/nologin "$DU" && USERS="$DU" &&
    useradd -M -N -g users -G "$TG" -s /bin/sh "$TU" && USERS="$USERS $TU" &&
    useradd -M -N -g users -s /bin/sh "$OU" && USERS="$USERS $OU" &&
    useradd -M -N -g users -G "$TG,$DG" -s /bin/sh "$BU" && USERS="$USERS $BU" || fail "useradd"
as() { u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@"; }

D="$T/dev"
mkdir -p "$D/nvidia-caps"
mknod "$D/nvidiactl" c 195 255 && mknod "$D/nvidia0" c 195 0 && mknod "$D/nvidia-uvm" c 510 0 &&
    mknod "$D/nvidia-caps/nvidia-cap1" c 511 1 || fail "mknod"
touch "$D/nvidia-notanode"; chmod 666 "$D/nvidia-notanode" # a regular file: not a device node
mknod "$D/null" c 1 3; chmod 666 "$D/null"                 # not NVIDIA's
chown root:"$DG" "$D/nvidiactl" "$D/nvidia0" "$D/nvidia-uvm" "$D/nvidia-caps/nvidia-cap1"
chmod 0660 "$D/nvidiactl" "$D/nvidia0" "$D/nvidia-uvm" "$D/nvidia-caps/nvidia-cap1"
NODES="$D/nvidia-caps/nvidia-cap1, $D/nvidia-uvm, $D/nvidia0, $D/nvidiactl"

# the daemon, as its user, giving the socket to the tenants' group
mkdir "$T/run" "$T/d"
printf 'socket_mode = 0660\nsocket_group = %s\n[device 0]\nsim = default\n[vgpu a]\ncompute = 50\nmemory = 10%%\n' "$TG" > "$T/d/gpuos.conf"
chown "$DU:$DG" "$T/run" "$T/d" "$T/d/gpuos.conf"
S="$T/run/gpuos.sock"
setpriv --reuid="$DU" --regid="$DG" --init-groups -- "$G" serve --config "$T/d/gpuos.conf" --socket "$S" \
    >/dev/null 2>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$S" ]; do
    i=$((i + 1)); { [ $i -gt 100 ] || ! kill -0 "$DPID" 2>/dev/null; } && fail "daemon: $(cat "$T/serve.log")"; sleep 0.1
done
[ "$(stat -c '%U:%G %a' "$S")" = "$DU:$TG 660" ] || fail "socket_group: the socket is $(stat -c '%U:%G %a' "$S")"

doc() { # EXIT-STATUS [ARGS]: gpuos doctor on the nodes and the socket, its output in $T/out
    want=$1; shift
    "$G" doctor --dev "$D" --socket "$S" "$@" > "$T/out" 2>&1; rc=$?
    [ $rc -eq "$want" ] || fail "doctor $*: exit $rc, not $want"
}
has() { grep -qxF -- "$1" "$T/out" || fail "no line: $1"; }

doc 0 --user "$TU"
grep -q "^gpuos doctor: user $TU (uid $(id -u "$TU"); groups users, $TG)$" "$T/out" || fail "tenant: header"
has "ok    $NODES: closed to $TU (root:$DG 0660)"
has "ok    $S: $TU may connect ($DU:$TG 0660)"
has "$TU uses the GPU through gpuos only"
grep -q -e notanode -e /null "$T/out" && fail "a file that is not an NVIDIA device node was checked"
# the tenant itself, no --user: the caller
as "$TU" "$G" doctor --dev "$D" --socket "$S" > "$T/out2" 2>&1 || fail "tenant as itself: exit $?"
grep -v '^gpuos doctor: user' "$T/out" > "$T/a"; grep -v '^gpuos doctor: user' "$T/out2" > "$T/b"
cmp -s "$T/a" "$T/b" || fail "the tenant as itself differs: $(diff "$T/a" "$T/b")"
grep -q "^gpuos doctor: user $TU " "$T/out2" || fail "the caller is not the default"
echo "ok   tenant: GPU closed, socket reachable (by --user and as itself)"

doc 0 --user "$OU"
has "ok    $NODES: closed to $OU (root:$DG 0660)"
has "warn  $S: $OU cannot connect ($DU:$TG 0660): usermod -aG $TG $OU, then log in again"
has "$OU cannot use the GPU (neither past gpuos nor through it)"
as "$OU" env GPUOS_SOCKET="$S" "$G" vgpu list >/dev/null 2>&1 && fail "the outsider could list the vGPUs"
echo "ok   outsider: GPU closed, socket refused, what to change"

doc 1 --user "$BU"
has "FAIL  $NODES: $BU is in group $DG, which opens them (root:$DG 0660): it reaches the GPU past the daemon; gpasswd -d $BU $DG (tenants belong in the socket's group only)"
has "$BU reaches the GPU past gpuos: fix the FAIL lines"
echo "ok   tenant left in the daemon's group: FAIL, exit 1"

doc 0
has "ok    $NODES: root opens them (root:$DG 0660; root is trusted: --user NAME checks a tenant)"
doc 0 --user "$(id -u "$DU")"
has "ok    $NODES: $DU, the daemon's user, opens them (root:$DG 0660)"
has "$DU is the daemon's user: it alone should open the GPU"
echo "ok   root and the daemon's user (by uid) may open the GPU"

chmod 0666 "$D/nvidia0"
gid=$(getent group gpuos | cut -d: -f3); [ -n "$gid" ] || gid=$(getent group "$DG" | cut -d: -f3)
doc 1 --user "$TU"
has "FAIL  $D/nvidia0: open to everyone (root:$DG 0666): $TU reaches the GPU past the daemon; make them root:gpuos 0660: the udev rule 70-gpuos-nvidia.rules and, in /etc/modprobe.d/gpuos-nvidia.conf, options nvidia NVreg_DeviceFileUID=0 NVreg_DeviceFileGID=$gid NVreg_DeviceFileMode=0660"
has "ok    $D/nvidia-caps/nvidia-cap1, $D/nvidia-uvm, $D/nvidiactl: closed to $TU (root:$DG 0660)"
chmod 0660 "$D/nvidia0"
echo "ok   a node open to everyone: FAIL with the module options, exit 1"

chmod 0700 "$T/run"
doc 0 --user "$TU"
has "warn  $S: $TU cannot reach it: the directory $T/run is closed to it ($DU:$DG 0700)"
chmod 0755 "$T/run"
"$G" doctor --dev "$D" --socket "$T/none.sock" --user "$TU" > "$T/out" 2>&1 || fail "no socket: exit $?"
has "warn  $T/none.sock: no socket there (gpuos serve is not running, or serves another: --socket PATH)"
mkdir "$T/empty"
"$G" doctor --dev "$T/empty" --socket "$S" --user "$TU" > "$T/out" 2>&1 || fail "no nodes: exit $?"
has "warn  $T/empty: no NVIDIA device nodes (no driver loaded here?)"
echo "ok   socket directory closed, no socket, no device nodes: warned"

for args in "--user no-such-user-43" "--dev $T/nowhere" "--dev $D/nvidia0" "extra" "--user"; do
    out=$("$G" doctor $args 2>&1) && fail "doctor $args: exit 0"
    [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "doctor $args: not one line: $out"
done
kill -TERM "$DPID"; wait "$DPID"; DPID=
echo "t_doctor: ok"
