#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_ring_any.sh: a grant issued while its client worked alone (kind any: copies
# and launches alike, held on one engine of the scheduler's) goes back to the
# policy once another client works (serve/ring.c, any_shared; issue 41) on the
# simulated device, real processes. A batch tenant whose first request is a
# copy (a program moving its weights in) holds such a grant on the copy
# engine; a second tenant that only launches found the compute engine free,
# and the two grants ran side by side unarbitrated, neither ending, since
# nobody queued (GPU-dec7bfb3: a training job and an inference service for a
# whole run). Now: no two grants of the two vGPUs overlap by more than a
# kernel boundary's drain (the daemon's grant log: each grant's start and
# wall time), and the second tenant does at most its share of work.
. "$(dirname "$0")/serve_lib.sh"
R="$B/tests/ring_client"
[ -x "$R" ] || fail "no $R"
export GPUOS_GRANT_LOG=1
for first in copy launch; do
    start_daemon "[device 0]
sim = default
grant_us = 16000
isolation = process
[vgpu batch]
compute = 50
[vgpu other]
compute = 50"
    arg=; [ $first = copy ] && arg=copy
    timeout 60 "$R" stream batch 3 $arg > "$T/batch" 2>&1 &
    BP=$!
    sleep 0.5
    timeout 60 "$R" kernels other 2 1000 > "$T/other" 2>&1 || fail "kernels: $(cat "$T/other")"
    wait $BP || fail "stream: $(cat "$T/batch")"
    stop_daemon
    work=$(sed -n 's/^kernels [0-9]* work_ms \([0-9.]*\)/\1/p' "$T/other")
    # the largest overlap (ms) of two grants of different vGPUs, and how many grants
    out=$("$PY" - "$T/serve.log" <<'PY'
import re, sys
g = []
for line in open(sys.argv[1]):
    m = re.search(r"grant vgpu (\d+): ([0-9.]+) ms wall.* kind (\w+), engine (\d+), from ([0-9.]+) s", line)
    if m:
        v, wall, s = int(m.group(1)), float(m.group(2)), float(m.group(5)) * 1e3
        g.append((v, s, s + wall, m.group(3)))
worst = 0.0
for i, a in enumerate(g):
    for b in g[i + 1:]:
        if a[0] != b[0]:
            worst = max(worst, min(a[2], b[2]) - max(a[1], b[1]))
print("%.3f %d %d" % (worst, len(g), sum(1 for x in g if x[3] == "any")))
PY
)
    set -- $out
    echo "first request a $first: largest overlap of two tenants' grants $1 ms in $2 grants ($3 of kind any);" \
         "the second tenant's work $work ms in 2 s at 50 %"
    [ "${2:-0}" -ge 20 ] || fail "too few grants logged ($2)"
    "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 20 else 1)" "$1" ||
        fail "two tenants' grants ran side by side for $1 ms (first request a $first)"
    "$PY" -c "import sys; sys.exit(0 if 0 < float(sys.argv[1]) < 1400 else 1)" "${work:-0}" ||
        fail "the second tenant did $work ms of work in 2 s at 50 % (first request a $first)"
    : > "$T/serve.log"
done
echo "PASS: t_ring_any"
