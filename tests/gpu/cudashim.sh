#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/cudashim.sh: unmodified CUDA programs on vGPUs of the real GPU through
# gpuos's libcuda.so.1 (`gpuos run`; issue 11, docs/readme-cudashim.md). Device
# machine, repository root, build/ carried (built where cuda.h is). Needs nvcc
# (the programs are built here, as their users build them) and the GPU.
#   - Driver API programs (tests/gpu/progs/drv_*.c + kernels.cu as a fatbin):
#     vector add, tiled matrix multiply, four streams with events and async
#     copies, a cluster launch, every device attribute, out of memory; each run
#     natively and through `gpuos run`, stdout compared (identical expected except
#     drv_attrs and drv_oom, whose differences are the point: reported);
#   - matrix multiply timed natively and through gpuos (wall time of 20 launches);
#   - two copies of the matrix multiply at once on vGPUs of 70 and 30: shares by
#     the daemon (compute_ns) and by the programs' own launch counts;
#   - NVML (tests/cudashim_nvml) natively and on a vGPU;
#   - the CUDA runtime: tests/gpu/progs/rt_vadd.cu (plain nvcc, static cudart)
#     and a PyTorch probe, natively and through gpuos run (first missing entry
#     point named);
# Writes $OUT/cudashim.json (+ cudashim.log: every output) and prints a table.
# CUDASHIM_ONLY="ci attrs ..." runs only those parts (ci attrs progs timing shares
# nvml runtime torch); results then go to cudashim-<parts>.json.
# CUDASHIM_SIM=1 runs the script's logic on the simulated device (no kernels of
# the programs run there: only a check of the script itself).
# Exit status non-zero if a check that should hold fails.
set -u
B=${BUILD:-build}
G=${GPUOS:-$B/gpuos}
OUT=${OUT:-out}
P="$B/gpu-progs"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_INC=$(dirname "$(dirname "$NVCC")")/include
T=$(mktemp -d)
R="$T/res" # key<TAB>value lines, assembled into JSON at the end
mkdir -p "$OUT" "$P"
: > "$R"
LOG="$OUT/cudashim.log"
: > "$LOG"
fail=0
ONLY=${CUDASHIM_ONLY:-}
want() { [ -z "$ONLY" ] || case " $ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
put() { printf '%s\t%s\n' "$1" "$2" >> "$R"; }
log() { echo "$*" | tee -a "$LOG"; }
D=
cleanup() { [ -n "$D" ] && kill -TERM "$D" 2>/dev/null; sleep 1; [ -n "$D" ] && kill -9 "$D" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

[ -f "$B/shim/libcuda.so.1" ] || { echo "FAIL: $B/shim/libcuda.so.1 not built"; exit 1; }
log "== build the programs ($NVCC)"
"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -o "$P/kernels.fatbin" tests/gpu/progs/kernels.cu >>"$LOG" 2>&1 ||
    { log "FAIL nvcc kernels"; exit 1; }
for c in drv_vadd drv_matmul drv_streams drv_cluster drv_attrs drv_oom; do
    cc -O2 -std=c11 -D_GNU_SOURCE -I"$CUDA_INC" -o "$P/$c" "tests/gpu/progs/$c.c" -L"$B/shim" -lcuda >>"$LOG" 2>&1 ||
        { log "FAIL cc $c"; exit 1; }
done
if want runtime; then
    for c in rt_vadd rt_streams rt_gdev; do # plain nvcc, as users build (static cudart, sm_75 + PTX)
        "$NVCC" -O2 -o "$P/$c" "tests/gpu/progs/$c.cu" >>"$LOG" 2>&1 || { log "FAIL nvcc $c"; exit 1; }
    done
fi

cat > "$T/conf" <<CONF
socket = $T/s
[device 0]
${CUDASHIM_SIM:+sim = default}
policy = band
queue = mrq
[vgpu solo]
compute = 100
memory = 30%
[vgpu p70]
compute = 70
memory = 20%
[vgpu p30]
compute = 30
memory = 10%
CONF
export GPUOS_SOCKET="$T/s" GPUOS_TIMEOUT_MS=120000
"$G" serve --config "$T/conf" 2>"$T/serve.log" &
D=$!
i=0; while [ ! -S "$T/s" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -S "$T/s" ] || { cat "$T/serve.log"; log "FAIL daemon did not start"; exit 1; }
"$G" vgpu list --json - > "$T/vgpus.json"

# native vs gpuos: stdout compared, stderr kept in the log
both() { # name vgpu program args...
    name=$1 vg=$2; shift 2
    timeout 120 "$@" > "$T/$name.native" 2> "$T/$name.native.err"; rn=$?
    GPUOS_CUDASHIM_TRACE=${TRACE:-0} timeout 120 "$G" run --vgpu "$vg" -- "$@" > "$T/$name.gpuos" 2> "$T/$name.gpuos.err"; rg=$?
    for k in native gpuos; do
        { echo "--- $name $k"; cat "$T/$name.$k"; grep -v cuGetProcAddress "$T/$name.$k.err" | sed 's/^/  stderr: /' | head -60; } >> "$LOG"
    done
    same=false; cmp -s "$T/$name.native" "$T/$name.gpuos" && same=true
    put "$name.native_rc" "$rn"; put "$name.gpuos_rc" "$rg"; put "$name.identical" "$same"
    log "$name: native rc $rn, gpuos rc $rg, stdout identical: $same"
}

# the CI Driver API program (built-in kernels, every copy kind, memset, streams,
# events, error paths) on the GPU
if want ci; then
quota=$(python3 -c "import json,sys; print([v['mem_quota'] for v in json.load(open(sys.argv[1]))['vgpus'] if v['name'] == 'solo'][0])" "$T/vgpus.json")
timeout 120 "$G" run --vgpu solo -- "$B/tests/cudashim_drv" all "$quota" > "$T/ci.out" 2>&1; rc=$?
{ echo "--- cudashim_drv all (CI program) on the GPU: rc $rc"; cat "$T/ci.out"; } >> "$LOG"
put cudashim_drv_all.gpuos_rc "$rc"
put cudashim_drv_all.output "$(tr '\n' ';' < "$T/ci.out")"
[ $rc = 0 ] || fail=1
log "cudashim_drv all on the GPU: rc $rc"

fi
if want progs; then
both vadd solo "$P/drv_vadd"
both matmul solo "$P/drv_matmul" 2048 5
both streams solo "$P/drv_streams"
both cluster solo "$P/drv_cluster" 4
fi
if want attrs; then
both attrs solo "$P/drv_attrs"
diff "$T/attrs.native" "$T/attrs.gpuos" | grep '^[<>]' > "$T/attrs.diff"
put attrs.lines_differing "$(grep -c '^<' "$T/attrs.diff")"
put attrs.diff "$(tr '\n' ';' < "$T/attrs.diff")"
fi
if want progs; then
both oom p30 "$P/drv_oom" 1024
for n in vadd matmul streams cluster; do
    [ "$(grep "^$n.identical" "$R" | cut -f2)" = true ] && [ "$(grep "^$n.gpuos_rc" "$R" | cut -f2)" = 0 ] || fail=1
done
grep -q "then CUDA_ERROR_OUT_OF_MEMORY" "$T/oom.gpuos" || fail=1
put oom.native "$(cat "$T/oom.native")"; put oom.gpuos "$(cat "$T/oom.gpuos")"
fi

if want timing; then
# compute-bound timing: 20 launches of a 4096 matrix multiply, 3 runs each, best
for mode in native gpuos; do
    best=
    ebest=
    for rep in 1 2 3; do
        if [ $mode = native ]; then "$P/drv_matmul" 4096 20 > /dev/null 2> "$T/mm.err"
        else "$G" run --vgpu solo -- "$P/drv_matmul" 4096 20 > /dev/null 2> "$T/mm.err"; fi
        w=$(sed -n 's/.*wall_s \([0-9.]*\).*/\1/p' "$T/mm.err")
        e=$(sed -n 's/.*time_ms_per_launch_events \([0-9.]*\).*/\1/p' "$T/mm.err")
        cat "$T/mm.err" >> "$LOG"
        [ -z "$best" ] && best=$w
        best=$(awk -v a="$best" -v b="$w" 'BEGIN { print (b < a ? b : a) }')
        [ -z "$ebest" ] && ebest=$e
        ebest=$(awk -v a="$ebest" -v b="$e" 'BEGIN { print (b < a ? b : a) }')
    done
    put "matmul4096.$mode.wall_s" "$best"
    # the program's own events (cuEventElapsedTime per launch): GPU timestamps
    # through gpuos (built-in stamp kernel) against the driver's events
    put "matmul4096.$mode.event_ms_per_launch" "$ebest"
done
eratio=$(awk -F'\t' '$1 == "matmul4096.native.event_ms_per_launch" { n = $2 } $1 == "matmul4096.gpuos.event_ms_per_launch" { g = $2 }
                    END { printf "%.4f", g / n }' "$R")
put matmul4096.events_gpuos_vs_native "$eratio"
log "matmul 4096 x20: event time per launch through gpuos / native = $eratio (GPU timestamps: expect ~1)"
ratio=$(awk -F'\t' '$1 == "matmul4096.native.wall_s" { n = $2 } $1 == "matmul4096.gpuos.wall_s" { g = $2 }
                    END { printf "%.3f", n / g }' "$R")
put matmul4096.speed_vs_native "$ratio"
log "matmul 4096 x20: speed through gpuos / native = $ratio (goal >= 0.9)"

fi
if want shares; then
# shares: two unmodified programs at once on p70 and p30
"$G" vgpu list --json - > "$T/before.json"
"$G" run --vgpu p70 -- "$P/drv_matmul" 2048 0 8 > "$T/s70" 2>&1 &
a=$!
"$G" run --vgpu p30 -- "$P/drv_matmul" 2048 0 8 > "$T/s30" 2>&1 &
b=$!
sleep 4
"$G" vgpu list --json - > "$T/mid.json"
wait $a; wait $b
"$G" vgpu list --json - > "$T/after.json"
cat "$T/s70" "$T/s30" >> "$LOG"
put shares.p70_program "$(cat "$T/s70")"
put shares.p30_program "$(cat "$T/s30")"
python3 - "$T/before.json" "$T/after.json" "$T/s70" "$T/s30" >> "$R" <<'PY'
import json, sys
b = {v['name']: v for v in json.load(open(sys.argv[1]))['vgpus']}
a = {v['name']: v for v in json.load(open(sys.argv[2]))['vgpus']}
d = {n: a[n]['compute_ns'] - b[n]['compute_ns'] for n in ('p70', 'p30')}
import re
l = {n: int(re.search(r'launches (\d+)', open(f).read()).group(1)) for n, f in (('p70', sys.argv[3]), ('p30', sys.argv[4]))}
print('shares.daemon_p70_fraction\t%.4f' % (d['p70'] / (d['p70'] + d['p30'])))
print('shares.program_p70_fraction\t%.4f' % (l['p70'] / (l['p70'] + l['p30'])))
print('shares.daemon_compute_ns\t%d %d' % (d['p70'], d['p30']))
print('shares.program_launches\t%d %d' % (l['p70'], l['p30']))
PY
log "shares: $(grep '^shares\.' "$R" | tr '\t' ' ' | tr '\n' ';')"

fi
if want nvml; then
# NVML
"$B/tests/cudashim_nvml" > "$T/nvml.native" 2>&1
"$G" run --vgpu p30 -- "$B/tests/cudashim_nvml" > "$T/nvml.gpuos" 2>&1
{ echo "--- nvml native"; cat "$T/nvml.native"; echo "--- nvml gpuos p30"; cat "$T/nvml.gpuos"; } >> "$LOG"
put nvml.native "$(tr '\n' ';' < "$T/nvml.native")"
put nvml.gpuos_p30 "$(tr '\n' ';' < "$T/nvml.gpuos")"

fi
if want runtime; then
# the CUDA runtime (static cudart) and PyTorch
TRACE=1
both rt_vadd solo "$P/rt_vadd"
TRACE=0
put rt_vadd.gpuos_first_unsupported "$(grep -m1 'is not supported' "$T/rt_vadd.gpuos.err")"
put rt_vadd.gpuos_export_tables "$(grep 'cuGetExportTable [0-9a-f]' "$T/rt_vadd.gpuos.err" | awk '{print $4}' | tr '\n' ' ')"
put rt_vadd.gpuos_output "$({ cat "$T/rt_vadd.gpuos"; grep -v 'cuGetProcAddress' "$T/rt_vadd.gpuos.err" | head -5; } | tr '\n' ';')"
# more runtime programs: streams/events/async copies/global; Gdev's benchmarks
both rt_streams solo "$P/rt_streams"
put rt_streams.gpuos_output "$({ cat "$T/rt_streams.gpuos"; grep -v 'cuGetProcAddress' "$T/rt_streams.gpuos.err" | head -5; } | tr '\n' ';')"
both gdev_madd solo "$P/rt_gdev" madd 2048 20
both gdev_mmul solo "$P/rt_gdev" mmul 1024 5
both gdev_loop solo "$P/rt_gdev" loop 200000 3
both gdev_memcpy solo "$P/rt_gdev" memcpy 256 3
for n in rt_vadd rt_streams gdev_madd gdev_mmul gdev_loop gdev_memcpy; do
    put "$n.gpuos_stdout" "$(tr '\n' ';' < "$T/$n.gpuos")"
    [ "$(grep "^$n.identical" "$R" | cut -f2)" = true ] && [ "$(grep "^$n.gpuos_rc" "$R" | cut -f2)" = 0 ] || fail=1
done
# timing of Gdev's benchmarks, native vs gpuos (wall time of the kernels, best of 3)
for t in "mmul 2048 10" "madd 4096 50" "loop 2000000 5" "memcpy 512 5"; do
    k=gdev_${t%% *}
    for mode in native gpuos; do
        best=
        for rep in 1 2 3; do
            if [ $mode = native ]; then timeout 120 "$P/rt_gdev" $t > /dev/null 2> "$T/g.err"
            else timeout 120 "$G" run --vgpu solo -- "$P/rt_gdev" $t > /dev/null 2> "$T/g.err"; fi
            w=$(sed -n 's/^wall_s \([0-9.]*\).*/\1/p' "$T/g.err")
            { echo "$k $mode $t"; cat "$T/g.err"; } >> "$LOG"
            [ -n "$w" ] || continue
            [ -z "$best" ] && best=$w
            best=$(awk -v a="$best" -v b="$w" 'BEGIN { print (b < a ? b : a) }')
        done
        put "$k.$mode.wall_s" "$best"
    done
    ratio=$(awk -F'\t' -v k="$k" '$1 == k ".native.wall_s" { n = $2 } $1 == k ".gpuos.wall_s" { g = $2 }
                    END { if (n > 0 && g > 0) printf "%.3f", n / g; else print "none" }' "$R")
    put "$k.speed_vs_native" "$ratio"
    log "$k ($t): speed through gpuos / native = $ratio"
done
fi
if want torch; then
cat > "$T/probe_torch.py" <<'PY'
import torch
print("cuda available", torch.cuda.is_available())
x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
y = (x * 2 + 1).sum().item()
a = torch.ones(512, 512, device="cuda")
m = (a @ a)[0, 0].item()
print("elementwise sum", y, "matmul", m)
PY
timeout 60 python3 "$T/probe_torch.py" > "$T/torch.native" 2>&1; put torch.native_rc $?
GPUOS_CUDASHIM_TRACE=1 timeout 90 "$G" run --vgpu solo -- python3 "$T/probe_torch.py" > "$T/torch.gpuos" 2> "$T/torch.gpuos.err"; put torch.gpuos_rc $?
{ echo "--- torch native"; cat "$T/torch.native"; echo "--- torch gpuos"; cat "$T/torch.gpuos";
  grep -v 'cuGetProcAddress' "$T/torch.gpuos.err" | tail -30; } >> "$LOG"
put torch.native "$(tail -3 "$T/torch.native" | tr '\n' ';')"
put torch.gpuos "$(tail -3 "$T/torch.gpuos" | tr '\n' ';')"
put torch.gpuos_first_unsupported "$(grep -m1 'is not supported' "$T/torch.gpuos.err")"
put torch.gpuos_export_tables "$(grep 'cuGetExportTable [0-9a-f]' "$T/torch.gpuos.err" | awk '{print $4}' | sort -u | tr '\n' ' ')"
put torch.gpuos_error "$(grep -v 'gpuos libcuda' "$T/torch.gpuos.err" | tail -2 | tr '\n' ';')"

fi
kill -TERM "$D"; wait "$D"; put daemon_exit $?; D=
sed 's/^/serve: /' "$T/serve.log" | tail -20 >> "$LOG"

uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
JSON="$OUT/cudashim.json"
[ -n "$ONLY" ] && JSON="$OUT/cudashim-$(echo $ONLY | tr ' ' '-').json"
python3 - "$R" "$JSON" "$uuid" "$drv" "${COMMIT:-${GPUOS_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}}" <<'PY'
import json, sys, socket, datetime
res = {}
for line in open(sys.argv[1]):
    k, _, v = line.rstrip('\n').partition('\t')
    res[k] = v
doc = {"schema": "gpuos.cudashim-gpu/1",
       "provenance": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "host": socket.gethostname(),
                      "gpu_uuid": sys.argv[3], "driver": sys.argv[4], "commit": sys.argv[5],
                      "command": "CUDASHIM_ONLY='%s' sh tests/gpu/cudashim.sh" % __import__('os').environ.get('CUDASHIM_ONLY', '')},
       "results": res}
json.dump(doc, open(sys.argv[2], "w"), indent=2)
PY
echo
echo "== cudashim on $uuid"
grep -E 'identical|rc|speed|fraction|first_unsupported|lines_differing' "$R" | awk -F'\t' '{ printf "%-36s %s\n", $1, $2 }'
exit $fail
