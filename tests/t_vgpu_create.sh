#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_vgpu_create.sh: vGPUs made and removed at run time (issue 25), on the
# simulated device:
#  - `gpuos vgpu create` adds a listed vGPU with its shares; bad keys, a taken
#    name, memory shares past the device, another uid are refused with one line;
#  - users = admits only the listed uid (another uid's HELLO is refused);
#  - `vgpu delete` refuses while a client is attached, --force ends it with an
#    error naming the deletion; a file vGPU cannot be deleted;
#  - created vGPUs are in the state file, survive a restart; `vgpu set` on one
#    changes its kept definition; a reload whose file names one makes it the
#    file's (the file's values win, it leaves the state file), as does a
#    restart with the file naming one; a reload whose
#    memory shares pass the device with the created ones is rejected;
#  - 70 create/delete rounds reuse the table's slots (64 at most);
#  - a configuration of devices alone starts with no vGPU; one created works.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: $(basename "$0") needs root (clients of other uids, setpriv)"; exit 0; }
. tests/serve_lib.sh
AS_NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
field() { # NAME FIELD from the state file's created entry
    $PY -c "
import json, sys
d = json.load(open(sys.argv[1]))
for e in d.get('created', []):
    if e['vgpu'] == sys.argv[2]: print(e['keys'].get(sys.argv[3], '')); break
else: print('absent')" "$T/state.json" "$1" "$2"
}
conf="state = $T/state.json
socket_mode = 0666
[device 0]
sim = default
[vgpu a]
compute = 20
memory = 20%"
chmod 755 "$T"
start_daemon "$conf"

"$G" vgpu create b device=0 compute=30 memory=30% users=0 || fail "create b"
[ "$(vgpu_field b compute_share)" = 30 ] || fail "b compute share $(vgpu_field b compute_share)"
[ "$(vgpu_field b copy_share)" = 30 ] || fail "b copy share (defaults to compute)"
[ "$(vgpu_field b mem_share)" = 30 ] || fail "b memory share $(vgpu_field b mem_share)"
[ "$(field b memory)" = "30%" ] && [ "$(field b users)" = 0 ] || fail "b not in the state file: $(cat "$T/state.json")"

# refusals: one line each, non-zero exit, nothing made
expect_fail 'vGPU b exists (made by `vgpu create`)' "$G" vgpu create b compute=10 memory=1%
expect_fail "vGPU a exists (in the configuration file)" "$G" vgpu create a compute=10 memory=1%
expect_fail "memory shares of device 0 sum to" "$G" vgpu create c compute=10 memory=60%
expect_fail 'unknown key "color"' "$G" vgpu create c compute=10 memory=1% color=red
expect_fail "compute=PCT is needed" "$G" vgpu create c memory=1%
expect_fail "memory=PCT%|SIZE is needed" "$G" vgpu create c compute=5
expect_fail "this daemon has no [device 7]" "$G" vgpu create c device=7 compute=5 memory=1%
expect_fail "must be 1..100" "$G" vgpu create c compute=0 memory=1%
expect_fail 'unknown user "no-such-user-x"' "$G" vgpu create c compute=5 memory=1% users=no-such-user-x
expect_fail "must be 1..63 letters" "$G" vgpu create 'c]x' compute=5 memory=1%
expect_fail "spatial vGPUs are made only from the configuration file" "$G" vgpu create c compute=5 memory=1% sms=8
GO=$(for_others "$G") || fail "copy of gpuos for nobody"
expect_fail "or root may create vGPUs" $AS_NOBODY "$GO" vgpu create c compute=5 memory=1%
expect_fail "or root may delete vGPUs" $AS_NOBODY "$GO" vgpu delete b
expect_fail "is defined in $T/conf" "$G" vgpu delete a
expect_fail 'no vGPU named "zz"' "$G" vgpu delete zz
[ "$(vgpu_field c name)" = "" ] || fail "a refused create left vGPU c"

# users = 0: root's; nobody is refused
out=$($AS_NOBODY timeout 20 "$C" info b 2>&1) && fail "nobody opened b (users = 0): $out"
echo "$out" | grep -q 'vGPU "b" is not open to uid 65534' || fail "refusal of nobody on b: $out"

# delete: refused with a client, --force ends it naming the deletion
timeout 30 "$C" hold b 1048576 20 >"$T/hold.out" 2>&1 &
HP=$!
wait_field b clients 1
expect_fail "vGPU b has 1 client attached (pid " "$G" vgpu delete b
timeout 30 "$C" owner b 4096 20 "$T/owner.addr" >"$T/owner.out" 2>&1 &
OP=$!
i=0; while [ ! -s "$T/owner.addr" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "owner did not start"; sleep 0.1; done
"$G" vgpu delete b --force || fail "delete --force"
wait "$OP" && fail "the client of a force-deleted vGPU went on: $(cat "$T/owner.out")"
grep -q "vGPU b was deleted (gpuos vgpu delete --force)" "$T/owner.out" || fail "client's error: $(cat "$T/owner.out")"
[ "$(vgpu_field b name)" = "" ] || fail "deleted b still listed"
[ "$(field b memory)" = absent ] || fail "deleted b still in the state file"
out=$(timeout 20 "$C" info b 2>&1) && fail "opened deleted b: $out"
echo "$out" | grep -q 'no vGPU named "b"' || fail "HELLO to deleted b: $out"
kill "$HP" 2>/dev/null; wait "$HP" 2>/dev/null
"$G" vgpu create b compute=30 memory=30% || fail "create b again after its deletion"

# slots are reused: 70 rounds on a table of 64
i=0
while [ $i -lt 70 ]; do
    "$G" vgpu create "r$i" compute=5 memory=1% >/dev/null || fail "round $i: create"
    "$G" vgpu delete "r$i" >/dev/null || fail "round $i: delete"
    i=$((i + 1))
done

# a restart keeps created vGPUs; vgpu set changes the kept definition
"$G" vgpu create d compute=10 memory=10% || fail "create d"
"$G" vgpu set d compute=15 || fail "set d"
[ "$(field d compute)" = 15 ] || fail "vgpu set d not kept: $(cat "$T/state.json")"
stop_daemon
"$G" serve --config "$T/conf" --verbose 2>>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/s" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "no restart"; sleep 0.1; done
[ "$(vgpu_field d compute_share)" = 15 ] && [ "$(vgpu_field b mem_share)" = 30 ] || fail "created vGPUs lost at restart"
$PY tests/schema_check.py schemas/vgpu-state.schema.json "$T/state.json" >/dev/null 2>&1 ||
    fail "state file against its schema: $($PY tests/schema_check.py schemas/vgpu-state.schema.json "$T/state.json" 2>&1)"

# a reload's memory check counts the created vGPUs: a (20) + b (30) + d (10) + 60 > 100
printf '%s\n[vgpu e]\ncompute = 5\nmemory = 60%%\n' "socket = $T/s
$conf" > "$T/conf"
kill -HUP "$DPID"
i=0; until grep -q "reload rejected: .*memory shares of device 0 sum to 120" "$T/serve.log"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "a reload past the memory with created vGPUs was not rejected"; sleep 0.1
done
[ -z "$(vgpu_field e name)" ] || fail "the rejected reload added e"

# the file names d: its section wins at a reload
printf '%s\n[vgpu d]\ncompute = 25\nmemory = 5%%\n' "socket = $T/s
$conf" > "$T/conf"
kill -HUP "$DPID"
wait_field d compute_share 25
[ "$(field d compute)" = absent ] || fail "d still in the state file after the file took it"
grep -q "vGPU d (made by \`vgpu create\`) is now in the configuration file" "$T/serve.log" || fail "takeover not logged"
expect_fail "is defined in $T/conf" "$G" vgpu delete d
[ "$(vgpu_field b compute_share)" = 30 ] || fail "created b lost at a reload"
stop_daemon

# the file names b while the daemon is down: at the restart its section wins
printf '%s\n[vgpu d]\ncompute = 25\nmemory = 5%%\n[vgpu b]\ncompute = 35\nmemory = 5%%\n' "socket = $T/s
$conf" > "$T/conf"
"$G" serve --config "$T/conf" --verbose 2>>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/s" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "no restart with b in the file"; sleep 0.1; done
[ "$(vgpu_field b compute_share)" = 35 ] && [ "$(vgpu_field b mem_share)" = 5 ] || fail "b at restart: $("$G" vgpu list)"
[ "$(field b compute)" = absent ] || fail "b still in the state file after a restart with b in the file"
grep -q "state file: vGPU b (made by \`vgpu create\`) is now in the configuration file" "$T/serve.log" ||
    fail "restart takeover not logged"
stop_daemon

# devices alone (a Slurm node's configuration): no vGPU until one is created
rm -f "$T/state.json"
start_daemon "state = $T/state.json
[device 0]
sim = default"
[ "$("$G" vgpu list | wc -l)" = 1 ] || fail "a daemon of no vGPUs lists: $("$G" vgpu list)"
"$G" vgpu create j compute=100 memory=100% || fail "create on a daemon of no vGPUs"
timeout 20 "$C" copy j 1048576 >/dev/null 2>&1 || fail "copies on created vGPU j"
stop_daemon
echo "ok"
