#!/usr/bin/env python3
"""The ASan build's compile time before and after -g1, from build-asan's ninja log (this folder's copy).
ninja appends: lines 2-279 are the last -g build of each output, the lines after them the -g1 build."""
import os
import sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "build-asan.ninja_log")
lines = open(path).read().splitlines()


def parse(rows):
    out = {}
    for line in rows:
        if line.startswith("#") or not line.strip():
            continue
        start, end, _, output, _ = line.split("\t")
        out[output] = (int(start), int(end))
    return out


before, after = parse(lines[1:279]), parse(lines[279:])
common = [k for k in after if k in before]
cpu = lambda r: sum((r[k][1] - r[k][0]) / 1000 for k in common)
span = lambda r: (max(v[1] for v in r.values()) - min(v[0] for v in r.values())) / 1000
print(f"{len(common)} outputs in both builds")
print(f"CPU-seconds: -g {cpu(before):.0f}, -g1 {cpu(after):.0f} ({100 * (1 - cpu(after) / cpu(before)):.0f} % less)")
print(f"first start to last end: -g {span(before):.0f} s, -g1 {span(after):.0f} s")
