#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_results_index.sh: results/INDEX.md (tools/results_index.py, issue 43 item 6) is
# current and covers every folder of results/, and docs/results.md's tables are what
# tools/results_tables.py and gpuos report print; on a copy of the tree, the check
# fails when a run folder is added and not indexed, or when a document begins to
# cite a run, and passes once regenerated; a new run's row carries the fields of
# its provenance and "-" for what it does not say; a folder not named by a GPU
# UUID is refused in one line.
set -u
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The committed index is current, and names every folder (checked here without the tool).
$PY tools/results_index.py --check 2>"$T/err" || fail "results/INDEX.md is not current: $(cat "$T/err")"
for d in results/*/; do
    n=$(basename "$d")
    grep -qF "[$n](" results/INDEX.md || fail "results/INDEX.md has no row for $n"
done
[ "$(grep -c '^| ' results/INDEX.md)" -gt "$(ls -d results/*/ | wc -l)" ] || fail "fewer rows than folders"
# docs/results.md's generated tables are what tools/results_tables.py prints now.
for t in topology numa; do
    $PY tools/results_tables.py $t | sed '/^$/d' >"$T/$t.md"
    [ -s "$T/$t.md" ] || fail "results_tables.py $t printed nothing"
    while IFS= read -r line; do
        grep -qxF -- "$line" docs/results.md || fail "docs/results.md's $t table differs from the results: $line"
    done <"$T/$t.md"
done
# and its memory-asymmetry table is what `gpuos report --markdown` prints for that chip.
R=results/GPU-ed40b8f5-aa50-0df5-7128-71d1a0dfa41e
"${GPUOS:-build/gpuos}" report "$R/chip.json" "$R/verify-all.json" "$R/numa-repeat3.json" --markdown - >"$T/report.md" ||
    fail "gpuos report --markdown"
[ "$(wc -l <"$T/report.md")" -ge 15 ] || fail "report table too short"
while IFS= read -r line; do
    grep -qxF -- "$line" docs/results.md || fail "docs/results.md's memory table differs from gpuos report: $line"
done <"$T/report.md"

# A copy of the tree: results/ by links, the documents copied (they are edited below).
mkdir "$T/results"
for d in results/*/; do ln -s "$PWD/$d" "$T/results/$(basename "$d")"; done
cp README.md "$T/" && cp -r docs "$T/docs"
$PY tools/results_index.py --root "$T" || fail "generate on the copy"
$PY tools/results_index.py --root "$T" --check || fail "the copy's fresh index is not current"
cmp -s "$T/results/INDEX.md" results/INDEX.md || fail "the copy's index differs from the committed one"

# A new run folder, not yet indexed: the check names it.
U=GPU-0000abcd-1111-2222-3333-444444444444
mkdir -p "$T/results/$U/run1-abcdef1"
cat >"$T/results/$U/run1-abcdef1/provenance.json" <<'EOF'
{"date": "2026-12-24T10:00:00Z", "commit": "abcdef1234567", "command": "sh tests/gpu/topology.sh",
 "host": "vm", "gpu": "NVIDIA H100 80GB HBM3"}
EOF
echo '{"device": {"name": "NVIDIA H100 80GB HBM3", "uuid": "'$U'", "simulated": false}}' \
    >"$T/results/$U/run1-abcdef1/info.json"
if $PY tools/results_index.py --root "$T" --check 2>"$T/err"; then fail "an unindexed folder passed the check"; fi
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "check error not one line: $(cat "$T/err")"
grep -q "lacks $U" "$T/err" || fail "check did not name the missing folder: $(cat "$T/err")"
$PY tools/results_index.py --root "$T" && $PY tools/results_index.py --root "$T" --check || fail "regenerated index not current"
row=$(grep -F "[$U](" "$T/results/INDEX.md")
[ -n "$row" ] || fail "no row for the new folder"
echo "$row" | grep -qF "| NVIDIA H100 80GB HBM3 |" || fail "GPU name not read: $row"
echo "$row" | grep -qF "| 2026-12-24 | abcdef1 |" || fail "date/commit not read: $row"
echo "$row" | grep -qF "[run1-abcdef1]($U/run1-abcdef1/)" || fail "run folder not linked: $row"
# no driver in its files: "-", never a guess; its headline and citations: "-"
echo "$row" | awk -F'|' '{ if ($5 != " - " || $9 != " - " || $10 != " - ") exit 1 }' || fail "missing fields not '-': $row"
echo "$row" | grep -qF "topology.sh" || fail "what it measured not read from the command: $row"

# A document that begins to cite the run makes the index stale until regenerated.
echo "The new chip (\`GPU-0000abcd...\`) is charted." >>"$T/docs/readme-numa.md"
if $PY tools/results_index.py --root "$T" --check 2>"$T/err"; then fail "a new citation left the index current"; fi
grep -q "not current" "$T/err" || fail "stale index not told: $(cat "$T/err")"
$PY tools/results_index.py --root "$T"
grep -F "[$U](" "$T/results/INDEX.md" | grep -qF "[docs/readme-numa.md](../docs/readme-numa.md)" ||
    fail "the citing document is not listed"

# A changed figure in a run's files makes it stale too.
sed -i 's/2026-12-24/2026-12-25/' "$T/results/$U/run1-abcdef1/provenance.json"
if $PY tools/results_index.py --root "$T" --check 2>/dev/null; then fail "a changed date left the index current"; fi

# A folder not named by a GPU UUID: refused in one line, exit 1.
mkdir "$T/results/misc"
if $PY tools/results_index.py --root "$T" --out - >/dev/null 2>"$T/err"; then fail "a folder without a UUID accepted"; fi
[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "results/misc is not named by a GPU UUID" "$T/err" ||
    fail "bad folder error: $(cat "$T/err")"
echo "ok"
