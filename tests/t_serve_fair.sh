#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_fair.sh: scheduling through the real daemon on the simulated device
# (issue 4.5, 4.8): bursty closed-loop clients of equal shares whose kernels
# differ 10x (1 ms vs 10 ms), and 70/30 with equal 1 ms kernels, GPU time
# measured by the daemon's own accounting.
#   FIFO favours the long kernels (error far above 10 points); BAND keeps every
#   vGPU within 2 percentage points of its share of GPU time with 2, 4 and 8
#   vGPUs when its holds are not charged (band_charge_hold = 0, Gdev's metric),
#   and of engine time (GPU + held) when they are (the default); MRQ overlaps
#   compute and copy clients where SDQ serialises them.
set -u
B=${BUILD:-build}
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# CPU contention during a run, from the kernel's pressure stall information:
# the share of wall time some task waited for a CPU (/proc/pressure/cpu), else
# the load average per CPU. Closed-loop clients starved of CPU cannot keep the
# engines fed, so the absolute thresholds (GPU busy, points of error) describe
# the host then, not the scheduler.
psi() { sed -n 's/^some .*total=\([0-9]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null; }
now_us() { $PY -c "import time; print(int(time.monotonic() * 1e6))"; }
contended() { # PSI0 T0: prints the pressure (or load per CPU) and succeeds when over 0.25
    p1=$(psi); t1=$(now_us)
    if [ -n "$1" ] && [ -n "$p1" ]; then
        $PY -c "import sys; p = ($p1 - $1) / max(1, $t1 - $2); print('cpu pressure %.2f' % p); sys.exit(0 if p > 0.25 else 1)"
    else
        $PY -c "import os, sys; l = os.getloadavg()[0] / os.cpu_count(); print('load %.2f per cpu' % l); sys.exit(0 if l > 1.0 else 1)"
    fi
}
# Up to 2 runs: a run on an uncontended host decides with every threshold; a
# failure under contention is run again; if both runs were contended, only the
# comparisons that survive starved clients are asserted, with smaller margins:
# shares summing to 1, FIFO's long kernels dominating, BAND's error under 3/4 of
# FIFO's, MRQ's compute busy above 1.2x SDQ's (copy throughput is CPU-bound then).
cat > "$T/check.py" <<'PY'
import json, sys
# argv[1]: FIFO on the socket path (the scheduler's queues alone: Gdev's
# reference, where long kernels dominate); argv[2]: BAND and the queues on the
# rings (issue 22: every busy client on its ring, grants rotated by the policy);
# the queues (MRQ, SDQ) are argv[1]'s
ref = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
key = lambda x: x["policy"] + ("" if x["band_charge_hold"] < 0 else str(x["band_charge_hold"]))
f = {(key(x), x["vgpus"]): x for x in ref["fairness"] + d["fairness"] if x["mix"] == "1/10 ms"}
# 70/30 with equal kernels (issue 22): two vGPUs of unequal shares
u = {key(x): x for x in d["fairness"] if x["mix"].startswith("70/30")}
strict = sys.argv[3] == "strict"
ok = True
def check(cond, what, absolute=False):
    """absolute: a threshold that assumes the clients get the CPU they ask for."""
    global ok
    if absolute and not strict:
        print(("ok   " if cond else "skip ") + what + " (host CPU-contended: not asserted)")
        return
    print(("ok   " if cond else "FAIL ") + what)
    ok &= cond
for n in (2, 4, 8):
    x = f[("fifo", n)]
    check(abs(sum(x["achieved"]) - 1) < 1e-6, "fifo %d: achieved shares sum to 1" % n)
    check(x["gpu_busy"] > 0.8, "fifo %d: GPU busy %.2f" % (n, x["gpu_busy"]), True)
check(f[("fifo", 2)]["max_error_pct"] > 20, "fifo 2: long kernels dominate (error %.1f)" % f[("fifo", 2)]["max_error_pct"])
for n in (2, 4, 8):
    e = f[("band0", n)]["max_error_pct"]
    check(e <= 2.0, "band, holds not charged, %d vGPUs: GPU-time error %.2f points <= 2" % (n, e), True)
    x = f[("band1", n)]
    e = 100 * max(abs(a - 1.0 / n) for a in x["achieved_engine_time"])
    check(e <= 2.0, "band, holds charged, %d vGPUs: engine-time error %.2f points <= 2" % (n, e), True)
    # far under FIFO's; under contention still clearly under it
    k = 3 if strict else 4 / 3
    check(x["max_error_pct"] < f[("fifo", n)]["max_error_pct"] / k,
          "band, holds charged, %d vGPUs: GPU-time error %.1f under fifo's %.1f / %.2f" %
          (n, x["max_error_pct"], f[("fifo", n)]["max_error_pct"], k))
for h in ("band0", "band1"):
    x = u[h]
    check(x["shares"] == [0.7, 0.3], "%s 70/30: the shares asked (%s)" % (h, x["shares"]))
    a = x["achieved_engine_time"] if h == "band1" else x["achieved"]
    e = 100 * max(abs(a[i] - x["shares"][i]) for i in range(2))
    check(e <= 2.0, "%s 70/30, equal 1 ms kernels: error %.2f points <= 2" % (h, e), True)
    # starved or not, the larger share gets clearly more (an equal split is 20 points off)
    check(abs(x["achieved"][0] - 0.7) < 0.08, "%s 70/30: the 70 %% vGPU's GPU time %.3f within 8 points" % (h, x["achieved"][0]))
# MRQ against SDQ: the scheduler's queues on the socket path (on rings the
# overlap comes from copy and compute grants, not measured here: issue 22 notes)
q = {x["queue"]: x for x in ref["queues"]}
m, s = q["mrq"], q["sdq"]
check(m["compute_busy"] > 0.8, "mrq: compute stays busy next to copies (%.2f)" % m["compute_busy"], True)
kc = 1.5 if strict else 1.2
check(m["compute_busy"] > kc * s["compute_busy"],
      "mrq compute %.2f > %.1f x sdq %.2f" % (m["compute_busy"], kc, s["compute_busy"]))
# pageable copies need the host's CPU (bounce buffers): CPU-bound when starved
check(m["copy_gbps"] > 1.3 * s["copy_gbps"], "mrq copies %.2f GB/s > 1.3 x sdq %.2f" % (m["copy_gbps"], s["copy_gbps"]),
      True)
sys.exit(0 if ok else 1)
PY
attempt=1
while :; do
    p0=$(psi); t0=$(now_us)
    # BAND with the fast path on (the default): every busy client runs on its
    # ring, the policy rotating the grants (issue 22). The bench's clients all
    # open their vGPUs before any starts (its gate). FIFO's reference runs on
    # the socket path: on rings FIFO takes turns by grants and is no longer the
    # unfair baseline the comparison needs.
    GPUOS_RING=0 timeout 120 "$B/bench/vgpu_bench" --gpuos "$G" --sim default --quick --seconds 3 --only fairness,queues \
        --isolation process --policies fifo --vgpus 2,4,8 --out "$T/fifo.json" 2>"$T/log" || { cat "$T/log"; fail "bench"; }
    cat "$T/log"
    timeout 120 "$B/bench/vgpu_bench" --gpuos "$G" --sim default --quick --seconds 3 --only fairness --isolation process \
        --policies band --vgpus 2,4,8,70/30 --out "$T/f.json" 2>"$T/log" || { cat "$T/log"; fail "bench"; }
    cat "$T/log"
    if note=$(contended "$p0" "$t0"); then hot=1; else hot=0; fi
    echo "run $attempt: $note"
    # FAIR_HOST=slow (tests/ci_hostile.sh: a sanitized daemon, several times
    # slower, is a starved host by construction): only the comparisons that hold
    # under contention are asserted; `make test` asserts every threshold
    if [ "${FAIR_HOST:-}" = slow ]; then
        $PY "$T/check.py" "$T/fifo.json" "$T/f.json" contended || fail "fairness properties (even those that hold under contention)"
        echo "t_serve_fair: FAIR_HOST=slow: absolute thresholds not asserted"
        break
    fi
    $PY "$T/check.py" "$T/fifo.json" "$T/f.json" strict && break
    [ $hot -eq 1 ] || fail "fairness properties on an uncontended host"
    if [ $attempt -ge 2 ]; then
        $PY "$T/check.py" "$T/fifo.json" "$T/f.json" contended || fail "fairness properties (even those that hold under contention)"
        echo "t_serve_fair: host CPU-contended in both runs: absolute thresholds not asserted"
        break
    fi
    attempt=$((attempt + 1))
done
echo "t_serve_fair: ok"
