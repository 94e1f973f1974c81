#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/bf16_ab.sh: PyTorch's bf16 8192^3 product natively and under `gpuos
# run` on a 70 % vGPU (isolation = process), with cuBLASLt's private table
# {1734dc26-...} handed on to NVIDIA's (GPUOS_CUDASHIM_LT=real, the way "gpuos")
# and answered by named stubs (the default since issue 43, the way "stub"),
# round-robin (issue 21: the product at 0.94-0.99 x native with the stubs). Device machine, repository root, build/ present.
#   BF_ROUNDS=3           rounds of native, gpuos, gpuos with stubs
#   FW_MATMUL_REPS=200    products per timed window (fw_torch.py matmul)
# First, one product each way with CUBLASLT_LOG_LEVEL=5: the algorithm cuBLASLt
# chose ($OUT/bf16-lt-{native,gpuos,stub}.log; "algo" lines compared).
# Writes $OUT/bf16_ab.log and prints, per round and way, TFLOP/s (wall and
# events), then the medians and their ratios.
set -u
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
OUT=${OUT:-out}
. tests/gpu/daemon_lib.sh
mkdir -p "$OUT"
L="$OUT/bf16_ab.log"
: > "$L"
gpu_daemon "$(pair_70_30)" "$T/serve.log"
P="python3 tests/gpu/progs/fw_torch.py matmul"
way() { # native | gpuos | stub, then the command's environment
    w=$1; shift
    case $w in
    native) env "$@" timeout 120 $P ;;
    gpuos) env GPUOS_CUDASHIM_LT=real "$@" timeout 120 "$G" run --vgpu p70 -- $P ;;
    stub) env "$@" timeout 120 "$G" run --vgpu p70 -- $P ;;
    esac
}
for w in native gpuos stub; do
    way "$w" FW_MATMUL_REPS=1 CUBLASLT_LOG_LEVEL=5 GPUOS_CUDASHIM_TRACE=1 > "$OUT/bf16-lt-$w.log" 2>&1
    echo "== $w: cuBLASLt's choice (algo lines of the last product)" >> "$L"
    grep -o 'algo=[^]]*]' "$OUT/bf16-lt-$w.log" | sort | uniq -c | sort -rn | head -5 >> "$L"
    grep -h "1734dc26\|NVIDIA's" "$OUT/bf16-lt-$w.log" | sort | uniq -c | head -8 >> "$L"
done
export FW_MATMUL_REPS=${FW_MATMUL_REPS:-200}
for r in $(seq "${BF_ROUNDS:-3}"); do
    for w in native gpuos stub; do
        o=$(way "$w" 2>>"$T/err.$w")
        t=$(echo "$o" | awk '/^TIME tflops /{print $3}')
        e=$(echo "$o" | awk '/^TIME tflops_events /{print $3}')
        c=$(echo "$o" | awk '/^RESULT matmul_checksum/{print $3}')
        echo "round $r $w tflops ${t:-none} events ${e:-none} checksum ${c:-none}" | tee -a "$L"
    done
done
tail -5 "$T/err.gpuos" "$T/err.stub" >> "$L" 2>/dev/null
python3 - "$L" <<'PY' | tee -a "$L"
import statistics, sys
v = {}
for l in open(sys.argv[1]):
    w = l.split()
    if len(w) >= 8 and w[0] == "round" and w[4] != "none":
        v.setdefault(w[2], []).append((float(w[4]), float(w[6]), w[8]))
med = {k: (statistics.median(x[0] for x in r), statistics.median(x[1] for x in r)) for k, r in v.items()}
for k, (t, e) in med.items():
    print("median %-6s %7.1f TFLOP/s (events %7.1f), runs %s" % (k, t, e, " ".join("%.1f" % x[0] for x in v[k])))
if "native" in med:
    for k in ("gpuos", "stub"):
        if k in med:
            print("ratio %s / native: %.3f (events %.3f)" % (k, med[k][0] / med["native"][0], med[k][1] / med["native"][1]))
sums = {x[2] for r in v.values() for x in r}
print("checksums equal:", len(sums) == 1, sorted(sums))
PY
