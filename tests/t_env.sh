#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_env.sh: every environment variable gpuos reads is named in one documented
# place (src/common/env.h, issue 20): no other source file spells a
# "GPUOS_..." string, every macro there is documented by a comment and used,
# and gpuos(1) lists every variable in its ENVIRONMENT section; and one helper
# reads them (gos_env, issue 40): no other file of src/ calls getenv.
set -u
fail() { echo "FAIL: $*"; exit 1; }
H=src/common/env.h
[ -f "$H" ] || fail "$H is missing"
stray=$(grep -rn '"GPUOS_[A-Z0-9_]*"' src --include=*.c --include=*.h | grep -v "^$H:")
[ -z "$stray" ] || fail "environment names spelled outside $H:
$stray"
reads=$(grep -rnE '\b(secure_)?getenv *\(' src --include=*.c --include=*.h | grep -v "^$H:")
[ -z "$reads" ] || fail "the environment read outside $H (use gos_env):
$reads"
vars=$(sed -n 's/^#define GOS_ENV_[A-Z0-9_]* "\(GPUOS_[A-Z0-9_]*\)"$/\1/p' "$H")
[ -n "$vars" ] || fail "no variables in $H"
for v in $vars; do
    m=GOS_ENV_${v#GPUOS_}
    grep -rqw "$m" src --include=*.c --include=*.h --exclude=env.h || fail "$m is defined but never read"
    grep -q "^\*\?\*\?$v\|$v" docs/man/gpuos.1.scd || fail "gpuos(1) does not list $v in ENVIRONMENT"
done
# each macro follows a comment line (its documentation)
awk '/^#define GOS_ENV_[A-Z0-9_]* "/ { if (prev !~ /\*\/$|^#define GOS_ENV_/) { print "undocumented: " $2; bad = 1 } } { prev = $0 } END { exit bad }' "$H" ||
    fail "a variable of $H has no comment"
/usr/bin/python3 tools/gen_env_doc.py --check || fail "gpuos(1) ENVIRONMENT is not generated from $H"
echo "ok: $(echo "$vars" | wc -w) variables, one place"
