#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_hostile_config.sh: issue 15.6/15.7, a careless operator. Every configuration
# the daemon cannot honour is refused at start with the file, the line and the
# reason (exit non-zero within seconds, no socket); oversubscribed compute or copy
# shares start with a warning; `vgpu set` refuses what it cannot honour; a
# directory as --config is a read error; `probe --json` to an unwritable path
# fails before probing.
set -u
. tests/serve_lib.sh

# refused LINE_PATTERN REASON_PATTERN BODY: the daemon must refuse BODY.
refused() {
    { echo "socket = $T/r"; printf '%s\n' "$3"; } >"$T/bad.conf"
    out=$(timeout 10 "$G" serve --config "$T/bad.conf" 2>&1); rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "accepted (rc $rc): $3"
    echo "$out" | grep -q "bad.conf:$1" || fail "no line $1 in \"$out\" for: $3"
    echo "$out" | grep -qi "$2" || fail "no reason \"$2\" in \"$out\" for: $3"
    [ ! -e "$T/r" ] || fail "socket created for a refused configuration: $3"
}
VG="[device 0]
sim = default"
refused 5: "size" "$VG
[vgpu a]
memory = nan"
refused 5: "size" "$VG
[vgpu a]
memory = inf"
refused 5: "size" "$VG
[vgpu a]
memory = -1G"
refused 5: "size" "$VG
[vgpu a]
memory = 99999999999T"
refused 5: "percentage" "$VG
[vgpu a]
memory = nan%"
refused 5: "larger than device" "$VG
[vgpu a]
memory = 1T"
refused 7: "sum to 160" "$VG
[vgpu a]
memory = 80%
[vgpu b]
memory = 80%"
refused 2: "socket_mode" "socket_mode =
$VG
[vgpu a]"
refused 2: "socket path is empty" "socket =
$VG
[vgpu a]"
refused 4: "one word" "$VG
[vgpu a b]"
refused 2: "shm_segments_per_vgpu must be an integer in 1..256" "shm_segments_per_vgpu = 0
$VG"
refused 2: "shm_segments_per_user must be an integer in 1..256" "shm_segments_per_user = 257
$VG"
refused 2: "shm_bytes_per_user must be 0" "shm_bytes_per_user = nan
$VG"
refused 2: "max_clients" "max_clients = 1e300
$VG
[vgpu a]"
refused 2: "shutdown_grace_ms" "shutdown_grace_ms = -5
$VG
[vgpu a]"

# oversubscribed memory, allowed explicitly: a warning
start_daemon "memory_oversubscribe = 1
$VG
[vgpu a]
memory = 80%
compute = 70
[vgpu b]
memory = 80%
compute = 70"
grep -q "warning: .*memory shares of device 0 sum to 160" "$T/serve.log" || fail "no memory oversubscription warning"
grep -q "warning: .*compute shares sum to 140" "$T/serve.log" || fail "no compute oversubscription warning"
# vgpu set refuses what it cannot honour
for v in nan inf -1 1T 0 "1e300%" "50%x"; do
    "$G" vgpu set a memory="$v" 2>"$T/set.err" && fail "vgpu set memory=$v accepted"
    [ -s "$T/set.err" ] || fail "vgpu set memory=$v: no message"
done
"$G" vgpu set a compute=nan 2>/dev/null && fail "vgpu set compute=nan accepted"
"$G" vgpu set a memory=10% || fail "vgpu set memory=10% refused"
stop_daemon
start_daemon "$VG
[vgpu a]
memory = 50%
[vgpu b]
memory = 40%"
"$G" vgpu set a memory=70% 2>"$T/set.err" && fail "vgpu set past 100 % of the device accepted"
grep -q "sum to 110" "$T/set.err" || fail "vgpu set: $(cat "$T/set.err")"
"$G" vgpu set a memory=60% || fail "vgpu set memory=60% (sum 100 %) refused"
stop_daemon

# a file over the size limit: an error, not a silent cut
{ echo "socket = $T/r"; echo "$VG"; echo "[vgpu a]"; head -c 1100000 /dev/zero | tr '\0' '#'; echo; } >"$T/big.conf"
out=$(timeout 10 "$G" serve --config "$T/big.conf" 2>&1) && fail "a 1.1 MB configuration was accepted"
echo "$out" | grep -q "larger than the limit" || fail "big file: $out"
# a directory
out=$(timeout 10 "$G" serve --config "$T" 2>&1) && fail "a directory was accepted as --config"
echo "$out" | grep -q "cannot read .*directory" || fail "directory: $out"

# simulator parameters out of range
"$G" probe topology --sim default --json "$T/chip.json" >/dev/null 2>&1 || fail "probe for a chip file"
bad_chip() { # PYTHON_EDIT REASON
    $PY -c "
import json, sys
c = json.load(open(sys.argv[1]))
$1
json.dump(c, open(sys.argv[2], 'w'))" "$T/chip.json" "$T/bad_chip.json"
    { echo "socket = $T/r"; echo "[device 0]"; echo "sim = $T/bad_chip.json"; echo "[vgpu a]"; } >"$T/chip.conf"
    out=$(timeout 10 "$G" serve --config "$T/chip.conf" 2>&1); rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "chip accepted: $1"
    echo "$out" | grep -q "$2" || fail "chip ($1): $out"
}
bad_chip "c['device']['sm_clock_mhz'] = 1e300" "sm_clock_mhz"
bad_chip "c['device']['mem_bytes'] = 1e300" "mem_bytes"
bad_chip "c['sim'] = {'exec': {'htod_gbps': 0}}" "htod_gbps"
bad_chip "c['sim'] = {'exec': {'launch_us': -1}}" "launch_us"
bad_chip "c['sim'] = {'exec': {'dtod_gbps': 1e300}}" "dtod_gbps"
bad_chip "c['sim'] = {'exec': {'vmm_create_us_per_mb': -1}}" "vmm_create_us_per_mb"

# probe --json to an unwritable place fails at once, before the probe
start=$(date +%s)
out=$(timeout 20 "$G" probe all --sim default --json /nonexistent/dir/chip.json 2>&1) && fail "probe to /nonexistent accepted"
echo "$out" | grep -q "cannot write" || fail "probe: $out"
echo "$out" | grep -qi "gpc" && fail "probe ran before failing: $out"
echo "t_hostile_config: ok"
