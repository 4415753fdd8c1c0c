#!/usr/bin/env python3
"""A build against a previous binary, in alternating pairs (bench/gpu/pipeline_vs_previous.sh,
bench/gpu/train_step.sh --previous): for each measurement WHAT in FOLDER, WHAT_current_R.json against
WHAT_previous_R.json of the same round R, the medians of both sides' images/s ("images_per_s": from the
first batch for pipeline_throughput, the median step for train_step_bench) and the median of the rounds'
ratios (current / previous), with every round's.

    summarize_against_previous.py FOLDER     prints a line per measurement, writes FOLDER/summary.json
"""
import json
import os
import re
import statistics
import sys

PAIR = re.compile(r"(.+)_(current|previous)_(\d+)\.json$")


def pairs(folder):
    """{what: [(round, current JSON, previous JSON)]} for the rounds that have both sides."""
    found = {}
    for name in os.listdir(folder):
        match = PAIR.match(name)
        if match:
            with open(os.path.join(folder, name)) as file:
                found.setdefault(match.group(1), {}).setdefault(int(match.group(3)), {})[match.group(2)] = json.load(file)
    return {what: [(r, sides["current"], sides["previous"]) for r, sides in sorted(by_round.items())
                   if len(sides) == 2]
            for what, by_round in sorted(found.items())}


def summary(rounds):
    current = [c["images_per_s"] for _, c, _ in rounds]
    previous = [p["images_per_s"] for _, _, p in rounds]
    ratios = [c / p for c, p in zip(current, previous)]
    return {"rounds": [r for r, _, _ in rounds], "current_images_per_s": current, "previous_images_per_s": previous,
            "current_median": statistics.median(current), "previous_median": statistics.median(previous),
            "ratios": ratios, "ratio_median": statistics.median(ratios)}


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.exit(__doc__)
    out = {what: summary(rounds) for what, rounds in pairs(argv[1]).items() if rounds}
    if not out:
        print("no round with both a current and a previous run")
    for what, s in out.items():
        print(f"{what}: current {s['current_median']:.0f} img/s, previous {s['previous_median']:.0f} img/s (medians); "
              f"current / previous: median {s['ratio_median']:.3f} over {len(s['ratios'])} round(s) "
              f"({', '.join(f'{r:.3f}' for r in s['ratios'])})")
    with open(os.path.join(argv[1], "summary.json"), "w") as file:
        json.dump(out, file, indent=2)
        file.write("\n")


if __name__ == "__main__":
    main(sys.argv)
