#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/frameworks.sh: the lent machine's frameworks and CUDA 4 era programs,
# unmodified, natively and under `gpuos run` on a 70 % vGPU (isolation =
# process), side by side in one run (issue 21). Device machine, repository root,
# build/ present (built where cuda.h is), python3 with PyTorch, Triton, CuPy, JAX.
#   FW_ONLY="torch_basic torch_mlp ..."   the programs to run (default: all, in
#                                        the order below, while FW_BUDGET_S lasts)
#   FW_STEPS=100                          training steps of torch_mlp / torch_cnn whose
#                                        losses are compared; FW_TIMED_STEPS=500 more
#                                        steps are timed (fw_torch.py)
#   FW_BUDGET_S=330                       no program is started that could end later
#   FW_KEEP_ERR=1                         every gpuos run's whole stderr in $OUT/err/
#   FW_TRACE=2                            GPUOS_CUDASHIM_TRACE of the gpuos runs (default 1)
#   FW_RENATIVE="torch_matmul ..."       programs run natively once more after their gpuos
#                                        run (default: the training loops and the
#                                        products, which the GPU's power limit slows
#                                        as it warms): the ratio is
#                                        over the mean of both native runs, and
#                                        native_after is in the JSON
#   FW_PROBE_EXPORTS=1                    the private tables cuBLASLt asks, natively and
#                                        under gpuos run (tests/gpu/progs/drv_exports.c,
#                                        $OUT/exports.txt), and the slots of those gpuos does
#                                        not serve, called blind (drv_tables.c, $OUT/tables.txt)
#   FW_PROBE_TRITON=1                     after triton_vadd's native run: each cubin
#                                        Triton compiled, as the real driver and
#                                        as gpuos's image reader see it ($OUT/triton/)
# Per program: native stdout+stderr, gpuos stdout, gpuos stderr with
# GPUOS_CUDASHIM_TRACE=1 (the Driver API calls that failed, the export tables
# and entry points asked for). "RESULT" lines are compared (torch losses to 1e-3
# relative), "TIME key value" lines are the figures (ratio = gpuos / native).
# Writes $OUT/frameworks.json, $OUT/frameworks.log (every output),
# $OUT/trace.txt (per program: the distinct shim lines of the gpuos run) and
# prints a table last.
set -u
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
OUT=${OUT:-out}
P="$B/gpu-progs"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_INC=$(dirname "$(dirname "$NVCC")")/include
. tests/gpu/daemon_lib.sh
mkdir -p "$OUT" "$P"
LOG="$OUT/frameworks.log"
TR="$OUT/trace.txt"
: > "$LOG"
: > "$TR"
START=$(date +%s)
BUDGET=${FW_BUDGET_S:-330}
log() { echo "$*" | tee -a "$LOG"; }

nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$LOG"
echo "commit ${GPUOS_COMMIT:-unknown}, $(date -u +%Y-%m-%dT%H:%MZ), FW_STEPS=${FW_STEPS:-100}" | tee -a "$LOG"
log "== build the CUDA 4 era program ($NVCC)"
"$NVCC" -cubin -arch sm_90 -o "$P/legacy.cubin" tests/gpu/progs/legacy.cu >>"$LOG" 2>&1 || log "FAIL nvcc legacy.cu"
cc -O2 -std=c11 -D_GNU_SOURCE -Wno-deprecated-declarations -I"$CUDA_INC" -Itests/gpu/progs -o "$P/drv_legacy" \
    tests/gpu/progs/drv_legacy.c -L"$B/shim" -lcuda >>"$LOG" 2>&1 || log "FAIL cc drv_legacy"
if [ "${FW_PROBE_TRITON:-0}" = 1 ]; then
    export TRITON_CACHE_DIR="$T/triton-cache"
    cc -O2 -std=c11 -D_GNU_SOURCE -I"$CUDA_INC" -Itests/gpu/progs -o "$P/drv_paraminfo" tests/gpu/progs/drv_paraminfo.c -lcuda >>"$LOG" 2>&1 ||
        log "FAIL cc drv_paraminfo"
fi
# Triton's cubins as the real driver and as gpuos's image reader see them
probe_triton() {
    mkdir -p "$OUT/triton"
    find "$TRITON_CACHE_DIR" -name '*.cubin' | while read -r c; do
        k=$(basename "$c" .cubin)
        cp "$c" "$OUT/triton/"
        cp "$(dirname "$c")/$k.json" "$OUT/triton/" 2>/dev/null
        { echo "=== $k (real driver)"; "$P/drv_paraminfo" "$c" "$k" 2>&1
          echo "=== $k (gpuos image reader)"; "$B/tests/cudashim_image" "$c" "$k" 90 2>&1; } >> "$OUT/triton/probe.txt"
    done
    log "--- Triton cubins probed: $(grep -c '^=== .*real' "$OUT/triton/probe.txt" 2>/dev/null)"
}
# what PyTorch's driver layer asks of NVML (it asserts on each symbol)
lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
[ -n "$lib" ] && { echo "--- nvml symbols named in torch's libraries"; strings "$lib"/libc10_cuda.so "$lib"/libtorch_cuda.so 2>/dev/null |
    grep -E '^nvml[A-Za-z_0-9]+$' | sort -u | tr '\n' ' '; echo; } >> "$LOG"

gpu_daemon "$(pair_70_30 "${FW_SIM:+sim = default}")" "$T/serve.log"

# A hostile tenant on p30 while NAME_hostile runs on p70: long spinning kernels
# (50 ms built-in sleeps, 4 per synchronise), faulting kernels and kernels that
# read another tenant's addresses, until it is stopped; its faults must be its own.
SC="$B/tests/serve_client"
hostile_start() {
    "$SC" burst p30 50000000 600 4 > "$T/hostile.burst" 2>&1 &
    HB=$!
    faults_start "$T/hostile.faults"
    sleep 1
}
hostile_stop() {
    faults_stop
    kill "$HB" 2>/dev/null
    wait "$HB" 2>/dev/null
    { echo "--- hostile tenant (p30): $(grep -c 'fault rc' "$T/hostile.faults") faulting launches, $(grep -c 'xread rc' "$T/hostile.faults") foreign reads"
      sort "$T/hostile.faults" | uniq -c | sort -rn | head -8
      echo "--- faults per vGPU"; "$G" vgpu list --json -; } >> "$LOG"
}

if [ "${FW_PROBE_EXPORTS:-0}" = 1 ]; then
    cc -O2 -std=c11 -D_GNU_SOURCE -I"$CUDA_INC" -Itests/gpu/progs -o "$P/drv_exports" tests/gpu/progs/drv_exports.c -lcuda >>"$LOG" 2>&1 ||
        log "FAIL cc drv_exports"
    { echo "=== native"; "$P/drv_exports" 2>&1; echo "=== gpuos"; "$G" run --vgpu p70 -- "$P/drv_exports" 2>&1; } \
        > "$OUT/exports.txt"
    log "--- private tables: $(grep -c bytes_written "$OUT/exports.txt") answers in $OUT/exports.txt"
    cc -O2 -std=c11 -D_GNU_SOURCE -I"$CUDA_INC" -Itests/gpu/progs -o "$P/drv_tables" tests/gpu/progs/drv_tables.c -lcuda -ldl >>"$LOG" 2>&1 &&
        timeout 60 "$P/drv_tables" > "$OUT/tables.txt" 2>&1
fi

# name|timeout|command (run natively and under gpuos run --vgpu p70)
cat > "$T/progs" <<EOF
torch_basic|45|python3 tests/gpu/progs/fw_torch.py basic
drv_legacy|20|$P/drv_legacy $P/legacy.cubin
torch_mlp|50|python3 tests/gpu/progs/fw_torch.py mlp
torch_cnn|50|python3 tests/gpu/progs/fw_torch.py cnn
torch_matmul|40|python3 tests/gpu/progs/fw_torch.py matmul
torch_graph|30|python3 tests/gpu/progs/fw_torch.py graph
torch_oom|40|python3 tests/gpu/progs/fw_torch.py oom
torch_mlp_hostile|50|python3 tests/gpu/progs/fw_torch.py mlp
triton_vadd|50|python3 tests/gpu/progs/fw_other.py triton_vadd
cupy_raw|30|python3 tests/gpu/progs/fw_other.py cupy_raw
cupy_hostfn|30|python3 tests/gpu/progs/fw_other.py cupy_hostfn
cupy_matmul|30|python3 tests/gpu/progs/fw_other.py cupy_matmul
triton_matmul|40|python3 tests/gpu/progs/fw_other.py triton_matmul
jax_matmul|40|python3 tests/gpu/progs/fw_other.py jax_matmul
EOF
ONLY=${FW_ONLY:-}
echo "{\"commit\": \"${GPUOS_COMMIT:-unknown}\", \"programs\": [" > "$T/json"
first=1
while IFS='|' read -r name to cmd; do
    [ -z "$ONLY" ] || case " $ONLY " in *" $name "*) ;; *) continue ;; esac
    el=$(( $(date +%s) - START ))
    runs=2
    case " ${FW_RENATIVE-torch_mlp torch_cnn torch_matmul triton_matmul cupy_matmul jax_matmul} " in *" $name "*) runs=3 ;; esac
    [ $((el + runs * to)) -le "$BUDGET" ] || { log "$name: skipped (budget: ${el}s elapsed, $((runs * to))s more needed)"; continue; }
    timeout "$to" $cmd > "$T/$name.native" 2>&1; rn=$?
    [ "$name" = triton_vadd ] && [ "${FW_PROBE_TRITON:-0}" = 1 ] && probe_triton
    case $name in *_hostile) hostile_start ;; esac
    GPUOS_CUDASHIM_TRACE=${FW_TRACE:-1} timeout "$to" "$G" run --vgpu p70 -- $cmd > "$T/$name.gpuos" 2> "$T/$name.err"; rg=$?
    case $name in *_hostile) hostile_stop ;; esac
    : > "$T/$name.native2"
    [ "$runs" = 3 ] && { timeout "$to" $cmd > "$T/$name.native2" 2>&1 || : > "$T/$name.native2"; }
    [ "${FW_KEEP_ERR:-0}" = 1 ] && { mkdir -p "$OUT/err"; gzip -c "$T/$name.err" > "$OUT/err/$name.err.gz"; }
    { echo "=== $name native (rc $rn)"; cat "$T/$name.native" | tail -40
      [ -s "$T/$name.native2" ] && { echo "=== $name native, again after gpuos"; tail -40 "$T/$name.native2"; }
      echo "=== $name gpuos (rc $rg)"; cat "$T/$name.gpuos" | tail -40
      echo "--- $name gpuos stderr (no cuGetProcAddress / fatbin / local storage lines), last 80"
      grep -v 'cuGetProcAddress\|module load: fatbin of .*sm_90\|CONTEXT_LOCAL_STORAGE' "$T/$name.err" | tail -80; } >> "$LOG"
    { echo "=== $name"; grep -v 'cuGetProcAddress\|module load: fatbin of .*sm_90\|CONTEXT_LOCAL_STORAGE' "$T/$name.err" |
        sed 's/0x[0-9a-f]*/0x./g' | sort | uniq -c | sort -rn | head -150; } >> "$TR"
    python3 - "$name" "$rn" "$rg" "$T/$name.native" "$T/$name.gpuos" "$first" "$T/$name.native2" >> "$T/json" <<'PY'
import json, sys
name, rn, rg, fn, fg, first, fn2 = sys.argv[1:]
def parse(f):
    res, tim = [], {}
    for l in open(f, errors="replace"):
        if l.startswith("RESULT "):
            res.append(l[7:].strip())
        elif l.startswith("TIME "):
            k, v = l.split()[1:3]
            try:
                tim[k] = float(v)
            except ValueError:
                pass
        elif " mismatches=" in l or " hash=" in l or " total=" in l:
            res.append(l.strip())
    return res, tim
rn_, tn = parse(fn)
rg_, tg = parse(fg)
sys.path.insert(0, "tests/gpu/progs")
from fw_results import close
match = int(rn) == 0 and int(rg) == 0 and len(rn_) > 0 and len(rn_) == len(rg_) and all(close(a, b) for a, b in zip(rn_, rg_))
e = {"name": name, "native_rc": int(rn), "gpuos_rc": int(rg), "match": match, "native": tn, "gpuos": tg,
     "results_native": rn_, "results_gpuos": rg_}
import os
def is_error(l):
    if "cuGetProcAddress" in l or "export table:" in l:  # the trace's own lines name functions, not failures
        return False
    return ("Error" in l or "error:" in l or "is not supported" in l or "CUDA_ERROR" in l or " failed" in l or
            "Floating point exception" in l or "fatal signal" in l or "Segmentation fault" in l)
errs = [l.strip() for l in open(os.path.splitext(fg)[0] + ".err", errors="replace")
        if is_error(l)] if os.path.exists(os.path.splitext(fg)[0] + ".err") else []
if errs:
    e["error"] = errs[-1][:200]
_, tn2 = parse(fn2)
if tn2:
    e["native_after"] = tn2
k = next((k for k in ("steps_per_s", "tflops", "vadd_GBps", "raw_launches_per_s") if k in tn), None)
if k:
    e["figure"] = k
    if k in tg and tn[k]:
        # over the mean of the native runs before and after (the GPU warms
        # while it runs the products: the second native run is the slower)
        nat = (tn[k] + tn2[k]) / 2 if k in tn2 else tn[k]
        e["ratio"] = round(tg[k] / nat, 4)
        if k in tn2:
            e["ratio_first"] = round(tg[k] / tn[k], 4)
print(("" if first == "1" else ",") + json.dumps(e))
PY
    first=0
    log "$name: native rc $rn, gpuos rc $rg ($(( $(date +%s) - START ))s)"
done < "$T/progs"
echo ']}' >> "$T/json"
cp "$T/serve.log" "$OUT/serve.log" 2>/dev/null
python3 - "$T/json" "$OUT/frameworks.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
json.dump(d, open(sys.argv[2], "w"), indent=1)
print("%-14s %6s %6s %6s %-18s %10s %10s %7s" % ("program", "rc_nat", "rc_gos", "match", "figure", "native", "gpuos", "ratio"))
for e in d["programs"]:
    k = e.get("figure", "")
    print("%-14s %6d %6d %6s %-18s %10s %10s %7s" % (e["name"], e["native_rc"], e["gpuos_rc"], e["match"], k,
          e["native"].get(k, "-"), e["gpuos"].get(k, "-"), e.get("ratio", "-")))
PY
