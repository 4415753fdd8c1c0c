#!/usr/bin/env python3
"""Issue 17's figures from bench/gpu_run.sh's two-gpus phase (one folder of its JSON):
  scale_1gpu_{1,2,3}.json            feed_vs_prefetch prefetch on one GPU, batch 256
  scale_2gpu_{1,2,3}.rank{0,1}.json  the same, data-parallel over two processes (scripts/launch.sh 2)
  scale_1gpu_batch512.json           one GPU at batch 512, for the loss comparison (2026-11-23's form)
  losses_{fp32,bf16}_{1gpu_batch512,2gpu.rank0}.json   the two-gpus-losses phase: the comparison per precision
Prints images/s (two GPUs: the sum of both ranks), the scaling per alternating pair and its median, GPU idle
per GPU, step p50/p95, and how far the two-GPU run's first losses are from the batch-512 run's."""

import json
import os
import statistics
import sys


def prefetch(folder, name):
    path = os.path.join(folder, name)
    try:
        with open(path) as file:
            results = json.load(file)["results"]
    except (OSError, ValueError, KeyError) as error:
        print(f"  (missing or unreadable: {name}: {error})")
        return None
    return next((r for r in results if r["mode"] == "prefetch"), None)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    ratios = []
    for i in (1, 2, 3):
        one = prefetch(folder, f"scale_1gpu_{i}.json")
        ranks = [prefetch(folder, f"scale_2gpu_{i}.rank{r}.json") for r in (0, 1)]
        if not one or not all(ranks):
            continue
        two = sum(r["images_per_s"] for r in ranks)
        ratios.append(two / one["images_per_s"])
        idle = ", ".join(f"{100 * r['idle_fraction']:.1f} %" for r in ranks)
        print(f"pair {i}: 1 GPU {one['images_per_s']:.0f} img/s (idle {100 * one['idle_fraction']:.1f} %, step p50 "
              f"{one['step_ms_median']:.1f} p95 {one['step_ms_p95']:.1f} ms); 2 GPUs {two:.0f} img/s (idle "
              f"{idle}; step p50 "
              f"{ranks[0]['step_ms_median']:.1f} p95 {ranks[0]['step_ms_p95']:.1f} ms); scaling {ratios[-1]:.3f}")
    if ratios:
        median = statistics.median(ratios)
        print(f"scaling, median of the pairs: {median:.3f} (target 1.9: {'met' if median >= 1.9 else 'not met'})")
    compare_losses(folder, "scale_1gpu_batch512.json", "scale_2gpu_1.rank0.json", "two-gpus run, bf16")
    # two-gpus-losses: the same comparison in fp32 and bf16, 30 steps each, to tell the bf16 all-reduce
    # from batch norm's per-replica statistics.
    for precision in ("fp32", "bf16"):
        compare_losses(folder, f"losses_{precision}_1gpu_batch512.json", f"losses_{precision}_2gpu.rank0.json",
                       precision)


def compare_losses(folder, one_name, two_name, label):
    """Step by step: the two-GPU run (2 x 256) against one GPU at batch 512, which sees the same images."""
    if not all(os.path.exists(os.path.join(folder, n)) for n in (one_name, two_name)):
        return
    big, two = prefetch(folder, one_name), prefetch(folder, two_name)
    if not (big and two and big.get("losses") and two.get("losses")):
        return
    n = min(len(big["losses"]), len(two["losses"]), 30)
    gaps = [abs(a - b) / max(abs(b), 1e-6) for a, b in zip(two["losses"][:n], big["losses"][:n])]
    first = next((i for i, g in enumerate(gaps) if g > 0.02), None)
    print(f"{label}: first {n} losses, 2 GPUs x 256 against 1 GPU x 512: worst relative difference "
          f"{max(gaps):.4f}; first step more than 2 % apart: {first if first is not None else 'none'}")


if __name__ == "__main__":
    main()
