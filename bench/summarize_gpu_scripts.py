#!/usr/bin/env python3
"""The figures of bench/gpu/'s scripts that alternate rounds, one script's results folder at a time:

  summarize_gpu_scripts.py feed_vs_step FOLDER     step_R.json (train_step_bench), fvp_R.json and
                                                   fvp-NAME_R.json (prefetch, each variant): share of the step
  summarize_gpu_scripts.py scaling FOLDER          one_R.json, VARIANT_R[.rankN].json: each variant's images/s
                                                   over the round's one GPU, idle per GPU
  summarize_gpu_scripts.py multi_gpu_hangs FOLDER  fvp_N.json, fvp_N.log: the runs that ended, stall reports
  summarize_gpu_scripts.py first_batch FOLDER      cpu_R, gpu_R, gpu-NAME_R (pipeline_throughput), torch_R
                                                   (torch_dataloader.py): time to the first batch, rates
  summarize_gpu_scripts.py prepared_data FOLDER    {cpu,gpu,torch}_SET_R.json and index_SET.json per set

Every ratio is taken within a round (the order alternates between rounds) and the median of the rounds'
ratios is printed, with every round's. A missing or unreadable file is named and skipped."""

import glob
import json
import os
import re
import statistics
import sys


def load(path):
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        print(f"  (missing or unreadable: {os.path.basename(path)}: {error})")
        return None


def prefetch_result(data):
    """The prefetch mode's result of a feed_vs_prefetch JSON, or None."""
    if not data:
        return None
    return next((r for r in data.get("results", []) if r.get("mode") == "prefetch"), None)


def fvp_run(folder, stem):
    """(images/s summed over the ranks, [idle per GPU], [results]) of feed_vs_prefetch run `stem`: one JSON, or
    one per rank (stem.rankN.json) under a launcher; None when a part is missing."""
    ranks = sorted(glob.glob(os.path.join(folder, stem + ".rank*.json")))
    paths = ranks or [os.path.join(folder, stem + ".json")]
    results = [prefetch_result(load(path)) for path in paths]
    if not results or not all(results):
        return None
    idle = []
    for result in results:
        idle.extend(result.get("idle_per_gpu") or [result.get("idle_fraction", 0.0)])
    return sum(r["images_per_s"] for r in results), idle, results


def rounds_of(folder, pattern):
    """The round numbers of files named like `pattern` % round, ascending."""
    found = set()
    regex = re.compile(re.escape(pattern).replace("%d", r"(\d+)") + r"(\.rank\d+)?\.json$")
    for name in os.listdir(folder):
        match = regex.match(name)
        if match:
            found.add(int(match.group(1)))
    return sorted(found)


def median_line(label, values, unit="x"):
    """Prints the median of the rounds' values and every round's; judging it against a target is the reader's."""
    if not values:
        print(f"{label}: no complete round")
        return None
    median = statistics.median(values)
    print(f"{label}: median {median:.3f}{unit} over {len(values)} round(s) ({', '.join(f'{v:.3f}' for v in values)})")
    return median


def multi_gpu_hangs(folder):
    runs = sorted(glob.glob(os.path.join(folder, "fvp_*.json")), key=lambda p: int(re.findall(r"\d+", p)[-1]))
    logs = glob.glob(os.path.join(folder, "fvp_*.log"))
    ended = [prefetch_result(load(path)) for path in runs]
    ended = [r for r in ended if r]
    stalls = sum(r.get("stall_reports", 0) for r in ended)
    print(f"feed_vs_prefetch --gpus N: {len(ended)} of {len(logs)} runs ended; stall reports in ended runs: {stalls}")
    if ended:
        rates = [r["images_per_s"] for r in ended]
        print(f"  images/s (every GPU): median {statistics.median(rates):.0f}, min {min(rates):.0f}, max {max(rates):.0f}")
    return len(ended), len(logs)


def variants_of(folder, skip):
    """The run names of a folder (NAME_ROUND[.rankN].json), less those in skip, in order of first appearance."""
    names = []
    for name in sorted(os.listdir(folder)):
        match = re.match(r"(.+)_\d+(\.rank\d+)?\.json$", name)
        if match and match.group(1) not in skip and match.group(1) not in names:
            names.append(match.group(1))
    return names


def scaling(folder):
    ratios = {}
    variants = variants_of(folder, {"one"})
    for round_ in rounds_of(folder, "one_%d"):
        one = fvp_run(folder, f"one_{round_}")
        if not one:
            continue
        print(f"round {round_}: one GPU {one[0]:.0f} img/s, idle {100 * one[1][0]:.1f} %")
        for variant in variants:
            run = fvp_run(folder, f"{variant}_{round_}")
            if not run:
                continue
            ratio = run[0] / one[0]
            ratios.setdefault(variant, []).append(ratio)
            idle = ", ".join(f"{100 * i:.1f} %" for i in run[1])
            share = ", ".join(f"{r.get('gpu_decoded_fraction', 0):.2f}" for r in run[2])
            print(f"  {variant:12s} {run[0]:8.0f} img/s  {ratio:.3f}x one GPU  idle per GPU {idle}  GPU-decoded {share}")
    names = {"procs": "one process per GPU", "inproc": "one process, every GPU"}
    for variant, values in ratios.items():
        label = names.get(variant, f"one process per GPU, {variant[len('procs-'):]}" if variant.startswith("procs-")
                          else variant)
        median_line(f"{label} / one GPU", values)


def feed_vs_step(folder):
    names = variants_of(folder, {"step"})
    shares = {name: [] for name in names}
    for round_ in rounds_of(folder, "step_%d"):
        step = load(os.path.join(folder, f"step_{round_}.json"))
        if not step:
            continue
        line = f"round {round_}: train_step_bench {step['images_per_s']:.0f} img/s"
        for name in names:
            run = fvp_run(folder, f"{name}_{round_}")
            if not run:
                continue
            share = run[0] / step["images_per_s"]
            shares[name].append(share)
            result = run[2][0]
            line += (f"; {name} {run[0]:.0f} ({100 * share:.1f} %, idle {100 * run[1][0]:.1f} %, compute "
                     f"{result.get('compute_ms', 0):.2f} ms, GPU-decoded {result.get('gpu_decoded_fraction', 0):.2f})")
        print(line)
    for name in names:
        label = "the defaults" if name == "fvp" else name[len("fvp-"):] if name.startswith("fvp-") else name
        median_line(f"prefetch / train_step_bench, {label}", shares[name], unit="")
    for name in names:
        if name != "fvp" and shares.get("fvp") and shares[name]:
            pairs = [a / b for a, b in zip(shares[name], shares["fvp"]) if b > 0]
            median_line(f"{name[len('fvp-'):] if name.startswith('fvp-') else name} / the defaults, round by round",
                        pairs)


def first_batch(folder):
    sides = variants_of(folder, {"prime"})
    firsts, rates = {side: [] for side in sides}, {side: [] for side in sides}
    for round_ in sorted({r for side in sides for r in rounds_of(folder, side + "_%d")}):
        line = f"round {round_}:"
        for side in sides:
            run = load(os.path.join(folder, f"{side}_{round_}.json"))
            if not run:
                continue
            first, rate = run.get("time_to_first_batch_s"), run["images_per_s_after_first_batch"]
            if first is not None:
                firsts[side].append(first)
            rates[side].append(rate)
            line += f" {side} first batch after {first if first is None else f'{first:.3f}'} s, {rate:.0f} img/s;"
        print(line.rstrip(";"))
    for side in sides:
        median_line(f"{side}: time to the first batch", firsts[side], unit=" s")
        median_line(f"{side}: images/s from the first batch", rates[side], unit="")


def prepared_data(folder):
    for index_path in sorted(glob.glob(os.path.join(folder, "index_*.json"))):
        name = os.path.basename(index_path)[len("index_"):-len(".json")]
        index = load(index_path) or {}
        info = index.get("prepared")
        size = sum(shard.get("filesize", 0) for shard in index.get("shardlist", []))
        line = f"{name}: shards {size / 1e6:.0f} MB"
        if info:
            line += (f" ({info['description']}: images {info['input_image_bytes'] / 1e6:.0f} -> "
                     f"{info['image_bytes'] / 1e6:.0f} MB in {info['seconds']:.1f} s)")
        print(line)
        for side in ("cpu", "gpu", "torch"):
            runs = [load(path) for path in sorted(glob.glob(os.path.join(folder, f"{side}_{name}_*.json")))]
            rates = [run["images_per_s"] for run in runs if run]
            if rates:
                print(f"  {side}: median {statistics.median(rates):.0f} img/s ({', '.join(f'{v:.0f}' for v in rates)})")


def main():
    parts = {"feed_vs_step": feed_vs_step, "scaling": scaling, "multi_gpu_hangs": multi_gpu_hangs,
             "first_batch": first_batch, "prepared_data": prepared_data}
    if len(sys.argv) != 3 or sys.argv[1] not in parts:
        sys.exit(f"usage: summarize_gpu_scripts.py {'|'.join(parts)} FOLDER")
    if not os.path.isdir(sys.argv[2]):
        sys.exit(f"summarize_gpu_scripts.py: no folder {sys.argv[2]}")
    parts[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
