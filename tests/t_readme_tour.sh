#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_readme_tour.sh: README.md cannot rot (issue 43 item 6).
#  - its first two commands are still `make deps && make && ./build/gpuos probe` and
#    `make test` (CI and other tools run them);
#  - the "30-second tour without a GPU" block runs as written, line by line, from
#    the repository root on the simulated device: every command exits 0, and each
#    `# -> "TEXT"` (on the command's line, or alone on the line after it) is in what
#    that command printed; the tour leaves no daemon and no folder behind;
#  - every link with an anchor in README.md and docs/ (FILE.md#anchor, #anchor) names
#    a heading that exists (GitHub's anchors).
set -u
. tests/serve_lib.sh     # $B, $PY, $T (removed at exit), fail, need_shim

# The first code block: exactly the two commands.
awk '/^```/ { n++; next } n == 1' README.md >"$T/first"
printf 'make deps && make && ./build/gpuos probe\nmake test\n' | cmp -s - "$T/first" ||
    fail "README's first code block is not the two commands: $(cat "$T/first")"

# Every anchor link resolves.
$PY - <<'EOF' || exit 1
import glob, os, re, sys
def slug(h):  # GitHub: lower case, links reduced to their text, punctuation dropped, spaces to '-'
    h = re.sub(r"\[([^\]]*)\]\[[^\]]*\]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or m.group(2), h)
    return re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
def anchors(path):
    out, fence = set(), False
    for line in open(path):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out
bad = []
for doc in ["README.md"] + sorted(glob.glob("docs/*.md")):
    for target in re.findall(r"\]\(([^)\s]*#[^)\s]*)\)", open(doc).read()):
        f, a = target.split("#", 1)
        if f.startswith("http"):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(doc), f)) if f else doc
        if not os.path.exists(path) or a not in anchors(path):
            bad.append("%s -> %s" % (doc, target))
if bad:
    print("FAIL: links to no heading: " + "; ".join(bad))
    sys.exit(1)
EOF

# The tour, from its heading's first sh block.
awk '/^## A 30-second tour/ { t = 1 } t && /^```sh/ { on = 1; next } on && /^```/ { exit } on' README.md >"$T/tour"
[ -s "$T/tour" ] || fail "no tour block in README.md"
grep -q 'gpuos serve --sim default' "$T/tour" || fail "the tour starts no daemon on the simulated device"
grep -q 'gpuos run ' "$T/tour" || fail "the tour runs no program with gpuos run"
need_shim
[ "$B" = build ] || sed -i "s#\./build/#./$B/#g" "$T/tour"
# Each command line (outside here-documents, not sent to the background) runs with its
# output kept in out.N; each expected text is looked for in its command's output.
awk -v O="$T/out" '
    function check(text) { printf "grep -qF -- \"%s\" \"%s.%d\" || bad %d \"%s\"\n", text, O, n, n, text }
    heredoc { print; if ($0 == heredoc) heredoc = ""; next }
    /^#[ \t]*-> "/ { match($0, /-> ".*"/); check(substr($0, RSTART + 4, RLENGTH - 5)); next }
    /^[ \t]*(#|$)/ { next }
    {
        expect = ""
        if (match($0, /# -> ".*"/)) expect = substr($0, RSTART + 6, RLENGTH - 7)
        cmd = $0; sub(/[ \t]+#.*$/, "", cmd)
        if (match(cmd, /<<.?[A-Z]+/)) { heredoc = substr(cmd, RSTART + 2); gsub(/[^A-Z]/, "", heredoc); print cmd; next }
        if (cmd ~ /&$/) { print cmd; next }
        n++
        printf "{ %s\n} >\"%s.%d\" 2>&1 || bad %d \"exit $?\"\n", cmd, O, n, n
        if (expect != "") check(expect)
    }' "$T/tour" >"$T/body"
{
    echo "bad() { echo \"FAIL: tour command \$1: \$2; it printed:\"; sed 's/^/    /' \"$T/out.\$1\"; exit 1; }"
    cat "$T/body"
} >"$T/run.sh"
[ "$(grep -c 'grep -qF' "$T/run.sh")" -ge 4 ] || fail "fewer than 4 expected outputs in the tour"
mkdir "$T/tmp"
TMPDIR="$T/tmp" setsid timeout 120 sh "$T/run.sh" >"$T/log" 2>&1 &
pid=$!
wait $pid
rc=$?
kill -9 -$pid 2>/dev/null && leftover=1 || leftover=0
[ $rc -eq 0 ] || { cat "$T/log"; fail "the tour failed (exit $rc)"; }
[ $leftover -eq 0 ] || fail "the tour left processes running"
[ -z "$(ls -A "$T/tmp")" ] || fail "the tour left files behind: $(ls "$T/tmp")"
echo "ok: tour of $(grep -c '^{ ' "$T/run.sh") commands, $(grep -c 'grep -qF' "$T/run.sh") outputs checked"
