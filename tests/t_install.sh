#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_install.sh: `make install` as a package build does it (DESTDIR, PREFIX=/usr),
# then a libgpuos program built with nothing but `pkg-config gpuos` against the
# installed tree, linked shared and static, copying through a real `gpuos serve
# --sim` daemon started from the installed binary and the installed sample
# configuration. Also: the shared library exports exactly the gpuos_* functions of
# the header (nm -D), SONAME libgpuos.so.1, the static library holds only the
# client's objects and the same global symbols, the man pages render with the right NAME lines and no groff
# warnings, the unit's paths follow PREFIX, --version matches src/common/version.h,
# and `make uninstall` removes every file it installed. Every function of every
# installed header links against the installed libraries (a generated program
# naming each); the pmem.h host API round-trips bytes on the simulated chip. The
# unit runs as User=gpuos with its sandbox, systemd-analyze security <= 3.0.
# One configuration directory (issue 43.4): the binary's default, the unit, the
# sample configurations, the Slurm scripts and the man pages all name
# SYSCONFDIR/gpuos (/etc for PREFIX=/usr, PREFIX/etc else) and nothing installed
# keeps an unfilled @PATH@; the udev rule gives /dev/nvidia* to group gpuos.
# Then (as root) a real prefix: the daemon runs as a daemon user, and a member of
# the tenants' group (socket_group, of which the daemon user is a member too)
# builds a client with pkg-config (shared and static), runs `gpuos vgpu list` and
# an unmodified Driver-API program with `gpuos run`; a user outside the group is
# refused in one line that names the group.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
DPID=
USERS= GROUPS_MADE=
cleanup() {
    [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null # before userdel: no process of its user
    for u in $USERS; do userdel "$u" 2>/dev/null; done
    for g in $GROUPS_MADE; do groupdel "$g" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/serve.log" ] && sed 's/^/    serve: /' "$T/serve.log" | tail -20; exit 1; }
R="$T/root"
wait_socket() { # SOCKET WHAT: the daemon $DPID listens there within 10 s
    i=0
    while [ ! -S "$1" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "$2 did not come up"
        kill -0 "$DPID" 2>/dev/null || fail "$2 exited at start"
        sleep 0.1
    done
}

make -s --no-print-directory install BUILD="$B" DESTDIR="$R" PREFIX=/usr >"$T/make.log" 2>&1 ||
    { cat "$T/make.log"; fail "make install failed"; }
for f in usr/bin/gpuos usr/lib/libgpuos.so.1 usr/lib/libgpuos.a usr/lib/libgpuos-pmem.a usr/include/gpuos/gpuos.h \
    usr/include/gpuos/pmem.h usr/include/gpuos/pmem_core.h usr/include/gpuos/pmem_dev.cuh \
    usr/lib/pkgconfig/gpuos.pc usr/lib/pkgconfig/gpuos-pmem.pc usr/share/man/man1/gpuos.1 \
    usr/share/man/man8/gpuos-serve.8 usr/share/man/man5/gpuos.conf.5 usr/lib/systemd/system/gpuos.service \
    usr/lib/sysusers.d/gpuos.conf etc/gpuos/gpuos.conf.example usr/lib/udev/rules.d/70-gpuos-nvidia.rules \
    etc/gpuos/slurm.conf.example usr/share/gpuos/slurm/gpuos-slurm-lib.sh; do
    [ -f "$R/$f" ] || fail "$f not installed"
done
# every header of include/gpuos/ is installed (none is public but not shipped)
for h in include/gpuos/*; do [ -f "$R/usr/include/gpuos/${h##*/}" ] || fail "$h is not installed"; done
# gpuos run's libraries, where the installed gpuos looks for them (when built: cuda.h)
SHIM=
if [ -f "$B/shim/libcuda.so.1" ]; then
    SHIM=1
    for f in libcuda.so.1 libnvidia-ml.so.1; do
        [ -f "$R/usr/lib/gpuos/$f" ] || fail "$f not installed in LIBDIR/gpuos"
        readelf -d "$R/usr/lib/gpuos/$f" | grep -q "SONAME.*\[$f\]" || fail "$f SONAME"
    done
    [ -e "$R/usr/lib/libcuda.so.1" ] && fail "libcuda.so.1 on the system's library path"
fi
[ "$(readlink "$R/usr/lib/libgpuos.so")" = libgpuos.so.1 ] || fail "libgpuos.so is not a link to libgpuos.so.1"

# one version, from src/common/version.h
v=$(sed -n 's/^#define GOS_VERSION "\(.*\)"/\1/p' src/common/version.h)
[ -n "$v" ] || fail "no GOS_VERSION in src/common/version.h"
[ "$("$R/usr/bin/gpuos" --version)" = "gpuos $v" ] || fail "--version: $("$R/usr/bin/gpuos" --version)"
[ "$("$R/usr/bin/gpuos" version)" = "gpuos $v" ] || fail "gpuos version"

# the shared library: SONAME, exactly the header's functions exported
readelf -d "$R/usr/lib/libgpuos.so.1" | grep -q 'SONAME.*\[libgpuos.so.1\]' || fail "SONAME"
nm -D --defined-only "$R/usr/lib/libgpuos.so.1" | awk '{print $3}' | sort > "$T/exported"
sed -n 's/^[a-z_ ]*[ *]\(gpuos_[a-z_]*\)(.*/\1/p' include/gpuos/gpuos.h | sort -u > "$T/declared"
[ "$(wc -l < "$T/declared")" -ge 25 ] || fail "could not read the API from gpuos.h"
if ! cmp -s "$T/exported" "$T/declared"; then
    diff "$T/declared" "$T/exported" | head; fail "exported symbols differ from gpuos.h's functions"
fi
# the static library: the client's own objects only (its protocol and status code,
# none of the core's), the same public symbols as the shared library, nothing else global
nm -A "$R/usr/lib/libgpuos.a" > "$T/static-syms" 2>/dev/null || fail "nm libgpuos.a"
grep -q ' [tT] gos_wire_send$' "$T/static-syms" || fail "libgpuos.a lacks the client's own protocol code"
grep -q -e ' gos_chip_load$' -e ' gos_topo_probe$' -e ' gos_serve_config_parse$' "$T/static-syms" &&
    fail "libgpuos.a holds the core"
nm -g --defined-only "$R/usr/lib/libgpuos.a" 2>/dev/null | awk 'NF == 3 {print $3}' | sort > "$T/static-exported"
cmp -s "$T/static-exported" "$T/declared" || { diff "$T/declared" "$T/static-exported" | head; fail "libgpuos.a global symbols differ from gpuos.h"; }

# pkg-config against the installed tree only
export PKG_CONFIG_PATH="$R/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$R" PKG_CONFIG_LIBDIR="$R/usr/lib/pkgconfig"
[ "$(pkg-config --modversion gpuos)" = "$v" ] || fail "pkg-config version $(pkg-config --modversion gpuos)"
pkg-config --cflags gpuos | grep -q -- "-I$R/usr/include" || fail "cflags $(pkg-config --cflags gpuos)"
cc -std=c11 -Wall -Werror -o "$T/client_shared" tests/install_client.c $(pkg-config --cflags --libs gpuos) ||
    fail "shared build"
readelf -d "$T/client_shared" | grep -q 'NEEDED.*\[libgpuos.so.1\]' || fail "not linked against libgpuos.so.1"
cc -std=c11 -Wall -Werror -static -o "$T/client_static" tests/install_client.c \
    $(pkg-config --static --cflags --libs gpuos) || fail "static build"
readelf -d "$T/client_static" 2>/dev/null | grep -q NEEDED && fail "static client needs shared libraries"

# every function declared in an installed header is in an installed library: a
# program taking the address of each, linked statically against both .pc files
{
    echo '#include <gpuos/gpuos.h>'; echo '#include <gpuos/pmem.h>'; echo '#include <stdio.h>'
    echo 'int main(void) { void *f[] = {'
    for h in "$R"/usr/include/gpuos/*.h; do
        sed -n 's/^[a-z][a-z0-9_ ]*[ *]\(gpuos_[a-z0-9_]*\|gos_[a-z0-9_]*\)(.*/    (void *)\1,/p' "$h"
    done
    echo '}; for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) if (!f[i]) return 1;'
    printf '%s\n' 'printf("%zu\n", sizeof f / sizeof f[0]); return 0; }'
} > "$T/all_calls.c"
nfun=$(grep -c '(void \*)' "$T/all_calls.c")
[ "$nfun" -ge 35 ] || fail "only $nfun functions read from the installed headers"
cc -std=c11 -Wall -Werror -Wno-pedantic -o "$T/all_calls" "$T/all_calls.c" \
    $(pkg-config --static --cflags --libs gpuos gpuos-pmem) 2>"$T/cc.err" ||
    fail "a public header's function is in no installed library: $(grep -o "undefined reference to \`[a-z_]*'" "$T/cc.err" | sort -u | head -5 | tr '\n' ' ')"
[ "$(LD_LIBRARY_PATH="$R/usr/lib" "$T/all_calls")" = "$nfun" ] || fail "all_calls"
# pmem.h's host API as a user calls it (simulated chip, its chart)
"$R/usr/bin/gpuos" probe numa --sim default --json "$T/chart.json" >/dev/null 2>&1 || fail "probe numa for pmem"
cc -std=c11 -Wall -Werror -o "$T/pmem" tests/install_pmem.c $(pkg-config --cflags --libs gpuos-pmem) || fail "pmem build"
out=$("$T/pmem" "$T/chart.json" 2>&1) || fail "pmem: $out"
[ "$out" = "pmem ok 3145728 132" ] || fail "pmem: $out"

# the installed daemon with the installed sample configuration (simulated device),
# its tenants' group (gpuos-users, made by sysusers) replaced by the caller's
sed "s/^socket_group = gpuos-users$/socket_group = $(id -g)/" "$R/etc/gpuos/gpuos.conf.example" > "$T/example.conf"
grep -q "^socket_group = $(id -g)$" "$T/example.conf" || fail "the example has no socket_group = gpuos-users"
"$R/usr/bin/gpuos" serve --config "$T/example.conf" --socket "$T/s" --sim default \
    2>"$T/serve.log" &
DPID=$!
wait_socket "$T/s" "daemon"
out=$(LD_LIBRARY_PATH="$R/usr/lib" timeout 30 "$T/client_shared" "$T/s" training) || fail "shared client: $out"
[ "$out" = "roundtrip ok 3145728" ] || fail "shared client: $out"
out=$(timeout 30 "$T/client_static" "$T/s" inference) || fail "static client: $out"
[ "$out" = "roundtrip ok 3145728" ] || fail "static client: $out"
out=$(timeout 30 "$T/client_static" "$T/s" nosuch 2>&1) && fail "unknown vGPU accepted"
kill -TERM "$DPID"; wait "$DPID"; rc=$?; DPID=
[ "$rc" -eq 0 ] || fail "daemon exit $rc"

# man pages: rendered, NAME lines right, no groff warnings, paths filled in
for p in "man1/gpuos.1:gpuos - " "man8/gpuos-serve.8:gpuos-serve - " "man5/gpuos.conf.5:gpuos.conf - "; do
    f="$R/usr/share/man/${p%%:*}"
    MANWIDTH=100 man -l "$f" > "$T/page" 2>"$T/manerr" || fail "man -l $f"
    [ -s "$T/page" ] || fail "$f renders empty"
    sed -n '/^NAME/{n;p;}' "$T/page" | grep -q "^ *${p#*:}" || fail "$f NAME: $(sed -n '/^NAME/{n;p;}' "$T/page")"
    groff -man -Tutf8 -ww -z "$f" 2>"$T/warn"; [ -s "$T/warn" ] && fail "groff warnings in $f: $(head -3 "$T/warn")"
    grep -q "@[A-Z]*@" "$f" && fail "$f has an unsubstituted @PATH@"
done
MANWIDTH=100 man -l "$R/usr/share/man/man5/gpuos.conf.5" 2>/dev/null | grep -q "^ */etc/gpuos/gpuos.conf$" ||
    fail "gpuos.conf(5) does not name /etc/gpuos/gpuos.conf"

# the unit
U="$R/usr/lib/systemd/system/gpuos.service"
grep -qx 'ExecStart=/usr/bin/gpuos serve --config /etc/gpuos/gpuos.conf' "$U" || fail "ExecStart: $(grep ExecStart= "$U")"
grep -qx 'Type=notify' "$U" && grep -qx 'RuntimeDirectory=gpuos' "$U" &&
    grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$U" || fail "unit keys"
grep -q '^PrivateDevices=yes' "$U" && fail "PrivateDevices would hide /dev/nvidia*"
for k in User=gpuos Group=gpuos ProtectSystem=strict ProtectHome=yes NoNewPrivileges=yes PrivateTmp=yes \
    DevicePolicy=closed CapabilityBoundingSet=; do
    grep -qx "$k" "$U" || fail "the unit lacks $k"
done
grep '^DeviceAllow=' "$U" | grep -v -e '=/dev/nvidia' -e '=char-nvidia-' && fail "a device other than NVIDIA's is allowed"
# the daemon's OOM score from the unit (issue 43.7: every start warned that it could not lower it)
oom=$(sed -n 's/^#define SRV_OOM_DAEMON (\(-[0-9]*\))$/\1/p' src/serve/executor.h)
[ -n "$oom" ] && grep -qx "OOMScoreAdjust=$oom" "$U" || fail "the unit does not set OOMScoreAdjust=$oom: $(grep OOMScore "$U")"
grep -qx 'u gpuos - "gpuos GPU daemon" /var/lib/gpuos' "$R/usr/lib/sysusers.d/gpuos.conf" || fail "sysusers.d file"
# two roles, two groups: gpuos owns the GPU, gpuos-users holds the tenants (the socket's group)
grep -qx 'g gpuos-users -' "$R/usr/lib/sysusers.d/gpuos.conf" || fail "sysusers.d: no group gpuos-users"
grep -qx 'SupplementaryGroups=gpuos-users' "$U" || fail "the unit's daemon is not in gpuos-users"
grep -qx 'socket_group = gpuos-users' "$R/etc/gpuos/gpuos.conf.example" || fail "the example's socket is not gpuos-users'"
grep -q '^KERNEL=="nvidia\*.*GROUP="gpuos", MODE="0660"$' "$R/usr/lib/udev/rules.d/70-gpuos-nvidia.rules" ||
    fail "udev rule: $(grep -v '^#' "$R/usr/lib/udev/rules.d/70-gpuos-nvidia.rules")"
# one configuration directory everywhere (issue 43.4)
same_dir() { # ROOT PREFIX-OF-TREE SYSCONFDIR DATADIR BINDIR
    r=$1 p=$2 e=$3 d=$4 b=$5
    unit="$r$p/lib/systemd/system/gpuos.service"
    grep -qx "ConditionPathExists=$e/gpuos/gpuos.conf" "$unit" && grep -qx "ExecStart=$b/gpuos serve --config $e/gpuos/gpuos.conf" "$unit" ||
        fail "unit ($p): $(grep -e ^Condition -e ^ExecStart= "$unit" | tr '\n' ' ')"
    "$r$b/gpuos" serve --help | grep -q "default $e/gpuos/gpuos.conf)" || fail "gpuos serve's default ($p): $("$r$b/gpuos" serve --help | grep -- --config)"
    grep -q "copy it to $e/gpuos/gpuos.conf " "$r$e/gpuos/gpuos.conf.example" || fail "the example ($p) names another path"
    grep -qx "GPUOS_SLURM_CONF=\${GPUOS_SLURM_CONF:-$e/gpuos/slurm.conf}" "$r$d/gpuos/slurm/gpuos-slurm-lib.sh" ||
        fail "Slurm scripts ($p): $(grep '^GPUOS_SLURM_CONF' "$r$d/gpuos/slurm/gpuos-slurm-lib.sh")"
    grep -q "else $e/gpuos/slurm.conf;" "$r$e/gpuos/slurm.conf.example" || fail "slurm.conf.example ($p)"
    for k in Prolog Epilog TaskProlog; do
        f=$(sed -n "s/^$k=//p" "$r$d/gpuos/slurm/slurm.conf.example")
        [ -x "$r$f" ] || fail "slurm.conf.example ($p): $k=$f is not installed"
    done
    MANWIDTH=200 man -l "$r$p/share/man/man5/gpuos.conf.5" 2>/dev/null | grep -q "^ *$e/gpuos/gpuos.conf$" ||
        fail "gpuos.conf(5) ($p) does not name $e/gpuos/gpuos.conf"
    MANWIDTH=200 man -l "$r$p/share/man/man8/gpuos-serve.8" 2>/dev/null | grep -q "$e/gpuos/slurm.conf " ||
        fail "gpuos-serve(8) ($p) does not name $e/gpuos/slurm.conf"
    left=$(grep -rlI '@[A-Z][A-Z]*@' "$r" 2>/dev/null)
    [ -z "$left" ] || fail "unfilled @PATH@ in: $left"
}
same_dir "$R" /usr /etc /usr/share /usr/bin
echo "one configuration directory (PREFIX=/usr): /etc/gpuos"
# the sandbox's exposure (offline: no running systemd needed)
if systemd-analyze security --offline=true --help >/dev/null 2>&1; then
    score=$(systemd-analyze security --offline=true "$U" 2>/dev/null | sed -n 's/.*Overall exposure level for gpuos.service: \([0-9.]*\).*/\1/p')
    [ -n "$score" ] || fail "systemd-analyze security gave no score"
    awk "BEGIN { exit !($score <= 3.0) }" || fail "systemd-analyze security: $score (above 3.0)"
    echo "systemd-analyze security: $score"
fi
if command -v systemd-analyze >/dev/null 2>&1; then # every line of the unit parses (paths into the tree)
    mkdir "$T/unit"
    sed "s|/usr/bin/gpuos|$R/usr/bin/gpuos|" "$U" > "$T/unit/gpuos.service"
    systemd-analyze verify --man=no "$T/unit/gpuos.service" > "$T/verify" 2>&1
    [ -s "$T/verify" ] && fail "systemd-analyze verify: $(head -3 "$T/verify")"
fi

# A real prefix (no DESTDIR), used as an operator would, by users who are not root
if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null; then
    P="$T/prefix"
    chmod 755 "$T"
    make -s --no-print-directory install BUILD="$B" PREFIX="$P" SYSUSERS= >"$T/make.log" 2>&1 ||
        { cat "$T/make.log"; fail "make install PREFIX=$P"; }
    n=$$; DG=gost$n DU=gosd$n MU=gosm$n OU=goso$n
    TG=gosu$n # the tenants' group, the socket's (socket_group); the daemon's user in it too
    groupadd "$DG" && GROUPS_MADE="$DG" && groupadd "$TG" && GROUPS_MADE="$DG $TG" || fail "groupadd"
    useradd -M -N -g "$DG" -G "$TG" -s /usr/sbin/nologin "$DU" && USERS="$DU" &&
        useradd -M -N -g users -G "$TG" -s /bin/sh "$MU" && USERS="$USERS $MU" &&
        useradd -M -N -g users -s /bin/sh "$OU" && USERS="$USERS $OU" || fail "useradd"
    as() { u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@"; }
    mkdir "$T/d" "$T/run" "$T/m" "$T/o"
    sed "s/^socket_group = gpuos-users$/socket_group = $TG/" "$P/etc/gpuos/gpuos.conf.example" > "$T/d/gpuos.conf"
    # the member builds from a copy: the checkout may be unreadable to others (0700; issue 47)
    cp tests/install_client.c "$T/m/"
    chown "$DU:$DG" "$T/d" "$T/run" "$T/d/gpuos.conf"; chown -R "$MU" "$T/m"; chown "$OU" "$T/o"
    S="$T/run/gpuos.sock"
    # setpriv itself in the background (not the function): $! is the daemon's pid
    setpriv --reuid="$DU" --regid="$DG" --init-groups -- "$P/bin/gpuos" serve --config "$T/d/gpuos.conf" \
        --socket "$S" --sim default >/dev/null 2>"$T/serve.log" &
    DPID=$!
    wait_socket "$S" "daemon (as $DU)"
    [ "$(stat -c '%U:%G %a' "$S")" = "$DU:$TG 660" ] || fail "socket is $(stat -c '%U:%G %a' "$S")"
    # a member of the tenants' group: builds (shared and static) and runs clients
    export PKG_CONFIG_PATH="$P/lib/pkgconfig"; unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR
    as "$MU" sh -c 'cd "$1" && cc -std=c11 -Wall -Werror -o shared "$2" $(pkg-config --cflags --libs gpuos) &&
        cc -std=c11 -Wall -Werror -static -o static "$2" $(pkg-config --static --cflags --libs gpuos)' \
        sh "$T/m" "$T/m/install_client.c" || fail "a member of $TG could not build clients with pkg-config"
    out=$(as "$MU" env LD_LIBRARY_PATH="$P/lib" timeout 30 "$T/m/shared" "$S" training 2>&1) || fail "member, shared: $out"
    [ "$out" = "roundtrip ok 3145728" ] || fail "member, shared: $out"
    out=$(as "$MU" timeout 30 "$T/m/static" "$S" inference 2>&1) || fail "member, static: $out"
    [ "$out" = "roundtrip ok 3145728" ] || fail "member, static: $out"
    out=$(as "$MU" env GPUOS_SOCKET="$S" "$P/bin/gpuos" vgpu list 2>&1) || fail "member: vgpu list: $out"
    echo "$out" | grep -q '^training ' && echo "$out" | grep -q '^inference ' || fail "member: vgpu list: $out"
    if [ -n "$SHIM" ]; then # an unmodified Driver-API program, the installed gpuos run and libcuda.so.1
        cp "$B/tests/cudashim_drv" "$T/m/drv" && chown "$MU" "$T/m/drv"
        quota=$(as "$MU" "$P/bin/gpuos" vgpu list --socket "$S" --json=- |
            /usr/bin/python3 -c "import json,sys; print([v['mem_quota'] for v in json.load(sys.stdin)['vgpus'] if v['name'] == 'training'][0])")
        out=$(as "$MU" timeout 60 "$P/bin/gpuos" run --socket="$S" --vgpu training -- "$T/m/drv" all "$quota" 2>"$T/run.err") ||
            fail "member: gpuos run: $out $(cat "$T/run.err")"
        [ "$out" = ok ] || fail "member: gpuos run printed: $out"
    fi
    # a user outside the group: refused, in one line naming the group
    out=$(as "$OU" env GPUOS_SOCKET="$S" "$P/bin/gpuos" vgpu list 2>&1) && fail "a user outside $TG listed the vGPUs"
    [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "permission denied: only root and members of group $TG may use it" ||
        fail "outsider's message: $out"
    out=$(as "$OU" timeout 30 "$T/m/static" "$S" inference 2>&1) && fail "a user outside $TG opened a vGPU"
    echo "$out" | grep -q "members of group $TG" || fail "outsider's client: $out"
    kill -TERM "$DPID"; wait "$DPID"; rc=$?; DPID=
    [ "$rc" -eq 0 ] || fail "daemon (as $DU) exit $rc"
    make -s --no-print-directory uninstall BUILD="$B" PREFIX="$P" >"$T/make.log" 2>&1 || fail "uninstall $P"
    left=$(find "$P" -type f -o -type l)
    [ -z "$left" ] || fail "left after uninstall of $P: $left"
    echo "real prefix: daemon as $DU, tenant $MU (group $TG) served, outsider $OU refused: ok"
else
    echo "t_install: not root (or no useradd/setpriv): the real-prefix users part skipped"
fi

# default PREFIX=/usr/local; uninstall leaves nothing behind
make -s --no-print-directory install BUILD="$B" DESTDIR="$T/r2" >"$T/make.log" 2>&1 || { cat "$T/make.log"; fail "make install (default PREFIX)"; }
[ -x "$T/r2/usr/local/bin/gpuos" ] || fail "default PREFIX is not /usr/local"
same_dir "$T/r2" /usr/local /usr/local/etc /usr/local/share /usr/local/bin
echo "one configuration directory (PREFIX=/usr/local): /usr/local/etc/gpuos"
make -s --no-print-directory uninstall BUILD="$B" DESTDIR="$T/r2" >"$T/make.log" 2>&1 || fail "uninstall"
left=$(find "$T/r2" -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
# restore the build's default paths
make -s --no-print-directory BUILD="$B" >/dev/null 2>&1
echo "t_install: OK (version $v, $(wc -l < "$T/exported") symbols exported)"
