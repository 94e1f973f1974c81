# tests/gpu/daemon_lib.sh: sourced by the device-machine scripts that need a
# daemon of their own (cutrace.sh, hostile.sh, expandable.sh). gpu_daemon
# CONFIG_BODY LOG writes $T/conf (the socket line added) and starts `gpuos serve`
# on it, its stderr in LOG, and waits for the socket; the daemon and $T go when
# the script exits. Sets T, D, GPUOS_SOCKET, GPUOS_TIMEOUT_MS.
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
T=$(mktemp -d)
D=
gpu_daemon_cleanup() { [ -n "$D" ] && kill -TERM "$D" 2>/dev/null; sleep 1; [ -n "$D" ] && kill -9 "$D" 2>/dev/null; rm -rf "$T"; }
trap gpu_daemon_cleanup EXIT
gpu_daemon() { # config body, log file
    printf 'socket = %s\n%s\n' "$T/s" "$1" > "$T/conf"
    export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=120000
    "$G" serve --config "$T/conf" 2>"$2" &
    D=$!
    i=0; while [ ! -S "$T/s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    [ -S "$T/s" ] || { cat "$2"; echo "FAIL daemon did not start"; exit 1; }
}
