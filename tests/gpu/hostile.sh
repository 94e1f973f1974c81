#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/hostile.sh: what slows a PyTorch training job on a 70 % vGPU next to
# a hostile tenant on a 30 % one (issue 21), one kind of hostility at a time:
# the MLP of tests/gpu/progs/fw_torch.py natively, alone on p70, next to p30's
# long spinning kernels (serve_client burst: 50 ms x 4 per synchronise; and 5 ms
# x 4), next to p30's faulting and foreign-address kernels only. Device
# machine, repository root, build/ present. Prints "case steps_per_s ratio
# losses", losses "equal" when the job's losses are native's to the last digit.
#   HS_CASES="alone 50000000 5000000 faults"   the cases (burst kernel lengths in ns)
set -u
. tests/gpu/daemon_lib.sh
SC=$B/tests/serve_client
OUT=${OUT:-out}
mkdir -p "$OUT"
gpu_daemon "$(pair_70_30)" "$OUT/hostile-serve.log"
# 1000 steps, some 2-4 s timed: a 200-step window (0.4-0.6 s) held one or two
# of the hostile tenant's 50 ms kernels or 170 ms fault teardowns by chance
export FW_STEPS=${FW_STEPS:-1000}
MLP="python3 tests/gpu/progs/fw_torch.py mlp"
sps() { sed -n 's/^TIME steps_per_s //p' "$1"; }
losses() { grep -a '^RESULT losses' "$1"; }
timeout 60 $MLP > "$T/native" 2>&1
nat=$(sps "$T/native")
echo "native $nat 1 $(losses "$T/native" | cut -d' ' -f3-)"
cp "$T/native" "$OUT/hostile-native.txt"
# the grants of a case, by vGPU, from the daemon's GPUOS_GRANT_LOG lines
# after line $1 of its log: count, mean and longest wall time
grants() {
    tail -n +"$(($1 + 1))" "$OUT/hostile-serve.log" | sed -n 's/.*grant vgpu \([0-9]*\): \([0-9.]*\) ms wall.*/\1 \2/p' |
        awk '{ n[$1]++; s[$1] += $2; if ($2 > m[$1]) m[$1] = $2 }
             END { for (v in n) printf "  grants of vgpu %s: %d, mean %.3f ms, longest %.3f ms\n", v, n[v], s[v] / n[v], m[v] }'
}
run_case() { # name
    l0=$(wc -l < "$OUT/hostile-serve.log")
    timeout 90 "$G" run --vgpu p70 -- $MLP > "$T/$1" 2>&1
    v=$(sps "$T/$1")
    same=differ
    [ -n "$(losses "$T/native")" ] && [ "$(losses "$T/$1")" = "$(losses "$T/native")" ] && same=equal
    echo "$1 ${v:--} $(awk -v a="${v:-0}" -v b="$nat" 'BEGIN { printf "%.4f", a / b }') $same"
    grants "$l0"
    cp "$T/$1" "$OUT/hostile-$1.txt"
}
for c in ${HS_CASES:-alone 50000000 5000000 faults}; do
    case $c in
    alone) run_case alone ;;
    faults)
        faults_start "$T/faults"
        sleep 1
        run_case faults
        faults_stop
        echo "faults during the faults case: $(grep -c 'fault rc' "$T/faults") faulting launches" ;;
    *)
        "$SC" burst p30 "$c" 600 4 > "$T/burst" 2>&1 &
        HB=$!
        sleep 1
        run_case "burst_${c}ns"
        kill $HB 2>/dev/null; wait $HB 2>/dev/null ;;
    esac
done
