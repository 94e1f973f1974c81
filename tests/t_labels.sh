#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_labels.sh: node-feature-discovery labels and several GPUs, on simulated chips
# whose truth is known: `gpuos labels CHIP.json` must give exactly the values an
# independent Python reading of the chip file gives (GPC configuration, clusters
# of 2/4/8/16 at once, largest cluster, free-floating SMs, partition sizes, hash
# granularity); `gpuos probe topology --sim A,B --nfd F` must chart each GPU and
# label it with its own chip's values (gpu-0.*, gpu-1.*) and the node with the
# worst; the device selection (--device all / index / UUID / PCI bus id) picks the
# right simulated GPU; `gpuos node` gives the links of every ordered pair as the
# chip files set them; malformed input fails with one line.
set -u
G=${GPUOS:-build/gpuos}
PY=/usr/bin/python3
T=$(mktemp -d); DPID=
trap '[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export GPUOS_SOCKET="$T/none.sock" # no daemon: no sharing labels (one is started below)

# Ragged chips made by an independent generator, with partitions and hash.
$PY - "$T" <<'PYEOF'
import json, random, sys
out = sys.argv[1]
for k in range(6):
    rnd = random.Random(77 + k)
    n_gpcs = rnd.randint(5, 8)
    sizes = [rnd.randint(10, 18) for _ in range(n_gpcs)]
    ids = list(range(sum(sizes))); rnd.shuffle(ids)
    gpcs, pos = [], 0
    for s in sizes:
        sms = ids[pos:pos + s]; pos += s
        n_free = rnd.choice([0, 0, 2, 4])
        g = {"sms": sms, "cluster_sms": sms[n_free:], "tpcs": [sms[i:i + 2] for i in range(0, s, 2)]}
        if k % 2:
            g["max_cluster"] = 16 if k != 3 else 8
        gpcs.append(g)
    allsms = sorted(ids[:pos]); half = len(allsms) // 2 + k % 3
    chip = {"schema": "gpuos.chip/1",
            "device": {"name": "py chip %d (test)" % k, "uuid": "SIM-py-%d" % k, "sm_count": pos},
            "topology": {"gpcs": gpcs},
            "numa": {"partitions": [{"sms": allsms[:half]}, {"sms": allsms[half:]}],
                     "hash": {"granularity_bytes": 4096 << (k % 3), "in_page_bits": [12, 13]}},
            "sim": {"seed": k, "jitter": 0.02, "l2_gbps_per_sm": 200, "l2_gbps_per_gpc": 1400,
                    "p2p": {"access": k != 2, "gbps": 100.0 + 10 * k, "latency_us": 1.5 + k,
                            "host_gbps": 20.0 + k}}}
    json.dump(chip, open(f"{out}/c{k}.json", "w"))
PYEOF

# expected NFD_LINES of chip files (python, from the files alone) -> $T/expect
expect() { # topology_only chips...
    $PY - "$@" <<'PYEOF'
import json, sys
from collections import Counter
topo_only = sys.argv[1] == "1"
chips = [json.load(open(p)) for p in sys.argv[2:]]
def facts(c):
    g = c["topology"]["gpcs"]
    f = {}
    f["sm-count"] = c["device"]["sm_count"]
    f["gpc-count"] = len(g)
    sizes = Counter(len(x["sms"]) for x in g)
    f["gpc-config"] = "_".join(f"{sizes[s]}x{s}" for s in sorted(sizes))
    f["gpc-sms-min"] = min(len(x["sms"]) for x in g)
    f["gpc-sms-max"] = max(len(x["sms"]) for x in g)
    f["ragged"] = "true" if len({len(x["cluster_sms"]) for x in g}) > 1 else "false"
    mc = max([x.get("max_cluster", 0) for x in g]) or c["topology"].get("max_cluster_size", 0)
    if not mc and max(len(x["cluster_sms"]) for x in g) > 2:  # known by its GPCs alone: what they host, up to 16
        mc = min(16, max(len(x["cluster_sms"]) for x in g))
    for k in (2, 4, 8, 16):
        f[f"clusters-{k}"] = 0 if mc and k > mc else sum(
            (len(x["sms"]) if k <= 2 else len(x["cluster_sms"])) // k for x in g)
    if mc:
        f["max-cluster-size"] = mc
    f["cluster-sms"] = sum(len(x["cluster_sms"]) for x in g)
    f["free-floating-sms"] = sum(len(x["sms"]) - len(x["cluster_sms"]) for x in g)
    if not topo_only:
        p = c["numa"]["partitions"]
        f["partitions"] = len(p)
        f["partition-sms"] = "_".join(str(len(x["sms"])) for x in p)
        f["hash-granularity"] = c["numa"]["hash"]["granularity_bytes"]
    return f
fs = [facts(c) for c in chips]
lines = set()
if len(fs) == 1:
    lines |= {f"gpuos.io/{k}={v}" for k, v in fs[0].items()}
else:
    for i, f in enumerate(fs):
        lines |= {f"gpuos.io/gpu-{i}.{k}={v}" for k, v in f.items()}
    lo = lambda k: min(f[k] for f in fs)
    for k in ("clusters-2", "clusters-4", "clusters-8", "clusters-16", "cluster-sms", "sm-count"):
        lines.add(f"gpuos.io/{k}={lo(k)}")
    lines.add("gpuos.io/free-floating-sms=%d" % max(f["free-floating-sms"] for f in fs))
for l in sorted(lines):
    print(l)
PYEOF
}
# the labels a file holds, for the keys python computes (simulated aside)
have() { grep -v '^#' "$1" | grep -v -e 'simulated=' | sort; }
check_format() {
    grep -v '^#' "$1" | grep -Ev '^gpuos\.io/[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?=([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$' &&
        fail "$1: a line is not a valid NFD label"
    return 0
}

for k in 0 1 2 3 4 5; do
    "$G" labels "$T/c$k.json" --nfd "$T/l$k" || fail "labels c$k"
    check_format "$T/l$k"
    expect 0 "$T/c$k.json" > "$T/e$k"
    have "$T/l$k" > "$T/h$k"
    # every expected line present; no key beyond simulated that python lacks
    missing=$(comm -23 "$T/e$k" "$T/h$k"); extra=$(comm -13 "$T/e$k" "$T/h$k")
    [ -z "$missing$extra" ] || fail "labels of c$k: missing [$missing] extra [$extra]"
    # nothing NVIDIA's GPU feature discovery publishes (nvidia.com/gpu.product, gpu.count)
    grep -q -e 'product=' -e 'gpu-count=' "$T/l$k" && fail "a label GFD publishes: $(grep -e product -e gpu-count "$T/l$k")"
    # stdout form equals the file (but for the expiry time, written a moment later)
    "$G" labels "$T/c$k.json" | grep -v '^# +expiry-time=' > "$T/so"
    grep -v '^# +expiry-time=' "$T/l$k" | cmp -s - "$T/so" || fail "labels to stdout differ from --nfd"
done
echo "labels of chip files: ok"

# NFD's expiry: "# +expiry-time=" RFC 3339 UTC, 24 h ahead by default, --nfd-expiry
# sets it, 0 leaves it out
exp_in() { $PY -c "
import datetime, re, sys
m = re.findall(r'^# \+expiry-time=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$', open(sys.argv[1]).read(), re.M)
assert len(m) == 1, m
t = datetime.datetime.strptime(m[0], '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc)
print(round((t - datetime.datetime.now(datetime.timezone.utc)).total_seconds()))" "$1"; }
d=$(exp_in "$T/l0") || fail "no expiry line: $(head -3 "$T/l0")"
[ "$d" -ge 86390 ] && [ "$d" -le 86401 ] || fail "default expiry $d s ahead, not 24 h"
"$G" labels "$T/c0.json" --nfd "$T/x7" --nfd-expiry 7d || fail "--nfd-expiry 7d"
d=$(exp_in "$T/x7"); [ "$d" -ge 604790 ] && [ "$d" -le 604801 ] || fail "7d expiry $d s ahead"
"$G" labels "$T/c0.json" --nfd-expiry=0 | grep -q expiry && fail "--nfd-expiry=0 still writes an expiry"
"$G" labels "$T/c0.json" --nfd-expiry 3x >/dev/null 2>&1 && fail "--nfd-expiry 3x accepted"
# the temporary file is .NAME.tmp.PID beside it (NFD's watcher skips dot-files): a
# directory of exactly that name in the way makes the write fail; without it the
# same command succeeds
mkdir "$T/fd"
sh -c 'mkdir "$1/.gpuos.tmp.$$" && exec "$2" labels "$3" --nfd "$1/gpuos"' sh "$T/fd" "$G" "$T/c0.json" 2>/dev/null &&
    fail "the temporary file is not .gpuos.tmp.PID"
[ ! -e "$T/fd/gpuos" ] || fail "a feature file written despite the failed temporary"
sh -c 'exec "$2" labels "$3" --nfd "$1/gpuos"' sh "$T/fd" "$G" "$T/c0.json" || fail "--nfd into features dir"
[ "$(ls -A "$T/fd" | grep -vc '^\.gpuos\.tmp\.[0-9]*$')" -eq 1 ] || fail "left in the features dir: $(ls -A "$T/fd")"
echo "NFD expiry and dot-file temporary: ok"

# probe --nfd on the simulated GPUs: the chart found must give the truth's labels
"$G" probe topology --sim "$T/c1.json" --nfd "$T/p1" >/dev/null || fail "probe --nfd c1"
check_format "$T/p1"
expect 1 "$T/c1.json" > "$T/e"
grep -q '^gpuos.io/simulated=true$' "$T/p1" || fail "simulated chart not labelled simulated"
# the probe measures the largest cluster itself (16 on the simulated device)
have "$T/p1" | grep -v max-cluster-size > "$T/h"; grep -v max-cluster-size "$T/e" > "$T/e2"
cmp -s "$T/e2" "$T/h" || { diff "$T/e2" "$T/h"; fail "probe --nfd labels differ from the chip file's truth"; }

mkdir "$T/charts"
"$G" probe topology --sim "$T/c0.json,$T/c1.json,$T/c4.json" --json "$T/charts" --nfd "$T/p3" > "$T/p3.out" ||
    fail "probe of three simulated GPUs"
[ "$(grep -c '^== GPU' "$T/p3.out")" -eq 3 ] || fail "not three GPUs charted"
for i in 0 1 4; do
    [ -f "$T/charts/SIM-py-$i-"*.json ] || fail "no chart of c$i in $(ls "$T/charts")"
done
check_format "$T/p3"
# per GPU: its own chip's values; the node: the worst GPU's (python's min / max)
expect 1 "$T/c0.json" "$T/c1.json" "$T/c4.json" | grep -v -e max-cluster-size > "$T/e"
have "$T/p3" | grep -v -e max-cluster-size > "$T/h"
missing=$(comm -23 "$T/e" "$T/h")
[ -z "$missing" ] || fail "three-GPU labels missing: $missing"
grep -q 'gpu-count=' "$T/p3" && fail "gpu-count: GFD's nvidia.com/gpu.count already says it"
echo "probe --nfd on simulated GPUs: ok"

# device selection among simulated GPUs (as nvidia-smi -i)
L="$T/c0.json,$T/c1.json,$T/c2.json"
[ "$("$G" info --sim "$L" --device all | grep -c '^GPU ')" -eq 3 ] || fail "--device all"
"$G" info --sim "$L" --device 2 | grep -q 'UUID: SIM-py-2-2)' || fail "--device 2"
"$G" info --sim "$L" --device SIM-py-1 | grep -q 'UUID: SIM-py-1-1)' || fail "--device UUID prefix"
"$G" info --sim "$L" --device sim:0,sim:2 --json "$T/info.json" >/dev/null || fail "--device PCI list"
$PY -c "import json,sys; d=json.load(open(sys.argv[1]))['devices']; assert [x['uuid'] for x in d]==['SIM-py-0-0','SIM-py-2-2'], d" "$T/info.json" ||
    fail "--device sim:0,sim:2 chose the wrong GPUs"
out=$("$G" info --sim "$L" --device GPU-nosuch 2>&1) && fail "unknown UUID accepted"
[ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "no GPU with this UUID" || fail "unknown UUID: $out"
out=$("$G" info --sim "$T/c0.json,$T/c0.json" --device SIM-py 2>&1) && fail "ambiguous prefix accepted"
echo "$out" | grep -q "more than one GPU" || fail "ambiguous: $out"

# gpuos node: every ordered pair, values of the source chip's sim.p2p
"$G" node --sim "$L" --json "$T/node.json" > "$T/node.out" || fail "node"
$PY - "$T/node.json" "$T/c0.json" "$T/c1.json" "$T/c2.json" <<'PYEOF' || fail "node view"
import json, sys
n = json.load(open(sys.argv[1]))
chips = [json.load(open(p)) for p in sys.argv[2:]]
assert n["schema"] == "gpuos.node/1"
assert [g["index"] for g in n["gpus"]] == [0, 1, 2]
assert all(g["simulated"] for g in n["gpus"])
pairs = {(l["src"], l["dst"]): l for l in n["links"]}
assert sorted(pairs) == [(a, b) for a in range(3) for b in range(3) if a != b], sorted(pairs)
for (a, b), l in pairs.items():
    p = chips[a]["sim"]["p2p"]
    assert l["peer_access"] is p["access"], (a, b, l)
    assert abs(l["gbps"] - (p["gbps"] if p["access"] else p["host_gbps"])) < 1e-9, (a, b, l)
    assert abs(l["latency_us"] - p["latency_us"]) < 1e-9, (a, b, l)
PYEOF
grep -q "^GPU 2 *no *no *-$" "$T/node.out" || { cat "$T/node.out"; fail "peer access row of GPU 2"; }
"$G" node --sim default > "$T/one.out" || fail "node with one GPU"
grep -q "One GPU: no GPU-to-GPU links" "$T/one.out" || fail "one-GPU node"
echo "node view: ok"

# a node whose GPU a gpuos daemon shares says so (issue 43.7): the daemon's vGPUs
printf 'socket = %s\n[device 0]\nsim = default\n[vgpu a]\ncompute = 50\nmemory = 10%%\n[vgpu b]\ncompute = 50\nmemory = 10%%\n[vgpu c]\ncompute = 10\nmemory = 1G\n' \
    "$T/d.sock" > "$T/d.conf"
"$G" labels "$T/c0.json" > "$T/unshared" || fail "labels without a daemon"
grep -q -e '^gpuos.io/shared=' -e '^gpuos.io/vgpus=' "$T/unshared" && fail "sharing labels without a daemon"
"$G" serve --config "$T/d.conf" 2>"$T/serve.log" &
DPID=$!
i=0; while [ ! -S "$T/d.sock" ]; do
    i=$((i + 1)); [ $i -gt 100 ] || ! kill -0 "$DPID" 2>/dev/null && fail "daemon: $(cat "$T/serve.log")"; sleep 0.1
done
GPUOS_SOCKET="$T/d.sock" "$G" labels "$T/c0.json" > "$T/shared" || fail "labels with a daemon"
grep -qx 'gpuos.io/shared=true' "$T/shared" && grep -qx 'gpuos.io/vgpus=3' "$T/shared" ||
    fail "sharing labels: $(grep -e shared -e vgpus "$T/shared")"
[ "$(grep -v -e '^gpuos.io/shared=' -e '^gpuos.io/vgpus=' -e '^# +expiry' "$T/shared")" = "$(grep -v '^# +expiry' "$T/unshared")" ] ||
    fail "the sharing labels changed others"
GPUOS_SOCKET="$T/d.sock" "$G" probe topology --sim default --nfd "$T/p.nfd" >/dev/null || fail "probe --nfd with a daemon"
grep -qx 'gpuos.io/vgpus=3' "$T/p.nfd" || fail "probe --nfd: no vgpus label"
kill -TERM "$DPID"; wait "$DPID"; DPID=
echo "sharing labels: ok"

# --nfd labels this node's GPU: without --device or --sim on a node without a
# GPU it fails and writes nothing (issue 43.7: it labelled the simulated H200)
if "$G" info --device 0 2>&1 >/dev/null | grep -q "no GPU"; then
    out=$("$G" probe topology --nfd "$T/nogpu.nfd" 2>&1) && fail "probe --nfd without a GPU succeeded"
    [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "no labels written (--sim CHIP labels a simulated chip)" ||
        fail "probe --nfd without a GPU: $out"
    [ ! -e "$T/nogpu.nfd" ] || fail "probe --nfd without a GPU wrote labels"
    echo "probe --nfd without a GPU: refused"
fi

# malformed input: one line, non-zero exit
printf '{"schema": "gpuos.chip/1", "device": {"sm_count": 4}}' > "$T/notopo.json"
for args in "labels $T/notopo.json" "labels $T/missing.json" "labels" "labels $T/c0.json --nfd /nonexistent/dir/f" \
    "node --bytes 1" "probe topology --device frob"; do
    out=$($G $args 2>&1) && fail "accepted: $args"
    [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "not one line: $args: $out"
done
[ ! -e /nonexistent/dir/f ] || fail "partial file"
ls -a "$T" | grep -q '^\.l0\.tmp\.' && fail "temporary label file left behind"
echo "t_labels: ok"
