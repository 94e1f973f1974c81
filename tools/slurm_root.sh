#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/slurm_root.sh DIR: a relocatable copy of this machine's Slurm and munge
# (Debian's slurmctld, slurmd, slurm-client, slurm-wlm-basic-plugins,
# munge, libmunge2; jq, libjq1, libonig5 for the Prolog: their files without
# docs) and of the shared
# libraries they need beyond the C library (DIR/deps), for a machine without
# Slurm (the lent GPU machine: tools/gpu_issue25.sh with SLURM_ROOT=DIR; it is
# unpacked there under DIR, never over /). About 20 MB.
set -eu
[ $# = 1 ] || { echo "usage: tools/slurm_root.sh DIR" >&2; exit 2; }
R=$1
rm -rf "$R"
mkdir -p "$R/deps"
for p in slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2 jq libjq1 libonig5; do
    dpkg -L "$p" >/dev/null 2>&1 || { echo "slurm_root: package $p is not installed (tools/deps.sh)" >&2; exit 1; }
    dpkg -L "$p" | while read -r f; do
        case $f in /usr/share/doc/*|/usr/share/man/*) continue ;; esac
        [ -f "$f" ] || continue
        mkdir -p "$R$(dirname "$f")"
        cp -a "$f" "$R$f"
    done
done
# Debian names the daemons *-wlm behind alternatives symlinks
for f in "$R"/usr/sbin/*-wlm; do ln -sf "$(basename "$f")" "${f%-wlm}"; done
find "$R" -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} \; 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' | while read -r l; do
    case $l in */slurm-wlm/*) ;; *) cp -L "$l" "$R/deps/" ;; esac
done
du -sh "$R"
