#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# t_serve_metrics.sh: the Prometheus endpoint of `gpuos serve` (metrics_listen),
# scraped with a real HTTP client (python3 urllib), the exposition format
# validated strictly (tests/metrics_check.py, and prometheus_client's parser when
# Debian's python3-prometheus-client is installed), and the values checked
# against what the test did: bytes allocated, clients, GPU seconds after 2 ms
# kernels, copy seconds after copies, shares after `vgpu set`, reload counters,
# the chip's facts from the simulated chip and from a chip = file; scrapes
# answered while slow connections from their own address are held (issue 44.5).
set -u
. tests/serve_lib.sh

# the format checker must catch malformed expositions
$PY tests/metrics_check.py --selftest || fail "metrics_check.py accepts malformed text"
PORT=$(free_port)
URL="http://127.0.0.1:$PORT/metrics"
scrape() { $PY tests/metrics_check.py "$URL" "$T/m.json" >"$T/mc.out" 2>&1 || { cat "$T/mc.out"; fail "scrape of $URL"; }; }
# m SERIES: the value of the one series of the last scrape whose labels include
# those given (in any order; the device's dcgm-exporter labels need not be named)
m() { $PY -c "
import json, re, sys
d = json.load(open('$T/m.json'))
name, lab = re.match(r'([^{]*)\{(.*)\}$', sys.argv[1]).groups()
want = set(re.findall(r'[A-Za-z_]+=\"[^\"]*\"', lab))
hit = [v for k, v in d.items() if k.split('{')[0] == name and want <= set(re.findall(r'[A-Za-z_]+=\"[^\"]*\"', k))]
print(repr(hit[0]) if len(hit) == 1 else 'MISSING' if not hit else 'AMBIGUOUS')" "$1"; }
# near A B TOL: |A - B| <= TOL
near() { $PY -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b)<=t else 1)" "$1" "$2" "$3"; }
ge() { $PY -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if a>=b else 1)" "$1" "$2"; }

# a chip file for device 1: the simulated chip as probed, with only 8 of GPC 0's
# SMs eligible for large clusters, so that its figures differ from device 0's
# (the simulated chip's own truth)
"$G" probe all --sim default --json "$T/full.json" >/dev/null 2>&1 || fail "probe for the chip file"
$PY - "$T/full.json" "$T/chip.json" "$T/expect.json" <<'PY' || fail "chip file"
import json, sys
d = json.load(open(sys.argv[1]))
g0 = d["topology"]["gpcs"][0]
assert len(g0["cluster_sms"]) > 8
g0["cluster_sms"] = g0["cluster_sms"][:8]
json.dump(d, open(sys.argv[2], "w"))
g = d["topology"]["gpcs"]
parts = d["numa"]["partitions"]
conc = {k: sum((len(x["sms"]) if k <= 2 else len(x["cluster_sms"])) // k for x in g) for k in (2, 4, 8, 16)}
json.dump({"gpcs": len(g), "sms": [len(x["sms"]) for x in g], "cluster": [len(x["cluster_sms"]) for x in g],
           "max_cluster": max(x.get("max_cluster", 0) for x in g), "conc": conc,
           "parts": [len(p["sms"]) for p in parts]}, open(sys.argv[3], "w"))
PY

# bad listen addresses: the line and the reason
printf 'metrics_listen = 127.0.0.1\n[device 0]\nsim = default\n[vgpu a]\n' > "$T/bad.conf"
out=$("$G" serve --config "$T/bad.conf" --socket "$T/bad.sock" 2>&1) && fail "metrics_listen without a port accepted"
echo "$out" | grep -q "bad.conf:1: metrics_listen \"127.0.0.1\" must be HOST:PORT" || fail "bad listen message: $out"

start_daemon "metrics_listen = 127.0.0.1:$PORT
[device 0]
sim = default
[device 1]
sim = default
chip = $T/chip.json
[vgpu a]
device = 0
compute = 60
copy = 40
memory = 64M
[vgpu b]
device = 0
compute = 40
copy = 60
memory = 1G
[vgpu c]
device = 1
compute = 100
cgroup = /user.slice/batch
[vgpu d]
device = 1
compute = 10
users = 1, 2
cgroup = /system.slice/slurmstepd.scope/job_4242 freezer:/slurm/uid_1/job_4242"
grep -q "metrics on http://127.0.0.1:$PORT/metrics" "$T/serve.log" || fail "metrics endpoint not announced"
# a second daemon on the same port: a clear error
sed "s|^socket = .*|socket = $T/s2|" "$T/conf" > "$T/conf2"
out=$("$G" serve --config "$T/conf2" 2>&1) && fail "second daemon on the metrics port started"
echo "$out" | grep -q "metrics_listen = 127.0.0.1:$PORT: cannot listen there" || fail "port in use message: $out"
[ ! -S "$T/s2" ] || fail "socket of the failed daemon left"

scrape
A='gpu="0",vgpu="a"'; B='gpu="0",vgpu="b"'
[ "$(m "gpuos_vgpu_share_ratio{$A,engine=\"compute\"}")" = 0.6 ] || fail "share of a: $(m "gpuos_vgpu_share_ratio{$A,engine=\"compute\"}")"
[ "$(m "gpuos_vgpu_share_ratio{$A,engine=\"copy\"}")" = 0.4 ] || fail "copy share of a"
[ "$(m "gpuos_vgpu_memory_quota_bytes{$A}")" = 67108864.0 ] || fail "quota of a: $(m "gpuos_vgpu_memory_quota_bytes{$A}")"
[ "$(m "gpuos_vgpu_memory_quota_bytes{$B}")" = 1073741824.0 ] || fail "quota of b"
[ "$(m "gpuos_vgpu_memory_used_bytes{$A}")" = 0.0 ] || fail "memory used before any client"
[ "$(m "gpuos_vgpu_clients{$A}")" = 0.0 ] || fail "clients before any"
[ "$(m "gpuos_vgpu_faults_total{$A}")" = 0.0 ] || fail "faults"
[ "$(m "gpuos_vgpu_busy_seconds_total{$B,engine=\"compute\"}")" = 0.0 ] || fail "busy before any work"
[ "$(m "gpuos_vgpu_info{$A,policy=\"band\",queue=\"mrq\",state=\"active\"}")" = 1.0 ] || fail "info of a"
# the job and user labels of every vGPU series (issue 43): the Slurm job id of a
# cgroup = naming job_N, else the cgroup; the ids of users =; "" for neither
[ "$(m "gpuos_vgpu_info{gpu=\"1\",vgpu=\"d\",job=\"4242\",user=\"1,2\"}")" = 1.0 ] || fail "job and user labels of d"
[ "$(m "gpuos_vgpu_info{gpu=\"1\",vgpu=\"c\",job=\"/user.slice/batch\",user=\"\"}")" = 1.0 ] || fail "job label of c"
[ "$(m "gpuos_vgpu_memory_quota_bytes{$A,job=\"\",user=\"\"}")" = 67108864.0 ] || fail "a's series without job and user"
[ "$(m "gpuos_vgpu_queued_requests{gpu=\"1\",vgpu=\"d\",job=\"4242\",engine=\"copy\"}")" = 0.0 ] || fail "queued requests' job"
$PY -c "
import json, re, sys
bad = [k for k in json.load(open('$T/m.json')) if k.startswith('gpuos_vgpu_') and not ('job=\"' in k and 'user=\"' in k)]
sys.exit('series without job or user: %s' % bad[:3] if bad else 0)" || fail "a vGPU series without the job and user labels"
# nothing queued while idle; a refused connection counted (issue 43.7)
[ "$(m "gpuos_vgpu_queued_requests{$A,engine=\"compute\"}")" = 0.0 ] || fail "queued requests of an idle vGPU"
[ "$(m "gpuos_connections_refused_total{}")" = 0.0 ] || fail "refused before any: $(m "gpuos_connections_refused_total{}")"
timeout 30 "$C" copy d 4096 >/dev/null 2>&1 && fail "root opened vGPU d (users = 1)"
scrape
[ "$(m "gpuos_connections_refused_total{}")" = 1.0 ] || fail "a refused connection not counted: $(m "gpuos_connections_refused_total{}")"
# every device's series carry dcgm-exporter's labels of that GPU, every one the same set
$PY - "$T/m.json" "$(hostname)" <<'PY' || fail "dcgm-exporter's labels / gpuos_device_info / gpuos_build_info"
import json, re, sys
d, host = json.load(open(sys.argv[1])), sys.argv[2]
lab = lambda k: dict(re.findall(r'([A-Za-z_]+)="([^"]*)"', k))
info = {lab(k)["gpu"]: lab(k) for k, v in d.items() if k.startswith("gpuos_device_info{") and v == 1}
assert sorted(info) == ["0", "1"], info
for g, l in info.items():
    assert l["device"] == "nvidia" + g and l["modelName"] == "NVIDIA H200" and l["Hostname"] == host, l
    assert l["UUID"].startswith("SIM-") and l["backend"] == "sim" and l["gpuos_device"] == g, l
dcgm = ("gpu", "UUID", "device", "modelName", "Hostname")
for k in d:
    name = k.split("{")[0]
    if name.startswith(("gpuos_vgpu_", "gpuos_device_", "gpuos_chip_")):
        l = lab(k)
        assert all(x in l for x in dcgm), k
        assert {x: l[x] for x in dcgm} == {x: info[l["gpu"]][x] for x in dcgm}, k
b = [lab(k) for k, v in d.items() if k.startswith("gpuos_build_info{") and v == 1]
v = re.search(r'GOS_VERSION "(.*)"', open("src/common/version.h").read()).group(1)
assert len(b) == 1 and b[0]["version"] == v and int(b[0]["protocol"]) >= 1, b
PY
# the chip's facts: device 1 from its chip = file, device 0 from the simulated chip
$PY - "$T/m.json" "$T/expect.json" <<'PY' || fail "chip metrics"
import json, re, sys
m, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def get(name, **lab):
    want = {'%s="%s"' % kv for kv in lab.items()}
    hit = [v for k, v in m.items() if k.split("{")[0] == name and want <= set(re.findall(r'[A-Za-z_]+="[^"]*"', k))]
    if len(hit) != 1:
        sys.exit("%d series of %s %s" % (len(hit), name, lab))
    return hit[0]
assert get("gpuos_chip_gpcs", gpu="1") == e["gpcs"], (get("gpuos_chip_gpcs", gpu="1"), e["gpcs"])
for i, n in enumerate(e["sms"]):
    assert get("gpuos_chip_gpc_sms", gpu="1", gpc=str(i)) == n
    assert get("gpuos_chip_gpc_cluster_sms", gpu="1", gpc=str(i)) == e["cluster"][i]
assert not [k for k in m if k.startswith("gpuos_chip_gpc_sms{") and 'gpu="1"' in k and 'gpc="%d"' % e["gpcs"] in k]
e["conc"] = {int(k): v for k, v in e["conc"].items()}
for k, n in e["conc"].items():
    assert get("gpuos_chip_concurrent_clusters", gpu="1", size=str(k)) == n, (k, n)
assert get("gpuos_chip_max_cluster_size", gpu="1") == e["max_cluster"]
assert get("gpuos_chip_partitions", gpu="1") == len(e["parts"])
for i, n in enumerate(e["parts"]):
    assert get("gpuos_chip_partition_sms", gpu="1", partition=str(i)) == n
# device 0: the simulated H200's own truth: more large-cluster SMs in GPC 0, 132 SMs in all
g0 = int(get("gpuos_chip_gpcs", gpu="0"))
assert g0 == e["gpcs"], g0
assert get("gpuos_chip_gpc_cluster_sms", gpu="0", gpc="0") > 8
assert get("gpuos_chip_concurrent_clusters", gpu="0", size="8") > e["conc"][8]
assert sum(get("gpuos_chip_gpc_sms", gpu="0", gpc=str(i)) for i in range(g0)) == 132
assert get("gpuos_chip_partitions", gpu="0") >= 1
# the simulated chip's largest cluster, as its probe finds it (and its labels say)
assert get("gpuos_chip_max_cluster_size", gpu="0") == 16, get("gpuos_chip_max_cluster_size", gpu="0")
assert get("gpuos_device_memory_bytes", gpu="0") > 1e10
PY

# memory and clients: a client holding 10,000,000 bytes
timeout 30 "$C" hold a 10000000 3 >"$T/hold" 2>&1 &
HP=$!
wait_field a mem_used 10000000
scrape
[ "$(m "gpuos_vgpu_memory_used_bytes{$A}")" = 10000000.0 ] || fail "memory used: $(m "gpuos_vgpu_memory_used_bytes{$A}")"
[ "$(m "gpuos_vgpu_clients{$A}")" = 1.0 ] || fail "clients of a: $(m "gpuos_vgpu_clients{$A}")"
ge "$(m gpuos_clients{})" 1 || fail "gpuos_clients"
wait $HP || { cat "$T/hold"; fail "hold client"; }

# GPU time: N launches of 2 ms kernels on b; the compute seconds grow by at least
# N x 2 ms (each kernel's time is measured between two events) and by at most the
# wall time of the run (one kernel at a time on the compute engine)
scrape
c0=$(m "gpuos_vgpu_busy_seconds_total{$B,engine=\"compute\"}"); k0=$(m "gpuos_vgpu_tasks_total{$B}")
t0=$(date +%s.%N)
timeout 30 "$C" burst b 2000000 1 >"$T/burst" 2>&1 || { cat "$T/burst"; fail "burst"; }
t1=$(date +%s.%N)
n=$(sed -n 's/^launches //p' "$T/burst")
scrape
c1=$(m "gpuos_vgpu_busy_seconds_total{$B,engine=\"compute\"}"); k1=$(m "gpuos_vgpu_tasks_total{$B}")
$PY -c "
import sys
n, c0, c1, t0, t1, k0, k1 = int('$n'), $c0, $c1, $t0, $t1, $k0, $k1
d = c1 - c0
ok = n > 10 and d >= n * 0.002 * 0.99 and d <= (t1 - t0) + 0.01 and k1 - k0 >= n
sys.exit(0 if ok else 'compute seconds +%.4f for %d launches of 2 ms in %.3f s wall; tasks +%d' % (d, n, t1 - t0, k1 - k0))
" || fail "compute seconds"
ge "$(m "gpuos_vgpu_busy_seconds_total{$A,engine=\"compute\"}")" 0 || fail "a's compute seconds"
x0=$(m "gpuos_vgpu_busy_seconds_total{$A,engine=\"copy\"}")
timeout 30 "$C" copy a 5000000 >/dev/null || fail "copy"
wait_field a mem_used 0 # the client's memory is freed once the daemon has seen it go
scrape
x1=$(m "gpuos_vgpu_busy_seconds_total{$A,engine=\"copy\"}")
$PY -c "import sys; sys.exit(0 if $x1 > $x0 else 1)" || fail "copy seconds did not grow ($x0 -> $x1)"
[ "$(m "gpuos_vgpu_memory_used_bytes{$A}")" = 0.0 ] || fail "memory not released in the metrics"

# vgpu set and reloads show up
"$G" vgpu set a compute=30 || fail "vgpu set"
scrape
[ "$(m "gpuos_vgpu_share_ratio{$A,engine=\"compute\"}")" = 0.3 ] || fail "share after vgpu set"
[ "$(m gpuos_config_reloads_total{})" = 0.0 ] && [ "$(m gpuos_config_last_reload_successful{})" = 1.0 ] ||
    fail "reload metrics at start"
cp "$T/conf" "$T/conf.good"
echo "bogus line" >> "$T/conf"
kill -HUP "$DPID"
i=0; while ! grep -q "reload rejected" "$T/serve.log"; do i=$((i+1)); [ $i -gt 100 ] && fail "no rejection"; sleep 0.1; done
scrape
[ "$(m gpuos_config_reload_failures_total{})" = 1.0 ] && [ "$(m gpuos_config_last_reload_successful{})" = 0.0 ] ||
    fail "failed reload not counted"
cp "$T/conf.good" "$T/conf"
kill -HUP "$DPID"
i=0; while ! grep -q "reloaded" "$T/serve.log"; do i=$((i+1)); [ $i -gt 100 ] && fail "no reload"; sleep 0.1; done
scrape
[ "$(m gpuos_config_reloads_total{})" = 1.0 ] && [ "$(m gpuos_config_last_reload_successful{})" = 1.0 ] ||
    fail "reload not counted"
[ "$(m "gpuos_vgpu_share_ratio{$A,engine=\"compute\"}")" = 0.3 ] || fail "vgpu set lost at a reload of an unchanged file"

# other paths and methods
code=$($PY -c "
import urllib.request, urllib.error
for url, method in (('http://127.0.0.1:$PORT/', 'GET'), ('$URL', 'POST')):
    try:
        urllib.request.urlopen(urllib.request.Request(url, method=method, data=b'x' if method == 'POST' else None), timeout=10)
        print(200, end=' ')
    except urllib.error.HTTPError as e:
        print(e.code, end=' ')
")
[ "$code" = "404 405 " ] || fail "other path / POST answered $code"

# slowloris from the scraper's own address (issue 44.5): 12 slow connections from
# 127.0.0.1, each opened again whenever closed; every scrape from 127.0.0.1 is
# answered within 1 s while 8 of them stay held (f2db5de: 0 of 12 answered)
r=$(timeout 30 $PY tests/slowloris.py "$PORT" --same 12 2>&1) || fail "slowloris.py --same: $r"
echo "$r" | grep -q "scrapes=12/12 " || fail "scrapes under slow connections from their own address: $r"
$PY -c "import sys; sys.exit(0 if float(sys.argv[1].split('max_s=')[1]) < 1.0 else 1)" "$r" ||
    fail "a scrape took 1 s or more under slow connections: $r"
echo "$r" | grep -q "^held=8 " || fail "not 8 slow connections held from one address: $r"
kill -0 "$DPID" || fail "daemon died under slowloris"
stop_daemon
# without metrics_listen: no endpoint
start_daemon "[device 0]
sim = default
[vgpu a]"
grep -q "metrics on" "$T/serve.log" && [ "$(grep -c 'metrics on' "$T/serve.log")" -gt 1 ] && fail "endpoint without metrics_listen"
$PY -c "import urllib.request; urllib.request.urlopen('$URL', timeout=5)" 2>/dev/null && fail "endpoint still answering"
stop_daemon
echo "t_serve_metrics: ok"
