#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_cudashim.sh: gpuos's libcuda.so.1 and libnvidia-ml.so.1 (issue 11) on the
# simulated device, through `gpuos run`, as real processes:
#  - a Driver API program (tests/cudashim_drv.c): allocations, copies of every
#    kind, memset D8/D16/D32 sync and async, streams, events, launches of the
#    built-in kernels (kernelParams, packed buffer, cluster), byte-exact; error
#    paths: an unimplemented entry point is CUDA_ERROR_NOT_SUPPORTED and named
#    once on stderr, an unknown name is CUDA_ERROR_NOT_FOUND, destroyed or bogus
#    handles are CUDA_ERROR_INVALID_HANDLE / _VALUE / _CONTEXT, a call before
#    cuInit is CUDA_ERROR_NOT_INITIALIZED;
#  - allocation past the vGPU's memory share: CUDA_ERROR_OUT_OF_MEMORY exactly at
#    the share; cuMemGetInfo / cuDeviceTotalMem / NVML report the share; NVML's
#    utilisation is the daemon's (busy vGPU >= 50 %, idle one <= 5 %);
#  - device attributes from the daemon's device (the chip's SMs, L2, CC);
#  - `gpuos run` errors: no daemon, unknown vGPU, no library, ambiguous vGPU;
#  - the kernel parameter layouts read from a cubin and from PTX (when nvcc is
#    here);
#  - cuGetExportTable (tests/cudashim_exports.c): every table the CUDA 13
#    runtime asks for, sizes, unknown ids and slots named once, context-local
#    storage, integrity (MD2 of RFC 1319's suite);
#  - a CUDA runtime program built by plain nvcc gets every table, then fails
#    cleanly at its module, which the simulated device cannot run (when nvcc is
#    here; docs/readme-cudashim.md, "The CUDA runtime").
#  - the Driver API call tracer (tools/cutrace) in front of our libcuda changes
#    nothing the runtime program sees, and logs each call with its answer;
#    tools/cutrace/diff.py finds an attribute answered differently.
set -u
. tests/serve_lib.sh
D="$B/tests/cudashim_drv"
need_shim

start_daemon "[device 0]
sim = default
[vgpu a]
compute = 50
memory = 64M
[vgpu b]
compute = 50
memory = 32M"

# the compatibility table of docs/readme-cudashim.md is what the code says
/usr/bin/python3 tools/gen_cudashim_compat.py --check || fail "compatibility table not current"
# and the frameworks table is what results/*/frameworks.json say
sed -n '/<!-- frameworks: generated/,/<!-- frameworks: end/p' docs/readme-cudashim.md | sed '1d;$d' > "$T/fw.doc"
/usr/bin/python3 tools/results_tables.py frameworks | sed '/^$/d' > "$T/fw.gen"
cmp -s "$T/fw.doc" "$T/fw.gen" || fail "docs/readme-cudashim.md's frameworks table is not what tools/results_tables.py frameworks prints"

# cuGetProcAddress's versions (from cudaTypedefs.h) agree with cuda.h: a base
# name's newest signature is the symbol cuda.h maps it to, but for the names
# whose newest signature cuda.h does not make the default (or names only
# through a macro: cuGraphInstantiateWithFlags)
if [ -s "$B/shim/gen/versions.inc" ]; then
    awk -F'[(), ]+' 'NR == FNR { if ($1 == "N") def[$2] = $3; next }
        { last[$2] = $4 }
        END { for (b in last) { d = (b in def) ? def[b] : "-"; if (last[b] != d) print b, last[b], d } }' \
        "$B/shim/gen/names.inc" "$B/shim/gen/versions.inc" | sort > "$T/vers"
    printf '%s\n' "cuCtxGetDevice cuCtxGetDevice_v2 cuCtxGetDevice" "cuCtxSynchronize cuCtxSynchronize_v2 cuCtxSynchronize" \
        "cuGraphInstantiate cuGraphInstantiate_v2 cuGraphInstantiateWithFlags" \
        "cuGraphInstantiateWithFlags cuGraphInstantiateWithFlags -" \
        "cuStreamGetCtx cuStreamGetCtx_v2 cuStreamGetCtx" | sort > "$T/vers.want"
    cmp -s "$T/vers" "$T/vers.want" || fail "versions.inc against names.inc: $(diff "$T/vers.want" "$T/vers")"
fi

# the Driver API program, byte-exact, with its error paths
out=$(timeout 60 "$G" run --vgpu a -- "$D" all 67108864 2>"$T/err") || { cat "$T/err"; fail "cudashim_drv all: $out"; }
[ "$out" = ok ] || fail "cudashim_drv all printed: $out"
n=$(grep -c "gpuos libcuda: cuTexObjectDestroy is not supported" "$T/err")
[ "$n" = 1 ] || fail "unimplemented cuTexObjectDestroy named $n times on stderr (want once): $(cat "$T/err")"
grep -v "cuTexObjectDestroy is not supported" "$T/err" | grep . && fail "unexpected stderr"

# the CUDA 4 era API and what cuda.h added since (tests/cudashim_legacy.c):
# kernels from image files by path, results against arithmetic done there
printf 'gpuos-builtin' > "$T/builtin.img"
printf 'SIMMOD\nvecadd=madd\n' > "$T/vecadd.img"
# and the fatbin registrations of PyTorch's libraries recorded on the H200
out=$(timeout 60 "$G" run --vgpu a -- "$B/tests/cudashim_legacy" "$T" tests/cudashim_torch_fatbins.txt 2>"$T/err") ||
    { cat "$T/err"; fail "cudashim_legacy: $out"; }
want=$(awk '!/^#/ && NF { n += $1 } END { print n }' tests/cudashim_torch_fatbins.txt)
[ "$out" = "registered $want
ok" ] || fail "cudashim_legacy printed: $out (want registered $want, ok)"
for l in "cuParamSetTexRef (texture references: the vGPU has no texture units to bind) is not supported" \
         "cuMemHostGetDevicePointer (kernels on the vGPU cannot reach this memory: registered, or its executor could not map it at this address) is not supported"; do
    [ "$(grep -cxF "gpuos libcuda: $l" "$T/err")" = 1 ] || fail "not named exactly once: $l: $(cat "$T/err")"
done

# cuGetExportTable: the runtime's private tables (no nvcc needed), without
# NVIDIA's libcuda.so.1 (a path that does not open: none, even on a GPU machine)
out=$(GPUOS_REAL_LIBCUDA=/nonexistent/libcuda.so.1 timeout 60 "$G" run --vgpu a -- "$B/tests/cudashim_exports" 2>"$T/err") ||
    { cat "$T/err"; fail "cudashim_exports: $out"; }
[ "$out" = ok ] || fail "cudashim_exports printed: $out"
for l in "cuGetExportTable {f8cff951-2146-8b4e-b9e2-fb469e7c0dd9} is not supported" \
         "cuGetExportTable {6bd5fb6c-5bf4-e74a-8987-d93912fd9df9} slot 3 is not supported" \
         "cuGetExportTable {1734dc26-800d-4745-8726-c0f1e7dd8bca} slot 4 is not supported"; do
    [ "$(grep -cxF "gpuos libcuda: $l" "$T/err")" = 1 ] || fail "not named exactly once: $l: $(cat "$T/err")"
done
# ... and with a stand-in for it (tests/fake_nvidia_cuda.c) where the shim
# would find it: by default (issue 43) never loaded, the table's slots named
# stubs; with GPUOS_CUDASHIM_LT=real cuBLASLt's table {1734dc26-...} is
# NVIDIA's, handed on (real.c)
F=$PWD/$B/tests/fake_nvidia/libcuda.so.1
out=$(GPUOS_REAL_LIBCUDA=$F CUDASHIM_TEST_FAKE=$F timeout 60 "$G" run --vgpu a -- "$B/tests/cudashim_exports" 2>"$T/err") ||
    { cat "$T/err"; fail "cudashim_exports (NVIDIA's library at hand, not loaded): $out"; }
[ "$out" = ok ] || fail "cudashim_exports (NVIDIA's library at hand, not loaded) printed: $out"
out=$(GPUOS_REAL_LIBCUDA=$F CUDASHIM_TEST_FAKE=$F GPUOS_CUDASHIM_LT=real timeout 60 "$G" run --vgpu a -- "$B/tests/cudashim_exports" 2>"$T/err") ||
    { cat "$T/err"; fail "cudashim_exports (NVIDIA's table handed on): $out"; }
[ "$out" = ok ] || fail "cudashim_exports (NVIDIA's table handed on) printed: $out"
grep -q "1734dc26.*slot" "$T/err" && fail "a slot of {1734dc26-...} named unsupported with NVIDIA's table there: $(cat "$T/err")"

# out of memory exactly at the share (32 MB in 1 MB blocks)
out=$(timeout 60 "$G" run --vgpu b -- "$D" oom 2>&1) || fail "oom: $out"
[ "$out" = "CUDA_ERROR_OUT_OF_MEMORY 33554432" ] || fail "oom on a 32M vGPU: $out"

# NVML: the vGPU's share, the daemon's utilisation; unsupported queries named
out=$(timeout 30 "$G" run --vgpu b -- "$B/tests/cudashim_nvml" 2>"$T/err") || fail "nvml: $out $(cat "$T/err")"
echo "$out" | grep -qx "count 1" || fail "nvml count: $out"
echo "$out" | grep -qx "mem_total 33554432" || fail "nvml memory total is not the share: $out"
echo "$out" | grep -qx "mem_used 0" || fail "nvml memory used: $out"
echo "$out" | grep -qx "name NVIDIA H200" || fail "nvml name: $out"
echo "$out" | grep -qx "mig_mode 0 0" || fail "nvml: a vGPU shows no MIG mode: $out"
echo "$out" | grep -qx "temperature_rc 3" || fail "nvml unsupported query must be NOT_SUPPORTED (3): $out"
grep -qx "gpuos libnvidia-ml: nvmlDeviceGetTemperature is not supported" "$T/err" || fail "nvml stderr: $(cat "$T/err")"
# the driver's version as X.Y.Z from the kernel module's file (XLA parses it); none without one
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct 28 2025\nGCC version:  gcc 12\n' > "$T/nvver"
out=$(GPUOS_NVIDIA_VERSION_FILE="$T/nvver" timeout 30 "$G" run --vgpu b -- "$B/tests/cudashim_nvml" 2>/dev/null)
echo "$out" | grep -qx "driver_version 580.159.04" || fail "nvml driver version: $out"
out=$(GPUOS_NVIDIA_VERSION_FILE="$T/none" timeout 30 "$G" run --vgpu b -- "$B/tests/cudashim_nvml" 2>/dev/null)
echo "$out" | grep -qx "driver_version_rc 3" || fail "nvml driver version without the driver's file: $out"

# NVML utilisation is the daemon's measure of the vGPU: busy while a program
# runs 10 ms kernels on it, the other vGPU idle
"$G" run --vgpu b -- "$D" sleep 3000 > "$T/sleep.out" 2>&1 &
sp=$!
sleep 1.5
ub=$("$G" run --vgpu b -- "$B/tests/cudashim_nvml" 2>/dev/null | sed -n 's/^util_gpu //p')
ua=$("$G" run --vgpu a -- "$B/tests/cudashim_nvml" 2>/dev/null | sed -n 's/^util_gpu //p')
wait $sp || fail "sleep program: $(cat "$T/sleep.out")"
[ -n "$ub" ] && [ "$ub" -ge 50 ] || fail "NVML utilisation of the busy vGPU b: '$ub' (want >= 50)"
[ -n "$ua" ] && [ "$ua" -le 5 ] || fail "NVML utilisation of the idle vGPU a: '$ua' (want <= 5)"

# device attributes are the daemon's device's (DEVICE_ATTRS): the simulated chip's
# SMs and L2 (60 MiB; the library's own compute capability 9.x table says 50 MB)
out=$("$G" run --vgpu a -- "$D" attrs 2>&1) || fail "attrs: $out"
facts=$("$G" info --sim default | sed -n 's/.*capability \([0-9.]*\), \([0-9]*\) SMs, L2 \([0-9.]*\) MiB.*/\1 \2 \3/p')
set -- $facts
want="sms $2 l2 $(awk -v m="$3" 'BEGIN { printf "%d", m * 1048576 }') cc $1"
[ "${out%% clock*}" = "$want" ] || fail "attributes: $out; the chip: $want"

# traced, a fatal signal in the program prints where it happened, then kills it as usual
out=$(GPUOS_CUDASHIM_TRACE=1 "$G" run --vgpu a -- "$D" fpe 2>&1); rc=$?
[ $rc = 136 ] || fail "a division by zero under the trace: exit $rc (want 136, SIGFPE): $out"
echo "$out" | grep -q "^gpuos libcuda: fatal signal, backtrace" || fail "no backtrace of the fatal signal: $out"
echo "$out" | grep -q "cudashim_drv(main+0x\|cudashim_drv(+0x" || fail "the backtrace names no frame of the program: $out"

# the GPCs' shape as cuBLAS asks it (clusters of 1..32 blocks at one block per
# SM): what the daemon's device measured, the same as `gpuos probe topology`
# finds by launching clusters on the same chip; none above the 16 blocks a
# cluster may have on this chip; at 3 blocks per SM (a third of the shared
# memory each), three times the SMs' clusters of one block, at least as many
# of each size as at 1 per SM, no more than the SMs' slots hold (the model
# is checked against the driver's own answers in test_gpc_clusters)
out=$("$G" run --vgpu a -- "$D" clusters 2>&1) || fail "clusters: $out"
out3=$("$G" run --vgpu a -- "$D" clusters 3 2>&1) || fail "clusters 3: $out3"
"$G" probe topology --sim default --json "$T/topo.json" >/dev/null 2>&1 || fail "probe topology"
/usr/bin/python3 - "$T/topo.json" "$out" "$out3" <<'PY' || fail "cluster occupancy differs from the chart: $out / $out3"
import json, sys
t = json.load(open(sys.argv[1]))["topology"]
def parse(s, k):
    head, vals = s.split(":")
    assert head.split() == ["clusters", "per_sm", str(k)], head
    return [int(x) for x in vals.split()]
got, got3 = parse(sys.argv[2], 1), parse(sys.argv[3], 3)
sms = sum(len(g["sms"]) for g in t["gpcs"])
assert len(got) == 32 and got[0] == sms, got
for cs, n in t["max_concurrent_clusters"].items():
    assert got[int(cs) - 1] == n, (cs, got[int(cs) - 1], n)
assert all(n > 0 for n in got[:16]) and not any(got[16:]), got  # every size up to 16 runs somewhere, none above
assert got3[0] == 3 * sms and all(got[i] <= got3[i] <= 3 * sms // (i + 1) for i in range(32)), got3
assert all(got3[i] >= got3[i + 1] for i in range(31)), got3
PY

# a call before cuInit; no daemon behind the library
LD_LIBRARY_PATH="$B/shim" "$D" noinit || fail "cuMemAlloc before cuInit must be CUDA_ERROR_NOT_INITIALIZED"
out=$(GPUOS_SOCKET="$T/none" GPUOS_VGPU=a LD_LIBRARY_PATH="$B/shim" timeout 20 "$D" all 1 2>&1) && fail "ran without a daemon"
echo "$out" | grep -q "cuInit: cannot reach gpuos serve" || fail "no-daemon message: $out"
echo "$out" | grep -q "cuInit(0) = CUDA_ERROR_NO_DEVICE" || fail "no-daemon error code: $out"

# gpuos run: clear errors
out=$("$G" run --socket "$T/none" --vgpu a -- true 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "cannot reach gpuos serve" || fail "run without daemon ($rc): $out"
out=$("$G" run --vgpu nosuch -- true 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q 'no vGPU "nosuch"' || fail "run on unknown vGPU ($rc): $out"
out=$("$G" run --libdir "$T" --vgpu a -- true 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "no gpuos libcuda.so.1 in" || fail "run without library ($rc): $out"
out=$("$G" run -- true 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "hosts 2 vGPUs: name one with --vgpu" || fail "ambiguous vGPU ($rc): $out"
"$G" run --vgpu a >/dev/null 2>&1; [ $? = 2 ] || fail "run without a program must be a usage error"
out=$("$G" run --vgpu a -- /nonexistent/prog 2>&1); rc=$?
[ $rc = 127 ] && echo "$out" | grep -q "cannot run /nonexistent/prog" || fail "missing program ($rc): $out"
# the environment the program gets
out=$("$G" run --vgpu b -- sh -c 'echo "$GPUOS_VGPU ${LD_LIBRARY_PATH%%:*}"')
[ "$out" = "b $(cd "$B/shim" && pwd -P)" ] || fail "environment: $out"

# parameter layouts of kernels with very long names (PyTorch's distribution
# kernels: ~470 characters; a reader that cut the section name short launched
# them without parameters): a cubin-shaped ELF written by tests/elf_kernel.py
long=k$(printf '%0650d' 0 | tr 0 x)
python3 tests/elf_kernel.py "$T/long.cubin" "$long" 26 "0:8,8:8,16:8,24:4,32:8,40:8" || fail "elf_kernel.py"
out=$("$B/tests/cudashim_image" "$T/long.cubin" "$long" 90)
[ "$out" = "params 6 0:8 8:8 16:8 24:4 32:8 40:8 bytes 48 regs 26 shared 0" ] || fail "layout of a 651-character kernel name: $out"
# a kernel whose .nv.info section is missing has no known layout (never "no parameters")
python3 tests/elf_kernel.py "$T/noinfo.cubin" "$long" 26 "0:8" --no-info || fail "elf_kernel.py --no-info"
out=$("$B/tests/cudashim_image" "$T/noinfo.cubin" "$long" 90)
case "$out" in "none: the cubin has no .nv.info section of kernel kxxx"*) ;; *) fail "kernel without .nv.info: $out" ;; esac

NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)}
if [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
    # parameter layouts from nvcc's cubin: mixed sizes, a struct by value
    cat > "$T/k.cu" <<'CU'
struct S { int a[5]; };
extern "C" __global__ void mixed(const float *a, char c, double d, S s, short t, float *o)
{ o[0] = a[0] + c + d + s.a[3] + t; }
CU
    "$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
        -o "$T/k.fatbin" "$T/k.cu" || fail "nvcc"
    out=$("$B/tests/cudashim_image" "$T/k.fatbin" mixed 90)
    [ "${out%% regs*}" = "params 6 0:8 8:1 16:8 24:20 44:2 48:8 bytes 56" ] || fail "layout of mixed(): $out"
    # static shared memory as the driver counts it: sm_90's cubins put the 1 KiB
    # the system reserves ahead of a kernel's own in its .nv.shared section
    # (EIATTR 0x4c); CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES leaves it out (driver 580
    # on an H200: 4 for one int, tests/gpu/progs/drv_answers.c)
    printf 'extern "C" __global__ void sh(float *o) { __shared__ float t[64]; t[threadIdx.x] = o[threadIdx.x]; __syncthreads(); o[threadIdx.x] = t[63 - threadIdx.x]; }\nextern "C" __global__ void nosh(float *o) { o[0] = 1; }\n' > "$T/sh.cu"
    "$NVCC" -cubin -arch sm_90 -o "$T/sh.cubin" "$T/sh.cu" || fail "nvcc sh"
    out=$("$B/tests/cudashim_image" "$T/sh.cubin" sh 90)
    [ "${out##* shared }" = 256 ] || fail "static shared memory of sh(): $out (want 256)"
    out=$("$B/tests/cudashim_image" "$T/sh.cubin" nosh 90)
    [ "${out##* shared }" = 0 ] || fail "static shared memory of nosh(): $out (want 0)"
    # the same from a zstd-compressed cubin (nvcc --compress-mode=size: PyTorch's
    # fatbins are compressed), and a corrupt compressed payload is refused
    "$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 --compress-mode=size -o "$T/kz.fatbin" "$T/k.cu" || fail "nvcc -compress"
    out=$("$B/tests/cudashim_image" "$T/kz.fatbin" mixed 90)
    [ "${out%% regs*}" = "params 6 0:8 8:1 16:8 24:20 44:2 48:8 bytes 56" ] || fail "layout of mixed() compressed: $out"
    /usr/bin/python3 - "$T/kz.fatbin" "$T/kbad.fatbin" <<'PY' || fail "corrupting the fatbin"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
hdr = struct.unpack_from("<H", b, 6)[0]
flags = struct.unpack_from("<Q", b, hdr + 0x28)[0]
assert flags & 0x8000, "nvcc did not compress the cubin (flags 0x%x)" % flags
eh = struct.unpack_from("<I", b, hdr + 4)[0]
for i in range(hdr + eh + 8, hdr + eh + 40):
    b[i] ^= 0x5A
open(sys.argv[2], "wb").write(b)
PY
    out=$("$B/tests/cudashim_image" "$T/kbad.fatbin" mixed 90)
    case "$out" in "none: the fatbin's zstd-compressed cubin does not inflate"*) ;; *) fail "corrupt compressed cubin: $out" ;; esac
    "$NVCC" -ptx -arch=sm_90 -o "$T/k.ptx" "$T/k.cu" || fail "nvcc -ptx"
    out=$("$B/tests/cudashim_image" "$T/k.ptx" mixed 90)
    [ "${out%% regs*}" = "params 6 0:8 8:1 16:8 24:20 44:2 48:8 bytes 56" ] || fail "PTX layout of mixed(): $out"
    out=$("$B/tests/cudashim_image" "$T/k.fatbin" nosuch 90)
    [ "$out" = "none: no kernel nosuch in the cubin" ] || fail "unknown kernel: $out"
    # a runtime-API program (static cudart): the runtime gets every private
    # table it needs (the integrity hash it recomputes matches, else it would
    # stop before loading its module); its module is loaded lazily, so its
    # allocation works, and its kernel's launch carries the module to the
    # simulated device, which cannot run it: a clear error naming that
    printf '#include <cstdio>\n__global__ void k(int *p) { *p = 1; }\nint main(){ int *p; cudaError_t a = cudaMalloc(&p, 16); k<<<1, 1>>>(p); cudaError_t e = cudaGetLastError(); printf("%%s\\n%%s\\n", cudaGetErrorName(a), cudaGetErrorName(e)); return e != 0; }\n' > "$T/rt.cu"
    "$NVCC" -o "$T/rt" "$T/rt.cu" || fail "nvcc rt"
    out=$(GPUOS_CUDASHIM_TRACE=1 timeout 30 "$G" run --vgpu a -- "$T/rt" 2>&1) && fail "runtime program ran on the simulated device: $out"
    for t in CUDART_INTERFACE TOOLS_RUNTIME_CALLBACK_HOOKS TOOLS_TLS CONTEXT_LOCAL_STORAGE CONTEXT_CHECKS INTEGRITY_CHECK; do
        echo "$out" | grep -q "cuGetExportTable .* -> $t" || fail "runtime did not get table $t: $out"
    done
    echo "$out" | grep -q "INTEGRITY slot 1 (version [0-9]*2," || fail "integrity hash not asked for: $out"
    echo "$out" | grep -q "module load: fatbin .*lazily, at its first kernel's use (used in place)" ||
        fail "the runtime's fatbin was not registered lazily, in place: $out"
    echo "$out" | grep -q "module load: the simulated device runs only builtin kernels" || fail "sim image error: $out"
    echo "$out" | grep -qx "cudaSuccess" || fail "runtime program's allocation (its module is lazy): $out"
    echo "$out" | grep -qx "cudaErrorNoKernelImageForDevice" || fail "runtime program error: $out"
    out=$(timeout 30 "$G" run --vgpu a -- "$T/rt" 2>&1)
    [ "$(echo "$out" | grep -c "module load: the simulated device")" = 1 ] || fail "sim image error not named once: $out"
    # the Driver API call tracer (tools/cutrace) in front of our libcuda: the
    # runtime program gets the same answers (its integrity hash still matches,
    # so its allocation works), and the log names each call with its answer:
    # the simulated chip's SM count, the launch that fails
    tr=$PWD/$B/shim/trace
    if [ -f "$tr/libcuda.so.1" ]; then
        timeout 30 "$G" run --vgpu a -- "$T/rt" > "$T/rt.plain" 2>/dev/null
        CUTRACE_REAL=$PWD/$B/shim/libcuda.so.1 CUTRACE_OUT=$T/ct timeout 30 "$G" run --vgpu a -- \
            sh -c 'LD_LIBRARY_PATH=$0:$LD_LIBRARY_PATH exec "$@"' "$tr" "$T/rt" > "$T/rt.traced" 2>/dev/null
        cmp -s "$T/rt.plain" "$T/rt.traced" || fail "traced runtime program: $(cat "$T/rt.traced")"
        ct=$(ls "$T"/ct.* 2>/dev/null | head -1)
        [ -n "$ct" ] || fail "no cutrace log"
        sms=$(echo "$facts" | awk '{ print $2 }')
        grep -q "^[0-9]* [0-9]* 0 cuDeviceGetAttribute@[0-9]* rc=0 a=[0-9a-f]*,10,0,[0-9a-f]* ns=[0-9]* out=$sms\$" "$ct" ||
            fail "trace lacks the SM count ($sms): $(grep cuDeviceGetAttribute "$ct" | head -3)"
        grep -q " cuGetExportTable(d4082055) .* rc=0 " "$ct" || fail "trace lacks the integrity table"
        grep -q " cuLaunchKernel[_a-z]*@[0-9a-z]* rc=209 " "$ct" || fail "trace lacks the failing launch: $(grep Launch "$ct")"
        /usr/bin/python3 tools/cutrace/diff.py "$ct" "$ct" > "$T/ct.same" || fail "a log differs from itself: $(cat "$T/ct.same")"
        sed "s/\(cuDeviceGetAttribute@[0-9]* rc=0 a=[0-9a-f]*,10,.* out=\)$sms\$/\1$((sms + 1))/" "$ct" > "$T/ct.other"
        /usr/bin/python3 tools/cutrace/diff.py "$ct" "$T/ct.other" > "$T/ct.diff" && fail "diff.py found no difference"
        grep -qx "  16: $sms / $((sms + 1))" "$T/ct.diff" || fail "diff.py: $(cat "$T/ct.diff")"
    fi
else
    echo "no nvcc: cubin layouts and the runtime program not checked"
fi
stop_daemon
echo "t_cudashim: ok"
