#!/bin/sh
# tests/gpu/mixed.sh: mixed tenants on the GPU, side by side in one run (issue
# 41), with the unmodified PyTorch tenants of progs/mixed_torch.py:
#  1. a latency tenant (a 12-layer decoder, a request every 20 ms) beside a
#     training loop: each alone natively, then together as plain processes
#     (the driver's time-slicing), under the driver's MPS (a server of this
#     script's, pipe and log folders under $T, quit at the end), and under
#     gpuos (process and mps; the latency tenant's vGPU in the latency class,
#     latency_ms = 2, and once without it) at 50/50, 30/70 and 10/90 (the
#     latency tenant on the first share);
#  2. training loops on every vGPU at 10/90, 30/70 and 40/30/20/10 under
#     process: each tenant's steps/s over the same loop alone, against its
#     promise (its share).
# Device machine, repository root, build/ present. Prints one line per case:
#   mixed CASE p50 p99 max infer_alone_p99 train_steps train_alone ratios
#   shares CONFIG vGPU share steps alone got/promise
# and writes every log under $OUT/mixed. MX_PARTS="mixed shares" picks parts.
set -u
. tests/gpu/daemon_lib.sh
OUT=${OUT:-out}
O=$OUT/mixed
mkdir -p "$O"
export MIX_SECS=${MIX_SECS:-8}
P="python3 tests/gpu/progs/mixed_torch.py"
val() { sed -n "s/^TIME $2 //p" "$1" | head -1; }
infer_alone=; train_alone=
native_pair() { # case name: both tenants as plain processes of this machine
    timeout 120 $P train > "$O/$1-train.txt" 2>&1 &
    tp=$!
    sleep 1
    timeout 120 $P infer > "$O/$1-infer.txt" 2>&1
    wait $tp
    report "$1"
}
report() { # case name
    f=$O/$1-infer.txt
    echo "mixed $1 p50 $(val "$f" p50_ms) p99 $(val "$f" p99_ms) max $(val "$f" max_ms)" \
         "p99/alone $(awk -v a="$(val "$f" p99_ms)" -v b="$infer_alone" 'BEGIN { if (b > 0 && a > 0) printf "%.3f", a / b; else print "-" }')" \
         "train $(val "$O/$1-train.txt" steps_per_s)" \
         "train/alone $(awk -v a="$(val "$O/$1-train.txt" steps_per_s)" -v b="$train_alone" 'BEGIN { if (b > 0 && a > 0) printf "%.3f", a / b; else print "-" }')"
}
gpuos_pair() { # case name, isolation, share of the latency tenant, latency line
    gpu_daemon "$(printf '[device 0]\npolicy = band\nqueue = mrq\nisolation = %s\n[vgpu lat]\ncompute = %s\nmemory = 20%%\n%s\n[vgpu bat]\ncompute = %s\nmemory = 60%%\n' \
        "$2" "$3" "$4" $((100 - $3)))" "$O/$1-serve.log"
    timeout 120 "$G" run --vgpu bat -- $P train > "$O/$1-train.txt" 2>&1 &
    tp=$!
    sleep 1
    timeout 120 "$G" run --vgpu lat -- $P infer > "$O/$1-infer.txt" 2>&1
    wait $tp
    "$G" vgpu list > "$O/$1-vgpus.txt" 2>&1
    kill -TERM "$D"; wait "$D" 2>/dev/null; D=
    report "$1"
}
case " ${MX_PARTS:-mixed shares} " in *" mixed "*)
    timeout 120 $P infer > "$O/alone-infer.txt" 2>&1
    infer_alone=$(val "$O/alone-infer.txt" p99_ms)
    timeout 120 $P train > "$O/alone-train.txt" 2>&1
    train_alone=$(val "$O/alone-train.txt" steps_per_s)
    echo "mixed alone infer p50 $(val "$O/alone-infer.txt" p50_ms) p99 $infer_alone max $(val "$O/alone-infer.txt" max_ms) busy $(val "$O/alone-infer.txt" mean_busy_ms) ms; train $train_alone steps/s"
    native_pair plain
    # the driver's MPS, a server of our own
    export CUDA_MPS_PIPE_DIRECTORY=$T/mps-pipe CUDA_MPS_LOG_DIRECTORY=$T/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        sleep 1
        native_pair driver-mps
        echo quit | nvidia-cuda-mps-control
        sleep 1
    else
        echo "mixed driver-mps: could not start an MPS server"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    for iso in process mps; do
        gpuos_pair "$iso-50-latency" "$iso" 50 "latency_ms = 2"
        gpuos_pair "$iso-50-batch" "$iso" 50 ""
    done
    for s in 30 10; do
        gpuos_pair "process-$s-latency" process "$s" "latency_ms = 2"
        gpuos_pair "mps-$s-latency" mps "$s" "latency_ms = 2"
    done ;;
esac
case " ${MX_PARTS:-mixed shares} " in *" shares "*)
    [ -n "$train_alone" ] || { timeout 120 $P train > "$O/alone-train.txt" 2>&1; train_alone=$(val "$O/alone-train.txt" steps_per_s); }
    for cfg in 10/90 30/70 40/30/20/10; do
        name=$(echo "$cfg" | tr / -)
        body=$(printf '[device 0]\npolicy = band\nqueue = mrq\nisolation = process\n')
        i=0
        for s in $(echo "$cfg" | tr / ' '); do
            body=$(printf '%s\n[vgpu t%d]\ncompute = %s\nmemory = 20%%\n' "$body" $i "$s"); i=$((i + 1))
        done
        gpu_daemon "$body" "$O/shares-$name-serve.log"
        i=0; pids=
        for s in $(echo "$cfg" | tr / ' '); do
            timeout 120 "$G" run --vgpu t$i -- $P train > "$O/shares-$name-t$i.txt" 2>&1 &
            pids="$pids $!"; i=$((i + 1))
        done
        wait $pids
        "$G" vgpu list > "$O/shares-$name-vgpus.txt" 2>&1
        kill -TERM "$D"; wait "$D" 2>/dev/null; D=
        i=0; sum=0
        for s in $(echo "$cfg" | tr / ' '); do
            v=$(val "$O/shares-$name-t$i.txt" steps_per_s)
            echo "shares $cfg t$i $s % steps ${v:--} alone $train_alone got/promise $(awk -v a="${v:-0}" -v b="$train_alone" -v s="$s" 'BEGIN { printf "%.3f", a / (b * s / 100) }')"
            sum=$(awk -v a="$sum" -v b="${v:-0}" 'BEGIN { print a + b }')
            i=$((i + 1))
        done
        echo "shares $cfg sum $(awk -v a="$sum" -v b="$train_alone" 'BEGIN { printf "%.3f", a / b }') of one alone"
    done ;;
esac
