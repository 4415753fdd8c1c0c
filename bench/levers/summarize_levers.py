#!/usr/bin/env python3
"""Issue 41's figures from the lever scripts of bench/levers/, one folder at a time, printed and written to
FOLDER/summary.json:

  summarize_levers.py first-batch FOLDER          first_batch.sh: each variant's first batch against CPU-only's
  summarize_levers.py step-share FOLDER           step_beside_decoding.sh: prefetch's share of the step, levers
  summarize_levers.py ranks FOLDER --gpus N       ranks_per_host.sh: N ranks against one GPU, idle per GPU
  summarize_levers.py prepared FOLDER --gpus N    prepared_data.sh: share of the step, DataLoader, scaling
  summarize_levers.py peer FOLDER                 gpu_decode_peer.sh: the hybrid pipeline against torchvision's

Runs are VARIANT_ROUND.json, or VARIANT_ROUND.rankR.json for each rank of a run under a launcher. Every
comparison is taken within a round (the scripts alternate the order between rounds) and the median over the
rounds is what counts; a missing or unreadable file is named and that round left out. Standard library only."""

import argparse
import json
import os
import re
import statistics
import sys

RUN = re.compile(r"^(?P<variant>.+)_(?P<round>\d+)(?:\.rank(?P<rank>\d+))?\.json$")


def load(path):
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        print(f"  (unreadable: {os.path.basename(path)}: {error})")
        return None


def runs(folder):
    """{variant: {round: [JSON of each rank, in rank order]}}; a run with an unreadable part is left out."""
    found = {}
    for name in sorted(os.listdir(folder)):
        match = RUN.match(name)
        if not match:
            continue
        rank = int(match["rank"]) if match["rank"] else 0
        found.setdefault(match["variant"], {}).setdefault(int(match["round"]), {})[rank] = os.path.join(folder, name)
    out = {}
    for variant, by_round in found.items():
        for round_, parts in by_round.items():
            loaded = [load(parts[r]) for r in sorted(parts)]
            if all(loaded):
                out.setdefault(variant, {})[round_] = loaded
    return out


def prefetch(data):
    """The prefetch mode's result of a feed_vs_prefetch JSON, or None."""
    return next((r for r in data.get("results", []) if r.get("mode") == "prefetch"), None)


def median(values):
    return statistics.median(values) if values else None


def judged(label, values, target=None, higher_is_better=True):
    """{"median", "rounds", "target", "met"}, and a line on the console."""
    out = {"median": median(values), "rounds": values}
    text = f"{label}: " + ("no complete round" if not values else
                           f"median {out['median']:.4g} over {len(values)} round(s) ({', '.join(f'{v:.4g}' for v in values)})")
    if target is not None and values:
        out["target"] = target
        out["met"] = out["median"] >= target if higher_is_better else out["median"] <= target
        text += f"; target {target}: {'met' if out['met'] else 'not met'}"
    print(text)
    return out


def paired(by_variant, a, b, figure):
    """figure(a's run) / figure(b's run), round by round, over the rounds both have."""
    out = []
    for round_ in sorted(set(by_variant.get(a, {})) & set(by_variant.get(b, {}))):
        x, y = figure(by_variant[a][round_]), figure(by_variant[b][round_])
        if x is not None and y:
            out.append(x / y)
    return out


def first_batch(folder, _args):
    by = runs(folder)
    summary = {"variants": {}}
    for variant, rounds in sorted(by.items()):
        if variant == "prime":
            continue
        figures = {k: [r[0].get(k) for _, r in sorted(rounds.items())]
                   for k in ("time_to_first_batch_s", "images_per_s", "images_per_s_overall", "images")}
        device = [r[0].get("device", {}) for _, r in sorted(rounds.items())]
        for k in ("decoder_ready_s", "feeder_construction_s", "first_stage_s", "gpu_share_at_end"):
            figures[k] = [d.get(k) for d in device if d.get(k) is not None]
        summary["variants"][variant] = {k: median([v for v in vs if v is not None]) for k, vs in figures.items()}
        print(f"{variant}: " + ", ".join(f"{k} {v:.4g}" for k, v in summary["variants"][variant].items() if v is not None))
    for variant in ("at_once", "made_first", "warmup"):
        both = sorted(set(by.get(variant, {})) & set(by.get("cpu", {})))
        deltas = [by[variant][r][0]["time_to_first_batch_s"] - by["cpu"][r][0]["time_to_first_batch_s"]
                  for r in both if "time_to_first_batch_s" in by[variant][r][0]
                  and "time_to_first_batch_s" in by["cpu"][r][0]]
        summary[f"{variant}_first_batch_minus_cpu_s"] = judged(
            f"first batch, {variant} - CPU-only (s)", deltas, 0.1 if variant == "at_once" else None, False)
    overall = lambda run: run[0].get("images_per_s_overall")  # noqa: E731
    summary["at_once_over_warmup_counting_start_up"] = judged(
        "images/s counting start-up, at once / warm-up up front", paired(by, "at_once", "warmup", overall))
    summary["at_once_over_cpu_counting_start_up"] = judged(
        "images/s counting start-up, at once / CPU-only", paired(by, "at_once", "cpu", overall))
    return summary


def step_share(folder, _args):
    by = runs(folder)
    step = lambda run: run[0].get("images_per_s")  # noqa: E731
    rate = lambda run: (prefetch(run[0]) or {}).get("images_per_s")  # noqa: E731
    summary = {"step_graph": judged("train_step_bench, graph (img/s)", [step(r) for _, r in sorted(by.get("step", {}).items())]),
               "step_eager": judged("train_step_bench, eager (img/s)",
                                    [step(r) for _, r in sorted(by.get("step_eager", {}).items())]),
               "eager_over_graph": judged("the step alone, eager / graph", paired(by, "step_eager", "step", step)),
               "variants": {}}
    for variant in sorted(v for v in by if not v.startswith("step")):
        shares = []
        for round_ in sorted(set(by[variant]) & set(by.get("step", {}))):
            x, y = rate(by[variant][round_]), step(by["step"][round_])
            if x and y:
                shares.append(x / y)
        results = [prefetch(r[0]) or {} for _, r in sorted(by[variant].items())]
        entry = {
            "share_of_step": judged(f"{variant}: prefetch / train_step_bench (graph)", shares, 0.97),
            "over_base": judged(f"{variant} / base, round by round", paired(by, variant, "base", rate))
            if variant != "base" else None,
            "compute_ms": median([r.get("compute_ms") for r in results if r.get("compute_ms") is not None]),
            "idle": median([r.get("idle_fraction") for r in results if r.get("idle_fraction") is not None]),
            "gpu_decoded_fraction": median([r.get("gpu_decoded_fraction") for r in results
                                            if r.get("gpu_decoded_fraction") is not None]),
            "gpu_decode_paths": results[-1].get("gpu_decode_paths") if results else None,
            "fallback_reasons": results[-1].get("fallback_reasons") if results else None,
        }
        eager = [step(r) for _, r in sorted(by.get("step_eager", {}).items())]
        if eager and entry["compute_ms"]:
            # The eager step alone takes 256 / its rate per batch: how much longer the step computes beside.
            entry["compute_over_eager_step"] = entry["compute_ms"] / (1000 * 256 / median(eager))
        summary["variants"][variant] = entry
        print(f"  {variant}: compute {entry['compute_ms']} ms a step, idle {entry['idle']}, GPU-decoded "
              f"{entry['gpu_decoded_fraction']}, paths {entry['gpu_decode_paths']}")
    return summary


def job_rate(parts):
    """The job's images/s (every rank's summed) and the ranks' prefetch results; None when one is missing."""
    results = [prefetch(p) for p in parts]
    if not all(results):
        return None, results
    return sum(r["images_per_s"] for r in results), results


def ranks(folder, args):
    by = runs(folder)
    target = {2: 1.9, 4: 3.6}.get(args.gpus)
    summary = {"gpus": args.gpus, "variants": {}}
    for variant in sorted(v for v in by if v != "one"):
        scaling, idle, cpus, memory = [], [], [], []
        for round_ in sorted(set(by[variant]) & set(by.get("one", {}))):
            rate, results = job_rate(by[variant][round_])
            one, _ = job_rate(by["one"][round_])
            if rate is None or not one:
                continue
            if len(results) != args.gpus:
                print(f"  ({variant} round {round_}: {len(results)} rank files for {args.gpus} GPUs)")
                continue
            scaling.append(rate / one)
            idle.append([r.get("idle_fraction") for r in results])
            cpus.append([r.get("pipeline_cpus") for r in results])
            memory.append([r.get("host_memory") for r in results])
        summary["variants"][variant] = {
            "scaling": judged(f"{variant}: {args.gpus} ranks / one GPU", scaling, target),
            "idle_per_gpu_by_round": idle, "pipeline_cpus_last_round": cpus[-1] if cpus else None,
            "host_memory_last_round": memory[-1] if memory else None}
        if idle:
            print(f"  {variant}: idle per GPU by round {[[round(i or 0, 3) for i in r] for r in idle]}")
    for variant in ("ranks_all", "ranks_even"):
        if variant in by and "ranks" in by:
            summary[f"ranks_over_{variant}"] = judged(
                f"ranks (near their GPUs) / {variant}, round by round",
                paired(by, "ranks", variant, lambda parts: job_rate(parts)[0]))
    return summary


def prepared(folder, args):
    by = runs(folder)
    summary = {"gpus": args.gpus}
    index = load(os.path.join(folder, "index.json")) or {}
    summary["preparation"] = index.get("prepared")
    rate = lambda run: job_rate(run)[0]  # noqa: E731
    if args.gpus == 1:
        step = lambda run: run[0].get("images_per_s")  # noqa: E731
        for name in ("fvp_prepared", "fvp_original"):
            shares = []
            for round_ in sorted(set(by.get(name, {})) & set(by.get("step", {}))):
                x, y = rate(by[name][round_]), step(by["step"][round_])
                if x and y:
                    shares.append(x / y)
            summary[f"{name}_share_of_step"] = judged(f"{name}: prefetch / train_step_bench", shares, 0.97)
        def torch_rate(run):  # the DataLoader's faster antialias setting (torch_dataloader.py --antialias both)
            settings = run[0].get("by_antialias") or {"": run[0]}
            return max((s.get("images_per_s") or 0 for s in settings.values()), default=0) or None
        summary["cpu_prepared_over_dataloader"] = judged(
            "conveyor CPU-only / DataLoader, same prepared files", paired(by, "cpu_prepared", "torch_prepared",
                                                                           torch_rate))
        summary["first_batch_s"] = {v: median([r[0].get("time_to_first_batch_s") for r in by.get(v, {}).values()
                                                if r[0].get("time_to_first_batch_s") is not None])
                                    for v in ("cpu_prepared", "torch_prepared")}
    else:
        summary["ranks_over_one"] = judged(f"prepared: {args.gpus} ranks / one GPU",
                                           paired(by, "ranks_prepared", "one_prepared", rate),
                                           {2: 1.9, 4: 3.6}.get(args.gpus))
    return summary


def peer(folder, _args):
    by = runs(folder)
    first = lambda run: run[0].get("images_per_s")  # noqa: E731
    summary = {"hybrid_over_torchvision_gpu": judged("conveyor hybrid / torchvision GPU peer (strongest variant)",
                                                     paired(by, "hybrid", "tvgpu", first))}
    for variant in ("hybrid", "tvgpu"):
        summary[f"{variant}_first_batch_s"] = median([r[0].get("time_to_first_batch_s") for r in by.get(variant, {}).values()
                                                      if r[0].get("time_to_first_batch_s") is not None])
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=("first-batch", "step-share", "ranks", "prepared", "peer"))
    ap.add_argument("folder")
    ap.add_argument("--gpus", type=int, default=1)
    args = ap.parse_args(argv)
    if not os.path.isdir(args.folder):
        sys.exit(f"summarize_levers.py: no folder {args.folder}")
    parts = {"first-batch": first_batch, "step-share": step_share, "ranks": ranks, "prepared": prepared,
             "peer": peer}
    summary = parts[args.part](args.folder, args)
    with open(os.path.join(args.folder, "summary.json"), "w") as file:
        json.dump(summary, file, indent=2)
        file.write("\n")
    return summary


if __name__ == "__main__":
    main()
