#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/ci_private.sh (CI, as root, after `make test`): the tests that switch
# users (setpriv, useradd) once more from a copy of the checkout inside a
# folder only root can read, as a CI runner's work folder or a developer's home
# may be (mktemp -d is 0700). Issue 47: t_install.sh's member of the daemon's
# group compiled tests/install_client.c straight from the checkout and failed
# there ("Permission denied"); a test must copy what another user needs into a
# folder that user can read (serve_lib.sh's for_others). Only these tests run
# again, not the whole suite. The copy is checked to be unreadable to others
# first, so that a pass means something.
#
#   sh tests/ci_private.sh            (from the repository root, after make test)
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: $(basename "$0") needs root (the tests switch users)"; exit 0; }
B=${BUILD:-build}
[ -x "$B/gpuos" ] || { echo "FAIL: $B/gpuos not built (run make test first)"; exit 1; }
P=$(mktemp -d)
trap 'rm -rf "$P"' EXIT
chmod 700 "$P"
cp -a . "$P/repo" || { echo "FAIL: copy of the checkout into $P"; exit 1; }
if setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$P/repo/tests/install_client.c" >/dev/null 2>&1; then
    echo "FAIL: uid nobody can read the copy in $P: the check would prove nothing"
    exit 1
fi
cd "$P/repo" || exit 1
export BUILD="$B" GPUOS="$P/repo/$B/gpuos"
pass=0 failed=""
for t in $(grep -l -E 'setpriv|useradd' tests/t_*.sh); do
    n=${t##*/}
    if sh "$t" >"$P/$n.log" 2>&1; then
        pass=$((pass + 1))
        echo "PASS $n (from a 0700 folder)"
    else
        failed="$failed $n"
        echo "FAIL $n (from a 0700 folder):"
        tail -15 "$P/$n.log" | sed 's/^/    /'
    fi
done
[ -z "$failed" ] || { echo "ci_private: $pass passed, failed:$failed"; exit 1; }
echo "ci_private: $pass user-switching tests passed from a folder others cannot read"
