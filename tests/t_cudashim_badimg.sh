#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_cudashim_badimg.sh: malformed module images through gpuos's libcuda (issue
# 44.6) on the simulated device, as a real program under `gpuos run`:
#  - 29 malformed cubins and fatbins (tests/bad_images.py: section-name and
#    symbol-name offsets outside their tables, offsets and sizes that wrap,
#    tables past the end, truncated headers, container and entry sizes that
#    wrap or claim too much, an entry walk that cannot advance, a runtime wrapper
#    in a file) loaded by file (cuLibraryLoadFromFile, cuModuleLoad: the length
#    is known) and by pointer (cuModuleLoadData, cuLibraryLoadData), then their
#    kernel looked up: no program dies or hangs (f2db5de: SIGSEGV and hangs);
#  - those whose headers, tables or container entries do not fit the file (19)
#    are refused at the load with CUDA_ERROR_INVALID_IMAGE by both file loads,
#    with a log line;
#  - the valid cubin and fatbin they are made from still load, and their
#    kernel's layout is read (parameter 1 at offset 8, 4 bytes).
set -u
. tests/serve_lib.sh
X="$B/tests/cudashim_badimg"
need_shim
[ -x "$X" ] || { echo "SKIP: $X not built"; exit 0; }

python3 tests/elf_kernel.py "$T/base.cubin" kern 20 "0:8,8:4" || fail "elf_kernel.py"
python3 tests/bad_images.py "$T/bad" "$T/base.cubin" || fail "bad_images.py"
n=$(wc -l < "$T/bad/list")
[ "$n" -ge 31 ] || fail "bad_images.py wrote $n images"

start_daemon "[device 0]
sim = default
[vgpu a]
memory = 64M"

# shellcheck disable=SC2046
timeout 600 "$G" run --vgpu a -- "$X" "$T/bad" $(cut -d' ' -f1 "$T/bad/list") > "$T/out" 2> "$T/err"
rc=$?
grep -E " (died|hung|exit)" "$T/out" && fail "a program died or hung on a malformed image (rc $rc): $(grep -E ' (died|hung|exit)' "$T/out" | tr '\n' ';')"
[ "$rc" = 0 ] || fail "cudashim_badimg exited $rc: $(tail -5 "$T/out") $(tail -5 "$T/err")"
[ "$(wc -l < "$T/out")" = "$n" ] || fail "$(wc -l < "$T/out") answers for $n images: $(cat "$T/out")"
while read -r name cls; do
    line=$(grep "^$name " "$T/out") || fail "no answer for $name"
    case "$cls" in
    good)
        case "$line" in *"lib=CUDA_SUCCESS kernel=CUDA_SUCCESS "*" layout=8:4") ;;
        *) fail "valid image $name: $line" ;; esac ;;
    refuse)
        case "$line" in *"lib=CUDA_ERROR_INVALID_IMAGE kernel=- mod=CUDA_ERROR_INVALID_IMAGE "*) ;;
        *) fail "malformed $name must be CUDA_ERROR_INVALID_IMAGE at both file loads: $line" ;; esac ;;
    esac
done < "$T/bad/list"
grep -q "gpuos libcuda: module load: a malformed image: " "$T/err" || fail "no log line for a refused image: $(head -5 "$T/err")"
echo "t_cudashim_badimg: ok ($n images)"
