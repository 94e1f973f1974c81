#!/bin/sh
# t_kv_inject.sh: key injection through a control character (issue 44.7) at
# every entry point where key=value text becomes a vGPU's configuration lines,
# on the simulated device:
#  - the CLI: `vgpu create NAME ... users=$'0\ncompute=100'` (and \r, \t, \001,
#    DEL), `vgpu set NAME compute=$'10\ncopy=100'`, a NAME holding a newline
#    (create, set, delete, `shm rm --vgpu`): refused in one line, exit 2,
#    nothing made or changed (f2db5de made the vGPU with compute 100);
#  - the daemon, for clients that bypass the CLI (libgpuos through ctypes): keys
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

# the daemon: a client that sends the text itself
$PY - "$B/libgpuos.so.1" "$T/s" <<'PY' || fail "daemon side (above)"
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.gpuos_error.restype = ctypes.c_char_p
sock = sys.argv[2].encode()
bad = 0
for keys, want in [(b"compute=10\nmemory=1%\ncompute=100", b"key compute given twice"),
                   (b"compute=10\nmemory=1%\nusers=0\nusers=1", b"key users given twice"),
                   (b"compute=10\nmemory=1%\rcompute=100", b"control character 0x0d"),
                   (b"compute=10\nmem\x01ory=1%", b"control character 0x01")]:
    rc = lib.gpuos_admin_create(sock, b"y", keys)
    err = lib.gpuos_error() or b""
    if rc == 0 or want not in err or b"\n" in err:
        print("FAIL: create %r: rc %d, %r" % (keys, rc, err)); bad = 1
for key, value in [(b"compute", b"10\rcopy=100"), (b"comp\nute", b"10")]:
    rc = lib.gpuos_admin_set(sock, b"a", key, value)
    err = lib.gpuos_error() or b""
    if rc == 0 or b"control character" not in err:
        print("FAIL: set %r=%r: rc %d, %r" % (key, value, rc, err)); bad = 1
sys.exit(bad)
PY
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
