#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_layers.sh: the house rule "no cycle over 3 files in serve/" (issue
# 40.2): tools/serve_layers.py reads the daemon's objects (nm of
# $BUILD/src/serve/*.o: a file calls another when it uses a symbol the other
# defines) and names every strongly connected component of more than 3 files.
# The check itself is checked: four small objects calling each other in a ring
# are refused and named; three are not.
set -u
fail() { echo "FAIL: $*"; exit 1; }
BUILD=${BUILD:-build}
PY=/usr/bin/python3
MAX=3
ls "$BUILD"/src/serve/*.o >/dev/null 2>&1 || fail "no objects in $BUILD/src/serve (run make first)"
out=$($PY tools/serve_layers.py --objs "$BUILD/src/serve" --max $MAX) ||
    fail "serve/ has a cycle over $MAX files (move the helper that closes it down):
$out"
# the listing is not empty: serve/'s files and their arrows were read
files=$(echo "$out" | sed -n 's/^files: \([0-9]*\), arrows: \([0-9]*\)$/\1/p')
arrows=$(echo "$out" | sed -n 's/^files: \([0-9]*\), arrows: \([0-9]*\)$/\2/p')
[ "${files:-0}" -ge 20 ] && [ "${arrows:-0}" -ge 50 ] ||
    fail "serve_layers read $files files and $arrows arrows in $BUILD/src/serve: the listing is broken"
# the arrow a cycle's fix depends on is seen: server.c starts the readers (client.c)
$PY tools/serve_layers.py --objs "$BUILD/src/serve" --why server client | grep -qw srv_client_main ||
    fail "serve_layers does not see server.c -> client.c (srv_client_main)"
# the check names a cycle of 4 (a -> b -> c -> d -> a) and passes one of 3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
ring() { # DIR N: N objects f0..f(N-1), each calling the next, the last the first
    mkdir -p "$1"; i=0
    while [ $i -lt "$2" ]; do
        j=$(( (i + 1) % $2 ))
        printf 'void f%d(void);\nvoid f%d(void) { f%d(); }\n' $j $i $j >"$1/f$i.c"
        cc -c -o "$1/f$i.o" "$1/f$i.c" || fail "cc could not build the check's objects"
        i=$((i + 1))
    done
}
ring "$T/four" 4
ring "$T/three" 3
got=$($PY tools/serve_layers.py --objs "$T/four" --max $MAX) && fail "a cycle of 4 files passed: $got"
echo "$got" | grep -q "a cycle of 4 files (over $MAX): f0 f1 f2 f3" || fail "a cycle of 4 was not named: $got"
got=$($PY tools/serve_layers.py --objs "$T/three" --max $MAX) || fail "a cycle of 3 files was refused: $got"
cycles=$(echo "$out" | grep -c '^cycle of')
echo "t_serve_layers: ok ($files files, $arrows arrows, $cycles cycle(s), $(echo "$out" | tail -1))"
