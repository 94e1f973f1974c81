#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_licence.sh: gpuos's licence (issue 43.3): an Apache-2.0 LICENSE file, and
# every source file (src, include, kernels, bench, tests, tools, mk, the
# Makefile, CI and the Slurm scripts) tagged "SPDX-License-Identifier:
# Apache-2.0" in its first two lines (tools/spdx.sh --check); a file without
# the tag is named.
set -u
fail() { echo "FAIL: $*"; exit 1; }
out=$(sh tools/spdx.sh --check) || fail "$out"
# the check names an untagged file (a copy of the tree with one tag removed)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
git ls-files -z -- src/common LICENSE tools/spdx.sh | xargs -0 -I{} cp --parents {} "$T/"
(cd "$T" && git init -q && git add -A && sed -i 1d src/common/log.c && git add -A &&
    out=$(sh tools/spdx.sh --check) && exit 1; echo "$out" | grep -q "no SPDX tag: src/common/log.c") ||
    fail "an untagged file was not named"
grep -q "Apache License" LICENSE && grep -q "Version 2.0" LICENSE || fail "LICENSE is not Apache-2.0"
echo "t_licence: ok ($out)"
