#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_dvfs_figures.sh: the figures of `gpuos dvfs report DIR...` (issue 26 item 2,
# paper 000 figures 5-9) from simulated campaigns of three GPUs (one with a
# two-cluster pair and outliers, one with a fourth frequency):
#   - one DIR: one scatter per pair, one point per measured switch (every row of
#     the pair's file, outliers as rings), at the positions its axes say;
#   - several DIRs (run and analysis directories mixed): the fleet view, whose
#     range heat maps hold the spread over the GPUs of each pair's min and max,
#     one range bar per GPU over its pairs, and one box per GPU of each of the 3
#     pairs whose boundaries spread most (chosen here from the summaries), the
#     boxes' quartiles and whiskers those of numpy/scipy on the pair's kept
#     latencies (Tukey, 1.5 IQR) and drawn where the y axis puts them;
#   - bad input: one line naming the directory or file, exit 1;
#   - Chromium renders the fleet page (non-blank screenshot; REPORT_PNG_DIR keeps
#     it) and its laid-out DOM holds as many visible points, boxes and bars as
#     the data has.
set -eu
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_err() { # pattern, command... : exit 1, one line on stderr holding pattern
    pat=$1; shift
    set +e
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "$* exited $rc: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$* printed $(wc -l <"$T/err") lines on stderr"
    grep -qF -- "$pat" "$T/err" || fail "$*: '$(cat "$T/err")' lacks '$pat'"
}

$PY - "$T" <<'PYEOF'
import json, sys
T = sys.argv[1]
for k in (1, 2, 3):
    dv = {"freqs_mhz": [1980, 1605, 1410, 1260] if k == 3 else [1980, 1605, 1260],
          "switch_ms": {"mean": 16 + 4 * k, "sd": 1.5 + k}, "outlier_rate": 0.06, "outlier_ms": [60, 90],
          "thermal_rate": 0}
    if k == 1:
        dv["pairs"] = {"1605-1260": {"clusters": [{"mean": 15, "sd": 0.7, "weight": 0.5},
                                                  {"mean": 35, "sd": 0.7, "weight": 0.5}]}}
    json.dump({"schema": "gpuos.chip/1",
               "device": {"name": "dvfs figure chip", "uuid": "GPU-sim-fig-%d" % k, "cc": "9.0", "sm_count": 8,
                          "l2_bytes": 1 << 20, "mem_bytes": 1 << 30, "sm_clock_mhz": 1980},
               "topology": {"gpcs": [{"sms": list(range(8)), "cluster_sms": list(range(8))}]},
               "sim": {"seed": 10 + k, "jitter": 0.03, "dvfs": dv}}, open(f"{T}/c{k}.json", "w"))
PYEOF
for k in 1 2 3; do
    f=1980,1605,1260
    [ $k -eq 3 ] && f=1980,1605,1410,1260
    "$G" dvfs run --sim "$T/c$k.json" --freqs $f --sms 2 --max-iters 2500 --min 25 --max 25 --quiet \
        --out "$T/r$k" >/dev/null || fail "campaign $k"
done
"$G" dvfs analyze "$T/r1" --out "$T/a1" --quiet || fail "analyze 1"
"$G" dvfs analyze "$T/r3" --out "$T/a3" --quiet || fail "analyze 3"
"$G" dvfs report "$T/a1" --html "$T/one.html" --quiet || fail "report of one GPU"
mkdir "$T/tmp"
# a run directory (r2) is analysed on the fly, and leaves nothing behind
TMPDIR="$T/tmp" "$G" dvfs report "$T/a1" "$T/r2" "$T/a3" --html "$T/fleet.html" >"$T/fleet.out" ||
    fail "fleet report"
[ -z "$(ls -A "$T/tmp")" ] || fail "temporary analysis left behind: $(ls "$T/tmp")"
grep -q "wrote $T/fleet.html" "$T/fleet.out" || fail "report did not say what it wrote"

$PY - "$T" "$G" <<'PYEOF' || fail "figures"
import csv, json, math, re, sys
import numpy as np
from scipy import stats
T = sys.argv[1]
ana = {"GPU-sim-fig-1": f"{T}/a1", "GPU-sim-fig-3": f"{T}/a3"}
# the run directory r2 was analysed by the report itself; its files, for reference
import subprocess
subprocess.run([sys.argv[2], "dvfs", "analyze", f"{T}/r2", "--out", f"{T}/a2", "--quiet"], check=True)
ana["GPU-sim-fig-2"] = f"{T}/a2"
uuids = sorted(ana)
data = {}  # uuid -> {(init, target): (summary pair, rows)}
for u, d in ana.items():
    s = json.load(open(f"{d}/summary.json"))
    assert s["device"]["uuid"] == u, s["device"]
    data[u] = {}
    for p in s["pairs"]:
        if p.get("file"):
            rows = list(csv.DictReader(open(f"{d}/{p['file']}")))
            data[u][(p["init_mhz"], p["target_mhz"])] = (p, rows)
n_pts = sum(len(r) for u in data for _, r in data[u].values())
n_out = sum(int(x["outlier"]) for u in data for _, r in data[u].values() for x in r)
assert n_out > 0, "the campaigns made no outliers: the rings are not tested"
assert any(p["clusters"] >= 2 for u in data for p, _ in data[u].values()), "no two-cluster pair"

def svgs(h):
    return {m.group(1): m.group(0) for m in re.finditer(r'<svg[^>]*data-figure="([^"]*)".*?</svg>', h, re.S)}

def yaxis(svg):
    """pixel = a + b * value, from the y tick labels (text-anchor end at y = Y(v) + 4)"""
    t = [(float(v), float(y) - 4) for y, v in re.findall(r'<text x="\d+" y="([-0-9.]+)" text-anchor="end">([-0-9.e]+)</text>', svg)]
    assert len(t) >= 3, t
    (v0, y0), (v1, y1) = t[0], t[-1]
    b = (y1 - y0) / (v1 - v0)
    assert b < 0, "y axis upside down"
    for v, y in t:
        assert abs(y - (y0 + b * (v - v0))) < 0.15, ("ticks not linear", t)
    return lambda v: y0 + b * (v - v0)

def check_scatter(fig, svg, rows):
    pts = re.findall(r'<circle class="pt( outlier)?" cx="([-0-9.]+)" cy="([-0-9.]+)"[^>]*data-x="([^"]+)" data-y="([^"]+)"', svg)
    assert len(pts) == len(rows), (fig, len(pts), len(rows))  # one point per measured switch
    assert sum(1 for p in pts if p[0]) == sum(int(r["outlier"]) for r in rows), fig
    got = sorted((int(float(p[3])), round(float(p[4]), 5), bool(p[0])) for p in pts)
    want = sorted((int(r["measurement"]), round(float(r["latency_ms"]), 5), r["outlier"] == "1") for r in rows)
    assert got == want, (fig, got[:3], want[:3])
    Y = yaxis(svg)
    for p in pts:
        assert abs(float(p[2]) - Y(float(p[4]))) < 0.3, (fig, "point off its axis", p)
    lo = min(float(p[2]) for p in pts); hi = max(float(p[2]) for p in pts)
    assert hi - lo > 20, (fig, "points squeezed together")

# one GPU: as before plus a scatter per pair, no fleet view
h = open(f"{T}/one.html").read()
assert "table II" in h and "Switching latency by direction" in h and "Fleet view" not in h
sv = svgs(h)
sc = {k: v for k, v in sv.items() if k.startswith("scatter ")}
assert len(sc) == len(data["GPU-sim-fig-1"]), sorted(sc)
for (i, t), (p, rows) in data["GPU-sim-fig-1"].items():
    check_scatter(f"one {i}-{t}", sc[f"scatter GPU-sim-fig-1 {i}-{t}"], rows)

# the fleet
h = open(f"{T}/fleet.html").read()
assert "<h1>SM frequency switching latency: fleet of 3 GPUs</h1>" in h
sv = svgs(h)
table = h.split("</table>")[0]
assert [u for u in re.findall(r'<a href="#gpu\d">([^<]+)</a>', table)] == ["GPU-sim-fig-1", "GPU-sim-fig-2", "GPU-sim-fig-3"]
for u in uuids:
    sec = h.split(f'data-gpu="{u}"')[1].split("</section>")[0]
    ssv = svgs(sec)
    assert len([k for k in ssv if k.startswith("scatter ")]) == len(data[u]), u
    for (i, t), (p, rows) in data[u].items():
        check_scatter(f"{u} {i}-{t}", ssv[f"scatter {u} {i}-{t}"], rows)
# figures 7, 8: the spread over the GPUs of each pair's min / max (pairs on >= 2 GPUs)
freqs = sorted({f for u in data for k in data[u] for f in k}, reverse=True)
assert 1410 in freqs
heats = re.findall(r"<svg[^>]*>\s*<rect[^>]*/>\s*<text[^>]*>Range of the (best|worst)-case latency across the GPUs.*?</svg>", h, re.S)
assert heats == ["best", "worst"], heats
for which, key in (("best", "min_ms"), ("worst", "max_ms")):
    svg = re.search(r"<svg[^>]*>\s*<rect[^>]*/>\s*<text[^>]*>Range of the %s-case.*?</svg>" % which, h, re.S).group(0)
    cells = re.findall(r'<text x="\d+" y="\d+" text-anchor="middle" fill="#[0-9a-f]+">([-0-9.]+)</text>', svg)
    want = []
    for i in freqs:
        for t in freqs:
            v = [data[u][(i, t)][0][key] for u in uuids if (i, t) in data[u]]
            want.append("%.2f" % (max(v) - min(v)) if i != t and len(v) >= 2 else "-")
    assert cells == want, (which, cells, want)
    assert "-" in want[1:], "every pair on two GPUs: the missing pairs are not tested"
# one range bar per GPU over its pairs, a tick per pair
for which, key in (("best", "min_ms"), ("worst", "max_ms")):
    svg = sv[f"ranges {which}"]
    bars = re.findall(r'<rect class="range"[^>]*data-lo="([^"]+)" data-hi="([^"]+)"', svg)
    assert len(bars) == len(uuids), (which, bars)
    for u, (lo, hi) in zip(uuids, bars):
        v = [p[key] for p, _ in data[u].values()]
        assert math.isclose(float(lo), min(v), rel_tol=1e-8) and math.isclose(float(hi), max(v), rel_tol=1e-8), (u, which)
    labels = re.findall(r'text-anchor="end">(GPU-[^<]+)</text>', svg)
    assert labels == uuids, labels
    assert svg.count('class="tick"') == sum(len(data[u]) for u in uuids)
# figure 9: the 3 pairs of the highest boundary spread, one box per GPU, numpy's numbers
spread = {}
for i in freqs:
    for t in freqs:
        ps = [data[u][(i, t)][0] for u in uuids if (i, t) in data[u]]
        if i != t and len(ps) >= 2:
            r = lambda k: max(p[k] for p in ps) - min(p[k] for p in ps)
            spread[(i, t)] = max(r("min_ms"), r("max_ms"))
chosen = sorted(spread, key=lambda k: -spread[k])[:3]
box = sv["boxes"]
groups = re.findall(r'text-anchor="middle">(\d+) \u2192 (\d+) MHz</text>', box)
assert [(int(a), int(b)) for a, b in groups] == chosen, (groups, chosen)
Y = yaxis(box)
boxes = re.findall(r'<g class="box" data-group="(\d+)" data-series="(\d+)" data-n="(\d+)" data-q1="([^"]+)" '
                   r'data-median="([^"]+)" data-q3="([^"]+)" data-lo="([^"]+)" data-hi="([^"]+)">(.*?)</g>', box, re.S)
assert len(boxes) == sum(1 for k in chosen for u in uuids if k in data[u]), len(boxes)
n_checked = 0
for g, s, n, q1, med, q3, lo, hi, body in boxes:
    k, u = chosen[int(g)], uuids[int(s)]
    x = np.array(sorted(float(r["latency_ms"]) for r in data[u][k][1] if r["outlier"] == "0"))
    assert int(n) == len(x) == data[u][k][0]["n"]
    wq1, wmed, wq3 = np.percentile(x, [25, 50, 75])
    iqr = stats.iqr(x)
    wlo, whi = x[x >= wq1 - 1.5 * iqr].min(), x[x <= wq3 + 1.5 * iqr].max()
    for name, got, want in (("q1", q1, wq1), ("median", med, wmed), ("q3", q3, wq3), ("lo", lo, wlo), ("hi", hi, whi)):
        assert math.isclose(float(got), float(want), rel_tol=1e-8), (k, u, name, got, want)
    fl = re.findall(r'class="flier"[^>]*data-y="([^"]+)"', body)
    assert len(fl) == int(((x < wlo) | (x > whi)).sum()), (k, u, "fliers")
    r = re.search(r'<rect class="iqr" x="[-0-9.]+" y="([-0-9.]+)" width="[-0-9.]+" height="([-0-9.]+)"', body)
    assert abs(float(r.group(1)) - Y(wq3)) < 0.3 and abs(float(r.group(1)) + float(r.group(2)) - Y(wq1)) < 0.3, (k, u, "box")
    m = re.search(r'<line class="median" x1="[-0-9.]+" y1="([-0-9.]+)"', body)
    assert abs(float(m.group(1)) - Y(wmed)) < 0.3, (k, u, "median")
    ys = [float(v) for v in re.findall(r'<line class="cap" x1="[-0-9.]+" y1="([-0-9.]+)"', body)]
    assert abs(ys[0] - Y(wlo)) < 0.3 and abs(ys[1] - Y(whi)) < 0.3, (k, u, "whiskers")
    n_checked += 1
legend = re.findall(r'<text x="[-0-9.]+" y="\d+">(GPU-[^<]+)</text>', box)
assert legend == uuids, legend
# what the rendered page must show
json.dump({"pt": n_pts, "outlier": n_out, "box": len(boxes), "range": 2 * len(uuids)}, open(f"{T}/want.json", "w"))
print(f"figures: {n_pts} switches ({n_out} outliers) in {sum(len(d) for d in data.values())} scatters, "
      f"{n_checked} boxes of {chosen} as numpy's")
PYEOF

# two GPUs without a pair in common: no ranges across them, no boxes, still a bar each
$PY - "$T/c3.json" "$T/c4.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c["device"]["uuid"] = "GPU-sim-fig-4"
json.dump(c, open(sys.argv[2], "w"))
PYEOF
"$G" dvfs run --sim "$T/c4.json" --freqs 1980,1410 --sms 2 --max-iters 2500 --min 25 --max 25 --quiet \
    --out "$T/r4" >/dev/null || fail "campaign 4"
"$G" dvfs report "$T/r4" "$T/a1" --html "$T/apart.html" --quiet || fail "report of GPUs without a common pair"
$PY - "$T/apart.html" <<'PYEOF' || fail "GPUs without a common pair"
import re, sys
h = open(sys.argv[1]).read()
assert "No pair was measured on two GPUs" in h and 'data-figure="boxes"' not in h and "across the GPUs [ms]" not in h
r = re.findall(r'data-figure="ranges.*?</svg>', h, re.S)
assert len(r) == 2 and all(len(re.findall(r'<rect class="range"', s)) == 2 for s in r), r
PYEOF

# bad input: one line naming the directory or file
"$G" dvfs report --help | grep -q "gpuos dvfs report DIR\.\.\. --html OUT" || fail "dvfs report --help synopsis"
set +e; "$G" dvfs report --html "$T/x.html" 2>"$T/err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q "which directory" "$T/err" || fail "report without a directory: $rc $(cat "$T/err")"
expect_err "$T/c1.json: not a directory" "$G" dvfs report "$T/c1.json" --html "$T/x.html"
expect_err "$T/nowhere: No such file" "$G" dvfs report "$T/a1" "$T/nowhere" --html "$T/x.html"
mkdir "$T/empty"
expect_err "$T/empty: neither a dvfs run directory" "$G" dvfs report "$T/empty" --html "$T/x.html"
expect_err "$T/r1: GPU GPU-sim-fig-1 is already in the report (from $T/a1)" "$G" dvfs report "$T/a1" "$T/r2" "$T/r1" \
    --html "$T/x.html"
cp -r "$T/a3" "$T/b"
f=$(ls "$T/b" | grep -m1 '^1980_1605_')
sed -i '3s/.*/3,abc,0,0/' "$T/b/$f"
expect_err "$T/b/$f:3: expected measurement" "$G" dvfs report "$T/b" --html "$T/x.html"
sed -i '3d' "$T/b/$f"
expect_err "$T/b/$f: " "$G" dvfs report "$T/b" --html "$T/x.html" # one kept row fewer than n
rm "$T/b/$f"
expect_err "cannot read $T/b/$f" "$G" dvfs report "$T/b" --html "$T/x.html"
echo '{"schema": "gpuos.dvfs-summary/1", "pairs": [' >"$T/b/summary.json"
expect_err "$T/b/summary.json" "$G" dvfs report "$T/b" --html "$T/x.html"
$PY - "$T/a3/summary.json" "$T/nouuid" <<'PYEOF'
import json, os, shutil, sys
s = json.load(open(sys.argv[1]))
shutil.copytree(os.path.dirname(sys.argv[1]), sys.argv[2])
del s["device"]["uuid"]
json.dump(s, open(sys.argv[2] + "/summary.json", "w"))
PYEOF
"$G" dvfs report "$T/nouuid" --html "$T/x.html" --quiet || fail "one GPU without a uuid"
expect_err "$T/nouuid: no device uuid" "$G" dvfs report "$T/a1" "$T/nouuid" --html "$T/x.html"
cp -r "$T/r2" "$T/rb"
printf 'sm,iter,start_ns,end_ns\n0,0,10,5\n' >"$T/rb/calib/1605.csv"
expect_err "$T/rb/calib/1605.csv:2: end_ns 5 before start_ns 10" "$G" dvfs report "$T/a1" "$T/rb" --html "$T/x.html"

if ! command -v chromium >/dev/null 2>&1; then
    echo "t_dvfs_figures: chromium not installed (apt-get install chromium): rendering not checked"
    exit 0
fi
export HOME="$T"
cat >"$T/count.js" <<'EOF2'
<script>
window.addEventListener('load', function () {
  var n = {pt: 0, outlier: 0, box: 0, range: 0, bad: 0};
  function shown(e, svg) {
    var r = e.getBoundingClientRect(), s = svg.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.left >= s.left - 1 && r.right <= s.right + 1 &&
           r.top >= s.top - 1 && r.bottom <= s.bottom + 1;
  }
  document.querySelectorAll('svg[data-figure]').forEach(function (svg) {
    [['circle.pt', 'pt'], ['circle.outlier', 'outlier'], ['g.box', 'box'], ['rect.range', 'range']].forEach(function (q) {
      svg.querySelectorAll(q[0]).forEach(function (e) { if (shown(e, svg)) n[q[1]]++; else n.bad++; });
    });
  });
  var p = document.createElement('pre');
  p.id = 'counts';
  p.textContent = 'COUNTS=' + JSON.stringify(n) + '=END';
  document.body.appendChild(p);
});
</script>
EOF2
sed "s#</body>#$(tr -d '\n' <"$T/count.js" | sed 's/[&#]/\\&/g')</body>#" "$T/fleet.html" >"$T/fleet-count.html"
timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$T/prof" --window-size=1350,1000 \
    --virtual-time-budget=5000 --dump-dom "file://$T/fleet-count.html" >"$T/fleet.dom" 2>"$T/log" ||
    { tail -3 "$T/log"; fail "chromium --dump-dom"; }
$PY - "$T" <<'PYEOF' || fail "rendered page"
import json, re, sys
T = sys.argv[1]
m = re.search(r"COUNTS=(\{.*?\})=END", open(f"{T}/fleet.dom").read())
assert m, "the counting script did not run"
got, want = json.loads(m.group(1)), json.load(open(f"{T}/want.json"))
assert got["bad"] == 0, f"{got['bad']} figure elements not drawn inside their picture"
for k in want:
    assert got[k] == want[k], f"rendered {got[k]} {k}, the data has {want[k]}"
print("rendered:", got)
PYEOF
timeout 90 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$T/prof" \
    --window-size=1350,3000 --screenshot="$T/fleet.png" "file://$T/fleet.html" >"$T/log" 2>&1 || fail "screenshot"
[ "$(wc -c <"$T/fleet.png")" -gt 100000 ] || fail "fleet screenshot looks blank ($(wc -c <"$T/fleet.png") bytes)"
[ -n "${REPORT_PNG_DIR:-}" ] && cp "$T/fleet.png" "$T/fleet.html" "$REPORT_PNG_DIR/"
echo "t_dvfs_figures: ok"
