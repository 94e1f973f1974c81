#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/mkcarry.sh: a slim, stripped copy of build/ as build-gpu/ for the device
# machine (it cannot build gpuos: no jansson headers); tools/gpu_parts.sh uses it.
set -e
rm -rf build-gpu; mkdir -p build-gpu/tests build-gpu/bench
cp -a build/gpuos build/libgpuos.so* build-gpu/ 2>/dev/null || true
cp -a build/shim build-gpu/
for f in build/tests/*; do
  case $(basename $f) in test_*|*.o|*.d) continue;; esac
  [ -f "$f" ] && [ -x "$f" ] && cp -a "$f" build-gpu/tests/
done
for f in build/bench/*; do [ -f "$f" ] && [ -x "$f" ] && cp -a "$f" build-gpu/bench/; done
[ -d build/dist ] && cp -a build/dist build-gpu/
find build-gpu -type f -perm -u+x -exec strip --strip-debug {} \; 2>/dev/null || true
find build-gpu/shim -name '*.so*' -exec strip --strip-debug {} \; 2>/dev/null || true
du -sh build-gpu
