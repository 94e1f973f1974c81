#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_copyprobe.sh: where a copy's and a switch's time goes (issue 9), on
# the device machine with build/ carried: native copies per host-memory kind,
# the copy table under the library's settings and variants, the switching loss
# with grant_us = auto and fixed grants, BAND with 2/4 vGPUs in process mode.
# Everything in $OUT/probe.tar.gz, the short table last.
set -u
OUT=${OUT:-out}
W=$(mktemp -d)/probe
mkdir -p "$W"
{ nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader; hostname; date -u; nproc
  echo "commit ${GPUOS_COMMIT:-unknown}"; echo "command sh tools/gpu_copyprobe.sh ${PROBE:-all}"; } > "$W/machine.txt" 2>&1
B="build/bench/vgpu_bench --gpuos build/gpuos --isolation process"
run() { n=$1; shift; echo "== $n" >> "$W/summary.txt"
  timeout 150 env "$@" --out "$W/$n.json" > "$W/$n.log" 2>&1; echo "$n rc=$?" >> "$W/summary.txt"
  grep "^copy\|^hostmem\|^switch\|^launch\|^fairness\|^ringprobe" "$W/$n.log" >> "$W/summary.txt"; }
case "${PROBE:-all}" in
all)
run copy $B --only copy,launch
run copy_nt0 GPUOS_RING_NT=0 $B --quick --only copy
run copy_again $B --quick --only copy
run switch $B --only switch --switch-grants 4000,16000
run fair $B --quick --policies band --vgpus 2,4,8 --seconds 2 --only fairness
;;
fair4k)
F="$B --quick --policies band --vgpus 8 --seconds 2 --only fairness"
run fair8_a $F
run fair8_spin50 GPUOS_RING_SPIN_US=50 $F
run fair8_grant4000 $F --grant-us 4000
run fair8_b $F
run copy_a $B --quick --only copy
run copy_bounce GPUOS_EXEC_BOUNCE=1 $B --quick --only copy
run copy_b $B --quick --only copy
run copy_bounce_b GPUOS_EXEC_BOUNCE=1 $B --quick --only copy
run launch $B --only launch
;;
probe2)
run ringprobe $B --only ringprobe
run ringprobe_bounce GPUOS_EXEC_BOUNCE=1 $B --only ringprobe
run ringprobe_spin50 GPUOS_RING_SPIN_US=50 $B --only ringprobe
F="$B --quick --policies band --vgpus 8 --seconds 2 --only fairness"
run fair8_gate_a $F
run fair8_gate_b $F
run fair8_gate_4s $B --policies band --vgpus 8 --seconds 4 --only fairness
;;
copyfinal)
run copy_blocks build/bench/vgpu_bench --gpuos build/gpuos --isolation process,mps --only copy,ringprobe,launch
;;
esac
cp "$W/machine.txt" "$W/summary.txt" "$OUT/"
(cd "$(dirname "$W")" && tar czf "$OUT/probe.tar.gz" probe)
head -2 "$W/machine.txt"; cat "$W/summary.txt"
