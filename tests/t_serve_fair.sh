#!/bin/sh
# t_serve_fair.sh: scheduling through the real daemon on the simulated device
# (issue 4.5, 4.8): bursty closed-loop clients of equal shares whose kernels
# differ 10x (1 ms vs 10 ms), GPU time measured by the daemon's own accounting.
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

timeout 120 "$B/bench/vgpu_bench" --gpuos "$G" --sim default --quick --seconds 3 --only fairness,queues --isolation process \
    --policies fifo,band --vgpus 2,4,8 --out "$T/f.json" 2>"$T/log" || { cat "$T/log"; fail "bench"; }
cat "$T/log"
$PY - "$T/f.json" <<'PY' || fail "fairness properties"
import json, sys
d = json.load(open(sys.argv[1]))
f = {(x["policy"] + ("" if x["band_charge_hold"] < 0 else str(x["band_charge_hold"])), x["vgpus"]): x
     for x in d["fairness"]}
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok &= cond
for n in (2, 4, 8):
    x = f[("fifo", n)]
    check(abs(sum(x["achieved"]) - 1) < 1e-6, "fifo %d: achieved shares sum to 1" % n)
    check(x["gpu_busy"] > 0.8, "fifo %d: GPU busy %.2f" % (n, x["gpu_busy"]))
check(f[("fifo", 2)]["max_error_pct"] > 20, "fifo 2: long kernels dominate (error %.1f)" % f[("fifo", 2)]["max_error_pct"])
for n in (2, 4, 8):
    e = f[("band0", n)]["max_error_pct"]
    check(e <= 2.0, "band, holds not charged, %d vGPUs: GPU-time error %.2f points <= 2" % (n, e))
    x = f[("band1", n)]
    e = 100 * max(abs(a - 1.0 / n) for a in x["achieved_engine_time"])
    check(e <= 2.0, "band, holds charged, %d vGPUs: engine-time error %.2f points <= 2" % (n, e))
    check(x["max_error_pct"] < f[("fifo", n)]["max_error_pct"] / 3,
          "band, holds charged, %d vGPUs: GPU-time error %.1f far under fifo's %.1f" %
          (n, x["max_error_pct"], f[("fifo", n)]["max_error_pct"]))
q = {x["queue"]: x for x in d["queues"]}
m, s = q["mrq"], q["sdq"]
check(m["compute_busy"] > 0.8, "mrq: compute stays busy next to copies (%.2f)" % m["compute_busy"])
check(m["compute_busy"] > 1.5 * s["compute_busy"],
      "mrq compute %.2f > 1.5 x sdq %.2f" % (m["compute_busy"], s["compute_busy"]))
check(m["copy_gbps"] > 1.3 * s["copy_gbps"], "mrq copies %.2f GB/s > 1.3 x sdq %.2f" % (m["copy_gbps"], s["copy_gbps"]))
sys.exit(0 if ok else 1)
PY
echo "t_serve_fair: ok"
