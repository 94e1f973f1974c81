#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_parts.sh: issue 26: `gpuos probe numa` recovers chips with N memory
# partitions, several dies and several tiers EXACTLY, on held-out shapes drawn
# from a seed this test does not know in advance (from /dev/urandom, printed;
# PARTS_SEED=N replays one):
#   - B200-like (tests/partgen.h): two dies of two partitions whose twin local
#     peaks overlap: the chart has the two dies' SM sets as its partitions, the
#     die parity's in-page bits, two tiers (twin peaks one tier); with the twins
#     apart (b200-split), all four partitions, both dies, three tiers;
#   - MI300X-like: 304 compute units, 16 partitions in 8 dies, 3 tiers: the
#     chart has the 16 SM sets, the 8 dies (as sets of SM sets), the tiers with
#     their relations, and parities spanning the truth's (GF(2) row spaces);
#   both: tier cycles within 4 % of the truth's, no physical bits, a 256 MB
#   verification in agreement with the prediction, the chart read back (report)
#   and reproduced when it is itself simulated; chip and chart validate against
#   schemas/chip.schema.json; node labels and `place --partition` on a chart of
#   16 partitions; bad /2 input fails in one line.
set -eu
G=${GPUOS:-build/gpuos}
B=${BUILD:-build}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
SEED=${PARTS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "t_parts: seed $SEED (replay: PARTS_SEED=$SEED sh tests/t_parts.sh)"

for shape in b200 b200-split mi300x; do
  for k in 0 1; do
    s=$((SEED + k))
    "$B/tests/partgen" $shape $s "$T/chip.json" "$T/truth.json" || fail "partgen $shape $s"
    "$G" probe numa --sim "$T/chip.json" --verify 256M --json "$T/out.json" >"$T/log" 2>&1 ||
        { cat "$T/log"; fail "$shape seed $s: probe numa"; }
    $PY tests/schema_check.py --known-only "$T/chip.json" "$T/out.json" >"$T/sc" || { cat "$T/sc"; fail "$shape: schema"; }
    $PY - "$T/truth.json" "$T/out.json" "$shape $s" <<'PY' || fail "$shape seed $s: not recovered"
import json, sys
t, c, what = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
n = c["numa"]
def rref(masks):
    rows = []
    for m in masks:
        for r in rows:
            if m ^ r < m:
                m ^= r
        if m:
            rows = [r ^ m if r ^ m < r else r for r in rows] + [m]
    return sorted(rows)
parts = [frozenset(p["sms"]) for p in n["partitions"]]
want = [frozenset(p) for p in t["partitions"]]
assert sorted(map(sorted, parts)) == sorted(map(sorted, want)), "%s: partitions differ" % what
dies = {frozenset(parts[i] for i in d["partitions"]) for d in n.get("dies", [])}
assert dies == {frozenset(want[i] for i in d) for d in t["dies"]}, "%s: dies differ: %s" % (what, n.get("dies"))
got = [sum(1 << b for b in p["in_page_bits"]) for p in n["hash"]["parities"]]
assert len(got) == len(t["masks"]) and rref(got) == rref(t["masks"]), "%s: parities %s vs %s" % (what, got, t["masks"])
assert all("physical_bits" not in p for p in n["hash"]["parities"]), "a probe cannot know physical bits"
low = min(b for p in n["hash"]["parities"] for b in p["in_page_bits"])
assert n["hash"]["granularity_bytes"] == 1 << low
tiers = n["tiers"]
assert [x["relation"] for x in tiers] == [x["relation"] for x in t["tiers"]], "%s: tiers %s" % (what, tiers)
for x, y in zip(tiers, t["tiers"]):
    assert abs(x["cycles"] / y["cycles"] - 1) < 0.04, "%s: tier %s vs %s" % (what, x["cycles"], y["cycles"])
pairs = {(a, b) for x in tiers for a, b in x["pairs"]}
assert len(pairs) == len(parts) * (len(parts) + 1) // 2, "%s: partition pairs missing a tier" % what
v = n["verification"]
assert v["agreement"] > 0.99 and v["units"] == (256 << 20) // 4096, v
assert c["schema"] == "gpuos.chip/2"
if len(parts) == 2:   # the /1 fields for old readers
    assert n["hash"]["in_page_bits"] == n["hash"]["parities"][0]["in_page_bits"]
    assert n["latency_cycles"]["hbm_local"] < n["latency_cycles"]["hbm_remote"]
else:
    assert "in_page_bits" not in n["hash"] and "latency_cycles" not in n
PY
  done
  # The chart renders, and as a simulated chip of its own it charts the same again.
  "$G" report "$T/out.json" --html "$T/r.html" >/dev/null || fail "$shape: report of the chart"
  grep -q "partition" "$T/r.html" || fail "$shape: report without partitions"
  $PY - "$T/out.json" "$T/again.json" "$T/chip.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c.pop("probe", None)
c["topology"] = json.load(open(sys.argv[3]))["topology"]
c["sim"] = {"seed": 5, "jitter": 0.015}
json.dump(c, open(sys.argv[2], "w"))
PY
  "$G" probe numa --sim "$T/again.json" --json "$T/again_out.json" >"$T/log" 2>&1 || { cat "$T/log"; fail "$shape: chart as a chip"; }
  $PY - "$T/out.json" "$T/again_out.json" <<'PY' || fail "$shape: chart as a chip not reproduced"
import json, sys
a, b = (json.load(open(p))["numa"] for p in sys.argv[1:3])
split = lambda n: sorted(sorted(p["sms"]) for p in n["partitions"])
assert split(a) == split(b)
assert len(a["tiers"]) == len(b["tiers"]) and len(a.get("dies", [])) == len(b.get("dies", []))
PY
done

# A 16-partition chart of everything (topology, numa, memory): node labels, and
# `gpuos place --partition` giving SM sets inside partitions 9 and 15.
"$B/tests/partgen" mi300x $SEED "$T/m.json" "$T/mt.json"
"$G" probe all --sim "$T/m.json" --json "$T/mall.json" >"$T/log" 2>&1 || { cat "$T/log"; fail "probe all, MI300X shape"; }
"$G" labels "$T/mall.json" >"$T/labels" || fail "labels"
for l in partitions=16 dies=8 latency-tiers=3 partition-sms-min=19; do
    grep -q "^gpuos.io/$l\$" "$T/labels" || { cat "$T/labels"; fail "label $l"; }
done
"$G" place --sim "$T/m.json" --chart "$T/mall.json" --sms 16 --partition 9 --sms 8 --partition 15 --verify \
    --json "$T/place.json" >/dev/null 2>&1 || fail "place --partition on 16 partitions"
$PY - "$T/mall.json" "$T/place.json" <<'PY' || fail "place: sets outside their partitions"
import json, sys
c, p = (json.load(open(f)) for f in sys.argv[1:3])
parts = [set(x["sms"]) for x in c["numa"]["partitions"]]
for s in p["sets"]:
    assert s["partition"] == s["request"]["partition"] and set(s["sms"]) <= parts[s["partition"]], s
PY
if "$G" place --sim "$T/m.json" --chart "$T/mall.json" --sms 8 --partition 32 >"$T/o" 2>"$T/e"; then fail "partition 32 accepted"; fi

# Bad gpuos.chip/2 input: one line, non-zero exit, never a crash.
"$B/tests/partgen" mi300x 1 "$T/m.json" "$T/mt.json"
expect_error() { # substring, python mutation of c (the chip)
    $PY - "$T/m.json" "$T/bad.json" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); n = c["numa"]
exec(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))
PY
    if "$G" probe numa --sim "$T/bad.json" >"$T/o" 2>"$T/e"; then fail "accepted: $2"; fi
    [ "$(wc -l <"$T/e")" -eq 1 ] || { cat "$T/e"; fail "not one line: $2"; }
    grep -q -- "$1" "$T/e" || { cat "$T/e"; fail "no '$1' in: $2"; }
}
expect_error "2^k" 'n["hash"]["parities"].pop()'
expect_error "die" 'n["dies"][0]["partitions"].append(n["dies"][1]["partitions"][0])'
expect_error "relation" 'n["tiers"][1]["relation"] = "next_door"'
expect_error "ascending" 'n["tiers"].reverse()'
expect_error "numa.tiers" 'n["tiers"] = n["tiers"][:1]; n["tiers"][0]["relation"] = "other_die"'
expect_error "numa.hash.parities" 'n["hash"]["parities"][0]["in_page_bits"] = [5]'
expect_error "not \"gpuos.chip/2\"" 'c["schema"] = "gpuos.chip/3"'
echo "t_parts: ok"
