#!/usr/bin/env python3
"""summarize_hybrid.py RESULTS_DIR — issue 20's ratios from the files gpu_run.sh's phases hybrid and
fvp-device wrote (standard library only; any file missing is named, not fatal).

  hybrid_{16,4}_{1,2,3}_{cpu,gpu}.json   pipeline_throughput CPU-only / --device gpu, alternating pairs
  hybrid_{16,4}_adaptive_gpu.json        --device gpu --deterministic 0 (the adaptive split)
  hybrid_torch_16_{1,2,3}.json           torch_dataloader.py, 16 workers, antialias both, in each 16-thread pair
  fvp_device_{1,2}.json, fvp_train_step_{1,2}.json, fvp_device_cpu_decode.json

Prints each run, the medians, the ratios beside issue 20's targets (GPU decode + augmentation at 16 threads
>= 1.8x the CPU-only pipeline and >= 6x the DataLoader; at 4 threads >= 3x the CPU-only pipeline; prefetch
>= 97 % of train_step_bench), and whether the deterministic GPU runs gave one checksum at both thread counts.
"""
import json
import os
import statistics
import sys


def load(folder, name):
    path = os.path.join(folder, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        print(f"  (missing or unreadable: {name}: {error})")
        return None


def verdict(value, target):
    return "MEETS" if value >= target else "BELOW"


def pipeline(folder):
    medians, checksums = {}, {}
    for threads in (16, 4):
        print(f"pipeline_throughput, {threads} threads (images/s after warm-up):")
        for side in ("cpu", "gpu"):
            rates = []
            for i in (1, 2, 3):
                run = load(folder, f"hybrid_{threads}_{i}_{side}.json")
                if not run:
                    continue
                rates.append(run["images_per_s"])
                checksums.setdefault(side, set()).add(run["checksum"])
                line = f"  {side} pair {i}: {run['images_per_s']:10.1f}  ({run['images']} images, checksum {run['checksum']})"
                device = run.get("device")
                if device:
                    line += (f"; CPU decoded {device['images_decoded_by_the_pipeline']}, GPU {device['gpu_decoded']},"
                             f" fallbacks {device['cpu_fallbacks']}, failed {device['decode_failures']},"
                             f" declined {device['declined_by_the_op']}")
                print(line)
            if rates:
                medians[(threads, side)] = statistics.median(rates)
        adaptive = load(folder, f"hybrid_{threads}_adaptive_gpu.json")
        if adaptive:
            device = adaptive.get("device", {})
            print(f"  adaptive split: {adaptive['images_per_s']:10.1f}, GPU share at the end "
                  f"{device.get('gpu_share_at_end', float('nan')):.3f}, GPU decoded {device.get('gpu_decoded')}")
    # The DataLoader ran inside each 16-thread round: per-round ratios, their median, for each antialias.
    torch_rounds = {i: load(folder, f"hybrid_torch_16_{i}.json") for i in (1, 2, 3)}
    print("ratios (medians of the pairs):")
    for threads, target in ((16, 1.8), (4, 3.0)):
        if (threads, "cpu") in medians and (threads, "gpu") in medians:
            ratio = medians[(threads, "gpu")] / medians[(threads, "cpu")]
            print(f"  {threads:2d} threads: GPU {medians[(threads, 'gpu')]:.1f} / CPU-only {medians[(threads, 'cpu')]:.1f}"
                  f" = {ratio:.2f}x (target {target}x: {verdict(ratio, target)})")
    for antialias in ("true", "false"):
        for side, target in (("cpu", None), ("gpu", 6.0)):
            ratios, peers = [], []
            for i, torch in torch_rounds.items():
                run = load(folder, f"hybrid_16_{i}_{side}.json")
                figures = (torch or {}).get("by_antialias", {}).get(antialias)
                if run and figures:
                    ratios.append(run["images_per_s"] / figures["images_per_s"])
                    peers.append(figures["images_per_s"])
            if ratios:
                goal = f" (target {target}x: {verdict(statistics.median(ratios), target)})" if target else ""
                print(f"  16 threads: {side.upper()} pipeline / DataLoader (antialias={antialias}, median "
                      f"{statistics.median(peers):.1f} images/s): per round "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}x{goal}")
    for side, seen in checksums.items():
        print(f"  {side} checksums over both thread counts and all pairs: "
              f"{'one value' if len(seen) == 1 else 'DIFFER: ' + ', '.join(sorted(seen))}")


def feed_vs_prefetch(folder):
    print("feed_vs_prefetch prefetch vs train_step_bench (ResNet-18 bf16, batch 256):")
    for i in (1, 2):
        fvp, step = load(folder, f"fvp_device_{i}.json"), load(folder, f"fvp_train_step_{i}.json")
        if not fvp or not step:
            continue
        prefetch = next((r for r in fvp["results"] if r["mode"] == "prefetch"), None)
        if not prefetch:
            print(f"  run {i}: no prefetch result")
            continue
        for key in ("images_per_s", "images_per_s_wall"):
            ratio = prefetch["images_per_s"] / step[key]
            print(f"  run {i}: prefetch {prefetch['images_per_s']:.1f} / train_step_bench {key} {step[key]:.1f}"
                  f" = {100 * ratio:.1f} % (target 97 %: {verdict(ratio, 0.97)})")
        print(f"         GPU idle {100 * prefetch['idle_fraction']:.1f} %; {prefetch.get('feeder', '')}")
    cpu_decode = load(folder, "fvp_device_cpu_decode.json")
    if cpu_decode:
        prefetch = next((r for r in cpu_decode["results"] if r["mode"] == "prefetch"), None)
        if prefetch:
            print(f"  without GPU decode: prefetch {prefetch['images_per_s']:.1f}, GPU idle "
                  f"{100 * prefetch['idle_fraction']:.1f} %; {prefetch.get('feeder', '')}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    if any(name.startswith("hybrid_") for name in os.listdir(folder)):
        pipeline(folder)
    if any(name.startswith("fvp_device_") for name in os.listdir(folder)):
        feed_vs_prefetch(folder)


if __name__ == "__main__":
    main()
