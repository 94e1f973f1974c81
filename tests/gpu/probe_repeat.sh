#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/probe_repeat.sh: issue 44's check of a chart users can script
# against, on a real GPU (run on the device machine from the repository root):
# builds gpuos, runs `gpuos probe all --device 0 --json` RUNS times (default 10)
# on GPU 0 in one go, and compares the charts' GPCs (SM sets), memory partitions
# (SM sets) and hash (granularity and in-page bits of every parity). Prints a
# table (one row per run: exit status, GPCs, partition sizes, HBM threshold,
# hash bits, whether the discovery had to measure again) and "N of RUNS
# identical" (runs that failed count as not identical), then PASS only when
# every run gave the same chart, FAIL otherwise.
#
#   OUT=out sh tests/gpu/probe_repeat.sh
#
# $OUT (default out/probe-repeat) receives build.log, chartK.json and probeK.txt
# for every run, nvidia-smi.txt and summary.txt. Exit status 0 only on PASS.
set -u
OUT=${OUT:-out/probe-repeat}
RUNS=${RUNS:-10}
G=${GPUOS:-build/gpuos}
mkdir -p "$OUT"
command -v python3 >/dev/null || { echo "FAIL: python3 is needed to compare the charts"; exit 1; }
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv >"$OUT/nvidia-smi.txt" 2>&1
echo "== build"
if [ -z "${GPU_PREBUILT:-}" ] && ! make -s -j"$(nproc)" >"$OUT/build.log" 2>&1; then
    tail -20 "$OUT/build.log"
    echo "FAIL: build (log in $OUT/build.log)"
    exit 1
fi
k=1
while [ "$k" -le "$RUNS" ]; do
    t0=$(date +%s)
    "$G" probe all --device 0 --json "$OUT/chart$k.json" >"$OUT/probe$k.txt" 2>&1
    rc=$?
    echo "$rc" >"$OUT/rc$k"
    echo "run $k: exit $rc, $(($(date +%s) - t0)) s"
    [ "$rc" -eq 0 ] || tail -3 "$OUT/probe$k.txt"
    k=$((k + 1))
done
python3 - "$OUT" "$RUNS" >"$OUT/summary.txt" 2>&1 <<'PY'
import collections, json, os, sys
out, runs = sys.argv[1], int(sys.argv[2])

def key(c):
    gpcs = tuple(sorted(tuple(sorted(g["sms"])) for g in c["topology"]["gpcs"]))
    n = c["numa"]
    parts = tuple(sorted(tuple(sorted(p["sms"])) for p in n["partitions"]))
    h = n["hash"]
    par = tuple(tuple(p["in_page_bits"]) for p in h.get("parities", [])) or (tuple(h["in_page_bits"]),)
    return gpcs, parts, h["granularity_bytes"], par

rows, keys = [], []
for k in range(1, runs + 1):
    rc = int(open(f"{out}/rc{k}").read())
    path = f"{out}/chart{k}.json"
    if rc or not os.path.exists(path):
        err = open(f"{out}/probe{k}.txt").read().strip().splitlines()
        rows.append((k, f"exit {rc}", "-", "-", "-", "-", (err[-1] if err else "")[:60]))
        keys.append(None)
        continue
    c = json.load(open(path))
    kk = key(c)
    keys.append(kk)
    n = c["numa"]
    rows.append((k, "ok", len(kk[0]), "+".join(str(len(p)) for p in kk[1]),
                 "%.0f" % n.get("threshold_cycles", 0), " ".join(map(str, kk[3][0])),
                 "remeasured" if "remeasured" in n else ""))
common = collections.Counter(k for k in keys if k is not None).most_common(1)
same = common[0][1] if common else 0
print("%-4s %-8s %-5s %-10s %-9s %-24s %s" % ("run", "status", "gpcs", "partitions", "threshold", "hash bits", "note"))
for r in rows:
    print("%-4s %-8s %-5s %-10s %-9s %-24s %s" % r)
for k, kk in enumerate(keys, 1):
    if kk is not None and common and kk != common[0][0]:
        what = [w for w, a, b in zip(("GPCs", "partitions", "granularity", "hash bits"), kk, common[0][0]) if a != b]
        print(f"run {k} differs from the most common chart in: {', '.join(what)}")
print(f"{same} of {runs} identical")
print("PASS" if same == runs else "FAIL")
sys.exit(0 if same == runs else 1)
PY
status=$?
cat "$OUT/summary.txt"
exit $status
