#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/cutrace/diff.py NATIVE GPUOS: what a program asked of the driver
natively and on a vGPU, from two cutrace logs (tools/cutrace/cutrace.c; a log
is a file or a prefix whose <prefix>.<pid> files are read together).

Prints, in this order: device attributes answered differently; calls that
failed on the vGPU but not natively (by name and error); calls made natively
and never on the vGPU; export-table slots used only on one side; the vGPU
log's last calls. Exit status 0 when nothing differs, 1 when something does,
2 on bad input."""
import collections
import glob
import os
import re
import sys

LINE = re.compile(r"^(\d+) (\d+) (\d+) (\S+?)(?:\((.*?)\))? (.*)$")


def files(spec):
    if os.path.isfile(spec):
        return [spec]
    found = sorted(glob.glob(glob.escape(spec) + ".*"))
    if not found:
        sys.exit("cutrace diff: no log %s or %s.<pid>" % (spec, spec))
    return found


def base(name):
    return name.split("@", 1)[0]


def read(spec):
    calls = []
    for path in files(spec):
        with open(path, errors="replace") as f:
            for raw in f:
                m = LINE.match(raw.rstrip("\n"))
                if not m:
                    continue
                seq, tid, depth, name, arg, rest = m.groups()
                rc = re.search(r"rc=(-?\d+)", rest)
                calls.append({"file": os.path.basename(path), "seq": int(seq), "name": name,
                              "base": base(name) + ("(" + arg + ")" if arg is not None else ""),
                              "rc": int(rc.group(1)) if rc else None,
                              "a": re.search(r"a=(\S+)", rest).group(1).split(",") if "a=" in rest else [],
                              "out": re.search(r"out=(\S+)", rest).group(1) if "out=" in rest else None,
                              "ns": int(re.search(r"ns=(\d+)", rest).group(1)) if " ns=" in rest else 0,
                              "raw": raw.rstrip("\n")})
    return calls


def attrs(calls):
    got = {}
    for c in calls:
        if c["base"] == "cuDeviceGetAttribute" and len(c["a"]) > 1:
            got[int(c["a"][1], 16)] = c["out"] if c["rc"] == 0 else "error %d" % c["rc"]
    return got


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: diff.py NATIVE_LOG GPUOS_LOG\n")
        return 2
    nat, vg = read(argv[1]), read(argv[2])
    differs = False
    an, av = attrs(nat), attrs(vg)
    rows = [(k, an[k], av[k]) for k in sorted(set(an) & set(av)) if an[k] != av[k]]
    print("device attributes asked on one side only: native %s; vGPU %s" % (
        " ".join(str(k) for k in sorted(set(an) - set(av))) or "none",
        " ".join(str(k) for k in sorted(set(av) - set(an))) or "none"))
    print("device attributes answered differently (attribute: native / vGPU): %d" % len(rows))
    for k, a, b in rows:
        print("  %d: %s / %s" % (k, a, b))
    differs |= bool(rows)

    def is_slot(c):
        return c["name"].startswith("{")
    ok_native = {(c["base"], c["rc"]) for c in nat}
    fails = collections.Counter((c["base"], c["rc"]) for c in vg
                                if c["rc"] and not is_slot(c) and (c["base"], c["rc"]) not in ok_native)
    print("calls failing on the vGPU only (name, error: count): %d" % len(fails))
    for (n, rc), k in sorted(fails.items(), key=lambda x: min(c["seq"] for c in vg if (c["base"], c["rc"]) == x[0])):
        first = next(c for c in vg if (c["base"], c["rc"]) == (n, rc))
        print("  %s rc=%d: %d (first: %s)" % (n, rc, k, first["raw"]))
    differs |= bool(fails)
    used_vg = {c["base"] for c in vg}
    missing = collections.Counter(c["base"] for c in nat if c["base"] not in used_vg and
                                  not c["base"].startswith("cuGetProcAddress"))
    print("calls made natively, never on the vGPU: %d" % len(missing))
    for n, k in sorted(missing.items(), key=lambda x: -x[1])[:60]:
        print("  %s: %d" % (n, k))
    slots_n = {c["name"] for c in nat if is_slot(c)}
    slots_v = {c["name"] for c in vg if is_slot(c)}
    print("export-table slots used natively only: %s" % (" ".join(sorted(slots_n - slots_v)) or "none"))
    print("export-table slots used on the vGPU only: %s" % (" ".join(sorted(slots_v - slots_n)) or "none"))
    # time spent in each call (outermost calls only: depth 0), native against vGPU
    def spent(calls):
        t = collections.defaultdict(lambda: [0, 0])
        for c in calls:
            if c["raw"].split(" ", 3)[2] == "0":
                t[c["base"]][0] += 1
                t[c["base"]][1] += c["ns"]
        return t
    tn, tv = spent(nat), spent(vg)
    rows = sorted(set(tn) | set(tv), key=lambda k: -(tv.get(k, [0, 0])[1] - tn.get(k, [0, 0])[1]))
    print("time in the driver by call, the most added on the vGPU first (calls, ms: native / vGPU):")
    for k in rows[:25]:
        a, b = tn.get(k, [0, 0]), tv.get(k, [0, 0])
        print("  %-44s %7d %9.2f / %7d %9.2f" % (k[:44], a[0], a[1] / 1e6, b[0], b[1] / 1e6))
    print("  %-44s %7d %9.2f / %7d %9.2f" % ("all", sum(v[0] for v in tn.values()), sum(v[1] for v in tn.values()) / 1e6,
                                             sum(v[0] for v in tv.values()), sum(v[1] for v in tv.values()) / 1e6))
    print("the vGPU log's last calls:")
    for c in sorted(vg, key=lambda c: (c["file"], c["seq"]))[-25:]:
        print("  " + c["raw"])
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
