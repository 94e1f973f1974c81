#!/bin/sh
# t_slurm_scripts.sh: dist/slurm/'s Prolog, TaskProlog and Epilog against a
# stand-in scontrol (no Slurm needed), on the simulated device: what Slurm
# 22.05's Prolog environment and `scontrol show job -d` give, and the cases it
# cannot work out, each one log line and exit 1, nothing created:
#  - shards of one GPU -> a vGPU of shards/Count (Count from GPUOS_SHARDS_PER_GPU,
#    per GPU, or the node's Gres= total over its GPUs), the job's uid only;
#  - a whole GPU (gres/gpu) -> 100 %; no GPU -> nothing, exit 0;
#  - shards on two GPUs, no GRES line for this node, a count that is not a
#    number, more shards than the Count, scontrol failing -> exit 1 + why;
#  - a requeued job (same id) gets its vGPU anew; the TaskProlog's lines; the
#    Epilog deletes the job's vGPUs (and only them), ending a process attached.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: $(basename "$0") needs root (clients of other uids, setpriv)"; exit 0; }
. tests/serve_lib.sh
chmod 755 "$T"
start_daemon "socket_mode = 0666
[device 0]
sim = default
[device 1]
sim = default"
cat > "$T/scontrol" <<'EOF2'
#!/bin/sh
# stand-in: $FAKE_GRES is this node's GRES=, $FAKE_NODE_GRES the node's Gres=
case "$1 $2" in
"show job") [ -n "${FAKE_FAIL:-}" ] && { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
    printf 'JobId=%s JobName=x\n   JOB_GRES=%s\n     Nodes=%s CPU_IDs=0 Mem=0 GRES=%s\n' \
        "$4" "$FAKE_GRES" "${FAKE_NODES:-gn1}" "$FAKE_GRES" ;;
"show node") printf 'NodeName=gn1 Arch=x86_64\n   Gres=%s\n   GresUsed=x\n' "$FAKE_NODE_GRES" ;;
"show hostnames") echo "$3" | sed 's/gn\[1-2\]/gn1\ngn2/' ;;
*) exit 1 ;;
esac
EOF2
chmod 755 "$T/scontrol"
cat > "$T/slurm.conf" <<EOF2
GPUOS=$G
GPUOS_SOCKET=$T/s
GPUOS_SHIM_DIR=$T
SCONTROL=$T/scontrol
EOF2
export GPUOS_SLURM_CONF="$T/slurm.conf" SLURMD_NODENAME=gn1 SLURM_JOB_UID=4242 FAKE_NODE_GRES="gpu:2(S:0-1),shard:200"
P=dist/slurm/gpuos-prolog
prolog() { # JOBID GPUS GRES: runs the Prolog, its stderr in $T/err
    env SLURM_JOB_ID="$1" SLURM_JOB_GPUS="$2" FAKE_GRES="$3" sh $P 2>"$T/err"
}
refused() { # WANT JOBID GPUS GRES
    want=$1; shift
    prolog "$@" && fail "Prolog accepted $*: $(cat "$T/err")"
    grep -qF -- "gpuos-slurm prolog: job $1: $want" "$T/err" || fail "Prolog $*: expected \"$want\", got: $(cat "$T/err")"
    [ "$(wc -l < "$T/err")" = 1 ] || fail "Prolog $*: more than one line: $(cat "$T/err")"
    [ "$("$G" vgpu list | grep -c "slurm-$1-")" = 0 ] || fail "Prolog $* left a vGPU"
}

prolog 11 1 "shard:30(IDX:1)" || fail "30 shards of GPU 1: $(cat "$T/err")"
[ "$(vgpu_field slurm-11-1 compute_share)" = 30 ] && [ "$(vgpu_field slurm-11-1 device)" = 1 ] ||
    fail "job 11: $("$G" vgpu list)"   # 30 of 200/2 = 100
grep -q "vGPU slurm-11-1: device 1, compute 30 %, memory 30% (30 of 100 shards of GPU 1), user 4242" "$T/err" ||
    fail "job 11's log line: $(cat "$T/err")"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups timeout 20 "$C" info slurm-11-1 2>&1) &&
    fail "uid nobody opened job 11's vGPU"
echo "$out" | grep -q 'vGPU "slurm-11-1" is not open to uid 65534' || fail "nobody on job 11's vGPU: $out"
GPUOS_SHARDS_PER_GPU="0=8 1=100" prolog 12 0 "shard:gtx:3(IDX:0)" || fail "3 of 8: $(cat "$T/err")"
[ "$(vgpu_field slurm-12-0 compute_share)" = 37 ] && [ "$(vgpu_field slurm-12-0 mem_share)" = 38 ] ||
    fail "3 of 8 shards: $("$G" vgpu list)" # compute rounds down, memory 37.5 %
"$G" vgpu delete slurm-12-0
prolog 13 0 "gpu:1(IDX:0)" || fail "a whole GPU: $(cat "$T/err")"
[ "$(vgpu_field slurm-13-0 compute_share)" = 100 ] || fail "whole GPU: $("$G" vgpu list)"
"$G" vgpu delete slurm-13-0
prolog 14 "" "" || fail "a job without GPU failed"
[ ! -s "$T/err" ] && [ "$("$G" vgpu list | grep -c slurm-14)" = 0 ] || fail "job without GPU: $(cat "$T/err")"

refused "shards on 2 GPUs (0 1) but Slurm says only their total (30)" 20 0,1 "shard:30(IDX:0-1)"
FAKE_NODES=gn9 refused "GPUs 0 allocated but no GRES= line for node gn1" 21 0 "shard:30(IDX:0)"
refused "cannot read a shard count from GRES=shard:x(IDX:0)" 22 0 "shard:x(IDX:0)"
refused "GPU 0: 130 shards of a Count of 100" 23 0 "shard:130(IDX:0)"
FAKE_FAIL=1 refused "cannot read the job's shards: $T/scontrol show job -d 24: slurm_load_jobs error" 24 0 "x"
FAKE_NODE_GRES="gpu:2" refused "GPU 0: cannot tell its shard count (set GPUOS_SHARDS_PER_GPU" 25 0 "shard:5(IDX:0)"
refused "GPUs 0 allocated but neither shard nor gpu in GRES=mps:50(IDX:0)" 26 0 "mps:50(IDX:0)"
FAKE_NODES="gn[1-2]" prolog 27 0 "shard:10(IDX:0)" || fail "a hostlist naming this node: $(cat "$T/err")"
# the device map; memory that does not fit is refused by the daemon, one line
GPUOS_DEVICE_MAP="0=1" prolog 28 0 "shard:10(IDX:0)" || fail "device map: $(cat "$T/err")"
[ "$(vgpu_field slurm-28-0 device)" = 1 ] || fail "GPUOS_DEVICE_MAP 0=1: $("$G" vgpu list)"
refused "GPU 0: vgpu create slurm-29-0 failed: gpuos: memory shares of device 0 sum to" 29 0 "shard:95(IDX:0)"

# a requeued job: its vGPU anew, with a client of the last run ended
setpriv --reuid=4242 --regid=4242 --clear-groups timeout 30 "$C" hold slurm-11-1 4096 20 >/dev/null 2>&1 &
HP=$!
wait_field slurm-11-1 clients 1
prolog 11 1 "shard:40(IDX:1)" || fail "requeued job 11: $(cat "$T/err")"
[ "$(vgpu_field slurm-11-1 compute_share)" = 40 ] || fail "requeued job 11: $("$G" vgpu list)"
kill "$HP" 2>/dev/null; wait "$HP" 2>/dev/null

# TaskProlog: the step's GPU, else the job's first vGPU; nothing without one
tp() { env SLURM_JOB_ID="$1" SLURM_STEP_GPUS="$2" LD_LIBRARY_PATH="$3" sh dist/slurm/gpuos-taskprolog 2>"$T/tperr"; }
touch "$T/libcuda.so.1"
[ "$(tp 11 1 /x)" = "export GPUOS_VGPU=slurm-11-1
export GPUOS_SOCKET=$T/s
export LD_LIBRARY_PATH=$T:/x" ] || fail "TaskProlog job 11: $(tp 11 1 /x)"
[ "$(tp 11 "" "$T" | head -1)" = "export GPUOS_VGPU=slurm-11-1" ] || fail "TaskProlog without step GPUs"
[ "$(tp 11 "" "$T" | grep -c LD_LIBRARY_PATH)" = 0 ] || fail "TaskProlog put the shim on LD_LIBRARY_PATH twice"
[ -z "$(tp 99 0 "")" ] || fail "TaskProlog of a job without vGPU printed: $(tp 99 0 "")"

# Epilog: the job's vGPUs go, others stay
"$G" vgpu create slurm-111-0 device=0 compute=1 memory=1% || fail "create slurm-111-0"
env SLURM_JOB_ID=11 sh dist/slurm/gpuos-epilog 2>"$T/err" || fail "Epilog job 11: $(cat "$T/err")"
[ -z "$(vgpu_field slurm-11-1 name)" ] && [ -n "$(vgpu_field slurm-111-0 name)" ] || fail "Epilog of job 11: $("$G" vgpu list)"
grep -q "gpuos-slurm epilog: job 11: vGPU slurm-11-1 deleted" "$T/err" || fail "Epilog's line: $(cat "$T/err")"
env SLURM_JOB_ID=11 sh dist/slurm/gpuos-epilog 2>"$T/err" || fail "Epilog of a job without vGPU failed"
env SLURM_JOB_ID=12 GPUOS_SLURM_CONF=/nonexistent GPUOS="$G" GPUOS_SOCKET="$T/nowhere" sh dist/slurm/gpuos-epilog 2>"$T/err" && fail "Epilog without a daemon: exit 0"
grep -q "gpuos-slurm epilog: job 12: cannot list the vGPUs: gpuos: cannot reach gpuos serve" "$T/err" ||
    fail "Epilog without a daemon: $(cat "$T/err")"
stop_daemon
echo ok
