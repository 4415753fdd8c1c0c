#!/usr/bin/env python3
"""PyTorch's DataLoader on the same JPEG folder as bench/pipeline/pipeline_throughput, as its peer.

The same work per image: read the file, torchvision.io.decode_jpeg on a uint8 tensor, then torchvision's
v2 RandomResizedCrop(size) + RandomHorizontalFlip(0.5) + ColorJitter(.4, .4, .4) on the uint8 tensor,
batches of 256 in pinned memory, 16 worker processes. The folder is listed with conveyor's
image_folder rules (class = sorted sub-folder, *.jpg/*.jpeg in any case, sorted paths; --limit keeps
the first N). The first batch (worker start-up, first decodes) is timed apart; images_per_s is the
steady state after it, as in pipeline_throughput.

  torch_dataloader.py --data DIR [--workers 16] [--batch 256] [--size 224] [--epochs 1] [--seed 0]
                      [--limit N] [--sweep 1,2,4,8,16] [--json FILE] [--conveyor-json FILE]

With --conveyor-json (the JSON that pipeline_throughput wrote in the same session), it also prints
conveyor's images/s and the ratio of the two.
"""

import argparse
import json
import os
import socket
import sys
import time

import torch
import torchvision
from torchvision.transforms import v2


def list_image_folder(root, limit):
    """(path, label) pairs, in conveyor's image_folder order."""
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False))
    samples = []
    for label, name in enumerate(classes):
        paths = []
        for folder, _, files in os.walk(os.path.join(root, name), followlinks=False):
            for file in files:
                path = os.path.join(folder, file)
                if file.lower().endswith((".jpg", ".jpeg")) and os.path.isfile(path):
                    paths.append(path)
        samples.extend((path, label) for path in sorted(paths))
    if not samples:
        sys.exit(f"torch_dataloader: no .jpg/.jpeg image in a class folder under {root}")
    return samples[:limit] if limit else samples


class JpegFolder(torch.utils.data.Dataset):
    """The listed files, decoded and augmented on uint8 tensors. At module level so that it pickles
    when the DataLoader starts its workers with spawn or forkserver."""

    def __init__(self, samples, size):
        self.samples = samples
        self.transform = v2.Compose([
            v2.RandomResizedCrop(size, antialias=True),
            v2.RandomHorizontalFlip(0.5),
            v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
        ])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        with open(path, "rb") as file:
            data = torch.frombuffer(bytearray(file.read()), dtype=torch.uint8)
        image = torchvision.io.decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)  # 3 x H x W uint8
        return self.transform(image), label


def run(samples, args, workers):
    """One timed pass: {"workers", "images_per_s", "images", "time_to_first_batch_s", "steady_s"}."""
    torch.manual_seed(args.seed)
    dataset = JpegFolder(samples, args.size)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=args.batch,
        shuffle=True,
        num_workers=workers,
        pin_memory=True,
        drop_last=False,
        persistent_workers=workers > 0 and args.epochs > 1,
    )
    start = time.perf_counter()
    first = None
    images = 0
    steady_images = 0
    for _ in range(args.epochs):
        for batch, labels in loader:
            images += batch.shape[0]
            if first is None:
                first = time.perf_counter()
            else:
                steady_images += batch.shape[0]
    end = time.perf_counter()
    steady = end - first if first is not None else 0.0
    return {
        "workers": workers,
        "images_per_s": steady_images / steady if steady > 0 else 0.0,
        "images": images,
        "time_to_first_batch_s": (first - start) if first is not None else 0.0,
        "steady_s": steady,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="use the first N images only")
    parser.add_argument("--sweep", default="", help="worker counts, e.g. 1,2,4,8,16")
    parser.add_argument("--json", default="", help="write the results here")
    parser.add_argument("--conveyor-json", default="", help="pipeline_throughput's JSON from the same run")
    args = parser.parse_args()

    samples = list_image_folder(args.data, args.limit)
    points = []
    if args.sweep:
        print(f"{'workers':>8} {'images/s':>12} {'efficiency':>11} {'first (s)':>10}")
        for workers in (int(w) for w in args.sweep.split(",")):
            point = run(samples, args, workers)
            base = points[0] if points else point
            point["efficiency"] = (point["images_per_s"] * max(base["workers"], 1)
                                   / (max(workers, 1) * base["images_per_s"])) if base["images_per_s"] else 0.0
            points.append(point)
            print(f"{workers:>8} {point['images_per_s']:>12.1f} {100 * point['efficiency']:>10.1f}% "
                  f"{point['time_to_first_batch_s']:>10.3f}", flush=True)
        main_point = points[-1]
    else:
        main_point = run(samples, args, args.workers)

    result = {
        "benchmark": "torch_dataloader",
        "images_per_s": main_point["images_per_s"],
        "workers": main_point["workers"],
        "batch": args.batch,
        "images": main_point["images"],
        "time_to_first_batch_s": main_point["time_to_first_batch_s"],
        "steady_s": main_point["steady_s"],
        "config": {"data": args.data, "size": args.size, "epochs": args.epochs, "seed": args.seed,
                   "limit": args.limit, "pin_memory": True,
                   "transforms": "decode_jpeg + v2.RandomResizedCrop + RandomHorizontalFlip + ColorJitter(.4,.4,.4)"},
        "machine": {"hostname": socket.gethostname(), "nproc": os.cpu_count(),
                    "torch": torch.__version__, "torchvision": torchvision.__version__},
        "sweep": points,
    }
    print(f"torch DataLoader, {result['workers']} workers: {result['images_per_s']:.1f} images/s steady "
          f"({result['images']} images, first batch after {result['time_to_first_batch_s']:.3f} s)")
    if args.conveyor_json:
        with open(args.conveyor_json) as file:
            conveyor = json.load(file)
        ratio = conveyor["images_per_s"] / result["images_per_s"] if result["images_per_s"] else 0.0
        result["conveyor_images_per_s"] = conveyor["images_per_s"]
        result["conveyor_threads"] = conveyor.get("threads")
        result["ratio_conveyor_to_torch"] = ratio
        print(f"conveyor, {conveyor.get('threads')} threads: {conveyor['images_per_s']:.1f} images/s; "
              f"ratio conveyor / torch = {ratio:.2f}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)
            file.write("\n")


if __name__ == "__main__":
    main()
