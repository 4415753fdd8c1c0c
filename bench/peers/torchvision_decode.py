#!/usr/bin/env python3
"""The peer of ops_bench's fused path: torchvision on one core, on the same JPEGs.

Measures, with torch.set_num_threads(1):
  decode_only:   torchvision.io.decode_jpeg (libjpeg-turbo, full image, RGB uint8)
  fused_chain:   decode_jpeg + v2.RandomResizedCrop(224) + v2.RandomHorizontalFlip() + v2.ColorJitter(.4, .4, .4)
                 on uint8 tensors (torchvision's defaults: antialiased bilinear resize)
and prints one JSON object. images_per_s is the fused chain's rate, the figure to put next to ops_bench's
chain/rrc224_flip_distort items_per_second; decode_only_images_per_s is what the issue's target compares to.

The files: the first 200 *.jpg / *.jpeg under the folder (sorted by path, searched recursively), exactly
as ops_bench picks them; the folder comes from --images or CONVEYOR_BENCH_IMAGES.

Run it pinned to the same core as ops_bench, e.g.
  taskset -c 2 python3 bench/peers/torchvision_decode.py --images /data/imagenet-like > peer.json
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time


def jpeg_files(folder, limit):
    paths = []
    for root, _, names in os.walk(folder):
        for name in names:
            if name.lower().endswith((".jpg", ".jpeg")):
                paths.append(os.path.join(root, name))
    return sorted(paths)[:limit]


def rate(work, items, seconds, repeats):
    """Runs `work` (one pass over `items` images) until `seconds` have passed, `repeats` times; the median
    images/s of the repeats, after one untimed warm-up pass (timed separately)."""
    start = time.perf_counter()
    work()
    warm_up = time.perf_counter() - start
    rates = []
    for _ in range(repeats):
        done, start = 0, time.perf_counter()
        while True:
            work()
            done += items
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        rates.append(done / elapsed)
    return statistics.median(rates), rates, warm_up / items * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", default=os.environ.get("CONVEYOR_BENCH_IMAGES"),
                        help="folder of JPEGs (default: $CONVEYOR_BENCH_IMAGES)")
    parser.add_argument("--limit", type=int, default=200, help="first N files (default 200, as ops_bench)")
    parser.add_argument("--seconds", type=float, default=5.0, help="time per repeat (default 5)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats; the median is reported (default 3)")
    args = parser.parse_args()
    if not args.images or not os.path.isdir(args.images):
        print(json.dumps({"error": "give a folder of JPEGs with --images or CONVEYOR_BENCH_IMAGES"}))
        return 2

    import torch
    import torchvision
    from torchvision.io import decode_jpeg, read_file
    from torchvision.transforms import v2

    torch.set_num_threads(1)
    torch.manual_seed(0)
    paths = jpeg_files(args.images, args.limit)
    if not paths:
        print(json.dumps({"error": f"no .jpg files under {args.images}"}))
        return 2
    data = [read_file(p) for p in paths]
    augment = v2.Compose([
        v2.RandomResizedCrop(224, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
    ])

    def decode_only():
        for d in data:
            decode_jpeg(d, mode=torchvision.io.ImageReadMode.RGB)

    def fused_chain():
        for d in data:
            augment(decode_jpeg(d, mode=torchvision.io.ImageReadMode.RGB))

    decode_rate, decode_rates, decode_warm = rate(decode_only, len(data), args.seconds, args.repeats)
    chain_rate, chain_rates, chain_warm = rate(fused_chain, len(data), args.seconds, args.repeats)
    mean_bytes = sum(d.numel() for d in data) / len(data)
    print(json.dumps({
        "images_per_s": chain_rate,
        "decode_only_images_per_s": decode_rate,
        "chain": "decode_jpeg + RandomResizedCrop(224) + RandomHorizontalFlip + ColorJitter(.4,.4,.4), uint8, v2",
        "repeats_images_per_s": {"chain": chain_rates, "decode_only": decode_rates},
        "warmup_us_per_image": {"chain": chain_warm, "decode_only": decode_warm},
        "images": len(data),
        "mean_bytes": mean_bytes,
        "source": os.path.abspath(args.images),
        "threads": torch.get_num_threads(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
