#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/load.sh [SECONDS] [CLIENTS] [OUT.json]: the load test of issue 15 on the
# simulated device (a simulated-device result: copies and kernels are modelled,
# the daemon, its limits, threads and memory are real). CLIENTS legitimate
# clients (default 200) do verified copies and launches for SECONDS (default 60)
# beside a connection flood up to the daemon's descriptor-fitted client limit and
# a queue flood, against one daemon with the limits below. Reports bytes verified
# and corrupted, errors, the legitimate clients' latency percentiles and longest
# wait, and the daemon's resident memory (sampled every 0.5 s) against the bound
# the limits give. Writes OUT (default bench/results-sim/load.json).
set -u
SECS=${1:-60}
N=${2:-200}
OUT=${3:-bench/results-sim/load.json}
BUILD=${BUILD:-build}
G=$BUILD/gpuos
L=$BUILD/bench/load_client
T=$(mktemp -d)
DPID=
trap '[ -n "$DPID" ] && kill -9 $DPID 2>/dev/null; rm -rf "$T"' EXIT
export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=30000
NOFILE=640
cat >"$T/conf" <<CONF
socket = $T/s
max_clients = 100000
max_clients_per_vgpu = 100000
max_queued_requests = 1024
max_queued_bytes = 4M
hello_timeout_ms = 5000
[device 0]
sim = default
policy = credit
[vgpu work]
compute = 50
copy = 80
memory = 50%
[vgpu flood]
compute = 50
copy = 20
memory = 10%
CONF
( ulimit -n $NOFILE; exec "$G" serve --config "$T/conf" ) 2>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/s" ]; do i=$((i + 1)); [ $i -gt 100 ] && { cat "$T/serve.log"; exit 1; }; sleep 0.1; done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$DPID/status"; }
rss0=$(rss)
( while kill -0 $DPID 2>/dev/null; do rss >>"$T/rss"; sleep 0.5; done ) &
"$L" workers "$N" work "$SECS" >"$T/workers.json" 2>"$T/workers.err" &
W=$!
sleep 2
"$L" connflood "$SECS" >"$T/conn.json" 2>&1 &
C=$!
"$L" queueflood flood "$SECS" >"$T/queue.json" 2>&1 &
Q=$!
wait $W; wrc=$?
wait $C; wait $Q
threads=$(ls /proc/$DPID/task | wc -l)
kill -TERM $DPID; wait $DPID; DPID=
maxc=$(sed -n 's/.*max_clients [0-9]* does not fit the descriptor limit [0-9]*: \([0-9]*\)/\1/p' "$T/serve.log")
/usr/bin/python3 - "$T" "$OUT" "$SECS" "$N" "$rss0" "$NOFILE" "${maxc:-0}" "$wrc" "$threads" <<'PY'
import json, sys, os, platform, datetime, subprocess
t, out, secs, n, rss0, nofile, maxc, wrc, threads = sys.argv[1:]
w = json.load(open(t + "/workers.json"))
conn = json.load(open(t + "/conn.json"))
q = json.load(open(t + "/queue.json"))
rss = [int(x) for x in open(t + "/rss").read().split()]
maxc = int(maxc)
# What the limits allow the daemon to hold: per connection a reader thread's
# stack (256 KiB) and its 64 KiB message buffer, per client the queued work
# (max_queued_bytes), plus the start-up resident set.
bound_kib = int(rss0) + maxc * (256 + 64) + (int(n) + 1) * 4 * 1024
res = {
    "schema": "gpuos.load/1",
    "what": "gpuos serve under load (issue 15); SIMULATED DEVICE: the daemon, limits, threads and memory are "
            "real, device copies and kernels are modelled",
    "date": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z",
    "host": platform.node(), "cpus": os.cpu_count(),
    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "seconds": float(secs), "legitimate_clients": int(n),
    "limits": {"descriptor_limit": int(nofile), "max_clients_fitted": maxc, "max_queued_requests": 1024,
               "max_queued_bytes": 4 << 20, "hello_timeout_ms": 5000},
    "workers": w, "connection_flood": conn, "queue_flood": q,
    "daemon_rss_kib": {"start": int(rss0), "max": max(rss), "last": rss[-1], "bound_from_limits": bound_kib},
    "daemon_threads_at_end": int(threads),
    "ok": w["corrupted_bytes"] == 0 and w["errors"] == 0 and w["clients_served"] == int(n) and max(rss) <= bound_kib,
}
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
json.dump(res, open(out, "w"), indent=2)
print(json.dumps(res, indent=2))
sys.exit(0 if res["ok"] else 1)
PY
