# SPDX-License-Identifier: Apache-2.0
# tests/gpu/daemon_lib.sh: sourced by the device-machine scripts that need a
# daemon of their own (frameworks.sh, cutrace.sh, hostile.sh, expandable.sh).
# gpu_daemon CONFIG_BODY LOG writes $T/conf (the socket line added) and starts
# `gpuos serve` on it ($GPU_DAEMON_ARGS added, e.g. --verbose), its stderr in
# LOG, and waits for the socket; the daemon
# and $T go when the script exits. Sets T, D, GPUOS_SOCKET, GPUOS_TIMEOUT_MS.
# pair_70_30 prints the device of the side-by-side runs: a 70 % vGPU p70 for
# the program, a 30 % one p30 for a neighbour. faults_start FILE / faults_stop: a
# tenant of p30 launching faulting kernels and kernels that read and write
# another tenant's addresses (a new client and executor each), until stopped.
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
T=$(mktemp -d)
D=
gpu_daemon_cleanup() { [ -n "$D" ] && kill -TERM "$D" 2>/dev/null; sleep 1; [ -n "$D" ] && kill -9 "$D" 2>/dev/null; rm -rf "$T"; }
trap gpu_daemon_cleanup EXIT
gpu_daemon() { # config body, log file
    printf 'socket = %s\n%s\n' "$T/s" "$1" > "$T/conf"
    export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=120000
    "$G" serve --config "$T/conf" ${GPU_DAEMON_ARGS:-} 2>"$2" &
    D=$!
    i=0; while [ ! -S "$T/s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    [ -S "$T/s" ] || { cat "$2"; echo "FAIL daemon did not start"; exit 1; }
}
pair_70_30() { # [more lines of the device's section]
    printf '[device 0]\n%s\npolicy = band\nqueue = mrq\nisolation = process\n' "${1:-}"
    printf '[vgpu p70]\ncompute = 70\nmemory = 70%%\n[vgpu p30]\ncompute = 30\nmemory = 20%%\n'
}
faults_start() { # output file
    rm -f "$T/faults.stop"
    ( while [ ! -f "$T/faults.stop" ]; do "$B/tests/serve_client" fault p30; "$B/tests/serve_client" xread p30 0x7f0000000000 4096
        "$B/tests/serve_client" xwrite p30 0x7f0000200000 4096; done ) > "$1" 2>&1 &
    FAULTS_PID=$!
}
faults_stop() { touch "$T/faults.stop"; wait "$FAULTS_PID" 2>/dev/null; }
