#!/usr/bin/env python3
"""results_tables.py: the README's tables, generated from results/<gpu-uuid>/.

Usage: python3 tools/results_tables.py [topology|...]   (prints Markdown)
Each table reads only committed measurement files, so the README never carries
a number that is not in results/.
"""
import glob
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results")


def load(path):
    with open(path) as f:
        return json.load(f)


def topology():
    rows = ["| GPU (UUID) | date | GPCs (SMs each) | free-floating SMs -> GPC | min margin | paper match | 3 runs identical | probe time |",
            "|---|---|---|---|---|---|---|---|"]
    for d in sorted(glob.glob(os.path.join(ROOT, "GPU-*"))):
        tp = os.path.join(d, "topology.json")
        if not os.path.exists(tp):
            continue
        chip, prov = load(tp), load(os.path.join(d, "provenance.json"))
        t = chip["topology"]
        runs = [chip] + [load(p) for p in sorted(glob.glob(os.path.join(d, "topology-run*.json")))]
        key = lambda c: sorted(sorted(g["sms"]) for g in c["topology"]["gpcs"])
        same = all(key(r) == key(chip) for r in runs)
        gpc_of = {}
        for i, g in enumerate(t["gpcs"]):
            for s in g["sms"]:
                gpc_of[s] = i
        free = t.get("free_floating_sms", [])
        by_gpc = {}
        for s in free:
            by_gpc.setdefault(gpc_of[s], []).append(s)
        free_txt = "; ".join(f"{','.join(map(str, v))} -> GPC {g}" for g, v in sorted(by_gpc.items()))
        margins = [p["margin"] for p in t["placements"]]
        match = t.get("paper_match") or "not in the paper"
        times = ", ".join(f"{r['topology']['seconds']:.2f}" for r in runs)
        rows.append(f"| {prov['gpu']} ({os.path.basename(d)[:12]}...) | {prov['date'][:10]} | {t['summary']} | "
                    f"{free_txt} | {min(margins) if margins else float('nan'):.2f} | {match} | "
                    f"{'yes' if same else 'NO'} ({len(runs)}) | {times} s |")
    return "\n".join(rows)


TABLES = {"topology": topology}

if __name__ == "__main__":
    names = sys.argv[1:] or list(TABLES)
    for n in names:
        print(TABLES[n]())
        print()
