#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_report.sh: `gpuos report CHIP --html OUT` on a simulated chart: one
# self-contained page (inline SVG, no scripts, no external resources) with the
# floor plan, histograms, curve and the paper table; it renders in headless
# Chromium (Debian's `chromium`; skipped with a notice when not installed)
# into a non-blank screenshot whose DOM holds every picture. The README's table
# of our H200 beside the paper is the --markdown output for the committed results.
set -eu
G=${GPUOS:-build/gpuos}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$G" probe all --sim default --json "$T/chip.json" >/dev/null
"$G" report "$T/chip.json" --html "$T/r.html" >/dev/null
H="$T/r.html"
[ "$(grep -c '<svg' "$H")" -ge 4 ] || fail "fewer than 4 pictures"
grep -q 'Floor plan' "$H" || fail "no floor plan"
grep -q '65.8 %' "$H" || fail "no paper figure for the effective L2"
grep -q 'SIMULATED' "$H" || fail "simulated chart not labelled"
# 132 SM cells, each coloured by its partition
[ "$(grep -o '<title>SM [0-9]*, partition [01]' "$H" | wc -l)" -eq 132 ] || fail "SM cells"
if grep -qiE '<script|src="http|href="http|@import|url\(' "$H"; then fail "not self-contained"; fi

# Bad input: one line, non-zero exit.
if "$G" report "$T/missing.json" --html "$T/x.html" 2>"$T/err"; then fail "missing input accepted"; fi
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "error not one line"
if "$G" report "$T/chip.json" 2>"$T/err"; then fail "missing --html accepted"; fi

# The README's H200 table is what `report --markdown` prints for the committed results.
R=results/GPU-ed40b8f5-aa50-0df5-7128-71d1a0dfa41e
if [ -f "$R/chip.json" ] && [ -f docs/readme-numa.md ]; then
    "$G" report "$R/chip.json" "$R/verify-all.json" "$R/numa-repeat3.json" --markdown - >"$T/table.md"
    [ "$(wc -l <"$T/table.md")" -ge 15 ] || fail "markdown table too short"
    while IFS= read -r line; do
        grep -qxF -- "$line" docs/readme-numa.md || fail "README table differs from the results: $line"
    done <"$T/table.md"
    # A chart of another GPU cannot complete this one.
    if "$G" report "$R/chip.json" "$T/chip.json" --markdown - >/dev/null 2>"$T/err"; then
        fail "merged a chart of another GPU"
    fi
fi

if ! command -v chromium >/dev/null 2>&1; then
    echo "t_report: chromium not installed (apt-get install chromium): rendering not checked"
    exit 0
fi
export HOME="$T" # chromium wants a writable profile
timeout 90 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$T/prof" \
    --window-size=950,2300 --screenshot="$T/r.png" "file://$H" >"$T/log" 2>&1 || { tail -5 "$T/log"; fail "chromium"; }
[ -s "$T/r.png" ] || fail "no screenshot"
[ "$(wc -c <"$T/r.png")" -gt 50000 ] || fail "screenshot looks blank"
timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$T/prof" --dump-dom "file://$H" \
    >"$T/dom.html" 2>"$T/log" || fail "chromium --dump-dom"
[ "$(grep -o '<svg' "$T/dom.html" | wc -l)" -ge 4 ] || fail "pictures lost in the DOM"
[ "$(grep -o '<rect' "$T/dom.html" | wc -l)" -ge 132 ] || fail "floor plan lost in the DOM"
echo "t_report: ok"
