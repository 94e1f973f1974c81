#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_reload.sh: SIGHUP reloads the configuration with clients connected and
# working (shares and memory shares changed, a vGPU added, vGPUs removed: the one
# with a client keeps serving it, new clients are refused), invalid files and
# impossible changes rejected with the line and reason while the old
# configuration stays in force; `vgpu set` persisted in the state file across
# restarts (the file's later changes win), a corrupt or unwritable state file is
# a clear error; oversubscribed shares warned of at start, reload and vgpu set.
set -u
. tests/serve_lib.sh

# conf BODY: rewrites $T/conf (socket line added), as start_daemon does
conf() { { echo "socket = $T/s"; echo "$1"; } > "$T/conf.new"; mv "$T/conf.new" "$T/conf"; }
# hup PATTERN: SIGHUP, then waits for the n-th "reload" line matching PATTERN
hup() {
    n=$(grep -c "$1" "$T/serve.log")
    kill -HUP "$DPID"
    i=0
    while [ "$(grep -c "$1" "$T/serve.log")" -le "$n" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "no \"$1\" after SIGHUP"
        sleep 0.1
    done
}
listed() { "$G" vgpu list --json - | $PY -c "import json,sys; print(' '.join(v['name'] for v in json.load(sys.stdin)['vgpus']))"; }

BASE="[device 0]
sim = default
[device 1]
sim = default"
start_daemon "$BASE
[vgpu a]
device = 0
compute = 50
memory = 64M
[vgpu b]
device = 0
compute = 30
[vgpu c]
device = 0
compute = 20
memory = 64M
[vgpu x]
device = 1
compute = 100"
grep -q "oversubscribed" "$T/serve.log" && fail "oversubscription warned of at 100 %"

# clients working across the reload: bursts of 2 ms kernels on a, memory held on c
timeout 30 "$C" burst a 2000000 6 >"$T/burst" 2>&1 &
BP=$!
timeout 30 "$C" hold c 10000000 3 >"$T/hold" 2>&1 &
HP=$!
wait_field c clients 1
wait_field a clients 1
i=0; while [ "$(vgpu_field a tasks)" -eq 0 ]; do i=$((i+1)); [ $i -gt 100 ] && fail "burst client not running"; sleep 0.1; done
t0=$(vgpu_field a tasks)

conf "$BASE
[vgpu a]
device = 0
compute = 25
memory = 32M
[vgpu d]
device = 0
compute = 20
memory = 16M
[vgpu x]
device = 1
compute = 100"
hup "reloaded"
# x changed too: its default memory share is 100 % / number of vGPUs
grep -q "reloaded $T/conf: 3 vGPUs (1 added, 2 changed, 2 removed, 0 back)" "$T/serve.log" ||
    fail "reload summary: $(grep reload "$T/serve.log")"
[ "$(vgpu_field a compute_share)" = 25 ] || fail "a's compute share after reload: $(vgpu_field a compute_share)"
[ "$(vgpu_field a mem_quota)" = 33554432 ] || fail "a's memory share after reload"
[ "$(vgpu_field a clients)" = 1 ] || fail "a's client dropped by the reload"
grep -q "reload: vGPU c removed: refused to new clients; its 1 connected client keeps it" "$T/serve.log" ||
    fail "removal of c not logged"
[ "$(listed)" = "a c x d" ] || fail "listed after reload: $(listed) (b removed without clients, c kept for its client)"
timeout 20 "$C" copy d 1000000 >/dev/null || fail "new vGPU d unusable"
out=$(timeout 20 "$C" info c 2>&1) && fail "removed vGPU c opened by a new client"
echo "$out" | grep -q 'no vGPU named "c" (removed from the configuration; this daemon has: a, x, d)' ||
    fail "removed vGPU message: $out"
out=$(timeout 20 "$C" info b 2>&1) && fail "removed vGPU b opened"
out=$("$G" vgpu set c compute=10 2>&1) && fail "vgpu set on a removed vGPU"
echo "$out" | grep -q 'vGPU "c" was removed' || fail "vgpu set removed message: $out"
wait $BP || { cat "$T/burst"; fail "burst client broken by the reload"; }
wait $HP || { cat "$T/hold"; fail "client of the removed vGPU broken (its memory must stay intact)"; }
t1=$(vgpu_field a tasks)
n=$(sed -n 's/^launches //p' "$T/burst")
[ "$t1" -ge "$n" ] && [ "$t1" -gt "$t0" ] || fail "a ran $t0 tasks before the reload, $t1 after ($n launches)"
i=0; while [ "$(listed)" != "a x d" ]; do i=$((i+1)); [ $i -gt 50 ] && fail "c still listed: $(listed)"; sleep 0.1; done

# invalid file: rejected with line and reason, the running configuration stays
conf "$BASE
[vgpu a]
device = 0
compute = 500"
hup "reload rejected"
grep -q "reload rejected: $T/conf:8: compute share must be 1..100 (percent); the running configuration stays in force" \
    "$T/serve.log" || fail "rejection message: $(grep rejected "$T/serve.log")"
[ "$(vgpu_field a compute_share)" = 25 ] && [ "$(listed)" = "a x d" ] || fail "rejected file changed something"
# a vGPU moving to another device: only at a restart
conf "$BASE
[vgpu a]
device = 1
compute = 25"
hup "reload rejected"
grep -q "reload rejected: $T/conf: vGPU a moves from device 0 to device 1 (only at a restart)" "$T/serve.log" ||
    fail "device move message: $(grep rejected "$T/serve.log" | tail -1)"
# a vGPU on a device the daemon has not opened
conf "$BASE
[device 7]
sim = default
[vgpu a]
device = 0
[vgpu z]
device = 7"
hup "reload rejected"
grep -q "vGPU z is on device 7, which this daemon has not opened" "$T/serve.log" || fail "new device message"
timeout 20 "$C" copy a 100000 >/dev/null || fail "daemon unusable after rejected reloads"

# back: c returns, shares oversubscribe (warned), restart-only keys warned
conf "socket_mode = 0600
socket_group = $(id -g)
$BASE
policy = fifo
[vgpu a]
device = 0
compute = 25
memory = 32M
[vgpu c]
device = 0
compute = 60
copy = 60
[vgpu d]
device = 0
compute = 20
memory = 16M
[vgpu x]
device = 1
compute = 100"
hup "reloaded"
grep -q "reload: vGPU c is back" "$T/serve.log" || fail "c not back"
grep -q "device 0: compute shares sum to 105 %, copy shares to 105 % after reload: oversubscribed" "$T/serve.log" || fail "no warning at reload"
grep -q "reload: socket_mode takes effect at the next restart" "$T/serve.log" || fail "socket_mode change not warned"
grep -q "reload: socket_group takes effect at the next restart" "$T/serve.log" || fail "socket_group change not warned"
grep -q "reload: changes to \[device 1\] take effect at the next restart" "$T/serve.log" || fail "device change not warned"
timeout 20 "$C" info c >/dev/null || fail "c not usable again"

# --- vgpu set persisted ---------------------------------------------------------------
out=$("$G" vgpu set c compute=40 copy=40 2>&1) || fail "vgpu set: $out"
echo "$out" | grep -q "warning" && fail "warning at 85 %: $out"
out=$("$G" vgpu set d compute=45 2>&1) || fail "vgpu set: $out"
echo "$out" | grep -q "gpuos: warning: device 0: compute shares sum to 110 %, copy shares to [0-9]* %: oversubscribed" ||
    fail "no CLI warning: $out"
grep -q "device 0: compute shares sum to 110 %, copy shares to [0-9]* % after vgpu set: oversubscribed" "$T/serve.log" || fail "no daemon warning at vgpu set"
"$G" vgpu set a memory=8M copy=33 || fail "vgpu set a"
[ -f "$T/conf.state" ] || fail "no state file beside the configuration"
ls "$T" | grep -q "state.tmp" && fail "temporary state file left"
$PY - "$T/conf.state" <<'PY' || fail "state file content: $(cat "$T/conf.state")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuos.vgpu-state/1", d
o = {(x["vgpu"], x["key"]): (x["value"], x["config"]) for x in d["overrides"]}
assert o == {("c", "compute"): ("40", "60"), ("c", "copy"): ("40", "60"), ("d", "compute"): ("45", "20"),
             ("a", "memory"): ("8388608", "33554432"), ("a", "copy"): ("33", "25")}, o
PY
# a reload that leaves those keys alone keeps the overrides; one that changes a key drops it
sed -i 's/^compute = 60$/compute = 50/' "$T/conf"
hup "reloaded"
[ "$(vgpu_field c compute_share)" = 50 ] || fail "the file's new value did not win at reload"
grep -q "vGPU c: compute = 50 in the configuration file (was 60 when \`vgpu set\` made it 40): the file's value wins" \
    "$T/serve.log" || fail "file-wins notice"
[ "$(vgpu_field d compute_share)" = 45 ] || fail "override of d lost at reload"
[ "$(vgpu_field a copy_share)" = 33 ] || fail "override of a's copy lost at reload"
[ "$(vgpu_field c copy_share)" = 40 ] || fail "c's copy override lost when its compute was dropped"
grep -q '"key": "compute",' "$T/conf.state" || fail "state file lost d's compute"
$PY -c "import json,sys; sys.exit(any(o['vgpu']=='c' and o['key']=='compute' for o in json.load(open('$T/conf.state'))['overrides']))" ||
    fail "dropped override still in the state file"

stop_daemon
start_daemon "$(sed 1d "$T/conf")"
[ "$(vgpu_field d compute_share)" = 45 ] || fail "vgpu set d compute=45 forgotten at restart"
[ "$(vgpu_field a copy_share)" = 33 ] || fail "vgpu set a copy=33 forgotten at restart"
[ "$(vgpu_field a mem_quota)" = 8388608 ] || fail "vgpu set a memory=8M forgotten at restart"
[ "$(vgpu_field a compute_share)" = 25 ] || fail "a's compute share"
grep -q "state file $T/conf.state: 4 \`vgpu set\` changes applied" "$T/serve.log" || fail "state applied message"
# setting a key back to the file's value forgets the override
"$G" vgpu set d compute=20 || fail "vgpu set d back"
grep -q '"d"' "$T/conf.state" && fail "override equal to the file kept"
stop_daemon

# the file changed while the daemon was down: the file wins at start
sed -i 's/^memory = 32M$/memory = 48M/' "$T/conf"
start_daemon "$(sed 1d "$T/conf")"
[ "$(vgpu_field a mem_quota)" = 50331648 ] || fail "file's new memory share lost to the state"
[ "$(vgpu_field a copy_share)" = 33 ] || fail "untouched override lost"
stop_daemon

# a corrupt state file: a clear error, the daemon stops, the file is left as it was
printf '{"schema": "gpuos.vgpu-state/1", "overrides": [\n{"vgpu": "a"' > "$T/conf.state"
cp "$T/conf.state" "$T/state.copy"
out=$("$G" serve --config "$T/conf" 2>&1) && fail "daemon started on a corrupt state file"
echo "$out" | grep -q "state file $T/conf.state:2:.*repair or remove it" || fail "corrupt state message: $out"
cmp -s "$T/conf.state" "$T/state.copy" || fail "corrupt state file modified"
echo '{"schema": "gpuos.vgpu-state/9", "overrides": []}' > "$T/conf.state"
out=$("$G" serve --config "$T/conf" 2>&1) && fail "daemon started on a state file of another schema"
echo "$out" | grep -q 'schema is not "gpuos.vgpu-state/1"' || fail "schema message: $out"
echo '{"schema": "gpuos.vgpu-state/1", "overrides": [{"vgpu": "a", "key": "compute", "value": "500", "config": "25"}]}' \
    > "$T/conf.state"
out=$("$G" serve --config "$T/conf" 2>&1) && fail "daemon started with compute=500 in the state"
echo "$out" | grep -q 'override 1 (a compute = 500): share "500" must be 1..100' || fail "bad value message: $out"
[ ! -S "$T/s" ] || fail "socket left by a daemon that did not start"

# state = elsewhere; state = none; an unwritable state: vgpu set fails and changes nothing
rm -f "$T/conf.state"
sed 1d "$T/conf" > "$T/body"
start_daemon "state = $T/no/such/dir/state.json
$(cat "$T/body")"
out=$("$G" vgpu set a compute=10 2>&1) && fail "vgpu set succeeded without saving"
echo "$out" | grep -q "cannot save the state file $T/no/such/dir/state.json: No such file or directory" ||
    fail "unwritable state message: $out"
[ "$(vgpu_field a compute_share)" = 25 ] || fail "unsaved vgpu set was applied"
stop_daemon
start_daemon "state = none
$(cat "$T/body")"
"$G" vgpu set a compute=10 || fail "vgpu set with state = none"
[ "$(vgpu_field a compute_share)" = 10 ] || fail "vgpu set with state = none not applied"
stop_daemon
[ ! -e "$T/conf.state" ] || fail "state = none wrote a state file"
echo "t_serve_reload: ok"
