#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/ci_hostile.sh: issue 15 in CI. Builds the daemon, the library and their
# test programs with address and undefined-behaviour sanitizers (SANITIZE=1, in
# $ABUILD, default build-asan; simulated device only), runs the whole daemon test
# suite on it, then the mutation fuzzers for a bounded time each: the wire
# protocol against a live sanitized daemon, the configuration parser and the
# module image reader (cubins, fatbins, PTX: tests/fuzz_image.c) in process.
# Any sanitizer report fails the step (reports go to files, checked at the end:
# a daemon's stderr is only a log). Usage: sh tests/ci_hostile.sh [FUZZ_SECONDS]
set -u
ABUILD=${ABUILD:-build-asan}
SECS=${1:-20}
start=$(date +%s)
make -s -j2 BUILD="$ABUILD" SANITIZE=1 NVCC=none \
    "$ABUILD/gpuos" "$ABUILD/tests/serve_client" "$ABUILD/tests/hostile_client" "$ABUILD/tests/fuzz_serve" "$ABUILD/tests/pmem_client" \
    "$ABUILD/tests/test_proto" "$ABUILD/tests/test_proto_fuzz" "$ABUILD/tests/test_client" "$ABUILD/bench/vgpu_bench" \
    "$ABUILD/tests/ring_client" "$ABUILD/tests/shm_client" "$ABUILD/tests/fuzz_image" || exit 1
built=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# Leak checking is off: the test clients keep their buffers to the end on purpose
# and a daemon that abandoned work at shutdown leaves it to the exit.
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=0:abort_on_error=0"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1"
export BUILD="$ABUILD" GPUOS="$PWD/$ABUILD/gpuos"
fail=0
run() {
    t0=$(date +%s)
    if "$@" >"$logs/out" 2>&1; then
        echo "PASS (sanitized) $* ($(( $(date +%s) - t0 )) s)"
    else
        echo "FAIL (sanitized) $*"; tail -30 "$logs/out" | sed 's/^/    /'; fail=1
    fi
}
for t in test_proto test_proto_fuzz test_client; do run "$ABUILD/tests/$t"; done
for t in tests/t_serve.sh tests/t_serve_robust.sh tests/t_hostile.sh tests/t_hostile_config.sh tests/t_isolation.sh \
    tests/t_pmem_client.sh tests/t_ring.sh tests/t_xshare.sh tests/t_vgpu_create.sh tests/t_hostile2.sh \
    tests/t_vgpu_slots.sh tests/t_kv_inject.sh tests/t_serve_metrics.sh tests/t_module_share.sh; do
    run sh "$t"
done
# The fairness workload on the sanitized daemon: for memory and UB errors (the
# reports are checked below) and the comparisons that hold on a slow host; its
# absolute thresholds (points of error, busy fractions) are asserted by `make
# test` on the normal build: a sanitized daemon is several times slower, and with
# the fast path a lone client's ring runs ahead of a slow daemon's revoke.
run env FAIR_HOST=slow sh tests/t_serve_fair.sh
# the fuzzers
run sh tests/fuzz/serve_proto.sh "$SECS"
run "$ABUILD/tests/fuzz_serve" config "$SECS" "$(date +%s)"
# the image fuzzer's seeds: a cubin (tests/elf_kernel.py), a fatbin around it
# (tests/bad_images.py's valid one), PTX with globals (tests/fuzz/kern.ptx)
python3 tests/elf_kernel.py "$logs/kern.cubin" kern 20 "0:8,8:4" && python3 tests/bad_images.py "$logs/img" "$logs/kern.cubin" ||
    { echo "FAIL image fuzzer seeds"; fail=1; }
run "$ABUILD/tests/fuzz_image" "$SECS" "$(date +%s)" "$logs/kern.cubin" "$logs/img/good_fatbin.img" tests/fuzz/kern.ptx
if ls "$logs"/asan* "$logs"/ubsan* >/dev/null 2>&1; then
    echo "FAIL sanitizer reports:"; cat "$logs"/asan* "$logs"/ubsan* 2>/dev/null | head -80; fail=1
fi
echo "ci_hostile: build $((built - start)) s, tests and fuzzers $(( $(date +%s) - built )) s"
exit $fail
