#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_placement.sh: the placement bench end to end on the simulated H200 (charted
# by `gpuos probe numa` first, as on the GPU): it must write its four JSON files,
# find >= 99.7 % of each view's units in their partition by latency, compute the
# GEMV exactly (it fails otherwise), and see remote reads cost more than local
# ones (the simulated chip charges the fabric). Bad input: no chart, a missing
# chart file, no --out.
set -eu
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
B=$BUILD/bench/placement_bench
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$G" probe numa --sim default --json "$tmp/chart.json" > /dev/null
"$B" --sim default --chart "$tmp/chart.json" --out "$tmp/out" --quick > "$tmp/log"
for f in check locality gemv unequal; do test -s "$tmp/out/placement-$f.json"; done
/usr/bin/python3 - "$tmp/out" "$tmp/log" <<'PY'
import json, re, sys
d = sys.argv[1]
# the GEMV table's ratios are named by what they divide: local's GB/s over the
# interleaved and the remap-only layouts', as placement-gemv.json has them
log = open(sys.argv[2]).read()
assert "\0" not in log and "local/inter " not in log, "the log holds NULs or the old label"
g = json.load(open(d + "/placement-gemv.json"))["rows"]
lines = [l for l in log.splitlines() if l.startswith("gemv") and "all-SMs" in l]
assert lines and len(lines) == len(g), (lines, len(g))
for l, r in zip(lines, g):
    v = r["variants"]
    for other in ("interleaved", "remap-only"):
        m = re.search(r"local/%s (\d+\.\d+)" % other, l)
        assert m, l
        want = v[other]["ms_median"] / v["local"]["ms_median"]
        assert abs(float(m.group(1)) - want) <= 0.0015 + 0.002 * want, (l, other, want)
c = json.load(open(d + "/placement-check.json"))
assert c["pass_99_7"] and all(v["fraction"] >= 0.997 for v in c["views"]), c["views"]
rows = json.load(open(d + "/placement-locality.json"))["rows"]
r = [x for x in rows if x["test"] == "read" and x["readers"] == "partition 0 SMs"][-1]["variants"]
assert r["remote"]["ms_median"] > 1.5 * r["local"]["ms_median"], r
assert json.load(open(d + "/placement-check.json"))["provenance"]["simulated"] is True
PY
unset GPUOS_CHIP
if "$B" --sim default --out "$tmp/x" 2> "$tmp/err"; then echo "no chart accepted"; exit 1; fi
grep -q "no chart" "$tmp/err"
if "$B" --sim default --chart /nonexistent.json --out "$tmp/x" 2> "$tmp/err"; then echo "missing chart accepted"; exit 1; fi
test -s "$tmp/err"
if "$B" --sim default --chart "$tmp/chart.json" 2> "$tmp/err"; then echo "no --out accepted"; exit 1; fi
grep -q "out" "$tmp/err"
echo "t_placement: ok"
