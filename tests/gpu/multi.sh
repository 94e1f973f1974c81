#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/multi.sh: several GPUs of one node (issue 14 item 5), for a lent
# machine of two or more GPUs; skips cleanly (exit 0, "SKIP") with fewer.
#   - `gpuos info --device all` lists exactly nvidia-smi's GPUs (same UUIDs, order);
#     `--device UUID` and `--device PCI-BUS-ID` pick the same GPU as nvidia-smi -i;
#   - `gpuos probe topology --device all` charts every GPU (one chart per UUID, every
#     SM in exactly one GPC), `--nfd` labels each (gpu-N.*) and the node;
#   - `gpuos node` measures every ordered pair: peer access as the driver says,
#     copy bandwidth sane (peer: 20-2000 GB/s; staged: > 1 GB/s), latency 0.5-200 us;
#   - `gpuos report` renders the fleet page of the charts.
# Logs and JSON go to $OUT (default out/). Changes no GPU setting.
set -u
# CUDA's ordinals in nvidia-smi's (PCI bus) order, so that GPU N is the same GPU to both
export CUDA_DEVICE_ORDER=PCI_BUS_ID
G=${GPUOS:-build/gpuos}
OUT=${OUT:-out}
PY=/usr/bin/python3
mkdir -p "$OUT/charts"
LOG="$OUT/multi.log"
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$n" -lt 2 ]; then
    echo "SKIP: multi.sh needs two GPUs, this machine has $n" | tee "$LOG"
    exit 0
fi
fail() { echo "FAIL: $*" | tee -a "$LOG"; exit 1; }
{ nvidia-smi -L; nvidia-smi topo -m; } > "$OUT/nvidia-smi-topo.txt" 2>&1
cat "$OUT/nvidia-smi-topo.txt" > "$LOG"
nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv,noheader > "$OUT/smi-ids.csv"

"$G" info --device all --json "$OUT/info.json" >> "$LOG" || fail "info --device all"
$PY - "$OUT/info.json" "$OUT/smi-ids.csv" <<'PYEOF' >> "$LOG" || fail "info --device all differs from nvidia-smi"
import json, sys
d = json.load(open(sys.argv[1]))["devices"]
smi = [l.split(", ") for l in open(sys.argv[2]).read().strip().splitlines()]
assert [x["uuid"] for x in d] == [s[1] for s in smi], ([x["uuid"] for x in d], smi)
print("info --device all: the same", len(d), "GPUs as nvidia-smi")
PYEOF
last=$(tail -1 "$OUT/smi-ids.csv")
idx=${last%%,*}; rest=${last#*, }; uuid=${rest%%,*}; pci=${last##*, }
"$G" info --device "$uuid" | grep -q "UUID: $uuid" || fail "--device $uuid"
"$G" info --device "$pci" | grep -q "UUID: $uuid" || fail "--device $pci (PCI bus id) is not GPU $idx"
echo "--device by UUID and PCI bus id: GPU $idx" >> "$LOG"

"$G" probe topology --device all --json "$OUT/charts" --nfd "$OUT/nfd.txt" >> "$LOG" 2>&1 || fail "probe --device all"
$PY - "$OUT/charts" "$OUT/smi-ids.csv" "$OUT/nfd.txt" <<'PYEOF' >> "$LOG" || fail "charts of every GPU"
import json, os, sys
smi = [l.split(", ") for l in open(sys.argv[2]).read().strip().splitlines()]
labels = dict(l.strip().split("=", 1) for l in open(sys.argv[3]) if not l.startswith("#"))
assert labels["gpuos.io/gpu-count"] == str(len(smi)), labels.get("gpuos.io/gpu-count")
for i, (idx, uuid, pci) in enumerate(smi):
    c = json.load(open(os.path.join(sys.argv[1], uuid + ".json")))
    sms = [s for g in c["topology"]["gpcs"] for s in g["sms"]]
    assert sorted(sms) == list(range(c["device"]["sm_count"])), uuid
    assert c["device"].get("simulated", False) is False  # a real chart omits the flag
    assert labels[f"gpuos.io/gpu-{i}.sm-count"] == str(c["device"]["sm_count"])
    print(f"GPU {i} {uuid}: {c['topology']['summary']}, clusters of 16 at once "
          f"{labels[f'gpuos.io/gpu-{i}.clusters-16']}")
PYEOF

nvidia-smi topo -p2p r > "$OUT/p2p-read.txt" 2>&1 || echo "(nvidia-smi topo -p2p r failed)" >> "$OUT/p2p-read.txt"
"$G" node --json "$OUT/node.json" | tee -a "$LOG" || fail "node"
$PY - "$OUT/node.json" "$n" "$OUT/p2p-read.txt" <<'PYEOF' | tee -a "$LOG" || fail "node view"
import json, re, sys
v = json.load(open(sys.argv[1])); n = int(sys.argv[2])
# nvidia-smi's P2P read matrix, when it printed one: OK where peer access works
smi = {}
for line in open(sys.argv[3]):
    m = re.match(r"\s*GPU(\d+)\s+(.*)", line)
    if m and "GPU" not in m.group(2):
        for b, cell in enumerate(m.group(2).split()):
            smi[(int(m.group(1)), b)] = cell
assert len(v["gpus"]) == n and not any(g["simulated"] for g in v["gpus"])
pairs = {(l["src"], l["dst"]): l for l in v["links"]}
assert sorted(pairs) == [(a, b) for a in range(n) for b in range(n) if a != b]
for (a, b), l in sorted(pairs.items()):
    if (a, b) in smi:
        assert l["peer_access"] == (smi[(a, b)] == "OK"), ("peer access differs from nvidia-smi", a, b, smi[(a, b)])
    lo, hi = (20, 2000) if l["peer_access"] else (1, 2000)
    assert lo < l["gbps"] < hi, (a, b, l)
    assert 0.5 < l["latency_us"] < 200, (a, b, l)
    print(f"GPU {a} -> GPU {b}: peer access {'yes' if l['peer_access'] else 'no'}, "
          f"{l['gbps']:.1f} GB/s, {l['latency_us']:.2f} us")
PYEOF
"$G" report "$OUT"/charts/*.json --html "$OUT/fleet.html" >> "$LOG" 2>&1 || fail "fleet report"
grep -q "Fleet" "$OUT/fleet.html" || fail "fleet page"
echo "multi.sh: PASS ($n GPUs)" | tee -a "$LOG"
