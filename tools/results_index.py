#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""results_index.py: results/INDEX.md, one row per GPU run in results/, generated.

Usage: /usr/bin/python3 tools/results_index.py [--root DIR] [--out FILE|-] [--check]
  (no option)  writes results/INDEX.md
  --out FILE   writes FILE instead ('-': standard output)
  --check      writes nothing: exit 1, with one line, when results/INDEX.md is not
               what this tool prints now (a folder missing from it, a changed
               figure or a document that began or stopped citing a run)
  --root DIR   the repository root (default: this file's ../); tests use a copy

A run folder is results/<gpu-uuid>/<name>/ (each subfolder), or results/<gpu-uuid>/
itself where it holds measurement files of its own. Every field is read from the
run's files, never guessed: provenance.json / *provenance*.json, PROVENANCE*.md /
PROVENANCE*.txt, machine.txt, and the "provenance" and "device" objects inside its
JSON files; a subfolder lacking a field takes it from the GPU folder's own
provenance files. A field found nowhere is "-". The headline is the first bold
figure of the run's PROVENANCE.md, else one computed from a known JSON file
(topology, chart, frameworks, placement, swap), else "-". "Cited by" lists the
documents (README.md, docs/) that name the GPU's UUID (its first 8 hex digits).
"""
import argparse
import glob
import json
import os
import re
import sys
from datetime import datetime

HEX = re.compile(r"\b([0-9a-f]{7,40})\b")
DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)")
NAME = re.compile(r"NVIDIA [A-Z]{1,2}\d{3}(?: \d+GB \w+)?")
UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def is_prov_doc(name):
    return name.upper().startswith("PROVENANCE") and not name.endswith(".json")


class Facts:
    """What one run's files say: first value found wins, in the order read."""

    FIELDS = ("gpu", "driver", "date", "commit", "measured", "headline")

    def __init__(self):
        self.v = {}

    def put(self, key, value):
        if value and key not in self.v:
            self.v[key] = str(value).strip()

    def get(self, key):
        return self.v.get(key, "-")

    def take_prov(self, p):
        """A provenance object: {"date", "commit", "command", "driver", ...}."""
        if not isinstance(p, dict):
            return
        self.put("gpu", p.get("gpu") or p.get("gpu_name"))
        self.put("driver", p.get("driver"))
        m = DATE.search(str(p.get("date", "")))
        self.put("date", m and m.group(1))
        m = HEX.search(str(p.get("commit", "")))
        self.put("commit", m and m.group(1)[:7])

    def take_device(self, d, uuid):
        if isinstance(d, dict) and d.get("uuid", uuid) == uuid and not d.get("simulated"):
            self.put("gpu", d.get("name"))
            self.put("driver", d.get("driver"))

    def take_doc(self, text):
        """PROVENANCE.md / .txt: a title, then lines naming date, commit, driver."""
        for line in text.splitlines():
            if line.startswith("# "):
                self.put("measured", line[2:].strip())
                break
        m = DATE.search(text)
        self.put("date", m and m.group(1))
        m = re.search(r"commit\W{0,3}([0-9a-f]{7,40})\b", text)
        self.put("commit", m and m.group(1)[:7])
        m = re.search(r"driver\W{0,3}(\d{3}\.\d+(?:\.\d+)?)", text)
        self.put("driver", m and m.group(1))
        m = NAME.search(text)
        self.put("gpu", m and m.group(0))
        self.put("headline", bold_figure(text))

    def take_machine(self, text):
        """machine.txt: "NAME, UUID, DRIVER, MEMORY", host, date(1), "commit X"."""
        lines = text.splitlines()
        if lines:
            parts = [p.strip() for p in lines[0].split(",")]
            if len(parts) >= 3 and parts[0].startswith("NVIDIA"):
                self.put("gpu", parts[0])
                self.put("driver", parts[2])
        for line in lines[1:]:
            try:
                self.put("date", datetime.strptime(" ".join(line.split()), "%a %b %d %I:%M:%S %p %Z %Y")
                         .strftime("%Y-%m-%d"))
            except ValueError:
                pass
            m = re.match(r"commit ([0-9a-f]{7,40})", line)
            self.put("commit", m and m.group(1)[:7])


def bold_figure(text):
    """The first **bold** span holding a number (not the GPU's name), with the words
    before it on its line back to the last clause mark, at most 70 characters."""
    for line in text.splitlines():
        for m in re.finditer(r"\*\*([^*]+)\*\*", line):
            span = m.group(1)
            if not re.search(r"\d", span) or NAME.fullmatch(span.strip()):
                continue
            before = re.split(r"[:;,]|^\s*- |\. ", line[: m.start()])[-1].strip(" -").replace("`", "")
            if len(before) > 50:
                before = "..." + before[-47:].split(" ", 1)[-1]
            close = ")" if before.endswith("(") else ""
            gap = "" if not before or close else " "
            return before + gap + "**" + span.strip().replace("`", "") + "**" + close
    return None


def h_chart(j):
    """A chart: its GPC configuration, and its HBM latency tiers when it has them."""
    out = []
    topo = j.get("topology")
    if isinstance(topo, dict) and topo.get("gpcs"):
        counts = {}
        for g in topo["gpcs"]:
            counts[len(g.get("sms", []))] = counts.get(len(g.get("sms", [])), 0) + 1
        out.append("GPCs " + " + ".join("%dx%d" % (n, s) for s, n in sorted(counts.items())))
    tiers = (j.get("numa") or {}).get("hbm_tiers") if isinstance(j.get("numa"), dict) else None
    if isinstance(tiers, dict) and "near_median" in tiers and "far_median" in tiers:
        out.append("HBM %.0f / %.0f cycles near / far" % (tiers["near_median"], tiers["far_median"]))
    return "; ".join(out) or None


def h_programs(j):
    """frameworks.json: programs whose results matched native's."""
    progs = j.get("programs")
    if isinstance(progs, list) and progs and all(isinstance(p, dict) for p in progs):
        return "%d of %d programs equal to native" % (sum(1 for p in progs if p.get("match")), len(progs))
    res = j.get("results")
    ident = [k for k in res if k.endswith(".identical")] if isinstance(res, dict) else []
    if ident:
        same = sum(1 for k in ident if str(res[k]) == "true")
        return "%d of %d programs identical to native" % (same, len(ident))
    return None


def h_vgpu_bench(j):
    """vgpu-bench.json: what launch + synchronise adds, BAND's largest error."""
    if not str(j.get("schema", "")).startswith("gpuos.vgpu-bench"):
        return None
    out = []
    ls = (j.get("launch_us") or {}).get("launch_sync_us") if isinstance(j.get("launch_us"), dict) else None
    if isinstance(ls, dict) and "added" in ls:
        out.append("launch + sync adds %.1f us" % ls["added"])
    band = [r.get("max_error_pct") for r in j.get("fairness") or [] if isinstance(r, dict) and r.get("policy") == "band"]
    band = [e for e in band if isinstance(e, (int, float))]
    if band:
        out.append("BAND within %.2f points" % max(band))
    return "; ".join(out) or None


def h_dvfs(j):
    """dvfs_probe.json: the timing workload's iteration at its largest size."""
    work = j.get("workload")
    if isinstance(work, list) and work and isinstance(work[-1], dict) and "iter_mean_ns" in work[-1]:
        w = work[-1]
        return "iteration of %s FMAs %.1f +- %.1f ns" % (w.get("work_fma", "?"), w["iter_mean_ns"], w.get("iter_sd_ns", 0))
    return None


def headline_from_json(files):
    """A figure computed from a known JSON file of the run, or None."""
    for path in files:
        j = load_json(path)
        if isinstance(j, dict):
            for h in (h_chart, h_programs, h_vgpu_bench, h_dvfs):
                out = h(j)
                if out:
                    return out
    return None


def what_from_files(names):
    """What a run without a titled provenance measured, from its files' names."""
    kinds = [("topology", "topology chart"), ("chip", "chart of the chip"), ("numa", "memory asymmetry (NUMA)"),
             ("dvfs", "frequency switching (DVFS)"), ("vgpu-bench", "vGPU benchmark"),
             ("frameworks", "frameworks under gpuos run"), ("cudashim", "unmodified CUDA programs (gpuos run)"),
             ("placement", "partition-local memory"), ("colocation", "co-location on SM sets"),
             ("smset", "SM sets"), ("spatial", "spatial vGPUs"), ("swap", "swapping"), ("shm", "shared memory"),
             ("node", "GPUs of a node")]
    seen = []
    for key, label in kinds:
        if any(n.startswith(key) for n in names) and label not in seen:
            seen.append(label)
    return ", ".join(seen) if seen else None


def command_of(prov):
    cmd = prov.get("command") if isinstance(prov, dict) else None
    if not cmd:
        return None
    m = re.search(r"((?:tests/gpu|bench|tools)/[\w.-]+\.sh|gpuos \w+(?: \w+)?|vgpu_bench)", cmd)
    return m and m.group(1)


def run_files(path, recurse):
    if recurse:
        out = []
        for top, dirs, files in os.walk(path):
            dirs.sort()
            out += [os.path.join(top, f) for f in sorted(files)]
        return out
    return [os.path.join(path, f) for f in sorted(os.listdir(path)) if os.path.isfile(os.path.join(path, f))]


def facts_of(files, uuid, inherit):
    """Facts of one run: its provenance files first, then JSON, then inherited."""
    f = Facts()
    provs = [p for p in files if re.search(r"provenance[^/]*\.json$", os.path.basename(p))]
    script = None
    for p in provs:
        pj = load_json(p)
        f.take_prov(pj)
        script = script or command_of(pj)
    for p in files:
        if is_prov_doc(os.path.basename(p)):
            f.take_doc(read(p))
    for p in files:
        if p.endswith(".json"):
            j = load_json(p)
            if isinstance(j, dict):
                f.take_device(j.get("device"), uuid)
                f.take_prov(j.get("provenance"))
                f.take_prov(j if "commit" in j and "date" in j else None)
    for p in files:
        if os.path.basename(p) == "machine.txt":
            f.take_machine(read(p))
    f.put("headline", headline_from_json(sorted(p for p in files if p.endswith(".json"))))
    kinds = what_from_files([os.path.basename(p) for p in files])
    f.put("measured", kinds and script and "%s (%s)" % (kinds, script) or kinds or script)
    for key, value in inherit.v.items():
        f.put(key, value)
    return f


def runs_of(gpu_dir, uuid):
    """(run name, Facts) for each run folder of one GPU folder."""
    subdirs = sorted(d for d in os.listdir(gpu_dir) if os.path.isdir(os.path.join(gpu_dir, d)))
    top = run_files(gpu_dir, False)
    own = [p for p in top if not is_prov_doc(os.path.basename(p))]
    base = facts_of(top, uuid, Facts())
    # what a subfolder may inherit: the GPU folder's provenance, not its figures
    inherit = Facts()
    for key in ("gpu", "driver", "date", "commit"):
        if key in base.v:
            inherit.v[key] = base.v[key]
    if not own:
        inherit.put("measured", base.v.get("measured"))
    runs = []
    if own or not subdirs:
        runs.append((".", base))
    for d in subdirs:
        runs.append((d, facts_of(run_files(os.path.join(gpu_dir, d), True), uuid, inherit)))
    return runs


def citations(root):
    """{8-hex prefix: sorted documents naming it}."""
    docs = [os.path.join(root, "README.md")]
    for top, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        docs += [os.path.join(top, f) for f in files if f.endswith((".md", ".scd"))]
    cited = {}
    for doc in sorted(docs):
        rel = os.path.relpath(doc, root)
        for m in set(re.findall(r"GPU-([0-9a-f]{8})", read(doc))):
            cited.setdefault(m, []).append(rel)
    return cited


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def index(root):
    res = os.path.join(root, "results")
    folders = sorted(d for d in os.listdir(res) if os.path.isdir(os.path.join(res, d)))
    bad = [d for d in folders if not UUID.match(d)]
    if bad:
        raise ValueError("results/%s is not named by a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)" % bad[0])
    cited = citations(root)
    rows, uncited, nruns = [], [], 0
    for uuid in folders:
        docs = cited.get(uuid[4:12], [])
        if not docs:
            uncited.append(uuid[:12])
        cite = ", ".join("[%s](../%s)" % (d, d) for d in docs) or "-"
        for name, f in runs_of(os.path.join(res, uuid), uuid):
            nruns += 1
            link = uuid + "/" if name == "." else uuid + "/" + name + "/"
            shown = "(whole folder)" if name == "." else name
            rows.append("| %s | [%s](%s) | %s | %s | %s | %s | %s | %s | %s |" % (
                cell(f.get("gpu")), uuid, uuid + "/", "[%s](%s)" % (cell(shown), link), cell(f.get("driver")),
                cell(f.get("date")), cell(f.get("commit")), cell(f.get("measured")), cell(f.get("headline")), cite))
    head = [
        "# Index of results/",
        "",
        "<!-- generated by /usr/bin/python3 tools/results_index.py; do not edit: tests/t_results_index.sh checks it -->",
        "",
        "Every GPU measurement of gpuos, one row per run folder: %d runs in %d GPU folders, %d of them"
        " cited by no document%s. Fields come from each run's provenance (provenance.json, PROVENANCE.md,"
        " machine.txt, the JSON files' own provenance objects); \"-\" where a run's files do not say."
        " The headline is the run's first bold figure, or one computed from its JSON. Tables of the"
        " figures: [docs/results.md](../docs/results.md)." % (
            nruns, len(folders), len(uncited), uncited and " (%s)" % ", ".join(uncited) or ""),
        "",
        "| GPU | UUID | run | driver | date | commit | what it measured | headline | cited by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description="results/INDEX.md: one row per GPU run")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    path = os.path.join(a.root, "results", "INDEX.md")
    try:
        text = index(a.root)
    except (OSError, ValueError) as e:
        print("results_index: %s" % e, file=sys.stderr)
        return 1
    if a.check:
        have = read(path)
        missing = [d for d in sorted(os.listdir(os.path.join(a.root, "results")))
                   if os.path.isdir(os.path.join(a.root, "results", d)) and "[%s]" % d not in have]
        if missing:
            print("results_index: results/INDEX.md lacks %s (%d folders missing); run /usr/bin/python3 "
                  "tools/results_index.py" % (missing[0], len(missing)), file=sys.stderr)
            return 1
        if have != text:
            old, new = have.splitlines(), text.splitlines()
            n = next((i for i, (x, y) in enumerate(zip(old, new)) if x != y), min(len(old), len(new)))
            print("results_index: results/INDEX.md is not current (line %d differs); run /usr/bin/python3 "
                  "tools/results_index.py" % (n + 1), file=sys.stderr)
            return 1
        return 0
    out = a.out or path
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
