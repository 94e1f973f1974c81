#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/deps.sh: installs the Debian packages gpuos needs to build and test
# (skipping those present). Needs root for apt-get; otherwise prints the command.
#   build: gcc/make (build-essential), jansson, libsystemd (sd_notify) and
#          libmicrohttpd (the daemon's metrics endpoint), scdoc (man pages); cmocka (tests)
#   house rules: universal-ctags (tests/t_funclen.sh: no function over 150 lines)
#   install test: pkg-config, man-db + groff-base (man pages render)
#   schemas: python3-jsonschema (every JSON file the tests write is validated)
#   tests: scipy and sklearn for Debian's python3 (reference values), chromium
#          (the HTML reports are rendered headless in a test),
#          python3-prometheus-client (parses the metrics endpoint's text),
#          slurm-wlm + munge + jq (tests/t_slurm.sh runs a single-node Slurm cluster:
#          dist/slurm/'s Prolog, TaskProlog and Epilog; nothing is started here)
#          systemd (systemd-analyze verify / security --offline of the unit)
#          podman + runc (tests/t_cdi.sh runs a program in a container on a vGPU;
#          runc where crun refuses the host's cgroups)
# nvcc (the CUDA toolkit) is optional: without it the binary has no kernels and
# only the simulated device works.
set -eu
pkgs="build-essential libjansson-dev libcmocka-dev libsystemd-dev libmicrohttpd-dev scdoc pkg-config man-db groff-base python3 python3-scipy python3-sklearn python3-jsonschema python3-prometheus-client universal-ctags chromium slurm-wlm munge jq podman runc systemd"
need=""
for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "gpuos: missing packages:$need; run: sudo apt-get install$need" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $need >/dev/null
