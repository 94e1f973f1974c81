#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/bypass.sh: the daemon as the only way to the GPU (issue 9, README
# "Bypass"). The operator's recipe is a group (here gid 4242) owning /dev/nvidia*
# with mode 0660, the daemon's user in it, tenants not. Shown WITHOUT touching
# the machine's real device nodes: in a private mount namespace a tmpfs covers
# /dev and holds copies of the nvidia nodes (same major/minor, root:4242, 0660);
# there a tiny Driver-API program (build/tests/ctx_probe: cuInit, cuDeviceGet,
# cuCtxCreate) runs as an unprivileged user (setpriv), once without the group
# (must fail) and once with it (must succeed). Needs root. Exit 0 when both hold.
set -u
B=${BUILD:-build}
[ "$(id -u)" = 0 ] || { echo "SKIP bypass: needs root (mount namespace, mknod)"; exit 0; }
ls /dev/nvidia* >/dev/null 2>&1 || { echo "SKIP bypass: no /dev/nvidia* here"; exit 0; }
P=/tmp/gpuos-ctx-probe.$$
cp "$B/tests/ctx_probe" "$P" && chmod 755 "$P"
NODES=$(mktemp)
# name, major, minor (hex), of every nvidia character device (nvidia-caps too)
find /dev -maxdepth 2 -name 'nvidia*' -type c -exec stat -c '%n %t %T' {} \; > "$NODES"
chmod 644 "$NODES"
out=$(unshare -m sh -c '
set -e
NODES=$1 P=$2
mount --make-rprivate / 2>/dev/null || true
mount -t tmpfs -o mode=755 gpuos-dev /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5; mknod -m 666 /dev/urandom c 1 9
mkdir -m 1777 /dev/shm
while read -r n ma mi; do
    mkdir -p "$(dirname "$n")"
    mknod "$n" c "$((0x$ma))" "$((0x$mi))"
    chown root:4242 "$n"; chmod 0660 "$n"
done < "$NODES"
echo "nodes: $(ls -l /dev/nvidia* 2>/dev/null | head -3 | tr -s " " | cut -d" " -f1,3,4,10 | tr "\n" ";")"
if setpriv --reuid=65534 --regid=65534 --clear-groups "$P"; then echo "TENANT-OK"; else echo "TENANT-REFUSED"; fi
if setpriv --reuid=65534 --regid=65534 --groups=4242 "$P"; then echo "DAEMONUSER-OK"; else echo "DAEMONUSER-REFUSED"; fi
' sh "$NODES" "$P" 2>&1)
rm -f "$P" "$NODES"
echo "$out" | sed 's/^/    /'
fail=0
echo "$out" | grep -q TENANT-REFUSED || { echo "FAIL bypass: a process outside the group created a CUDA context"; fail=1; }
echo "$out" | grep -q DAEMONUSER-OK || { echo "FAIL bypass: a member of the group could not create a context"; fail=1; }
[ $fail = 0 ] && echo "ok   bypass: outside the group no CUDA context, inside the group a context"
exit $fail
