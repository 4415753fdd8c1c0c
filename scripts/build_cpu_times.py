#!/usr/bin/env python3
"""Sums the CPU time of a build's commands, as scripts/cpu_time_launcher.sh logged them, by target and by
part of the tree (the libraries, the Python module, tests, examples, benchmarks, data tools, fuzz).

    build_cpu_times.py LOG [LOG...] [--targets N]

With several logs (say a build before and after a change), their columns stand side by side. CPU time is
user + sys: what a build costs on a machine shared with others, whose work stretches wall time only.
"""
import argparse
import collections
import pathlib
import re
import sys

OBJECT = re.compile(r"(?:^|/)CMakeFiles/([^/]+)\.dir/")
PARTS = ("tests", "examples", "bench", "data", "python", "fuzz")


def parse(path):
    """[(user + sys, wall, output)] of a log; a line that is not "user sys wall output" is an error."""
    rows = []
    for number, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        fields = line.split(maxsplit=3)
        try:
            user, system, wall = (float(f) for f in fields[:3])
        except ValueError:
            raise ValueError(f"{path}:{number}: not 'user sys wall output': {line!r}") from None
        rows.append((user + system, wall, fields[3] if len(fields) == 4 else "?"))
    return rows


def target_of(output):
    """(part of the tree, target, 'compile' or 'link') an output belongs to."""
    found = OBJECT.search(output)
    target = found.group(1) if found else pathlib.PurePath(output).name.split(".")[0]
    head = output.split("/", 1)[0]
    part = head if head in PARTS else "libraries"
    if found is None and head not in PARTS:
        part = "libraries"
    return part, target, "compile" if found else "link"


def totals(rows):
    by_part, by_target, by_kind = collections.Counter(), collections.Counter(), collections.Counter()
    for cpu, _, output in rows:
        part, target, kind = target_of(output)
        by_part[part] += cpu
        by_target[target] += cpu
        by_kind[kind] += cpu
    return by_part, by_target, by_kind


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--targets", type=int, default=15, help="how many targets to list (the costliest)")
    args = parser.parse_args(argv)
    runs = [totals(parse(log)) for log in args.logs]
    header = "".join(f"{pathlib.Path(log).name[:14]:>16}" for log in args.logs)
    print(f"{'CPU-seconds':<34}{header}")
    print(f"{'total':<34}" + "".join(f"{sum(run[2].values()):16.1f}" for run in runs))
    for kind in ("compile", "link"):
        print(f"{'  ' + kind:<34}" + "".join(f"{run[2][kind]:16.1f}" for run in runs))
    print("by part of the tree")
    for part in sorted({p for run in runs for p in run[0]}, key=lambda p: -runs[0][0][p]):
        print(f"{'  ' + part:<34}" + "".join(f"{run[0][part]:16.1f}" for run in runs))
    print(f"the {args.targets} costliest targets of the first log")
    for target, _ in runs[0][1].most_common(args.targets):
        print(f"{'  ' + target[:31]:<34}" + "".join(f"{run[1][target]:16.1f}" for run in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
