#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gen_env_doc.py: the ENVIRONMENT section of gpuos(1) from src/common/env.h,
the one documented place of every environment variable gpuos reads (issue 20).
    gen_env_doc.py          rewrites the section of docs/man/gpuos.1.scd
    gen_env_doc.py --check  exits 1 when the page is not what env.h says"""
import re, sys, os
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
H = os.path.join(ROOT, "src/common/env.h")
PAGE = os.path.join(ROOT, "docs/man/gpuos.1.scd")

def section():
    items, comment = [], []
    for line in open(H):
        line = line.rstrip("\n")
        if line.startswith("/*") or line.startswith(" *"):
            t = line.strip().lstrip("/").lstrip("*").strip()
            if t.endswith("*/"):
                t = t[:-2].strip()
            comment = [t] if line.startswith("/*") else comment + [t]
        m = re.match(r'#define GOS_ENV_\w+ "(GPUOS_\w+)"', line)
        if m:
            items.append((m.group(1), " ".join(c for c in comment if c)))
    groups, order = {}, []
    for v, c in items:
        if c not in groups:
            groups[c] = []
            order.append(c)
        groups[c].append(v)
    out = ["# ENVIRONMENT", "",
           "Every variable gpuos reads (src/common/env.h; the process that reads it first).", ""]
    for c in order:
        # scdoc reads * as bold: a literal one in the text is escaped
        out += [", ".join("*%s*" % v for v in groups[c]), "\t" + c.replace("*", "\\*"), ""]
    return "\n".join(out) + "\n"

page = open(PAGE).read()
a = page.index("# ENVIRONMENT\n")
b = page.index("\n# ", a + 1) + 1
new = page[:a] + section() + page[b:]
if "--check" in sys.argv:
    if new != page:
        print("gen_env_doc: docs/man/gpuos.1.scd ENVIRONMENT differs from src/common/env.h (run tools/gen_env_doc.py)")
        sys.exit(1)
    sys.exit(0)
open(PAGE, "w").write(new)
