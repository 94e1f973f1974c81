#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ref_dvfs_trace.py: a trace directory written by another tool (this script) in
the contract format of docs/contracts.md, with known truth, analysed by `gpuos dvfs analyze`.

Truth: each measurement's switch happens at t_s + L (L drawn per measurement,
two of them long outliers); before it every SM runs iterations of the initial
frequency, after it of the target (the straddling iteration is mixed). The
analysis must give every viable measurement a latency within [L, L + 2
iterations], drop the measurements that never reach the target or land on a
wrong clock, flag the outliers, exclude the pairs whose calibrations are
indistinguishable, and summarise consistently with its own CSV files."""
import json, math, os, random, shutil, subprocess, sys, tempfile

G = os.environ.get("GPUOS", os.path.join(os.environ.get("BUILD", "build"), "gpuos"))
rng = random.Random(1234)
T = tempfile.mkdtemp()
RUN, OUT = os.path.join(T, "run"), os.path.join(T, "an")
SMS = [0, 7, 20, 33, 101]
CYCLES = 40000.0          # per iteration: 40000 cycles -> 22.2 us at 1800 MHz
T0 = 1_700_000_000_000_000_000


def it_ns(mhz):
    return CYCLES / (mhz * 1e-3)


def write_trace(path, segments, n_iter, t0, jitter=0.002):
    """segments: [(t_from_ns, mhz), ...] clock timeline (absolute GPU ns)."""
    rows = ["sm,iter,start_ns,end_ns"]
    for s in SMS:
        t = float(t0 + rng.uniform(0, 2000))
        for i in range(n_iter):
            c = CYCLES * (1 + jitter * rng.gauss(0, 1))
            start = t
            while c > 0:  # integrate the clock over the iteration
                f = [m for (tf, m) in segments if tf <= t][-1]
                nxt = min([tf for (tf, m) in segments if tf > t], default=math.inf)
                dt = c / (f * 1e-3)
                if t + dt <= nxt:
                    t += dt
                    c = 0
                else:
                    c -= (nxt - t) * f * 1e-3
                    t = nxt
            q0, q1 = int(start) // 32 * 32, int(t) // 32 * 32
            rows.append(f"{s},{i},{q0},{q1}")
            t += 8
    open(path, "w").write("\n".join(rows) + "\n")


os.makedirs(os.path.join(RUN, "calib"))
freqs = [1800, 1400, 1395]
json.dump({"schema": "gpuos.dvfs-run/1", "freqs_mhz": freqs, "host": "refhost",
           "device": {"name": "reference writer", "ordinal": 3}}, open(os.path.join(RUN, "run.json"), "w"))
for f in (1800, 1400):
    write_trace(os.path.join(RUN, "calib", f"{f}.csv"), [(0, f)], 3000, T0)
# 1395 MHz: the very same calibration as 1400: indistinguishable, so excluded
shutil.copy(os.path.join(RUN, "calib", "1400.csv"), os.path.join(RUN, "calib", "1395.csv"))

truth = {}      # (init, target) -> {k: L_ns or None (must not be viable)}
t = T0 + 10**9
for (a, b) in [(1800, 1400), (1400, 1800)]:
    d = os.path.join(RUN, "pairs", f"{a}-{b}")
    os.makedirs(d)
    truth[(a, b)] = {}
    for k in range(44):
        t_s = t + 300 * it_ns(a)
        L = rng.gauss(20e6 if b == 1400 else 9e6, 1.2e6)
        kind = "ok"
        if k in (5, 17):
            L = rng.uniform(70e6, 80e6)     # outliers
        segs = [(0, a), (t_s + L, b)]
        if k == 11:
            segs = [(0, a)]                 # the switch never happens
            kind = "none"
        if k == 29:
            segs = [(0, a), (t_s + L, 1600)]  # lands on a wrong clock
            kind = "none"
        n_iter = int(300 + 100e6 / it_ns(max(a, b)) + 500)
        write_trace(os.path.join(d, f"{k}.csv"), segs, n_iter, t)
        json.dump({"t_request_ns": int(t_s)}, open(os.path.join(d, f"{k}.json"), "w"))
        truth[(a, b)][k] = L if kind == "ok" else None
        t += 10**9

r = subprocess.run([G, "dvfs", "analyze", RUN, "--out", OUT], capture_output=True, text=True)
if r.returncode:
    sys.exit(f"FAIL analyze: {r.stderr}")
s = json.load(open(os.path.join(OUT, "summary.json")))
excl = {tuple(e) for e in s["excluded_pairs"]}
assert {(1400, 1395), (1395, 1400)} <= excl, excl
assert (1800, 1400) not in excl and (1400, 1800) not in excl, excl
pairs = {(p["init_mhz"], p["target_mhz"]): p for p in s["pairs"]}
checks = 0
for (a, b), meas in truth.items():
    p = pairs[(a, b)]
    assert p["file"] == f"{a}_{b}_refhost_3.csv", p["file"]
    rows = [r.split(",") for r in open(os.path.join(OUT, p["file"])).read().split("\n")[1:] if r]
    got = {int(r[0]): (float(r[1]), int(r[2]), int(r[3])) for r in rows}
    for k, L in meas.items():
        if L is None:
            assert k not in got, f"{a}->{b} measurement {k} should not be viable"
            continue
        assert k in got, f"{a}->{b} measurement {k} missing"
        lat = got[k][0] * 1e6
        # t_e ends the first target-like iteration: the straddling one (up to
        # one initial iteration) plus a target iteration, or one or two more
        # when the first fell outside mean +- 2 sd (5 % each, max over 5 SMs)
        assert L - 100 <= lat <= L + it_ns(a) + 3 * it_ns(b) + 200, f"{a}->{b} #{k}: {lat} ns vs truth {L}"
        checks += 1
    for k in (5, 17):
        assert got[k][1] == 1 and got[k][2] == -1, f"{a}->{b} outlier {k} not flagged: {got[k]}"
    kept = [v[0] for v in got.values() if not v[1]]
    assert len(kept) >= 0.9 * (len(got) - 2), "too many false outliers"
    assert p["n"] == len(kept) and p["n_outliers"] == len(got) - len(kept), p
    assert abs(p["mean_ms"] - sum(kept) / len(kept)) < 1e-9 and p["min_ms"] == min(kept) and p["max_ms"] == max(kept)
    truth_mean = sum(L for k, L in meas.items() if L is not None and k not in (5, 17) and not got[k][1]) / len(kept) / 1e6
    assert abs(p["mean_ms"] - truth_mean) < (it_ns(a) + 2 * it_ns(b)) / 1e6, (p["mean_ms"], truth_mean)
for (a, b) in [(1800, 1395), (1395, 1800)]:
    assert pairs[(a, b)]["n"] == 0 and pairs[(a, b)]["file"] is None, pairs[(a, b)]
shutil.rmtree(T)
print(f"ref_dvfs_trace: {checks} latencies within a few iterations of the truth, outliers and "
      f"non-viable measurements handled, indistinguishable pairs excluded")
