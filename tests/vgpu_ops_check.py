#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""vgpu_ops_check.py: checks that vgpu_bench's native and vGPU sides did the
same work (issue 40 item 5), from the two files of one run:

    vgpu_ops_check.py OPS.json BENCH.json [--quick]

OPS.json is `vgpu_bench --ops`'s file (schemas/vgpu-bench-ops.schema.json),
BENCH.json the run's vgpu-bench.json. Checked:
  - every paired workload's native and gpuos operations are equal (launches,
    synchronises, copy waits, allocations, copies and bytes each way); the
    neighbour's probes run at most 1.5 s of round trips, so there only the
    copies and allocations must be equal, and each side's round trips be
    launch + synchronise pairs;
  - a pair for every row the benchmark measured in the sections the run holds
    (copy, ringprobe, launch, standalone, neighbour), and none for a section
    it skipped;
  - every copy pair moved its size per copy and waited once per copy;
  - with --quick, the counts the workloads must give: launch's 2 x 200 + 50
    launches and 2 + 50 synchronises, MADD's three runs of two 4 MiB matrices
    up, one kernel and one down, PINCPY's three pinned 16 MiB round trips.
Prints one line per problem and a summary; exit 0 when there is none."""
import json
import sys

MIB = 1 << 20
TIMED = ("launches", "syncs")  # the neighbour's round trips: bounded by time


def check_pairs(ops, bad):
    by = {}
    for w in ops["workloads"]:
        key = (w["isolation"], w["section"], w["work"])
        by[key] = w
        nat, gos = w["native"], w["gpuos"]
        free = TIMED if w["section"] == "neighbour" else ()
        diff = {k: (nat[k], gos[k]) for k in nat if k not in free and nat[k] != gos[k]}
        if diff:
            bad.append("%s %s %s: native and gpuos differ (native, gpuos): %s" % (key + (diff,)))
        for side, t in (("native", nat), ("gpuos", gos)):
            if w["section"] == "neighbour" and t["launches"] != t["syncs"]:
                bad.append("%s %s %s: %s's round trips are not launch + synchronise" % (key + (side,)))
        if nat["launches"] + nat["copies_htod"] + nat["copies_dtoh"] == 0:
            bad.append("%s %s %s: nothing issued" % key)
    return by


def rows_of(m):
    rows = {}
    for sec in ("copy", "ringprobe", "standalone"):
        if sec in m:
            rows[sec] = m[sec] if isinstance(m[sec], list) else []  # ringprobe: {"skipped"} without a ring
    if "launch_us" in m:
        rows["launch"] = [{"work": "empty kernel"}]
    if "neighbour" in m:
        rows["neighbour"] = [{"work": "alone"}, {"work": "beside a busy one"}]
    return rows


def work_of(sec, r):
    if sec in ("copy", "ringprobe"):
        return "%s %d %s" % (r["dir"], r["bytes"], r["host_mem"])
    return r["name"] if sec == "standalone" else r["work"]


def check_mode(mode, m, by, quick, bad):
    def expect(what, got, want):
        if got != want:
            bad.append("%s %s: %r, expected %r" % (mode, what, got, want))

    rows = rows_of(m)
    for sec in ("copy", "ringprobe", "launch", "standalone", "neighbour"):
        expect("%s pairs" % sec, sum(1 for k in by if k[0] == mode and k[1] == sec), len(rows.get(sec, [])))
    for sec, rs in rows.items():
        for r in rs:
            w = by.get((mode, sec, work_of(sec, r)))
            if not w:
                bad.append("%s %s %s: no pair" % (mode, sec, work_of(sec, r)))
            elif sec in ("copy", "ringprobe"):
                g, d = w["gpuos"], r["dir"]
                expect("%s %s bytes" % (sec, work_of(sec, r)), g["bytes_" + d], g["copies_" + d] * r["bytes"])
                expect("%s %s waits" % (sec, work_of(sec, r)), g["copy_waits"], g["copies_" + d])
    if not quick:
        return
    get = lambda sec, work, side: by.get((mode, sec, work), {}).get(side, {})
    if "launch" in rows:
        l = get("launch", "empty kernel", "native")
        expect("launch", [l.get("launches"), l.get("syncs")], [2 * 200 + 50, 2 + 50])
    if "standalone" in rows:
        madd = get("standalone", "MADD", "gpuos")
        expect("MADD", [madd.get(k) for k in ("launches", "copies_htod", "bytes_htod", "copies_dtoh", "allocs", "frees")],
               [3, 6, 6 * 4 * MIB, 3, 9, 9])
        pin = get("standalone", "PINCPY", "native")
        expect("PINCPY", [pin.get(k) for k in ("copies_htod", "bytes_htod", "copies_dtoh", "bytes_dtoh", "copy_waits")],
               [3, 3 * 16 * MIB, 3, 3 * 16 * MIB, 3])


def main(argv):
    args = [a for a in argv[1:] if a != "--quick"]
    if len(args) != 2:
        print("usage: vgpu_ops_check.py OPS.json BENCH.json [--quick]", file=sys.stderr)
        return 2
    ops, bench = (json.load(open(p)) for p in args)
    bad = []
    by = check_pairs(ops, bad)
    for mode, m in bench["isolation_modes"].items():
        check_mode(mode, m, by, "--quick" in argv, bad)
    for b in bad:
        print(b)
    print("vgpu_ops_check: %d paired workloads in %d isolation modes, %d problems"
          % (len(ops["workloads"]), len(bench["isolation_modes"]), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
