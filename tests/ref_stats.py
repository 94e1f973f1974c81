#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ref_stats.py: src/stats against numpy / scipy / sklearn on random data.

Runs build/tests/stats_tool (tests/stats_tool.c) on seeded random samples and
compares means, variances, standard errors, confidence intervals, t quantiles,
Welch and Student t-tests, numpy quantiles, DBSCAN labels (exact), silhouette
scores, the paper's adaptive DBSCAN (algorithm 3, re-implemented here over
sklearn) and box-plot numbers (numpy quartiles, scipy's IQR, whiskers at the most
extreme values within 1.5 IQR as matplotlib's boxplot draws them). Exits non-zero on the first disagreement."""
import json, math, os, subprocess, sys, tempfile
import numpy as np
from scipy import stats
from sklearn.cluster import DBSCAN
from sklearn.metrics import silhouette_score

BUILD = os.environ.get("BUILD", "build")
TOOL = os.path.join(BUILD, "tests", "stats_tool")
tmp = tempfile.mkdtemp()
rng = np.random.default_rng(20260)
checks = 0


def tool(*args):
    out = subprocess.run([TOOL, *map(str, args)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def save(name, x):
    p = os.path.join(tmp, name)
    np.savetxt(p, np.asarray(x, dtype=float).reshape(-1), fmt="%.17g")
    return p


def close(what, got, want, rel=1e-9, abs_=1e-12):
    global checks
    checks += 1
    if isinstance(want, float) and math.isnan(want) and isinstance(got, float) and math.isnan(got):
        return
    if not math.isclose(got, want, rel_tol=rel, abs_tol=abs_):
        sys.exit(f"FAIL {what}: gos {got!r} vs reference {want!r}")


def samples():
    yield rng.normal(20, 4, 30)
    yield rng.normal(1e6, 3, 1000)           # large offset, tiny spread
    yield rng.exponential(5, 7)
    yield rng.uniform(-1, 1, 2)
    yield np.round(rng.normal(100, 10, 500))  # ties
    yield rng.lognormal(3, 1, 257)


for i, x in enumerate(samples()):
    d = tool("describe", save(f"d{i}", x))
    n = len(x)
    close("mean", d["mean"], float(np.mean(x)))
    close("welford mean", d["welford_mean"], float(np.mean(x)))
    close("var ddof0", d["var0"], float(np.var(x)), rel=1e-8)
    close("var ddof1", d["var1"], float(np.var(x, ddof=1)), rel=1e-8)
    close("welford var", d["welford_var"], float(np.var(x, ddof=1)), rel=1e-7)
    close("sd", d["sd1"], float(np.std(x, ddof=1)), rel=1e-8)
    close("sem", d["sem"], float(stats.sem(x)), rel=1e-8)
    close("rse", d["rse"], float(stats.sem(x) / abs(np.mean(x))), rel=1e-8)
    lo, hi = stats.t.interval(0.95, n - 1, loc=np.mean(x), scale=stats.sem(x))
    w = float(hi - lo)  # scipy's own t.ppf is good to ~1e-11 relative
    close("ci lo", d["ci_lo"], float(lo), rel=1e-8, abs_=1e-9 * w)
    close("ci hi", d["ci_hi"], float(hi), rel=1e-8, abs_=1e-9 * w)
    qs = [q / 20 for q in range(21)] + [0.333, 0.999]
    for q, got in zip(qs, d["quantiles"]):
        close(f"quantile {q}", got, float(np.quantile(x, q)), rel=1e-14, abs_=0)

for p in (0.5, 0.975, 0.995, 0.025, 1e-6, 0.9):
    for df in (1, 2.5, 7, 30, 1000, 123456.7):
        t = float(rng.normal(0, 3))
        r = tool("tdist", p, df, t)
        # scipy 1.10 t.ppf itself is off by up to ~2e-9 (checked against mpmath)
        close(f"t.ppf({p},{df})", r["ppf"], float(stats.t.ppf(p, df)), rel=1e-8, abs_=1e-12)
        close(f"2*t.sf(|{t}|,{df})", r["sf2"], float(2 * stats.t.sf(abs(t), df)), rel=1e-9, abs_=1e-300)
        close(f"t.cdf({t},{df})", r["cdf"], float(stats.t.cdf(t, df)), rel=1e-9, abs_=1e-300)

pairs = [(rng.normal(10, 1, 40), rng.normal(10.5, 3, 25)),
         (rng.normal(5, 1, 3), rng.normal(5, 1, 4)),
         (rng.normal(1000, 5, 2000), rng.normal(1000.2, 5, 1500)),
         (rng.exponential(1, 60), rng.exponential(1.2, 90))]
for i, (a, b) in enumerate(pairs):
    r = tool("ttest", save(f"a{i}", a), save(f"b{i}", b))
    for name, eq in (("welch", False), ("student", True)):
        ref = stats.ttest_ind(a, b, equal_var=eq)
        g = r[name]
        close(f"{name} t", g["t"], float(ref.statistic), rel=1e-8)
        close(f"{name} p", g["p"], float(ref.pvalue), rel=1e-7, abs_=1e-300)
        va, vb, na, nb = np.var(a, ddof=1), np.var(b, ddof=1), len(a), len(b)
        if eq:
            df = na + nb - 2
            se = math.sqrt(((na - 1) * va + (nb - 1) * vb) / df * (1 / na + 1 / nb))
        else:
            se = math.sqrt(va / na + vb / nb)
            df = (va / na + vb / nb) ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
        h = stats.t.ppf(0.975, df) * se
        diff = np.mean(a) - np.mean(b)
        close(f"{name} df", g["df"], float(df), rel=1e-9)
        close(f"{name} ci lo", g["ci_lo"], float(diff - h), rel=1e-8, abs_=1e-9 * h)
        close(f"{name} ci hi", g["ci_hi"], float(diff + h), rel=1e-8, abs_=1e-9 * h)


def blobs(n, centers, sd, dim=1, noise=0):
    pts = [rng.normal(c, sd, (n // len(centers), dim)) for c in centers]
    if noise:
        pts.append(rng.uniform(min(centers) - 50, max(centers) + 50, (noise, dim)))
    x = np.vstack(pts)
    rng.shuffle(x)
    return x


cases = [(blobs(200, [20, 40], 2, 1, 10), 1.5, 5), (blobs(90, [0, 9, 30], 1, 2, 6), 1.2, 4),
         (blobs(50, [5], 3, 1, 3), 0.8, 3), (blobs(300, [10, 25, 26], 1.5, 3, 20), 2.0, 8),
         (np.round(blobs(120, [0, 6], 1, 1, 4)), 1.0, 4)]
for i, (x, eps, ms) in enumerate(cases):
    dim = x.shape[1]
    r = tool("dbscan", eps, ms, dim, save(f"x{i}", x))
    ref = DBSCAN(eps=eps, min_samples=ms).fit(x).labels_
    checks += 1
    if list(ref) != r["labels"]:
        sys.exit(f"FAIL dbscan case {i}: labels differ from sklearn")
    lab = np.array(r["labels"])
    keep = lab >= 0
    k = len(set(lab[keep]))
    if 2 <= k <= keep.sum() - 1:
        s = tool("silhouette", dim, save(f"x{i}", x), save(f"l{i}", lab))
        close(f"silhouette {i}", s["score"], float(silhouette_score(x[keep], lab[keep])), rel=1e-9)
    # random labelling too (several clusters, singletons)
    rl = rng.integers(0, 4, len(x))
    rl[0] = 5  # a singleton cluster scores 0
    s = tool("silhouette", dim, save(f"x{i}", x), save(f"r{i}", rl))
    close(f"silhouette random {i}", s["score"], float(silhouette_score(x, rl)), rel=1e-9)


def adaptive(x, mult=0.15, floor=2):
    """Paper 000 algorithm 3 as documented in src/stats/dbscan.h."""
    n = len(x)
    eps = mult * (np.quantile(x, 0.95) - np.quantile(x, 0.05))
    start, end = math.ceil(0.04 * n), math.floor(0.02 * n)
    if start <= end or start < floor:
        start, end = floor, floor - 1
    last = None
    for m in range(start, end, -2):
        mp = max(m, floor)
        lab = DBSCAN(eps=eps, min_samples=mp).fit(x.reshape(-1, 1)).labels_
        last = (mp, lab)
        if (lab < 0).sum() <= 0.1 * n or mp == floor:
            break
    return eps, last


for i, x in enumerate([np.concatenate([rng.normal(20, 2, 380), rng.uniform(40, 200, 12)]),
                       np.concatenate([rng.normal(30, 1, 150), rng.normal(60, 1.5, 70), [300, 5]]),
                       rng.normal(10, 1, 30), rng.exponential(10, 600)]):
    rng.shuffle(x)
    r = tool("adaptive", save(f"ad{i}", x))
    eps, (mp, lab) = adaptive(x)
    close(f"adaptive eps {i}", r["eps"], float(eps), rel=1e-12)
    checks += 1
    if r["min_samples"] != mp or r["labels"] != list(lab):
        sys.exit(f"FAIL adaptive dbscan {i}: minPts {r['min_samples']} vs {mp} or labels differ")

def box_ref(x):
    """matplotlib.cbook.boxplot_stats(x, whis=1.5), in numpy."""
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    iqr = float(stats.iqr(x))  # scipy: q3 - q1, linear interpolation
    lo = x[x >= q1 - 1.5 * iqr].min()
    hi = x[x <= q3 + 1.5 * iqr].max()
    return q1, med, q3, iqr, lo, hi, int((x < lo).sum()), int((x > hi).sum())


for i, x in enumerate(list(samples()) + [np.array([3.0]), np.array([2.0, 9.0]), np.full(7, 4.25),
                                         np.concatenate([rng.normal(20, 1, 60), [2, 45, 46, 80]]),
                                         np.round(rng.standard_cauchy(200), 1)]):
    b = tool("box", save(f"box{i}", x))
    q1, med, q3, iqr, lo, hi, nl, nh = box_ref(np.asarray(x, dtype=float))
    for k, want in (("q1", q1), ("median", med), ("q3", q3), ("lo", lo), ("hi", hi)):
        close(f"box {i} {k}", b[k], float(want), rel=1e-14, abs_=0)
    close(f"box {i} iqr", b["q3"] - b["q1"], iqr, rel=1e-12, abs_=1e-12)
    checks += 1
    if (b["n_low"], b["n_high"], b["n"]) != (nl, nh, len(x)):
        sys.exit(f"FAIL box {i}: fliers {b['n_low']}/{b['n_high']} vs {nl}/{nh}")
b = tool("box", save("box-empty", []))
checks += 1
if b["rc"] != -1:
    sys.exit("FAIL box of no values")

print(f"ref_stats: {checks} checks agree with numpy/scipy/sklearn")
