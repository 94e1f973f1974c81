#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""check_contributing.py: docs/CONTRIBUTING.md's map and walks are true (issue 40
item 6).

    check_contributing.py [--root DIR] [--doc FILE]

Checked, against the tree at DIR (default: the repository this script is in):
  - every row of the map (the code block under "## Layout": a folder, the
    processes, what it holds) names a folder that exists, and every file or
    folder its text names exists: a name is looked for in the row's folder,
    then in src/, then at the root (`common/status.c` in the client/ row is
    src/common/status.c); `X.h/.c` names both, `*`, `NAME`, `P` (a pillar) and
    `<...>` stand for any text and must match at least one file;
  - every folder of src/ is a row or named in one, and every file of src/ is
    on the map: named in its folder's row (or another), matched by a pattern
    there, or the header of a named source or the source of a named header
    (same folder, same stem);
  - outside the map (the walks of a copy and a launch, the build rules), every
    path in backquotes exists (at the root or under src/, a bare file name
    somewhere in src/), and every identifier in backquotes (a function, a
    type, a macro: a name with an underscore or an inner capital) still occurs
    in the sources (src/, include/, kernels/, bench/, tests/, tools/, mk/,
    Makefile).
Names of what the build makes (build/..., lib*.so.1, *.a) and of the CUDA
toolkit (EXTERNAL) are not looked for. Prints one line per stale or missing
name and a summary; exit 0 when there is none, 1 otherwise, 2 on bad usage."""
import fnmatch
import os
import re
import sys

EXTERNAL = {"cuda.h"}  # the CUDA toolkit's, named by the rules about it
EXTS = r"(?:c|h|cu|cuh|txt|map|scd|mk|sh|py|json|in|md)"
# a file name (possibly with folders and patterns), not inside another word
FILE_RE = re.compile(r"(?<![\w/.<>*-])((?:[\w*<>.-]+/)*[\w*<>-][\w*<>.-]*\." + EXTS + r")(?![\w/-])")
# a folder: words and a slash, followed by a space, punctuation or the end
DIR_RE = re.compile(r"(?<![\w/.<>*-])((?:[\w<>*-]+/)+)(?=[\s,.;:)]|$)")
SOURCES = ("src", "include", "kernels", "bench", "tests", "tools", "mk", "Makefile")


def pattern(name):
    """A name's glob: NAME, a lone capital (P, a pillar; X) and <...> stand
    for any text."""
    name = re.sub(r"<[^>]*>", "*", name)
    name = re.sub(r"(?<![A-Za-z])NAME(?![A-Za-z])", "*", name)
    return re.sub(r"(?<![A-Za-z])[A-Z](?![A-Za-z])", "*", name)


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = set()  # every file under the root, relative, "/"-separated
        self.dirs = set()
        for top in os.listdir(root):
            if top in (".git", "build") or top.startswith("build-"):
                continue
            p = os.path.join(root, top)
            if os.path.isfile(p):
                self.files.add(top)
                continue
            for d, subs, fs in os.walk(p):
                subs[:] = [s for s in subs if s != "__pycache__"]
                rel = os.path.relpath(d, root).replace(os.sep, "/")
                self.dirs.add(rel + "/")
                self.files.update(rel + "/" + f for f in fs)

    def words(self):
        """Every word of the sources (SOURCES), read once."""
        if getattr(self, "_words", None) is None:
            self._words = source_words(self)
        return self._words

    def matches(self, rel, folder):
        """The files (or, for a name ending in "/", folders) rel names."""
        if not folder and rel.startswith("/"):
            return []
        pool = self.dirs if rel.endswith("/") else self.files
        pat = pattern(rel)
        if "*" not in pat:
            return [rel] if rel in pool else []
        return [x for x in pool if fnmatch.fnmatchcase(x, pat) and x.count("/") == pat.count("/")]

    def resolve(self, name, folder=""):
        """Where name is: in folder or below it, in src/, at the root, else a
        file of src/ whose path ends with it, else (a bare name) any file of
        that name; [] when nowhere."""
        for base in (folder, "src/", ""):
            found = self.matches(base + name, folder)
            if found:
                return found
        pat, pool = "*/" + pattern(name), self.dirs if name.endswith("/") else self.files
        below = [x for x in pool if folder and x.startswith(folder) and fnmatch.fnmatchcase(x, pat)]
        if name.startswith("/"):
            return []
        return below or [x for x in pool if x.startswith("src/") and fnmatch.fnmatchcase(x, pat)] or (
            [x for x in pool if fnmatch.fnmatchcase(x, pat)] if "/" not in name.rstrip("/") else [])


def map_rows(lines):
    """The map's rows: (line number, folder, the row's text)."""
    start = next(i for i, l in enumerate(lines) if l.startswith("## Layout"))
    begin = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(begin + 1, len(lines)) if lines[i].startswith("```"))
    rows = []
    for i in range(begin + 1, end):
        l = lines[i]
        if l.strip() and not l[0].isspace():
            folder, _, rest = l.partition(" ")
            if folder == "folder":  # the header
                continue
            rows.append([i + 1, folder, rest])
        elif rows:
            rows[-1][2] += "\n" + l
    return rows, begin, end


def names_in(text):
    """The files and folders a row's text names."""
    text = re.sub(r"([\w*<>-]+)\.h/\.c\b", r"\1.h \1.c", text)
    out = [m.group(1) for m in FILE_RE.finditer(text)]
    out += [m.group(1) for m in DIR_RE.finditer(text) if m.group(1).count("/") >= 1]
    return [n for n in out if n not in EXTERNAL]


def built(name):
    return name.startswith(("build/", "../", "$")) or re.search(r"\.(so(\.\d+)?|a)$", name)


def check_map(tree, rows, bad):
    named = set()  # every file and folder of the tree the map names
    for line, folder, text in rows:
        ftop = folder[: folder.rfind("/") + 1]  # mk/*.mk: mk/
        if not tree.resolve(folder, ""):
            bad.append("CONTRIBUTING.md:%d: the map's row %s names no folder or file of the tree" % (line, folder))
        named.update(tree.resolve(folder, ""))
        for n in names_in(text):
            if built(n):
                continue
            found = tree.resolve(n, ftop)
            if not found:
                bad.append("CONTRIBUTING.md:%d: the row %s names %s, which is not in the tree" % (line, folder, n))
            named.update(found)
        check_words(tree, "CONTRIBUTING.md:%d: the row %s names" % (line, folder),
                    re.sub(r"(?<![\w./-])[\w*<>.-]*/[\w*<>./-]*|[\w*<>-]+\.[\w.]+", " ", text), bad)
    return named


def covered(tree, named, f):
    if f in named:
        return True
    stem, ext = os.path.splitext(f)
    twin = {".h": ".c", ".c": ".h"}.get(ext)
    return bool(twin) and stem + twin in named


def check_coverage(tree, named, bad):
    for d in sorted(x for x in tree.dirs if x.startswith("src/") and x != "src/"):
        if d not in named:
            bad.append("%s: a folder of src/ that docs/CONTRIBUTING.md's map does not name" % d)
    for f in sorted(x for x in tree.files if x.startswith("src/")):
        if not covered(tree, named, f):
            bad.append("%s: not on docs/CONTRIBUTING.md's map (its folder's row names neither it nor its "
                       "header or source)" % f)


def source_words(tree):
    words = set()
    for f in sorted(tree.files):
        if f.split("/")[0] in SOURCES and not f.endswith((".md", ".json", ".svg", ".html", ".png")):
            try:
                words.update(re.findall(r"\w+", open(os.path.join(tree.root, f), errors="replace").read()))
            except OSError:
                pass
    return words


def known(ident, words):
    """ident occurs in the sources; NAME and a lone capital stand for any
    word part."""
    if ident in words:
        return True
    rx = re.sub(r"(?<=_)(?:NAME|[A-Z])(?=_|$)", r"\\w+", ident)
    return rx != ident and any(re.fullmatch(rx, w) for w in words)


def check_words(tree, where, text, bad):
    """The identifiers of text (a name with an underscore or an inner capital:
    a function, a type, a macro) occur in the sources."""
    for ident in re.findall(r"(?<![\w.-])[A-Za-z_]\w*(?![\w-])", text):
        if ("_" in ident.strip("_") or re.search(r"[a-z][A-Z]", ident)) and not known(ident, tree.words()):
            bad.append("%s `%s`, which no source file holds any more" % (where, ident))


def check_prose(tree, lines, begin, end, bad):
    for i, l in enumerate(lines):
        if begin <= i <= end:
            continue
        for tok in re.findall(r"`([^`\s]+)`", l):
            tok = tok.rstrip(".,;:")
            path = re.sub(r"\(.*$", "", tok)
            if "/" in path or re.search(r"\." + EXTS + "$", path):
                if built(path) or path in EXTERNAL or path.startswith("/") or re.match(r"^[\w-]+\.\w+/\d+$", path):
                    continue  # a build output, the toolkit's, the system's, a format name (gpuos.chip/2)
                if not tree.resolve(path):
                    bad.append("CONTRIBUTING.md:%d: names `%s`, which is not in the tree" % (i + 1, tok))
                continue
            ident = re.sub(r"\(.*\)$", "", tok)
            if re.fullmatch(r"[A-Za-z_]\w*", ident):
                check_words(tree, "CONTRIBUTING.md:%d: names" % (i + 1), ident, bad)


def src_files(tree, exts=(".c", ".h")):
    """The files of src/ with those endings: (path, folder under src/, name, text)."""
    for f in sorted(tree.files):
        parts = f.split("/")
        if parts[0] == "src" and len(parts) > 2 and f.endswith(exts):
            yield f, parts[1], parts[-1], open(os.path.join(tree.root, f), errors="replace").read()


def check_order(tree, rows, bad):
    """Includes go down the map (a room uses those below it), but for cli/."""
    order = [f.rstrip("/")[len("src/"):] for _, f, _ in rows if f.startswith("src/")]
    rank = {f: i for i, f in enumerate(order)}
    for f, d, _, text in src_files(tree, (".c", ".h", ".cu", ".cuh")):
        if d == "cli" or d not in rank:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            m = INCLUDE_RE.match(line)
            if m and m.group(1) in rank and rank[m.group(1)] < rank[d]:
                bad.append("%s:%d: includes %s/, a room above src/%s/ on the map" % (f, n, m.group(1), d))


def check_stems(tree, bad):
    """No header shares its stem with a .c of another folder (one guess finds
    a name's file)."""
    where = {}  # (stem, ext) -> folders
    for f in tree.files:
        stem, ext = os.path.splitext(f)
        if f.startswith("src/") and ext in (".h", ".c"):
            where.setdefault((os.path.basename(stem), ext), []).append(os.path.dirname(f))
    for (stem, ext), dirs in sorted(where.items()):
        if ext == ".h":
            for d in sorted(dirs):
                for o in sorted(x for x in where.get((stem, ".c"), []) if x != d):
                    bad.append("%s/%s.h shares its stem with %s/%s.c" % (d, stem, o, stem))


SEVERAL_PROCESSES = ("place", "chip")  # folders whose code runs in several processes


def check_openings(tree, bad):
    """Every file of src/ opens (after its SPDX line) with a comment naming it;
    in place/ and chip/ that comment names the processes it runs in."""
    for f, d, fn, text in src_files(tree):
        lines = [l for l in text.split("\n")[:3] if "SPDX" not in l]
        if not lines or not lines[0].startswith("/* " + fn):
            bad.append("%s: does not open with a comment saying what it is (/* %s: ...)" % (f, fn))
        elif d in SEVERAL_PROCESSES:
            first = text[text.find("/* " + fn):]
            if not re.search(r"\bruns\b|\bProcess(es)?:", first[:first.find("*/")], re.I):
                bad.append("%s: its first comment does not name the processes it runs in" % f)


INCLUDE_RE = re.compile(r'\s*#\s*include\s+"(\w+)/')


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root, doc, args = here, None, argv[1:]
    while args:
        if args[0] in ("--root", "--doc") and len(args) > 1:
            root, doc = (args[1], doc) if args[0] == "--root" else (root, args[1])
            args = args[2:]
        else:
            print("usage: check_contributing.py [--root DIR] [--doc FILE]", file=sys.stderr)
            return 2
    doc = doc or os.path.join(root, "docs", "CONTRIBUTING.md")
    if not os.path.isdir(os.path.join(root, "src")):
        print("check_contributing: %s has no src/" % root, file=sys.stderr)
        return 2
    try:
        lines = open(doc).read().split("\n")
        tree = Tree(root)
        rows, begin, end = map_rows(lines)
    except (OSError, StopIteration) as e:
        print("check_contributing: %s: no map (a code block under \"## Layout\"): %s" % (doc, e), file=sys.stderr)
        return 2
    bad = []
    named = check_map(tree, rows, bad)
    check_coverage(tree, named, bad)
    check_prose(tree, lines, begin, end, bad)
    check_order(tree, rows, bad)
    check_stems(tree, bad)
    check_openings(tree, bad)
    for b in bad:
        print(b)
    print("check_contributing: %d rows, %d files of src/, %d problems"
          % (len(rows), sum(1 for f in tree.files if f.startswith("src/")), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
