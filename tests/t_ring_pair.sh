#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_ring_pair.sh: two rings' grants at once under isolation = mps and overlap =
# pairs (issue 22.3, src/serve/ring_pair.c) on the simulated device, real
# processes; overlap = pairs is mps's default and needs mps. Two busy
# clients of vGPUs of equal shares and alike entries get companion grants
# (the daemon's grant log says so) and stay byte-exact on their rings; a busy
# pair keeps both working; a pair of unequal shares (70/30) or of unlike
# entries never runs as companions; a companion killed -9 mid-grant leaves
# the other on its ring; the daemon charges both vGPUs (their ring time); a
# tenant alternating 2 and 40 ms kernels never pairs (issue 44.4).
. "$(dirname "$0")/serve_lib.sh"
R="$B/tests/ring_client"
[ -x "$R" ] || fail "no $R"
export GPUOS_GRANT_LOG=1
start_daemon "[device 0]
sim = default
isolation = mps
overlap = pairs
[vgpu a]
compute = 35
[vgpu b]
compute = 35
[vgpu c]
compute = 30"
pairs() { grep -c "companion of" "$T/serve.log"; }
# busy_two A B SECS: ring_client busy on vGPUs A and B at once; A's output in
# $T/ba, B's in $out
busy_two() {
    timeout 60 "$R" busy "$1" "$3" > "$T/ba" 2>&1 &
    BA=$!
    out=$(timeout 60 "$R" busy "$2" "$3") || fail "busy $2 beside $1: $out"
    wait $BA || fail "busy $1 beside $2: $(cat "$T/ba")"
}

# 1. two busy clients of equal shares checking every byte they read back:
#    companions, both exact, every round through the ring
timeout 60 "$R" fills a 3 > "$T/fa" 2>&1 &
FA=$!
out=$(timeout 60 "$R" fills b 3) || fail "fills b: $out"
wait $FA || fail "fills a beside a companion: $(cat "$T/fa")"
n1=$(pairs)
echo "fills beside fills: a $(cat "$T/fa"), b $out; $n1 companion grants"
for o in "$out" "$(cat "$T/fa")"; do
    r=$(echo "$o" | sed -n 's/^fills rounds \([0-9]*\) ring_entries \([0-9]*\)/\1 \2/p')
    set -- $r
    [ "${1:-0}" -ge 20 ] && [ "${2:-0}" -ge $((3 * ${1:-1})) ] || fail "a client beside a companion: $o"
done
[ "$n1" -ge 1 ] || fail "two busy rings of equal shares never ran as companions"
timeout 120 "$R" exact a 2 > "$T/a1" 2>&1 &
A=$!
out=$(timeout 120 "$R" exact b 1.5) || fail "exact b: $out"
wait $A || { cat "$T/a1"; fail "exact a lost data"; }
for o in "$out" "$(tail -1 "$T/a1")"; do
    p=$(echo "$o" | sed -n 's/^exact passes \([0-9]*\) ring_passes \([0-9]*\) .*/\1 \2/p')
    set -- $p
    [ "${1:-0}" -ge 1 ] && [ "$1" = "${2:-x}" ] || fail "an exact client left its ring under mps: $o"
done

# 2. two busy clients of 1 ms kernels: both work, both vGPUs charged alike
a0=$(vgpu_field a compute_ns); b0=$(vgpu_field b compute_ns)
busy_two a b 1.5
ka=$(sed -n 's/^busy kernels \([0-9]*\)/\1/p' "$T/ba"); kb=$(echo "$out" | sed -n 's/^busy kernels \([0-9]*\)/\1/p')
echo "busy pair: a $ka kernels, b $kb kernels, $(( $(pairs) - n1 )) companion grants"
[ "${ka:-0}" -ge 200 ] && [ "${kb:-0}" -ge 200 ] || fail "a busy pair starved one: a ${ka:-0}, b ${kb:-0} kernels in 1.5 s"
[ $((ka * 10)) -ge $((kb * 6)) ] && [ $((kb * 10)) -ge $((ka * 6)) ] || fail "a busy pair of equal shares split $ka / $kb"
ca=$(( $(vgpu_field a compute_ns) - a0 )); cb=$(( $(vgpu_field b compute_ns) - b0 ))
echo "charged: a $((ca / 1000000)) ms, b $((cb / 1000000)) ms"
[ "$ca" -gt 300000000 ] && [ "$cb" -gt 300000000 ] || fail "a busy pair not charged: a $ca, b $cb ns"
[ $((ca / 1000000 * 10)) -ge $((cb / 1000000 * 6)) ] && [ $((cb / 1000000 * 10)) -ge $((ca / 1000000 * 6)) ] ||
    fail "a busy pair of equal shares charged $ca / $cb ns"

# 3. unequal shares (35 / 30): never companions
n2=$(pairs)
busy_two a c 1
[ "$(pairs)" = "$n2" ] || fail "vGPUs of 35 % and 30 % ran as companions"

# 4. a companion killed -9 mid-pair: the other stays exact, the daemon lives, the
#    next client of that vGPU gets a ring
n3=$(pairs)
timeout 60 "$R" fills a 6 > "$T/fa" 2>&1 &
FA=$!
"$R" fills b 20 > /dev/null 2>&1 &
K=$!
i=0; until [ "$(pairs)" -gt "$n3" ]; do i=$((i + 1)); [ $i -gt 100 ] && fail "no companion grants in 5 s"; sleep 0.05; done
sleep 0.2
kill -9 $K
wait $FA || fail "a client lost data when its companion was killed: $(cat "$T/fa")"
kill -0 "$DPID" || fail "the daemon died with a companion"
out=$(timeout 60 "$R" exact b) || fail "exact after the kill: $out"
echo "$out" | grep -q "ring_passes 1" || fail "no ring after the kill: $out"
echo "after a companion's kill -9: a $(cat "$T/fa"); $out"
stop_daemon

# 5. overlap = pairs is the default under mps (stop 36); overlap = off: never
#    companions. mps_two LINE: two busy vGPUs of 35 % under mps with LINE in the
#    device's section; $made: the companion grants made meanwhile
start_mps() {
    start_daemon "[device 0]
sim = default
isolation = mps
$1
[vgpu a]
compute = 35
[vgpu b]
compute = 35"
}
mps_two() {
    start_mps "$1"
    n5=$(pairs)
    busy_two a b 1
    made=$(($(pairs) - n5))
    stop_daemon
}
mps_two ""
[ "$made" -gt 0 ] || fail "no companion grants under mps by default"
mps_two "overlap = off"
[ "$made" = 0 ] || fail "$made companion grants with overlap = off"

# 5b. a tenant alternating 2 and 40 ms kernels beside a peer of 20 ms ones
#     (issue 44.4: paired by their alike means, it took 55 % against 20 %):
#     never companions (their longest entries differ, and 40 ms outlasts a
#     quarter of a grant), and its charged share stays near its peer's
start_mps ""
n5=$(pairs)
timeout 60 "$R" kernels a 2 2000 40000 > "$T/alt" 2>&1 &
AP=$!
out=$(timeout 60 "$R" kernels b 2 20000) || fail "kernels b: $out"
wait $AP || fail "alternating a: $(cat "$T/alt")"
made=$(($(pairs) - n5))
a=$(vgpu_field a compute_ns); b=$(vgpu_field b compute_ns)
echo "2/40 ms alternating beside 20 ms: $made companion grants; a $(cat "$T/alt"), b $out; charged a $a b $b"
[ "$made" = 0 ] || fail "a tenant of 2 and 40 ms kernels ran as a companion ($made grants)"
$PY -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if abs(a - b) / (a + b) < 0.1 else 1)" "$a" "$b" ||
    fail "charged a $a b $b: not alike"
stop_daemon

# 6. overlap = pairs needs mps; a bad value is named
for bad in "isolation = process
overlap = pairs|needs isolation = mps" "isolation = mps
overlap = yes|overlap must be off or pairs"; do
    { echo "socket = $T/s2"; echo "[device 0]"; echo "sim = default"; echo "${bad%|*}"; echo "[vgpu a]"; } > "$T/bad.conf"
    out=$(timeout 20 "$G" serve --config "$T/bad.conf" 2>&1) && fail "accepted: ${bad%|*}"
    [ "$(echo "$out" | wc -l)" -le 2 ] && echo "$out" | grep -q "${bad#*|}" || fail "no clear refusal of ${bad%|*}: $out"
    echo "refused: $out"
done
echo ok
