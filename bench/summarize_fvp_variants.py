#!/usr/bin/env python3
"""The fvp-split phase of bench/gpu_run.sh (and the fvp-urgent phase it replaced): feed_vs_prefetch's
prefetch rate per variant against train_step_bench's rate measured in the same round, and the medians over
the rounds.

    summarize_fvp_variants.py DIR
DIR holds step_<round>.json and split_<share>_<fixed>[_t<threads>][_p<pipelining>]_<round>.json; fvp-urgent's runs (2026-11-26, code
since taken out) were <priority>_<share>_<fixed>[_l<lanes>][_<memory>]_<round>.json.
Prints one line per variant and writes DIR/summary.json.
"""
import glob
import json
import os
import re
import statistics
import sys


def main(folder):
    steps = {}
    for path in glob.glob(os.path.join(folder, "step_*.json")):
        round_ = re.search(r"step_(\d+)\.json$", path).group(1)
        steps[round_] = json.load(open(path))["images_per_s"]
    variants = {}
    for path in sorted(glob.glob(os.path.join(folder, "*_*_*_*.json"))):
        match = re.search(
            r"(normal|urgent|split)_([0-9.]+)_([01])_(?:l(\d+)_)?(?:(conveyor|library)_)?(?:t(\d+)_)?(?:p([01])_)?"
            r"(\d+)\.json$", path)
        if not match or match.group(8) not in steps:
            continue
        priority, share, fixed, lanes, memory, threads, pipelining, round_ = match.groups()
        run = json.load(open(path))
        prefetch = run["results"][0]
        decoder = prefetch.get("decoder", {})
        name = (("" if priority == "split" else priority + " ") +
                f"share {share} {'fixed' if fixed == '1' else 'adapting'}" +
                (f", {lanes} lane(s)" if lanes else "") + (f", nvJPEG memory: {memory}" if memory else "") +
                (f", {threads} pipeline threads" if threads else "") +
                (f", nvJPEG hardware buffering {'on' if pipelining == '1' else 'off'}" if pipelining else ""))
        entry = variants.setdefault(name, [])
        entry.append({
            "round": int(round_),
            "prefetch_images_per_s": prefetch["images_per_s"],
            "train_step_images_per_s": steps[round_],
            "ratio": prefetch["images_per_s"] / steps[round_],
            "idle_fraction": prefetch["idle_fraction"],
            "gpu_decoded_fraction": prefetch["gpu_decoded_fraction"],
            "gpu_share_end": decoder.get("gpu_share_end"),
            "decoder": decoder,
        })
    summary = {"commit": os.environ.get("CONVEYOR_COMMIT", ""), "target_ratio": 0.97, "variants": variants}
    for name, runs in variants.items():
        ratio = statistics.median(r["ratio"] for r in runs)
        summary.setdefault("median_ratio", {})[name] = ratio
        per_run = "; ".join(
            f"round {r['round']}: {r['prefetch_images_per_s']:.0f} / {r['train_step_images_per_s']:.0f} = "
            f"{100 * r['ratio']:.1f} %, idle {100 * r['idle_fraction']:.1f} %, GPU decoded "
            f"{100 * r['gpu_decoded_fraction']:.0f} %" +
            (f", share at the end {r['gpu_share_end']:.2f}" if r["gpu_share_end"] is not None else "")
            for r in sorted(runs, key=lambda r: r["round"]))
        print(f"{name}: median {100 * ratio:.1f} % of train_step_bench ({per_run})")
    json.dump(summary, open(os.path.join(folder, "summary.json"), "w"), indent=2)


if __name__ == "__main__":
    main(sys.argv[1])
