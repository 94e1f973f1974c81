#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_schemas.sh: the JSON schemas of schemas/ (issue 14 item 6), checked with
# Debian's python3-jsonschema:
#   - every schema is a valid JSON Schema 2020-12 document;
#   - one file of each kind this test can make quickly (chip, info, node, vgpu-list,
#     the daemon's vgpu-state file, dvfs-probe, sched-sim, place, bench/load.sh's load, placement_bench's four files) validates, as do the
#     committed colocation and spatial-vgpu files (real GPU only), and so does every committed results/ file
#     that claims a gpuos schema;
#   - vgpu-bench with per-isolation-mode sections; where their producers exist (branches
#     shmswap, cudashim) shm-list, shm-bench and cudashim-gpu files too;
#   - mutated copies fail: a required member removed, a member of the wrong type,
#     a wrong schema name, for each kind;
# tests/run.sh validates every JSON document the whole suite makes gpuos write
# (GPUOS_JSON_TRACE) after the other tests.
set -u
G=${GPUOS:-build/gpuos}
B=${BUILD:-build}
PY=/usr/bin/python3
T=$(mktemp -d)
DPID=
trap '[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset GPUOS_JSON_TRACE
$PY -c "import jsonschema" 2>/dev/null || fail "python3-jsonschema is not installed (make deps)"

mkdir "$T/ok" "$T/bad"
"$G" probe all --sim default --json "$T/ok/chip.json" >/dev/null || fail "probe"
"$G" info --sim default,default --json "$T/ok/info.json" >/dev/null || fail "info"
"$G" node --sim default,default --json "$T/ok/node.json" >/dev/null || fail "node"
"$G" dvfs probe --sim default --json "$T/ok/dvfs-probe.json" >/dev/null 2>&1 || fail "dvfs probe"
"$B/bench/sched_sim" --json "$T/ok/sched-sim.json" >/dev/null 2>&1 || fail "sched_sim"
"$G" probe numa --sim default --json "$T/numa.json" >/dev/null || fail "probe numa"
"$B/bench/placement_bench" --sim default --chart "$T/numa.json" --out "$T/ok" --quick >/dev/null || fail "placement_bench"
BUILD="$B" sh bench/load.sh 2 8 "$T/ok/load.json" >/dev/null 2>&1 || fail "bench/load.sh"
"$G" place --sim default --sms 16 --cluster 4 --verify --sms 8 --cluster 2 --json - > "$T/ok/place.json" 2>/dev/null || fail "place"
# a refused request (exit 1) is a document of its own shape
"$G" place --sim default --sms 16 --cluster 4 --sms 200 --json - > "$T/ok/place-refused.json" 2>/dev/null
[ $? -eq 1 ] || fail "place: an impossible request was not refused"
# the kinds only a real GPU makes (bench/colocation.sh, bench/spatial.sh): the committed ones
for k in colocation spatial-vgpu; do
    f=$(grep -l "\"gpuos.$k/1\"" $(find results -name '*.json') | head -1)
    [ -n "$f" ] || fail "no committed $k file"
    cp "$f" "$T/ok/$k.json"
done
printf 'socket = %s/s\nstate = %s/state.json\n[device 0]\nsim = default\n[vgpu a]\ncompute = 50\ncopy = 50\nmemory = 1G\n' "$T" "$T" > "$T/conf"
"$G" serve --config "$T/conf" 2>"$T/serve.log" &
DPID=$!
i=0
while [ ! -S "$T/s" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "daemon did not come up"
    sleep 0.1
done
"$G" vgpu list --socket "$T/s" --json - > "$T/ok/vgpu-list.json" || fail "vgpu list"
"$G" vgpu set a compute=40 --socket "$T/s" >/dev/null 2>&1 || fail "vgpu set"
cp "$T/state.json" "$T/ok/vgpu-state.json" || fail "no state file after vgpu set"
# gpuos shm (branch shmswap): the listing of the daemon's segments, where the command exists
HAVE_SHM=
if "$G" shm --help >/dev/null 2>&1; then
    "$G" shm list --socket "$T/s" --json - > "$T/ok/shm-list.json" || fail "shm list --json"
    HAVE_SHM=1
fi
kill -TERM "$DPID"; wait "$DPID"; DPID=
HAVE_SHM_BENCH=
if [ -x "$B/bench/shm_bench" ]; then
    "$B/bench/shm_bench" --sim default --chain-n 512 --rounds 1 --turn-mb 64 --buf-mb 4 --pool-mb 96 --rate-mb 2 \
        --out "$T/ok/shm-bench.json" >/dev/null 2>&1 || fail "shm_bench"
    HAVE_SHM_BENCH=1
fi
# the cudashim GPU results (branch cudashim, real GPU only): the committed ones
HAVE_CUDASHIM=
f=$(grep -l '"gpuos.cudashim-gpu/1"' $(find results -name 'cudashim*.json') /dev/null 2>/dev/null | head -1)
[ -n "$f" ] && { cp "$f" "$T/ok/cudashim-gpu.json"; HAVE_CUDASHIM=1; }
# vgpu-bench: a committed file, and the same with its sections under an isolation mode
f=$(grep -l '"gpuos.vgpu-bench/1"' $(find results -name 'vgpu-bench.json') | head -1)
[ -n "$f" ] || fail "no committed vgpu-bench file"
$PY - "$f" "$T/ok/vgpu-bench.json" <<'PYEOF' || fail "making the vgpu-bench document"
import json, sys
d = json.load(open(sys.argv[1]))
secs = [k for k in ("chunk_sweep", "small_copy", "copy", "launch_us", "fairness", "queues", "standalone", "switch") if k in d]
assert secs, d.keys()
d["isolation_modes"] = {"process": {k: d[k] for k in secs}, "none": {k: d[k] for k in secs}}
d["switch"] = {"kernel_ns": 1000000, "seconds": 1.5, "one_client": 1400, "two_clients": 1296, "ideal": 1500.0,
               "lost_fraction": 0.074}
json.dump(d, open(sys.argv[2], "w"))
PYEOF

$PY tests/schema_check.py --known-only "$T/ok" > "$T/ok.log" || { cat "$T/ok.log"; fail "fresh files do not validate"; }
for k in chip info node vgpu-list vgpu-state dvfs-probe sched-sim place load placement-check placement-locality placement-gemv placement-unequal colocation spatial-vgpu vgpu-bench \
    ${HAVE_SHM:+shm-list} ${HAVE_SHM_BENCH:+shm-bench} ${HAVE_CUDASHIM:+cudashim-gpu}; do
    grep -q "gpuos.$k/[12] [1-9]" "$T/ok.log" || fail "no $k document checked: $(tail -1 "$T/ok.log")"
done
$PY tests/schema_check.py results > "$T/res.log" || { cat "$T/res.log"; fail "committed results do not validate"; }
tail -1 "$T/res.log"

# mutations: each must be rejected
$PY - "$T/ok" "$T/bad" "$HAVE_SHM" "$HAVE_SHM_BENCH" "$HAVE_CUDASHIM" <<'PYEOF' || fail "making mutations"
import json, os, sys
ok, bad, have_shm, have_shm_bench, have_cudashim = sys.argv[1:6]
def mut(name, doc, path, how, value=None):
    d = json.loads(json.dumps(doc))
    o = d
    for p in path[:-1]:
        o = o[p]
    if how == "del":
        del o[path[-1]]
    else:
        o[path[-1]] = value
    json.dump(d, open(os.path.join(bad, name + ".json"), "w"))
docs = {k: json.load(open(os.path.join(ok, k + ".json"))) for k in
        ("chip", "info", "node", "vgpu-list", "dvfs-probe", "sched-sim")}
c = docs["chip"]
mut("chip-no-sm-count", c, ["device", "sm_count"], "del")
mut("chip-sm-count-string", c, ["device", "sm_count"], "set", "132")
mut("chip-gpc-no-sms", c, ["topology", "gpcs", 0, "sms"], "del")
mut("chip-sms-not-ints", c, ["topology", "gpcs", 0, "sms"], "set", ["a", "b"])
mut("chip-partition-sms-string", c, ["numa", "partitions", 1, "sms"], "set", "0-65")
mut("chip-curve-gbps-string", c, ["memory", "l2_curve", "gbps", 0], "set", "fast")
mut("chip-probe-no-date", c, ["probe", "date"], "del")
mut("chip-wrong-schema", c, ["schema"], "set", "gpuos.chip/3")
mut("chip-tier-relation", c, ["numa", "tiers", 0, "relation"], "set", "next_door")
mut("chip-parity-bits-string", c, ["numa", "hash", "parities", 0, "in_page_bits"], "set", "12 13")
mut("info-no-uuid", docs["info"], ["devices", 0, "uuid"], "del")
mut("info-sm-count-float", docs["info"], ["devices", 0, "sm_count"], "set", 13.5)
mut("node-link-gbps-string", docs["node"], ["links", 0, "gbps"], "set", "350")
mut("node-no-links", docs["node"], ["links"], "del")
mut("vgpu-list-share-string", docs["vgpu-list"], ["vgpus", 0, "compute_share"], "set", "50%")
mut("vgpu-list-no-name", docs["vgpu-list"], ["vgpus", 0, "name"], "del")
mut("vgpu-list-share-over-100", docs["vgpu-list"], ["vgpus", 0, "compute_share"], "set", 150)
mut("dvfs-probe-no-device", docs["dvfs-probe"], ["device"], "del")
mut("sched-sim-vgpus-string", docs["sched-sim"], ["fairness", 0, "vgpus"], "set", "two")
mut("dvfs-measurement-status-number", {"t_request_ns": 1, "host_request_ns": 2, "sync_uncertainty_ns": 0.5,
    "nvml_mhz": 1980, "status": "ok", "latency_ms": 1.0}, ["status"], "set", 3)
mut("unknown-schema", c, ["schema"], "set", "gpuos.nosuch/1")
st = json.load(open(os.path.join(ok, "vgpu-state.json")))
assert st["overrides"], st
mut("vgpu-state-bad-key", st, ["overrides", 0, "key"], "set", "priority")
mut("vgpu-state-no-config", st, ["overrides", 0, "config"], "del")
pl = json.load(open(os.path.join(ok, "place.json")))
assert "verified" in pl["sets"][0], pl
mut("place-no-sms", pl, ["sets", 0, "sms"], "del")
mut("place-n-sms-string", pl, ["sets", 0, "n_sms"], "set", "16")
mut("place-verified-ok-int", pl, ["sets", 0, "verified", "ok"], "set", 1)
mut("place-group-no-set", pl, ["groups", 0, "set"], "del")
mut("place-wrong-schema", pl, ["schema"], "set", "gpuos.place/2")
pr = json.load(open(os.path.join(ok, "place-refused.json")))
assert "refused" in pr["sets"][1], pr
mut("place-refused-number", pr, ["sets", 1, "refused"], "set", 3)
mut("place-refused-no-request", pr, ["sets", 1, "request"], "del")
co = json.load(open(os.path.join(ok, "colocation.json")))
mut("colocation-no-allocator", co, ["allocator"], "del")
mut("colocation-median-string", co, ["naive", "runs", 0, "a_on_first", "median"], "set", "1.0")
mut("colocation-bad-arrival", co, ["allocator", "runs", 0, "arrival"], "set", "together")
mut("colocation-wrong-schema", co, ["schema"], "set", "gpuos.colocation/2")
sv = json.load(open(os.path.join(ok, "spatial-vgpu.json")))
mut("spatial-vgpu-no-temporal", sv, ["runs", "temporal"], "del")
mut("spatial-vgpu-tflops-string", sv, ["runs", "spatial", "A", "tflops"], "set", "12")
mut("spatial-vgpu-wrong-schema", sv, ["schema"], "set", "gpuos.spatial/1")
pc = json.load(open(os.path.join(ok, "placement-check.json")))
mut("placement-check-fraction-over-1", pc, ["views", 0, "fraction"], "set", 1.5)
mut("placement-check-no-pass", pc, ["pass_99_7"], "del")
mut("placement-check-no-provenance", pc, ["provenance"], "del")
mut("placement-check-wrong-schema", pc, ["schema"], "set", "gpuos.placement/1")
plo = json.load(open(os.path.join(ok, "placement-locality.json")))
mut("placement-locality-bad-variant", plo, ["rows", 0, "variants", "nearby"], "set", plo["rows"][0]["variants"]["local"])
mut("placement-locality-median-string", plo, ["rows", 0, "variants", "local", "ms_median"], "set", "1")
pg = json.load(open(os.path.join(ok, "placement-gemv.json")))
mut("placement-gemv-no-rows", pg, ["rows"], "del")
pu = json.load(open(os.path.join(ok, "placement-unequal.json")))
mut("placement-unequal-three-sms", pu, ["rows", 0, "working_sms"], "set", [1, 2, 3])
mut("placement-unequal-no-split", pu, ["rows", 0, "split_equal"], "del")
ld = json.load(open(os.path.join(ok, "load.json")))
mut("load-no-workers", ld, ["workers"], "del")
mut("load-errors-string", ld, ["workers", "errors"], "set", "0")
mut("load-rss-negative", ld, ["daemon_rss_kib", "max"], "set", -1)
mut("load-wrong-schema", ld, ["schema"], "set", "gpuos.load/2")
vb = json.load(open(os.path.join(ok, "vgpu-bench.json")))
mut("vgpu-bench-unknown-mode", vb, ["isolation_modes", "thread"], "set", vb["isolation_modes"]["process"])
sec = sorted(vb["isolation_modes"]["process"])[0]
mut("vgpu-bench-mode-section-string", vb, ["isolation_modes", "process", sec], "set", "n/a")
mut("vgpu-bench-mode-unknown-section", vb, ["isolation_modes", "none", "warp"], "set", {})
mut("vgpu-bench-switch-no-lost", vb, ["switch", "lost_fraction"], "del")
mut("vgpu-bench-unknown-member", vb, ["extra"], "set", 1)
mut("vgpu-bench-no-device", vb, ["device"], "del")
mut("vgpu-bench-wrong-schema", vb, ["schema"], "set", "gpuos.vgpu-bench/2")
if have_shm:
    sl = json.load(open(os.path.join(ok, "shm-list.json")))
    # the listing of an empty daemon holds no segment: one of the shape
    # src/vmem/segtable.c gos_shm_json writes, to validate and to mutate
    seg = {"key": 81, "id": 0, "uid": 0, "gid": 0, "cuid": 0, "cgid": 0, "mode": "0600", "bytes": 4194304,
           "nattch": 1, "removed": False, "vgpu": "a", "cpid": 100, "lpid": 100}
    sl["segments"].append(seg)
    json.dump(sl, open(os.path.join(ok, "shm-list-one.json"), "w"))
    i = len(sl["segments"]) - 1
    mut("shm-list-no-bytes", sl, ["segments", i, "bytes"], "del")
    mut("shm-list-mode-int", sl, ["segments", i, "mode"], "set", 384)
    mut("shm-list-removed-string", sl, ["segments", i, "removed"], "set", "dest")
    mut("shm-list-no-segments", sl, ["segments"], "del")
    mut("shm-list-wrong-schema", sl, ["schema"], "set", "gpuos.shm/1")
if have_shm_bench:
    sb = json.load(open(os.path.join(ok, "shm-bench.json")))
    mut("shm-bench-exact-string", sb, ["byte_exact"], "set", "yes")
    mut("shm-bench-phase-bad-vgpu", sb, ["turns", "phases", 0, "vgpu"], "set", "C")
    mut("shm-bench-rate-no-bytes", sb, ["rate", 0, "bytes"], "del")
    mut("shm-bench-chain-speedup-string", sb, ["chain", 0, "speedup"], "set", "2x")
    mut("shm-bench-turns-no-device", sb, ["device"], "del")
    mut("shm-bench-wrong-schema", sb, ["schema"], "set", "gpuos.shm-bench/2")
if have_cudashim:
    cs = json.load(open(os.path.join(ok, "cudashim-gpu.json")))
    mut("cudashim-no-results", cs, ["results"], "del")
    mut("cudashim-rc-int", cs, ["results", "vadd.gpuos_rc"], "set", 0)
    mut("cudashim-identical-yes", cs, ["results", "vadd.identical"], "set", "yes")
    mut("cudashim-no-uuid", cs, ["provenance", "gpu_uuid"], "del")
    mut("cudashim-wrong-schema", cs, ["schema"], "set", "gpuos.cudashim/1")
PYEOF
# documents made in the mutation step (shm-list with a segment) validate too
$PY tests/schema_check.py --known-only "$T/ok" > "$T/ok2.log" || { cat "$T/ok2.log"; fail "fresh files do not validate"; }
$PY tests/schema_check.py --expect-invalid "$T/bad" > "$T/bad.log" || { cat "$T/bad.log"; fail "a mutated file validated"; }
[ "$(grep -c 'rejected as expected' "$T/bad.log")" -eq "$(ls "$T/bad" | wc -l)" ] ||
    { cat "$T/bad.log"; fail "not every mutation was rejected"; }
# the schemaless form of a fresh file is no gpuos document
$PY -c "import json; json.dump({'hello': 1}, open('$T/plain.json', 'w'))"
$PY tests/schema_check.py --known-only "$T/plain.json" >/dev/null && fail "--known-only accepted a document of no schema"
echo "t_schemas: ok ($(ls "$T/bad" | wc -l) mutations rejected)"
