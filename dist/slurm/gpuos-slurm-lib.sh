# SPDX-License-Identifier: Apache-2.0
# gpuos-slurm-lib.sh: shared by gpuos's Slurm Prolog, TaskProlog and Epilog
# (sourced; POSIX sh). Reads the settings (gpuos-slurm.conf) and logs.
GPUOS_SLURM_CONF=${GPUOS_SLURM_CONF:-@SYSCONFDIR@/gpuos/slurm.conf}
if [ -r "$GPUOS_SLURM_CONF" ]; then
    # shellcheck disable=SC1090
    . "$GPUOS_SLURM_CONF"
fi
GPUOS=${GPUOS:-$(command -v gpuos || echo @BINDIR@/gpuos)}
GPUOS_SOCKET=${GPUOS_SOCKET:-/run/gpuos/gpuos.sock}
# make install puts libcuda.so.1 in LIBDIR/gpuos: ../lib/gpuos beside the binary
GPUOS_SHIM_DIR=${GPUOS_SHIM_DIR:-$(cd "$(dirname "$GPUOS")/../lib/gpuos" 2>/dev/null && pwd || echo @LIBDIR@/gpuos)}
GPUOS_SHARDS_PER_GPU=${GPUOS_SHARDS_PER_GPU:-}
GPUOS_DEVICE_MAP=${GPUOS_DEVICE_MAP:-}
GPUOS_VGPU_PREFIX=${GPUOS_VGPU_PREFIX:-slurm}
GPUOS_JOB_CGROUP=${GPUOS_JOB_CGROUP:-auto}
GPUOS_SLURM_LOG=${GPUOS_SLURM_LOG:-}
SCONTROL=${SCONTROL:-scontrol}
SQUEUE=${SQUEUE:-squeue}
JQ=${JQ:-jq}
export GPUOS_SOCKET

# log LINE: stderr, syslog when there is one, the log file when set.
log() {
    line="gpuos-slurm $GOS_SCRIPT: job ${SLURM_JOB_ID:-?}: $*"
    echo "$line" >&2
    if [ -n "$GPUOS_SLURM_LOG" ]; then
        echo "$(date -u +%FT%TZ) $line" >> "$GPUOS_SLURM_LOG" 2>/dev/null
    fi
    command -v logger >/dev/null 2>&1 && logger -t gpuos-slurm -- "$line" 2>/dev/null
    return 0
}

# lookup KEY "K=V K=V ...": V of K, else nothing.
lookup() {
    for kv in $2; do
        [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return 0; }
    done
    return 0
}

# indices LIST: "0,2-3" -> "0 2 3" (Slurm's GPU index lists).
indices() {
    echo "$1" | tr ',' '\n' | while read -r r; do
        case $r in
        *-*) i=${r%-*}; while [ "$i" -le "${r#*-}" ]; do echo "$i"; i=$((i + 1)); done ;;
        '') ;;
        *) echo "$r" ;;
        esac
    done | tr '\n' ' ' | sed 's/ $//'
}

# job_vgpus: the names of this job's vGPUs on the daemon (one a line); the
# error and status 1 when the daemon cannot be asked.
job_vgpus() {
    l=$("$GPUOS" vgpu list --socket "$GPUOS_SOCKET" 2>&1) || { echo "$l"; return 1; }
    echo "$l" | awk -v p="$GPUOS_VGPU_PREFIX-$SLURM_JOB_ID-" 'NR > 1 && index($1, p) == 1 { print $1 }'
}
