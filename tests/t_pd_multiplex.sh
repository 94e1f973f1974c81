#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_pd_multiplex.sh: build/bench/pd_multiplex (issue 45) without a GPU: bad
# input gets one line and a non-zero exit (usage 2, a missing cuBLAS 3), and
# --dry-json on the simulated H200-shaped chip runs the real planning and
# result code (made-up throughputs): the document validates against
# schemas/pd-multiplex.schema.json (a copy without "ok" does not), the
# placements are what they promise (partition-aware: each phase in its own
# partition, decode's KV in that view; cluster-aware: clusters of 8 on every SM;
# cluster-mismatched: a set that cannot run them all, as the default chip
# allows; partition-interleaved: the partition-aware partitions, KV
# interleaved), the SM counts equal across placements (56 + 56 for the asked
# 64 + 56), and the ratios are partition-aware over cluster-aware (and over
# partition-interleaved), window by window. Skipped where nvcc did not build the program.
set -u
B=${BUILD:-build}/bench/pd_multiplex
PY=/usr/bin/python3
[ -x "$B" ] || { echo "SKIP: $B not built (no nvcc)"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect() { # exit status, text in the one-line error, command...
    want=$1 text=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want ($(cat "$T/err"))"
    grep -q -- "$text" "$T/err" || fail "$*: no \"$text\" in: $(cat "$T/err")"
    [ "$(grep -c "^pd_multiplex: " "$T/err")" -le 1 ] || fail "$*: more than one error line"
}
expect 2 "usage:" "$B"
expect 2 "usage:" "$B" --chart x.json
expect 2 "usage:" "$B" --chart x.json --out "$T" --bogus 1
expect 2 "outside 1..32" "$B" --chart x.json --out "$T" --layers 0
expect 2 "outside 8.." "$B" --chart x.json --out "$T" --decode-sms 3
expect 3 "cuBLAS unavailable: /nonexistent/libcublas.so.13" "$B" --chart x.json --out "$T" --cublas /nonexistent/libcublas.so.13
expect 1 "cannot" "$B" --sim /nonexistent/chip.json --dry-json "$T/x.json"

"$B" --sim default --dry-json "$T/pd.json" >"$T/dry.txt" 2>&1 || fail "dry run: $(cat "$T/dry.txt")"
$PY tests/schema_check.py --known-only "$T/pd.json" >"$T/schema.txt" 2>&1 || fail "schema: $(cat "$T/schema.txt")"
$PY - "$T/pd.json" "$T/bad.json" <<'PY' || exit 1
import json, statistics, sys
d = json.load(open(sys.argv[1]))
pl = {p["name"]: p for p in d["placements"]}
def check(c, what):
    if not c:
        print("FAIL:", what); sys.exit(1)
check(d["sms_asked"] == [64, 56] and d["sms"] == [56, 56], f"SM counts {d['sms']}: one partition runs 56 at cluster 8")
for p in d["placements"]:
    for s in ("prefill_set", "decode_set"):
        check(p[s]["n_sms"] >= 56 and len(p[s]["sms"]) == p[s]["n_sms"], f"{p['name']} {s}: {p[s]['n_sms']} SMs")
    a, b = set(p["prefill_set"]["sms"]), set(p["decode_set"]["sms"])
    check(not a & b, f"{p['name']}: the phases share SMs {sorted(a & b)}")
pa, ca, cm, pi = pl["partition-aware"], pl["cluster-aware"], pl["cluster-mismatched"], pl["partition-interleaved"]
check([p["name"] for p in d["placements"]] == ["cluster-aware", "cluster-mismatched", "partition-aware",
                                                "partition-interleaved"], "placements")
for s in ("prefill_set", "decode_set"):
    check(pi[s]["partition"] == pa[s]["partition"], "partition-interleaved: not the partition-aware sets' partitions")
check(pa["prefill_set"]["partition"] in (0, 1) and pa["decode_set"]["partition"] == 1 - pa["prefill_set"]["partition"],
      "partition-aware: the phases not in one partition each")
check(pa["decode_kv"] == "decode partition" and ca["decode_kv"] == cm["decode_kv"] == pi["decode_kv"] == "interleaved",
      "decode KV")
for p in (pa, ca):
    for s in ("prefill_set", "decode_set"):
        check(p[s]["clusters_of_8"] * 8 >= p[s]["n_sms"], f"{p['name']} {s} cannot run clusters of 8 on every SM")
check(cm["mismatched"] and not ca["mismatched"] and not pa["mismatched"], "mismatched flags")
check(any(cm[s]["clusters_of_8"] * 8 < cm[s]["n_sms"] for s in ("prefill_set", "decode_set")),
      "cluster-mismatched: every set runs clusters of 8")
w = d["windows"]
want = [(3000.0 + i) / (1000.0 + i) for i in range(w)]
r = d["decode_ratio_partition_over_cluster_aware"]
check(len(r["values"]) == w and all(abs(x - y) < 1e-9 for x, y in zip(r["values"], want)), f"ratios {r['values']}")
check(abs(r["median"] - statistics.median(want)) < 1e-9 and r["min"] == min(r["values"]), "ratio median/min")
r = d["decode_ratio_placed_over_interleaved_kv"]
want = [(3000.0 + i) / (4000.0 + i) for i in range(w)]
check(all(abs(x - y) < 1e-9 for x, y in zip(r["values"], want)), f"KV placement ratios {r['values']}")
del d["ok"]
json.dump(d, open(sys.argv[2], "w"))
PY
$PY tests/schema_check.py --expect-invalid "$T/bad.json" >"$T/schema.txt" 2>&1 || fail "a document without ok validated"
echo "t_pd_multiplex: ok"
