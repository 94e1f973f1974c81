#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""serve_layers.py: the file-level call graph of one folder's objects and its cycles.

Usage: /usr/bin/python3 tools/serve_layers.py [--objs DIR] [--max N] [--edges] [--layers] [--why A B]
  --objs DIR  the folder of object files to read (default build/src/serve)
  --max N     exit 1, with one line per cycle, when a strongly connected component
              holds more than N files (issue 40's rule for serve/: N = 3)
  --edges     print every arrow "a -> b (symbols)" too
  --layers    print the files by layer: 0 calls no other file, layer n calls
              files of layers below n only (a cycle's files share one layer)
  --why A B   print the symbols A.o takes from B.o (why the arrow A -> B exists)

A file A calls file B when A.o leaves a symbol undefined (nm: U) that B.o defines
(nm: T, D, B, R, C, ...). The graph is read from the compiler's own symbol lists,
so a static inline function of a header is no arrow (it is copied into its
callers) and a data reference (a global table) is one. Prints the files, each
component of more than one file with its size, and the largest size.
"""
import argparse
import glob
import os
import subprocess
import sys


def symbols(obj):
    """(defined, undefined) global symbol names of one object file."""
    out = subprocess.run(["nm", "-g", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def graph(objdir):
    """{file: {callee: sorted symbols}} over the .o files of objdir."""
    objs = sorted(glob.glob(os.path.join(objdir, "*.o")))
    if not objs:
        sys.exit(f"serve_layers: no object files in {objdir} (run make first)")
    syms = {os.path.basename(o)[:-2]: symbols(o) for o in objs}
    owner = {}
    for name, (defined, _) in syms.items():
        for s in defined:
            owner[s] = name
    edges = {name: {} for name in syms}
    for name, (_, undefined) in syms.items():
        for s in undefined:
            callee = owner.get(s)
            if callee and callee != name:
                edges[name].setdefault(callee, []).append(s)
    for name in edges:
        for callee in edges[name]:
            edges[name][callee].sort()
    return edges


def components(edges):
    """Strongly connected components (Tarjan, iterative), each a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def layers(edges, comps):
    """{file: layer}: 0 for a component calling no other, else 1 + its callees' highest."""
    comp_of = {f: i for i, c in enumerate(comps) for f in c}
    memo = {}

    def height(i):
        if i not in memo:
            memo[i] = 0  # a component's own arrows stay inside it
            callees = {comp_of[b] for f in comps[i] for b in edges[f]} - {i}
            memo[i] = 1 + max(height(j) for j in callees) if callees else 0
        return memo[i]

    return {f: height(comp_of[f]) for f in edges}


def main():
    ap = argparse.ArgumentParser(description="file-level call graph and cycles of a folder's objects")
    ap.add_argument("--objs", default="build/src/serve")
    ap.add_argument("--max", type=int, default=None)
    ap.add_argument("--edges", action="store_true")
    ap.add_argument("--layers", action="store_true")
    ap.add_argument("--why", nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    edges = graph(args.objs)
    if args.why:
        a, b = args.why
        if a not in edges or b not in edges:
            sys.exit(f"serve_layers: no {a if a not in edges else b}.o in {args.objs}")
        print(" ".join(edges[a].get(b, [])) or f"{a} does not call {b}")
        return 0
    comps = components(edges)
    print(f"files: {len(edges)}, arrows: {sum(len(v) for v in edges.values())}")
    if args.edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"  {a} -> {b} ({', '.join(edges[a][b])})")
    if args.layers:
        lay = layers(edges, comps)
        for n in range(max(lay.values()) + 1):
            print(f"  layer {n}: {' '.join(sorted(f for f in lay if lay[f] == n))}")
    cycles = [c for c in comps if len(c) > 1]
    for c in cycles:
        print(f"cycle of {len(c)}: {' '.join(c)}")
    largest = max(len(c) for c in comps)
    print(f"largest component: {largest} file(s)")
    if args.max is not None:
        over = [c for c in cycles if len(c) > args.max]
        for c in over:
            print(f"serve_layers: a cycle of {len(c)} files (over {args.max}): {' '.join(c)}")
        return 1 if over else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
