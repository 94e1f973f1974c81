#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/run.sh: runs every test of the project and ends with one summary line
# "N passed, N failed". Kinds of test, each found by name:
#   build/tests/test_*   cmocka unit tests (tests/test_*.c)
#   tests/t_*.sh         command-line tests (real processes, files, sockets)
#   tests/ref_*.py       comparisons against scipy / sklearn (Debian's python3)
#   schemas              last: every JSON document the tests made gpuos write
#                        (copied by GPUOS_JSON_TRACE) validates against schemas/
# A test passes when it exits 0. Logs of failures are printed.
#
# Two lanes (TEST_LANES=1: one, in the order above): the tests that time
# nothing and start no scheduler workload (unit tests, references, charts,
# reports rendered in Chromium, schemas, Slurm's scripts) run in a second lane
# beside the daemon's tests; the tests whose thresholds are timings (TIMED
# below: shares, busy fractions, bandwidths) run last, alone, once the second
# lane has ended, so that nothing of this runner competes with them for a CPU.
BUILD=${BUILD:-build}
export BUILD GPUOS="$PWD/$BUILD/gpuos"
PY=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/json" "$tmp/logs"; export GPUOS_JSON_TRACE="$tmp/json"
TIMED="t_latency.sh t_grant_min.sh t_ring_any.sh t_mixed.sh t_serve_fair.sh t_ring_forge.sh t_ring.sh t_ring_pair.sh t_serve_spatial.sh t_serve_metrics.sh t_swap_host.sh t_swap_wait.sh t_shm_bench.sh
t_swap_pool_bench.sh t_placement.sh t_oversub.sh"
SIDE="t_dvfs.sh t_dvfs_figures.sh t_env.sh t_labels.sh t_numa.sh t_place.sh t_probe_cli.sh t_report.sh
t_report_pages.sh t_schemas.sh t_slurm.sh t_slurm_scripts.sh t_parts.sh"
listed() { case " $(echo $2) " in *" $1 "*) return 0 ;; esac; return 1; }
run() { # name, command...: one line PASS/FAIL into $tmp/results, the log of a failure printed
    name=$1; shift
    start=$(date +%s)
    log="$tmp/logs/$(echo "$name" | tr -c 'A-Za-z0-9_.\n-' '_')"
    if "$@" >"$log" 2>&1; then
        echo "PASS $name ($(( $(date +%s) - start )) s)" | tee -a "$tmp/results"
    else
        { echo "FAIL $name"; sed 's/^/    /' "$log" | tail -40; } | tee -a "$tmp/results" | head -41
    fi
}
side() {
    for t in "$BUILD"/tests/test_*; do
        [ -x "$t" ] && run "$(basename "$t")" "$t"
    done
    for t in tests/ref_*.py; do
        [ -f "$t" ] && run "$(basename "$t")" "$PY" "$t"
    done
    for t in tests/t_*.sh; do
        n=$(basename "$t")
        listed "$n" "$SIDE" && run "$n" sh "$t"
    done
}
main() {
    for t in tests/t_*.sh; do
        n=$(basename "$t")
        listed "$n" "$SIDE" || listed "$n" "$TIMED" || run "$n" sh "$t"
    done
}
: > "$tmp/results"
if [ "${TEST_LANES:-2}" = 1 ]; then
    side
    main
else
    side & lane=$!
    main
    wait $lane
fi
for t in tests/t_*.sh; do
    n=$(basename "$t")
    listed "$n" "$TIMED" && run "$n" sh "$t"
done
run "schemas ($(ls "$tmp/json" | wc -l) JSON files written by the tests)" $PY tests/schema_check.py --known-only "$tmp/json"
pass=$(grep -c '^PASS ' "$tmp/results")
fail=$(grep -c '^FAIL ' "$tmp/results")
[ "$fail" -gt 0 ] && echo "failed: $(sed -n 's/^FAIL //p' "$tmp/results" | tr '\n' ' ')"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
