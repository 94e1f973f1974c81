#!/bin/sh
# tests/run.sh: runs every test of the project and ends with one summary line
# "N passed, N failed". Kinds of test, each found by name:
#   build/tests/test_*   cmocka unit tests (tests/test_*.c)
#   tests/t_*.sh         command-line tests (real processes, files, sockets)
#   tests/ref_*.py       comparisons against scipy / sklearn (Debian's python3)
#   schemas              last: every JSON document the tests made gpuos write
#                        (copied by GPUOS_JSON_TRACE) validates against schemas/
# A test passes when it exits 0. Logs of failures are printed.
BUILD=${BUILD:-build}
export BUILD GPUOS="$PWD/$BUILD/gpuos"
PY=/usr/bin/python3
pass=0; fail=0; failed=""
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/json"; export GPUOS_JSON_TRACE="$tmp/json"
run() { # name, command...
    name=$1; shift
    start=$(date +%s)
    if "$@" >"$tmp/log" 2>&1; then
        pass=$((pass + 1)); echo "PASS $name ($(( $(date +%s) - start )) s)"
    else
        fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name"; sed 's/^/    /' "$tmp/log" | tail -40
    fi
}
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/t_*.sh; do
    [ -f "$t" ] && run "$(basename "$t")" sh "$t"
done
for t in tests/ref_*.py; do
    [ -f "$t" ] && run "$(basename "$t")" "$PY" "$t"
done
run "schemas ($(ls "$tmp/json" | wc -l) JSON files written by the tests)" $PY tests/schema_check.py --known-only "$tmp/json"
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
