# SPDX-License-Identifier: Apache-2.0
# tools/gpu_lib.sh: sourced by the device-machine scripts (gpu_final.sh,
# gpu_sharing.sh, gpu_final_stop27.sh): gpu_run_begin NAME SCRIPT makes the work
# folder $W ($OUT too), records the machine in $W/machine.txt and sets $S, the
# summary; part NAME SECONDS COMMAND... runs one part under its limit into
# $W/NAME.log and adds its exit code and time to $S.
gpu_run_begin() { # name script
    OUT=${OUT:-out}
    mkdir -p "$OUT"
    W=$(mktemp -d)/$1
    mkdir -p "$W"
    export GPUOS=$PWD/build/gpuos BUILD=build
    { nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv,noheader; hostname; date -u
      echo "commit ${GPUOS_COMMIT:-unknown}"; echo "command sh $2"; } > "$W/machine.txt"
    S="$W/summary.txt"
}
part() { # name seconds command...
    n=$1; s=$2; shift 2
    t0=$(date +%s)
    timeout "$s" "$@" > "$W/$n.log" 2>&1; rc=$?
    echo "$n rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$S"
}
# Issue 22's figures (quick windows): the sharing table (2, 4 and 8 busy tenants,
# light and dense kernels, each isolation mode of SH_MODES beside plain
# processes) with a tenant's launches and copies beside a busy one, then BAND
# on rings with 2, 4 and 8 vGPUs, the 0.2/1/5/20 ms mix and 70/30 with equal
# kernels (FAIR_MODES), and the 10 % vGPU next to a busy 90 % one (SH_FORGE=1)
# into $W/{sharing,fairness,forge}.log, optionally A/B rows without early
# yields (SH_AB_EARLY=1) and with other grants (SH_AB_GRANT=US); sharing_summary
# prints their figures.
sharing_parts() {
    part sharing "${SH_PART_S:-260}" build/bench/vgpu_bench --gpuos build/gpuos --results "$W/bench" --seconds 3 --quick \
        --isolation "${SH_MODES:-process,mps+off,mps}" --only launch,sharing,neighbour --vgpus 2,4,8
    part fairness "${FAIR_PART_S:-120}" build/bench/vgpu_bench --gpuos build/gpuos --out "$W/fair.json" --seconds 2 \
        --isolation "${FAIR_MODES:-process,mps+pairs}" --only fairness --policies band --vgpus 2,4,8,mix,70/30
    [ "${SH_FORGE:-1}" = 1 ] && part forge 45 env FORGE_SIM=none sh tests/t_ring_forge.sh
    # SH_AB_EARLY=1: two tenants under process once more without the early-yield
    # announcement (GPUOS_RING_EARLY=0), for what it gains, in the same run
    [ "${SH_AB_EARLY:-0}" = 1 ] && part sharing_noearly 60 env GPUOS_RING_EARLY=0 build/bench/vgpu_bench --gpuos build/gpuos \
        --results "$W/bench-noearly" --seconds 3 --quick --isolation process --only sharing --vgpus 2
    # SH_AB_GRANT=US: two tenants under process once more with grants of US
    # microseconds (grant_us; auto's cap is 16000), for what longer grants gain
    [ -n "${SH_AB_GRANT:-}" ] && part sharing_grant 60 build/bench/vgpu_bench --gpuos build/gpuos \
        --results "$W/bench-grant" --seconds 3 --quick --isolation process --only sharing --vgpus 2 --grant-us "$SH_AB_GRANT"
}
sharing_summary() {
    grep -h "launch us\|^sharing.*tenants\|^neighbour" "$W/sharing.log"
    [ -f "$W/sharing_noearly.log" ] && grep -h "^sharing.*tenants" "$W/sharing_noearly.log" | sed 's/^/no early yield: /'
    [ -f "$W/sharing_grant.log" ] && grep -h "^sharing.*tenants" "$W/sharing_grant.log" | sed "s/^/grants of $SH_AB_GRANT us: /"
    grep -h "^fairness\|error\|isolation =" "$W/fairness.log" | head -24
    [ -f "$W/forge.log" ] && tail -3 "$W/forge.log"
}
