#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_report_pages.sh: the report's pictures and pages (issue 14 item 7) on charts of
# simulated chips, rendered in headless Chromium:
#   - a full chart: the one-partition L2 curve is drawn (its legend names the chart's
#     effective size), the L2-contention heat map holds exactly the chart's gains
#     (every cell, in order) with the placed GPC outlined, the GPC-pair matrix
#     holds the chart's ratios;
#   - a topology-only chart: no table row without a value of this chip, the memory
#     sections say they were not probed, the heat maps are still there;
#   - a fleet of three GPUs (three chart files): one row and one floor plan each,
#     the configuration counts add up to three; --markdown of a fleet is refused;
#   - the DVFS page of one simulated GPU (heat maps, violins, the scatter of every
#     switch) and of two (the fleet view);
#   - on every page, no two labels of a picture overlap and none leaves its picture:
#     a copy of the page with a checking script (the page itself has none) is laid
#     out by Chromium, which measures every <text> box (--dump-dom).
set -eu
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$G" probe all --sim default --json "$T/full.json" >/dev/null || fail "probe all"
"$G" report "$T/full.json" --html "$T/full.html" >/dev/null || fail "report full"
$PY - "$T/full.json" "$T/full.html" <<'PYEOF' || fail "full page content"
import json, re, sys
c = json.load(open(sys.argv[1])); h = open(sys.argv[2]).read()
m, t = c["memory"], c["topology"]
svgs = re.findall(r"<svg.*?</svg>", h, re.S)
# the one-partition curve, with its knee in the legend; the marker is that knee,
# the headline, without the paper's 65.8 % (that is every SM's, in the table); the
# every-SM curve's knee (no capacity) is not marked; MiB throughout
e = m["l2_effective_bytes_one_partition"] / 2**20
assert f"one partition's SMs read every page (knee {e:.1f} MiB)" in h, "one-partition curve"
curve = [s for s in svgs if "Read bandwidth against working-set size" in s][0]
assert curve.count("<polyline") == 3, "three curves"
assert "#e69f00" in curve, "one-partition curve colour"
pct = 100 * m["l2_effective_bytes_one_partition"] / c["device"]["l2_bytes"]
assert f"one partition: {e:.1f} MiB = {pct:.1f} % of L2 (no paper figure)" in curve, "headline marker"
# the paper's 65.8 % is of every SM reading every page: never beside the one-partition knee
assert "65.8" not in "".join(re.findall(r"<text[^>]*>([^<]*)</text>", curve)), "the one-partition curve compared with the paper's all-SM figure"
e1 = m["l2_effective_bytes_shared"] / 2**20
assert f"{e1:.1f} MiB" not in curve.split("every SM reads every page")[0], "the every-SM knee is marked"
assert not re.search(r"\d MB\b|\(MB\)", curve), "MB and MiB mixed in the curve"
# the latency histograms mark the medians beside the paper's (Fig. 4, Fig. 5)
hbm = [s for s in svgs if "HBM access latency" in s][0]
tiers = c["numa"]["hbm_tiers"]
assert "local median %.0f (paper ~490, Fig. 4)" % tiers["near_median"] in hbm, "HBM local marker"
assert "remote median %.0f (paper ~655, Fig. 4)" % tiers["far_median"] in hbm, "HBM remote marker"
l2h = [s for s in svgs if "L2 hit latency" in s][0]
l2 = m["l2_latency_cycles"]
assert "local median %.0f (paper ~309, Fig. 5)" % l2["local"] in l2h and "remote median %.0f (paper ~466, Fig. 5)" % l2["remote"] in l2h
# the contention heat map: every cell the chart's gain, row by row
heat = [s for s in svgs if "L2 contention of each free-floating SM" in s]
assert len(heat) == 1, "contention heat map"
cells = re.findall(r'<text x="\d+" y="\d+" text-anchor="middle" fill="#[0-9a-f]+">([-0-9.]+)</text>', heat[0])
want = ["%.2f" % g for p in t["placements"] for g in p["gain_vs_lone_per_gpc"]]
assert cells == want, (cells[:10], want[:10])
# every cell lies on the colour scale: its end labels span every value (the gains
# pass 1 and go below 0), and the legend says the scale was widened
for hm in heat + [s for s in svgs if "GPC pairs: L2 bandwidth" in s]:
    lo, hi = map(float, re.search(r'text-anchor="end">([-0-9.]+)</text><text x="\d+" y="\d+">([-0-9.]+)</text>', hm).groups())
    vals = [float(v) for v in re.findall(r'fill="#[0-9a-f]+">(-?[0-9][0-9.]*)</text>', hm)]
    assert vals and lo <= min(vals) and max(vals) <= hi, "heat map cells %g..%g outside its scale %g..%g" % (min(vals), max(vals), lo, hi)
    slo, shi = float(re.search(r'data-scale-lo="([^"]+)"', hm).group(1)), float(re.search(r'data-scale-hi="([^"]+)"', hm).group(1))
    assert all(slo <= float(v) <= shi for v in re.findall(r'data-v="([^"]+)"', hm)), "a cell off the scale"
assert "colour scale widened from 0..1 to the data's range" in heat[0], "widened scale not said"
assert sorted(s for p in t["placements"] for s in p["sms"]) == sorted(t["free_floating_sms"]) and t["placements"]
assert heat[0].count('stroke="#d62728" stroke-width="2.5"') == len(t["placements"]), "placed GPC outlines"
rows = re.findall(r'text-anchor="end">(SMs? [0-9+]+)</text>', heat[0])
assert rows == [("SMs %d+%d" % tuple(p["sms"])) if len(p["sms"]) == 2 else "SM %d" % p["sms"][0]
                for p in t["placements"]], rows
# the GPC-pair matrix
pair = [s for s in svgs if "GPC pairs: L2 bandwidth of two GPCs" in s][0]
cells = re.findall(r'<text x="\d+" y="\d+" text-anchor="middle" fill="#[0-9a-f]+">([-0-9.]+)</text>', pair)
want = ["-" if v is None else "%.2f" % v for r in t["gpc_pair_bw_ratio"] for v in r]
assert cells == want, (cells[:10], want[:10])
print("full page: ok")
PYEOF

cat > "$T/topo.json" <<'JSON'
{"schema": "gpuos.chip/1", "device": {"name": "topology only", "uuid": "SIM-topo", "sm_count": 24},
 "topology": {"gpcs": [
   {"sms": [0,1,2,3,4,5,6,7], "cluster_sms": [0,1,2,3,4,5,6,7]},
   {"sms": [8,9,10,11,12,13,14,15], "cluster_sms": [8,9,10,11,12,13]},
   {"sms": [16,17,18,19,20,21,22,23], "cluster_sms": [16,17,18,19,20,21,22,23]}]}}
JSON
"$G" probe topology --sim "$T/topo.json" --json "$T/topo-chart.json" >/dev/null || fail "probe topology-only"
"$G" report "$T/topo-chart.json" --html "$T/topo.html" >/dev/null || fail "report topology-only"
$PY - "$T/topo.html" <<'PYEOF' || fail "topology-only page"
import re, sys
h = open(sys.argv[1]).read()
# every table row has a value of this chip in its second cell
for row in re.findall(r"<tr>(.*?)</tr>", h, re.S):
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert not cells or cells[1] not in ("-", ""), "empty row: " + row
assert "No memory figures in this chart" in h
assert "L2 contention of each free-floating SM" in h and "GPC pairs" in h
assert "SIMULATED" in h
print("topology-only page: ok")
PYEOF

# a fleet of three different (simulated) GPUs
for k in 1 2 3; do
    $PY - "$T/full.json" "$T/f$k.json" "$k" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); k = int(sys.argv[3])
c["device"]["uuid"] = "SIM-fleet-%d" % k
if k == 3:  # another configuration: one GPC loses two SMs to GPC 0's free-floating set
    for key in ("memory", "numa"):
        c.pop(key, None)
json.dump(c, open(sys.argv[2], "w"))
PYEOF
done
"$G" report "$T/f1.json" "$T/f2.json" "$T/f3.json" --html "$T/fleet.html" >/dev/null || fail "fleet report"
$PY - "$T/fleet.html" <<'PYEOF' || fail "fleet page"
import re, sys
h = open(sys.argv[1]).read()
assert "<h1>Fleet: 3 GPUs</h1>" in h
# a summary table first: the GPUs, the configurations, each measure's median and range
assert h.index("<h2>Summary</h2>") < h.index("<h2>GPC configurations</h2>") < h.index("<h2>Side by side</h2>"), "no summary at the top"
summ = h.split("<h2>Summary</h2>")[1].split("</table>")[0]
assert "<tr><td>GPUs charted</td><td>3</td><td colspan=3>1 GPC configuration</td></tr>" in summ, summ
assert re.search(r"<tr><td>HBM GB/s, local pages</td><td>2</td>(<td>[0-9]+</td>){3}</tr>", summ), summ
# like chips share one floor plan, headed by (and linked to) each of them: the two
# charts with partitions one picture, the third (no partitions) its own
assert h.count("Floor plan: SMs by GPC") == 2, h.count("Floor plan: SMs by GPC")
heads = re.findall(r"<h3>(.*?)</h3>", h)
assert len(heads) == 2 and '<span id="gpu0">' in heads[0] and '<span id="gpu1">' in heads[0] and '<span id="gpu2">' in heads[1], heads
side = h.split("<h2>Side by side</h2>")[1].split("</table>")[0]
assert len(re.findall(r"<tr><td><a href=", side)) == 3
for k in (1, 2, 3):
    assert 'title="SIM-fleet-%d"' % k in side
conf = h.split("<h2>GPC configurations</h2>")[1].split("</table>")[0]
assert sum(int(n) for n in re.findall(r"<td>(\d+) of 3</td>", conf)) == 3
# the chart without memory sections shows "-" in memory columns, the others values
rows = re.findall(r"<tr><td><a.*?</tr>", side, re.S)
assert rows[2].count("<td>-</td>") >= 3 and rows[0].count("<td>-</td>") == 0, rows
print("fleet page: ok")
PYEOF
if "$G" report "$T/f1.json" "$T/f2.json" --markdown - >/dev/null 2>"$T/err"; then fail "markdown of a fleet"; fi
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "fleet markdown error not one line"
# report --device/--sim charts the GPUs first: two simulated GPUs make a fleet of two
"$G" report --sim default,default --html "$T/dev.html" >/dev/null || fail "report --sim A,B"
grep -q "<h1>Fleet: 2 GPUs</h1>" "$T/dev.html" || fail "report --sim A,B is not a fleet of two"
"$G" report "$T/f1.json" --sim default --html "$T/x.html" 2>/dev/null && fail "chart files and --sim accepted together"
# the DVFS report of a small simulated campaign: a colour scale under each heat map,
# violins whose tails taper inside the plot (not cut at the top or bottom)
$PY - "$T/dchip.json" <<'PYEOF'
import json, sys
json.dump({"schema": "gpuos.chip/1",
           "device": {"name": "dvfs page chip", "uuid": "SIM-dvfs-page", "cc": "9.0", "sm_count": 8,
                      "l2_bytes": 1 << 20, "mem_bytes": 1 << 30, "sm_clock_mhz": 1980},
           "topology": {"gpcs": [{"sms": list(range(8)), "cluster_sms": list(range(8))}]},
           "sim": {"seed": 7, "jitter": 0.03, "dvfs": {"freqs_mhz": [1980, 1605, 1260],
                   "switch_ms": {"mean": 20, "sd": 2}, "outlier_rate": 0, "thermal_rate": 0}}},
          open(sys.argv[1], "w"))
PYEOF
"$G" dvfs run --sim "$T/dchip.json" --freqs 1980,1605,1260 --sms 2 --max-iters 1500 --min 25 --max 25 --quiet \
    --out "$T/drun" >/dev/null && "$G" dvfs analyze "$T/drun" --out "$T/dan" --quiet >/dev/null &&
    "$G" dvfs report "$T/dan" --html "$T/dvfs.html" --quiet >/dev/null || fail "dvfs campaign for its page"
# a second GPU (a UUID as long as a real one) makes the fleet page of two
$PY - "$T/dchip.json" "$T/dchip2.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["device"]["uuid"] = "GPU-7e3a5c1d-0b2f-4e8a-9d6c-1f0e2d3c4b5a"
c["sim"]["seed"] = 8
c["sim"]["dvfs"]["switch_ms"] = {"mean": 26, "sd": 3}
json.dump(c, open(sys.argv[2], "w"))
PYEOF
"$G" dvfs run --sim "$T/dchip2.json" --freqs 1980,1605,1260 --sms 2 --max-iters 1500 --min 25 --max 25 --quiet \
    --out "$T/drun2" >/dev/null && "$G" dvfs report "$T/dan" "$T/drun2" --html "$T/dvfsfleet.html" --quiet ||
    fail "dvfs fleet page"
$PY - "$T/dvfs.html" <<'PYEOF' || fail "dvfs page"
import re, sys
h = open(sys.argv[1]).read()
legends = re.findall(r'<svg class=legend.*?</svg>', h, re.S)
assert len(legends) == 2 and all("colour scale" in l and "linearGradient" in l for l in legends), "heat map legends"
for l, which in zip(legends, ("best", "worst")):
    lo, hi = map(float, re.findall(r'>([0-9.]+) ms<', l))
    assert which in l and lo <= hi, l
v = [s for s in re.findall(r"<svg.*?</svg>", h, re.S) if "Switching latency by direction" in s][0]
H = int(re.search(r'height="(\d+)"', v).group(1))
for d in re.findall(r'<path fill="[^"]*" stroke="#333" d="([^"]*)"', v):
    pts = [tuple(map(float, p.split())) for p in re.findall(r"[ML]([-0-9.]+ [-0-9.]+)", d)]
    ys = [y for _, y in pts]
    assert min(ys) >= 30 - 0.5 and max(ys) <= H - 44 + 0.5, "violin leaves its plot"
    half = len(pts) // 2
    widths = [abs(pts[2 * half - 1 - i][0] - pts[i][0]) for i in range(half)]
    assert max(widths) > 0 and widths[0] < 0.05 * max(widths) and widths[-1] < 0.05 * max(widths), \
        "a violin is cut off (its ends are %.1f and %.1f of %.1f wide)" % (widths[0], widths[-1], max(widths))
print("dvfs page: ok")
PYEOF

# no figure holds both a red and a green (red-green colour-blind readers cannot
# tell them apart): every <svg> and every heat-map table, its colours by hue
$PY - "$T/full.html" "$T/topo.html" "$T/fleet.html" "$T/dvfs.html" "$T/dvfsfleet.html" <<'PYEOF' || fail "red-green colours"
import colorsys, re, sys
def hues(fig):
    out = set()
    for c in re.findall(r"#([0-9a-fA-F]{6})\b", fig) + ["%02x%02x%02x" % tuple(map(int, m)) for m in re.findall(r"rgb\((\d+),\s*(\d+),\s*(\d+)\)", fig)]:
        h, l, s = colorsys.rgb_to_hls(*(int(c[i:i + 2], 16) / 255 for i in (0, 2, 4)))
        if s > 0.35 and 0.2 < l < 0.85:
            h *= 360
            out |= {"red"} if h < 15 or h > 345 else {"green"} if 75 <= h <= 150 else set()
    return out
for p in sys.argv[1:]:
    h = open(p).read()
    figs = re.findall(r"<svg.*?</svg>", h, re.S) + re.findall(r"<table class=hm>.*?</table>\s*<svg.*?</svg>", h, re.S)
    for fig in figs:
        assert hues(fig) != {"red", "green"}, "%s: a figure with red and green: %s" % (p, re.sub(r"\s+", " ", fig[:160]))
print("colours: ok")
PYEOF

# a committed H200 chart (real data: markers close together, three curves) and the
# fleet of every committed chart are laid out and checked too
pages="full topo fleet dvfs dvfsfleet"
R=results/GPU-8e066ad9-2c08-1123-df7e-f621fe88e7ea/chip.json
if [ -f "$R" ]; then
    "$G" report "$R" --html "$T/h200.html" >/dev/null || fail "report of $R"
    "$G" report results/*/chip.json --html "$T/results.html" >/dev/null || fail "fleet of results/*/chip.json"
    pages="$pages h200 results"
fi
for p in $pages; do
    grep -qiE '<script|src="http|href="http|@import|url\([^#]' "$T/$p.html" && fail "$p page not self-contained"
done

if ! command -v chromium >/dev/null 2>&1; then
    echo "t_report_pages: chromium not installed (apt-get install chromium): layout not checked"
    exit 0
fi
export HOME="$T"
cat > "$T/check.js" <<'EOF2'
<script>
window.addEventListener('load', function () {
  var res = [];
  document.querySelectorAll('svg').forEach(function (svg, si) {
    var sr = svg.getBoundingClientRect(), ts = [];
    var drawn = svg.querySelectorAll('path, rect, polyline, line, circle').length;
    if (!(sr.width > 20 && sr.height > 20) || drawn < 2) res.push('svg ' + si + ' is empty (' + drawn + ' shapes)');
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.width > 0 && t.textContent.trim()) ts.push([t.textContent, r]);
    });
    for (var i = 0; i < ts.length; i++) {
      var a = ts[i][1];
      if (a.left < sr.left - 1 || a.right > sr.right + 1 || a.top < sr.top - 1 || a.bottom > sr.bottom + 1)
        res.push('svg ' + si + ': "' + ts[i][0] + '" leaves its picture');
      for (var j = i + 1; j < ts.length; j++) {
        var b = ts[j][1];
        var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) res.push('svg ' + si + ': "' + ts[i][0] + '" overlaps "' + ts[j][0] + '"');
      }
    }
  });
  var p = document.createElement('pre');
  p.id = 'layout-check';
  p.textContent = 'SVGS=' + document.querySelectorAll('svg').length + ' PROBLEMS=' + JSON.stringify(res);
  document.body.appendChild(p);
});
</script>
EOF2
for p in $pages; do
    sed "s#</body>#$(tr -d '\n' < "$T/check.js" | sed 's/[&#]/\\&/g')</body>#" "$T/$p.html" > "$T/$p-check.html"
    timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$T/prof" --window-size=1250,1000 \
        --virtual-time-budget=5000 --dump-dom "file://$T/$p-check.html" > "$T/$p.dom" 2>"$T/log" ||
        { tail -3 "$T/log"; fail "chromium $p"; }
    line=$(grep -o 'SVGS=[0-9]* PROBLEMS=.*</pre>' "$T/$p.dom" | sed 's#</pre>##') || fail "$p: layout check did not run"
    case "$line" in
    *"PROBLEMS=[]") ;;
    *) fail "$p page: $line" ;;
    esac
    n=$(echo "$line" | sed 's/SVGS=\([0-9]*\).*/\1/')
    min=3; case $p in fleet | results) min=1 ;; esac # a fleet draws one floor plan per distinct chip
    [ "$n" -ge $min ] || fail "$p page: only $n pictures laid out"
    # every figure the page must have is in the laid-out page (and was not empty, above)
    case $p in
    full) figs="Floor plan|HBM access latency|L2 hit latency|Read bandwidth against working-set size|L2 contention of each free-floating SM|GPC pairs" ;;
    dvfs) figs="Switching latency by direction|best latency of the pair|worst latency of the pair|1980 → 1605 MHz: 25 switches" ;;
    dvfsfleet) figs="Range of the best-case latency across the GPUs|Range of the worst-case latency across the GPUs|Best-case (minimum) latency of each pair, per GPU|Worst-case (maximum) latency of each pair, per GPU|whose boundaries spread most across the GPUs|1260 → 1605 MHz: 25 switches" ;;
    *) figs= ;;
    esac
    echo "$figs" | tr '|' '\n' | while read -r fig; do
        [ -z "$fig" ] || grep -q "$fig" "$T/$p.dom" || { echo "FAIL: $p page: no figure \"$fig\""; exit 1; }
    done || exit 1
    timeout 90 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$T/prof" \
        --window-size=1250,2600 --screenshot="$T/$p.png" "file://$T/$p.html" >"$T/log" 2>&1 || fail "screenshot $p"
    [ "$(wc -c < "$T/$p.png")" -gt 40000 ] || fail "$p screenshot looks blank"
    [ -n "${REPORT_PNG_DIR:-}" ] && cp "$T/$p.png" "$REPORT_PNG_DIR/"
done
echo "t_report_pages: ok (layout checked in Chromium)"
