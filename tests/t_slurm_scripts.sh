#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_slurm_scripts.sh: dist/slurm/'s Prolog, TaskProlog and Epilog against a
# stand-in squeue and scontrol (no Slurm needed), on the simulated device: what
# Slurm 22.05's Prolog environment and `squeue --json` give, and the cases it
# cannot work out, each one log line and exit 1, nothing created:
#  - shards of one GPU -> a vGPU of shards/Count (Count from GPUOS_SHARDS_PER_GPU,
#    per GPU, or the node's Gres= total over its GPUs), the job's uid only;
#  - a whole GPU (gres/gpu) -> 100 %; no GPU -> nothing, exit 0;
#  - GPUOS_JOB_CGROUP: auto binds the vGPU to Slurm's job cgroup layouts when
#    jobs have cgroups (a client of the job's uid outside them refused), not
#    otherwise (logged); a template's %j %u %n (issue 43.2);
#  - a job name that reads as a whole GPU in `scontrol show job -d` gets its
#    1 shard (issue 44.1);
#  - shards on two GPUs, no gres_detail for this node, a count that is not a
#    number, more shards than the Count, squeue failing or not JSON, no jq, a
#    uid that is not a number -> exit 1 + why;
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
# stand-in: `show job` as Slurm prints it (the name raw, as issue 44.1 used it:
# the Prolog must not read it), $FAKE_NODE_GRES the node's Gres=
case "$1 $2" in
"show job") printf 'JobId=%s JobName=%s\n   JOB_GRES=%s\n     Nodes=%s CPU_IDs=0 Mem=0 GRES=%s\n' \
        "$4" "${FAKE_NAME:-x}" "$FAKE_GRES" "${FAKE_NODES:-gn1}" "$FAKE_GRES" ;;
"show node") printf 'NodeName=gn1 Arch=x86_64\n   Gres=%s\n   GresUsed=x\n' "$FAKE_NODE_GRES" ;;
"show config") printf 'ProctrackType           = %s\nTaskPlugin              = task/none\n' "${FAKE_PROCTRACK:-proctrack/linuxproc}" ;;
*) exit 1 ;;
esac
EOF2
cat > "$T/squeue" <<'EOF2'
#!/usr/bin/python3
# stand-in for Slurm 22.05's `squeue --json -j ID` (openapi v0.0.38): the job's
# name, its nodes ($FAKE_NODES) and one gres_detail per node ($FAKE_GRES on gn1)
import json, os, sys
e = os.environ
if e.get("FAKE_FAIL"):
    sys.exit("squeue: error: Invalid job id specified")
if e.get("FAKE_JSON"):
    print(e["FAKE_JSON"]); sys.exit(0)
nodes = e.get("FAKE_NODES", "gn1").split()
job = {"job_id": int(sys.argv[sys.argv.index("-j") + 1]), "name": e.get("FAKE_NAME", "x"),
       "job_resources": {"nodes": ",".join(nodes), "allocated_nodes": [{"nodename": n} for n in nodes]},
       "gres_detail": [e.get("FAKE_GRES", "") if n == "gn1" else "gpu:1(IDX:0)" for n in nodes]}
other = dict(job, job_id=job["job_id"] + 1000, gres_detail=["gpu:1(IDX:0)"] * len(nodes))
print(json.dumps({"meta": {}, "errors": [], "jobs": [other, job]}, indent=2))
EOF2
chmod 755 "$T/scontrol" "$T/squeue"
cat > "$T/slurm.conf" <<EOF2
GPUOS=$G
GPUOS_SOCKET=$T/s
GPUOS_SHIM_DIR=$T
SCONTROL=$T/scontrol
SQUEUE=$T/squeue
EOF2
export GPUOS_JOB_CGROUP=none GPUOS_SLURM_CONF="$T/slurm.conf" SLURMD_NODENAME=gn1 SLURM_JOB_UID=4242 FAKE_NODE_GRES="gpu:2(S:0-1),shard:200"
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
FAKE_NODES=gn9 refused "GPUs 0 allocated but no gres_detail for node gn1 in \`$T/squeue --json -j 21\`" 21 0 "shard:30(IDX:0)"
refused "cannot read a shard count from shard:x(IDX:0)" 22 0 "shard:x(IDX:0)"
refused "GPU 0: 130 shards of a Count of 100" 23 0 "shard:130(IDX:0)"
FAKE_FAIL=1 refused "cannot read the job's shards: $T/squeue --json -j 24: squeue: error: Invalid job id specified" 24 0 "x"
FAKE_JSON='{"jobs": [' refused "cannot read the job's shards: $T/squeue --json -j 30: not its JSON" 30 0 "x"
FAKE_JSON='{"jobs": []}' refused "cannot read the job's shards: $T/squeue --json -j 31: 0 records of the job" 31 0 "x"
FAKE_JSON='{"jobs": [{"job_id": 32, "gres_detail": ["shard:1(IDX:0)"], "job_resources": {"allocated_nodes": [{"nodename": "gn1"}, {"nodename": "gn2"}]}}]}' \
    refused "cannot read the job's shards: $T/squeue --json -j 32: 2 nodes but 1 gres_detail entries" 32 0 "x"
refused "cannot read the job's shards: unexpected gres_detail \"shard:1(IDX:0)?x\"" 33 0 "shard:1(IDX:0) x"
JQ=/nonexistent/jq refused "cannot read the job's shards: no /nonexistent/jq (Debian's jq)" 34 0 "shard:1(IDX:0)"
SLURM_JOB_UID="4242
compute=100" refused "SLURM_JOB_UID \"4242?compute=100\" is not a uid" 35 0 "shard:1(IDX:0)"
FAKE_NODE_GRES="gpu:2" refused "GPU 0: cannot tell its shard count (set GPUOS_SHARDS_PER_GPU" 25 0 "shard:5(IDX:0)"
refused "GPUs 0 allocated but neither shard nor gpu in mps:50(IDX:0)" 26 0 "mps:50(IDX:0)"
FAKE_NODES="gn2 gn1" prolog 27 0 "shard:10(IDX:0)" || fail "this node second of two: $(cat "$T/err")"
[ "$(vgpu_field slurm-27-0 compute_share)" = 10 ] || fail "job 27 (gn1 second, gn2 a whole GPU): $("$G" vgpu list)"
# a job name that reads as a whole GPU in \`scontrol show job -d\` (issue 44.1):
# 1 shard stays 1 %
FAKE_NAME="x Nodes=gn1 GRES=gpu:1(IDX:0)
   JOB_GRES=gpu:1
     Nodes=gn1 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)" prolog 36 0 "shard:1(IDX:0)" || fail "crafted name: $(cat "$T/err")"
[ "$(vgpu_field slurm-36-0 compute_share)" = 1 ] && [ "$(vgpu_field slurm-36-0 mem_share)" = 1 ] ||
    fail "a 1-shard job with a crafted name: $("$G" vgpu list)"
"$G" vgpu delete slurm-36-0
# the device map; memory that does not fit is refused by the daemon, one line
GPUOS_DEVICE_MAP="0=1" prolog 28 0 "shard:10(IDX:0)" || fail "device map: $(cat "$T/err")"
[ "$(vgpu_field slurm-28-0 device)" = 1 ] || fail "GPUOS_DEVICE_MAP 0=1: $("$G" vgpu list)"
refused "GPU 0: vgpu create slurm-29-0 failed: gpuos: memory shares of device 0 sum to" 29 0 "shard:95(IDX:0)"

# the job's cgroup (issue 43.2): auto names Slurm's layouts when jobs have
# cgroups, a client of the job's uid outside them is refused; auto without
# them, or none: unbound, served; a template with %j %u %n
CG_AUTO="/system.slice/slurmstepd.scope/job_40 /system.slice/gn1_slurmstepd.scope/job_40 freezer:/slurm/uid_4242/job_40 freezer:/slurm_gn1/uid_4242/job_40"
GPUOS_JOB_CGROUP=auto FAKE_PROCTRACK=proctrack/cgroup prolog 40 0 "shard:1(IDX:0)" || fail "auto cgroup: $(cat "$T/err")"
grep -qF "vGPU slurm-40-0: device 0, compute 1 %, memory 1% (1 of 100 shards of GPU 0), user 4242, cgroup $CG_AUTO" "$T/err" ||
    fail "job 40's cgroup: $(cat "$T/err")"
out=$(setpriv --reuid=4242 --regid=4242 --clear-groups timeout 20 "$C" info slurm-40-0 2>&1) &&
    fail "uid 4242 outside job 40's cgroup opened its vGPU: $out"
echo "$out" | grep -qF "vGPU \"slurm-40-0\" is open only to the processes of its cgroup: pid" ||
    fail "uid 4242 outside job 40's cgroup: $out"
GPUOS_JOB_CGROUP=auto prolog 41 0 "shard:1(IDX:0)" || fail "auto without cgroups: $(cat "$T/err")"
grep -q "jobs have no cgroup of their own (ProctrackType, TaskPlugin: proctrack/linuxproc task/none)" "$T/err" &&
    ! grep -q "cgroup /" "$T/err" || fail "job 41 (proctrack/linuxproc): $(cat "$T/err")"
setpriv --reuid=4242 --regid=4242 --clear-groups timeout 20 "$C" info slurm-41-0 >/dev/null 2>&1 ||
    fail "uid 4242 refused on job 41's unbound vGPU"
GPUOS_JOB_CGROUP="/j/%u/job_%j freezer:/x_%n" prolog 42 0 "shard:1(IDX:0)" || fail "a cgroup template: $(cat "$T/err")"
grep -qF "user 4242, cgroup /j/4242/job_42 freezer:/x_gn1" "$T/err" || fail "job 42's cgroup template: $(cat "$T/err")"
for j in 40 41 42; do "$G" vgpu delete "slurm-$j-0" || fail "delete slurm-$j-0"; done

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
