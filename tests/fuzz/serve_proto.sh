#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/serve_proto.sh [SECONDS]: the protocol fuzzer (tests/fuzz_serve.c)
# against a live daemon on the simulated device; BUILD/GPUOS as tests/run.sh.
set -u
. tests/serve_lib.sh
"$G" probe numa --sim default --json "$T/chart.json" > /dev/null 2>&1 || fail "probe numa"
start_daemon "[device 0]
sim = default
chip = $T/chart.json
[vgpu a]
memory = 256M
[vgpu b]
memory = 256M"
"$B/tests/fuzz_serve" proto "${1:-20}" "$(date +%s)" || fail "protocol fuzzer"
kill -0 "$DPID" || fail "daemon died under the fuzzer"
stop_daemon
