#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_issue25.sh: issue 25 on the GPU: a single-node Slurm cluster
# (tests/slurm_lib.sh; Debian's Slurm relocated under $SLURM_ROOT when this
# machine has none: tools/slurm_root.sh build-slurmroot, carried) with the GPU
# as 100 shards; two jobs of 30 and 70 shards, each first running the unmodified
# Driver-API program (tests/cudashim_drv all) on its vGPU, then, started
# together, spin kernels (sleep_ns of NS ns, 4 per synchronise) for SECS
# seconds; each job counts its own launches: its GPU time is launches x NS.
# Passes when the 30-shard job's part of the two is within 2 points of 30 %.
# SIM=1 runs it on the simulated device (a check of the script itself).
# Results in $OUT (default out/): issue25.txt, the logs. As root.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
NS=${NS:-2000000} SECS=${SECS:-30}
if ! command -v slurmctld >/dev/null 2>&1 && [ -z "${SLURM_ROOT:-}" ] && [ -d build-slurmroot ]; then
    SLURM_ROOT=build-slurmroot
fi
if [ ! -x build/gpuos ] || [ ! -x build/tests/serve_client ] || [ ! -f build/shim/libcuda.so.1 ]; then
    make -j16 build/gpuos build/tests/serve_client build/tests/cudashim_drv build/shim/libcuda.so.1 \
        > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
fi
. tests/serve_lib.sh
. tests/slurm_lib.sh
slurm_have || { echo "FAIL: no Slurm here and no SLURM_ROOT (tools/slurm_root.sh)"; exit 1; }
done_all() { cp "$T"/*.log "$T/slurm.conf" "$T"/cgroup.conf "$W"/*.out "$W"/*.err "$W"/*.burst "$OUT/" 2>/dev/null; slurm_stop; }
trap done_all EXIT
trap 'echo "gpu_issue25: stopped (signal) at: $(tail -1 "$OUT/progress.txt" 2>/dev/null)"; exit 1' TERM INT
step() { echo "$(date -u +%T) $*" >> "$OUT/progress.txt"; }
step start
slurm_stage "$C" "$B/tests/cudashim_drv"
W="$T/w"
dev="[device 0]"
[ "${SIM:-0}" = 1 ] && dev="[device 0]
sim = default"
printf 'socket = %s\nsocket_mode = 0666\nstate = %s/state.json\n%s\n' "$T/s" "$T" "$dev" > "$T/conf"
"$G" serve --config "$T/conf" 2>>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/s" ]; do i=$((i + 1)); [ $i -gt 600 ] && fail "daemon did not come up"; sleep 0.1; done
slurm_start
step "slurm up"

# the job: the Driver-API program on its vGPU (its quota from the list), then
# spin kernels from $W/go on, for SECS seconds
{
    echo '#!/bin/sh'
    echo "q=\$($T/bin/gpuos vgpu list --socket $T/s --bytes | awk -v n=\"slurm-\$SLURM_JOB_ID-0\" '\$1 == n { print \$12 }')"
    echo "srun $T/bin/cudashim_drv all \"\$q\" > $W/\$1.all 2> $W/\$1.err"
    echo "touch $W/\$1.ready"
    echo "i=0; while [ ! -f $W/go ] && [ \$i -lt 1200 ]; do i=\$((i + 1)); sleep 0.1; done"
    echo "srun $T/bin/serve_client burst \"\$GPUOS_VGPU\" $NS $SECS 4 > $W/\$1.burst 2>&1"
} > "$W/spin.sh"
chmod 755 "$W/spin.sh"
JA=$(cd "$W" && sbatch --parsable -J A -o "$W/A.out" --gres=shard:30 "$W/spin.sh" A) || slurm_fail "sbatch A: $JA"
JB=$(cd "$W" && sbatch --parsable -J B -o "$W/B.out" --gres=shard:70 "$W/spin.sh" B) || slurm_fail "sbatch B: $JB"
i=0
while [ ! -f "$W/A.ready" ] || [ ! -f "$W/B.ready" ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && slurm_fail "jobs not ready in 120 s: $(cat "$W/A.out" "$W/B.out" 2>&1)"; sleep 0.1
done
"$G" vgpu list > "$OUT/vgpus.txt"
step "both jobs ready (the Driver-API program ran in each)"
touch "$W/go"
i=0
while [ -n "$(squeue -h 2>/dev/null)" ]; do
    i=$((i + 1)); [ $i -gt $(((SECS + 60) * 10)) ] && slurm_fail "jobs did not end"; sleep 0.1
done
step "jobs ended"
la=$(sed -n 's/^launches //p' "$W/A.burst") lb=$(sed -n 's/^launches //p' "$W/B.burst")
[ -n "$la" ] && [ -n "$lb" ] || slurm_fail "no launch counts: $(cat "$W/A.burst" "$W/B.burst")"
pct=$(awk -v a="$la" -v b="$lb" 'BEGIN { printf "%.2f", 100 * a / (a + b) }')
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
    echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown); SIM=${SIM:-0} NS=$NS SECS=$SECS"
    echo "job A ($JA, 30 shards): launches $la; driver program: $(cat "$W/A.all")"
    echo "job B ($JB, 70 shards): launches $lb; driver program: $(cat "$W/B.all")"
    echo "A's part of the GPU time: $pct % (want 30 +- 2)"
    echo "vGPUs while the jobs ran:"; cat "$OUT/vgpus.txt"
    echo "vGPUs after:"; "$G" vgpu list
} | tee "$OUT/issue25.txt"
[ "$(cat "$W/A.all")" = ok ] && [ "$(cat "$W/B.all")" = ok ] || slurm_fail "the Driver-API program failed"
awk -v p="$pct" 'BEGIN { exit !(p >= 28 && p <= 32) }' || slurm_fail "A got $pct % of the GPU time, not 30 +- 2"
[ "$("$G" vgpu list | wc -l)" = 1 ] || slurm_fail "vGPUs left after the jobs"
echo "gpu_issue25: ok"
