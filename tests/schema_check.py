#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""schema_check.py: validates JSON files gpuos wrote against schemas/ (JSON Schema
2020-12, Debian's python3-jsonschema).

    schema_check.py [--known-only] [--expect-invalid] PATH...

PATH: files or directories (searched recursively for *.json). A document's
"schema" member ("gpuos.chip/1", "gpuos.chip/2") names schemas/chip.schema.json; a document with
t_request_ns and no "schema" is a DVFS measurement, one with cdiVersion a CDI
specification (`gpuos cdi`: CDI's format, schemas/cdi.schema.json): the two
schemaless files gpuos writes. With --known-only every document must be one of these (a file gpuos
writes without a schema is an error); otherwise documents claiming no gpuos
schema are skipped (committed results hold hand-written files too).
--expect-invalid: every document must FAIL (mutation tests).
Prints one line per failure and a summary; exit 0 when all is as expected."""
import json, os, sys

from jsonschema import Draft202012Validator

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "..", "schemas")


def validators():
    out = {}
    for f in sorted(os.listdir(SCHEMAS)):
        if f.endswith(".schema.json"):
            s = json.load(open(os.path.join(SCHEMAS, f)))
            Draft202012Validator.check_schema(s)
            name = f[: -len(".schema.json")]
            key = name if name in ("dvfs-measurement", "cdi") else "gpuos.%s/1" % name
            out[key] = Draft202012Validator(s)
            if name == "chip":  # gpuos.chip/2 (issue 26) adds fields; /1 files stay valid
                out["gpuos.chip/2"] = out[key]
    return out


def files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                for n in sorted(names):
                    if n.endswith(".json"):
                        yield os.path.join(root, n)
        else:
            yield p


def main(argv):
    known_only = "--known-only" in argv
    expect_invalid = "--expect-invalid" in argv
    paths = [a for a in argv if not a.startswith("--")]
    v = validators()
    counts, bad, skipped = {}, 0, 0
    for f in files(paths):
        try:
            doc = json.load(open(f))
        except (OSError, ValueError) as e:
            print("%s: not JSON: %s" % (f, e))
            bad += 1
            continue
        kind = doc.get("schema") if isinstance(doc, dict) else None
        if kind is None and isinstance(doc, dict) and "t_request_ns" in doc:
            kind = "dvfs-measurement"
        if kind is None and isinstance(doc, dict) and "cdiVersion" in doc:
            kind = "cdi"  # a Container Device Interface spec (gpuos cdi): CDI's own format
        if kind not in v and expect_invalid:
            print("rejected as expected: %s: no schema for %r" % (os.path.basename(f), kind))
            counts[str(kind)] = counts.get(str(kind), 0) + 1
            continue
        if kind not in v:
            if known_only or (isinstance(kind, str) and kind.startswith("gpuos.")):
                print("%s: no schema for %r" % (f, kind))
                bad += 1
            else:
                skipped += 1
            continue
        errors = sorted(v[kind].iter_errors(doc), key=lambda e: list(e.absolute_path))
        if expect_invalid:
            if not errors:
                print("%s: %s accepted a document it should reject" % (f, kind))
                bad += 1
            else:
                e = errors[0]
                print("rejected as expected: %s: %s: %s" % (os.path.basename(f),
                      "/".join(str(x) for x in e.absolute_path) or "(root)", e.message[:100]))
        elif errors:
            e = errors[0]
            print("%s: %s: %s: %s (%d errors)" % (f, kind, "/".join(str(x) for x in e.absolute_path) or "(root)",
                                                  e.message[:160], len(errors)))
            bad += 1
        counts[kind] = counts.get(kind, 0) + 1
    total = sum(counts.values())
    print("schema_check: %d documents (%s), %d not as expected, %d skipped" % (
        total, ", ".join("%s %d" % kv for kv in sorted(counts.items())), bad, skipped))
    if total == 0:
        print("schema_check: no document checked")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
