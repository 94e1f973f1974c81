#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_probe_cli.sh: the probe and info commands as a user runs them: the simulated
# round trip through files (probe --sim X --json Y reproduces X's topology, for
# random chips), labels, and one-line errors with non-zero exits on bad input.
set -eu
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# One-line error, non-zero exit, nothing on stdout.
expect_error() { # expected-substring, command...
    want=$1; shift
    if "$@" >"$T/out" 2>"$T/err"; then fail "succeeded: $*"; fi
    [ "$(wc -l <"$T/err")" -eq 1 ] || { cat "$T/err"; fail "not one line: $*"; }
    grep -q -- "$want" "$T/err" || { cat "$T/err"; fail "no '$want' in error of: $*"; }
}

printf '{"schema": "gpuos.chip/1", "device": {"sm_count": 4}, "topology": {"gpcs": [{"sms": [0,1,2], "cluster_sms": []}, {"sms": [2,3], "cluster_sms": []}]}}' >"$T/two.json"
printf '{"schema": "gpuos.chip/1", "device": ' >"$T/trunc.json"
printf '\000\001\002garbage' >"$T/bin.json"
printf '{"schema": "gpuos.chip/1", "device": {"sm_count": 4}}' >"$T/notopo.json"
expect_error "SM 2 is in GPC 0 and GPC 1" "$G" probe topology --sim "$T/two.json"
expect_error "not valid JSON" "$G" probe --sim "$T/trunc.json"
expect_error "trunc.json" "$G" probe --sim "$T/trunc.json"
expect_error "bin.json" "$G" probe --sim "$T/bin.json"
expect_error "needs a topology" "$G" probe --sim "$T/notopo.json"
expect_error "cannot open" "$G" probe --sim "$T/missing.json"
expect_error "unknown option --frobnicate" "$G" probe --frobnicate
expect_error "unexpected argument" "$G" probe frobnicate
expect_error "--device \"x\": not an ordinal" "$G" probe --device x
expect_error "only 1 simulated GPU" "$G" probe --device 1 --sim default
expect_error "is not a size" "$G" probe numa --verify 3Q --sim default
[ ! -s "$T/out" ] || fail "probe did work before rejecting a bad --verify"
expect_error "unknown command" "$G" frobnicate
# --device demands real hardware: on this machine (no GPU) it fails clearly.
if ! nvidia-smi -L >/dev/null 2>&1; then
    expect_error "GPU\|without the CUDA toolkit" "$G" probe topology --device 0
fi
# An unwritable output path fails clearly and leaves no partial file.
expect_error "cannot write" "$G" probe topology --sim default --json /nonexistent/dir/out.json
# An existing output file survives a failed probe untouched.
echo '{"precious": 1}' >"$T/keep.json"
expect_error "" "$G" probe topology --sim "$T/two.json" --json "$T/keep.json"
grep -q precious "$T/keep.json" || fail "existing file was clobbered by a failed probe"

# Without a GPU, plain `probe` charts the simulated H200 and says so.
if ! nvidia-smi -L >/dev/null 2>&1; then
    "$G" probe topology >"$T/plain.out" 2>"$T/plain.err" || fail "plain probe failed"
    grep -q "simulated" "$T/plain.err" || fail "no notice of simulation on stderr"
    grep -q "simulated" "$T/plain.out" || fail "output not labelled simulated"
fi

# Round trip through files for random chips made by an independent generator.
$PY - "$T" <<'PYEOF'
import json, random, sys
out = sys.argv[1]
for k in range(12):
    rnd = random.Random(1000 + k)
    n_gpcs = rnd.randint(6, 8)
    sizes = [rnd.randint(8, 20) for _ in range(n_gpcs)]
    ids = list(range(sum(sizes))); rnd.shuffle(ids)
    gpcs, pos, budget = [], 0, rnd.randint(0, 8)
    for s in sizes:
        sms = ids[pos:pos + s]; pos += s
        tpcs = [sms[i:i + 2] for i in range(0, s, 2)]
        free = set()
        for t in rnd.sample(tpcs, rnd.randint(0, 2)):
            if len(t) <= budget and s - len(free) - len(t) >= 6:
                free |= set(t); budget -= len(t)
        gpcs.append({"sms": sms, "cluster_sms": [x for x in sms if x not in free], "tpcs": tpcs})
    chip = {"schema": "gpuos.chip/1",
            "device": {"name": "py chip", "sm_count": sum(sizes)},
            "topology": {"gpcs": gpcs},
            "sim": {"seed": k, "jitter": 0.02, "l2_gbps_per_sm": 200, "l2_gbps_per_gpc": 1400}}
    json.dump(chip, open(f"{out}/rt{k}.json", "w"))
PYEOF
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
    "$G" probe topology --sim "$T/rt$k.json" --json "$T/out$k.json" >"$T/rt.out" || fail "probe rt$k"
    grep -q "simulated" "$T/rt.out" || fail "rt$k output not labelled simulated"
    $PY - "$T/rt$k.json" "$T/out$k.json" <<'PYEOF' || fail "round trip rt$k"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def gpcs(c):
    return sorted((sorted(g["sms"]), sorted(g["cluster_sms"])) for g in c["topology"]["gpcs"])
def tpcs(c):
    return sorted(tuple(sorted(t)) for g in c["topology"]["gpcs"] for t in g["tpcs"])
assert gpcs(a) == gpcs(b), (gpcs(a), gpcs(b))
assert tpcs(a) == tpcs(b)
assert b["device"]["simulated"] is True
assert b["schema"] == "gpuos.chip/2"  # written as /2 (issue 26), read from /1
PYEOF
done
echo "probe CLI: ok"

# Issue 47: the paper's census of GPC configurations is of H200s. The same
# 6x16 + 2x18 floor plan named after the product charted: an H200 matches the
# census, an H100 SXM gets the summary and nothing else (f2db5de called an H100's
# layout "the paper's most common H200 configuration"), an H100 PCIe what the
# paper saw of one.
"$G" probe topology --sim default --json "$T/h200.json" >/dev/null || fail "probe default"
for name in "NVIDIA H200" "NVIDIA H100 80GB HBM3" "NVIDIA H100 PCIe"; do
    $PY - "$T/h200.json" "$T/named.json" "$name" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c.pop("probe", None); c["device"].pop("simulated", None)
c["device"]["name"] = sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))
PYEOF
    "$G" probe topology --sim "$T/named.json" --json "$T/named-out.json" >"$T/named.out" || fail "probe $name"
    line=$(grep "^Imbalance:" "$T/named.out")
    match=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["topology"]["paper_match"])' "$T/named-out.json")
    case $name in
    *H200) [ "$line" = "Imbalance: 6x16 + 2x18 = the paper's most common H200 configuration (23 of 28 chips)" ] &&
               [ "$match" = "the paper's most common H200 configuration (23 of 28 chips)" ] ||
               fail "$name: '$line', paper_match $match" ;;
    *HBM3) [ "$line" = "Imbalance: 6x16 + 2x18" ] && [ "$match" = None ] || fail "$name: '$line', paper_match $match" ;;
    *PCIe) echo "$line" | grep -q "^Imbalance: 6x16 + 2x18 (the paper charted one H100 PCIe: " &&
               [ "$match" = None ] || fail "$name: '$line', paper_match $match" ;;
    esac
done
echo "probe CLI: imbalance notes by product ok"

# Sharing above the GPC: with a per-partition L2 path in the simulated chip, the
# GPC groups found by pair contention must be exactly the memory partitions the
# numa probe finds by latency (two independent measurements of one floor plan).
"$G" probe --sim default --json "$T/base.json" >/dev/null || fail "probe default"
$PY - "$T/base.json" "$T/xbar.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["sim"] = {"seed": 5, "jitter": 0.03, "l2_gbps_per_sm": 180, "l2_gbps_per_gpc": 1300,
            "l2_gbps_per_partition": 2000}
c["numa"]["hash"]["physical_bits"] = c["numa"]["hash"]["in_page_bits"] + [22, 26]
json.dump(c, open(sys.argv[2], "w"))
PYEOF
"$G" probe --sim "$T/xbar.json" --json "$T/xbar-out.json" >"$T/xbar.out" || fail "probe xbar chip"
$PY - "$T/xbar-out.json" <<'PYEOF' || fail "crossbar groups are not the partitions"
import json, sys
t = json.load(open(sys.argv[1]))["topology"]
assert len(t["crossbar_groups"]) == 2, t["crossbar_groups"]
assert t["crossbar_groups_are_partitions"] is True
PYEOF
grep -q "are exactly the memory partitions" "$T/xbar.out" || fail "cross-check line missing"
echo "probe CLI (crossbar groups): ok"

# A valid chip with a topology only (no numa section, no memory sizes): the
# default `probe` (all sections) still charts and writes the topology, and
# records why the numa section found nothing; `probe numa` alone fails clearly.
cat >"$T/topo_only.json" <<'JSON'
{"schema": "gpuos.chip/1", "device": {"name": "t", "sm_count": 24},
 "topology": {"gpcs": [
   {"sms": [0,1,2,3,4,5,6,7], "cluster_sms": [0,1,2,3,4,5,6,7]},
   {"sms": [8,9,10,11,12,13,14,15], "cluster_sms": [8,9,10,11,12,13]},
   {"sms": [16,17,18,19,20,21,22,23], "cluster_sms": [16,17,18,19,20,21,22,23]}]}}
JSON
"$G" probe --sim "$T/topo_only.json" --json "$T/topo_only.out.json" >"$T/to.out" 2>"$T/to.err" ||
    { cat "$T/to.err"; fail "probe all on a topology-only chip"; }
grep -q "numa: .*continuing" "$T/to.err" || fail "no note about the numa section"
$PY - "$T/topo_only.json" "$T/topo_only.out.json" <<'PYEOF' || fail "topology-only round trip"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda c: sorted((sorted(g["sms"]), sorted(g["cluster_sms"])) for g in c["topology"]["gpcs"])
assert key(a) == key(b)
assert "partitions" not in b.get("numa", {}) and b["numa"]["unresolved"]
PYEOF
expect_error "one tier" "$G" probe numa --sim "$T/topo_only.json"
echo "probe CLI (topology-only chip): ok"
