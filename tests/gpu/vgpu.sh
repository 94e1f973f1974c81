#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/vgpu.sh: pillar 3 on the real GPU (device machine, repository root,
# build/ carried): `gpuos serve` on GPU 0 with two vGPUs; copies of every kind
# verified byte for byte, the built-in fill kernel with clusters, memory
# shares, hostile clients, version mismatch, a dead client mid-copy, bursty
# launches of the GPU's sleep_ns kernel, clean SIGTERM. The benchmark itself is
# bench/vgpu.sh. Exit status non-zero if a check fails.
set -u
G=${GPUOS:-build/gpuos}
C=${BUILD:-build}/tests/serve_client
T=$(mktemp -d)
export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=60000 GPUOS_BUILTIN=builtin
fail=0
check() { # name, command...
    n=$1; shift
    if "$@" >"$T/out" 2>&1; then echo "ok   $n: $(tail -1 "$T/out")"; else echo "FAIL $n"; sed 's/^/    /' "$T/out"; fail=1; fi
}
cat > "$T/conf" <<CONF
socket = $T/s
[device 0]
policy = band
queue = mrq
[vgpu a]
compute = 50
memory = 10%
[vgpu b]
compute = 50
memory = 1G
CONF
"$G" serve --config "$T/conf" --verbose 2>"$T/serve.log" &
D=$!
i=0; while [ ! -S "$T/s" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$T/s" ] || { cat "$T/serve.log"; echo "FAIL daemon did not start"; exit 1; }
check info timeout 60 "$C" info a
for n in 1 4096 1000000 30000000; do check "copy $n" timeout 120 "$C" copy a $n; done
check "fill exec (clusters)" timeout 60 "$C" fill a exec
check "module from PTX bytes" timeout 60 "$C" ptx a
check "copy 300000000, 64 KB chunks" env SC_CHUNK=65536 timeout 120 "$C" copy a 300000000
check "quota b 1G" timeout 60 "$C" quota b 300000000
VGPU=a check hostile timeout 120 "$C" hostile
check version timeout 60 "$C" version
timeout 60 "$C" die a 400000000 300 >/dev/null 2>&1; echo "die client exit $? (3 expected)"
sleep 1
"$G" vgpu list
check "burst a" timeout 60 "$C" burst a 1000000 2
kill -TERM $D
i=0; while kill -0 $D 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $D 2>/dev/null; then echo "FAIL daemon ignored SIGTERM"; kill -9 $D; fail=1; else wait $D; echo "daemon exit $?"; fi
sed 's/^/    serve: /' "$T/serve.log" | tail -15
rm -rf "$T"
exit $fail
