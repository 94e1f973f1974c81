#!/bin/sh
# t_install.sh: `make install` as a package build does it (DESTDIR, PREFIX=/usr),
# then a libgpuos program built with nothing but `pkg-config gpuos` against the
# installed tree, linked shared and static, copying through a real `gpuos serve
# --sim` daemon started from the installed binary and the installed sample
# configuration. Also: the shared library exports exactly the gpuos_* functions of
# the header (nm -D), SONAME libgpuos.so.1, the static library holds only the
# client's objects and the same global symbols, the man pages render with the right NAME lines and no groff
# warnings, the unit's paths follow PREFIX, --version matches src/common/version.h,
# and `make uninstall` removes every file it installed.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
DPID=
cleanup() { [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/serve.log" ] && sed 's/^/    serve: /' "$T/serve.log" | tail -20; exit 1; }
R="$T/root"

make -s --no-print-directory install BUILD="$B" DESTDIR="$R" PREFIX=/usr >"$T/make.log" 2>&1 ||
    { cat "$T/make.log"; fail "make install failed"; }
for f in usr/bin/gpuos usr/lib/libgpuos.so.1 usr/lib/libgpuos.a usr/include/gpuos/gpuos.h \
    usr/lib/pkgconfig/gpuos.pc usr/share/man/man1/gpuos.1 usr/share/man/man8/gpuos-serve.8 \
    usr/share/man/man5/gpuos.conf.5 usr/lib/systemd/system/gpuos.service etc/gpuos/gpuos.conf.example; do
    [ -f "$R/$f" ] || fail "$f not installed"
done
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

# the installed daemon with the installed sample configuration (simulated device)
"$R/usr/bin/gpuos" serve --config "$R/etc/gpuos/gpuos.conf.example" --socket "$T/s" --sim default \
    2>"$T/serve.log" &
DPID=$!
i=0
while [ ! -S "$T/s" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "daemon did not come up"
    kill -0 "$DPID" 2>/dev/null || fail "daemon exited at start"
    sleep 0.1
done
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
if command -v systemd-analyze >/dev/null 2>&1; then # every line of the unit parses (paths into the tree)
    mkdir "$T/unit"
    sed "s|/usr/bin/gpuos|$R/usr/bin/gpuos|" "$U" > "$T/unit/gpuos.service"
    systemd-analyze verify --man=no "$T/unit/gpuos.service" > "$T/verify" 2>&1
    [ -s "$T/verify" ] && fail "systemd-analyze verify: $(head -3 "$T/verify")"
fi

# default PREFIX=/usr/local; uninstall leaves nothing behind
make -s --no-print-directory install BUILD="$B" DESTDIR="$T/r2" >"$T/make.log" 2>&1 || { cat "$T/make.log"; fail "make install (default PREFIX)"; }
[ -x "$T/r2/usr/local/bin/gpuos" ] || fail "default PREFIX is not /usr/local"
grep -qx 'ExecStart=/usr/local/bin/gpuos serve --config /usr/local/etc/gpuos/gpuos.conf' \
    "$T/r2/usr/local/lib/systemd/system/gpuos.service" || fail "unit for PREFIX=/usr/local"
make -s --no-print-directory uninstall BUILD="$B" DESTDIR="$T/r2" >"$T/make.log" 2>&1 || fail "uninstall"
left=$(find "$T/r2" -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
# restore the build's default paths
make -s --no-print-directory BUILD="$B" >/dev/null 2>&1
echo "t_install: OK (version $v, $(wc -l < "$T/exported") symbols exported)"
