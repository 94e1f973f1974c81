#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_cdi.sh: a vGPU in a container (issue 43.5; `gpuos cdi`, docs/readme-vgpu.md
# "Containers"), on the simulated device, with Debian's podman and a root
# filesystem built here from the host's files (no image, no registry):
#  - `gpuos cdi` writes a CDI 0.5.0 specification that validates against
#    schemas/cdi.schema.json: one device per vGPU the daemon lists (or per
#    --vgpu), the socket and gpuos's libcuda.so.1 / libnvidia-ml.so.1 mounted,
#    GPUOS_VGPU per device; a bad --kind or --vgpu is a usage error (exit 2);
#  - podman --device KIND=mine runs the unmodified Driver-API program
#    tests/cudashim_drv in the container: byte-exact on vGPU "mine", which is
#    bound to the container's cgroup parent (cgroup =), with no /dev/nvidia*;
#  - the same container naming vGPU "other" (bound elsewhere) is refused, and a
#    container under another cgroup parent given "mine" is refused.
# SKIPs, saying why, without root, podman or gpuos's libcuda.so.1 (no cuda.h at
# build time), or when podman cannot run a container here (its default runtime,
# then runc, are tried: crun refuses a hybrid cgroup host).
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: $(basename "$0") needs root (podman, cgroups)"; exit 0; }
command -v podman >/dev/null 2>&1 || { echo "SKIP: $(basename "$0"): no podman (apt-get install podman)"; exit 0; }
. tests/serve_lib.sh
need_shim
DRV="$B/tests/cudashim_drv"
[ -x "$DRV" ] || { echo "SKIP: $(basename "$0"): no $DRV"; exit 0; }
t0=$(date +%s)
KIND="gpuos.io/vgpu-t$$"
SPEC="/var/run/cdi/gpuos-t$$.json"
PARENT="/gpuos-cdi-$$" ELSEWHERE="/gpuos-cdi-x-$$"
cdi_cleanup() {
    rm -f "$SPEC"
    [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
    for p in "$PARENT" "$ELSEWHERE"; do
        for d in /sys/fs/cgroup/*"$p" /sys/fs/cgroup/*/*"$p"; do
            [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
    done
    cleanup
}
trap cdi_cleanup EXIT

# the root filesystem: sh, the program and the libraries they need (not libcuda)
R="$T/root"
mkdir -p "$R/bin" "$R/dev" "$R/proc" "$R/sys" "$R/tmp" "$R/run"
cp /bin/sh "$DRV" "$R/bin/"
for l in $( (ldd /bin/sh; ldd "$DRV") | grep -o '/[^ ]*' | sort -u); do cp --parents -L "$l" "$R/"; done

# podman: a runtime that can start a container here (ulimits at most the hard
# ones, which this host's runtimes may not raise)
RUN="podman --cgroup-manager=cgroupfs run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
why=""
for rt in "" runc; do
    [ -n "$rt" ] && { command -v "$rt" >/dev/null 2>&1 || continue; }
    if out=$($RUN ${rt:+--runtime $rt} --cgroup-parent="$ELSEWHERE" --rootfs "$R" /bin/sh -c 'exit 0' 2>&1); then
        RUN="$RUN ${rt:+--runtime $rt}"
        why=""
        break
    fi
    why="$why${why:+; }${rt:-default runtime}: $(echo "$out" | tail -1)"
done
[ -z "$why" ] || { echo "SKIP: $(basename "$0"): podman cannot run a container here ($why)"; exit 0; }

start_daemon "socket_mode = 0666
[device 0]
sim = default
[vgpu mine]
compute = 50
memory = 10%
cgroup = $PARENT
[vgpu other]
compute = 50
memory = 10%
cgroup = /gpuos-cdi-nowhere-$$"

# the specification
mkdir -p /var/run/cdi
"$G" cdi --kind "$KIND" --json "$SPEC" || fail "gpuos cdi"
$PY tests/schema_check.py schemas/cdi.schema.json "$SPEC" >/dev/null 2>&1 ||
    fail "the CDI spec against its schema: $($PY tests/schema_check.py schemas/cdi.schema.json "$SPEC" 2>&1)"
$PY - "$SPEC" "$KIND" "$T/s" "$B/shim" <<'EOF' || fail "the CDI spec: $(cat "$SPEC")"
import json, os, sys
s = json.load(open(sys.argv[1]))
assert s["kind"] == sys.argv[2], s["kind"]
assert [(d["name"], d["containerEdits"]["env"]) for d in s["devices"]] == \
    [("mine", ["GPUOS_VGPU=mine"]), ("other", ["GPUOS_VGPU=other"])], s["devices"]
m = {x["containerPath"]: x["hostPath"] for x in s["containerEdits"]["mounts"]}
assert m["/run/gpuos/gpuos.sock"] == os.path.realpath(sys.argv[3]), m
lib = os.path.realpath(sys.argv[4])
assert m["/usr/lib/x86_64-linux-gnu/libcuda.so.1"] == lib + "/libcuda.so.1", m
assert m["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"] == lib + "/libnvidia-ml.so.1", m
assert "GPUOS_SOCKET=/run/gpuos/gpuos.sock" in s["containerEdits"]["env"]
EOF
[ "$("$G" cdi --vgpu a.1 --vgpu b_2 --json - | $PY -c 'import json,sys; print(" ".join(d["name"] for d in json.load(sys.stdin)["devices"]))')" = "a.1 b_2" ] ||
    fail "gpuos cdi --vgpu a.1 --vgpu b_2"
for bad in "--kind nokind" "--kind a/b/c" "--vgpu -x" "--vgpu a/b" "--container-socket rel"; do
    # shellcheck disable=SC2086
    out=$("$G" cdi $bad 2>&1); rc=$?
    [ $rc = 2 ] && [ "$(echo "$out" | wc -l)" = 1 ] || fail "gpuos cdi $bad: exit $rc: $out"
done

# the container given "mine": the program byte-exact on it, no device node
q=$(vgpu_field mine mem_quota)
out=$($RUN --cgroup-parent="$PARENT" --device "$KIND=mine" --rootfs "$R" /bin/sh -c \
    'for f in /dev/nvidia*; do [ -e "$f" ] && echo "device node $f"; done; exec /bin/cudashim_drv all "$1"' sh "$q" 2>&1) ||
    fail "cudashim_drv all in the container on mine: $out"
[ "$(echo "$out" | grep -v "cuTexObjectDestroy is not supported")" = ok ] || fail "the container on mine: $out"
# naming a vGPU it was not given
out=$($RUN --cgroup-parent="$PARENT" --device "$KIND=mine" --rootfs "$R" /bin/sh -c \
    'GPUOS_VGPU=other exec /bin/cudashim_drv attrs' 2>&1) && fail "the container opened vGPU other: $out"
echo "$out" | grep -q 'vGPU "other" is open only to the processes of its cgroup: pid [0-9]* is in '"$PARENT"'/libpod-' ||
    fail "the container on other: $out"
# a container elsewhere, given mine
out=$($RUN --cgroup-parent="$ELSEWHERE" --device "$KIND=mine" --rootfs "$R" /bin/cudashim_drv attrs 2>&1) &&
    fail "a container under $ELSEWHERE opened mine: $out"
echo "$out" | grep -q "vGPU \"mine\" is open only to the processes of its cgroup: pid [0-9]* is in $ELSEWHERE/libpod-.*, outside $PARENT" ||
    fail "a container under $ELSEWHERE on mine: $out"
stop_daemon
echo "t_cdi: ok ($(($(date +%s) - t0)) s)"
