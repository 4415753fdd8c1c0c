#!/usr/bin/env python3
"""bench/gpu/fields_vs_peers.sh's figures: for segmentation and detection, conveyor's pipeline_throughput
against the DataLoader peer (torch_fields.py, its faster antialias setting), as the median of the pairs'
figures and of the pairs' ratios. Rates are counted from each side's first batch
(images_per_s_after_first_batch); start-up (time_to_first_batch_s) is reported apart. (A build against a
previous binary: bench/summarize_against_previous.py.)

    summarize_fields.py RESULTS_DIR      prints a table, writes RESULTS_DIR/fields_summary.json
"""
import glob
import json
import os
import re
import statistics
import sys

RATE = "images_per_s_after_first_batch"


def load(path):
    with open(path) as file:
        return json.load(file)


def pairs(results, kind, ours, theirs):
    """[(ours JSON, theirs JSON)] of fields_<kind>_<i>_<ours|theirs>.json, by i."""
    out = []
    for path in sorted(glob.glob(os.path.join(results, f"fields_{kind}_*_{ours}.json"))):
        i = re.search(rf"fields_{kind}_(\d+)_{ours}\.json$", path).group(1)
        other = os.path.join(results, f"fields_{kind}_{i}_{theirs}.json")
        if os.path.exists(other):
            out.append((load(path), load(other)))
    return out


def summary(found, ours_name, theirs_name):
    if not found:
        return None
    ratios = [a[RATE] / b[RATE] for a, b in found if b.get(RATE)]
    return {
        "pairs": len(found),
        f"{ours_name}_images_per_s": [a[RATE] for a, _ in found],
        f"{theirs_name}_images_per_s": [b[RATE] for _, b in found],
        f"{ours_name}_median": statistics.median(a[RATE] for a, _ in found),
        f"{theirs_name}_median": statistics.median(b[RATE] for _, b in found),
        "ratios": ratios,
        "ratio_median": statistics.median(ratios) if ratios else None,
        f"{ours_name}_startup_s": [a.get("time_to_first_batch_s") for a, _ in found],
        f"{theirs_name}_startup_s": [b.get("time_to_first_batch_s") for _, b in found],
        f"{theirs_name}_antialias": [b.get("antialias") for _, b in found],
        "commit": found[0][0].get("machine", {}).get("commit"),
    }


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    results = argv[1]
    out = {"rate": RATE}
    for kind in ("segmentation", "detection"):
        out[kind] = summary(pairs(results, kind, "conveyor", "torch"), "conveyor", "torch")
    for kind, s in out.items():
        if not isinstance(s, dict):
            continue
        names = [k[:-len("_median")] for k in s if k.endswith("_median") and k != "ratio_median"]
        print(f"{kind}: {s['pairs']} pairs; " + ", ".join(f"{n} median {s[n + '_median']:.1f} img/s" for n in names) +
              (f"; ratio median {s['ratio_median']:.2f} ({', '.join(f'{r:.2f}' for r in s['ratios'])})"
               if s["ratio_median"] else ""))
    with open(os.path.join(results, "fields_summary.json"), "w") as file:
        json.dump(out, file, indent=2)
        file.write("\n")


if __name__ == "__main__":
    main(sys.argv)
