#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_check.sh: `gpuos serve --check [--config FILE]` (issue 43.4) validates a
# configuration without starting anything:
#   - every shipped example (dist/gpuos.conf, the example in `gpuos serve --help`)
#     is valid: exit 0, one line naming the file and its devices and vGPUs, and
#     no socket is created;
#   - broken files: exit 1 and exactly the one line the daemon prints when it is
#     started with the same file (file:line and the problem);
#   - without --config it reads the one default path, SYSCONFDIR/gpuos/gpuos.conf
#     (mk/install.mk), and says so when it is missing;
#   - --check with --socket or --sim is a usage error (exit 2).
set -u
G=${GPUOS:-${BUILD:-build}/gpuos}
T=$(mktemp -d)
MADE_GROUP=
cleanup() { [ -n "$MADE_GROUP" ] && groupdel "$MADE_GROUP" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the shipped example names the tenants' group, which make install creates
if ! getent group gpuos-users >/dev/null; then
    if [ "$(id -u)" = 0 ] && groupadd -r gpuos-users 2>/dev/null; then
        MADE_GROUP=gpuos-users
    else # not root: the example's file:line error for the missing group, then a copy with the caller's group
        out=$("$G" serve --check --config dist/gpuos.conf 2>&1); rc=$?
        n=$(grep -n '^socket_group' dist/gpuos.conf | cut -d: -f1)
        [ $rc -eq 1 ] && [ "$out" = "gpuos: dist/gpuos.conf:$n: unknown group \"gpuos-users\"" ] ||
            fail "example without its group: rc $rc: $out"
    fi
fi
if getent group gpuos-users >/dev/null; then EX=dist/gpuos.conf; else
    EX="$T/gpuos.conf"; sed "s/^socket_group = .*/socket_group = $(id -g)/" dist/gpuos.conf > "$EX"
fi
sed "s|^socket = .*|socket = $T/ex.sock|" "$EX" > "$T/ex.conf"
out=$("$G" serve --check --config "$T/ex.conf" 2>"$T/err") || fail "the shipped example: $(cat "$T/err")"
[ "$out" = "$T/ex.conf: valid (1 device, 2 vGPUs)" ] && [ ! -s "$T/err" ] || fail "the shipped example: $out $(cat "$T/err")"
[ -e "$T/ex.sock" ] && fail "--check created the socket"
# the example of serve --help
"$G" serve --help | sed -n '/^example configuration:/,/^(every key/p' | sed '1d;$d' | sed 's/^  //' > "$T/help.conf"
[ "$(wc -l < "$T/help.conf")" -ge 10 ] || fail "no example in serve --help"
sed -i "s/^users = .*/users = $(id -u)/" "$T/help.conf"
out=$("$G" serve --check --config "$T/help.conf" 2>&1) || fail "serve --help's example: $out"
echo "$out" | grep -q ": valid (1 device, 2 vGPUs)$" || fail "serve --help's example: $out"
echo "ok   shipped examples valid (dist/gpuos.conf, serve --help)"

# broken files: the daemon's own line, exit 1
i=0
while IFS='|' read -r want body; do
    i=$((i + 1))
    printf "socket = $T/b$i.sock\n$body\n" > "$T/b$i.conf"
    out=$("$G" serve --check --config "$T/b$i.conf" 2>&1); rc=$?
    [ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "broken $i: rc $rc: $out"
    echo "$out" | grep -q "^gpuos: $T/b$i.conf:[0-9]*: $want" || fail "broken $i: $out (want $want)"
    daemon=$(timeout 20 "$G" serve --config "$T/b$i.conf" --sim default 2>&1); rc=$?
    [ $rc -eq 1 ] && [ "$daemon" = "$out" ] || fail "broken $i: the daemon says \"$daemon\" (rc $rc), --check \"$out\""
    [ -e "$T/b$i.sock" ] && fail "broken $i: socket created"
done <<'EOF2'
policy must be fifo, credit or band|[device 0]\npolicy = bogus
compute share must be 1..100|[device 0]\nsim = default\n[vgpu a]\ncompute = 150
unknown group "no-such-group-43"|socket_group = no-such-group-43\n[device 0]
socket_group takes one group|socket_group = a, b\n[device 0]
socket_mode must be octal|socket_mode = rw\n[device 0]
unknown key|frobnicate = 1\n[device 0]
chunk must be a size|chunk = 3Q\n[device 0]
EOF2
echo "ok   $i broken files: exit 1 and the daemon's own file:line error"

# one default path; --check starts nothing, so no --socket or --sim
out=$("$G" serve --check 2>&1); rc=$?
def=$(echo "$out" | sed -n 's/^gpuos: no configuration at \(.*\), the default .*/\1/p')
if [ -f "$def" ]; then
    [ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "serve --check of $def: rc $rc"
else
    [ $rc -eq 1 ] && [ -n "$def" ] || fail "serve --check without a default file: rc $rc: $out"
    case "$def" in */gpuos/gpuos.conf) ;; *) fail "the default is not SYSCONFDIR/gpuos/gpuos.conf: $def" ;; esac
fi
out=$("$G" serve --check --config "$T/ex.conf" --socket "$T/x" 2>&1); [ $? -eq 2 ] || fail "--check --socket: $out"
out=$("$G" serve --check --config "$T/ex.conf" --sim default 2>&1); [ $? -eq 2 ] || fail "--check --sim: $out"
out=$("$G" serve --check --config "$T/missing.conf" 2>&1); [ $? -eq 1 ] && echo "$out" | grep -q "missing.conf" ||
    fail "--check of a missing file: $out"
echo "ok   default ${def:-(present)}; --check refuses --socket and --sim"
echo "t_serve_check: ok"
