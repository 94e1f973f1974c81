#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_cli.sh: one command-line grammar (issue 24.3, issue 20.5). For every command
# (gpuos --help lists them) and the hidden executor:
#   - --help exits 0 and documents every option of the command's own table
#     (gpuos CMD --options, the getopt_long table itself), and every option line of
#     the help is in that table;
#   - gpuos(1) lists, in the command's entry, exactly the table's options (serve:
#     gpuos-serve(8)'s OPTIONS), so that the pages and the program cannot drift;
#   - the shared options: --socket with one default (/run/gpuos/gpuos.sock, after
#     $GPUOS_SOCKET) in the help and in what the command does; --json FILE|- that
#     needs its value; --device SEL with one selector grammar (a typo is named);
#     --opt=value equal to --opt value; sizes by the configuration's parser (1.5G);
#   - unknown options and missing values: exit 2, one line;
#   - gpuos(1)'s ENVIRONMENT names every variable the sources read, and no other.
set -u
G=${GPUOS:-${BUILD:-build}/gpuos}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3
MAN1=docs/man/gpuos.1.scd MAN8=docs/man/gpuos-serve.8.scd
cmds=$("$G" --help | sed -n 's/^  \([a-z]*\)  .*/\1/p' | grep -vx -e version -e help)
[ "$(echo "$cmds" | wc -w)" -ge 11 ] || fail "gpuos --help lists only: $cmds"

# the options of a command's entry in a man page section (scdoc source): the
# entry's first line starts with *CMD*, the following tab-indented lines belong to it
man_opts() { # FILE CMD
    awk -v c="*$2*" '
        /^# / { sec = $0 }
        sec == "# COMMANDS" && /^\*/ { on = index($0, c) == 1 }
        sec == "# COMMANDS" && on { print }' "$1" | grep -o '\*--[a-z][a-z-]*\*' | tr -d '*' | sort -u
}
serve_man_opts() { awk '/^# /{sec=$0} sec=="# OPTIONS"' "$MAN8" | grep -o '^\*--[a-z-]*\*' | tr -d '*' | sort -u; }

sub_of() { [ "$1" = dvfs ] && echo probe; } # a command whose subcommand comes first
for c in $cmds executor; do
    "$G" "$c" --options > "$T/opts" || fail "$c --options"
    sort -u "$T/opts" -o "$T/opts"
    [ -s "$T/opts" ] && grep -qx -- --help "$T/opts" || fail "$c: no option table: $(cat "$T/opts")"
    "$G" "$c" --help > "$T/help" 2>"$T/err" || fail "$c --help exits $?"
    [ -s "$T/help" ] && [ ! -s "$T/err" ] || fail "$c --help: empty or on stderr"
    head -1 "$T/help" | grep -q "^usage: gpuos $c" || fail "$c --help does not start with its usage: $(head -1 "$T/help")"
    # every option of the table is in the help; every option line of the help is in the table
    for o in $(grep -vx -- --help "$T/opts"); do
        grep -q -- "$o\\b" "$T/help" || fail "$c: $o is not in --help"
    done
    sed -n 's/^ *\(--[a-z][a-z-]*\).*/\1/p' "$T/help" | sort -u > "$T/helplines"
    extra=$(comm -23 "$T/helplines" "$T/opts")
    [ -z "$extra" ] || fail "$c --help documents options it does not take: $extra"
    # the man page: exactly the table (less --help, in SHARED OPTIONS)
    [ "$c" = executor ] && continue # hidden: spawned by the daemon only
    if [ "$c" = serve ]; then serve_man_opts; else man_opts "$MAN1" "$c"; fi > "$T/man"
    grep -vx -- --help "$T/opts" > "$T/want"
    grep -vx -- --help "$T/man" > "$T/have"
    cmp -s "$T/want" "$T/have" || fail "$c: the man page's options differ from the program's: $(diff "$T/want" "$T/have" | grep '^[<>]' | tr '\n' ' ')"
    # the shared options say the same in every help
    if grep -qx -- --socket "$T/opts"; then
        grep -q -- '--socket PATH .*default $GPUOS_SOCKET, else /run/gpuos/gpuos.sock' "$T/help" ||
            fail "$c --help: --socket's default: $(grep -- --socket "$T/help")"
    fi
    if grep -qx -- --json "$T/opts"; then
        grep -q -- '--json FILE|-' "$T/help" || fail "$c --help: --json is not FILE|-"
        out=$("$G" "$c" $(sub_of "$c") --json 2>&1); rc=$?
        [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q -- "--json needs a value" ||
            fail "$c --json without its value: rc $rc: $out"
    fi
    if grep -qx -- --device "$T/opts"; then
        grep -q -- '--device SEL .*nvidia-smi -i' "$T/help" || fail "$c --help: --device is not the shared SEL"
    fi
    out=$("$G" "$c" $(sub_of "$c") --frobnicate 2>&1); rc=$?
    [ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "unknown option --frobnicate" ||
        fail "$c --frobnicate: rc $rc: $out"
done
echo "ok   $(echo $cmds | wc -w) commands: --help, option tables and man pages agree"

# --device: one selector grammar everywhere (the typo is named, before any GPU is looked for)
for args in "info" "probe topology" "node" "place --sms 8" "report --html $T/r.html" "dvfs probe"; do
    out=$("$G" $args --device=GPU0 2>&1) && fail "$args --device=GPU0 accepted"
    echo "$out" | grep -q -- '--device "GPU0": not an ordinal' || fail "$args --device=GPU0: $out"
done
out=$("$G" place --sms 8 --sim default,default --device all 2>&1) && fail "place took two GPUs"
echo "$out" | grep -q "selects 2 GPUs: this command takes one" || fail "place --device all: $out"
"$G" place --sms 8 --cluster 2 --sim default,default --device 1 --json - >/dev/null || fail "place --device 1 of two simulated GPUs"
echo "ok   --device SEL: one grammar (info, probe, node, place, report, dvfs)"

# --socket: one default, after $GPUOS_SOCKET; --socket=PATH the same as --socket PATH
for args in "vgpu list" "shm list" "run -- true"; do
    # a build without cuda.h has no libcuda.so.1 for run: it refuses before the socket
    [ "$args" = "run -- true" ] && [ ! -e "${BUILD:-build}/shim/libcuda.so.1" ] && continue
    out=$(env -u GPUOS_SOCKET "$G" $args 2>&1) && fail "$args without a daemon succeeded"
    echo "$out" | grep -q "/run/gpuos/gpuos.sock" || fail "$args: not the default socket: $out"
    out=$(GPUOS_SOCKET="$T/env.sock" "$G" $args 2>&1)
    echo "$out" | grep -q "$T/env.sock" || fail "$args: \$GPUOS_SOCKET not used: $out"
    set -- $args; c=$1; shift
    out=$(GPUOS_SOCKET="$T/env.sock" "$G" "$c" --socket="$T/opt.sock" "$@" 2>&1)
    echo "$out" | grep -q "$T/opt.sock" || fail "$args --socket=: $out"
done
echo "ok   --socket: /run/gpuos/gpuos.sock after \$GPUOS_SOCKET, in vgpu, shm, run"

# --opt=value is --opt value; --json - is standard output, --json FILE a file
"$G" info --sim=default --json=- > "$T/a.json" || fail "info --sim=default --json=-"
"$G" info --sim default --json "$T/b.json" > /dev/null || fail "info --json FILE"
cmp -s "$T/a.json" "$T/b.json" || fail "--opt=value and --opt value differ"
$PY -c "import json,sys; assert json.load(open(sys.argv[1]))['schema'] == 'gpuos.info/1'" "$T/a.json" || fail "info JSON"
# sizes: the configuration's parser (fractions, K/M/G/T, B)
"$G" node --sim=default --bytes=1.5G --trials=1 --json=- > "$T/n.json" || fail "node --bytes=1.5G"
[ "$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['method']['bytes'])" "$T/n.json")" = 1610612736 ] ||
    fail "1.5G is not 1610612736 bytes"
out=$("$G" node --sim default --bytes 3Q 2>&1) && fail "--bytes 3Q accepted"
echo "$out" | grep -q '"3Q" is not a size (unknown suffix "Q")' || fail "--bytes 3Q: $out"
out=$("$G" probe numa --sim default --verify 3Q 2>&1) && fail "--verify 3Q accepted"
echo "$out" | grep -q '"3Q" is not a size (unknown suffix "Q")' || fail "--verify 3Q: $out"
printf 'chunk = 3Q\n[device 0]\nsim = default\n[vgpu a]\n' > "$T/c.conf"
out=$("$G" serve --config "$T/c.conf" --socket "$T/s" 2>&1) && fail "chunk = 3Q accepted"
echo "$out" | grep -q "chunk must be a size" || fail "config chunk = 3Q: $out"
out=$("$G" info --sim 2>&1); [ $? -eq 2 ] && echo "$out" | grep -q -- "--sim needs a value" || fail "--sim without value: $out"
out=$("$G" vgpu list --bytes=1 2>&1); [ $? -eq 2 ] && echo "$out" | grep -q -- "--bytes takes no value" || fail "--bytes=1: $out"
# gpuos run stops at the program: its options are the program's (a build
# without cuda.h has no libcuda.so.1 for run)
if [ -e "${BUILD:-build}/shim/libcuda.so.1" ]; then
    out=$("$G" run --socket "$T/none" -- sh -c 'echo --frobnicate' 2>&1)
    echo "$out" | grep -q "cannot reach gpuos serve at $T/none" || fail "run parsed the program's arguments: $out"
fi
# serve and executor point at the pages, not at source files or at themselves
"$G" serve --help | grep -q "gpuos.conf(5)" || fail "serve --help does not name gpuos.conf(5)"
"$G" serve --help | grep -q "src/" && fail "serve --help points at source files"
"$G" executor --help | grep -q "gpuos-serve(8)" || fail "executor --help does not name gpuos-serve(8)"
echo "ok   --opt=value, --json FILE|-, one size parser (1.5G), run's arguments left alone"

# prefixes: unambiguous ones run the command; ambiguous ones (version and help
# count) are refused naming every candidate (issue 43.7: "gpuos v" was vgpu list)
[ "$("$G" ver)" = "$("$G" --version)" ] || fail "gpuos ver is not gpuos version"
"$G" vg --help | head -1 | grep -q "^usage: gpuos vgpu" || fail "gpuos vg is not vgpu"
out=$("$G" v 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "gpuos v: rc $rc: $out"
[ "$out" = 'gpuos: "v" is ambiguous (vgpu, version); type more of it' ] || fail "gpuos v: $out"
out=$("$G" p 2>&1) && fail "gpuos p accepted"
echo "$out" | grep -q '(probe, place)' || fail "gpuos p: $out"
out=$("$G" frob 2>&1); [ $? -eq 2 ] && echo "$out" | grep -q 'unknown command "frob"' || fail "gpuos frob: $out"
# gpuos help COMMAND is the command's own help (issue 43.7: it printed the top level)
for c in $cmds; do
    "$G" help "$c" > "$T/h1" 2>&1 || fail "gpuos help $c exits $?"
    "$G" "$c" --help > "$T/h2" 2>&1
    cmp -s "$T/h1" "$T/h2" || fail "gpuos help $c is not gpuos $c --help: $(head -1 "$T/h1")"
done
"$G" help pro | head -1 | grep -q "^usage: gpuos probe" || fail "gpuos help pro"
"$G" help | head -1 | grep -q "^usage: gpuos COMMAND" || fail "gpuos help"
out=$("$G" help frob 2>&1); [ $? -eq 2 ] && echo "$out" | grep -q 'unknown command "frob"' || fail "gpuos help frob: $out"
echo "ok   prefixes: ambiguous ones refused with their candidates; gpuos help COMMAND"

# ENVIRONMENT: every variable the sources read, and no other
# (the gpuos variables are named once, in src/common/env.h: tests/t_env.sh; the others by their literal)
{ sed -n 's/^#define GOS_ENV_[A-Z0-9_]* "\(GPUOS_[A-Z0-9_]*\)"$/\1/p' src/common/env.h
  grep -rhno 'getenv("[A-Z_]*")' src | sed 's/.*getenv("//;s/")//'; } | grep '^GPUOS_' | sort -u > "$T/env_src"
awk '/^# /{sec=$0} sec=="# ENVIRONMENT"' "$MAN1" | grep -o '^\*[A-Z_]*\*\(, \*[A-Z_]*\*\)*' | grep -o '[A-Z_][A-Z_]*' | sort -u > "$T/env_man"
[ "$(wc -l < "$T/env_src")" -ge 12 ] || fail "read only $(wc -l < "$T/env_src") variables from the sources"
cmp -s "$T/env_src" "$T/env_man" || fail "gpuos(1) ENVIRONMENT differs from the sources' getenv: $(diff "$T/env_src" "$T/env_man" | grep '^[<>]' | tr '\n' ' ')"
echo "ok   gpuos(1) ENVIRONMENT: the $(wc -l < "$T/env_src") variables the sources read"
echo "t_cli: ok"
