#!/usr/bin/env python3
"""Issue 36's figures from bench/gpu_run.sh's issue36-* phases, one folder at a time:

  summarize_issue36.py hang FOLDER      fvp_N.json (feed_vs_prefetch --gpus 2): runs that ended, stall reports
  summarize_issue36.py scale FOLDER     VARIANT_ROUND[.rankN].json: each variant against the round's one GPU
  summarize_issue36.py fvp FOLDER       step_R.json (train_step_bench), pool_R.json, nopool_R.json (prefetch)
  summarize_issue36.py start FOLDER     new_R.json, old_R.json (pipeline_throughput --device gpu), torch_R.json
  summarize_issue36.py prepared FOLDER  {cpu,gpu,torch}_NAME.json and index_NAME.json per prepared set

Every ratio is taken within a round (the order alternates between rounds) and the median of the rounds is
judged against the issue's target. A missing or unreadable file is named and skipped."""

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


def median_line(label, values, target=None, higher_is_better=True, unit="x"):
    if not values:
        print(f"{label}: no complete round")
        return None
    median = statistics.median(values)
    text = f"{label}: median {median:.3f}{unit} over {len(values)} round(s) ({', '.join(f'{v:.3f}' for v in values)})"
    if target is not None:
        met = median >= target if higher_is_better else median < target
        text += f"; target {target}{unit}: {'met' if met else 'not met'}"
    print(text)
    return median


def hang(folder):
    runs = sorted(glob.glob(os.path.join(folder, "fvp_*.json")), key=lambda p: int(re.findall(r"\d+", p)[-1]))
    logs = glob.glob(os.path.join(folder, "fvp_*.log"))
    ended = [prefetch_result(load(path)) for path in runs]
    ended = [r for r in ended if r]
    stalls = sum(r.get("stall_reports", 0) for r in ended)
    print(f"feed_vs_prefetch --gpus 2: {len(ended)} of {len(logs)} runs ended; stall reports in ended runs: {stalls}")
    if ended:
        rates = [r["images_per_s"] for r in ended]
        print(f"  images/s (both GPUs): median {statistics.median(rates):.0f}, min {min(rates):.0f}, max {max(rates):.0f}")
    return len(ended), len(logs)


def scale(folder):
    ratios = {}
    for round_ in rounds_of(folder, "one_%d"):
        one = fvp_run(folder, f"one_{round_}")
        if not one:
            continue
        print(f"round {round_}: one GPU {one[0]:.0f} img/s, idle {100 * one[1][0]:.1f} %")
        for variant in ("two", "inproc", "two_nopool", "two_cpus"):
            run = fvp_run(folder, f"{variant}_{round_}")
            if not run:
                continue
            ratio = run[0] / one[0]
            ratios.setdefault(variant, []).append(ratio)
            idle = ", ".join(f"{100 * i:.1f} %" for i in run[1])
            share = ", ".join(f"{r.get('gpu_decoded_fraction', 0):.2f}" for r in run[2])
            print(f"  {variant:10s} {run[0]:8.0f} img/s  {ratio:.3f}x one GPU  idle per GPU {idle}  GPU-decoded {share}")
    names = {"two": "two processes", "inproc": "one process, two GPUs", "two_nopool": "two processes, nvJPEG pool off",
             "two_cpus": "two processes, --cpus auto"}
    for variant, values in ratios.items():
        median_line(f"{names[variant]} / one GPU", values, 1.9 if variant in ("two", "inproc") else None)


def fvp(folder):
    names = sorted({re.sub(r"_\d+\.json$", "", n) for n in os.listdir(folder)
                    if n.endswith(".json") and not n.startswith("step_")})
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
    labels = {"pool": "nvJPEG pool on (the defaults)", "nopool": "nvJPEG pool off (before issue 36)"}
    for name in names:
        median_line(f"prefetch / train_step_bench, {labels.get(name, name)}", shares[name], 0.97, unit="")
    for name in names:
        if name != "pool" and shares.get("pool") and shares[name]:
            pairs = [a / b for a, b in zip(shares["pool"], shares[name]) if b > 0]
            median_line(f"pool (defaults) / {name}, round by round", pairs)


def start(folder):
    figures = {"new": [], "old": []}
    for round_ in rounds_of(folder, "torch_%d"):
        torch = load(os.path.join(folder, f"torch_{round_}.json"))
        if not torch:
            continue
        torch_first = torch["images_per_s_after_first_batch"]
        line = f"round {round_}: DataLoader {torch_first:.0f} img/s from its first batch"
        for name in figures:
            run = load(os.path.join(folder, f"{name}_{round_}.json"))
            if not run:
                continue
            first, after = run["images_per_s_after_first_batch"], run["images_per_s"]
            figures[name].append((first / after, first / torch_first))
            line += f"; {name}: {first:.0f} first, {after:.0f} after {run.get('warmup_batches', 16)}"
        print(line)
    for name, label in (("new", "with warm-up, remembered split, pool"), ("old", "without them (before issue 36)")):
        median_line(f"hybrid {label}: first batch / after 16", [a for a, _ in figures[name]], 0.9, unit="")
        median_line(f"hybrid {label}: first batch / DataLoader first batch", [b for _, b in figures[name]], 8.0)


def prepared(folder):
    for index_path in sorted(glob.glob(os.path.join(folder, "index_*.json"))):
        name = os.path.basename(index_path)[len("index_"):-len(".json")]
        index = load(index_path) or {}
        info = index.get("prepared")
        size = sum(shard.get("filesize", 0) for shard in index.get("shardlist", []))
        line = f"{name}: shards {size / 1e6:.0f} MB"
        if info:
            line += (f" ({info['description']}: images {info['input_image_bytes'] / 1e6:.0f} -> "
                     f"{info['image_bytes'] / 1e6:.0f} MB in {info['seconds']:.1f} s)")
        for side in ("cpu", "gpu", "torch"):
            run = load(os.path.join(folder, f"{side}_{name}.json"))
            if run:
                line += f"; {side} {run['images_per_s']:.0f} img/s ({run['images_per_s_after_first_batch']:.0f} first)"
        print(line)


def main():
    parts = {"hang": hang, "scale": scale, "fvp": fvp, "start": start, "prepared": prepared}
    if len(sys.argv) != 3 or sys.argv[1] not in parts:
        sys.exit(f"usage: summarize_issue36.py {'|'.join(parts)} FOLDER")
    if not os.path.isdir(sys.argv[2]):
        sys.exit(f"summarize_issue36.py: no folder {sys.argv[2]}")
    parts[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
