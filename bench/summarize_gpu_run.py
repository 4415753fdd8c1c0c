#!/usr/bin/env python3
"""Turns the output of one bench/gpu_run.sh call into bench/results/: a summary (Markdown and JSON) with
every target's figure, its peer's figure measured in the same run, and their ratio, plus the raw JSON
and logs the figures come from.

    summarize_gpu_run.py RUN_DIR OUT_DIR --command "..." [--note "..."]

RUN_DIR is the unpacked results.tgz of one call. Only what the run measured is written.
"""
import argparse
import json
import os
import re
import shutil


def load(run, name):
    path = os.path.join(run, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def machine_and_commit(run):
    with open(os.path.join(run, "console.log")) as f:
        head = f.read(2000)
    gpu = re.search(r"GPU 0: ([^(]+)", head)
    cpu = re.search(r"model name\s*: (.*)", head)
    cores = re.search(r"\n(\d+)\n", head)
    date = re.search(r"\n(\w{3} \w{3} +\d+ [\d:]+ \w+ UTC \d{4})", head)
    commit = re.search(r"\n([0-9a-f]{7,40})\n", head)
    return {
        "gpu": gpu.group(1).strip() if gpu else None,
        "cpu": cpu.group(1).strip() if cpu else None,
        "cores": int(cores.group(1)) if cores else None,
        "date": date.group(1) if date else None,
        "commit": commit.group(1) if commit else None,
    }


def ops_figures(run):
    ops, peer = load(run, "ops_bench.json"), load(run, "torchvision_decode.json")
    if not ops or not peer:
        return None
    medians = {b["run_name"]: b["items_per_second"] for b in ops["benchmarks"]
               if b.get("aggregate_name") == "median"}
    chain = medians.get("chain/rrc224_flip_distort")
    return {
        "what": "decode + random_resized_crop(224) + flip + distort(.4,.4,.4), one core (taskset)",
        "conveyor_images_per_s": chain,
        "peer": "torchvision.io.decode_jpeg alone, same core, same 200 files",
        "peer_images_per_s": peer["decode_only_images_per_s"],
        "peer_full_chain_images_per_s": peer["images_per_s"],
        "ratio": chain / peer["decode_only_images_per_s"] if chain else None,
        "target_ratio": 1300 / 1280,
        "decode_paths_images_per_s": {k: v for k, v in medians.items() if k.startswith("decode/")},
        "chain_variants_images_per_s": {k: v for k, v in medians.items() if k.startswith("chain/")},
    }


def pipeline_figures(run):
    ours, peer = load(run, "pipeline_throughput.json"), load(run, "torch_dataloader.json")
    if not ours or not peer:
        return None
    sweep = {p["threads"]: p for p in ours.get("sweep", [])}
    eff16 = sweep[16]["efficiency"] if 16 in sweep else None
    peer_sweep = load(run, "torch_dataloader_sweep.json")
    out = {
        "what": "image_folder -> shuffle -> decode_random_resized_crop(224) -> flip -> distort -> batch(256), 16 threads",
        # JSON written before 2026-11-27 has no timing_rule: its images_per_s was counted after W batches.
        "timing": ("images after the first batch over the time from its arrival to the last"
                   if ours.get("timing_rule") == "from_first_batch" else
                   "images after the first W batches over the time from batch W to the last (W = threads or workers)"),
        "conveyor_images_per_s": ours["images_per_s"],
        "peer": "PyTorch DataLoader, 16 workers, pin_memory, decode_jpeg + v2 RandomResizedCrop + flip + ColorJitter"
                + f", antialias={peer.get('antialias', True)}",
        "peer_images_per_s": peer["images_per_s"],
        "peer_images_per_s_by_antialias": {k: v["images_per_s"] for k, v in peer.get("by_antialias", {}).items()},
        "ratio": ours["images_per_s"] / peer["images_per_s"],
        "target_ratio": 12000 / 5200,
        "scaling_efficiency_1_to_16": eff16,
        "target_efficiency": 0.8,
        "peak_rss_mb": ours["peak_rss_mb"],
        "checksums_equal_across_threads": ours.get("checksums_equal"),
        "sweep": [{"threads": t, "images_per_s": p["images_per_s"], "efficiency": p["efficiency"]}
                  for t, p in sorted(sweep.items())],
        "peer_sweep": (peer_sweep or peer).get("sweep"),
    }
    for rule in ("images_per_s_after_first_batch", "images_per_s_after_warmup_batches", "images_per_s_overall"):
        if ours.get(rule) and peer.get(rule):
            out[f"ratio_{rule.removeprefix('images_per_s_')}"] = {
                "conveyor": ours[rule], "peer": peer[rule], "ratio": ours[rule] / peer[rule]}
    return out


def pairs_figures(run):
    """pipeline_throughput and the DataLoader run alternately: one ratio per pair, and their median."""
    pairs = []
    for i in range(1, 10):
        ours, peer = load(run, f"pair_{i}_conveyor.json"), load(run, f"pair_{i}_torch.json")
        if ours and peer and peer["images_per_s"]:
            pairs.append({"conveyor_images_per_s": ours["images_per_s"], "peer_images_per_s": peer["images_per_s"],
                          "ratio": ours["images_per_s"] / peer["images_per_s"]})
    if not pairs:
        return None
    ratios = sorted(p["ratio"] for p in pairs)
    return {"what": "pipeline_throughput (16 threads) and torch_dataloader.py (16 workers) alternately, 20,000 images each",
            "pairs": pairs, "median_ratio": ratios[len(ratios) // 2], "target_ratio": 12000 / 5200}


def ceiling_figures(run):
    """The chain's speed on one core alone and on each of 16 cores at once: the machine's own scaling."""
    def rate(name):
        data = load(run, name)
        if not data:
            return None
        runs = [b for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
        return runs[0]["items_per_second"] if runs else None

    alone = rate("ceiling_1_core2.json")
    together = [rate(name) for name in sorted(os.listdir(run)) if name.startswith("ceiling_16_core")]
    together = [r for r in together if r]
    if not alone or not together:
        return None
    return {"what": "ops_bench chain/rrc224_flip_distort, one process per core (taskset), nothing shared but the machine",
            "one_core_alone_images_per_s": alone, "copies_at_once": len(together),
            "sum_images_per_s": sum(together), "per_core_images_per_s": together,
            "efficiency": sum(together) / (len(together) * alone)}


def train_figures(run):
    fused, unfused = load(run, "train_step_fused.json"), load(run, "train_step_unfused.json")
    peer, peer_unfused = load(run, "torch_resnet18.json"), load(run, "torch_resnet18_unfused.json")
    if not fused or not peer:
        return None
    out = {
        "what": "ResNet-18 training step, batch 256, 224x224, bf16, NHWC, data already on the GPU",
        "conveyor_images_per_s": fused["images_per_s"],
        "conveyor_warmup_s": fused["warmup_s"],
        "conveyor_first_step_ms": fused["first_step_ms"],
        "peer": "PyTorch torchvision resnet18, bf16 autocast, channels_last, SGD momentum"
                + (f", strongest variant: {peer['strongest']}" if peer.get("strongest") else ""),
        "peer_images_per_s": peer["images_per_s"],
        "peer_variants_images_per_s": {name: v.get("images_per_s") for name, v in peer.get("variants", {}).items()},
        "peer_first_step_s": peer["first_step_s"],
        "ratio": fused["images_per_s"] / peer["images_per_s"],
        "target_ratio": 0.8,
    }
    if unfused:
        out["conveyor_unfused_bn_images_per_s"] = unfused["images_per_s"]
        out["conveyor_fused_over_unfused"] = fused["images_per_s"] / unfused["images_per_s"]
    if peer_unfused:
        out["peer_unfused_bn_images_per_s"] = peer_unfused["images_per_s"]
    return out


def fvp_figures(run):
    fvp = load(run, "feed_vs_prefetch.json")
    if not fvp:
        return None
    by_mode = {r["mode"]: r for r in fvp["results"]}
    out = {"what": f"{fvp['model']}, batch {fvp['batch']}, {fvp['size']}x{fvp['size']}, {fvp['threads']} threads",
           "results": fvp["results"]}
    if "feed" in by_mode and "prefetch" in by_mode:
        out["prefetch_over_feed"] = by_mode["prefetch"]["images_per_s"] / by_mode["feed"]["images_per_s"]
        out["target_prefetch_over_feed"] = 10
        out["prefetch_gpu_idle_fraction"] = by_mode["prefetch"]["idle_fraction"]
    return out


def fashion_figures(run):
    path = os.path.join(run, "fashion_mnist.csv")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        rows = [line.strip().split(",") for line in f][1:]
    last = rows[-1]
    tested = [float(r[3]) for r in rows if r[3]]
    return {"what": "train_fashion_mnist: small ResNet, default recipe, JPEG files",
            "epochs": int(last[0]), "final_test_accuracy": float(last[3]), "best_test_accuracy": max(tested),
            "seconds_training_and_evaluation": float(last[6]), "target_accuracy": 0.935, "target_seconds": 120}


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def step_rounds_figures(run):
    """The `step` phase: conveyor's ResNet-18 step with the graph and eager (runs before and after PyTorch),
    PyTorch's variants in alternating rounds, and the warm-up without, with a cold and a warm algorithm cache."""
    graph = [load(run, n) for n in ("step_graph_nocache.json", "step_graph_cold.json", "step_graph_warm.json",
                                    "step_graph_2.json")]
    eager = [load(run, n) for n in ("step_eager_1.json", "step_eager_2.json")]
    peer = load(run, "torch_resnet18_rounds.json")
    graph, eager = [g for g in graph if g], [e for e in eager if e]
    if not graph or not peer:
        return None
    out = {"what": "ResNet-18 training step, batch 256, 224x224, bf16, NHWC, data already on the GPU; conveyor "
                   "processes before and after one PyTorch process that measures its variants in 2 alternating rounds",
           "conveyor_graph_images_per_s": [g["images_per_s"] for g in graph],
           "conveyor_graph_median_images_per_s": median([g["images_per_s"] for g in graph]),
           "conveyor_graph_used": [g.get("graph") for g in graph],
           "conveyor_eager_images_per_s": [e["images_per_s"] for e in eager],
           "conveyor_eager_median_images_per_s": median([e["images_per_s"] for e in eager]),
           "peer": f"PyTorch torchvision resnet18, strongest variant: {peer.get('strongest')}",
           "peer_images_per_s": peer.get("images_per_s"),
           "peer_variants_images_per_s": {n: v.get("images_per_s") for n, v in peer.get("variants", {}).items()},
           "target_ratio": 1.25, "target_warm_warmup_s": 0.5}
    if out["peer_images_per_s"]:
        out["ratio_graph_over_peer"] = out["conveyor_graph_median_images_per_s"] / out["peer_images_per_s"]
    for name, key in (("step_graph_nocache.json", "warmup_no_cache"), ("step_graph_cold.json", "warmup_cold_cache"),
                      ("step_graph_warm.json", "warmup_warm_cache")):
        w = load(run, name)
        if w:
            out[key] = {k: w.get(k) for k in ("warmup_s", "warmup_context_s", "warmup_prepare_s",
                                               "warmup_first_step_s", "warmup_capture_s", "algorithm_cache_reused",
                                               "algorithm_cache_searched", "algorithm_cache_rejected",
                                               "algorithm_cache_warnings")}
    return out


def fashion_recipes_figures(run):
    """The `fashion-recipes` phase: per recipe, conveyor's median over seeds beside the PyTorch anchors."""
    ours = load(run, "fashion_recipes.json")
    if not ours:
        return None
    out = {"what": "train_fashion_mnist from the JPEG files, final test accuracy and seconds of training and "
                   "evaluation (warm-up excluded), median over seeds",
           "target_accuracy": 0.94, "target_seconds": 8.0, "recipes": {}}
    anchors = {}
    for name in ("torch_fashion_gpu.json", "torch_fashion_dataloader.json"):
        peer = load(run, name)
        if peer:
            anchors.update(peer.get("summary", {}))
    for recipe, figures in ours["summary"].items():
        acc, sec = figures["median_final_test_accuracy"], figures["median_seconds_training_and_evaluation"]
        out["recipes"][recipe] = {
            "seeds": figures["seeds"], "median_final_test_accuracy": acc, "median_seconds": sec,
            "accuracies": figures["final_test_accuracies"], "seconds": figures["seconds"],
            "meets_both_targets": acc >= 0.94 and sec <= 8.0,
            "anchors": {key: {"median_final_test_accuracy": v["median_final_test_accuracy"],
                              "median_seconds": v["median_seconds_training_and_evaluation"], "seeds": v["seeds"]}
                        for key, v in anchors.items() if key.startswith(recipe + "/")}}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("out")
    ap.add_argument("--command", required=True)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    summary = {"machine": machine_and_commit(a.run), "command": a.command, "note": a.note}
    for key, fn in [("ops_one_core", ops_figures), ("pipeline", pipeline_figures),
                    ("pipeline_pairs", pairs_figures), ("scaling_ceiling", ceiling_figures), ("train_step", train_figures),
                    ("feed_vs_prefetch", fvp_figures), ("fashion_mnist", fashion_figures),
                    ("train_step_rounds", step_rounds_figures), ("fashion_recipes", fashion_recipes_figures)]:
        figures = fn(a.run)
        if figures:
            summary[key] = figures
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    for name in sorted(os.listdir(a.run)):
        path = os.path.join(a.run, name)
        if os.path.isfile(path) and not name.endswith(".trace.json") and os.path.getsize(path) < 200_000:
            shutil.copy(path, os.path.join(a.out, name))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
