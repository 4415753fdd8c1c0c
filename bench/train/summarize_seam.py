#!/usr/bin/env python3
"""summarize_seam.py RESULTS_DIR — issue 34's figures from bench/gpu_run.sh's `seam` phase, as one JSON.

Reads, from RESULTS_DIR: seam_step_{new,prev}_N.json (train_step_bench, ResNet-18 bf16 batch 256, the new
and the previous binary alternating, warm algorithm cache), seam_step_cold.json (the run that filled the
cache), seam_torch_max_autotune.json (bench/peers/torch_resnet18.py, compile-max-autotune),
seam_fashion.json (train_fashion_mnist, default recipe, seeds 1-3) and seam_custom_network_gpu.log. Writes
RESULTS_DIR/seam_summary.json and prints it: both binaries' figures run by run, the median of the pairs'
ratios (new / previous), the warm-up seconds, torch.compile's figure and the ratio to it, and whether each
target of the issue holds (the GPU tests' too when the seam-tests phase ran in the same call). A figure that
is missing stays null (and its target unknown).
"""
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def runs(results, which):
    out = []
    for path in sorted(glob.glob(os.path.join(results, f"seam_step_{which}_*.json")),
                       key=lambda p: int(re.search(r"_(\d+)\.json$", p).group(1))):
        r = load(path)
        if r:
            out.append({"pair": int(re.search(r"_(\d+)\.json$", path).group(1)), "images_per_s": r.get("images_per_s"),
                        "step_ms_median": r.get("step_ms_median"), "warmup_s": r.get("warmup_s"),
                        "algorithm_cache_reused": r.get("algorithm_cache_reused"),
                        "algorithm_cache_searched": r.get("algorithm_cache_searched"), "graph": r.get("graph")})
    return out


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    results = sys.argv[1]
    new, prev = runs(results, "new"), runs(results, "prev")
    by_pair = {r["pair"]: r for r in prev}
    ratios = [n["images_per_s"] / by_pair[n["pair"]]["images_per_s"] for n in new
              if n["pair"] in by_pair and n["images_per_s"] and by_pair[n["pair"]]["images_per_s"]]
    ratio = median(ratios)
    torch = load(os.path.join(results, "seam_torch_max_autotune.json")) or {}
    torch_rate = torch.get("images_per_s")
    new_rate = median([r["images_per_s"] for r in new])
    warmup_new = median([r["warmup_s"] for r in new])
    fashion = (load(os.path.join(results, "seam_fashion.json")) or {}).get("summary", {})
    recipe = next(iter(fashion.values()), {}) if fashion else {}
    custom = None
    try:
        with open(os.path.join(results, "seam_custom_network_gpu.log")) as f:
            for line in f:
                m = re.match(r"final loss ([0-9.]+) -> ([0-9.]+)", line)
                if m:
                    custom = {"first_ten": float(m.group(1)), "last_ten": float(m.group(2))}
    except OSError:
        pass
    failed = None  # the seam-tests phase did not run in this call
    if any(os.path.exists(os.path.join(results, f"{t}.log"))
           for t in ("conveyor_train_gpu_tests", "conveyor_data_parallel_gpu_tests")):
        failed = []
    if os.path.exists(os.path.join(results, "tests_failed")):
        with open(os.path.join(results, "tests_failed")) as f:
            failed = [line.strip() for line in f if line.strip()]

    def holds(value, test):
        return None if value is None else bool(test(value))

    acc, secs = recipe.get("median_final_test_accuracy"), recipe.get("median_seconds_training_and_evaluation")
    summary = {
        "train_step_bench": {
            "what": "ResNet-18 bf16, batch 256, step replayed as a CUDA graph, warm algorithm cache; pairs alternate "
                    "the previous binary (main at ffb459c) and the new one",
            "cold_run": load(os.path.join(results, "seam_step_cold.json")),
            "new": new, "previous": prev,
            "median_images_per_s": {"new": new_rate, "previous": median([r["images_per_s"] for r in prev])},
            "pair_ratios_new_over_previous": ratios, "median_pair_ratio": ratio,
            "median_warmup_s_warm_cache": {"new": warmup_new, "previous": median([r["warmup_s"] for r in prev])},
        },
        "torch_compile_max_autotune": {"images_per_s": torch_rate, "first_step_s": torch.get("first_step_s"),
                                       "new_over_torch": new_rate / torch_rate if new_rate and torch_rate else None},
        "fashion_mnist_default_recipe": recipe or None,
        "custom_network_gpu_60_steps": custom,
        "gpu_tests_failed": failed,
        "targets": {
            "step within 2 % of the previous binary": holds(ratio, lambda r: r >= 0.98),
            "ahead of torch.compile max-autotune": holds(new_rate / torch_rate if new_rate and torch_rate else None,
                                                         lambda r: r > 1),
            "warm-up with a warm cache <= 0.5 s": holds(warmup_new, lambda s: s <= 0.5),
            "fashion-mnist median of 3 seeds >= 94.0 %": holds(acc, lambda a: a >= 0.94),
            "fashion-mnist in <= 8 s": holds(secs, lambda s: s <= 8),
            "custom_network loss falls on the GPU": holds(custom, lambda c: c["last_ten"] < 0.7 * c["first_ten"]),
            "every GPU test of the train wing passes": None if failed is None else not failed,
        },
    }
    with open(os.path.join(results, "seam_summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: summary[k] for k in ("targets",)}, indent=2))
    print(f"step: new {new_rate} img/s, median pair ratio {ratio}; warm-up (warm cache) {warmup_new} s; "
          f"torch max-autotune {torch_rate} img/s")


if __name__ == "__main__":
    main()
