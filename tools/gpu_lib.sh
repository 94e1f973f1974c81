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
# The quick sharing table (2 and 4 tenants, process and mps, beside plain
# processes), BAND on rings with 2, 4 and 8 vGPUs and the 10 % vGPU next to a busy
# 90 % one (issue 22) into $W/{sharing,fairness,forge}.log; sharing_summary
# prints their figures.
sharing_parts() {
    part sharing 150 build/bench/vgpu_bench --gpuos build/gpuos --results "$W/bench" --seconds 3 --quick \
        --isolation process,mps --only launch,sharing --vgpus 2,4
    part fairness 75 build/bench/vgpu_bench --gpuos build/gpuos --out "$W/fair.json" --seconds 2 \
        --isolation process --only fairness --policies band --vgpus 2,4,8
    part forge 45 env FORGE_SIM=none sh tests/t_ring_forge.sh
}
sharing_summary() {
    grep -h "launch us\|^sharing.*tenants" "$W/sharing.log"
    grep -h "^fairness\|error" "$W/fairness.log" | head -12
    tail -3 "$W/forge.log"
}
