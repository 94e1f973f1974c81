#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_funclen.sh: the house rule "no function over 150 lines in src/" (issue
# 40.5): Debian's universal-ctags lists every C function of src/ with its first
# and last line; one longer than 150 lines is named with its file and length.
# The check itself is checked: a copy of a source file given a 151-line
# function is refused, and that function named.
set -u
fail() { echo "FAIL: $*"; exit 1; }
MAX=150
command -v ctags >/dev/null 2>&1 && ctags --version 2>/dev/null | grep -q "Universal Ctags" ||
    fail "universal-ctags is needed (tools/deps.sh installs it)"
# long DIR: "FILE:LINE NAME N lines" for each function of DIR longer than MAX
long() {
    ctags -R --languages=C --langmap=C:.c.h --kinds-C=f --fields=+ne -o - "$1" |
        awk -F'\t' -v max=$MAX '{
            l = e = 0
            for (i = 4; i <= NF; i++) {
                if ($i ~ /^line:/) l = substr($i, 6)
                if ($i ~ /^end:/) e = substr($i, 5)
            }
            if (l && e && e - l + 1 > max) printf "%s:%d %s %d lines\n", $2, l, $1, e - l + 1
        }' | sort
}
out=$(long src)
[ -z "$out" ] || fail "functions over $MAX lines in src/ (split them along their steps):
$out"
n=$(ctags -R --languages=C --langmap=C:.c.h --kinds-C=f -o - src | wc -l)
[ "$n" -gt 1000 ] || fail "ctags found $n functions in src/: the listing is broken"
# the check names a long function (a copy of one file given one of 151 lines)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cp src/common/log.c "$T/"
{ echo "int t_funclen_long(int x)"; echo "{"; i=0
  while [ $i -lt 148 ]; do echo "    x += $i;"; i=$((i + 1)); done; echo "}"; } >>"$T/log.c"
got=$(long "$T")
echo "$got" | grep -q "t_funclen_long 151 lines" || fail "a 151-line function was not named: $got"
echo "t_funclen: ok ($n functions in src/, none over $MAX lines)"
