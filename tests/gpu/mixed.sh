#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/mixed.sh: mixed tenants on the GPU, side by side in one run (issue
# 41), with the unmodified PyTorch tenants of progs/mixed_torch.py:
#  1. a latency tenant (a 12-layer decoder, a request every P ms) beside a
#     training loop: each alone natively, then together as plain processes
#     (the driver's time-slicing), under the driver's MPS (a server of this
#     script's, pipe and log folders under $T, quit at the end), and under
#     gpuos, process and mps, the latency tenant's vGPU in the latency class
#     (latency_ms = 2) or not: at 50/50 with P = 20 ms, at 30/70 with P = 40
#     and at 10/90 with P = 100 (the latency tenant on the first share; P
#     keeps its demand within its share); MX_PERIODS="20:50 40:30 100:10"
#     picks period:share pairs, MX_ISO="process process+beside mps" the gpuos
#     modes of the latency class (+beside, +preempt: its handover key; +smsN:
#     latency_sms = N, the batch executor's MPS active-thread limit;
#     +prio-P: latency_priority = P, off | stream | client | both),
#     MIX_LAYERS the decoder's layers (12), MIX_SECS the window,
#     MX_DRIVER_MPS=0 leaves the driver-MPS case out; MX_HALF=1 adds, at
#     20 ms, the service under gpuos beside the training as a plain process
#     and the reverse (half_pair: where `beside`'s slowdown comes from);
#  2. training loops whose speed is their GPU time (MIX_WIDTH=8192,
#     MIX_BATCH=4096, bf16) on every vGPU at 10/90, 30/70 and 40/30/20/10
#     under process: each tenant's steps/s over the same loop alone, against
#     its promise (its share), and the daemon's GPU time per vGPU;
#     MX_SHARES_GRANT="auto 32000 32000:4000 auto:auto" runs them once per
#     grant_us (auto by default; G:M adds grant_min_us = M, the least a
#     small vGPU's credit-capped grant lasts; G:M:P period_ms = P too),
#     side by side in one run;
#     MX_SHARES="40/30/20/10" picks the splits, MX_SHARES_ROUNDS=N runs the
#     whole list N times over (names end #K); the loop alone runs before
#     and after, and each promise is the share of their mean.
# The tenants of a case measure one window (progs/mixed_torch.py, MIX_SYNC):
# each starts it once all are warm.
# Device machine, repository root, build/ present. Prints one line per case:
#   mixed P CASE p50 p90 p99 max p99/alone train train/alone train/plain
#   shares CONFIG vGPU share steps alone got/promise gpu_share
# and writes every log under $OUT/mixed. MX_PARTS="mixed shares" picks parts.
set -u
. tests/gpu/daemon_lib.sh
OUT=${OUT:-out}
O=$OUT/mixed
mkdir -p "$O"
export MIX_SECS=${MIX_SECS:-5}
P="python3 tests/gpu/progs/mixed_torch.py"
val() { sed -n "s/^TIME $2 //p" "$1" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.3f", a / b; else print "-" }'; }
infer_alone=; train_alone=; train_plain=
report() { # period, case name
    f=$O/$1-$2-infer.txt; tr=$(val "$O/$1-$2-train.txt" steps_per_s)
    echo "mixed $1ms $2 p50 $(val "$f" p50_ms) p90 $(val "$f" p90_ms) p99 $(val "$f" p99_ms) max $(val "$f" max_ms)" \
         "p99/alone $(ratio "$(val "$f" p99_ms)" "$infer_alone") train $tr train/alone $(ratio "$tr" "$train_alone")" \
         "train/plain $(ratio "$tr" "$train_plain")"
}
# peers N: the next N tenants measure one window (progs/mixed_torch.py, MIX_SYNC)
peers() { MIX_SYNC=$(mktemp -d "$O/sync.XXXXXX"); export MIX_SYNC MIX_PEERS=$1; }
native_pair() { # period, case name: both tenants as plain processes of this machine
    peers 2
    timeout 120 $P train > "$O/$1-$2-train.txt" 2>&1 &
    tp=$!
    sleep 1
    MIX_PERIOD_MS=$1 timeout 120 $P infer > "$O/$1-$2-infer.txt" 2>&1
    wait $tp
    unset MIX_SYNC MIX_PEERS
    report "$1" "$2"
}
gpuos_pair() { # period, case name, isolation[+handover], share of the latency tenant, latency line
    iso=${3%%+*}; ho=
    for t in $(echo "${3#"$iso"}" | tr '+' ' '); do # +beside, +preempt, +sms10 (latency_sms = 10), +prio-stream
        case $t in sms*) ho="$ho
latency_sms = ${t#sms}" ;; prio-*) ho="$ho
latency_priority = ${t#prio-}" ;; *) ho="$ho
handover = $t" ;; esac
    done
    gpu_daemon "$(printf '[device 0]\npolicy = band\nqueue = mrq\nisolation = %s\n%s\n[vgpu lat]\ncompute = %s\nmemory = 20%%\n%s\n[vgpu bat]\ncompute = %s\nmemory = 60%%\n' \
        "$iso" "$ho" "$4" "$5" $((100 - $4)))" "$O/$1-$2-serve.log"
    peers 2
    timeout 120 "$G" run --vgpu bat -- $P train > "$O/$1-$2-train.txt" 2>&1 &
    tp=$!
    sleep 1
    MIX_PERIOD_MS=$1 timeout 120 "$G" run --vgpu lat -- $P infer > "$O/$1-$2-infer.txt" 2>&1
    wait $tp
    unset MIX_SYNC MIX_PEERS
    "$G" vgpu list > "$O/$1-$2-vgpus.txt" 2>&1
    # (its tasks and swap counters beside the grant log of GPUOS_GRANT_LOG=1)
    "$G" vgpu list --json "$O/$1-$2-vgpus.json" > /dev/null 2>&1
    kill -TERM "$D"; wait "$D" 2>/dev/null; D=
    report "$1" "$2"
}
# half_pair PERIOD NAME SIDE: one tenant under gpuos (SIDE: infer, the service on
# a latency vGPU of its daemon, alone there; or train), the other a plain
# process, time-sliced by the driver: whether `beside`'s slowdown (the
# service's work much slower beside the training's executor than beside the
# plain training process, GPU-cf4134f8) comes from the service's executor or
# the training's
half_pair() {
    gpu_daemon "$(printf '[device 0]\npolicy = band\nqueue = mrq\nisolation = process\n[vgpu lat]\ncompute = 50\nmemory = 20%%\nlatency_ms = 2\n[vgpu bat]\ncompute = 50\nmemory = 60%%\n')" \
        "$O/$1-$2-serve.log"
    tr=; inf=; [ "$3" = train ] && tr="$G run --vgpu bat --"; [ "$3" = infer ] && inf="$G run --vgpu lat --"
    peers 2
    timeout 120 $tr $P train > "$O/$1-$2-train.txt" 2>&1 &
    tp=$!
    sleep 1
    MIX_PERIOD_MS=$1 timeout 120 $inf $P infer > "$O/$1-$2-infer.txt" 2>&1
    wait $tp
    unset MIX_SYNC MIX_PEERS
    kill -TERM "$D"; wait "$D" 2>/dev/null; D=
    report "$1" "$2"
}
mixed_period() { # period, share of the latency tenant, gpuos cases ("latency" and/or "batch")
    MIX_PERIOD_MS=$1 timeout 120 $P infer > "$O/$1-alone-infer.txt" 2>&1
    infer_alone=$(val "$O/$1-alone-infer.txt" p99_ms)
    echo "mixed $1ms alone p50 $(val "$O/$1-alone-infer.txt" p50_ms) p99 $infer_alone max $(val "$O/$1-alone-infer.txt" max_ms)" \
         "request $(val "$O/$1-alone-infer.txt" mean_busy_ms) ms; train alone $train_alone steps/s"
    native_pair "$1" plain
    train_plain=$(val "$O/$1-plain-train.txt" steps_per_s)
    export CUDA_MPS_PIPE_DIRECTORY=$T/mps-pipe CUDA_MPS_LOG_DIRECTORY=$T/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if [ "${MX_DRIVER_MPS:-1}" = 0 ]; then
        : # (MX_DRIVER_MPS=0: no driver-MPS case, to save device time)
    elif nvidia-cuda-mps-control -d; then
        sleep 1
        native_pair "$1" driver-mps
        echo quit | nvidia-cuda-mps-control
        sleep 1
    else
        echo "mixed driver-mps: could not start an MPS server"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    for c in $3; do
        case $c in
        latency) for iso in ${MX_ISO:-process process+beside mps}; do gpuos_pair "$1" "$iso-$2-latency" "$iso" "$2" "latency_ms = 2"; done ;;
        batch) gpuos_pair "$1" "process-$2-batch" process "$2" "" ;; # (as before the class: for comparison)
        half) half_pair "$1" gpuos-infer+plain-train infer; half_pair "$1" plain-infer+gpuos-train train ;;
        esac
    done
}
case " ${MX_PARTS:-mixed shares} " in *" mixed "*)
    timeout 120 $P train > "$O/alone-train.txt" 2>&1
    train_alone=$(val "$O/alone-train.txt" steps_per_s)
    for ps in ${MX_PERIODS:-20:50 40:30 100:10}; do
        if [ "${ps%%:*}" = 20 ] && [ "${MX_BATCH_CASE:-1}" = 1 ]; then c="latency batch"; else c=latency; fi
        [ "${ps%%:*}" = 20 ] && [ "${MX_HALF:-0}" = 1 ] && c="$c half" 
        mixed_period "${ps%%:*}" "${ps#*:}" "$c"
    done ;;
esac
case " ${MX_PARTS:-mixed shares} " in *" shares "*)
    export MIX_WIDTH=8192 MIX_BATCH=4096 MIX_BF16=1
    timeout 120 $P train > "$O/shares-alone.txt" 2>&1
    echo "shares alone $(val "$O/shares-alone.txt" steps_per_s) steps/s (width 8192, batch 4096, bf16)"
    : > "$O/shares-steps.txt" # config tenant share steps gpu_share, one line each
    r=1
    while [ $r -le "${MX_SHARES_ROUNDS:-1}" ]; do
    for gu in ${MX_SHARES_GRANT:-auto}; do
    for cfg0 in ${MX_SHARES:-10/90 30/70 40/30/20/10}; do
        cfg=$cfg0; [ "$gu" = auto ] || cfg="$cfg0@$gu"
        [ "${MX_SHARES_ROUNDS:-1}" -gt 1 ] && cfg="$cfg#$r"
        name=$(echo "$cfg" | tr '/@:#' ----)
        # (G:M: grant_us = G, grant_min_us = M, the least a small vGPU's
        # credit-capped grant lasts; G:M:P adds period_ms = P, the scheduler's
        # period, over which BAND judges a vGPU over its share)
        body=$(printf '[device 0]\npolicy = band\nqueue = mrq\nisolation = process\ngrant_us = %s\n' "${gu%%:*}")
        gmin=$(echo "$gu" | cut -s -d: -f2); per=$(echo "$gu" | cut -s -d: -f3)
        [ -n "$gmin" ] && body=$(printf '%s\ngrant_min_us = %s\n' "$body" "$gmin")
        [ -n "$per" ] && body=$(printf '%s\nperiod_ms = %s\n' "$body" "$per")
        i=0
        for s in $(echo "$cfg0" | tr / ' '); do
            body=$(printf '%s\n[vgpu t%d]\ncompute = %s\nmemory = 20%%\n' "$body" $i "$s"); i=$((i + 1))
        done
        gpu_daemon "$body" "$O/shares-$name-serve.log"
        i=0; pids=
        peers "$(echo "$cfg0" | tr / ' ' | wc -w)"
        for s in $(echo "$cfg0" | tr / ' '); do
            timeout 120 "$G" run --vgpu t$i -- $P train > "$O/shares-$name-t$i.txt" 2>&1 &
            pids="$pids $!"; i=$((i + 1))
        done
        wait $pids
        unset MIX_SYNC MIX_PEERS
        "$G" vgpu list --json "$O/shares-$name-vgpus.json" > /dev/null 2>&1
        kill -TERM "$D"; wait "$D" 2>/dev/null; D=
        i=0
        for s in $(echo "$cfg0" | tr / ' '); do
            gs=$(python3 -c "
import json, sys
v = json.load(open(sys.argv[1]))['vgpus']
t = sum(x['compute_ns'] for x in v)
print('%.3f' % (sum(x['compute_ns'] for x in v if x['name'] == sys.argv[2]) / t if t else 0))" "$O/shares-$name-vgpus.json" "t$i" 2>/dev/null)
            echo "$cfg t$i $s $(val "$O/shares-$name-t$i.txt" steps_per_s) ${gs:--}" >> "$O/shares-steps.txt"
            i=$((i + 1))
        done
    done
    done
    r=$((r + 1))
    done
    # the same loop alone again: each tenant's promise is its share of the mean
    # of the two (the card's speed drifts over minutes)
    timeout 120 $P train > "$O/shares-alone2.txt" 2>&1
    a1=$(val "$O/shares-alone.txt" steps_per_s); a2=$(val "$O/shares-alone2.txt" steps_per_s)
    echo "shares alone again ${a2:--} steps/s"
    awk -v a1="${a1:-0}" -v a2="${a2:-0}" '
        { alone = (a1 > 0 && a2 > 0) ? (a1 + a2) / 2 : (a1 > 0 ? a1 : a2)
          st = ($4 == "" || $4 == "-") ? 0 : $4
          printf "shares %s %s %s %% steps %s alone %.3f got/promise %.3f gpu_share %s\n", $1, $2, $3, $4, alone,
                 (alone > 0 ? st / (alone * $3 / 100) : 0), $5
          sum[$1] += st; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
        END { for (k = 1; k <= n; k++) printf "shares %s sum %.3f of one alone\n", order[k], (alone > 0 ? sum[order[k]] / alone : 0) }' \
        "$O/shares-steps.txt"
    ;;
esac
