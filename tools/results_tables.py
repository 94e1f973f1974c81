#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""results_tables.py: the tables of docs/results.md, generated from results/<gpu-uuid>/.

Usage: python3 tools/results_tables.py [topology|...]   (prints Markdown)
Each table reads only committed measurement files, so docs/results.md never
carries a number that is not in results/.
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
        # A topology probe (topology*.json) or a whole chart (chip*.json).
        stem = "topology" if os.path.exists(os.path.join(d, "topology.json")) else "chip"
        tp = os.path.join(d, stem + ".json")
        if not os.path.exists(tp) or "gpcs" not in load(tp).get("topology", {}):
            continue
        chip, prov = load(tp), load(os.path.join(d, "provenance.json"))
        t = chip["topology"]
        runs = [chip] + [load(p) for p in sorted(glob.glob(os.path.join(d, stem + "-run*.json")))]
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
        rows.append(f"| {prov.get('gpu', chip['device']['name'])} ({os.path.basename(d)[:12]}...) | {prov.get('date', chip.get('probe', {}).get('date', '?'))[:10]} | {t['summary']} | "
                    f"{free_txt} | {min(margins) if margins else float('nan'):.2f} | {match} | "
                    f"{'yes' if same else 'NO'} ({len(runs)}) | {times} s |")
    return "\n".join(rows)


def numa():
    rows = ["| GPU (UUID) | partitions (SMs) | in-page hash bits | HBM local / remote (cycles) | L2 hit local / remote (cycles) | HBM GB/s local / remote | effective L2: one reader per page / one partition's SMs read | probe all | verify all memory |",
            "|---|---|---|---|---|---|---|---|---|"]
    for d in sorted(glob.glob(os.path.join(ROOT, "GPU-*"))):
        cp = os.path.join(d, "chip.json")
        if not os.path.exists(cp):
            continue
        c = load(cp)
        n, m = c.get("numa", {}), c.get("memory", {})
        if "partitions" not in n or "latency_cycles" not in n:
            continue
        lat, bw = n["latency_cycles"], m.get("hbm_bandwidth_gbps", {})
        ver = ""
        for vp in glob.glob(os.path.join(d, "**", "verify-all.json"), recursive=True):
            v = load(vp)["numa"]["verification"]
            after = v.get("agreement_after_reprobe")
            ver = (f"{v['bytes'] / 1e9:.1f} GB in {v['time_s']['total']:.1f} s: {100 * v['agreement']:.2f} %"
                   + (f" ({100 * after:.3f} % after re-probing)" if after else ""))
        l2 = m.get("l2_effective_fraction")
        l2p = m.get("l2_effective_fraction_one_partition")
        rows.append(f"| {c['device']['name']} ({os.path.basename(d)[:12]}...) | "
                    f"{' / '.join(str(len(p['sms'])) for p in n['partitions'])} | "
                    f"{' '.join(map(str, n['hash']['in_page_bits']))} ({n['hash']['granularity_bytes']} B) | "
                    f"{lat['hbm_local']:.0f} / {lat['hbm_remote']:.0f} | {lat['l2_local']:.0f} / {lat['l2_remote']:.0f} | "
                    f"{bw.get('local', 0):.0f} / {bw.get('remote', 0):.0f} | "
                    f"{'%.1f %%' % (100 * l2) if l2 else '-'} / {'%.1f %%' % (100 * l2p) if l2p else 'not measured'} | "
                    f"{c['probe']['seconds']:.2f} s | {ver or '-'} |")
    return "\n".join(rows)


def frameworks():
    """Unmodified programs natively and under `gpuos run` (tests/gpu/frameworks.sh):
    one row per program of each committed frameworks.json."""
    rows = ["| GPU (UUID), commit | program | works under gpuos (output = native) | figure | native | gpuos | gpuos / native (mean of both natives) | what stopped it |",
            "|---|---|---|---|---|---|---|---|"]
    for fp in sorted(glob.glob(os.path.join(ROOT, "GPU-*", "frameworks*.json")) +
                     glob.glob(os.path.join(ROOT, "GPU-*", "*", "frameworks.json"))):
        d = load(fp)
        where = os.path.relpath(fp, ROOT).split(os.sep)[0][:12] + "..."
        commit = d.get("commit", "")
        for e in d["programs"]:
            k = e.get("figure") or next((k for k in ("steps_per_s", "tflops", "vadd_GBps", "raw_launches_per_s")
                                         if k in e["native"]), "")
            works = "yes" if e["match"] else ("runs, output differs" if e["gpuos_rc"] == 0 else "no")
            fig = lambda side: "%g" % e[side][k] if k and k in e[side] else "-"
            native = fig("native")
            if k and k in e.get("native_after", {}):  # run natively before and after gpuos: both
                native += " / %g after" % e["native_after"][k]
            ratio = "%.3f" % e["ratio"] if e.get("ratio") else "-"
            rows.append(f"| {where}{', ' + commit if commit else ''} | {e['name']} | {works} | {k or '-'} | "
                        f"{native} | {fig('gpuos')} | {ratio} | {e.get('error', '-') if not e['match'] else ''} |")
    return "\n".join(rows)


TABLES = {"topology": topology, "numa": numa, "frameworks": frameworks}

if __name__ == "__main__":
    names = sys.argv[1:] or list(TABLES)
    for n in names:
        print(TABLES[n]())
        print()
