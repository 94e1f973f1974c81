#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_place.sh: `gpuos place` on the simulated H200: malformed requests are usage
# errors (exit 2, one line), an impossible request is refused (exit 1) naming what
# the free groups can run, the JSON is well formed and its sets are disjoint and
# keep the free-floating SMs away from the cluster-8 tenant in both orders, a
# partition needs a chart with a numa section and is honoured with one.
set -u
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
usage() { # ARGS... : must exit 2 with a one-line message
    out=$("$G" place --sim default "$@" 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "place $*: exit $rc, expected 2 ($out)"
    [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "place $*: not one line: $out"
}
usage
usage --cluster 8
usage --sms 0
usage --sms 64 --cluster 17
usage --sms 64 --cluster x
usage --sms 64 --partition 32
usage --sms 64 --bogus
usage --sms
usage --align
out=$("$G" place --sim default --sms 120 --cluster 8 2>&1); rc=$?
[ $rc -eq 1 ] || fail "impossible request: exit $rc"
echo "$out" | grep -q "request 1 refused: cannot give 120 SMs that run clusters of 8: the free green-context groups can run at most 112 SMs (14 clusters of 8)" || fail "refusal: $out"
out=$("$G" place --sim default --sms 16 --partition 0 2>&1) && fail "partition without a numa chart accepted"
echo "$out" | grep -q "no numa section" || fail "partition message: $out"
"$G" place --sim default --chart /nonexistent.json --sms 8 >/dev/null 2>&1 && fail "missing chart accepted"
for order in "--sms 64 --cluster 8 --sms 64 --cluster 2" "--sms 64 --cluster 2 --sms 64 --cluster 8"; do
    # shellcheck disable=SC2086
    "$G" place --sim default --json - $order >"$T/p.json" || fail "place $order"
    $PY - "$T/p.json" <<'PYEOF' || fail "JSON check ($order)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuos.place/1" and d["simulated"] is True
seen = set()
for s in d["sets"]:
    assert not (seen & set(s["sms"])), "sets overlap"
    seen |= set(s["sms"])
    k = s["request"]["cluster"]
    assert s["clusters_at_once"][str(k)] * k >= s["request"]["sms"]
    if k == 8:
        assert s["free_floating_sms"] == 0, s
owners = {g["group"]: g["set"] for g in d["groups"]}
for s in d["sets"]:
    assert sorted(s["groups"]) == sorted(g for g, o in owners.items() if o == s["id"])
PYEOF
done
# With a chart that has partitions: the set lies in the partition asked for.
"$G" probe all --sim default --json "$T/chip.json" >/dev/null 2>&1 || fail "probe all"
"$G" place --sim default --chart "$T/chip.json" --json - --sms 40 --cluster 4 --partition 1 >"$T/q.json" ||
    fail "partition request"
$PY - "$T/q.json" "$T/chip.json" <<'PYEOF' || fail "partition placement"
import json, sys
d, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
part = set(c["numa"]["partitions"][1]["sms"])
s = d["sets"][0]
assert s["partition"] == 1 and set(s["sms"]) <= part, s
PYEOF
echo "t_place: OK"
