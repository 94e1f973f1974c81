# SPDX-License-Identifier: Apache-2.0
# slurm_lib.sh: a single-node Slurm cluster on localhost for tests/t_slurm.sh and
# tools/gpu_issue25.sh (sourced after tests/serve_lib.sh: uses $T, $G, fail).
# munged, slurmctld and slurmd (Debian's slurm-wlm 22.05, or a relocated copy of
# them in $SLURM_ROOT: tools/slurm_root.sh) with their files and ports in $T,
# one node gn1 of 8 CPUs with one GPU of 100 shards (gres.conf File=/dev/null
# stands in for the device file), dist/slurm/'s Prolog, TaskProlog and Epilog
# copied into $T with a settings file pointing at the daemon's socket $T/s.
# Every wait is bounded; slurm_stop ends what slurm_start started, by pid.

# A relocated Slurm: its programs, libraries and plugins under $SLURM_ROOT.
SLURM_PLUGINDIR="" SLURM_STEPD=""
if [ -n "${SLURM_ROOT:-}" ]; then
    SLURM_ROOT=$(cd "$SLURM_ROOT" && pwd)
    export PATH="$SLURM_ROOT/usr/bin:$SLURM_ROOT/usr/sbin:$PATH"
    export LD_LIBRARY_PATH="$SLURM_ROOT/deps:$SLURM_ROOT/usr/lib/x86_64-linux-gnu/slurm-wlm:$SLURM_ROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    SLURM_PLUGINDIR="PluginDir=$SLURM_ROOT/usr/lib/x86_64-linux-gnu/slurm-wlm"
    SLURM_STEPD="-d $SLURM_ROOT/usr/sbin/slurmstepd"
fi
slurm_have() { command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 &&
    command -v jq >/dev/null 2>&1; }

# slurm_stage FILE...: the programs the jobs run, into $T/bin (the checkout may
# be closed to the jobs' users); the shim into $T/shim; the scripts into $T/slurm.
slurm_stage() {
    chmod 755 "$T"
    mkdir -p "$T/bin" "$T/shim" "$T/slurm" "$T/state" "$T/spool" "$T/w"
    chmod 1777 "$T/w"
    cp "$G" "$T/bin/gpuos"
    for f in "$@"; do cp "$f" "$T/bin/"; done
    if [ -f "$B/shim/libcuda.so.1" ]; then cp "$B/shim/libcuda.so.1" "$B/shim/libnvidia-ml.so.1" "$T/shim/"; fi
    cp dist/slurm/gpuos-prolog dist/slurm/gpuos-epilog dist/slurm/gpuos-taskprolog dist/slurm/gpuos-slurm-lib.sh \
        "$T/slurm/"
}

# slurm_user NAME: made unless it exists (removed by slurm_stop).
USERS_MADE=""
slurm_user() {
    if ! id "$1" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /bin/sh "$1" || fail "useradd $1"
        USERS_MADE="$USERS_MADE $1"
    fi
}

node_state() { scontrol show node gn1 2>&1 | tr ' ' '\n' | sed -n 's/^State=//p'; }

# our own slurmstepd processes (their environment names our slurm.conf)
our_stepds() {
    for d in /proc/[0-9]*; do
        [ "$(readlink "$d/exe" 2>/dev/null)" = "$(command -v slurmstepd || echo "$SLURM_ROOT/usr/sbin/slurmstepd")" ] || continue
        tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -qx "SLURM_CONF=$T/slurm.conf" && echo "${d#/proc/}"
    done
}

slurm_stop() {
    if [ -f "$T/slurmctld.pid" ]; then # jobs first, so that their steps end
        scancel --quiet --full -p p 2>/dev/null
        i=0; while [ -n "$(squeue -h 2>/dev/null)" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
    fi
    for p in slurmd slurmctld munged; do
        [ -f "$T/$p.pid" ] && kill "$(cat "$T/$p.pid")" 2>/dev/null
    done
    i=0
    for p in slurmd slurmctld munged; do
        while [ -f "$T/$p.pid" ] && kill -0 "$(cat "$T/$p.pid")" 2>/dev/null && [ $i -lt 50 ]; do
            i=$((i + 1)); sleep 0.1
        done
        [ -f "$T/$p.pid" ] && kill -9 "$(cat "$T/$p.pid")" 2>/dev/null
    done
    for p in $(our_stepds); do kill -9 "$p" 2>/dev/null; done
    # the cgroup directories Slurm leaves for our users (proctrack/cgroup, v1)
    for u in $USERS_MADE; do
        uid=$(id -u "$u" 2>/dev/null) || continue
        for d in /sys/fs/cgroup/*/slurm*/uid_"$uid"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
    done
    for u in $USERS_MADE; do userdel -f "$u" 2>/dev/null; done
    cleanup
}

slurm_fail() {
    echo "FAIL: $*"
    squeue -a -o '%i %u %T %r' 2>&1 | sed 's/^/  squeue: /'
    scontrol show node gn1 2>&1 | grep -E 'State|Gres|Alloc' | sed 's/^/  node: /'
    for f in "$T"/slurmd.log "$T"/slurmctld.log "$T"/gpuos-slurm.log; do
        [ -f "$f" ] && { echo "  --- $f"; tail -15 "$f" | sed 's/^/    /'; }
    done
    fail "(above)"
}

# slurm_start: the scripts' settings, munge, the cluster; waits until gn1 is idle.
slurm_start() {
    sc=$(command -v scontrol) sq=$(command -v squeue) jq=$(command -v jq)
    if [ -n "${SLURM_ROOT:-}" ]; then
        # slurmd runs the Prolog with an environment of its own: a relocated
        # scontrol, squeue and jq need their libraries named again
        for p in scontrol squeue jq; do
            printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$LD_LIBRARY_PATH" "$(command -v $p)" > "$T/bin/$p"
            chmod 755 "$T/bin/$p"
        done
        sc=$T/bin/scontrol sq=$T/bin/squeue jq=$T/bin/jq
    fi
    cat > "$T/gpuos-slurm.conf" <<EOC
GPUOS=$T/bin/gpuos
GPUOS_SOCKET=$T/s
GPUOS_SHIM_DIR=$T/shim
GPUOS_SLURM_LOG=$T/gpuos-slurm.log
SCONTROL=$sc
SQUEUE=$sq
JQ=$jq
EOC
    for s in prolog epilog taskprolog; do
        printf '#!/bin/sh\nGPUOS_SLURM_CONF=%s/gpuos-slurm.conf exec %s/slurm/gpuos-%s "$@"\n' "$T" "$T" "$s" > "$T/$s"
        chmod 755 "$T/$s"
    done
    touch "$T/gpuos-slurm.log"; chmod 666 "$T/gpuos-slurm.log"
    dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
    chmod 600 "$T/munge.key"
    munged -f --key-file="$T/munge.key" --socket="$T/munge.sock" --pid-file="$T/munged.pid" \
        --seed-file="$T/munge.seed" --log-file="$T/munged.log" || fail "munged did not start"
    port=$((20000 + $$ % 20000))
    proctrack=proctrack/linuxproc firstjob=""
    if [ "${SLURM_JOB_CGROUPS:-0}" = 1 ]; then
        proctrack=proctrack/cgroup firstjob="FirstJobId=$((100000 + $$ % 100000 * 100))"
    fi
    cat > "$T/slurm.conf" <<EOC
ClusterName=gpuostest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
$SLURM_PLUGINDIR
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=$proctrack
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu,shard
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
Prolog=$T/prolog
Epilog=$T/epilog
TaskProlog=$T/taskprolog
PrologFlags=Alloc
$firstjob
NodeName=gn1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:1,shard:100 State=UNKNOWN
PartitionName=p Nodes=gn1 Default=YES MaxTime=10 State=UP
EOC
    cat > "$T/gres.conf" <<EOC
Name=gpu File=/dev/null
Name=shard Count=100 File=/dev/null
EOC
    export SLURM_CONF="$T/slurm.conf"
    # SLURM_JOB_CGROUPS=1 (t_slurm.sh): jobs in cgroups of their own
    # (proctrack/cgroup over the host's hierarchy, whichever slurmd detects),
    # job ids from a number of this run's (the hierarchy is the host's); when
    # slurmd cannot start so, SLURM_JOB_CGROUPS=0 and proctrack/linuxproc
    started=0
    # shellcheck disable=SC2086 # SLURM_STEPD: an option and its value, or nothing
    if [ "$proctrack" = proctrack/cgroup ]; then
        # the v1 plugin where the host mounts a v1 freezer (a hybrid host),
        # else slurmd's own choice (v2)
        fz=$(awk '$3 == "cgroup" && $4 ~ /(^|,)freezer(,|$)/ { print $2; exit }' /proc/mounts)
        [ -n "$fz" ] && printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=%s\nCgroupAutomount=no\n' "${fz%/freezer}" \
            > "$T/cgroup.conf"
        if slurmd -N gn1 $SLURM_STEPD; then
            started=1
        else
            rm -f "$T/cgroup.conf"
            echo "slurm_lib: slurmd could not start with proctrack/cgroup: jobs without cgroups" >> "$T/slurmd.log"
            SLURM_JOB_CGROUPS=0
            sed -i 's#^ProctrackType=.*#ProctrackType=proctrack/linuxproc#' "$T/slurm.conf"
        fi
    fi
    slurmctld -i -c || slurm_fail "slurmctld did not start"
    # shellcheck disable=SC2086
    if [ $started = 0 ] && ! slurmd -N gn1 $SLURM_STEPD; then
        # slurmd 22.05 always starts a cgroup plugin; on a cgroup v2 host without
        # systemd's bus (a container or a bare VM image) it fails. Then: the v1
        # plugin over an empty hierarchy of our own (nothing of the host is
        # touched; proctrack/linuxproc and task/none use no cgroup), and failing
        # that the v2 plugin making its own directories (IgnoreSystemd).
        for cg in "CgroupPlugin=cgroup/v1
CgroupMountpoint=$T/cgroup
CgroupAutomount=no" "CgroupPlugin=cgroup/v2
IgnoreSystemd=yes"; do
            mkdir -p "$T/cgroup"
            printf '%s\n' "$cg" > "$T/cgroup.conf"
            echo "slurm_lib: slurmd again with cgroup.conf: $(echo "$cg" | tr '\n' ' ')" >> "$T/slurmd.log"
            slurmd -N gn1 $SLURM_STEPD && break
            rm -f "$T/cgroup.conf"
        done
        [ -f "$T/cgroup.conf" ] || slurm_fail "slurmd did not start"
    fi
    i=0
    until [ "$(node_state)" = IDLE ]; do
        i=$((i + 1)); [ $i -gt 300 ] && slurm_fail "node gn1 not idle after 30 s: $(node_state)"
        sleep 0.1
    done
}
