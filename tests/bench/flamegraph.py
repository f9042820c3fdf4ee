#!/usr/bin/env python3
"""Folds `perf script` output into stacks and draws a flame graph (SVG).

  perf script -i perf.data | tests/bench/flamegraph.py OUT_PREFIX [TITLE]

Writes OUT_PREFIX.folded (one "comm;frame;...;leaf count" line per stack,
root first, as Brendan Gregg's stackcollapse-perf.pl does) and
OUT_PREFIX.svg (widths proportional to samples; hover shows the frame, its
samples and its share) and OUT_PREFIX.threads.txt (samples by the kind of
thread: the first project or fio frame of each stack, e.g.
NodeRuntime::RingLoop for a node's ring thread). Debian has no FlameGraph package; this is the same
picture from the same data, with no dependency.
"""
import collections
import html
import re
import sys


def fold(lines):
    stacks = collections.Counter()
    comm, frames = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if comm is not None:
                stacks[";".join([comm] + frames[::-1])] += 1
            comm, frames = None, []
            continue
        if not line.startswith((" ", "\t")):
            # Header: "comm pid/tid [cpu] time: period event:"
            comm = line.split()[0].replace(";", ":")
            frames = []
            continue
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        sym = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0])
        if sym == "[unknown]":
            dso = re.search(r"\(([^)]*)\)", parts[1])
            sym = "[%s]" % (dso.group(1).split("/")[-1] if dso else "unknown")
        if "kernel.kallsyms" in parts[1]:
            sym += "_[k]"
        frames.append(sym.replace(";", ":"))
    if comm is not None:
        stacks[";".join([comm] + frames[::-1])] += 1
    return stacks


def thread_kinds(stacks):
    kinds = collections.Counter()
    for stack, n in stacks.items():
        frames = [f for f in stack.split(";")[1:] if not f.startswith("std::")]
        kind = next((f for f in frames if re.search(r"rangefs::|main::|^main$|grpc|fio|thread_main", f)),
                    frames[0] if frames else "?")
        kinds[re.sub(r"\(.*", "", kind)[:120]] += n
    total = max(sum(kinds.values()), 1)
    return ["%6.1f%%  %6d  %s" % (100.0 * n / total, n, k) for k, n in kinds.most_common(25)]


def color(name):
    h = sum(ord(c) for c in name)
    if name.startswith("[k]") or "_[k]" in name:
        return "rgb(230,%d,60)" % (120 + h % 80)
    return "rgb(%d,%d,50)" % (200 + h % 55, 90 + h % 120)


def svg(stacks, title, out):
    root = {"n": 0, "c": {}}
    for stack, n in stacks.items():
        node = root
        node["n"] += n
        for f in stack.split(";"):
            node = node["c"].setdefault(f, {"n": 0, "c": {}})
            node["n"] += n
    total = max(root["n"], 1)
    width, row = 1200.0, 16
    rects = []

    def walk(node, name, x, depth):
        w = node["n"] / total * width
        if w < 0.3:
            return
        rects.append((x, depth, w, name, node["n"]))
        cx = x
        for child, sub in sorted(node["c"].items()):
            walk(sub, child, cx, depth + 1)
            cx += sub["n"] / total * width

    walk(root, "all", 0.0, 0)
    depth = max(d for _, d, _, _, _ in rects) + 1
    height = (depth + 3) * row
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="monospace" font-size="11">' % (width, height),
         '<text x="4" y="14">%s (%d samples)</text>' % (html.escape(title), total)]
    for x, d, w, name, n in rects:
        y = height - (d + 1) * row
        label = html.escape(name)
        o.append('<g><title>%s: %d samples, %.2f%%</title>'
                 '<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                 % (label, n, 100.0 * n / total, x, y, w, row - 1, color(name)))
        chars = int(w / 7)
        if chars >= 3:
            text = name if len(name) <= chars else name[: chars - 2] + ".."
            o.append('<text x="%.1f" y="%d">%s</text>' % (x + 2, y + row - 4, html.escape(text)))
        o.append("</g>")
    o.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(o))


def main():
    prefix = sys.argv[1]
    title = sys.argv[2] if len(sys.argv) > 2 else prefix
    stacks = fold(sys.stdin)
    with open(prefix + ".folded", "w") as f:
        for stack, n in sorted(stacks.items()):
            f.write("%s %d\n" % (stack, n))
    svg(stacks, title, prefix + ".svg")
    with open(prefix + ".threads.txt", "w") as f:
        f.write("\n".join(thread_kinds(stacks)) + "\n")


if __name__ == "__main__":
    main()
