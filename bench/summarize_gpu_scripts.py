#!/usr/bin/env python3
"""The figures of bench/gpu/'s scripts that alternate rounds, one script's results folder at a time:

  summarize_gpu_scripts.py feed_vs_step FOLDER     step_R.json (train_step_bench), fvp_R.json and
                                                   fvp-NAME_R.json (prefetch, each variant): share of the step;
                                                   step_eager_R.json: the eager step, and the compute per step
                                                   beside the feeder over it
  summarize_gpu_scripts.py scaling FOLDER          one_R.json, VARIANT_R[.rankN].json: each variant's images/s
                                                   over the round's one GPU and over procs', idle per GPU, each
                                                   rank's CPUs and batch memory
  summarize_gpu_scripts.py multi_gpu_hangs FOLDER  fvp_N.json, fvp_N.log: the runs that ended, stall reports
  summarize_gpu_scripts.py first_batch FOLDER      cpu_R, gpu_R, gpu-NAME_R (pipeline_throughput), torch_R
                                                   (torch_dataloader.py): time to the first batch, rates,
                                                   each hybrid side's first batch less CPU-only's
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
    result = next((r for r in data.get("results", []) if r.get("mode") == "prefetch"), None)
    if result is not None and "gpus_in_use" in data:  # the process's, after the run
        result = dict(result, gpus_in_use=data["gpus_in_use"])
    return result


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
    # One JSON per rank (fvp_N.rankK.json): a run ended when every rank of it wrote its result.
    ranks_of = {}
    for path in glob.glob(os.path.join(folder, "fvp_*.json")):
        match = re.match(r"fvp_(\d+)(?:\.rank\d+)?\.json$", os.path.basename(path))
        if match:
            ranks_of.setdefault(int(match.group(1)), []).append(prefetch_result(load(path)))
    logs = glob.glob(os.path.join(folder, "fvp_*.log"))
    world = max((len(results) for results in ranks_of.values()), default=0)
    ended = {run: results for run, results in ranks_of.items() if len(results) == world and all(results)}
    stalls = sum(r.get("stall_reports", 0) for results in ended.values() for r in results)
    print(f"feed_vs_prefetch on {world} ranks: {len(ended)} of {len(logs)} runs ended (every rank's result "
          f"written); stall reports in ended runs: {stalls}")
    if ended:
        rates = [sum(r["images_per_s"] for r in results) for results in ended.values()]
        print(f"  images/s (all ranks together): median {statistics.median(rates):.0f}, min {min(rates):.0f}, "
              f"max {max(rates):.0f}")
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
            ratios.setdefault(variant, {})[round_] = ratio
            idle = ", ".join(f"{100 * i:.1f} %" for i in run[1])
            share = ", ".join(f"{r.get('gpu_decoded_fraction', 0):.2f}" for r in run[2])
            print(f"  {variant:12s} {run[0]:8.0f} img/s  {ratio:.3f}x one GPU  idle per GPU {idle}  GPU-decoded {share}")
            # Issue 41: where each rank's pipeline ran and where its batches live (FeederOptions::host).
            for rank, result in enumerate(run[2]):
                if result.get("pipeline_cpus_reason") or result.get("host_memory"):
                    cpus = result.get("pipeline_cpus") or "any"
                    print(f"    rank {rank}: CPUs {cpus} ({result.get('pipeline_cpus_reason', '')}); "
                          f"batches {result.get('host_memory', '')}"
                          + (f"; contexts on GPUs {result['gpus_in_use']}" if "gpus_in_use" in result else ""))
    names = {"procs": "one process per GPU", "inproc": "one process, every GPU"}
    for variant, values in ratios.items():
        label = names.get(variant, f"one process per GPU, {variant[len('procs-'):]}" if variant.startswith("procs-")
                          else variant)
        median_line(f"{label} / one GPU", list(values.values()))
    for variant, values in ratios.items():
        if variant != "procs" and ratios.get("procs"):
            pairs = [values[r] / ratios["procs"][r] for r in values if ratios["procs"].get(r)]
            median_line(f"{variant} / procs (the defaults), round by round", pairs)


def feed_vs_step(folder):
    names = variants_of(folder, {"step", "step_eager"})
    shares = {name: [] for name in names}
    eager_over_graph, compute = [], {name: [] for name in names}
    eager_ms = []  # the step alone, launched kernel by kernel: ms per batch of 256
    for round_ in rounds_of(folder, "step_%d"):
        step = load(os.path.join(folder, f"step_{round_}.json"))
        if not step:
            continue
        line = f"round {round_}: train_step_bench {step['images_per_s']:.0f} img/s"
        if os.path.exists(os.path.join(folder, f"step_eager_{round_}.json")):
            eager = load(os.path.join(folder, f"step_eager_{round_}.json"))
            if eager:
                eager_over_graph.append(eager["images_per_s"] / step["images_per_s"])
                eager_ms.append(1000 * 256 / eager["images_per_s"])
                line += f", eager {eager['images_per_s']:.0f}"
        for name in names:
            run = fvp_run(folder, f"{name}_{round_}")
            if not run:
                continue
            share = run[0] / step["images_per_s"]
            shares[name].append(share)
            result = run[2][0]
            if result.get("compute_ms"):
                compute[name].append(result["compute_ms"])
            line += (f"; {name} {run[0]:.0f} ({100 * share:.1f} %, idle {100 * run[1][0]:.1f} %, compute "
                     f"{result.get('compute_ms', 0):.2f} ms, GPU-decoded {result.get('gpu_decoded_fraction', 0):.2f}"
                     + (f", paths {result['gpu_decode_paths']}" if result.get("gpu_decode_paths") else "") + ")")
        print(line)
    labels = {name: "the defaults" if name == "fvp" else name[len("fvp-"):] if name.startswith("fvp-") else name
              for name in names}
    for name in names:
        median_line(f"prefetch / train_step_bench, {labels[name]}", shares[name], unit="")
    for name in names:
        if name != "fvp" and shares.get("fvp") and shares[name]:
            pairs = [a / b for a, b in zip(shares[name], shares["fvp"]) if b > 0]
            median_line(f"{labels[name]} / the defaults, round by round", pairs)
    if eager_over_graph:
        median_line("the step alone, eager / graph", eager_over_graph)
        # How much longer the step computes beside the feeder than launched alone the same way.
        for name in names:
            if compute[name]:
                median_line(f"{labels[name]}: compute per step / the eager step alone",
                            [c / statistics.median(eager_ms) for c in compute[name]])


def faster_antialias(run):
    """A DataLoader run's faster antialias setting: (its images/s from the first batch, the setting)."""
    by = run.get("by_antialias") or {str(run.get("antialias")).lower(): run}
    setting, figures = max(by.items(), key=lambda item: item[1]["images_per_s_after_first_batch"])
    return figures["images_per_s_after_first_batch"], setting


def first_batch(folder):
    sides = variants_of(folder, {"prime"})
    firsts, rates = {side: [] for side in sides}, {side: [] for side in sides}
    behind_cpu = {side: [] for side in sides if side != "cpu" and side != "torch"}
    readiness = {side: {} for side in behind_cpu}
    over_torch = {side: [] for side in sides if side != "torch"}
    for round_ in sorted({r for side in sides for r in rounds_of(folder, side + "_%d")}):
        line = f"round {round_}:"
        runs = {side: load(os.path.join(folder, f"{side}_{round_}.json")) for side in sides}
        cpu_first = (runs.get("cpu") or {}).get("time_to_first_batch_s")
        torch = faster_antialias(runs["torch"]) if runs.get("torch") else None
        for side in sides:
            run = runs[side]
            if not run:
                continue
            first, rate = run.get("time_to_first_batch_s"), run["images_per_s_after_first_batch"]
            if first is not None:
                firsts[side].append(first)
                if side in behind_cpu and cpu_first is not None:
                    behind_cpu[side].append(first - cpu_first)
            rates[side].append(rate)
            if side in over_torch and torch:
                over_torch[side].append(rate / torch[0])
            # Issue 41: how the hybrid side's GPU decoder came ready, and the feeder's part of the first batch.
            for key in ("decoder_ready_s", "second_decoder_s", "first_stage_s", "feeder_construction_s",
                        "device_setup_s"):
                value = (run.get("device") or {}).get(key)
                if side in readiness and value is not None:
                    readiness[side].setdefault(key, []).append(value)
            line += f" {side} first batch after {first if first is None else f'{first:.3f}'} s, {rate:.0f} img/s;"
        if torch:
            line += f" (torch's faster setting: antialias={torch[1]})"
        print(line.rstrip(";"))
    for side in sides:
        median_line(f"{side}: time to the first batch", firsts[side], unit=" s")
        median_line(f"{side}: images/s from the first batch", rates[side], unit="")
    for side, deltas in behind_cpu.items():
        if deltas:
            median_line(f"{side}: first batch less CPU-only's, round by round", deltas, unit=" s")
        for key, values in readiness[side].items():
            median_line(f"{side}: {key}", values, unit=" s")
    for side, ratios in over_torch.items():
        if ratios:
            median_line(f"{side} / the DataLoader at its faster antialias setting, from each one's first batch",
                        ratios)


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
