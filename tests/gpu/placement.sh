#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/placement.sh: partition-local memory on the real GPU. Charts the chip,
# allocates two small views (build/bench/placement_bench --quick) and asserts
# that >= 99.7 % of each view's 4 KB units are in the view's partition, checked
# by latency probing (not by the hash that built the views), and that a GEMV
# through the views is exact (the bench fails otherwise).
set -u
BUILD=${BUILD:-build}
G=${GPUOS:-$BUILD/gpuos}
RES=${RES:-/tmp/gpuos-placement}
mkdir -p "$RES"
"$G" probe numa --json "$RES/chip.json" > "$RES/chart.log" 2>&1 || { cat "$RES/chart.log"; exit 1; }
"$BUILD/bench/placement_bench" --quick --chart "$RES/chip.json" --out "$RES" > "$RES/quick.log" 2>&1
rc=$?
grep -E "^check|placement_bench:" "$RES/quick.log"
[ $rc -eq 0 ] || { echo "placement bench failed"; tail -5 "$RES/quick.log"; exit 1; }
python3 - "$RES/placement-check.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
ok = True
for v in c["views"]:
    f = v["fraction"]
    print("view %d: %.4f %% of %d units in partition %d" % (v["partition"], 100 * f, v["units"], v["partition"]))
    ok &= f >= 0.997
sys.exit(0 if ok else 1)
PY
