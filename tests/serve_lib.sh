# SPDX-License-Identifier: Apache-2.0
# serve_lib.sh: shared by tests/t_serve*.sh (sourced). Starts `gpuos serve` on the
# simulated device in a private temporary directory and cleans up whatever
# happens; every wait is bounded.
G=${GPUOS:-build/gpuos}
B=${BUILD:-build}
C="$B/tests/serve_client"
PY=/usr/bin/python3
T=$(mktemp -d)
export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=20000
DPID=
cleanup() {
    [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
    jobs -p | xargs -r kill -9 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
# for_others PROG: prints the path of a copy of PROG that other users (setpriv)
# can run. The checkout may sit in a folder they cannot read (a runner's or a
# home directory of mode 0700; issue 47), so a program they run by its absolute
# path ($G is one under tests/run.sh) comes from $T/others. Relative paths
# ($B/tests/...) need no copy: the lookup starts at the working directory.
for_others() {
    mkdir -p "$T/others" && chmod 755 "$T" "$T/others" && cp "$1" "$T/others/" &&
        echo "$T/others/${1##*/}"
}
# The tests of gpuos's libcuda.so.1 skip (exit 0) where it was not built.
need_shim() {
    [ -f "$B/shim/libcuda.so.1" ] && return 0
    echo "SKIP: $B/shim/libcuda.so.1 not built (no cuda.h at build time)"
    exit 0
}
fail() { echo "FAIL: $*"; [ -f "$T/serve.log" ] && sed 's/^/    serve: /' "$T/serve.log" | tail -20; exit 1; }
# free_port: a TCP port of 127.0.0.1 nobody listens on now (for metrics_listen)
free_port() { $PY -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }

# ISOLATIONS: the ways a device's executors run (a process per client, none: the
# daemon itself, a process per vGPU shared by its clients); iso_conf NAME prints
# the configuration lines of one, for a [device] section.
ISOLATIONS="process none per-vgpu"
iso_conf() {
    case $1 in per-vgpu) printf 'isolation = process\nexecutor = per-vgpu' ;; *) printf 'isolation = %s' "$1" ;; esac
}

# start_sim_daemon MODE REST: start_daemon on the simulated device with the
# executors of MODE (one of $ISOLATIONS); REST follows the [device 0] section.
start_sim_daemon() {
    start_daemon "[device 0]
sim = default
$(iso_conf "$1")
$2"
}

# start_daemon CONFIG_BODY: writes $T/conf (socket line added) and waits for the socket.
start_daemon() {
    { echo "socket = $T/s"; echo "$1"; } > "$T/conf"
    "$G" serve --config "$T/conf" --verbose 2>>"$T/serve.log" &
    DPID=$!
    i=0
    while [ ! -S "$T/s" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "daemon did not come up"
        kill -0 "$DPID" 2>/dev/null || fail "daemon exited at start"
        sleep 0.1
    done
}

# stop_daemon: SIGTERM, must exit 0 within 15 s and remove its socket.
stop_daemon() {
    kill -TERM "$DPID"
    i=0
    while kill -0 "$DPID" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 150 ] && fail "daemon ignored SIGTERM for 15 s"
        sleep 0.1
    done
    wait "$DPID"; rc=$?
    DPID=
    [ "$rc" -eq 0 ] || fail "daemon exit status $rc after SIGTERM"
    [ ! -e "$T/s" ] || fail "socket file left behind"
}

# expect_fail WANT ARGS...: the command fails, in one line that says WANT.
expect_fail() {
    want=$1; shift
    out=$("$@" 2>&1) && fail "$* succeeded: $out"
    printf '%s\n' "$out" | grep -qF -- "$want" || fail "$*: expected \"$want\", got: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "$*: more than one line: $out"
}

# vgpu_field NAME FIELD: one field of `gpuos vgpu list --json -`.
vgpu_field() {
    "$G" vgpu list --json - | $PY -c "
import json, sys
for v in json.load(sys.stdin)['vgpus']:
    if v['name'] == sys.argv[1]: print(v[sys.argv[2]])" "$1" "$2"
}

# wait_field NAME FIELD VALUE: polls up to 10 s.
wait_field() {
    i=0
    while [ "$(vgpu_field "$1" "$2")" != "$3" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "vGPU $1 $2 is $(vgpu_field "$1" "$2"), expected $3"
        sleep 0.1
    done
}

# vgpu_sections MEMORY NAME...: a [vgpu NAME] section of MEMORY for each name.
vgpu_sections() {
    m=$1; shift
    for n in "$@"; do printf '[vgpu %s]\nmemory = %s\n' "$n" "$m"; done
}

# vgpus_ab MEMORY: the sections of two vGPUs a and b with equal shares and
# MEMORY each, for a configuration body.
vgpus_ab() {
    printf '[vgpu a]\ncompute = 50\ncopy = 50\nmemory = %s\n[vgpu b]\ncompute = 50\ncopy = 50\nmemory = %s' "$1" "$1"
}

# mem_cgroup NAME LIMIT: a memory cgroup NAME.$$ of LIMIT (v1 or v2) in CG, its
# OOM kill count by OOMS, removed (its processes killed) at exit; CG stays empty
# where this host allows none. start_daemon_in_cgroup CONFIG_BODY: start_daemon
# with the daemon (and so its executors) inside it.
mem_cgroup() {
    CG=
    if [ -w /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/$1.$$" 2>/dev/null; then
        CG=/sys/fs/cgroup/memory/$1.$$
        echo "$2" > "$CG/memory.limit_in_bytes" || fail "cannot set the cgroup's limit"
        [ -f "$CG/memory.memsw.limit_in_bytes" ] && echo "$2" > "$CG/memory.memsw.limit_in_bytes"
        OOMS() { sed -n 's/^oom_kill //p' "$CG/memory.oom_control"; }
    elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null && mkdir "/sys/fs/cgroup/$1.$$" 2>/dev/null; then
        CG=/sys/fs/cgroup/$1.$$
        echo "$2" > "$CG/memory.max" || fail "cannot set the cgroup's limit"
        echo 0 > "$CG/memory.swap.max" 2>/dev/null
        OOMS() { sed -n 's/^oom_kill //p' "$CG/memory.events"; }
    else
        return 0
    fi
    trap cg_cleanup EXIT
}
# the cgroup goes once its processes have (executors exit after the daemon)
cg_cleanup() {
    cleanup
    i=0; until rmdir "$CG" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 50 ] && { echo "warning: $CG left behind"; break; }
        xargs -r kill -9 < "$CG/cgroup.procs" 2>/dev/null; sleep 0.1
    done
}
start_daemon_in_cgroup() {
    printf '#!/bin/sh\necho $$ > "%s/cgroup.procs" && exec "%s" "$@"\n' "$CG" "$G" > "$T/incg"
    chmod 755 "$T/incg"
    G0=$G
    G="$T/incg"
    start_daemon "$1"
    G=$G0
}
