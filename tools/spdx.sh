#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/spdx.sh: the licence tag of every source file of gpuos (issue 43.3):
# "SPDX-License-Identifier: Apache-2.0" in its first two lines (after a #!
# line for scripts). `sh tools/spdx.sh --check` lists the files without it
# and exits 1 (tests/t_licence.sh); `sh tools/spdx.sh` adds it where missing,
# as a comment of the file's language.
set -eu
TAG="SPDX-License-Identifier: Apache-2.0"
files() {
    git ls-files -- 'src/*' 'include/*' 'kernels/*' 'bench/*' 'tests/*' 'tools/*' 'mk/*' Makefile .ci/run dist/slurm |
        grep -E '\.(c|h|cu|cuh|sh|py|mk)$|^Makefile$|^\.ci/run$|^dist/slurm/gpuos-[a-z]+$' || true
}
has() { head -2 "$1" | grep -q "$TAG"; }
missing=0
for f in $(files); do
    [ -f "$f" ] || continue
    has "$f" && continue
    if [ "${1:-}" = --check ]; then
        echo "no SPDX tag: $f"; missing=$((missing + 1)); continue
    fi
    case $f in
    *.c|*.h|*.cu|*.cuh) { echo "/* $TAG */"; cat "$f"; } > "$f.spdx" ;;
    *)
        if head -1 "$f" | grep -q '^#!'; then { head -1 "$f"; echo "# $TAG"; tail -n +2 "$f"; } > "$f.spdx"
        else { echo "# $TAG"; cat "$f"; } > "$f.spdx"; fi ;;
    esac
    chmod --reference="$f" "$f.spdx" && mv "$f.spdx" "$f"
done
if [ "${1:-}" = --check ]; then
    [ "$missing" = 0 ] || { echo "spdx: $missing files without \"$TAG\" (run sh tools/spdx.sh)"; exit 1; }
    [ -f LICENSE ] && grep -q "Apache License" LICENSE || { echo "spdx: no Apache-2.0 LICENSE file"; exit 1; }
    echo "spdx: every source file tagged"
fi
