#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_contributing.sh: docs/CONTRIBUTING.md's map and walks are true (issue 40 item
# 6), by tools/check_contributing.py:
#   - on this tree: every folder and file the map and the walks name exists,
#     every identifier they name (a function, a type, a macro) is in the
#     sources, and every folder and file of src/ is on the map;
#   - on a small tree of its own, the checker passes it as written and fails,
#     naming the culprit, when a named header is removed, a source file or a
#     folder is added to src/ without a row naming it, a function the walk
#     names is renamed, a file the walk and the map name is renamed, the last
#     file of a pattern (cmd_NAME.c) is removed; a document without a map and
#     bad usage get a one-line error and exit 2.
set -u
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

$PY tools/check_contributing.py >"$T/out" 2>&1 || { cat "$T/out"; fail "docs/CONTRIBUTING.md is not true of this tree"; }
tail -1 "$T/out"

# A tree of its own: two rooms, a walk.
mk() {
    rm -rf "$T/t"; mkdir -p "$T/t/src/a" "$T/t/src/b" "$T/t/docs" "$T/t/tests"
    printf '/* x.c: a */\nint a_run(void) { return 0; }\n' >"$T/t/src/a/x.c"
    printf '/* x.h: a */\nint a_run(void);\n' >"$T/t/src/a/x.h"
    printf '/* cmd_foo.c: foo */\nint cmd_foo(void) { return 0; }\n' >"$T/t/src/a/cmd_foo.c"
    printf '/* topo_ops.h: ops */\nstruct gos_topo_ops { int close; };\n' >"$T/t/src/b/topo_ops.h"
    printf '/* y.c: b */\nint b_main(void) { return 0; }\n' >"$T/t/src/b/y.c"
    : >"$T/t/tests/t_z.sh"
    cat >"$T/t/docs/CONTRIBUTING.md" <<'EOF'
# Working on it

## Layout

```
folder          runs in              what
src/a/          cli                  x.h/.c (the thing: a_run), one cmd_NAME.c per
                                     command
src/b/          daemon               y.c (b_main, calls a/), P_ops.h per pillar
                                     (struct gos_P_ops)
tests/          -                    t_*.sh
```

### A walk

`a/x.c` (`a_run`) -> `src/b/y.c` -> `y.c`; the rules: `gos_P_ops` in `b/P_ops.h`.
EOF
}
check() { # what the tree's change is, the line expected (empty: the check passes)
    $PY tools/check_contributing.py --root "$T/t" >"$T/out" 2>&1
    rc=$?
    if [ -z "$2" ]; then
        [ $rc -eq 0 ] || fail "$1: $(cat "$T/out")"
        return
    fi
    [ $rc -eq 1 ] || fail "$1: exit $rc, not 1: $(cat "$T/out")"
    grep -qF -- "$2" "$T/out" || fail "$1: no line with '$2': $(cat "$T/out")"
}
mk; check "as written" ""
mk; rm "$T/t/src/a/x.h"; check "a named header removed" "the row src/a/ names x.h, which is not in the tree"
mk; : >"$T/t/src/b/z.c"; check "a source file added" "src/b/z.c: not on docs/CONTRIBUTING.md's map"
mk; mkdir "$T/t/src/c"; : >"$T/t/src/c/w.c"; check "a folder added" "src/c/: a folder of src/"
mk; sed -i 's/a_run/a_start/' "$T/t/src/a/x.c" "$T/t/src/a/x.h"; check "a function renamed" "names \`a_run\`, which no source file holds"
mk; mv "$T/t/src/a/x.c" "$T/t/src/a/xx.c"; check "a walked file renamed" "names \`a/x.c\`, which is not in the tree"
mk; mv "$T/t/src/a/x.c" "$T/t/src/a/xx.c"; check "a mapped file renamed" "src/a/xx.c: not on docs/CONTRIBUTING.md's map"
mk; rm "$T/t/src/a/cmd_foo.c"; check "a pattern's last file removed" "the row src/a/ names cmd_NAME.c, which is not in the tree"
mk; sed -i 's/topo_ops/topo_opz/' "$T/t/src/b/topo_ops.h"; mv "$T/t/src/b/topo_ops.h" "$T/t/src/b/topo_opz.h"
check "a pillar's files renamed" "names \`b/P_ops.h\`, which is not in the tree"
mk; sed -i '1a #include "b/topo_ops.h"' "$T/t/src/a/x.c"; check "an include down the map" ""
mk; sed -i '1a #include "a/x.h"' "$T/t/src/b/y.c"; check "an include up the map" "src/b/y.c:2: includes a/, a room above src/b/ on the map"
mk; printf '/* y.h: b */\nint b_main(void);\n' >"$T/t/src/b/y.h"; check "a header beside its own source" ""
mk; printf '/* y.h: a */\nint y(void);\n' >"$T/t/src/a/y.h"; sed -i 's/x.h\/.c/x.h\/.c, y.h/' "$T/t/docs/CONTRIBUTING.md"
check "a header named as another folder's source" "src/a/y.h shares its stem with src/b/y.c"
mk; sed -i '1d' "$T/t/src/b/y.c"; check "a file without its opening comment" "src/b/y.c: does not open with a comment"
mk; sed -i 's/^## Layout/## Rooms/' "$T/t/docs/CONTRIBUTING.md"
$PY tools/check_contributing.py --root "$T/t" >"$T/out" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$T/out")" -eq 1 ] || fail "a document without a map: $(cat "$T/out")"
$PY tools/check_contributing.py --bogus >"$T/out" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$T/out")" -eq 1 ] || fail "bad usage: $(cat "$T/out")"
echo "t_contributing: ok"
