# SPDX-License-Identifier: Apache-2.0
"""metrics_check.py: scrapes and checks the Prometheus endpoint of `gpuos serve`
for tests/t_serve_metrics.sh (Debian's python3; prometheus_client when present).

  metrics_check.py URL OUT.json   scrapes URL with urllib, validates the text
                                   exposition format strictly (below) and, when
                                   Debian's python3-prometheus-client is there,
                                   with its parser too; writes {name{labels}: value}
Strict checks: Content-Type text/plain version 0.0.4; every sample's family has
exactly one HELP and one TYPE line before its samples, all samples of a family
together; names ^gpuos_[a-z0-9_]+$, counters end in _total, no unit-less
_seconds/_bytes gauges misnamed; label names valid, values quoted and escaped;
no duplicate series; values finite floats; the text ends with a newline."""
import json
import math
import re
import sys
import urllib.request

NAME = re.compile(r"^gpuos_[a-z0-9_]+$")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def fail(msg):
    print("metrics_check: " + msg)
    sys.exit(1)


def parse_labels(s, line):
    out, pos = [], 0
    while pos < len(s):
        m = LABEL.match(s, pos)
        if not m:
            fail("bad labels in: " + line)
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    names = [k for k, _ in out]
    if len(set(names)) != len(names):
        fail("repeated label in: " + line)
    return out


def check(text):
    if not text.endswith("\n"):
        fail("exposition does not end with a newline")
    helps, types, done, series = {}, {}, set(), {}
    current = None
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if name in helps:
                fail("second HELP for " + name)
            helps[name] = line
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("counter", "gauge"):
                fail("bad TYPE line: " + line)
            name = parts[2]
            if name in types:
                fail("second TYPE for " + name)
            if name not in helps:
                fail("TYPE before HELP for " + name)
            if not NAME.match(name):
                fail("metric name %r does not follow gpuos_[a-z0-9_]+" % name)
            if parts[3] == "counter" and not name.endswith("_total"):
                fail("counter %s does not end in _total" % name)
            if parts[3] == "gauge" and name.endswith("_total"):
                fail("gauge %s ends in _total" % name)
            types[name] = parts[3]
            if current:
                done.add(current)
            current = name
            continue
        if line.startswith("#") or not line:
            fail("unexpected line: %r" % line)
        m = SAMPLE.match(line)
        if not m:
            fail("bad sample line: %r" % line)
        name, labels, value = m.group(1), m.group(3) or "", m.group(4)
        if name != current or name in done:
            fail("sample of %s outside its family's block (HELP/TYPE first, samples together)" % name)
        lab = tuple(sorted(parse_labels(labels, line)))
        key = (name, lab)
        if key in series:
            fail("duplicate series: " + line)
        try:
            v = float(value)
        except ValueError:
            fail("value not a float: " + line)
        if not math.isfinite(v):
            fail("value not finite: " + line)
        if types[name] == "counter" and v < 0:
            fail("negative counter: " + line)
        series[key] = v
    for name in helps:
        if name not in types:
            fail("HELP without TYPE: " + name)
    return series


BAD = [
    "gpuos_x 1\n",  # no HELP/TYPE
    "# HELP gpuos_x h\n# TYPE gpuos_x counter\ngpuos_x 1\n",  # counter without _total
    "# HELP gpuos_x_total h\n# TYPE gpuos_x_total gauge\ngpuos_x_total 1\n",  # gauge with _total
    "# HELP gpuos_x h\n# TYPE gpuos_x gauge\ngpuos_x{a=\"1\"} 1\ngpuos_x{a=\"1\"} 2\n",  # duplicate
    "# HELP gpuos_x h\n# TYPE gpuos_x gauge\ngpuos_x{a=1} 1\n",  # unquoted label
    "# HELP gpuos_x h\n# TYPE gpuos_x gauge\ngpuos_x NaN\n",  # not finite
    "# HELP gpuos_x h\n# TYPE gpuos_x gauge\ngpuos_x 1",  # no final newline
    "# HELP x h\n# TYPE x gauge\nx 1\n",  # no gpuos_ prefix
    "# HELP gpuos_x h\n# TYPE gpuos_x gauge\n# HELP gpuos_y h\n# TYPE gpuos_y gauge\ngpuos_y 1\ngpuos_x 1\n",
    "# HELP gpuos_x h\n# TYPE gpuos_x gauge\ngpuos_x{a=\"1\",a=\"2\"} 1\n",  # repeated label
    "# HELP gpuos_x h\n# TYPE gpuos_x summary\ngpuos_x 1\n",  # type we never write
]


def selftest():
    good = "# HELP gpuos_x_total h\n# TYPE gpuos_x_total counter\ngpuos_x_total{a=\"q\\\"\"} 1.5\n"
    assert check(good) == {("gpuos_x_total", (("a", 'q\\"'),)): 1.5}
    global fail
    real = fail

    def raise_(msg):
        raise ValueError(msg)
    fail = raise_
    for t in BAD:
        try:
            check(t)
        except ValueError:
            continue
        fail = real
        fail("accepted malformed text: %r" % t)
    fail = real


def main():
    if sys.argv[1] == "--selftest":
        selftest()
        return
    url, out = sys.argv[1], sys.argv[2]
    with urllib.request.urlopen(url, timeout=20) as r:
        ctype = r.headers.get("Content-Type", "")
        text = r.read().decode("utf-8")
    if not ctype.startswith("text/plain") or "version=0.0.4" not in ctype:
        fail("Content-Type %r is not the text exposition format 0.0.4" % ctype)
    series = check(text)
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        text_string_to_metric_families = None
    if text_string_to_metric_families:
        n = 0
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                key = (s.name, tuple(sorted(s.labels.items())))
                if key not in series or series[key] != s.value:
                    fail("prometheus_client reads %s %s = %s differently" % (s.name, s.labels, s.value))
                n += 1
        if n != len(series):
            fail("prometheus_client found %d samples, the strict parser %d" % (n, len(series)))
    flat = {}
    for (name, lab), v in series.items():
        flat[name + "{" + ",".join('%s="%s"' % kv for kv in lab) + "}"] = v
    json.dump(flat, open(out, "w"), indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
