#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_latency.sh: the latency class of vGPUs (issue 41; latency_ms, sched.h's
# gos_sched_vgpu_set_latency, serve/ring.c's srv_ring_preempt) on the
# simulated device, real processes. A latency tenant (a request of four
# 200 us kernels every 20 ms) beside a batch tenant that keeps its queue full
# of 1 ms kernels, with 16 ms grants: as a batch vGPU its requests wait behind
# whole grants; in the latency class they start at the batch grant's next
# kernel boundary (handover = preempt, process's default) or at once beside
# it (beside, mps's default), p90 under half and under 8 ms and p99 shorter either way, the
# daemon counts the companions, `vgpu list` and the metrics show the class; a
# service that pauses mid-request beside two batch vGPUs keeps its p90 within
# 3 ms of alone; a latency vGPU
# that floods (always work) is held to its share like any other; bad values
# of the key are refused. latency_sms (mps): the batch vGPUs' executors get
# the MPS active-thread percentage 100 - N, the latency vGPU's none;
# latency_priority (mps): the batch executors below-normal MPS clients at the
# least stream priority, the latency executor at the greatest.
. "$(dirname "$0")/serve_lib.sh"
R="$B/tests/ring_client"
[ -x "$R" ] || fail "no $R"

# run_pair LATENCY_LINE [ISOLATION]: the two tenants for 3 s; the latency
# tenant's p50 p99 max p90 (ms) in $T/p
run_pair() {
    start_daemon "[device 0]
sim = default
grant_us = 16000
isolation = ${2:-process}
[vgpu batch]
compute = 50
[vgpu lat]
compute = 50
$1"
    timeout 60 "$R" stream batch 4 > "$T/batch" 2>&1 &
    BP=$!
    sleep 0.5
    out=$(timeout 60 "$R" periodic lat 150 20 4 200) || fail "periodic: $out"
    wait $BP || fail "stream: $(cat "$T/batch")"
    echo "$out" | sed -n 's/^periodic p50 \([0-9.]*\) p99 \([0-9.]*\) max \([0-9.]*\) p90 \([0-9.]*\)/\1 \2 \3 \4/p' > "$T/p"
}

# shorter B90 B99 L90 L99: the latency class's p90 under half the batch vGPU's
# and under 8 ms, its p99 under the batch vGPU's. (A p99 of 150 requests is
# their second longest, and on a host of two CPUs shared by the daemon, two
# executors and two clients the class's reached 8-10 ms in one run of three
# whatever the code, against 14-18 ms as a batch vGPU; the p90 says whether
# requests still wait for whole grants.)
shorter() {
    $PY -c "import sys; b90, b99, l90, l99 = map(float, sys.argv[1:5])
sys.exit(0 if l90 < 0.5 * b90 and l90 < 8 and l99 < b99 else 1)" "$1" "$2" "$3" "$4"
}
companions() { grep -c "latency companion of" "$T/serve.log" || true; } # (the log grows across daemons)

run_pair ""
set -- $(cat "$T/p")
b50=$1; b99=$2; bmax=$3; b90=$4
stop_daemon
run_pair "latency_ms = 2" "process
handover = preempt"
set -- $(cat "$T/p")
l50=$1; l99=$2; lmax=$3; l90=$4
echo "latency tenant beside a batch tenant, 16 ms grants: p50/p90/p99/max $b50/$b90/$b99/$bmax ms as a batch vGPU," \
     "$l50/$l90/$l99/$lmax ms in the latency class (handover = preempt)"
[ -n "$b99" ] && [ -n "$l99" ] || fail "no latencies"
shorter "$b90" "$b99" "$l90" "$l99" || fail "the latency class did not shorten the p90/p99 ($b90/$b99 -> $l90/$l99 ms)"
[ "$(vgpu_field lat latency_ms)" = 2 ] || fail "vgpu list: latency_ms $(vgpu_field lat latency_ms)"
[ "$(vgpu_field batch latency_ms)" = 0 ] || fail "vgpu list: a batch vGPU's latency_ms"
"$G" vgpu list | grep -q "lat .*2 ms" || fail "vgpu list's table does not show the class"
"$G" vgpu list | grep -q "batch .* batch" || fail "vgpu list's table does not say batch"
stop_daemon

# beside_case NAME ISOLATION_LINES: the latency class with its requests run at
# once beside the batch grant (companions): as short a p90/p99, and the
# daemon counts at least 50 companions
beside_case() {
    export GPUOS_GRANT_LOG=1
    c0=$(companions)
    run_pair "latency_ms = 2" "$2"
    set -- "$1" $(cat "$T/p")
    c=$(($(companions) - c0))
    echo "$1: p90 $5 ms, p99 $3 ms, $c latency companions"
    [ "${c:-0}" -ge 50 ] || fail "$1: the latency tenant's requests did not run beside the batch grant ($c)"
    shorter "$b90" "$b99" "$5" "$3" || fail "$1: the latency class did not shorten the p90/p99 ($b90/$b99 -> $5/$3 ms)"
    # charged the time it had work, half of it beside the busy batch grant:
    # under 0.75 x its companions' wall time (the daemon's lines at their
    # ends); charged that wall time whole, a service beside training ran
    # past its share on a GPU and waited behind the training's grants
    ns=$(vgpu_field lat compute_ns)
    w=$(sed -n 's/.*companion vgpu [0-9]*: \([0-9.]*\) ms wall .*(latency).*/\1/p' "$T/serve.log" | tail -n "$c" |
        awk '{ s += $1 } END { printf "%.0f", s * 1e6 }')
    echo "$1: the latency vGPU charged $ns ns for $w ns of companions' wall time"
    $PY -c "import sys; ns, w = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if w > 0 and 0 < ns < 0.75 * w else 1)" \
        "${ns:-0}" "${w:-0}" || fail "$1: the latency vGPU charged ${ns:-?} ns for ${w:-?} ns of companions' wall time"
    stop_daemon
}
# under mps (its default), and handover = beside under process (the driver
# time-slices the two executors on a GPU); handover = preempt under mps: none
beside_case "under mps" mps
beside_case "process, handover = beside" "process
handover = beside"
c0=$(companions)
run_pair "latency_ms = 2" "mps
handover = preempt"
c=$(($(companions) - c0))
[ "${c:-0}" = 0 ] || fail "handover = preempt under mps still ran $c latency companions"
unset GPUOS_GRANT_LOG
stop_daemon
# a service that pauses on the host mid-request (1 ms) beside two busy batch
# vGPUs under mps: the batch grant's dispatcher sees a companion's end within
# 1 ms even while another vGPU waits (ring.c, srv_ring_await); before, the
# rest of each request waited to the hand-over: p90 11.2-11.6 ms against
# 5.5-5.7 alone here (and, the likely cause, p99 2.9-4.9 x alone on an H100).
# Its p90 within 3 ms of the same service alone on the same daemon. And a
# latency companion's idle yield is its vGPU's latency_ms (2 ms here;
# companion_hold): the pause no longer ends it, so its 150 requests run in
# at most 1.8 companions each (one for the pause's each side before: 2.0-2.1;
# 1.2 with the hold, 1.6-1.7 with two busy loops on this host's two CPUs),
# and in companions at all (at least half of them).
three_pause() {
    start_daemon "[device 0]
sim = default
grant_us = 16000
isolation = mps
[vgpu batch]
compute = 40
[vgpu b2]
compute = 30
[vgpu lat]
compute = 30
latency_ms = 2"
    a=$(timeout 60 "$R" periodic lat 100 20 4 200 pause) || fail "periodic alone: $a"
    timeout 60 "$R" stream batch 4 > "$T/batch" 2>&1 & BP=$!
    timeout 60 "$R" stream b2 4 > "$T/b2" 2>&1 & BP2=$!
    sleep 0.5
    c0=$(companions)
    out=$(timeout 60 "$R" periodic lat 150 20 4 200 pause) || fail "periodic: $out"
    wait $BP $BP2 || fail "stream: $(cat "$T/batch" "$T/b2")"
    stop_daemon
    nc=$(($(companions) - c0))
    a90=$(echo "$a" | sed -n 's/.* p90 \([0-9.]*\).*/\1/p'); p90=$(echo "$out" | sed -n 's/.* p90 \([0-9.]*\).*/\1/p')
    echo "a pausing service beside two batch vGPUs (mps): p90 $p90 ms, alone $a90 ms, $nc companions ($out)"
    [ "$nc" -ge 75 ] && [ "$nc" -le 270 ] && awk -v a="${a90:-0}" -v b="${p90:-999}" 'BEGIN { exit !(a > 0 && b < a + 3) }'
}
export GPUOS_GRANT_LOG=1
three_pause || { echo "again"; three_pause; } ||
    fail "a pausing service beside two batch vGPUs: p90 $p90 ms against $a90 alone (within 3 ms), its 150 requests in $nc latency companions (75 to 270: about one each, the pause kept)"
unset GPUOS_GRANT_LOG

for v in "handover = sometimes" "isolation = none
handover = beside"; do
    printf 'socket = %s/s2\n[device 0]\nsim = default\n%s\n' "$T" "$v" > "$T/bad"
    out=$("$G" serve --config "$T/bad" 2>&1) && fail "'$v' accepted"
    echo "$out" | grep -q "handover" || fail "'$v': $out"
done

# a flooding latency vGPU (30 %) against a batch one (70 %): its share holds,
# whether its grants end the batch's (preempt) or run beside them (beside:
# the two charged the wall time they share once, the companion half of the
# time both had work, and a companion goes back through
# the policy after a grant: before, one ran beside a batch grant moved on
# for as long and took 43 %)
for h in preempt beside; do
start_daemon "[device 0]
sim = default
grant_us = 16000
handover = $h
[vgpu batch]
compute = 70
[vgpu lat]
compute = 30
latency_ms = 1"
timeout 60 "$R" stream batch 3 > "$T/batch" 2>&1 &
BP=$!
timeout 60 "$R" busy lat 3 > "$T/lat" 2>&1 || fail "busy lat: $(cat "$T/lat")"
wait $BP || fail "stream: $(cat "$T/batch")"
a=$(vgpu_field lat compute_ns); b=$(vgpu_field batch compute_ns)
echo "flooding latency vGPU of 30 %, handover = $h: compute_ns $a against $b"; cat "$T/lat" "$T/batch" | tail -4
$PY -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); f = a / (a + b); print('share %.3f' % f)
sys.exit(0 if 0.25 < f < 0.35 else 1)" "$a" "$b" ||
    fail "a flooding latency vGPU of 30 % took more or less than its share (handover = $h)"
stop_daemon
done

# vgpu create latency_ms=N: in the class at once, kept in the state file
# across a restart; a bad value refused in one line
start_daemon "state = $T/state.json
[device 0]
sim = default"
"$G" vgpu create svc compute=30 memory=1G latency_ms=5 >/dev/null || fail "vgpu create latency_ms=5"
[ "$(vgpu_field svc latency_ms)" = 5 ] || fail "created: latency_ms $(vgpu_field svc latency_ms)"
out=$("$G" vgpu create bad compute=30 memory=1G latency_ms=1001 2>&1) && fail "latency_ms=1001 accepted by create"
echo "$out" | grep -q latency_ms || fail "latency_ms=1001: $out"
stop_daemon
start_daemon "state = $T/state.json
[device 0]
sim = default"
[ "$(vgpu_field svc latency_ms)" = 5 ] || fail "after a restart: latency_ms $(vgpu_field svc latency_ms)"
stop_daemon

# bad values refused, with the file's line
for v in -1 1001 x 2.5 ""; do
    printf 'socket = %s/s2\n[device 0]\nsim = default\n[vgpu a]\ncompute = 50\nlatency_ms = %s\n' "$T" "$v" > "$T/bad"
    out=$("$G" serve --config "$T/bad" 2>&1) && fail "latency_ms = '$v' accepted"
    echo "$out" | grep -q "latency_ms" || fail "latency_ms = '$v': $out"
done

# latency_sms (mps): a batch vGPU's executor gets
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 - N, the latency vGPU's none; no
# limit without a latency vGPU on the device; refused under process and past 90.
# latency_priority (mps, both by default): with a latency vGPU on the device,
# the batch executors are MPS clients of below-normal priority
# (CUDA_MPS_CLIENT_PRIORITY=1) with their queues at the least stream priority
# (--priority low), the latency vGPU's at the greatest (--priority high);
# without one, or with off, neither.
# (xenv VGPU: its executor's "SMPCT CLIENTPRIO STREAMPRIO", "-" for none)
xenv() {
    "$R" stream "$1" 1 > "$T/env-$1" 2>&1 & EP=$!
    i=0; pid=
    while [ -z "$pid" ] && [ $i -lt 100 ]; do
        pid=$(tail -n +"$L0" "$T/serve.log" | sed -n "s/.*of vGPU $1: executor pid \([0-9]*\).*/\1/p" | tail -1)
        i=$((i + 1)); sleep 0.05
    done
    [ -n "$pid" ] || fail "no executor of $1"
    e=$(tr '\0' '\n' < /proc/"$pid"/environ)
    pct=$(echo "$e" | sed -n 's/^CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=//p')
    cp=$(echo "$e" | sed -n 's/^CUDA_MPS_CLIENT_PRIORITY=//p')
    sp=$(tr '\0' '\n' < /proc/"$pid"/cmdline | sed -n '/^--priority$/{n;p}')
    echo "${pct:--} ${cp:--} ${sp:--}"
    kill "$EP" 2>/dev/null; wait "$EP" 2>/dev/null
}
# mps_daemon KEYS [MORE]: a daemon under mps with KEYS, a batch vGPU and MORE
mps_daemon() {
    L0=$(($(wc -l < "$T/serve.log") + 1))
    start_daemon "[device 0]
sim = default
isolation = mps
$1
[vgpu batch]
compute = 50
${2:-}"
}
LAT="[vgpu lat]
compute = 50
latency_ms = 2"
mps_daemon "latency_sms = 15" "$LAT"
[ "$(xenv batch)" = "85 1 low" ] || fail "latency_sms = 15: the batch vGPU's executor is not at 85 %, below normal, low: $(xenv batch)"
[ "$(xenv lat)" = "- - high" ] || fail "latency_sms = 15: the latency vGPU's executor: $(xenv lat)"
stop_daemon
mps_daemon "latency_sms = 15"
[ "$(xenv batch)" = "- - -" ] || fail "without a latency vGPU a batch executor was limited or lowered: $(xenv batch)"
stop_daemon
for p in "off:- - -:- - -" "stream:- - low:- - high" "client:- 1 -:- - -"; do
    mps_daemon "latency_priority = ${p%%:*}" "$LAT"
    b=${p#*:}; b=${b%%:*}
    [ "$(xenv batch)" = "$b" ] || fail "latency_priority = ${p%%:*}: batch executor $(xenv batch), not $b"
    [ "$(xenv lat)" = "${p##*:}" ] || fail "latency_priority = ${p%%:*}: latency executor $(xenv lat), not ${p##*:}"
    stop_daemon
done
for c in "isolation = process
latency_sms = 10" "isolation = mps
latency_sms = 91" "isolation = process
latency_priority = both" "isolation = mps
latency_priority = first"; do
    printf 'socket = %s/s3\n[device 0]\nsim = default\n%s\n[vgpu a]\ncompute = 50\n' "$T" "$c" > "$T/bad"
    out=$("$G" serve --config "$T/bad" 2>&1) && fail "accepted: $c"
    echo "$out" | tail -1 | grep -q "^gpuos: .*latency_\(sms\|priority\)" || fail "$c: $out"
done
echo "PASS: t_latency"
