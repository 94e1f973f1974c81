#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/gpu_stop29.sh: the first GPU run of stop 29 (device machine, repository
# root, build/ carried): PyTorch's and CuPy's first GEMM with the cluster table
# under GPUOS_CUDASHIM_TRACE=2 and the private-table probes (issue 21), and the
# quick sharing table with the client's held spin and the executors' turn
# notices (issue 22: 2 and 4 tenants, process and mps, beside plain processes).
set -u
. tools/gpu_lib.sh
gpu_run_begin stop29 tools/gpu_stop29.sh
mkdir -p "$W/fw" "$W/bench"
part frameworks 200 env OUT="$W/fw" FW_BUDGET_S=190 FW_KEEP_ERR=1 FW_TRACE=2 FW_PROBE_EXPORTS=1 \
    FW_ONLY="${FW_ONLY:-torch_basic cupy_matmul torch_matmul}" GPUOS_COMMIT="${GPUOS_COMMIT:-unknown}" sh tests/gpu/frameworks.sh
part sharing 200 build/bench/vgpu_bench --gpuos build/gpuos --results "$W/bench" --seconds 3 --quick \
    --isolation process,mps --only launch,sharing --vgpus 2,4
cp "$W/machine.txt" "$S" "$OUT/"
cp "$W/fw/tables.txt" "$W/fw/exports.txt" "$OUT/" 2>/dev/null
(cd "$(dirname "$W")" && tar czf "$OUT/stop29.tar.gz" stop29)
tail -25 "$W/fw/frameworks.log"
grep -h "launch us\|^sharing" "$W/sharing.log"
cat "$S"
