#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/topology.sh: pillar 1a on the real GPU: `gpuos info`, then the
# topology chart three times, each timed, and a check that the three maps are
# identical. Logs and JSON go to $OUT (default out/). Changes no GPU setting.
set -eu
G=${GPUOS:-build/gpuos}
OUT=${OUT:-out}
mkdir -p "$OUT"
"$G" info --json "$OUT/info.json" | tee "$OUT/topology.log"
for i in 1 2 3; do
    "$G" probe topology --device 0 --json "$OUT/topology-$i.json" | tee -a "$OUT/topology.log"
done
python3 - "$OUT" <<'PYEOF' | tee -a "$OUT/topology.log"
import json, sys
out = sys.argv[1]
runs = [json.load(open(f"{out}/topology-{i}.json")) for i in (1, 2, 3)]
def key(c):
    return sorted((sorted(g["sms"]), sorted(g["cluster_sms"])) for g in c["topology"]["gpcs"])
same = all(key(r) == key(runs[0]) for r in runs)
for i, r in enumerate(runs, 1):
    t = r["topology"]
    m = [p["margin"] for p in t["placements"] if p["how"] == "l2-contention"]
    print(f"run {i}: {t['summary']}, {t['seconds']:.2f} s, confidence {t['confidence']}, "
          f"min margin {min(m) if m else float('nan'):.2f}")
print("three runs identical:", same)
sys.exit(0 if same else 1)
PYEOF
