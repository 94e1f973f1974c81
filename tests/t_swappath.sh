#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_swappath.sh: vgpu_bench's swappath section (issue 42, bench/vgpu_swappath.c)
# on the simulated device: the paths an eviction can take into a memfd pool
# (locked, pageable, never touched) each copy the device's pattern exactly
# (the section checks every byte and exits non-zero otherwise), the file it
# writes validates against schemas/vgpu-bench.schema.json, every rate is
# positive, and a bad --swap-mb is refused with one line. (The rates
# themselves mean something only on a GPU.)
set -u
. tests/serve_lib.sh
V="$B/bench/vgpu_bench"
[ -x "$V" ] || fail "no $V"
timeout 60 "$V" --gpuos "$G" --sim default --quick --only swappath --isolation process --swap-mb 48 \
    --out "$T/b.json" 2> "$T/log" || { cat "$T/log"; fail "vgpu_bench --only swappath"; }
grep "^swappath" "$T/log"
mkdir "$T/v" && cp "$T/b.json" "$T/v/vgpu-bench.json"
$PY tests/schema_check.py --known-only "$T/v" > "$T/sc" || { cat "$T/sc"; fail "the swappath file does not validate"; }
$PY - "$T/b.json" <<'PY' || fail "swappath's figures"
import json, sys
s = json.load(open(sys.argv[1]))["swappath"]
assert s["bytes"] == 48 << 20, s["bytes"]
rates = [s[k] for k in ("register_cold_gbps", "register_warm_gbps", "dtoh_locked_gbps", "dtoh_pageable_gbps",
                        "dtoh_cold_gbps")] + [v for k, v in s["round_trip_us"].items() if not k.startswith("other_process_m")]
assert all(r > 0 for r in rates), rates
r = s["round_trip_us"]
assert r["other_process_max"] >= r["other_process_median"] >= 0, r
PY
out=$("$V" --gpuos "$G" --sim default --only swappath --swap-mb x --out "$T/c.json" 2>&1) && fail "--swap-mb x accepted"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "--swap-mb x: $out"
echo "PASS: t_swappath"
