#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_dvfs.sh: `gpuos dvfs` from the command line:
#   - the refusal without --allow-clock-changes (one line, exit 1, before any
#     device is opened);
#   - bad input gives one line and a non-zero exit, never a crash or a hang;
#   - a simulated campaign with a chip of known per-pair latencies (one pair
#     with two clusters) is saved, re-analysed offline, and recovers the
#     latencies it was given; the offline analysis reproduces the online one;
#   - the HTML report renders from the analysis, and from the run directory
#     (analysed on the fly) with the same figures;
#   - progress (issue 47): on a terminal (a pty through script(1)) "pair k of n,
#     about M minutes left" redrawn in place below the log lines and cleared at
#     the end; into a file the plain log lines alone.
set -eu
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# one line on stderr, the given exit status, nothing on stdout
expect_err() { # status, pattern, command...
    want=$1; pat=$2; shift 2
    set +e
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
    set -e
    [ "$rc" -eq "$want" ] || fail "$* exited $rc, expected $want: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$* printed $(wc -l <"$T/err") lines on stderr"
    grep -q -- "$pat" "$T/err" || fail "$*: '$(cat "$T/err")' lacks '$pat'"
}

expect_err 1 "refusing without --allow-clock-changes" "$G" dvfs run --freqs 1980,1605
expect_err 1 "refusing without --allow-clock-changes" "$G" dvfs run --freqs 1980,1605 --device 0
expect_err 2 "which subcommand" "$G" dvfs
expect_err 2 "unknown subcommand" "$G" dvfs fly
expect_err 2 "freqs wants" "$G" dvfs run --sim default --freqs 1980,abc
expect_err 2 "freqs wants" "$G" dvfs run --sim default --freqs 1980,
expect_err 2 "rse wants" "$G" dvfs run --sim default --freqs 1980,1605 --rse 0
expect_err 2 "larger than --max" "$G" dvfs run --sim default --freqs 1980,1605 --min 50 --max 30
expect_err 2 "unknown option" "$G" dvfs run --sim default --frobnicate
expect_err 1 "not a supported SM clock" "$G" dvfs run --sim default --freqs 1980,1234
# the refusal lists the clocks there are (issue 43.7): the default chip's five
grep -q "its 5 clocks: 1980, 1755, 1605, 1410, 1260 MHz" "$T/err" || fail "supported clocks not listed: $(cat "$T/err")"
expect_err 1 "listed twice" "$G" dvfs run --sim default --freqs 1980,1980
expect_err 1 "2..128 frequencies" "$G" dvfs run --sim default --freqs 1980
expect_err 2 "--out DIR is required" "$G" dvfs analyze "$T"
expect_err 1 "run.json" "$G" dvfs analyze "$T/nowhere" --out "$T/a"
expect_err 2 "--html OUT is required" "$G" dvfs report "$T"
expect_err 1 "nowhere: No such file" "$G" dvfs report "$T/nowhere" --html "$T/x.html"
expect_err 1 "neither a dvfs run directory" "$G" dvfs report "$T" --html "$T/x.html"
"$G" dvfs --help | grep -q "allow-clock-changes" || fail "dvfs --help"
"$G" dvfs run --help | grep -q "usage: gpuos dvfs run" || fail "dvfs run --help"

# malformed trace directories: one line naming the file
mkdir -p "$T/bad/calib"
echo '{"schema": "gpuos.dvfs-run/1", "freqs_mhz": [1980, 1605]}' >"$T/bad/run.json"
expect_err 1 "calib/1980.csv" "$G" dvfs analyze "$T/bad" --out "$T/a"
printf 'sm,iter,start_ns,end_ns\n0,0,10,5\n' >"$T/bad/calib/1980.csv"
expect_err 1 "1980.csv:2: end_ns 5 before start_ns 10" "$G" dvfs analyze "$T/bad" --out "$T/a"
echo '{"schema": "gpuos.dvfs-run/2", "freqs_mhz": [1980, 1605]}' >"$T/bad/run.json"
expect_err 1 "schema" "$G" dvfs analyze "$T/bad" --out "$T/a"
echo '{"schema": "gpuos.dvfs-run/1", "freqs_mhz": [1980, 1980]}' >"$T/bad/run.json"
expect_err 1 "listed twice" "$G" dvfs analyze "$T/bad" --out "$T/a"
echo 'not json' >"$T/bad/run.json"
expect_err 1 "run.json" "$G" dvfs analyze "$T/bad" --out "$T/a"

# a simulated campaign with known truth
"$PY" - "$T/chip.json" "$G" <<'PYEOF'
import json, sys
# the default chip's own JSON is not exposed by the CLI; a minimal valid chip
# with 8 SMs in one GPC is enough for the dvfs model
chip = {"schema": "gpuos.chip/1",
        "device": {"name": "dvfs test chip", "uuid": "SIM-dvfs-test", "cc": "9.0", "sm_count": 8,
                   "l2_bytes": 1 << 20, "mem_bytes": 1 << 30, "sm_clock_mhz": 1980},
        "topology": {"gpcs": [{"sms": list(range(8)), "cluster_sms": list(range(8))}]},
        "sim": {"seed": 7, "jitter": 0.03, "dvfs": {
            "freqs_mhz": [1980, 1605, 1260],
            "switch_ms": {"mean": 20, "sd": 2},
            "targets": {"1980": {"mean": 8, "sd": 1}},
            "pairs": {"1980-1260": {"mean": 40, "sd": 3},
                      "1605-1260": {"clusters": [{"mean": 15, "sd": 0.7, "weight": 0.5},
                                                 {"mean": 35, "sd": 0.7, "weight": 0.5}]}},
            "outlier_rate": 0.03, "outlier_ms": [70, 90], "thermal_rate": 0}}}
json.dump(chip, open(sys.argv[1], "w"))
PYEOF

# progress: a pty (script(1)) gets the status line, a file the plain log
"$G" dvfs run --sim "$T/chip.json" --freqs 1980,1605,1260 --sms 3 --max-iters 2500 --max 30 >"$T/plain.log" ||
    fail "campaign into a file"
script -qec "$G dvfs run --sim $T/chip.json --freqs 1980,1605,1260 --sms 3 --max-iters 2500 --max 30" /dev/null \
    >"$T/tty.log" || fail "campaign on a pty"
"$PY" - "$T/plain.log" "$T/tty.log" <<'PYEOF' || fail "progress on a terminal / plain log into a file"
import re, sys
plain, tty = (open(f, encoding="utf-8", errors="replace", newline="").read() for f in sys.argv[1:])
pair_lines = lambda t: re.findall(r"\d+ -> +\d+ MHz: +\d+ measurements", t)
assert len(pair_lines(plain)) == 6, pair_lines(plain)
assert "pair " not in plain and "\033" not in plain and "\r" not in plain, "status line in a file"
assert len(pair_lines(tty)) == 6, "log lines lost on the terminal"
st = re.findall(r"pair (\d) of (\d)(?:, (about (\d+) minutes? left|under a minute left))?", tty)
ks = [int(k) for k, n, _, _ in st]
assert ks and ks[0] == 1 and sorted(set(ks)) == list(range(1, 7)) and ks == sorted(ks), ks
assert all(n == "6" for _, n, _, _ in st)
assert not [e for k, _, e, _ in st if k == "1" and e], "an estimate before any pair was measured"
assert all(e for k, _, e, _ in st if k != "1"), [s for s in st if not s[2]]
# drawn in place: every status is cleared (CR, erase line) before the next text
assert tty.count("\r\033[K") >= len(st), (tty.count("\r\033[K"), len(st))
last = tty.rindex("pair 6 of 6")
assert tty.index("\r\033[K", last) < tty.index("init", last), "status line not cleared before the table"
PYEOF
# a real GPU's ladder of clocks in 15 MHz steps is listed by its runs
"$PY" - "$T/chip.json" "$T/ladder.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["sim"]["dvfs"] = {"freqs_mhz": list(range(1980, 1499, -15)) + [1200, 1000, 990, 980, 970, 600]}
json.dump(c, open(sys.argv[2], "w"))
PYEOF
expect_err 1 "its 39 clocks: 1980-1500 every 15, 1200, 1000-970 every 10, 600 MHz" \
    "$G" dvfs run --sim "$T/ladder.json" --freqs 1980,1234
# --json -: the JSON alone on standard output (issue 43.7: text came first)
"$G" dvfs run --sim "$T/chip.json" --freqs 1980,1605 --sms 2 --max-iters 2500 --min 4 --max 8 --json - \
    >"$T/run-stdout.json" 2>"$T/run-stderr" || fail "dvfs run --json -: $(cat "$T/run-stderr")"
"$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['schema'] == 'gpuos.dvfs-campaign/1'" \
    "$T/run-stdout.json" || fail "dvfs run --json - is not JSON alone: $(head -c 200 "$T/run-stdout.json")"
"$G" dvfs probe --sim "$T/chip.json" --json - >"$T/probe-stdout.json" 2>"$T/probe-stderr" ||
    fail "dvfs probe --json -: $(cat "$T/probe-stderr")"
"$PY" -c "import json,sys; assert json.load(open(sys.argv[1]))['schema'] == 'gpuos.dvfs-probe/1'" \
    "$T/probe-stdout.json" || fail "dvfs probe --json - is not JSON alone: $(head -c 200 "$T/probe-stdout.json")"
"$G" dvfs run --sim "$T/chip.json" --freqs 1980,1605,1260 --sms 3 --max-iters 2500 --max 80 \
    --out "$T/run" >"$T/run.log" || { cat "$T/run.log"; fail "simulated campaign"; }
"$G" dvfs analyze "$T/run" --out "$T/an" >"$T/an.log" || fail "analyze: $(cat "$T/an.log")"
"$G" dvfs report "$T/an" --html "$T/report.html" >/dev/null || fail "report"
grep -q "table II" "$T/report.html" || fail "report lacks table II"
grep -q "<svg" "$T/report.html" || fail "report lacks the distribution plot"
# the run directory itself: analysed on the fly, the same figures
"$G" dvfs report "$T/run" --html "$T/report-run.html" >/dev/null || fail "report of the run directory"
"$PY" - "$T/report.html" "$T/report-run.html" <<'PYEOF' || fail "figures of the run and of its analysis differ"
import re, sys
a, b = (re.findall(r"<svg.*?</svg>", open(f).read(), re.S) for f in sys.argv[1:])
assert len(a) >= 9 and a == b, (len(a), len(b))
PYEOF
"$PY" - "$T" <<'PYEOF'
import json, math, os, re, sys, glob
T = sys.argv[1]
s = json.load(open(f"{T}/an/summary.json"))
run = json.load(open(f"{T}/run/run.json"))
truth = {(1980, 1605): 20, (1980, 1260): 40, (1605, 1980): 8, (1605, 1260): 25,
         (1260, 1980): 8, (1260, 1605): 20}
iter_ms = {c["mhz"]: c["mean_ns"] / 1e6 for c in run["calibration"]}
assert run["campaign"]["measurements"] > 0, "no measurements"
assert not s["excluded_pairs"], s["excluded_pairs"]
pairs = {(p["init_mhz"], p["target_mhz"]): p for p in s["pairs"]}
assert set(pairs) == set(truth), sorted(pairs)
for k, want in truth.items():
    p = pairs[k]
    n = p["n"]
    assert n >= 20, (k, n)
    # the estimate is t_e - t_s: the switch plus at most one iteration of each clock
    tol = 4 * p["sd_ms"] / math.sqrt(n) + iter_ms[k[0]] + 2 * iter_ms[k[1]]
    got = p["mean_ms"]
    assert abs(got - want) <= tol, f"{k}: mean {got:.3f} ms, truth {want} ms, tolerance {tol:.3f}"
    assert p["max_ms"] < 60, f"{k}: outliers (70-90 ms) not filtered: max {p['max_ms']}"
    f = f"{T}/an/{p['file']}"
    assert re.match(rf"{k[0]}_{k[1]}_[^_]+_SIM-dvfs-test\.csv$", p["file"]), p["file"]
    rows = open(f).read().split("\n")
    assert rows[0] == "measurement,latency_ms,outlier,cluster", rows[0]
# the two-cluster pair: two clusters, well separated, near 15 and 35 ms
p = pairs[(1605, 1260)]
assert p["clusters"] == 2, p
assert p["silhouette"] is not None and p["silhouette"] > 0.7, p
lat = [float(r.split(",")[1]) for r in open(f"{T}/an/{p['file']}").read().split("\n")[1:] if r and r.split(",")[2] == "0"]
lo = [x for x in lat if x < 25]; hi = [x for x in lat if x >= 25]
assert abs(sum(lo) / len(lo) - 15) < 1 and abs(sum(hi) / len(hi) - 35) < 1, (len(lo), len(hi))
# offline analysis reproduces every online latency
for k in truth:
    d = f"{T}/run/pairs/{k[0]}-{k[1]}"
    online = {}
    for j in glob.glob(f"{d}/*.json"):
        m = json.load(open(j))
        if "latency_ms" in m:
            online[int(os.path.basename(j)[:-5])] = m["latency_ms"]
    offline = {int(r.split(",")[0]): float(r.split(",")[1])
               for r in open(f"{T}/an/{pairs[k]['file']}").read().split("\n")[1:] if r}
    assert set(online) == set(offline), (k, sorted(set(online) ^ set(offline)))
    assert all(abs(online[m] - offline[m]) < 1e-5 for m in online), k
print("recovered", {f"{a}->{b}": round(pairs[(a, b)]["mean_ms"], 2) for a, b in truth})
PYEOF
# a pair 20x slower than the pairs that sized the window (1260 -> 1605 is not
# among them): still measured, and so is the pair whose every measurement has
# to switch back over it first (1605 -> 1260)
"$PY" - "$T/slow.json" <<'PYEOF'
import json, sys
chip = {"schema": "gpuos.chip/1",
        "device": {"name": "slow pair chip", "uuid": "SIM-slow", "cc": "9.0", "sm_count": 8,
                   "l2_bytes": 1 << 20, "mem_bytes": 1 << 30, "sm_clock_mhz": 1980},
        "topology": {"gpcs": [{"sms": list(range(8)), "cluster_sms": list(range(8))}]},
        "sim": {"seed": 3, "dvfs": {"freqs_mhz": [1980, 1605, 1260], "switch_ms": {"mean": 20, "sd": 2},
                "pairs": {"1260-1605": {"mean": 400, "sd": 10}}, "outlier_rate": 0, "thermal_rate": 0}}}
json.dump(chip, open(sys.argv[1], "w"))
PYEOF
"$G" dvfs run --sim "$T/slow.json" --freqs 1980,1605,1260 --sms 2 --max-iters 2000 --max 30 --quiet \
    --json "$T/slow-res.json" || fail "slow pair campaign"
"$PY" - "$T/slow-res.json" <<'PYEOF'
import json, sys
r = {(p["init_mhz"], p["target_mhz"]): p for p in json.load(open(sys.argv[1]))["pairs"]}
for k, want, tol in (((1260, 1605), 400, 12), ((1605, 1260), 20, 3), ((1980, 1605), 20, 3)):
    assert "mean_ms" in r[k] and abs(r[k]["mean_ms"] - want) < tol, (k, r[k])
PYEOF

# SIGINT and SIGTERM mid-campaign: the campaign unwinds, restores the clock
# and says so in one line (exit 1); it never hangs
for sig in INT TERM; do
    "$G" dvfs run --sim default --freqs 1980,1755,1605,1410,1260 --max 500 --rse 0.1 --quiet \
        >"$T/sig.out" 2>"$T/sig.err" &
    pid=$!
    sleep 1
    kill -$sig $pid
    set +e
    wait $pid
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "SIG$sig: exit $rc ($(cat "$T/sig.err"))"
    grep -q "interrupted by signal .*; SM clocks restored" "$T/sig.err" || fail "SIG$sig: $(cat "$T/sig.err")"
    [ "$(wc -l <"$T/sig.err")" -eq 1 ] || fail "SIG$sig: more than one line"
done
echo "t_dvfs: ok"
