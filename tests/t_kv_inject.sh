#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_kv_inject.sh: key injection through a control character (issue 44.7) at
# every entry point where key=value text becomes a vGPU's configuration lines,
# on the simulated device:
#  - the CLI: `vgpu create NAME ... users=$'0\ncompute=100'` (and \r, \t, \001,
#    DEL), `vgpu set NAME compute=$'10\ncopy=100'`, a NAME holding a newline
#    (create, set, delete, `shm rm --vgpu`): refused in one line, exit 2,
#    nothing made or changed (f2db5de made the vGPU with compute 100);
#  - the daemon, for clients that bypass the CLI (hostile_client, libgpuos): keys
#    whose lines repeat a key (what a newline inside a value becomes), a key or
#    value holding \r, a `vgpu set` value holding \r: refused, nothing made;
#  - the state file: a created vGPU whose key holds a newline stops the start
#    with one line naming the character;
#  - a clean create still works with the shares it names.
# (An embedded NUL on the wire: tests/test_proto.c.)
set -u
. tests/serve_lib.sh
conf="state = $T/state.json
[device 0]
sim = default
[vgpu a]
compute = 20
memory = 20%"
start_daemon "$conf"
NL=$(printf '\nx'); NL=${NL%x}

# the CLI: each control character inside a value, in a key, in the name
for pair in 0x0a 0x0d 0x09 0x01 0x7f; do
    case $pair in
    0x0a) c=$NL ;; 0x0d) c=$(printf '\r') ;; 0x09) c=$(printf '\t') ;; 0x01) c=$(printf '\001') ;; *) c=$(printf '\177') ;;
    esac
    expect_fail "control character $pair at byte 7" "$G" vgpu create x compute=10 memory=1% "users=0${c}compute=100"
    expect_fail "control character $pair at byte 0" "$G" vgpu create x compute=10 memory=1% "${c}copy=100"
    expect_fail "control character $pair" "$G" vgpu set a "compute=10${c}copy=100"
done
[ -z "$(vgpu_field x name)" ] || fail "an injected create made x: compute $(vgpu_field x compute_share)"
[ "$(vgpu_field a compute_share)" = 20 ] && [ "$(vgpu_field a copy_share)" = 20 ] ||
    fail "an injected set changed a: $(vgpu_field a compute_share)/$(vgpu_field a copy_share)"
expect_fail 'argument "users=0\ncompute=100": control character 0x0a' \
    "$G" vgpu create x compute=10 memory=1% "users=0${NL}compute=100"
expect_fail "control character 0x0a" "$G" vgpu create "x${NL}y" compute=10 memory=1%
expect_fail "control character 0x0a" "$G" vgpu set "a${NL}b" compute=10
expect_fail "control character 0x0a" "$G" vgpu delete "a${NL}b"
expect_fail "control character 0x0a" "$G" shm rm --vgpu "a${NL}b"
expect_fail "control character 0x0a" "$G" vgpu "set${NL}x" a compute=10
expect_fail "control character 0x0a" "$G" shm list --vgpu "a${NL}b"

# the daemon: a client that sends the text itself (through libgpuos)
H="$B/tests/hostile_client"
refused() { # WANT CMD ARGS...: hostile_client says rc<0 and WANT, on one line
    want=$1; shift
    r=$("$H" "$@" 2>&1)
    printf '%s\n' "$r" | grep -q "rc=-[0-9]* .*$want" || fail "daemon side $*: $r"
    [ "$(printf '%s\n' "$r" | wc -l)" = 1 ] || fail "daemon side $*: more than one line: $r"
}
refused "key compute given twice" create y "compute=10${NL}memory=1%${NL}compute=100"
refused "key users given twice" create y "compute=10${NL}memory=1%${NL}users=0${NL}users=1"
refused "control character 0x0d" create y "compute=10${NL}memory=1%$(printf '\r')compute=100"
refused "control character 0x01" create y "compute=10${NL}mem$(printf '\001')ory=1%"
refused "control character 0x0d" set a compute "10$(printf '\r')copy=100"
refused "control character 0x0a" set a "comp${NL}ute" 10
[ -z "$(vgpu_field y name)" ] || fail "the daemon made y from injected keys"

# a clean create still does what it says
"$G" vgpu create ok compute=10 memory=1% users=0 || fail "a clean create"
[ "$(vgpu_field ok compute_share)" = 10 ] || fail "ok: compute $(vgpu_field ok compute_share)"
stop_daemon

# the state file: a created vGPU whose value holds a newline
cat > "$T/state.json" <<'JSON'
{"schema": "gpuos.vgpu-state/1", "overrides": [],
 "created": [{"vgpu": "z", "keys": {"device": "0", "compute": "10", "memory": "1%", "users": "0\ncompute=100"}}]}
JSON
out=$(timeout 20 "$G" serve --config "$T/conf" 2>&1) && fail "a state file with a newline in a key was accepted"
printf '%s\n' "$out" | grep -qF 'created vGPU 1: users "0\ncompute=100": control character 0x0a' ||
    fail "state file refusal: $out"
echo "t_kv_inject: ok"
