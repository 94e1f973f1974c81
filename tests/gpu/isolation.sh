#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/isolation.sh: issue 9 on the real GPU, per isolation mode. vGPU a's
# client (serve_client owner) keeps a 4 MB buffer with a known pattern and runs
# verified copies and launches; vGPU b's clients attack it with the built-in raw
# kernel xcopy (addresses unchecked, as a tenant's own kernel) reading and
# writing a's buffer by address, then launch the built-in fault kernel (reads
# 0x10). Expected: process: b reads nothing of a's (match=0), a's buffer intact,
# b gets GPUOS_EDEVICE CUDA_ERROR_ILLEGAL_ADDRESS, a carries on, the fault is
# counted for b; mps (daemon-started MPS server): b reads nothing of a's, and a
# fault of b reaches a's session with an error naming vGPU b, the daemon restarts
# the server and both reconnect; none (trusted tenants, the contrast): the attack reads and
# corrupts a's buffer and the fault reaches a. Prints RESULT lines; exit non-zero
# when a `process` expectation fails.
set -u
G=${GPUOS:-build/gpuos}
C=${BUILD:-build}/tests/serve_client
T=$(mktemp -d)
export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=60000
W=1048576
fail=0
# mps is opt-in until it has passed on a GPU (ISOLATION_MODES="process mps none"):
# its first GPU run hung at the fault restart (fixed since, not yet re-run).
for mode in ${ISOLATION_MODES:-process none}; do
    cat > "$T/conf" <<CONF
socket = $T/s
[device 0]
policy = band
queue = mrq
isolation = $mode
[vgpu a]
compute = 50
memory = 5%
[vgpu b]
compute = 50
memory = 5%
CONF
    rm -f "$T/addr" "$T/s"
    "$G" serve --config "$T/conf" --verbose 2>"$T/serve-$mode.log" &
    D=$!
    i=0; while [ ! -S "$T/s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    timeout 120 "$C" owner a $W 6 "$T/addr" >"$T/owner" 2>&1 &
    OW=$!
    i=0; until [ -s "$T/addr" ] || [ $i -gt 300 ]; do sleep 0.1; i=$((i + 1)); done
    A=$(cat "$T/addr")
    xr=$(timeout 60 "$C" xread b "$A" $W 2>&1 | tail -1)
    xw=$(timeout 60 "$C" xwrite b "$A" $W 2>&1 | tail -1)
    ft=$(timeout 60 "$C" fault b 2>&1 | tr '\n' ' ')
    wait $OW; orc=$?
    ow=$(tail -1 "$T/owner")
    after=$(timeout 60 "$C" copy a 1000000 >/dev/null 2>&1 && echo works || echo fails)
    faults=$("$G" vgpu list --json - | python3 -c "import json,sys; print([v['faults'] for v in json.load(sys.stdin)['vgpus']])" 2>/dev/null)
    echo "RESULT mode=$mode a=$A"
    echo "  xread:  $xr"
    echo "  xwrite: $xw"
    echo "  fault:  $ft"
    echo "  owner (exit $orc): $ow"
    echo "  a afterwards: $after; faults per vGPU [a, b]: $faults"
    if [ $mode = process ]; then
        echo "$xr" | grep -q "match=0 " || { echo "FAIL process: b read a's data"; fail=1; }
        [ $orc = 0 ] || { echo "FAIL process: a's work or buffer damaged"; fail=1; }
        echo "$ft" | grep -q "fault rc=-7 error=.*CUDA_ERROR_ILLEGAL_ADDRESS" || { echo "FAIL process: no clear fault error"; fail=1; }
        echo "$ft" | grep -q "reconnected ok" || { echo "FAIL process: b could not reconnect"; fail=1; }
        [ $after = works ] || { echo "FAIL process: a broken after b's fault"; fail=1; }
    fi
    if [ $mode = mps ]; then
        echo "$xr" | grep -q "match=0 " || { echo "FAIL mps: b read a's data"; fail=1; }
        echo "$ft" | grep -q "fault rc=-7" || { echo "FAIL mps: no clear fault error"; fail=1; }
        echo "$ft" | grep -q "reconnected ok" || { echo "FAIL mps: b could not reconnect after the restart"; fail=1; }
        [ $after = works ] || { echo "FAIL mps: daemon not recovered (a cannot work after the restart)"; fail=1; }
        grep -q "MPS fault of vGPU b" "$T/serve-$mode.log" || { echo "FAIL mps: fault not fanned out"; fail=1; }
    fi
    kill -TERM $D
    i=0; while kill -0 $D 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 $D 2>/dev/null && { kill -9 $D; echo "  daemon needed SIGKILL"; }
    grep -E "lost|fault|MPS" "$T/serve-$mode.log" | head -8 | sed 's/^/    serve: /'
    if [ $mode = mps ]; then
        # the daemon quits its MPS server and waits for it (src/serve/mps.c):
        # nothing may hold a file of a gpuos MPS directory once it has exited
        left=""
        for p in $(pgrep nvidia-cuda-mps); do
            # zombies (exited, not yet reaped by the machine's init) hold nothing
            [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = Z ] && continue
            { ls -l /proc/$p/fd; tr '\0' '\n' < /proc/$p/environ; } 2>/dev/null | grep -q /tmp/gpuos-mps &&
                left="$left $p"
        done
        if [ -n "$left" ]; then echo "FAIL mps: MPS processes left after the daemon exited:$left"; fail=1
        else echo "  no MPS process of the daemon left after its exit"; fi
    fi
done
# any MPS server a daemon of this test left behind: quit it
for m in /tmp/gpuos-mps.*; do
    [ -d "$m/pipe" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY="$m/pipe" CUDA_MPS_LOG_DIRECTORY="$m/log" timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
done
rm -rf "$T"
[ $fail = 0 ] && echo "ok   isolation (process, mps): attack read nothing, corrupted nothing; fault contained (process) / told and recovered (mps)"
exit $fail
